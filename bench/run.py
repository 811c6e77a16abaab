"""Run every benchmark in bench/ and end with one summary table (the one README's "Benchmarks" quotes).

    python bench/run.py [--quick] [--rounds 3]

Each row: the measured median [min-max] of the per-round ratios (baseline and candidate alternating,
3+ rounds), the goal, met / not met. Loading and memory are measured in fresh child processes started
from this small parent. bench_simulate.py (simulation scaling) is run too when present, and its rows
folded into the table, and bench_gui.py's (the app and the report, offscreen; `--no-gui` skips them;
alone: `QT_QPA_PLATFORM=offscreen python bench/bench_gui.py`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from common import Row  # noqa: E402


def gui_rows(quick: bool, rounds: int) -> list[Row]:
    """bench_gui.py's rows (the app and the report; its window runs in a child process)."""
    try:
        import bench_gui
        import PySide6  # noqa: F401
    except ImportError as exc:
        print(f"bench_gui.py: skipped ({exc})")
        return []
    return bench_gui.run(rounds=rounds, quick=quick)


def simulate_rows(quick: bool, rounds: int) -> list[Row]:
    """bench_simulate.py's rows, if it is there and offers them (run(), rows() or main())."""
    if not os.path.exists(os.path.join(os.path.dirname(__file__), "bench_simulate.py")):
        print("bench_simulate.py: not present, skipped")
        return []
    module = importlib.import_module("bench_simulate")
    for name in ("run", "rows"):
        fn = getattr(module, name, None)
        if callable(fn):
            # A policy without an incremental replayer plans every prefix, which is quadratic by
            # construction: within the 10 minutes the summary names them as not met instead of
            # timing them (`python bench/bench_simulate.py` measures every policy, about 17 minutes).
            from ctxviz.engine.policies import policy_names
            from ctxviz.engine.replay import replays_incrementally

            incremental = [p for p in policy_names() if replays_incrementally(p) == "incremental"]
            result = fn(quick=quick, rounds=rounds, cap=0.5, policies=incremental)
            rows = [as_row(r) for r in (result or [])]
            rows += [Row(f"simulate {p}: replays from scratch (no incremental replayer)", [float("nan")], "<= n^1.15, <= 10x", False,
                         detail="not timed in run.py") for p in policy_names() if p not in incremental]
            return rows
    main = getattr(module, "main", None)
    if callable(main):
        argv, sys.argv = sys.argv, [sys.argv[0]]
        try:
            main()
        finally:
            sys.argv = argv
    return []


def as_row(r: object) -> Row:
    if isinstance(r, Row):
        return r
    if isinstance(r, dict):
        return Row(str(r.get("name")), list(r.get("ratios") or [r.get("ratio", float("nan"))]), str(r.get("goal", "")), bool(r.get("met")),
                   unit=str(r.get("unit", "x")))
    ratios = getattr(r, "ratios", None) or [getattr(r, "ratio", float("nan"))]
    return Row(str(getattr(r, "name", r)), list(ratios), str(getattr(r, "goal", "")), bool(getattr(r, "met", False)), unit=str(getattr(r, "unit", "x")))


def table(rows: list[Row]) -> str:
    lines = ["| benchmark | measured: median [min-max] of rounds | goal | result |", "|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row.name} | {row.measured()} | {row.goal} | {'met' if row.met else '**not met**'} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the harness (numbers mean little)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-gui", action="store_true", help="skip bench_gui.py (the app and the report, about 3 minutes)")
    args = parser.parse_args()
    rounds = max(3, args.rounds)
    start = time.perf_counter()
    import bench_counting
    import bench_engine
    import bench_load
    import bench_retention
    import bench_slow_inputs
    import bench_startup

    rows: list[Row] = []
    rows += bench_startup.run(rounds=max(5, rounds))
    rows += bench_counting.run(rounds=rounds, megabytes=2 if args.quick else 20)
    rows += bench_load.run(megabytes=5 if args.quick else 100, rounds=rounds, memory_megabytes=2 if args.quick else 10)
    # The per-policy re-plan matrix counts the whole session in every first plan (o200k: about a minute per policy at
    # 100,000 messages here), so with 21 policies it runs at 5,000 within the 10 minutes: `bench_engine.py --matrix-messages 100000` for the full size.
    rows += bench_engine.run(messages=10_000 if args.quick else 100_000, sim_messages=300 if args.quick else 1000, rounds=rounds,
                             matrix_messages=3_000 if args.quick else 5_000)
    rows += bench_slow_inputs.run(rounds=rounds)
    rows += bench_retention.run(rounds=rounds, messages=2_000 if args.quick else 10_000)
    rows += simulate_rows(args.quick, rounds)
    if not args.no_gui:
        rows += gui_rows(args.quick, rounds)
    elapsed = time.perf_counter() - start
    print()
    print(f"Summary ({platform.python_version()}, {os.cpu_count()} cores, {elapsed / 60:.1f} min, {rounds} interleaved rounds per comparison):")
    print(table(rows))
    met = sum(r.met for r in rows)
    print(f"{met} of {len(rows)} goals met")


if __name__ == "__main__":
    main()
