"""LangChain's own `trim_messages` against ctxviz's langchain-trim re-plan, in one process.

    python bench/bench_langchain.py [--messages 100000] [--rounds 5]

Needs langchain-core importable next to ctxviz (a venv made with --system-site-packages and
`pip install langchain-core`). bench/run.py runs this file in one process with it: its own interpreter
when that has langchain-core, else $CTXVIZ_BENCH_LANGCHAIN_PYTHON, else /tmp/venv-bench/bin/python or
/tmp/venv-langchain/bin/python, whichever exists; without any, its row says "not measured" and why.

Both run on the same session (bench_engine.agent_session: a user turn, tool calls with long outputs,
answers), at LangChain's usual call: `max_tokens=4000`, `strategy="last"`, `start_on="human"`,
`include_system=True`, `token_counter=count_tokens_approximately`. LangChain trims the list of
messages a user already holds; ctxviz re-plans the session after a parameter change (max_tokens
moved by one each round, so nothing of the previous answer can be reused; the counts of the
session are, as in the app). Rounds alternate which runs first; each prints both times and the
kept counts, which must agree. Goal (issue 22): ctxviz at least 20x faster. Never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from common import Row, spread  # noqa: E402

GOAL = 20.0
BUDGET = 4000


def run(messages: int = 100_000, rounds: int = 5) -> list[Row]:
    import langchain_core
    from bench_engine import agent_session
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages

    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.planner import plan_session

    session = agent_session(messages)
    held = []
    for m in session.messages:
        if m.role == "system":
            held.append(SystemMessage(m.text))
        elif m.role == "user":
            held.append(HumanMessage(m.text))
        elif m.role == "tool":
            held.append(ToolMessage(m.text, tool_call_id=m.tool_call_id))
        else:
            held.append(AIMessage(m.text, tool_calls=[{"name": c.name, "args": json.loads(c.arguments or "{}"), "id": c.id} for c in m.tool_calls]))
    store = CountStore()
    settings = {"start_on": "human", "include_system": True}
    plan_session(session, "langchain-trim", {"max_tokens": BUDGET, **settings}, None, store)  # the first plan: counts the session

    theirs_s: list[float] = []
    ours_s: list[float] = []
    for r in range(rounds):
        budget = BUDGET + 1 + r

        def theirs(budget: int = budget) -> tuple[float, int]:
            t = time.perf_counter()
            kept = trim_messages(held, max_tokens=budget, token_counter=count_tokens_approximately, strategy="last", **settings)
            return time.perf_counter() - t, len(kept)

        def ours(budget: int = budget) -> tuple[float, int]:
            t = time.perf_counter()
            plan = plan_session(session, "langchain-trim", {"max_tokens": budget, **settings}, None, store)
            return time.perf_counter() - t, plan.totals.kept_messages

        first, second = (theirs, ours) if r % 2 == 0 else (ours, theirs)
        a, b = first(), second()
        (t_theirs, kept_theirs), (t_ours, kept_ours) = (a, b) if r % 2 == 0 else (b, a)
        theirs_s.append(t_theirs)
        ours_s.append(t_ours)
        print(f"  round {r + 1}: LangChain {t_theirs * 1000:.1f} ms ({kept_theirs} kept), ctxviz {t_ours * 1000:.1f} ms ({kept_ours} kept)", flush=True)
    speedups = [a / b for a, b in zip(theirs_s, ours_s, strict=True)]
    met = statistics.median(speedups) >= GOAL
    print(f"LangChain trim_messages (langchain-core {langchain_core.__version__}, max_tokens={BUDGET:,}, strategy='last', start_on='human', "
          f"include_system) on {messages:,} messages, in one process: {spread(theirs_s, 1000, '{:.0f}')} ms; ctxviz langchain-trim re-plan "
          f"{spread(ours_s, 1000, '{:.1f}')} ms -> ctxviz {spread(speedups, 1, '{:.0f}')}x faster (goal >= {GOAL:.0f}x): "
          f"{'met' if met else 'NOT met'}", flush=True)
    return [Row(f"LangChain trim_messages (langchain-core {langchain_core.__version__}) vs ctxviz's langchain-trim re-plan, "
                f"max_tokens={BUDGET:,}, one process, interleaved: speed-up, {messages:,} messages", speedups, f">= {GOAL:.0f}x", met)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="end with the row as JSON (bench/run.py reads it)")
    args = parser.parse_args()
    rows = run(args.messages, args.rounds)
    if args.json:
        print(json.dumps([{"name": r.name, "ratios": r.ratios, "goal": r.goal, "met": r.met} for r in rows]))


if __name__ == "__main__":
    main()
