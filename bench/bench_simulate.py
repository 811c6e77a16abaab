"""Turn-by-turn replay at real scale: how `simulate`'s cost grows, for every policy.

    python bench/bench_simulate.py [--quick] [--sessions agent,tiled,gemini] [--pair-safe all]

Sessions (`--sessions`):
- `agent`: agent sessions (bench_engine.agent_session: tool calls with long outputs, multi-part user
  content);
- `tiled`: a real Claude Code log with recorded compactions (tests/data/real/claude_code/
  tugtool-rewind-branch.jsonl: 41 messages, three /compact), copies chained one after the other with
  fresh uuids, so every copy's compactions cover everything before them, loaded as a user loads it;
- `gemini`: gemini-cli-compression on the agent sessions with `tokenLimit=20000` (as `--param
  tokenLimit=20000` sets it), so its first compression comes at turn 61 and every size measured
  replays past it (at its default limit the first comes at turn 2,379 of 4,000).

For each policy (and with pair safety: `--pair-safe` all, or the policies named), in interleaved rounds
(every round runs each case once at each size, a case's sizes one after the other, the order of the
cases flipping each round), it prints
the following. The sessions are made once; each case's round runs in a child forked from that
process, which counts the case's sessions with the policy's own scheme and nothing else, and each
replay and the one plan are timed in a child of their own forked from there (`_in_own_process`), so
nothing is timed in a heap that other cases, other schemes' counts or the other calls left: as a
user's `ctxviz simulate` or `ctxviz plan` runs after loading and counting its session. Every replay
and every plan timed gets a new identity of its session holding those counts and nothing else
(`fresh`), and starts with none of the previous call's data in the CPU caches (`evict_cpu_caches`).

- the exponent of the replay's cost, fitted log-log by least squares over the largest three sizes
  measured, one fit per round (median [min-max]); goal: at most n^1.15 (n^1.2 with pair safety);
- the replay of the largest session against one plan of that whole session as `ctxviz plan` makes
  it with the same options (`--pair-safe` rows against a pair-safe plan), median [min-max] of the
  per-round ratios; goal: at most 10x at 4,000 messages (the issue's size; `--sizes` for more);
- how the policy replays that session (`replays_incrementally(policy, session, options, params)`),
  and how many steps of the replay really planned the whole prefix (`Timeline.scratch_steps`).

A case that replays from scratch (for the whole replay or from some turn on) starts at 125 messages
and grows only while the next size's replay is expected within `--cap` seconds (from the last two
sizes' growth; a replay passing twice the cap is stopped): its row says the sizes it was timed at,
and is not met when it stopped short of 4,000 messages.
"""

from __future__ import annotations

import argparse
import dataclasses
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

from bench_engine import agent_session, clear_caches  # noqa: E402
from common import Row, compound, evict_cpu_caches, in_forked_child  # noqa: E402

from ctxviz.engine import growth as grown_from  # noqa: E402
from ctxviz.engine import summarizers  # noqa: E402
from ctxviz.engine.checks import PlanOptions  # noqa: E402
from ctxviz.engine.counting import CountStore, TokenCounts  # noqa: E402
from ctxviz.engine.gc_pause import frozen_after  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import get_policy, policy_names  # noqa: E402
from ctxviz.engine.policies.gemini import history as gemini_history  # noqa: E402
from ctxviz.engine.policies.openhands import log as openhands_log  # noqa: E402
from ctxviz.engine.replay import replays_incrementally  # noqa: E402
from ctxviz.engine.session import Session  # noqa: E402
from ctxviz.engine.simulate import simulate  # noqa: E402

EXPONENT_GOAL = 1.15
PAIR_SAFE_EXPONENT_GOAL = 1.2
RATIO_GOAL = 10.0


