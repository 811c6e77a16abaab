"""Start-up: `ctxviz --version` against a bare `python -c pass`, and `ctxviz plan` on a sample session
against `python -c "import tiktoken"` (the tokenizer library a plan may need; the sample's policy, missy,
counts with its own estimator, so this plan imports numpy and yaml but never tiktoken).

    python bench/bench_startup.py [--rounds 5]

Each measurement is one fresh process, wall clock from start to exit; baseline and candidate alternate.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from common import ROOT, Row, interleaved, spread, wall, within  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from ctxviz.cli import main; sys.exit(main())"]


def run(rounds: int = 5) -> list[Row]:
    # As a user runs it: with Python's bytecode cache (an installed package has its .pyc files). With
    # PYTHONDONTWRITEBYTECODE set (as in some shells and CI), every run would compile every module anew.
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": ROOT}
    sample = os.path.join(ROOT, "sample_sessions", "support_chat.yaml")
    cases = [
        ("ctxviz --version vs python -c pass", [sys.executable, "-c", "pass"], [*CLI, "--version"], 2.0),
        ("ctxviz plan (sample) vs python -c 'import tiktoken'", [sys.executable, "-c", "import tiktoken"], [*CLI, "plan", sample], 1.5),
    ]
    rows = []
    for name, base, cand, goal in cases:
        wall(base, env), wall(cand, env)  # warm the file cache
        b, c, ratios = interleaved(lambda base=base: wall(base, env), lambda cand=cand: wall(cand, env), rounds)
        print(f"{name}: {spread(c, 1000, '{:.0f}')} ms vs {spread(b, 1000, '{:.0f}')} ms -> {spread(ratios)}x (goal <= {goal}x)", flush=True)
        rows.append(Row(name, ratios, f"<= {goal}x", within(goal, ratios)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    for row in run(parser.parse_args().rounds):
        print(row.name, row.measured(), row.goal, "met" if row.met else "NOT met")


if __name__ == "__main__":
    main()
