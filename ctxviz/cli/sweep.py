"""`ctxviz sweep`: every combination of a policy's settings replayed on every session, and the one to ship."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from ..engine.policies import get_policy
from ..engine.wording import counted, noun
from ..errors import CtxvizError
from ..io.exporters import json_text
from ..io.loaders import load_session
from ..io.output import check_output_path, write_output
from .exits import EXIT_OK, EXIT_OVER_BUDGET
from .options import _formats, _output
from .params import _parse_sets, check_model
from .session import sweep_files
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("sweep", help="replay every combination of a policy's settings on every session and find the one to ship")
    p.add_argument("sessions", nargs="+", metavar="SESSION", help=f"session files ({_formats()}), or folders of them")
    p.add_argument("--policy", default="missy", help="the policy to sweep (a name or file.py:NAME)")
    p.add_argument("--grid", action="append", default=[], metavar="NAME=START:STOP:STEP|V1,V2", help="a parameter's values (repeatable)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="a fixed parameter (repeatable)")
    p.add_argument("--tokenizer", help="override the policy's estimator")
    p.add_argument("--require", action="append", default=[], metavar="METRIC>=N",
                   help="a floor the chosen setting must meet, e.g. retention>=0.9 (or 90%%), overflows=0, cost<=2 (repeatable)")
    p.add_argument("--cost-model", default="", metavar="MODEL", help="price input with this catalogue model (default: each session's)")
    _output(p, "-o", "--output", default="", help="write every combination's figures to FILE.csv or FILE.json")
    _output(p, "--png", default="", metavar="FILE.png", help="draw cost against retention with the Pareto front marked")
    _output(p, "--results", default="", metavar="FILE.jsonl", help="keep each finished replay here and resume from it (default: none)")
    p.add_argument("--jobs", type=int, default=0, help="parallel processes (default: one per core; 1: no subprocesses)")
    p.add_argument("--scheduler", default="", metavar="ADDRESS", help="run on this Dask distributed scheduler (pip install 'ctxviz[cluster]')")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    from ..engine import sweep

    if args.scheduler:
        sweep.check_scheduler_address(args.scheduler)
    policy = get_policy(args.policy)
    fixed = policy.make_params(_parse_sets(args.sets))  # bad values are one line before any work
    grid = sweep.parse_grid(args.policy, args.grid)
    requirements = [sweep.parse_requirement(r) for r in args.require]
    for combination in sweep.combinations(grid):
        policy.make_params(combination, base=fixed)  # every combination valid before the first replay
    for option, path in (("-o", args.output), ("--png", args.png), ("--results", args.results)):
        if path:  # every output refused before the first replay, not after the last
            check_output_path(path, inputs=args.sessions)
            if option == "--results" and check_output_path(path) == "-":
                raise CtxvizError(f"--results {path}: the results file is read back to resume, so it must be a file")
    if args.output and not args.output.endswith((".csv", ".json")) and check_output_path(args.output) != "-":
        raise CtxvizError(f"{args.output}: the sweep's figures are written as .csv or .json")
    files = sweep_files(args.sessions)
    for path in files:
        load_session(path)  # a bad file is one line now, not a failed worker later
    base = {k: v for k, v in dataclasses.asdict(fixed).items() if k in _parse_sets(args.sets)}
    # Dask workers run in their own folders: a relative path would name another file there, or none.
    where = (lambda path: os.path.abspath(path)) if args.scheduler else (lambda path: path)
    tasks = [sweep.Task(where(path), args.policy, {**base, **combination}, check_model(args.cost_model) if args.cost_model else "", args.tokenizer,
                        load=load_session) for combination in sweep.combinations(grid) for path in files]
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty() or done == total:
            print(f"\rsweep: {done:,}/{total:,} replays ({time.monotonic() - started:,.0f} s)", end="\n" if done == total else "", file=sys.stderr)

    from ..io.output import open_append

    results = sweep.run(tasks, args.jobs, args.results, args.scheduler, progress, lambda path: open_append(path, args.sessions))
    rows = sweep.summarise(results, requirements)
    best = sweep.cheapest(rows)
    if args.output:
        write_output(args.output, sweep_table(rows, args.output.endswith(".json")), inputs=args.sessions)
    if args.png:
        from ..gui.app import application
        from ..gui.sweep_chart import write_chart

        application("light")
        write_chart(rows, best, args.png, f"{policy.name} over {len(files):,} {noun(len(files), 'session')}", inputs=args.sessions)
    if args.json:
        write_stdout(json_text({"policy": policy.name, "sessions": files, "grid": grid, "requirements": [r.text for r in requirements],
                                "rows": [r.to_json() for r in rows], "cheapest": best.to_json() if best else None}) + "\n")
        return EXIT_OK if best is not None or not requirements else EXIT_OVER_BUDGET
    print(f"{policy.name}: {counted(len(rows), 'combination')} x {counted(len(files), 'session')}")
    names = list(grid)
    metric_names = [m for m in sweep.METRICS if any(m in r.metrics for r in rows)]
    table = [[str(r.params.get(n)) for n in names] + [_metric_text(m, r.metrics[m]) if m in r.metrics else "-" for m in metric_names]
             for r in rows]
    headers = [*names, *metric_names]
    # Each column as wide as its header or widest cell (a fixed 19 made a 171-column table of 8 metrics).
    widths = [max(len(h), *(len(row[k]) for row in table)) for k, h in enumerate(headers)]
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)) + "  pareto")
    for r, row in zip(rows, table, strict=True):
        cells = "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
        print(cells + ("  *" if r.pareto else "") + ("" if r.meets else "  fails " + ", ".join(r.failed)))
    if requirements:
        if best is None:
            print("no combination meets " + " and ".join(r.text for r in requirements))
            return EXIT_OVER_BUDGET
        print("cheapest that meets " + " and ".join(r.text for r in requirements) + ": " +
              " ".join(f"{k}={v}" for k, v in best.params.items() if k in grid) + f" (cost ${best.metrics['cost']:,.4f})")
    return EXIT_OK


def _metric_text(name: str, value: float) -> str:
    from ..engine import sweep

    if name == "cost":
        return f"${value:,.4f}"
    if name in sweep.SHARE_METRICS:
        return f"{value:.1%}"
    return f"{value:,.2f}" if isinstance(value, float) and not value.is_integer() else f"{int(value):,}"


def sweep_table(rows: Sequence[Any], as_json: bool) -> str:
    if as_json:
        return json_text([r.to_json() for r in rows]) + "\n"
    import csv
    import io

    docs = [r.to_json() for r in rows]
    params = list(dict.fromkeys(k for d in docs for k in d["params"]))
    metrics = list(dict.fromkeys(k for d in docs for k in d if k not in ("params", "failed")))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*params, *metrics, "failed"])
    for d in docs:
        writer.writerow([*(d["params"].get(p, "") for p in params), *(d.get(m, "") for m in metrics), "; ".join(d.get("failed", []))])
    return out.getvalue()

