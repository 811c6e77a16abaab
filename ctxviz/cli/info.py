"""`ctxviz info`: what ctxviz read from a file (format, messages, tool pairs, summaries, reported usage, notes)."""

from __future__ import annotations

import argparse
from typing import Any

from ..io.exporters import json_text
from ..io.loaders import loader_names
from .exits import EXIT_OK
from .options import _formats
from .session import load_args
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("info", help="what ctxviz read from a file: format, messages, tool pairs, summaries, reported usage, notes")
    p.add_argument("session", help=f"session file ({_formats()}), or - for standard input")
    p.add_argument("--input-format", help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--conversation", type=int, metavar="N", help="the conversation to read from a file that holds several (1-based)")
    p.add_argument("--json", action="store_true", help="print the facts as JSON")


def run(args: argparse.Namespace) -> int:
    from ..io.info import info_text, session_facts

    session = load_args(args)
    write_stdout(json_text(session_facts(session)) + "\n" if args.json else info_text(session))
    return EXIT_OK

