"""Run every benchmark in bench/ and end with the summary tables README's "Benchmarks" shows.

    python bench/run.py [--quick] [--rounds 3] [--no-gui] [--write-readme]

Each row: the measured median [min-max] of the per-round ratios (baseline and candidate alternating,
3 or more rounds, never the best of several), the goal, met / not met. A row that could not be
measured says so and why, and counts as not met. The sections, in the order they run:

- start-up, counting, loading (time and peak memory against `json.loads`, fresh child processes);
- re-plan: missy at 100,000 messages (o200k_base, the cut moved), then every policy at 100,000
  messages with its own estimator (`--replan-messages`: a parameter moved at the default budget /
  the budget above the session / at half of it), then every policy with o200k_base at
  `--o200k-messages` (5,000: each first plan tokenizes the whole session), each against a first plan
  of the same session, counting included;
- LangChain's own `trim_messages` against the langchain-trim re-plan, in one process, interleaved,
  at max_tokens=4,000 (bench_langchain.py; a venv with langchain-core when this interpreter lacks it);
- `simulate` against a naive per-turn recount;
- growth (at least 5 rounds): every policy's `simulate` cost exponent (1,000-4,000 messages) and
  replay against one plan at 4,000, with and without pair safety, on agent sessions and on a tiled real Claude Code log with
  recorded compactions, and Gemini CLI past its first compression (bench_simulate.py). A replay that
  runs from scratch is named with `replays_incrementally(policy, session, options, params)`'s answer
  and timed from 125 messages while one replay stays under `--cap` seconds (0.5);
- `simulate` with retention against `--retention off` (fresh processes, as a user runs them);
- inputs that once planned slowly; the app and the report (bench_gui.py, offscreen; `--no-gui`).

Each section runs in a child forked from this lean parent (imports done, nothing measured yet), so
no section is timed in a heap another section grew: a user's `ctxviz simulate` starts in a fresh
process, not after re-planning 100,000-message sessions.

`--write-readme` writes the tables into README.md between `<!-- bench:start -->` and
`<!-- bench:end -->`, with a line saying when and where they were measured (bench/readme_table.py).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from common import ROOT, Row, in_forked_child  # noqa: E402


def gui_rows(quick: bool, rounds: int) -> list[Row]:
    """bench_gui.py's rows (the app and the report; its window runs in a child process)."""
    try:
        import bench_gui
        import PySide6  # noqa: F401
    except ImportError as exc:
        print(f"bench_gui.py: not measured ({exc})")
        return [Row("the app and the report (bench_gui.py)", [], "", False, note=f"not measured: {exc}")]
    return bench_gui.run(rounds=rounds, quick=quick)


def in_fresh_child(measure: Callable[[], list[Row]], group: str) -> list[Row]:
    """`measure()` in a child forked from this parent, which has measured nothing: its rows, or one
    row saying why it could not be measured."""
    ok, value = in_forked_child(measure)
    if ok:
        return value  # type: ignore[return-value]
    print(f"{group}: not measured ({value})", flush=True)
    return [Row(group, [], "", False, note=f"not measured: {value}")]


def grouped(rows: list[Row], group: str) -> list[Row]:
    """The rows, each in `group` unless it names its own section."""
    for row in rows:
        row.group = row.group or group
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(rows: list[Row]) -> str:
    """One Markdown table per section, in the order the sections first appear."""
    out: list[str] = []
    for group in dict.fromkeys(r.group for r in rows):
        out += ["", f"**{group}**" if group else "", "", "| benchmark | measured: median [min-max] of rounds | goal | result |", "|---|---|---|---|"]
        for row in (r for r in rows if r.group == group):
            result = row.result().replace("not met", "**not met**")
            out.append(f"| {_cell(row.name)} | {_cell(row.measured())} | {_cell(row.goal)} | {result} |")
    return "\n".join(out).strip("\n")


