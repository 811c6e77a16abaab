"""Engine speed on realistic sessions, measured against baselines in the same run, in interleaved rounds.

    python bench/bench_engine.py [--messages 100000] [--rounds 3]

Prints ratios (median [min-max] over rounds), never asserts: machines differ, ratios travel.
  1. re-plan after a parameter change on a 100,000-message session with tool calls and long tool
     outputs vs the first plan of the same session (goal < 5 %), with the cut moved (nothing reused)
  2. the same for every policy, with its own estimator and with o200k_base: a parameter moved at the
     default budget, the budget above the whole session, and at half of it (`replan_cases`)
     (`--matrix-messages` sets its session size: each first plan counts the whole session)
  3. the frameworks' own builds side by side: LangChain's `trim_messages` and ctxviz's re-plan in one
     process (bench_langchain.py, run with a venv's python when this one lacks langchain-core; see
     `langchain_python`), goal: ctxviz's re-plan at least 20x faster
  4. simulating a 1,000-message session turn by turn vs a naive per-turn recount
Plans in 1 and 2 are timed as a user's plan runs (`planned`): the cycle collector paused, what the
plan built frozen after, as `ctxviz plan` and the app's workers plan.
Loading is bench_load.py, counting bench_counting.py, start-up bench_startup.py; `python bench/run.py` runs all.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import random
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from common import Row, compound, in_forked_child, interleaved, spread, timed, within  # noqa: E402

from ctxviz.engine import summarizers  # noqa: E402
from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.gc_pause import frozen_after  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies.langchain import counting as langchain_counting  # noqa: E402
from ctxviz.engine.policies.llamaindex import summary_columns as llamaindex_summary  # noqa: E402
from ctxviz.engine.policies.llamaindex import summary_input as llamaindex_summary_input  # noqa: E402
from ctxviz.engine.policies.missy import context_manager as missy  # noqa: E402
from ctxviz.engine.policies.openhands import summary_input as openhands_summary_input  # noqa: E402
from ctxviz.engine.policies.supyagent import summary_input as supyagent_summary_input  # noqa: E402
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart  # noqa: E402

WORDS = ("context window budget tail evict summary tool result assistant user token policy plan "
         "def return import class self value error trace json yaml kubectl deploy pod").split()


def texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.choice((5, 20, 80, 300, 1200))
        out.append(" ".join(rng.choice(WORDS) for _ in range(k)) + rng.choice(("", "\n{\"ok\": true, \"n\": 42}", "\n    return x + 1")))
    return out


def session_of(n: int) -> Session:
    """A plain user/assistant/tool-role text session (what the GUI benchmark drags sliders on)."""
    sample = texts(2000)
    roles = ("user", "assistant", "tool")
    msgs = tuple(Message(id=f"m{i}", index=i, role=roles[i % 3] if i < n - 1 else "user", parts=(TextPart(sample[i % len(sample)]),))
                 for i in range(n))
    return Session(messages=msgs, source="<bench>", format="bench")


def agent_session(n: int, seed: int = 3) -> Session:
    """An agent session: a user turn, then assistant tool calls each answered by a tool message with a
    long output (listings, code, logs), multi-part user content, and a closing assistant answer."""
    rng = random.Random(seed)
    prose = texts(400, seed)
    outputs = []
    for _ in range(300):
        lines = [f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{i}.py:{rng.randint(1, 900)}: " + " ".join(rng.choice(WORDS) for _ in range(8))
                 for i in range(rng.choice((2, 10, 30, 80)))]
        outputs.append("\n".join(lines))
    msgs: list[Message] = [Message(id="m0", index=0, role="system", parts=(TextPart("You are a coding agent. " + prose[0]),))]
    call = 0
    while len(msgs) < n:
        i = len(msgs)
        msgs.append(Message(id=f"m{i}", index=i, role="user", parts=(TextPart(prose[i % 400][:400]), TextPart(outputs[i % 300][:300]))))
        for _ in range(rng.randint(1, 4)):
            if len(msgs) >= n - 2:
                break
            call += 1
            cid = f"call_{call}"
            i = len(msgs)
            msgs.append(Message(id=f"m{i}", index=i, role="assistant", parts=(ToolCallPart(cid, "shell", json.dumps({"cmd": rng.choice(WORDS)})),)))
            msgs.append(Message(id=f"m{i + 1}", index=i + 1, role="tool", tool_call_id=cid, parts=(ToolResultPart(cid, outputs[call % 300]),)))
        i = len(msgs)
        msgs.append(Message(id=f"m{i}", index=i, role="assistant", parts=(TextPart(prose[call % 400][:600]),)))
    return Session(messages=tuple(msgs[:n]), source="<bench>", format="bench")


def planned(fn: Callable[[], object]) -> float:
    """Seconds of one plan timed as a user's plan runs: with the cycle collector paused, then what it
    built frozen (`frozen_after`), as `ctxviz plan` does (cli/session.py, `plan_frozen`) and as the app's workers
    plan (the collector off while they run, gui/threads.py; the results frozen, gui/vm/results.py).
    Timed with Python's default collector instead, a first plan of 100,000 messages counted the
    collector's full passes over what it built: up to half of it (langchain-trim, strands), which
    made every re-plan look that much smaller beside it."""
    with frozen_after():
        t = time.perf_counter()
        fn()
        spent = time.perf_counter() - t
    return spent


def bench_replan(n: int, rounds: int) -> list[Row]:
    base = agent_session(n)
    gc.collect()
    gc.freeze()  # as load_session leaves a loaded session: out of the collector's generations
    first_times, replans = [], []
    ratios = []
    for r in range(rounds):
        session = dataclasses.replace(base)  # a new identity: nothing counted or cached yet
        store = CountStore()
        missy._OLDER_CACHE.clear()
        first = planned(lambda session=session, store=store: plan_session(session, "missy", {"total": 2_000_000}, "o200k_base", store))
        missy._OLDER_CACHE.clear()  # the cut moves: nothing kept from the first plan
        budget = 1_500_000 - 10_000 * r
        replan = planned(lambda session=session, store=store, budget=budget: plan_session(session, "missy", {"total": budget, "fresh_tail_count": 40}, "o200k_base", store))
        first_times.append(first)
        replans.append(replan)
        ratios.append(replan / first * 100)
    chars = sum(len(m.text) for m in base.messages)
    print(f"re-plan {n:,} messages with tool calls ({chars / 1e6:.0f} MB of text, o200k_base): first plan {spread(first_times)} s, "
          f"re-plan with the cut moved {spread(replans, 1000, '{:.0f}')} ms -> {spread(ratios, 1, '{:.1f}')} % of the first plan (goal < 5 %)", flush=True)
    return [Row(f"re-plan {n:,} messages after a parameter change vs first plan", ratios, "< 5 %", within(5, ratios), unit="%")]


def bench_simulate(n: int, rounds: int) -> list[Row]:
    from ctxviz.engine.policies import get_policy
    from ctxviz.engine.simulate import simulate

    session = agent_session(n, seed=5)
    policy = get_policy("supyagent")
    params = policy.make_params({"max_messages_before_summary": 40})
    sample_turns = list(range(0, n, max(1, n // 50)))

    def ours() -> float:
        return timed(lambda: simulate(dataclasses.replace(session), "supyagent", {"max_messages_before_summary": 40}, None, CountStore()))

    def naive() -> float:  # what a per-turn tool without a count cache does, recounting the prefix each turn (extrapolated)
        t = time.perf_counter()
        for i in sample_turns:
            plan_session(dataclasses.replace(session, messages=session.messages[: i + 1]), "supyagent", params, None, CountStore())
        return (time.perf_counter() - t) * n / len(sample_turns)

    naive_s, ours_s, ratios = interleaved(naive, ours, rounds)
    print(f"simulate {n:,} messages with tool calls (supyagent): {spread(ours_s)} s; naive per-turn recount ~{spread(naive_s, 1, '{:.0f}')} s "
          f"-> {spread(ratios, 100, '{:.1f}')} % of the naive time", flush=True)
    return [Row(f"simulate {n:,} messages vs naive per-turn recount", [r * 100 for r in ratios], "< 50 %", within(50, [r * 100 for r in ratios]), unit="%")]


def clear_caches() -> None:
    """Nothing kept from an earlier plan: missy's records of the older messages (a re-plan keeps
    them, a first plan has none). What the other policies derive is kept per session
    (`Session.derived`, `counting.derived_from_counts`), so a fresh session starts with nothing; but
    a fresh session shares its message objects, so what is kept by message identity is forgotten
    here too: the offline summariser's per-message reading, LlamaIndex's last few snapshots of the
    messages it summarises (keyed by their ids: a first plan of ChatSummaryMemoryBuffer on a fresh
    copy was timed warm, 7 ms for a cold 60 ms at 4,000 agent messages, which made its replay look
    37x one plan), LangChain's views of the messages (else the first plans would be timed warm) and
    what supyagent's, OpenHands' and LlamaIndex's summarisers are shown of each message."""
    missy._OLDER_CACHE.clear()
    summarizers._features.cache_clear()  # type: ignore[attr-defined]
    llamaindex_summary._snapshots.clear()
    langchain_counting._VIEWS.clear()
    supyagent_summary_input._SHOWN.clear()
    openhands_summary_input._READ.clear()
    llamaindex_summary_input._SHOWN.clear()


