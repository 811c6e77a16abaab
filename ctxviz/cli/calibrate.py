"""`ctxviz calibrate`: Claude Code's auto-compact trigger, fitted from the preTokens its logs record."""

from __future__ import annotations

import argparse
from typing import Any

from ..io.exporters import json_text
from ..io.loaders import loader_names
from .exits import EXIT_OK
from .session import load_args
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("calibrate", help="fit Claude Code's auto-compact trigger from the preTokens its logs record")
    p.add_argument("logs", nargs="+", metavar="LOG", help="Claude Code session files (- for standard input)")
    p.add_argument("--input-format", help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--json", action="store_true", help="print the fit as JSON")


def run(args: argparse.Namespace) -> int:
    from ..engine.calibrate import fit, report_json, report_text

    sessions = [load_args(argparse.Namespace(**{**vars(args), "session": path})) for path in args.logs]
    fits, seen = fit(sessions)
    write_stdout(json_text(report_json(fits, seen, len(sessions))) + "\n" if args.json else report_text(fits, seen, len(sessions)))
    return EXIT_OK

