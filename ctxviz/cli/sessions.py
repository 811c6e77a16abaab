"""`ctxviz sessions`: the agent sessions on this machine, newest first, grouped by project."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import CtxvizError
from .exits import EXIT_OK
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("sessions", help="list the Claude Code, Codex and Gemini CLI sessions on this machine, newest first")
    p.add_argument("query", nargs="?", default="", help="only sessions whose path, project, model or agent contains this")
    p.add_argument("--root", action="append", default=[], metavar="DIR", help="also look in DIR for session logs (repeatable)")
    p.add_argument("--agent", help="only this agent's sessions (claude-code, codex, gemini-cli)")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from ..io.discovery import discover, listing_text
    from ..io.exporters import json_text

    for root in args.root:  # a mistyped folder is an error, not "no sessions found" with exit 0
        if not os.path.isdir(root):
            raise CtxvizError(f"sessions: --root {root}: {'not a folder' if os.path.exists(root) else 'no such folder'}")
    listing = discover(args.root)
    if args.agent:
        listing = replace(listing, sessions=tuple(s for s in listing.sessions if s.agent == args.agent))
    if args.json:
        data = listing.to_json()
        if args.query:
            q = args.query.lower()
            data["sessions"] = [s for s in data["sessions"] if any(q in str(s.get(k, "")).lower() for k in ("path", "project", "model", "agent", "title"))]
        write_stdout(json_text(data) + "\n")
    else:
        write_stdout(listing_text(listing, args.query))
    return EXIT_OK
