"""`ctxviz check`: sessions held to rules (token limits, what must survive, compactions, retention, cost) for CI."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from ..engine.checks import PlanOptions
from ..engine.policies import get_policy
from ..engine.tokenizers import get_tokenizer
from ..engine.wording import noun
from ..errors import CtxvizError, LoadError, ParameterError
from ..io.config import field_line
from ..io.loaders import load_session
from ..io.output import check_output_path, write_output
from ..terminal import one_line
from .exits import EXIT_OK, EXIT_OVER_BUDGET, EXIT_USAGE
from .options import _formats, _output
from .params import _parse_sets, bad_parameter, blamed_on, check_model
from .session import STORE, sweep_files


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("check", help="hold sessions to rules (token limits, what must survive, compactions, retention, cost) for CI")
    p.add_argument("sessions", nargs="+", metavar="SESSION", help=f"session files ({_formats()}), or folders of them")
    p.add_argument("--rules", required=True, metavar="RULES.yaml", help="the rules (and the policy and settings they hold under)")
    p.add_argument("--policy", default=None, help="the policy (default: the rules file's, else missy)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="a parameter over the rules file's (repeatable)")
    _output(p, "--junit", default="", metavar="FILE.xml", help="also write JUnit XML for the CI system")
    p.add_argument("--pair-safe", action="store_true", help="check the pair-safe context")
    p.add_argument("--pin", action="append", default=[], metavar="RULE", help="pin a message, as in plan (repeatable)")


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every rule holds for every session, 1 with one line per broken rule."""
    from ..engine.gates import check
    from ..io.rules import load_rules

    rules = load_rules(args.rules)
    policy_name = args.policy or rules.policy or "missy"
    with blamed_on(rules.path, () if args.policy or not rules.policy else ("policy",), "rules file"):
        policy = get_policy(policy_name)
    try:
        params = policy.make_params(rules.params)
    except ParameterError as exc:
        bad = bad_parameter(rules.params, exc)
        raise LoadError(rules.path, str(exc), field_line(rules.path, ("params", bad) if bad else ("params",), "rules file"),
                        f"params.{bad}" if bad else "params") from None
    params = policy.make_params(_parse_sets(args.sets), base=params)
    _check_parts(rules, policy_name, params)
    if rules.tokenizer:
        with blamed_on(rules.path, ("tokenizer",), "rules file"):
            get_tokenizer(rules.tokenizer)
    if rules.cost_model:
        with blamed_on(rules.path, ("cost_model",), "rules file"):
            check_model(rules.cost_model)
    if args.junit:
        check_output_path(args.junit, inputs=[*args.sessions, args.rules])
    options = PlanOptions(pair_safe=args.pair_safe, pins=tuple(args.pin))
    from ..engine.gates import Outcome

    results: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for path in sweep_files(args.sessions):
        # One bad file or one session a rule cannot apply to does not stop the others: it is an
        # errored case (named, in the JUnit file too), and the rest are checked.
        started = time.perf_counter()
        try:
            session = load_session(path)
        except LoadError as exc:
            where = (f"line {exc.line}: " if exc.line else "") + (f"{exc.field}: " if exc.field else "")
            results[path] = [Outcome("readable", False, where + exc.message if exc.path == path else str(exc), errored=True)]
            continue
        if not session.messages:
            print(f"{path}: the session has no messages (checked as an empty history)", file=sys.stderr)
        try:
            results[path] = check(session, rules, policy_name, params, rules.tokenizer or None, STORE, options)
        except CtxvizError as exc:
            results[path] = [Outcome("rules", False, one_line(str(exc)), errored=True)]
        seconds[path] = time.perf_counter() - started
    errored = [(path, o) for path, outcomes in results.items() for o in outcomes if getattr(o, "errored", False)]
    broken = [(path, o) for path, outcomes in results.items() for o in outcomes if not o.passed and not getattr(o, "errored", False)]
    if args.junit:
        from ..io.junit import junit_xml

        write_output(args.junit, junit_xml(results, seconds=seconds), inputs=[*args.sessions, args.rules])
    for path, outcome in errored:
        print(f"{path}: {outcome.rule}: could not be checked: {outcome.message}")
    for path, outcome in broken:
        print(f"{path}: {outcome.rule}: {outcome.message}")
    total = sum(len(o) for o in results.values())
    held = total - len(broken) - len(errored)
    print(f"ctxviz check: {held} of {total:,} {noun(total, 'rule')} {'holds' if held == 1 else 'hold'} over {len(results):,} {noun(len(results), 'session')} under {policy.name}"
          + (f"; {len(broken)} broken" if broken else "") + (f"; {len(errored)} could not be checked" if errored else ""), file=sys.stderr)
    # 2: something could not be checked (CI must not read that as a pass); 1: a rule was broken.
    return EXIT_USAGE if errored else EXIT_OVER_BUDGET if broken else EXIT_OK


def _check_parts(rules: Any, policy_name: str, params: Any) -> None:
    """A `max_part_tokens` part the policy does not have is a typo in the rules file, not a broken rule."""
    from ..engine.gates import policy_parts

    parts = policy_parts(policy_name, params, rules.tokenizer or None) if rules.max_part_tokens else None
    unknown = [part for part in rules.max_part_tokens if parts is not None and part not in parts]
    if unknown:
        raise LoadError(rules.path, f"{get_policy(policy_name).name} has no part {unknown[0]!r} (its parts: {', '.join(parts or ())})",
                        rules.max_part_lines.get(unknown[0]), f"rules.max_part_tokens.{unknown[0]}")
