"""The headless face of ctxviz: plan, export and count from the command line.

Every user error prints one line (`FILE:LINE: what is wrong` for files) and exits 2; the numbers are
the engine's, so they match the app's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .engine.checks import PlanOptions
from .engine.plan import Plan
from .engine.planner import plan_session
from .engine.policies import get_policy, policy_names
from .engine.policies.base import param_fields
from .engine.session import Session
from .engine.tokenizers import count_openai_chat, get_tokenizer, tokenizer_names
from .errors import CtxvizError, LoadError, ParameterError
from .io.config import load_preset, preset_line
from .io.exporters import EXPORTERS, export_text, write_atomic
from .io.loaders import load_session, loader_names
from .io.text_summary import plan_summary

EXIT_OK, EXIT_OVER_BUDGET, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other user error
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", help="session file (ctxviz YAML/JSON, OpenAI, Anthropic, Claude Code or supyagent)")
    p.add_argument("--policy", default=None, help=f"context policy (default missy; available: {', '.join(policy_names())})")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="set a policy parameter (repeatable)")
    p.add_argument("--config", help="YAML preset with the policy's parameters")
    p.add_argument("--tokenizer", help=f"override the policy's estimator ({', '.join(tokenizer_names())}, or a model name)")
    p.add_argument("--input-format", choices=None, help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--pair-safe", action="store_true", help="keep or drop tool calls and their results together")
    p.add_argument("--real-count", action="store_true", help="also count the context with the model's real encoding and check its window")
    p.add_argument("--model", default="", help="model for --real-count and the cost estimate (default: the session's)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ctxviz", description="See and tune how agent context managers trim a conversation.")
    parser.add_argument("--version", action="version", version=f"ctxviz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("plan", help="plan a session's context and explain every decision")
    _add_plan_options(p)
    p.add_argument("--json", action="store_true", help="print the plan as a stable JSON document")
    p.add_argument("--fail-over-budget", action="store_true", help="exit 1 when the context does not fit (for CI gates)")

    p = sub.add_parser("export", help="write the trimmed context as the model receives it")
    _add_plan_options(p)
    p.add_argument("--to", required=True, choices=list(EXPORTERS), help="output format")
    p.add_argument("-o", "--output", default="-", help="output file (written atomically), or - for stdout")

    p = sub.add_parser("count", help="count the tokens of a text (a quick tokenizer check)")
    p.add_argument("file", nargs="?", default="-", help="text file, or - for stdin")
    p.add_argument("--tokenizer", default="o200k_base", help=f"{', '.join(tokenizer_names())}, or a model name")
    p.add_argument("--messages", action="store_true", help="the input is a JSON list of chat messages: add OpenAI's chat-format overhead")
    p.add_argument("--model", default="gpt-4o", help="model whose chat overhead --messages uses")

    sub.add_parser("policies", help="list the policies and their parameters")
    return parser


def _parse_sets(sets: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParameterError(f"--set {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def resolve_plan(args: argparse.Namespace) -> tuple[Session, Plan]:
    """Load the session and plan it from the command-line options (config first, then --set)."""
    policy_name = args.policy
    tokenizer = args.tokenizer
    params: Any = None
    if args.config:
        preset = load_preset(args.config)
        policy_name = policy_name or preset.policy or "missy"
        if preset.policy and preset.policy != policy_name:
            raise LoadError(preset.path, f"the preset is for policy {preset.policy!r}, not {policy_name!r}", field="policy")
        tokenizer = tokenizer or preset.tokenizer or None
        try:
            params = get_policy(policy_name).make_params(preset.params)
        except ParameterError as exc:
            bad = next((k for k in preset.params if str(exc).startswith((k, f"unknown parameter {k!r}"))), "")
            raise LoadError(preset.path, str(exc), preset_line(preset, bad) if bad else None) from None
    policy_name = policy_name or "missy"
    policy = get_policy(policy_name)
    sets = _parse_sets(args.sets)
    if sets:
        params = policy.make_params(sets, base=params)
    if tokenizer:
        get_tokenizer(tokenizer)  # fail on a bad name before loading a big file
    session = load_session(args.session, args.input_format)
    options = PlanOptions(pair_safe=args.pair_safe, real_count=args.real_count or bool(args.model), model=args.model)
    return session, plan_session(session, policy_name, params, tokenizer, options=options)


def cmd_plan(args: argparse.Namespace) -> int:
    session, plan = resolve_plan(args)
    if args.json:
        sys.stdout.write(json.dumps(plan.to_json(), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(plan_summary(plan, session))
    if args.fail_over_budget and not plan.totals.fits:
        return EXIT_OVER_BUDGET
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    session, plan = resolve_plan(args)
    text = export_text(plan, session, args.to)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_atomic(args.output, text)
        print(f"wrote {args.output} ({len(plan.context)} messages, {args.to})", file=sys.stderr)
    return EXIT_OK


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise LoadError(path, exc.strerror or str(exc)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError(path, f"not UTF-8 text (bad byte at {exc.start})", data.count(b"\n", 0, exc.start) + 1) from None


def cmd_count(args: argparse.Namespace) -> int:
    text = _read_text(args.file)
    tokenizer = get_tokenizer(args.tokenizer)
    if args.messages:
        name = "<stdin>" if args.file == "-" else args.file
        try:
            messages = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LoadError(name, f"invalid JSON: {exc.msg}", exc.lineno) from None
        if isinstance(messages, dict) and isinstance(messages.get("messages"), list):
            messages = messages["messages"]
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise LoadError(name, "expected a JSON list of messages (or an object with `messages`)")
        print(count_openai_chat(messages, args.model, tokenizer))
    else:
        print(tokenizer.count(text))
    return EXIT_OK


def cmd_policies(args: argparse.Namespace) -> int:
    for name in policy_names():
        policy = get_policy(name)
        print(f"{name}: {policy.title} (counts with {policy.default_tokenizer})")
        if policy.description:
            print(f"  {policy.description}")
        defaults = policy.default_params()
        for f in param_fields(policy.params_type):
            help_text = f.metadata.get("help", "")
            print(f"  {f.name} = {getattr(defaults, f.name)!r}  {help_text}")
    return EXIT_OK


COMMANDS = {"plan": cmd_plan, "export": cmd_export, "count": cmd_count, "policies": cmd_policies}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except CtxvizError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("CTXVIZ_DEBUG"):
            raise
        where = getattr(args, "session", None) or getattr(args, "file", "")
        print(f"{where}: internal error {type(exc).__name__}: {exc} (set CTXVIZ_DEBUG=1 for a traceback)", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
