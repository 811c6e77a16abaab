"""Inputs that once planned far slower than a normal file of the same size, against that file.

    python bench/bench_slow_inputs.py [--rounds 5]

Each case runs `ctxviz plan FILE` as a user would (a fresh process, start to exit), interleaved with
the same command on a normal session file of the same size, and prints the median ratio with its
spread against the goal: at most 2x. The cases:
  1. a 3 MB JSONL file of 3,000,000 blank lines (each was a failed json.loads: 56 s), refused as empty;
  2. YAML nested 1,001 levels (past libyaml's safe depth it went to the pure-Python composer, only to
     fail at its recursion limit, 4-5x slower than 999 levels), refused as nested too deeply;
  3. YAML nested 999 levels, which loads.
Never asserts: machines differ, ratios travel.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))

from common import ROOT, Row, interleaved, within  # noqa: E402

GOAL = 2.0


def _normal_jsonl(size: int) -> str:
    lines, total, i = [], 0, 0
    while total < size:
        line = json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} about the deployment and its logs"})
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def _nested_yaml(depth: int) -> str:
    return "messages:\n  - role: user\n    content: hi\n    extra: " + "[" * depth + "]" * depth + "\n"


def _normal_yaml(size: int) -> str:
    body, i = ["messages:"], 0
    while sum(len(b) + 1 for b in body) < size:
        body.append(f"  - role: {'user' if i % 2 == 0 else 'assistant'}\n    content: message {i}")
        i += 1
    return "\n".join(body) + "\n"


def _plan_seconds(path: str) -> float:
    """Wall-clock seconds of `ctxviz plan PATH`, start to exit (a refused input exits 2: timed the same)."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ctxviz", "plan", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - t


def run(rounds: int = 5) -> list[Row]:
    folder = tempfile.mkdtemp(prefix="ctxviz-bench-slow-")
    cases = {
        "blank.jsonl": ("\n" * 3_000_000, "normal.jsonl", _normal_jsonl(3_000_000)),
        "nested1001.yaml": (_nested_yaml(1001), "normal1001.yaml", None),
        "nested999.yaml": (_nested_yaml(999), "normal999.yaml", None),
    }
    rows = []
    for name, (text, normal_name, normal_text) in cases.items():
        slow, normal = os.path.join(folder, name), os.path.join(folder, normal_name)
        with open(slow, "w") as f:
            f.write(text)
        with open(normal, "w") as f:
            f.write(normal_text if normal_text is not None else _normal_yaml(len(text)))
        def baseline(path: str = normal) -> float:
            return _plan_seconds(path)

        def candidate(path: str = slow) -> float:
            return _plan_seconds(path)

        _, _, ratios = interleaved(baseline, candidate, rounds=rounds, warmup=True)
        rows.append(Row(f"plan {name} vs a normal file of its size", ratios, f"<= {GOAL:g}x", within(GOAL, ratios)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for row in run(args.rounds):
        print(f"{row.name:55} {row.measured():>22}  goal {row.goal:>7}  {'met' if row.met else 'NOT met'}")


if __name__ == "__main__":
    main()
