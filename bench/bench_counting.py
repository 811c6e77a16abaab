"""Token counting throughput against raw tiktoken `encode_ordinary`, on real session text (the
messages of a generated agent session with long tool outputs and of the scaled-up Claude Code sample),
with identical counts checked.

    python bench/bench_counting.py [--megabytes 20] [--rounds 3]

Candidates: what a plan does (CountStore: the policy's measure, message by message) and
`TiktokenTokenizer.count_many`. Both count with bpe-openai's Rust counter when it is installed (the
`fast` extra; the row names the backend), else with tiktoken (`encode_ordinary_batch` for the batch).
Goal: at least 1.5x raw throughput, i.e. at most 0.67x its time.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench_engine import agent_session  # noqa: E402
from bench_load import write_claude_code  # noqa: E402
from common import Row, interleaved, spread, timed  # noqa: E402

from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.policies import get_policy  # noqa: E402
from ctxviz.engine.tokenizers import TiktokenTokenizer, fast_counter, load_encoding  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402


def run(rounds: int = 3, megabytes: float = 20) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="ctxviz-bench-") as folder:
        path = os.path.join(folder, "cc.jsonl")
        write_claude_code(path, megabytes / 2)
        cc = load_session(path)
    agent = agent_session(int(megabytes / 2 * 1000))
    sessions = [agent, cc]
    sample = [m.text for s in sessions for m in s.messages if m.text]
    enc = load_encoding("o200k_base")
    tok = TiktokenTokenizer("o200k_base")
    raw_counts = [len(enc.encode_ordinary(t)) for t in sample]
    assert tok.count_many(sample) == raw_counts, "count_many differs from encode_ordinary"
    chars = sum(map(len, sample))
    policy = get_policy("missy")
    scheme = policy.scheme("o200k_base", "")

    def raw() -> float:
        return timed(lambda: [len(enc.encode_ordinary(t)) for t in sample])

    def plan_path() -> float:  # fresh session identities: nothing cached
        return timed(lambda: [CountStore().get(dataclasses.replace(s), scheme) for s in sessions])

    def batch() -> float:
        return timed(lambda: tok.count_many(sample))

    backend = "bpe-openai's counter" if fast_counter("o200k_base") is not None else "tiktoken (bpe-openai not installed)"
    rows = []
    for name, fn in ((f"count per message, as a plan does (CountStore, {backend})", plan_path), (f"count_many ({backend})", batch)):
        b, c, ratios = interleaved(raw, fn, rounds)
        throughput = [1 / r for r in ratios]
        print(f"counting {len(sample):,} texts ({chars / 1e6:.0f} MB), {name}: raw {spread(b)} s, ctxviz {spread(c)} s "
              f"-> {spread(throughput)}x raw throughput (goal >= 1.5x)", flush=True)
        rows.append(Row(f"counting throughput vs raw encode_ordinary: {name}", throughput, ">= 1.5x", sorted(throughput)[len(throughput) // 2] >= 1.5))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for row in run(args.rounds, args.megabytes):
        print(row.name, row.measured(), row.goal, "met" if row.met else "NOT met")


if __name__ == "__main__":
    main()
