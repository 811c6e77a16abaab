"""`ctxviz verify`: a log replayed under its own agent's policy, each real call compared with the provider's figures."""

from __future__ import annotations

import argparse
from typing import Any

from ..engine.policies import get_policy
from ..io.exporters import json_text
from ..io.loaders import loader_names
from .exits import EXIT_OK
from .options import _formats
from .session import load_args
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("verify", help="replay a log under its own agent's policy and compare each real call with the provider's figures")
    p.add_argument("session", metavar="LOG", help=f"a log with the provider's usage, in a format ctxviz reads ({_formats()}); - for standard input")
    p.add_argument("--policy", default=None, help="replay under this policy instead of the log's own agent's")
    p.add_argument("--input-format", help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--conversation", type=int, metavar="N", help="the conversation to read from a file that holds several (1-based)")
    p.add_argument("--json", action="store_true", help="print every call and the summary as JSON")


def run(args: argparse.Namespace) -> int:
    """`ctxviz verify LOG`: how far the replay's requests, cache figures and cost are from the bill."""
    from ..engine.verify import report_text, verify

    if args.policy:
        get_policy(args.policy)  # a bad name fails before the file is read
    result = verify(load_args(args), args.policy or None)
    write_stdout(json_text(result.to_json()) + "\n" if args.json else report_text(result))
    return EXIT_OK

