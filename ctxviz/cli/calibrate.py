"""`ctxviz calibrate`: Claude Code's auto-compact trigger, fitted from the preTokens its logs record."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..engine.wording import counted
from ..errors import LoadError
from ..io.exporters import json_text
from ..io.loaders import get_loader, loader_names
from .exits import EXIT_OK
from .session import load_args
from .stdout import write_stdout

if TYPE_CHECKING:
    from ..engine.session import Session


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("calibrate", help="fit Claude Code's auto-compact trigger from the preTokens its logs record")
    p.add_argument("logs", nargs="+", metavar="LOG", help="Claude Code session files (- for standard input)")
    p.add_argument("--input-format", help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--json", action="store_true", help="print the fit as JSON")


def not_claude_code(session: Session) -> str:
    """Why a log is refused: its compactions are its own agent's mechanism (a Codex compaction
    fires at Codex's own limit), and counting them as Claude Code's checks fitted a trigger, or
    counted a /compact, that no Claude Code session had."""
    title = get_loader(session.format).title if session.format in loader_names() else session.format
    n = len(session.compactions)
    own = (f"its {counted(n, 'compaction')} {'is' if n == 1 else 'are'} that agent's own mechanism, not Claude Code's"
           if session.compactions else "it records no Claude Code compaction")
    return (f"a {title} log: calibrate fits Claude Code's auto-compact trigger from Claude Code's logs, and {own} "
            "(`ctxviz verify` replays this log beside the calls it records)")


def run(args: argparse.Namespace) -> int:
    from ..engine.calibrate import fit, report_json, report_text

    sessions = [load_args(argparse.Namespace(**{**vars(args), "session": path})) for path in args.logs]
    for path, session in zip(args.logs, sessions, strict=True):
        if session.format != "claude-code":  # another agent's compactions are not Claude Code's /compact or auto-compact
            raise LoadError(path, not_claude_code(session))
    fits, seen = fit(sessions)
    write_stdout(json_text(report_json(fits, seen, len(sessions))) + "\n" if args.json else report_text(fits, seen, len(sessions)))
    return EXIT_OK

