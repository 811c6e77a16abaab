"""`ctxviz where`: where a term went, the turns it was in the context, when it left and what removed it."""

from __future__ import annotations

import argparse
from typing import Any

from ..engine.checks import PlanOptions
from ..errors import ParameterError
from ..io.exporters import json_text
from .exits import EXIT_OK
from .options import _add_plan_options, _add_step_option
from .session import STORE, load_with_policy
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("where", help="where a term went: the turns in which it was in the context, when it left, and what removed it")
    _add_plan_options(p)
    p.add_argument("term", help="text to follow (case-insensitive): a file path, an id, an error, a word of an instruction")
    _add_step_option(p)
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    """Follow a term through the replay: when it was in the context, when it left and why."""
    from ..engine.simulate import simulate
    from ..engine.where import where
    from ..io.text_summary import where_summary

    if not args.term.strip():
        raise ParameterError("where: the term is empty")
    session, policy_name, params, tokenizer, _opened = load_with_policy(args)
    options = PlanOptions(pair_safe=args.pair_safe, pins=tuple(getattr(args, "pin", ()) or ()))
    timeline = simulate(session, policy_name, params, tokenizer, STORE, options=options, per_message=args.per_message)
    found = where(timeline, args.term)
    if args.json:
        write_stdout(json_text({"policy": policy_name, "params": timeline.resolved_params(), **found.to_json()}) + "\n")
    else:
        write_stdout(where_summary(found, session.source, policy_name))
    return EXIT_OK