def load_average() -> str:
    try:
        return "/".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, to check the harness (numbers mean little)")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds per comparison (at least 3)")
    p.add_argument("--no-gui", action="store_true", help="skip bench_gui.py (the app and the report, about 3 minutes)")
    p.add_argument("--o200k-messages", type=int, default=5_000,
                   help="session size of the per-policy re-plan with o200k_base (default: %(default)s; each first plan tokenizes it all)")
    p.add_argument("--replan-messages", type=int, default=100_000,
                   help="session size of the per-policy re-plan with each policy's own estimator, and of LangChain's (default: %(default)s)")
    p.add_argument("--cap", type=float, default=0.5,
                   help="seconds: a replay from scratch is timed at growing sizes while one replay stays under this (default: %(default)s)")
    p.add_argument("--write-readme", action="store_true", help="write the tables into README.md between its bench markers")
    return p


def main() -> None:
    args = parser().parse_args()
    rounds = max(3, args.rounds)
    quick = args.quick
    start = time.perf_counter()
    load_start = load_average()
    started = datetime.datetime.now().astimezone()
    import bench_counting
    import bench_engine
    import bench_load
    import bench_retention
    import bench_simulate
    import bench_slow_inputs
    import bench_startup

    big = 10_000 if quick else args.replan_messages
    replan = "Re-plan after a parameter change, against a first plan (counting included)"
    o200k = 1_000 if quick else args.o200k_messages
    sizes = (250, 500, 1000) if quick else bench_simulate.GROWTH_SIZES
    scratch = (60, 125, 250) if quick else bench_simulate.SCRATCH_SIZES
    sections: list[tuple[str, Callable[[], list[Row]]]] = [
        ("Start-up", lambda: bench_startup.run(rounds=max(5, rounds))),
        ("Counting", lambda: bench_counting.run(rounds=rounds, megabytes=2 if quick else 20)),
        ("Loading", lambda: bench_load.run(megabytes=5 if quick else 100, rounds=rounds, memory_megabytes=2 if quick else 10)),
        (replan, lambda: bench_engine.bench_replan(10_000 if quick else 100_000, rounds)),
        (replan, lambda: bench_engine.bench_replan_matrix(big, rounds, tokenizers=(None,), group=replan)),
        (f"Re-plan with o200k_base, at {o200k:,} messages (each first plan tokenizes the whole session)",
         lambda: bench_engine.bench_replan_matrix(o200k, rounds, tokenizers=("o200k_base",))),
        ("Against LangChain's own trim_messages", lambda: bench_engine.bench_frameworks(big, rounds)),
        ("simulate against a naive per-turn recount", lambda: bench_engine.bench_simulate(300 if quick else 1000, rounds)),
        # At least 5 rounds: each round fits its own exponent from replays of 10-100 ms, which a
        # scheduler's hiccup moves by 0.3 or more; the median of 5 fits is what the row reports.
        ("Growth", lambda: bench_simulate.growth(("agent", "tiled", "gemini"), None, "all", max(5, rounds), sizes, scratch, args.cap)),
        ("simulate with retention", lambda: bench_retention.run(rounds=rounds, messages=2_000 if quick else 10_000)),
        ("Inputs that once planned slowly", lambda: bench_slow_inputs.run(rounds=rounds)),
    ]
    if not args.no_gui:
        sections.append(("The app and the report", lambda: gui_rows(quick, rounds)))
    rows: list[Row] = []
    took: list[str] = []
    for group, measure in sections:
        t = time.perf_counter()
        rows += grouped(in_fresh_child(measure, group), group)
        took.append(f"{group.split(',')[0].split(' (')[0]}: {time.perf_counter() - t:.0f} s")
        print(f"-- {took[-1]}", flush=True)
    elapsed = time.perf_counter() - start
    command = "python bench/run.py" + "".join(f" {a}" for a in sys.argv[1:] if a != "--write-readme")
    met = sum(r.met for r in rows)
    line = (f"Last run: {started:%Y-%m-%d %H:%M %Z}, `{command}`, Python {platform.python_version()}, {os.cpu_count()} cores, "
            f"load average (1/5/15 min) {load_start} at start and {load_average()} at end, {elapsed / 60:.1f} minutes, "
            f"{rounds} interleaved rounds per comparison: {met} of {len(rows)} goals met.")
    summary = f"{line}\n\n{table(rows)}\n"
    print()
    print("Time per section: " + "; ".join(took))
    print(summary)
    if args.write_readme:
        from readme_table import write_readme

        path = os.path.join(ROOT, "README.md")
        write_readme(path, summary)
        print(f"wrote the tables into {path}")


if __name__ == "__main__":
    main()
