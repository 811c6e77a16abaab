"""Turn-by-turn replay at real scale (run by hand: `python bench/bench_simulate.py [--quick]`).

For every policy, `simulate` on agent sessions (tool calls with long outputs, multi-part user
content) of 1,000 to 16,000 messages, in interleaved rounds (every round runs each size and policy
once, sizes in turn); counting is done once beforehand (a replay never re-tokenizes). Prints per
policy:

- the exponent of the replay's cost, fitted log-log (least squares over the round medians);
  goal: at most n^1.15;
- the replay of the largest session against one plan of that whole session (median [min-max] of
  the per-round ratios); goal: at most 10x. Both are timed from a cold start (`cold`): what
  earlier plans and replays derived from the session (`Session.derived` and the other per-session
  caches, and the per-message caches of missy, OpenHands and Gemini CLI) is forgotten before each
  call, so neither a plan nor a replay reads the previous call's work (a re-plan is another bench);
- whether the policy replays incrementally (ctxviz.engine.replay) or falls back to planning the
  whole prefix at every turn;

and the same for missy and supyagent with pair safety on (`PAIR_SAFE`; `--pair-safe-all`: every policy).

`--tiled` replays a real Claude Code log with recorded compactions instead (tests/data/real/claude_code/
tugtool-rewind-branch.jsonl: 41 messages, three /compact; copies chained one after the other with fresh
uuids, so every copy's compactions cover everything before them), loaded as a user would load it.

A policy that falls back (for the whole replay or from some turn on) is measured only up to the size where one replay passes `--cap` seconds
(its exponent is fitted on what was measured, its ratio is at that size), so the run stays within
about 4 minutes.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import math
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench_engine import agent_session  # noqa: E402
from common import Row  # noqa: E402

from ctxviz.engine import summarizers  # noqa: E402
from ctxviz.engine.checks import PlanOptions  # noqa: E402
from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.policies import get_policy, policy_names  # noqa: E402
from ctxviz.engine.policies.gemini import history as gemini_history  # noqa: E402
from ctxviz.engine.policies.missy import context_manager as missy  # noqa: E402
from ctxviz.engine.policies.openhands import log as openhands_log  # noqa: E402
from ctxviz.engine.replay import replays_incrementally  # noqa: E402
from ctxviz.engine.simulate import simulate  # noqa: E402

SIZES = (1000, 2000, 4000, 8000, 16000)
#: Policies also replayed with pair safety on (each turn's context made pair-safe after the policy).
PAIR_SAFE = ("missy", "supyagent")
EXPONENT_GOAL = 1.15
PAIR_SAFE_EXPONENT_GOAL = 1.2
RATIO_GOAL = 10.0


def fit_exponent(sizes: list[int], seconds: list[float]) -> float:
    """The slope of log(seconds) against log(n), least squares."""
    xs, ys = [math.log(n) for n in sizes], [math.log(max(s, 1e-9)) for s in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


def timed(fn, least: float = 0.2) -> float:
    """Seconds per call: calls repeated until `least` seconds have passed, so that small sizes are
    not lost in the clock's and the scheduler's noise."""
    calls = 0
    t = time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - t
        if elapsed >= least:
            return elapsed / calls


def cold(session) -> None:
    """Forget what plans and replays derived from `session` (as a freshly loaded one has nothing):
    its cached properties (`Session.derived`, which `derived_from_counts` fills, the column views,
    the summary start turns...) and the caches that policies keep per session or per message.
    The counts stay: they are measured once, at load."""
    for name, attr in vars(type(session)).items():
        if isinstance(attr, functools.cached_property):
            session.__dict__.pop(name, None)
    missy._OLDER_CACHE.clear()
    openhands_log._CACHE.clear()
    gemini_history._CACHE.clear()
    summarizers._features.cache_clear()


def first_plan(pol, session, params, counts) -> None:
    cold(session)  # one plan from nothing: no work kept from an earlier plan or replay
    pol.plan(session, params, counts)


def first_simulate(session, name, params, store, options) -> None:
    cold(session)
    simulate(session, name, params, store=store, options=options)


TILED = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "real", "claude_code", "tugtool-rewind-branch.jsonl")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def tiled_claude_code(messages: int, path: str = TILED):
    """A real Claude Code log with recorded compactions, repeated to about `messages` messages:
    each copy's uuids changed (first 8 digits: the copy), its root chained to the copy before."""
    from ctxviz.io.loaders import load_session

    with open(path, encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    per_copy = len(load_session(path).messages)
    out: list[str] = []
    last = None
    for copy in range(max(1, round(messages / per_copy))):
        for k, line in enumerate(lines):
            r = json.loads(_UUID.sub(lambda m, copy=copy: f"{copy:08x}" + m.group(0)[8:], line))
            if k == 0 and r.get("parentUuid") is None and last is not None:
                r["parentUuid"] = last
            m = r.get("message")
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                r["message"] = {**m, "id": f"{copy}-{m['id']}"}
            out.append(json.dumps(r, separators=(",", ":")))
            last = r.get("uuid") or last
    return load_session(path, text="\n".join(out) + "\n")


def run(quick: bool = False, rounds: int = 3, cap: float = 6.0, policies: list[str] | None = None, tiled: bool = False,
        pair_safe_all: bool = False, sizes: tuple[int, ...] | None = None) -> list[Row]:
    sizes = sizes or (SIZES[:3] if quick else SIZES)
    policies = policies or policy_names()
    cases = [(name, False) for name in policies] + [(name, True) for name in (policies if pair_safe_all else PAIR_SAFE) if name in policies]
    store = CountStore()
    sessions = {n: tiled_claude_code(n) if tiled else agent_session(n, seed=11) for n in sizes}
    t0 = time.perf_counter()
    for s in sessions.values():  # count once: the replay reads the cached counts
        for name in policies:
            store.get(s, get_policy(name).scheme(None, s.model))
    gc.collect()
    gc.freeze()  # the sessions and counts live through the run: out of the collector, as the app's loader does
    print(f"sessions of {', '.join(f'{n:,}' for n in sizes)} messages counted for {len(policies)} policies in {time.perf_counter() - t0:.1f} s", flush=True)
    sim: dict[tuple[str, bool], dict[int, list[float]]] = {c: {} for c in cases}
    plan: dict[tuple[str, bool], dict[int, list[float]]] = {c: {} for c in cases}
    capped: dict[tuple[str, bool], int] = {}
    for r in range(rounds):
        for n in sizes:
            order = cases if r % 2 == 0 else cases[::-1]
            for case in order:
                name, pair_safe = case
                if case in capped and n > capped[case]:
                    continue
                s = sessions[n]
                pol = get_policy(name)
                params = pol.default_params()
                counts = store.get(s, pol.scheme(None, s.model))
                options = PlanOptions(pair_safe=pair_safe)
                p_time = timed(lambda s=s, pol=pol, params=params, counts=counts: first_plan(pol, s, params, counts))
                s_time = timed(lambda s=s, name=name, params=params, options=options: first_simulate(s, name, params, store, options))
                plan[case].setdefault(n, []).append(p_time)
                sim[case].setdefault(n, []).append(s_time)
                if s_time > cap and r == 0:
                    capped[case] = n  # a replay from scratch (or one that hands long stretches to it) grows as n^2: measured up to here
        print(f"round {r + 1}/{rounds} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    rows: list[Row] = []
    print()
    print(f"{'policy':<32} {'replay':<28} {'sizes':<14} {'exponent':>8} {'goal':>6} {'':<8} {'replay/plan at largest':<28} {'goal':>5} {'':<8}")
    for case in cases:
        name, pair_safe = case
        measured = sorted(sim[case])
        medians = [statistics.median(sim[case][n]) for n in measured]
        exponent = fit_exponent(measured, medians) if len(measured) > 1 else float("nan")
        largest = measured[-1]
        ratios = [a / b for a, b in zip(sim[case][largest], plan[case][largest], strict=True)]
        ratio = statistics.median(ratios)
        how = replays_incrementally(name, sessions[largest], PlanOptions(pair_safe=pair_safe))
        label = f"{name}, pair-safe" if pair_safe else name
        goal = PAIR_SAFE_EXPONENT_GOAL if pair_safe else EXPONENT_GOAL
        exp_met = exponent <= goal and largest == sizes[-1]
        ratio_met = ratio <= RATIO_GOAL and largest == sizes[-1]
        print(f"{label:<32} {how:<28} {f'{measured[0]:,}-{largest:,}':<14} {exponent:>8.2f} {f'n^{goal}':>6} "
              f"{'met' if exp_met else 'NOT MET':<8} {f'{ratio:.1f}x [{min(ratios):.1f}-{max(ratios):.1f}] at {largest:,}':<28} "
              f"{f'{RATIO_GOAL:.0f}x':>5} {'met' if ratio_met else 'NOT MET':<8}")
        detail = "; ".join(f"{n:,}: {statistics.median(sim[case][n]):.2f} s" for n in measured)
        print(f"{'':<32} simulate median per size: {detail}; plan at {largest:,}: {statistics.median(plan[case][largest]) * 1000:.0f} ms")
        rows.append(Row(f"simulate {label} ({how}): cost exponent over {measured[0]:,}-{largest:,} messages", [exponent] * len(ratios),
                        f"<= n^{goal}", exp_met, unit=""))
        rows.append(Row(f"simulate {label} ({how}) of {largest:,} messages vs one plan of the session", ratios, f"<= {RATIO_GOAL:.0f}x", ratio_met))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sizes up to 4,000 only, to check the harness")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cap", type=float, default=6.0, help="seconds: a from-scratch replay slower than this stops growing")
    parser.add_argument("--policy", action="append", help="only these policies (default: all)")
    parser.add_argument("--tiled", action="store_true", help="a real Claude Code log with recorded compactions, tiled")
    parser.add_argument("--pair-safe-all", action="store_true", help="every policy with pair safety on too")
    parser.add_argument("--sizes", type=lambda text: tuple(int(n) for n in text.split(",")),
                        help="session sizes, comma-separated (default: 1000,2000,4000,8000,16000); e.g. 4000,8000,16000,32000 for "
                             "gemini-cli-compression after its first compression (about 2,600 messages in)")
    args = parser.parse_args()
    run(args.quick, args.rounds, args.cap, args.policy, args.tiled, args.pair_safe_all, args.sizes)


if __name__ == "__main__":
    main()
