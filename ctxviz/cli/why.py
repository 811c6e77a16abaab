"""`ctxviz why`: one message's decision, and the smallest change that would keep it."""

from __future__ import annotations

import argparse
from typing import Any

from ..engine.checks import PlanOptions
from ..engine.policies import get_policy
from ..engine.wording import spelled
from ..errors import ParameterError
from ..io.exporters import json_text
from .exits import EXIT_OK
from .options import _add_plan_options
from .session import STORE, load_with_policy
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("why", help="explain one message's decision and the smallest change that would keep it")
    _add_plan_options(p)
    p.add_argument("--message", required=True, help="message id, or its index")
    p.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    from ..engine.explain import describe, why

    session, policy_name, params, tokenizer, _opened = load_with_policy(args)
    index = next((m.index for m in session.messages if m.id == args.message), None)
    if index is None and args.message.isdigit() and int(args.message) < len(session.messages):
        index = int(args.message)
    if index is None:
        raise ParameterError(f"{session.source}: no message with id or index {args.message!r}")
    policy = get_policy(policy_name)
    counts = STORE.get(session, policy.scheme(tokenizer, session.model))
    explanation = why(session, policy_name, params, counts, index, options=PlanOptions(pair_safe=args.pair_safe, pins=tuple(args.pin)))
    if args.json:
        write_stdout(json_text(explanation.to_json()) + "\n")
    else:
        print(spelled(describe(explanation)))  # (its reason starts with the decision's code: a sentence spells it)
    return EXIT_OK

