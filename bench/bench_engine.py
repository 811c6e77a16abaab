"""Engine speed on realistic sessions, measured against baselines in the same run, in interleaved rounds.

    python bench/bench_engine.py [--messages 100000] [--rounds 3]

Prints ratios (median [min-max] over rounds), never asserts: machines differ, ratios travel.
  1. re-plan after a parameter change on a 100,000-message session with tool calls and long tool
     outputs vs the first plan of the same session (goal < 5 %), with the cut moved (nothing reused)
  2. simulating a 1,000-message session turn by turn vs a naive per-turn recount
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

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from common import Row, interleaved, spread, timed, within  # noqa: E402

from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import missy  # noqa: E402
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
        first = timed(lambda session=session, store=store: plan_session(session, "missy", {"total": 2_000_000}, "o200k_base", store))
        missy._OLDER_CACHE.clear()  # the cut moves: nothing kept from the first plan
        budget = 1_500_000 - 10_000 * r
        replan = timed(lambda session=session, store=store, budget=budget: plan_session(session, "missy", {"total": budget, "fresh_tail_count": 40}, "o200k_base", store))
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


def run(messages: int = 100_000, sim_messages: int = 1000, rounds: int = 3) -> list[Row]:
    return bench_replan(messages, rounds) + bench_simulate(sim_messages, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sim-messages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for row in run(args.messages, args.sim_messages, args.rounds):
        print(row.name, row.measured(), row.goal, "met" if row.met else "NOT met")


if __name__ == "__main__":
    main()