def fit_exponent(sizes: list[int], seconds: list[float]) -> float:
    """The slope of log(seconds) against log(n), least squares."""
    xs, ys = [math.log(n) for n in sizes], [math.log(max(s, 1e-9)) for s in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else float("nan")


def timed(fn, least: float = 0.2, make=None, calls: int = 3) -> float:  # noqa: ANN001
    """Seconds per call: the median of calls repeated until `least` seconds have passed and at
    least `calls` were made, so that small sizes are not lost in the clock's and the scheduler's
    noise. The median, not the mean: a replay of 4-20 ms (most replays at 1,000-4,000 messages)
    measured 4.4 ms in 14 of 15 calls and 128 ms in one (the process's first, importing and
    compiling what it uses), and calls of the same replay on a quiet machine ranged over 1.8x; one
    such call in a 0.1 s window moved a round's fitted exponent by up to 0.5. Every size, and the
    one plan the ratio compares with, is timed the same way. With `make`, each call gets `make()`'s
    value, made outside the clock. Every call starts with the CPU caches evicted
    (`evict_cpu_caches`), as the user's one replay starts: repeated back to back, the calls after
    the first found a 1,000-message session still in the caches and a 4,000-message one mostly not,
    which added about 0.1 to the fitted exponents."""
    spent: list[float] = []
    while sum(spent) < least or len(spent) < calls:
        arg = make() if make is not None else None
        evict_cpu_caches()
        t = time.perf_counter()
        fn(arg) if make is not None else fn()
        spent.append(time.perf_counter() - t)
    return statistics.median(spent)


def fresh(session: Session, store: CountStore, scheme) -> Session:  # noqa: ANN001
    """A new identity of the session, as a user's process holds it right after counting: the counts
    kept (`store`), nothing else. No per-session work a plan or replay of the old identity derived
    (`Session.derived`, its cached columns), no records or renderings in the policies' module caches:
    a repeated call must not time a warm cache the user's first call does not have. The caches kept
    per message (OpenHands' condensation log, Gemini CLI's history, the offline summarizer's
    features) and the sessions a new one may have grown from (engine/growth.py: the copy holds the
    same message objects) are forgotten too."""
    clear_caches()
    openhands_log._CACHE.clear()
    gemini_history._CACHE.clear()
    summarizers._features.cache_clear()
    with grown_from._lock:
        grown_from._recent.clear()
    copy = dataclasses.replace(session)
    store.put(TokenCounts(copy, scheme, list(store.get(session, scheme).message_tokens)))
    return copy


def first_plan(policy: str, session: Session, params: object, store: CountStore, options: PlanOptions) -> None:
    """One plan of a session just counted (`session` is a `fresh` identity), as `ctxviz plan` makes
    it with the replay's options: a pair-safe replay is compared with a pair-safe plan, and both
    flag broken pairs and read the reported usage as a user's run does; with the cycle collector
    paused and what the plan built frozen after (`frozen_after`), as the command line plans
    (cli/session.py, `plan_frozen`). The replay it is compared with is timed as `ctxviz simulate` replays, the same
    way (`_replay`)."""
    with frozen_after():
        plan_session(session, policy, params, store=store, options=options)
    store.forget(session)


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


GROWTH_SIZES = (1000, 2000, 4000)
SCRATCH_SIZES = (125, 250, 500, 1000, 2000, 4000)
GEMINI_PARAMS = {"tokenLimit": 20_000}
#: The Gemini CLI case is the one the issue names: it may take this many times `cap` per replay.
GEMINI_CAP = 5
GEMINI_FROM = 250
KINDS = {"agent": "agent sessions", "tiled": "a tiled real Claude Code log with recorded compactions",
         "gemini": "agent sessions past Gemini CLI's first compression (tokenLimit=20000)"}


def group_of(kind: str) -> str:
    """The summary's section of a kind of session's rows."""
    return f"Growth of `simulate` on {KINDS[kind]}: cost exponent / replay against one plan of the whole session"


class _TooSlow(Exception):
    """Raised from simulate's progress callback: this replay passed its time limit."""


@dataclasses.dataclass
class Case:
    """One replay measured at growing sizes: a policy, with or without pair safety, on one kind of session."""

    policy: str
    pair_safe: bool
    kind: str
    how: str = ""
    sizes: tuple[int, ...] = ()
    stopped: str = ""  # why it was not measured past its largest size
    sim: dict[int, list[float]] = dataclasses.field(default_factory=dict)
    plan: dict[int, list[float]] = dataclasses.field(default_factory=dict)
    scratch: str = ""  # steps planned from scratch at the largest size, of all steps

    @property
    def params(self) -> dict[str, object]:
        return dict(GEMINI_PARAMS) if self.kind == "gemini" else {}

    @property
    def label(self) -> str:
        return f"{self.policy}, pair-safe" if self.pair_safe else self.policy


def make_sessions(kind: str, sizes: tuple[int, ...]) -> dict[int, object]:
    return {n: tiled_claude_code(n) if kind == "tiled" else agent_session(n, seed=11) for n in sizes}


def growth(kinds: tuple[str, ...] = ("agent",), policies: list[str] | None = None, pair_safe: str | list[str] = "all", rounds: int = 3,
           sizes: tuple[int, ...] = GROWTH_SIZES, scratch_sizes: tuple[int, ...] = SCRATCH_SIZES, cap: float = 1.0) -> list[Row]:
    """Every case's rows (see the module's docstring); `pair_safe`: "all", "none" or the policies to
    replay with pair safety too. Prints a table as it goes."""
    policies = policies or policy_names()
    goal_size = sizes[-1]
    safe = policies if pair_safe == "all" else [] if pair_safe == "none" else [p for p in policies if p in pair_safe]
    cases: list[Case] = []
    for kind in kinds:
        names = ["gemini-cli-compression"] if kind == "gemini" else policies
        cases += [Case(p, False, kind) for p in names]
        if kind != "gemini":
            cases += [Case(p, True, kind) for p in names if p in safe]
    t0 = time.perf_counter()
    all_sizes = tuple(sorted(set(sizes) | {n for n in scratch_sizes if n <= goal_size}))
    sessions = {kind: make_sessions("tiled" if kind == "tiled" else "agent", all_sizes) for kind in kinds}
    for case in cases:  # (asked in a child: nothing it derives stays behind for the timed calls)
        s = sessions[case.kind][goal_size]
        ok, how = in_forked_child(lambda case=case, s=s: replays_incrementally(case.policy, s, PlanOptions(pair_safe=case.pair_safe),
                                                                               get_policy(case.policy).make_params(case.params)))
        if not ok:
            raise RuntimeError(f"{case.label} on {case.kind} sessions: {how}")
        case.how = str(how)
        case.sizes = sizes if case.how == "incremental" else tuple(n for n in all_sizes if n in scratch_sizes)
        if case.kind == "gemini":  # past the first compression (turn 61) from the first size on
            case.sizes = tuple(n for n in all_sizes if n >= GEMINI_FROM)
    gc.collect()
    gc.freeze()  # the sessions live through the run: out of the collector, as the app's loader does
    print(f"growth: {len(cases)} cases on {', '.join(kinds)} sessions of {', '.join(f'{n:,}' for n in all_sizes)} messages, "
          f"made in {time.perf_counter() - t0:.1f} s", flush=True)
    for r in range(rounds):
        # Each case's sizes one after the other: a round takes a minute or more, and sizes measured
        # a minute apart (every case at 1,000 messages, then every case at 2,000, ...) put the
        # machine's drift over that minute into the fitted exponent.
        for case in (cases if r % 2 == 0 else cases[::-1]):
            _in_own_process(case, r, sessions, all_sizes, cap)
        print(f"  growth round {r + 1}/{rounds} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    gc.unfreeze()
    lengths = {(kind, n): len(sessions[kind][n].messages) for kind in kinds for n in all_sizes}
    rows = [_row(case, goal_size, rounds, {n: lengths[(case.kind, n)] for n in all_sizes}) for case in cases]
    print(f"growth: {time.perf_counter() - t0:.0f} s", flush=True)
    return rows


def _in_own_process(case: Case, r: int, sessions: dict, all_sizes: tuple[int, ...], cap: float) -> None:  # noqa: ANN001
    """Round `r` of one case, in a child forked from the process that made the sessions and has
    counted and timed nothing: the child counts the case's sessions with the policy's own scheme, as
    a user's process counts its session, then times the replay at each size (in the first round,
    while the next size is expected within the cap) and one plan at the largest size replayed, each
    in a child of its own forked from there; the results come into `case`.

    Each is timed in a process as a user's `ctxviz simulate` and `ctxviz plan` run it, with nothing
    done before but loading and counting: a plan's or replay's time moves with what the process did
    before it. Timed one after another in one process, a case ran slower after other cases had run
    (supyagent's one plan at 4,000 agent messages 4.8 ms first, 5.6 ms after four other policies'
    cases); a plan timed after the replays ran in the heap they left (supyagent's 9 % faster after
    replays that built fewer objects, its own code unchanged); and a plan in a process that had
    counted the session with other policies' schemes too (LangChain's, Gemini CLI's, Codex's) took
    18-30 % longer, which alone moved supyagent's ratio from 12.5x to 9.5x.

    Each timed child first makes one call untimed: a child just forked shares the parent's memory
    until it writes to it, and its first call copies each page it touches (reading an object writes
    its reference count). A user's process owns its pages from loading on; with only three calls of
    a 4,000-message replay, one paying that copy moved a round's exponent by up to 0.2."""

    def round_of_case() -> tuple[object, ...]:
        store = CountStore()
        pol = get_policy(case.policy)
        for n in case.sizes:  # counted once: the replays and the plan read the cached counts
            store.get(sessions[case.kind][n], pol.scheme(None, sessions[case.kind][n].model))
        gc.collect()
        gc.freeze()  # (the counts live through the child, as the session in a user's process)
        _replays_and_plan(case, r, sessions, store, all_sizes, cap)
        return case.sim, case.plan, case.scratch, case.stopped

    ok, value = in_forked_child(round_of_case)
    if not ok:
        raise RuntimeError(f"{case.label} on {case.kind} sessions, round {r + 1}: {value}")
    case.sim, case.plan, case.scratch, case.stopped = value  # type: ignore[misc]


def _replays_and_plan(case: Case, r: int, sessions: dict, store: CountStore, all_sizes: tuple[int, ...], cap: float) -> None:  # noqa: ANN001
    """`_in_own_process`'s timings, each in a child forked from the counting process."""
    for n in all_sizes:
        if n not in case.sizes or (r > 0 and n > max(case.sim, default=0)) or (r == 0 and case.stopped):
            continue
        # An incremental replay is measured up to the goal's size, however long it takes.
        limit = 0.0 if case.how == "incremental" else cap * (GEMINI_CAP if case.kind == "gemini" else 1)
        if r == 0 and case.sim and limit:
            expected = _expected(case, n)
            if expected > limit:
                case.stopped = f"{n:,} messages would take about {expected:.0f} s per replay (cap {limit:g} s)"
                continue
        s = sessions[case.kind][n]
        ok, value = in_forked_child(lambda s=s, limit=limit: _replay_of(case, s, store, 2 * limit if r == 0 and limit else float("inf")))
        if not ok:
            raise RuntimeError(f"{case.label} on {case.kind} sessions, {n:,} messages, round {r + 1}: {value}")
        if isinstance(value, str):
            case.stopped = f"{n:,} messages {value}"
            continue
        s_time, case.scratch = value  # type: ignore[misc]
        case.sim.setdefault(n, []).append(s_time)
    if not case.sim:
        return
    n = max(case.sim)
    ok, value = in_forked_child(lambda: _one_plan(case, sessions[case.kind][n], store))
    if not ok:
        raise RuntimeError(f"{case.label} on {case.kind} sessions, one plan, round {r + 1}: {value}")
    case.plan.setdefault(n, []).append(value)  # type: ignore[arg-type]


def _replay_of(case: Case, s: Session, store: CountStore, limit: float) -> tuple[float, str] | str:
    """Seconds per replay of a `fresh` identity of `s` (`_replay`) and how many of its steps planned
    from scratch; or, when one replay passed `limit` seconds, what to say of it."""
    params, options, scheme = _settings(case, s)
    try:
        if limit == float("inf"):  # one call untimed (`_in_own_process`; a replay that may be stopped is not: the cap bounds it)
            _replay(lambda: fresh(s, store, scheme), case.policy, params, store, options, limit, calls=1)
        seconds, timeline = _replay(lambda: fresh(s, store, scheme), case.policy, params, store, options, limit)
    except _TooSlow:
        return f"passed {limit:g} s per replay"
    return seconds, f"{timeline.scratch_steps:,} of {len(timeline.turns):,} steps planned from scratch"


def _one_plan(case: Case, s: Session, store: CountStore) -> float:
    """Seconds per plan of a `fresh` identity of `s` with the case's options (`timed`'s median)."""
    params, options, scheme = _settings(case, s)
    first_plan(case.policy, fresh(s, store, scheme), params, store, options)  # one call untimed (`_in_own_process`)
    return timed(lambda x: first_plan(case.policy, x, params, store, options), 0.1, make=lambda: fresh(s, store, scheme))


def _settings(case: Case, s: Session) -> tuple[object, PlanOptions, object]:
    """The case's policy parameters, plan options and counting scheme for session `s`."""
    pol = get_policy(case.policy)
    return pol.make_params(case.params), PlanOptions(pair_safe=case.pair_safe), pol.scheme(None, s.model)


def _expected(case: Case, n: int) -> float:
    """A replay's seconds at `n` messages, from the growth between the last two sizes measured
    (at least linear; from scratch assumed quadratic until two sizes say otherwise)."""
    done = sorted(case.sim)
    last = done[-1]
    exponent = 2.0 if len(done) < 2 else max(1.0, fit_exponent(done[-2:], [case.sim[k][0] for k in done[-2:]]))
    return case.sim[last][0] * (n / last) ** exponent


def _replay(make, policy: str, params, store, options, limit: float, calls: int = 3):  # noqa: ANN001, ANN202
    """Seconds per replay of a `fresh` identity of the session (`make()`; `timed`'s median) and the
    last timeline; `_TooSlow` when one replay passes `limit` seconds."""
    start = [0.0]

    def watch(done: int, total: int) -> None:
        if time.perf_counter() - start[0] > limit:
            raise _TooSlow

    out = []

    def replay(session: Session) -> None:  # as `ctxviz simulate` replays: the collector paused, what it built frozen after
        start[0] = time.perf_counter()
        with frozen_after():
            out[:] = [simulate(session, policy, params, store=store, options=options, progress=watch if limit != float("inf") else None)]
        store.forget(session)

    seconds = timed(replay, 0.1 if calls > 1 else 0.0, make=make, calls=calls)
    return seconds, out[-1]


def _row(case: Case, goal_size: int, rounds: int, lengths: dict[int, int]) -> Row:
    """One line per case: the cost exponent per round, and the replay against one plan at the largest size
    (`lengths`: each size's real number of messages, which a tiled log only approaches)."""
    measured = sorted(k for k, v in case.sim.items() if len(v) == rounds)
    goal = PAIR_SAFE_EXPONENT_GOAL if case.pair_safe else EXPONENT_GOAL
    if not measured:
        why = case.stopped or "nothing measured"
        print(f"{case.label:<44} {case.kind:<7} {case.how}: not measured ({why})")
        return Row(f"{case.label}: {case.how}", [], f"<= n^{goal} / <= {RATIO_GOAL:.0f}x at {goal_size:,}", False, note=f"not measured: {why}",
                   group=group_of(case.kind))
    fit = measured[-3:]
    exponents = [fit_exponent([lengths[n] for n in fit], [case.sim[n][r] for n in fit]) for r in range(rounds)] if len(fit) > 1 else []
    top = fit[-1]
    ratios = [a / b for a, b in zip(case.sim[top], case.plan[top], strict=True)]
    reached = top >= goal_size  # (a tiled log's 4,000 is its copies nearest 4,000 messages)
    span = f"{lengths[fit[0]]:,}-{lengths[top]:,}" if len(fit) > 1 else f"{lengths[top]:,}"
    exp_row = Row("exponent", exponents, f"<= n^{goal}", reached and bool(exponents) and statistics.median(exponents) <= goal, unit="n^",
                  note="" if exponents else "one size only")
    ratio_row = Row("ratio", ratios, f"<= {RATIO_GOAL:.0f}x at {goal_size:,}", reached and statistics.median(ratios) <= RATIO_GOAL)
    stopped = case.stopped or f"the sizes it is timed at end at {lengths[top]:,}"
    where = f"{span} messages, {case.scratch} at {lengths[top]:,}" + ("" if reached else f"; not timed further: {stopped}")
    detail = "; ".join(f"{n:,}: {statistics.median(case.sim[n]):.3f} s" for n in measured) + \
        f"; one plan at {top:,}: {statistics.median(case.plan[top]) * 1000:.1f} ms"
    print(f"{case.label:<44} {case.kind:<7} {exp_row.measured():<24} {ratio_row.measured():<24} {where}; {case.how}", flush=True)
    return compound(f"{case.label}: {case.how}; {where}", [exp_row, ratio_row], detail=detail, group=group_of(case.kind))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (250-1,000; from scratch 60-250), to check the harness")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(map(str, GROWTH_SIZES)),
                        help="sizes of an incremental replay, the last the goal's (default: %(default)s; 1000,2000,4000,8000,16000 for more)")
    parser.add_argument("--cap", type=float, default=1.0, help="seconds: a replay from scratch grows only while the next size is expected within this")
    parser.add_argument("--policy", action="append", help="only these policies (default: all)")
    parser.add_argument("--sessions", default="agent", help="any of agent,tiled,gemini (default: %(default)s)")
    parser.add_argument("--pair-safe", default="all", help="'all', 'none', or policies (comma-separated) also replayed with pair safety")
    args = parser.parse_args()
    sizes = (250, 500, 1000) if args.quick else tuple(int(n) for n in args.sizes.split(","))
    scratch = (60, 125, 250) if args.quick else SCRATCH_SIZES
    pair_safe = args.pair_safe if args.pair_safe in ("all", "none") else args.pair_safe.split(",")
    kinds = tuple(k.strip() for k in args.sessions.split(","))
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        parser.error(f"--sessions: unknown {', '.join(unknown)} (choose from {', '.join(KINDS)})")
    for row in growth(kinds, args.policy, pair_safe, max(3, args.rounds), sizes, scratch, args.cap):
        print(f"{row.name}: {row.measured()}  goal {row.goal}  {row.result()}" + (f"  ({row.detail})" if row.detail else ""))


if __name__ == "__main__":
    main()