#: Each policy's total budget parameter, as the framework spells it (a policy not listed here is
#: searched for one of these names; without one only the default-budget case is measured).
BUDGET_PARAMS = {"missy": "total", "supyagent": "context_limit", "mnesis": "context_limit", "categories": "max_tokens",
                 "missy-consolidator": "max_tokens"}
BUDGET_NAMES = ("total", "context_limit", "max_tokens", "max_context_tokens", "token_limit", "context_window", "budget",
                "tokenLimit", "model_context_window", "context_window_limit")
REPLAN_GOAL = 5.0


def budget_param(name: str, params: object) -> str | None:
    fields = {f.name for f in dataclasses.fields(params)}  # type: ignore[arg-type]
    if name in BUDGET_PARAMS and BUDGET_PARAMS[name] in fields:
        return BUDGET_PARAMS[name]
    return next((f for f in BUDGET_NAMES if f in fields), None)


def nudged(name: str, params: object) -> dict[str, object]:
    """A parameter change that leaves the budget alone: the policy's `keep` (or `trigger`)
    parameter moved by one, a flag flipped; the budget moved by one if the policy names neither."""
    from ctxviz.engine.policies import get_policy

    pol = get_policy(name)
    for field in (*pol.keep, *pol.trigger):
        value = getattr(params, field, None)
        if isinstance(value, bool):
            return {field: not value}
        if isinstance(value, int):
            return {field: value + 1}
        if isinstance(value, float):
            return {field: min(1.0, value + 0.01) if value <= 1.0 else value + 1}
    budget = budget_param(name, params)
    return {budget: int(getattr(params, budget) or 0) + 1} if budget else {}


