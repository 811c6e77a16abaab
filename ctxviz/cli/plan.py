"""`ctxviz plan`: a session's context under a policy, every decision explained."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..io.text_summary import plan_summary
from .exits import EXIT_OK, EXIT_OVER_BUDGET
from .options import _add_plan_options
from .retention import LOST_IN_JSON, plan_retention_of, retention_skipped, retention_text
from .session import opened_line, preset_applied, preset_line_text, resolve_plan_opened
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("plan", help="plan a session's context and explain every decision")
    _add_plan_options(p, real_count=True, retention=True)
    p.add_argument("--json", action="store_true", help="print the plan as a stable JSON document")
    p.add_argument("--fail-over-budget", action="store_true", help="exit 1 when the context does not fit (for CI gates)")


def run(args: argparse.Namespace) -> int:
    session, plan, opened = resolve_plan_opened(args)
    skipped = retention_skipped(args, session)
    retention = None if skipped else plan_retention_of(plan, session)
    if args.json:
        from ..engine.sources import add_plan_sources
        from ..io.exporters import json_text

        doc = {**add_plan_sources(plan.to_json(), plan, session), "retention": retention.to_json(LOST_IN_JSON) if retention is not None else None}
        preset = preset_applied(args)
        if preset is not None:
            doc["preset"] = preset
        if skipped:
            doc["retention_note"] = skipped
        write_stdout(json_text(doc) + "\n")
    else:
        sys.stdout.write(plan_summary(plan, session, policy_note=(preset_line_text(args) + opened_line(opened)).rstrip("\n")))
        sys.stdout.write(retention_text(retention) if retention is not None else skipped + "\n")
    if args.fail_over_budget and not plan.totals.fits:
        return EXIT_OVER_BUDGET
    return EXIT_OK