def replan_cases(name: str, params: object, session_tokens: int) -> dict[str, dict[str, object]]:
    """The re-plans after the first (default) plan: a parameter moved at the default budget
    (`nudged`), and, for a policy with a token budget, the budget above the whole session and at half
    of the session's tokens (a budget that triggers the policy's trim or summary, if anything does)."""
    cases: dict[str, dict[str, object]] = {"a parameter moved": nudged(name, params)}
    budget = budget_param(name, params)
    if budget is not None:
        cases["budget over the session"] = {budget: session_tokens * 10 + 1_000_000}
        cases["budget at half the session"] = {budget: max(1, session_tokens // 2)}
    return cases


def _first_and_replans(base: Session, name: str, tok: str | None) -> tuple[float, dict[str, float]]:
    """One policy's first plan of a new identity of `base` (counting included) and its re-plans
    (`replan_cases`), timed in the calling process: `bench_replan_matrix` runs it in a child forked
    from a parent that has made the session and planned nothing, as a user's process loads its
    session and plans it with one policy. Run one after another in one process, every policy's plans
    ran in a heap the policies before had left, and a plan's time moves with that (supyagent's plan
    of 4,000 agent messages took 30 % longer after the session had been counted with LangChain's
    scheme: bench_simulate.py, `_in_own_process`)."""
    from ctxviz.engine.policies import get_policy

    pol = get_policy(name)
    session = dataclasses.replace(base)  # a new identity: nothing counted or cached yet
    store = CountStore()
    clear_caches()
    first = planned(lambda: plan_session(session, name, {}, tok, store))
    params = pol.default_params()
    session_tokens = sum(store.get(session, pol.scheme(tok, session.model)).message_tokens)
    replans: dict[str, float] = {}
    for case, change in replan_cases(name, params, session_tokens).items():
        missy._OLDER_CACHE.clear()  # the cut moves: nothing kept from the plan before
        try:
            replans[case] = planned(lambda change=change: plan_session(session, name, change, tok, store))
        except Exception as exc:  # noqa: BLE001 (a policy refusing the change is reported, not fatal)
            print(f"  {name} {tok or 'own'} {case}: {change} refused ({exc})")
    return first, replans


def bench_replan_matrix(n: int, rounds: int, policies: list[str] | None = None, tokenizers: tuple[str | None, ...] = (None, "o200k_base"),
                        group: str = "") -> list[Row]:
    """For every policy, with its own estimator and with o200k_base: the first plan of a session
    (counting included, nothing cached) against the re-plans of `replan_cases`, each a row part
    (`group`: the rows' section in bench/run.py's summary). Each policy's round runs in a child
    forked from this process, which has made the session and planned nothing (`_first_and_replans`):
    it plans a new identity of the session, so nothing counted in an earlier round is reused, and
    the re-plans follow their first plan there."""
    from ctxviz.engine.policies import get_policy, policy_names

    names = policies or policy_names()
    base = agent_session(n)
    gc.collect()
    gc.freeze()
    results: dict[tuple[str, str, str], list[float]] = {}
    firsts: dict[tuple[str, str], list[float]] = {}
    replan_times: dict[tuple[str, str, str], list[float]] = {}
    t0 = time.perf_counter()
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            pol = get_policy(name)
            for tok in tokenizers:
                label = tok or f"own ({pol.default_tokenizer})"
                ok, value = in_forked_child(lambda name=name, tok=tok: _first_and_replans(base, name, tok))
                if not ok:
                    raise RuntimeError(f"re-plan matrix, {name} with {label}: {value}")
                first, replans = value  # type: ignore[misc]
                firsts.setdefault((name, label), []).append(first)
                for case, replan in replans.items():
                    results.setdefault((name, label, case), []).append(replan / first * 100)
                    replan_times.setdefault((name, label, case), []).append(replan)
        print(f"  re-plan matrix round {r + 1}/{rounds} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    rows: list[Row] = []
    print(f"\nre-plan after a parameter change on {n:,} messages with tool calls, vs the first plan (counting included); goal <= {REPLAN_GOAL:.0f} %")
    print(f"{'policy':<20} {'estimator':<24} {'first plan s':<18} {'case':<17} {'re-plan ms':<20} {'% of first':<22} result")
    for (name, label, case), ratios in results.items():
        met = within(REPLAN_GOAL, ratios)
        print(f"{name:<20} {label:<24} {spread(firsts[(name, label)]):<18} {case:<17} {spread(replan_times[(name, label, case)], 1000, '{:.0f}'):<20} "
              f"{spread(ratios, 1, '{:.1f}'):<22} {'met' if met else 'NOT met'}")
    for name in names:
        for label in dict.fromkeys(lb for (nm, lb) in firsts if nm == name):
            cases = [(case, ratios) for (nm, lb, case), ratios in results.items() if nm == name and lb == label]
            parts = [Row(case, ratios, f"<= {REPLAN_GOAL:.0f} %", within(REPLAN_GOAL, ratios), unit="%") for case, ratios in cases]
            first = spread(firsts[(name, label)])
            rows.append(compound(f"{name}, {label} estimator, {n:,} messages: re-plan ({' / '.join(c for c, _ in cases)}) vs a first plan of {first} s",
                                 parts, group=group))
    return rows


#: Interpreters with langchain-core beside ctxviz (venvs made with --system-site-packages), tried in turn
#: when this one lacks it; `CTXVIZ_BENCH_LANGCHAIN_PYTHON` names another.
VENV_PYTHONS = ("/tmp/venv-bench/bin/python", "/tmp/venv-langchain/bin/python")
FRAMEWORK_GOAL = 20.0
LANGCHAIN_ROW = "LangChain trim_messages vs ctxviz's langchain-trim re-plan, max_tokens=4,000, one process, interleaved: speed-up"


def langchain_python() -> tuple[str | None, str]:
    """The interpreter to run bench_langchain.py with (None: this one), or why there is none:
    (path, "") or ("", why)."""
    try:
        import langchain_core  # noqa: F401

        return None, ""
    except ImportError:
        pass
    named = os.environ.get("CTXVIZ_BENCH_LANGCHAIN_PYTHON")
    tried = [named] if named else list(VENV_PYTHONS)
    for python in tried:
        if python and os.path.exists(python):
            return python, ""
    return "", (f"langchain-core is not importable here and no venv has it ({', '.join(tried)} missing; "
                "python -m venv --system-site-packages /tmp/venv-bench && /tmp/venv-bench/bin/pip install langchain-core)")


def bench_frameworks(n: int, rounds: int) -> list[Row]:
    """The frameworks' own builds on the same session, side by side with ctxviz's re-plan after a
    parameter change (goal: ctxviz at least 20x faster). LangChain's `trim_messages` and ctxviz run
    in one process (bench_langchain.py), here or, when this interpreter lacks langchain-core, in a
    venv's (`langchain_python`). Without one, a row says it was not measured and why."""
    import subprocess

    print("frameworks' own builds: supyagent: not installable: PyPI's supyagent (0.6.6) is a cloud CLI without "
          "supyagent/core/context_manager.py, so its ContextManager cannot be run here: skipped")
    print("frameworks' own builds: missy build_messages: not on PyPI (no package named missy): skipped")
    python, why = langchain_python()
    name = f"{LANGCHAIN_ROW}, {n:,} messages"
    if python is None:
        import bench_langchain

        return bench_langchain.run(n, rounds)
    if not python:
        print(f"LangChain trim_messages: not measured: {why}")
        return [Row(name, [], f">= {FRAMEWORK_GOAL:.0f}x", False, note=f"not measured: {why}")]
    script = os.path.join(os.path.dirname(__file__), "bench_langchain.py")
    out = subprocess.run([python, script, "--messages", str(n), "--rounds", str(rounds), "--json"], text=True, capture_output=True)
    if out.returncode != 0:
        last = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit status {out.returncode}"
        print(f"LangChain trim_messages with {python}: not measured: {last}")
        return [Row(name, [], f">= {FRAMEWORK_GOAL:.0f}x", False, note=f"not measured: {python} failed: {last}")]
    lines = out.stdout.strip().splitlines()
    print("\n".join(lines[:-1]))
    return [Row(r["name"], r["ratios"], r["goal"], r["met"]) for r in json.loads(lines[-1])]


def run(messages: int = 100_000, sim_messages: int = 1000, rounds: int = 3, matrix_messages: int | None = None,
        policies: list[str] | None = None) -> list[Row]:
    matrix = matrix_messages if matrix_messages is not None else messages
    return (bench_replan(messages, rounds) + bench_replan_matrix(matrix, rounds, policies) + bench_frameworks(matrix, rounds)
            + bench_simulate(sim_messages, rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sim-messages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--matrix-messages", type=int, default=None,
                        help="session size of the per-policy re-plan matrix and the frameworks' builds (default: --messages; each first plan counts the whole session)")
    parser.add_argument("--policy", action="append", help="only these policies in the re-plan matrix (default: all)")
    args = parser.parse_args()
    for row in run(args.messages, args.sim_messages, args.rounds, args.matrix_messages, args.policy):
        print(row.name, row.measured(), row.goal, row.result())


if __name__ == "__main__":
    main()
