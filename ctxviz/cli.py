"""The headless face of ctxviz: plan, export and count from the command line.

Every user error prints one line (`FILE:LINE: what is wrong` for files) and exits 2; the numbers are
the engine's, so they match the app's.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import errno
import functools
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import CtxvizError, LoadError, ParameterError, UnknownNameError
from .terminal import TerminalText, one_line

if TYPE_CHECKING:
    from .engine.counting import CountStore
    from .engine.plan import Plan
    from .engine.retention import Retention, TimelineRetention
    from .engine.session import Session
    from .engine.simulate import Timeline
    from .engine.summarizers import EndpointSummarizer

# The engine and the loaders are imported when a command needs them (`_load`), not with this module:
# `ctxviz --version` starts as fast as Python, and each command imports only what it uses (the
# simulator, the summarizers' HTTP client, YAML presets and the model catalogue where they are used).
STORE: CountStore


def _load() -> None:
    """Import what building the parser and running most commands needs, into this module's globals."""
    global STORE, PlanOptions, CountStore, plan_session, get_policy, policy_names, plugin_problems, param_fields
    global count_openai_chat, encoding_name_for_model, get_tokenizer, known_model_names, tokenizer_names
    global EXPORTERS, export, json_text, write_output, load_session, loader_names, check_output_path, STDIN, read_source, plan_summary
    if "STORE" in globals():
        return
    from .engine.checks import PlanOptions
    from .engine.counting import CountStore
    from .engine.planner import plan_session
    from .engine.policies import get_policy, plugin_problems, policy_names
    from .engine.policies.base import param_fields
    from .engine.tokenizers import (
        count_openai_chat,
        encoding_name_for_model,
        get_tokenizer,
        known_model_names,
        tokenizer_names,
    )
    from .io.exporters import EXPORTERS, export, json_text
    from .io.loaders import load_session, loader_names
    from .io.output import check_output_path, write_output
    from .io.source import STDIN, read_source
    from .io.text_summary import plan_summary
    STORE = CountStore()


EXIT_OK, EXIT_OVER_BUDGET, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other user error
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("session", help=f"session file in a format ctxviz reads ({_formats()}), or - for standard input")
    p.add_argument("--policy", action="append", default=None, help=f"context policy (default missy; available: {', '.join(policy_names(plugins=False))}, "
                   "installed plugins, or your own file.py:NAME); compare takes two")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="set a policy parameter (repeatable)")
    p.add_argument("--config", help="YAML preset with the policy's parameters")
    p.add_argument("--tokenizer", help=f"override the policy's estimator ({', '.join(tokenizer_names())}, or a model name)")
    p.add_argument("--input-format", choices=None, help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--conversation", type=int, metavar="N", help="the conversation to read from a file that holds several (1-based)")
    p.add_argument("--pair-safe", action="store_true", help="keep or drop tool calls and their results together")
    p.add_argument("--pin", action="append", default=[], metavar="RULE",
                   help="send this message whatever the policy decides: #INDEX, id:ID, role:ROLE, first-user, last-user, text:WORDS (repeatable)")
    p.add_argument("--real-count", action="store_true", help="also count the context with the model's real encoding and check its window")
    p.add_argument("--model", default="", help="model for --real-count and the cost estimate (default: the session's)")
    p.add_argument("--retention", choices=("auto", "on", "off"), default="auto",
                   help="which anchors still reach the model (plan, simulate, compare); auto: up to 20 MB of session text")


@functools.cache
def build_parser() -> argparse.ArgumentParser:
    """The parser, built once per process: building it costs more than most commands' own work
    (tests and tools that call `main` in-process call it thousands of times)."""
    return _build_parser()


def _add_cost_options(p: argparse.ArgumentParser, help_text: str = "price every turn's input with prompt caching "
                      "(cache reads, writes, the turns where the policy broke the cache)") -> None:
    p.add_argument("--cost", action="store_true", help=help_text)
    p.add_argument("--cost-model", metavar="MODEL", default="", help="price with this catalogue model (default: the session's)")


def _build_parser() -> argparse.ArgumentParser:
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
    _output(p, "-o", "--output", default="-", help="output file (a regular file or a new path, written atomically), or - for stdout")
    p.add_argument("--strict", action="store_true", help="refuse (exit 1) instead of fixing a request the API would reject")

    p = sub.add_parser("count", help="count the tokens of a text (a quick tokenizer check)")
    p.add_argument("file", nargs="?", default="-", help="text file, or - for stdin")
    p.add_argument("--tokenizer", default="o200k_base", help=f"{', '.join(tokenizer_names())}, or a model name")
    p.add_argument("--messages", action="store_true", help="the input is a JSON list of chat messages: add OpenAI's chat-format overhead")
    p.add_argument("--model", default="gpt-4o", help="model whose chat overhead --messages uses")
    p.add_argument("-v", "--verbose", action="store_true", help="also say on standard error what was counted and with which tokenizer")

    p = sub.add_parser("simulate", help="replay the session call by call, with each policy's triggers and summaries")
    _add_plan_options(p)
    _add_step_option(p)
    p.add_argument("--json", action="store_true", help="print the timeline as JSON")
    p.add_argument("--summarizer-url", default="", help="OpenAI-compatible endpoint for summaries (default: offline extractive)")
    p.add_argument("--summarizer-model", default="", help="model name for --summarizer-url")
    _add_cost_options(p)

    p = sub.add_parser("compare", help="list the messages whose decisions differ between two policies or two parameter sets")
    _add_plan_options(p)
    p.add_argument("--set-a", action="append", default=[], metavar="KEY=VALUE", help="parameter for side A only")
    p.add_argument("--set-b", action="append", default=[], metavar="KEY=VALUE", help="parameter for side B only")
    p.add_argument("--trigger-tokens", type=int, metavar="N", help="set both policies' trigger to fire at N tokens, each in its own units")
    p.add_argument("--keep-messages", type=int, metavar="K", help="set both policies' keep to the last K messages")
    p.add_argument("--keep-tokens", type=int, metavar="T", help="set both policies' keep to the last T tokens")
    _add_cost_options(p, "also replay both sides turn by turn and compare their input cost with prompt caching")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("why", help="explain one message's decision and the smallest change that would keep it")
    _add_plan_options(p)
    p.add_argument("--message", required=True, help="message id, or its index")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("where", help="where a term went: the turns in which it was in the context, when it left, and what removed it")
    _add_plan_options(p)
    p.add_argument("term", help="text to follow (case-insensitive): a file path, an id, an error, a word of an instruction")
    _add_step_option(p)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("gui", help="open the desktop app")
    p.add_argument("session", nargs="?", help=f"session file to open ({_formats()})")
    p.add_argument("--policy", default=None, help="policy to start with")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="start with this policy parameter (repeatable)")
    p.add_argument("--config", help="start with the parameters of this YAML preset")
    p.add_argument("--tokenizer", help="start with this tokenizer instead of the policy's own estimator")
    p.add_argument("--compare", metavar="POLICY", help="fill the Compare tab with this policy as B (and run it for --screenshot)")
    p.add_argument("--compare-set", action="append", default=[], metavar="KEY=VALUE", help="a parameter of B (repeatable)")
    _output(p, "--screenshot", metavar="FILE.png", help="render the main window offscreen to a PNG and exit")
    p.add_argument("--theme", choices=["auto", "light", "dark"], default="auto", help="colour scheme (default: follow the system)")
    p.add_argument("--tab", type=int, default=0, choices=range(4), help="tab to show in the screenshot (0 overview, 1 timeline, 2 compare, 3 context)")
    p.add_argument("--size", default="1440x900", metavar="WxH", help="window size for the screenshot (default 1440x900)")

    p = sub.add_parser("report", help="render the pie, strip, category bars and timeline to HTML, PNG, SVG or PDF")
    _add_plan_options(p)
    _output(p, "-o", "--output", required=True, help="report.html, .png, .svg or .pdf (a regular file or a new path, written atomically)")
    p.add_argument("--no-timeline", action="store_true", help="skip the turn-by-turn simulation")

    p = sub.add_parser("info", help="what ctxviz read from a file: format, messages, tool pairs, summaries, reported usage, notes")
    p.add_argument("session", help=f"session file ({_formats()}), or - for standard input")
    p.add_argument("--input-format", help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--conversation", type=int, metavar="N", help="the conversation to read from a file that holds several (1-based)")
    p.add_argument("--json", action="store_true", help="print the facts as JSON")

    p = sub.add_parser("sweep", help="replay every combination of a policy's settings on every session and find the one to ship")
    p.add_argument("sessions", nargs="+", metavar="SESSION", help=f"session files ({_formats()}), or folders of them")
    p.add_argument("--policy", default="missy", help="the policy to sweep (a name or file.py:NAME)")
    p.add_argument("--grid", action="append", default=[], metavar="NAME=START:STOP:STEP|V1,V2", help="a parameter's values (repeatable)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="a fixed parameter (repeatable)")
    p.add_argument("--tokenizer", help="override the policy's estimator")
    p.add_argument("--require", action="append", default=[], metavar="METRIC>=N",
                   help="a floor the chosen setting must meet, e.g. retention>=0.9, overflows=0, cost<=2 (repeatable)")
    p.add_argument("--cost-model", default="", metavar="MODEL", help="price input with this catalogue model (default: each session's)")
    _output(p, "-o", "--output", default="", help="write every combination's figures to FILE.csv or FILE.json")
    _output(p, "--png", default="", metavar="FILE.png", help="draw cost against retention with the Pareto front marked")
    _output(p, "--results", default="", metavar="FILE.jsonl", help="keep each finished replay here and resume from it (default: none)")
    p.add_argument("--jobs", type=int, default=0, help="parallel processes (default: one per core; 1: no subprocesses)")
    p.add_argument("--scheduler", default="", metavar="ADDRESS", help="run on this Dask distributed scheduler (pip install 'ctxviz[cluster]')")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")

    p = sub.add_parser("check", help="hold sessions to rules (token limits, what must survive, compactions, retention, cost) for CI")
    p.add_argument("sessions", nargs="+", metavar="SESSION", help=f"session files ({_formats()}), or folders of them")
    p.add_argument("--rules", required=True, metavar="RULES.yaml", help="the rules (and the policy and settings they hold under)")
    p.add_argument("--policy", default=None, help="the policy (default: the rules file's, else missy)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="a parameter over the rules file's (repeatable)")
    _output(p, "--junit", default="", metavar="FILE.xml", help="also write JUnit XML for the CI system")
    p.add_argument("--pair-safe", action="store_true", help="check the pair-safe context")
    p.add_argument("--pin", action="append", default=[], metavar="RULE", help="pin a message, as in plan (repeatable)")

    p = sub.add_parser("policies", help="list the policies (grouped by framework) and their parameters")
    p.add_argument("--policy", action="append", default=None, metavar="FILE.py:NAME", help="also list this policy of your own (repeatable)")
    p = sub.add_parser("verify", help="replay a log under its own agent's policy and compare each real call with the provider's figures")
    p.add_argument("session", metavar="LOG", help=f"a log with the provider's usage, in a format ctxviz reads ({_formats()}); - for standard input")
    p.add_argument("--policy", default=None, help="replay under this policy instead of the log's own agent's")
    p.add_argument("--input-format", help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--conversation", type=int, metavar="N", help="the conversation to read from a file that holds several (1-based)")
    p.add_argument("--json", action="store_true", help="print every call and the summary as JSON")
    p = sub.add_parser("calibrate", help="fit Claude Code's auto-compact trigger from the preTokens its logs record")
    p.add_argument("logs", nargs="+", metavar="LOG", help="Claude Code session files (- for standard input)")
    p.add_argument("--input-format", help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--json", action="store_true", help="print the fit as JSON")
    return parser


def _formats() -> str:
    """Every format a session argument takes, named as `--input-format` names it."""
    return ", ".join(loader_names())


def _output(p: argparse.ArgumentParser, *flags: str, **kwargs: Any) -> argparse.Action:
    """An option naming a file the command writes: marked, so a test finds every one of them from
    the parser and holds each to the one writer's rules (`ctxviz.io.output`)."""
    action = p.add_argument(*flags, **kwargs)
    action.writes_file = True  # type: ignore[attr-defined]
    return action


def _add_step_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--per-message", action="store_true",
                   help="step at every message (the old view) instead of at every model call (the log's calls, else the request before each reply)")


def _parse_sets(sets: Sequence[str]) -> dict[str, str]:
    """KEY=VALUE pairs. The value is kept as the shell passed it (`--set "placeholder=   "` is three
    spaces: numbers and booleans ignore surrounding spaces anyway); a value wrapped whole in matching
    quotes (`--set 'placeholder="  x "'`) is what is between them."""
    out: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParameterError(f"--set {item!r}: expected KEY=VALUE")
        out[key.strip()] = unquote(value)
    return out


def unquote(value: str) -> str:
    """The text between matching quotes that wrap the whole value (spaces outside them aside), else the value as given."""
    inner = value.strip()
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'":
        return inner[1:-1]
    return value


def resolve_params(args: argparse.Namespace, policy_name: str | None, extra_sets: Sequence[str] = ()) -> tuple[str, Any, str | None]:
    """(policy, parameters, tokenizer) from --config, then --set (and a compare side's own sets)."""
    tokenizer = args.tokenizer
    params: Any = None
    if args.config:
        from .io.config import load_preset, preset_line

        preset = load_preset(args.config)
        policy_name = policy_name or preset.policy or "missy"
        if preset.policy and preset.policy != policy_name:
            raise LoadError(preset.path, f"the preset is for policy {preset.policy!r}, not {policy_name!r}", field="policy")
        tokenizer = tokenizer or preset.tokenizer or None
        try:
            policy = get_policy(policy_name)
        except UnknownNameError as exc:
            raise LoadError(preset.path, str(exc), preset_line(preset, "policy") if preset.policy else None, field="policy") from None
        try:
            params = policy.make_params(preset.params)
        except ParameterError as exc:
            bad = next((k for k in preset.params if str(exc).startswith((k, f"unknown parameter {k!r}"))), "")
            raise LoadError(preset.path, str(exc), preset_line(preset, bad) if bad else None) from None
    policy_name = policy_name or "missy"
    policy = get_policy(policy_name)
    sets = {**_parse_sets(args.sets), **_parse_sets(extra_sets)}
    params = policy.make_params(sets, base=params) if sets else (params or policy.default_params())
    if tokenizer:
        get_tokenizer(tokenizer)  # fail on a bad name before loading a big file
    return policy_name, params, tokenizer


def check_model(model: str) -> str:
    """A model named on the command line must be one ctxviz knows (the catalogue, or a model
    tiktoken has an encoding for); a typo is an unknown model, not a model without a tokenizer."""
    from .engine.catalog import find_model, load_catalog

    if model and find_model(model) is None and encoding_name_for_model(model) is None:
        names = sorted({e.name for e in load_catalog()} | set(known_model_names()))
        close = difflib.get_close_matches(model, names, n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known models include {', '.join(e.name for e in load_catalog()[:6])}"
        raise UnknownNameError(f"unknown model {model!r}{hint} (add it to resources/models.yaml)")
    return model


def _options(args: argparse.Namespace) -> PlanOptions:
    return PlanOptions(pair_safe=args.pair_safe, real_count=args.real_count or bool(args.model), model=check_model(args.model),
                       pins=tuple(getattr(args, "pin", ()) or ()))


def _one_policy(args: argparse.Namespace) -> str | None:
    if args.policy and len(args.policy) > 1:
        raise ParameterError(f"{args.command} takes one --policy (got {len(args.policy)})")
    return args.policy[0] if args.policy else None


def load_args(args: argparse.Namespace) -> Session:
    """The session the command line names, read with its --input-format and --conversation."""
    return load_session(args.session, args.input_format, conversation=getattr(args, "conversation", None))


def resolve_plan(args: argparse.Namespace) -> tuple[Session, Plan]:
    """Load the session and plan it from the command-line options (config first, then --set)."""
    policy_name, params, tokenizer = resolve_params(args, _one_policy(args))
    session = load_args(args)
    return session, plan_session(session, policy_name, params, tokenizer, store=STORE, options=_options(args))


#: Anchors are extracted at about 1.5 MB of text a second: beyond this, `--retention on` asks for it.
RETENTION_AUTO_CHARS = 20_000_000


def retention_skipped(args: argparse.Namespace, session: Session) -> str:
    """Why retention is not computed ("" when it is)."""
    choice = getattr(args, "retention", "auto")
    if choice == "on":
        return ""
    if choice == "off":
        return "retention: not computed (--retention off)"
    chars = sum(len(m.text) for m in session.messages)
    if chars <= RETENTION_AUTO_CHARS:
        return ""
    return (f"retention: not computed for {chars / 1e6:,.0f} MB of session text (the automatic limit is "
            f"{RETENTION_AUTO_CHARS / 1e6:.0f} MB; --retention on computes it, about a second per 1.5 MB)")


def cmd_plan(args: argparse.Namespace) -> int:
    session, plan = resolve_plan(args)
    skipped = retention_skipped(args, session)
    retention = None if skipped else plan_retention_of(plan, session)
    if args.json:
        from .engine.sources import add_plan_sources

        doc = {**add_plan_sources(plan.to_json(), plan, session), "retention": retention.to_json(LOST_IN_JSON) if retention is not None else None}
        if skipped:
            doc["retention_note"] = skipped
        write_stdout(json_text(doc) + "\n")
    else:
        sys.stdout.write(plan_summary(plan, session))
        sys.stdout.write(retention_text(retention) if retention is not None else skipped + "\n")
    if args.fail_over_budget and not plan.totals.fits:
        return EXIT_OVER_BUDGET
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    check_output_path(args.output, inputs=[args.session])  # refuse before the work, not after
    session, plan = resolve_plan(args)
    result = export(plan, session, args.to)
    for fix in result.fixes:
        print(f"{'refused' if args.strict else 'fixed'}: {fix}", file=sys.stderr)
    if plan.orphans:
        print(f"warning: the exported context has {len(plan.orphans)} broken tool-call pair(s) (`ctxviz plan` lists them); "
              "--pair-safe keeps calls and results together", file=sys.stderr)
    empty = result.messages == 0 and args.to != "markdown"
    if empty:
        print(f"{'refused' if args.strict else 'warning'}: the exported context has no messages (`\"messages\": []`), "
              "which the provider refuses", file=sys.stderr)
    if args.strict and (result.fixes or empty):
        print(f"export --strict: the {args.to} request would be refused{' without the fixes above' if result.fixes else ''}; nothing written",
              file=sys.stderr)
        return EXIT_OVER_BUDGET
    where = write_output(args.output, result.text, inputs=[args.session])
    if where != "standard output":
        where = args.output
    print(f"wrote {where}: {result.messages:,} messages ({args.to}): {export_story(plan, session, result.messages, args.to)}", file=sys.stderr)
    return EXIT_OK


def export_story(plan: Plan, session: Session, exported: int, fmt: str) -> str:
    """Why the export's message count is not the plan's sent count: system messages folded into
    the one system prompt, summaries added, and, for Anthropic, the prompt moved to `system` and
    same-role turns merged."""
    sent = plan.totals.kept_messages
    in_context = {i for i in plan.context_index if i is not None}
    folded = sum(1 for m in plan.messages if m.sent and m.index not in in_context)
    inserted = [entry for entry, index in zip(plan.context, plan.context_index, strict=False) if index is None]
    prompt = sum(1 for entry in inserted if entry.get("role") == "system")
    added = len(inserted) - prompt
    bits = [f"the plan sends {sent:,} message{'s' if sent != 1 else ''}"]
    if folded:
        bits.append(f"{folded:,} system message{'s' if folded != 1 else ''} folded into the one system prompt")
    if added:
        bits.append(f"{added:,} summar{'ies' if added != 1 else 'y'} added")
    count = len(plan.context)
    if fmt == "anthropic":
        if prompt:
            bits.append("the system prompt sent as `system`, not as a message")
            count -= prompt
        if count > exported:
            bits.append(f"{count - exported:,} turn{'s' if count - exported != 1 else ''} merged into the one before "
                        "(the Messages API wants user and assistant turns to alternate)")
    if fmt != "markdown" and exported != count and fmt != "anthropic":
        bits.append(f"{abs(exported - count):,} message{'s' if abs(exported - count) != 1 else ''} "
                    f"{'removed' if exported < count else 'added'} by the fixes above")
    return "; ".join(bits)


def _read_text(path: str) -> str:
    """A text file or standard input, with the same checks as a session file (regular file, size)."""
    return read_source(path, what="text file").text


def cmd_count(args: argparse.Namespace) -> int:
    text = _read_text(args.file)
    tokenizer = get_tokenizer(args.tokenizer)
    if args.messages:
        name = "<stdin>" if args.file == STDIN else args.file
        try:
            messages = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LoadError(name, f"invalid JSON: {exc.msg}", exc.lineno) from None
        except (ValueError, RecursionError) as exc:
            raise LoadError(name, "the document is nested too deeply" if isinstance(exc, RecursionError) else f"invalid JSON: {exc}") from None
        if isinstance(messages, dict) and isinstance(messages.get("messages"), list):
            messages = messages["messages"]
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise LoadError(name, "expected a JSON list of messages (or an object with `messages`)")
        try:
            print(count_openai_chat(messages, args.model, tokenizer))
        except RecursionError:
            raise LoadError(name, "a message is nested too deeply to count") from None
    else:
        print(tokenizer.count(text))
    if args.verbose:  # standard output stays a bare number for pipes
        what = f"{len(messages):,} chat messages with {args.model}'s chat-format overhead" if args.messages else "the text"
        print(f"ctxviz count: {what}, counted with {tokenizer.name}", file=sys.stderr)
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    from .io.info import info_text, session_facts

    session = load_args(args)
    write_stdout(json_text(session_facts(session)) + "\n" if args.json else info_text(session))
    return EXIT_OK


def cmd_policies(args: argparse.Namespace) -> int:
    """Policies grouped by the framework users know them from, each with what it reproduces."""
    for spec in args.policy or ():
        get_policy(spec)  # registers a file plugin under its own name
    for problem in plugin_problems():
        print(f"ctxviz: {problem}", file=sys.stderr)
    groups: dict[str, list[str]] = {}
    for name in policy_names():
        groups.setdefault(get_policy(name).framework or "other", []).append(name)
    for framework, names in groups.items():
        print(f"== {framework}")
        for name in names:
            policy = get_policy(name)
            print(f"{name}: {policy.title}")
            if policy.framework_version or policy.source:
                print(f"  reproduces: {policy.source or policy.title}" + (f" ({policy.framework_version})" if policy.framework_version else ""))
            print(f"  counts with: {policy.counter or policy.default_tokenizer} [default estimator {policy.default_tokenizer}]")
            if policy.trigger or policy.keep:
                print(f"  trigger: {', '.join(policy.trigger) or '-'}; keep: {', '.join(policy.keep) or '-'}")
            if policy.stand_in:
                print(f"  stand-in: {policy.stand_in}")
            if policy.description:
                print(f"  {policy.description}")
            print(f"  runs: {policy.schedule}")
            defaults = policy.default_params()
            for f in param_fields(policy.params_type):
                help_text = f.metadata.get("help", "")
                print(f"  {f.name} = {getattr(defaults, f.name)!r}  {help_text}")
        print()
    return EXIT_OK


def cmd_simulate(args: argparse.Namespace) -> int:
    from .engine.simulate import simulate

    policy_name, params, tokenizer = resolve_params(args, _one_policy(args))
    session = load_args(args)
    summarizer = endpoint_summarizer(args, policy_name)
    from .engine.simulate import plan_versus_replay

    options = PlanOptions(pair_safe=args.pair_safe, pins=tuple(args.pin))  # the real count is not replayed
    timeline = simulate(session, policy_name, params, tokenizer, STORE, summarizer, options=options, per_message=args.per_message)
    plan = plan_session(session, policy_name, params, tokenizer, store=STORE, options=options)
    versus = plan_versus_replay(plan, timeline)
    reported = reported_per_turn(session)
    skipped = retention_skipped(args, session)
    retention = None if skipped else timeline_retention_of(timeline)
    cache = _cache_report(args, timeline) if args.cost else None
    if args.json:
        doc = {**timeline.to_json(), "versus_plan": {"plan_used": plan.totals.used, "plan_budget": plan.totals.budget,
                                                     "replay_used": timeline.turns[-1].tokens_sent if timeline.turns else 0,
                                                     "sentence": versus},
               "retention": retention.to_json(LOST_IN_JSON) if retention is not None else None,
               **({"retention_note": skipped} if skipped else {})}
        if cache is not None:
            doc["cache"] = cache.to_json()
        if reported:  # what the provider reported for the call that produced each turn's message
            for turn in doc["turns"]:
                turn["reported_input"] = reported.get(turn["turn"])
        write_stdout(json_text(doc) + "\n")
        return EXIT_OK
    print(f"{session.source}: {len(timeline.turns):,} turns with {policy_name}")
    if timeline.schedule is not None:
        print(f"steps: {timeline.schedule.describe()}; a turn is named by the last message of its request")
    if reported:
        print(f"the log reports the provider's input for {len(reported):,} calls (column 'reported': input + cache read + cache write "
              "of the request made after that turn)")
    print(f"{'step':>5} {'turn':>6} {'sent':>9} {'budget':>9} {'kept':>6} {'dropped':>8} {'summ.':>6} {'trunc.':>6}"
          + (f" {'reported':>9}" if reported else "") + "  events")
    step = max(1, len(timeline.turns) // 40)
    if step > 1:
        print(f"(of {len(timeline.turns):,} steps, every {step}th is shown, with every step that has an event and the last; "
              "--json lists them all)")
    for t in timeline.turns:
        if t.events or t.step % step == 0 or t.step == len(timeline.turns) - 1:
            events = "; ".join(f"{e.kind}: {e.message}" for e in t.events)
            over = "" if t.fits else " OVER"
            seen = (f" {reported[t.index]:>9,}" if t.index in reported else f" {'':>9}") if reported else ""
            print(f"{t.step:>5} {t.index:>6} {t.tokens_sent:>9,} {t.budget:>9,} {t.kept:>6} {t.dropped:>8} {t.summarized:>6} {t.truncated:>6}{seen}{over}  {events}")
    kinds: dict[str, int] = {}
    for e in timeline.events:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    print("events: " + (", ".join(f"{k} x{v}" for k, v in kinds.items()) or "none"))
    sys.stdout.write(timeline_retention_text(retention) if retention is not None else skipped + "\n")
    print(versus)
    if cache is not None:
        print_cache(cache)
    return EXIT_OK


def _cache_report(args: argparse.Namespace, timeline: Any) -> Any:
    from .engine.caching import cache_costs
    from .engine.catalog import find_model

    if args.cost_model and find_model(args.cost_model) is None:
        from .engine.catalog import load_catalog

        raise ParameterError(f"--cost-model: {args.cost_model!r} is not in the model catalogue ({', '.join(m.name for m in load_catalog())})")
    return cache_costs(timeline, args.cost_model or None)


def print_cache(cache: Any) -> None:
    """The prompt-caching block of `simulate --cost`: the sentence, then the turns that cost most."""
    print(f"prompt caching ({cache.model.name}): {cache.sentence()}")
    if not cache.turns:
        return
    reported = any(t.reported is not None for t in cache.turns)
    print(f"{'turn':>6} {'request':>9} {'shared':>9} {'read':>9} {'write':>9} {'uncached':>9} {'cost $':>9}" +
          (f" {'rep.read':>9} {'rep.write':>9}" if reported else "") + "  ")
    worst = sorted(cache.turns, key=lambda t: -t.cost)[:10]
    for t in sorted(worst, key=lambda t: t.turn):
        extra = (f" {t.reported.cache_read_input_tokens:>9,} {t.reported.cache_creation_input_tokens:>9,}" if t.reported is not None
                 else f" {'':>9} {'':>9}") if reported else ""
        flag = "  broke the cache" if t.broke_cache else "  cache expired" if t.expired else ""
        print(f"{t.turn:>6} {t.request:>9,} {t.shared:>9,} {t.cache_read:>9,} {t.cache_write:>9,} {t.uncached:>9,} {t.cost:>9.4f}{extra}{flag}")
    print("(the 10 most expensive requests; --json lists every turn; token figures are the policy's estimator's)")


def reported_per_turn(session: Session) -> dict[int, int]:
    """Turn -> what the provider reported was in the window for the request made after that turn
    (the call that produced message N saw the context of turn N-1)."""
    return {m.index - 1: m.usage.window_fill for m in session.messages if m.usage is not None and m.usage.window_fill and m.index > 0}


#: Policies whose replay asks a summariser; the others summarise by their own offline rules.
ENDPOINT_SUMMARY_POLICIES = ("supyagent",)


def endpoint_summarizer(args: argparse.Namespace, policy_name: str) -> EndpointSummarizer | None:
    if not args.summarizer_url:
        return None
    if policy_name not in ENDPOINT_SUMMARY_POLICIES:
        raise ParameterError(f"--summarizer-url: {policy_name} does not ask an LLM for its summaries in ctxviz's replay "
                             f"(only {', '.join(ENDPOINT_SUMMARY_POLICIES)} does); drop the option")
    from .engine.summarizers import EndpointSummarizer

    return EndpointSummarizer(args.summarizer_url, args.summarizer_model)


def cmd_compare(args: argparse.Namespace) -> int:
    from .engine.explain import compare

    names = args.policy or []
    if len(names) > 2:
        raise ParameterError(f"compare takes at most two --policy (got {len(names)})")
    if len(names) < 2 and not (args.set_a or args.set_b):
        raise ParameterError("compare needs two --policy, or one policy with --set-a / --set-b")
    name_a = names[0] if names else None
    name_b = names[1] if len(names) == 2 else name_a
    session = load_args(args)
    unaligned: list[str] = []
    aligning = (args.trigger_tokens, args.keep_messages, args.keep_tokens) != (None, None, None)
    resolved = [_compare_side(args, session, name, extra, unaligned) for name, extra in ((name_a, args.set_a), (name_b, args.set_b))]
    a, b = (plan_session(session, policy_name, params, tokenizer, store=STORE, options=_options(args))
            for policy_name, params, tokenizer in resolved)
    diffs = compare(a, b)
    skipped = retention_skipped(args, session)
    kept_a, kept_b = (None, None) if skipped else (plan_retention_of(a, session), plan_retention_of(b, session))
    caches = _compare_costs(args, session, resolved) if args.cost else None
    if args.json:
        doc = {"a": {"policy": a.policy, "params": dict(a.params), "totals": a.totals.to_json(), "verdict": a.fit_verdict(),
                     "retention": kept_a.to_json(LOST_IN_JSON) if kept_a is not None else None},
               "b": {"policy": b.policy, "params": dict(b.params), "totals": b.totals.to_json(), "verdict": b.fit_verdict(),
                     "retention": kept_b.to_json(LOST_IN_JSON) if kept_b is not None else None},
               "differences": [d.to_json() for d in diffs], **({"not_aligned": unaligned} if aligning else {})}
        if caches is not None:
            doc["a"]["cache"], doc["b"]["cache"] = (c.to_json() for c in caches)
        write_stdout(json_text(doc) + "\n")
        return EXIT_OK
    label_a = f"A: {a.policy} " + " ".join(f"{k}={v}" for k, v in _parse_sets(args.set_a).items())
    label_b = f"B: {b.policy} " + " ".join(f"{k}={v}" for k, v in _parse_sets(args.set_b).items())
    print(label_a.strip())
    print(label_b.strip())
    if aligning:
        print("aligned: " + ", ".join(f"{k}={f'{v:,}'}" for k, v in (("trigger at tokens", args.trigger_tokens), ("keep messages", args.keep_messages),
                                                                    ("keep tokens", args.keep_tokens)) if v is not None)
              + f" (A {_knobs(a)}; B {_knobs(b)})")
        for line in unaligned:
            print(f"  not aligned: {line}")
    print(f"{'':18}{'A':>14}{'B':>14}")
    for key in ("budget", "used", "kept", "dropped", "kept_messages", "dropped_messages", "fits"):
        va, vb = getattr(a.totals, key), getattr(b.totals, key)
        fmt = (lambda v: str(v)) if isinstance(va, bool) else (lambda v: f"{v:,}")
        print(f"{key:18}{fmt(va):>14}{fmt(vb):>14}")
    if kept_a is not None and kept_b is not None:
        print(compare_retention_text(kept_a, kept_b), end="")
    else:
        print(skipped)
    for side, p in (("A", a), ("B", b)):
        if p.fit_verdict() != "fits":
            print(f"{side}: {p.fit_verdict()}")
    if a.tokenizer != b.tokenizer:
        print(f"tokens counted with {a.tokenizer} for A and {b.tokenizer} for B, so their token figures are not on one scale")
    if caches is not None:
        for side, cache in zip("AB", caches, strict=True):
            print(f"{side} replayed, prompt caching ({cache.model.name}): {cache.sentence()}")
    print(f"{len(diffs):,} messages decided differently")
    for d in diffs:
        print(f"  #{d.index} {d.role}: A {d.a.decision.value} / B {d.b.decision.value}")
        print(f"      A: {d.a.reason}")
        print(f"      B: {d.b.reason}")
    return EXIT_OK


#: Lost anchors listed in a --json document (its `lost_count` is the full count).
LOST_IN_JSON = 500


def plan_retention_of(plan: Plan, session: Session) -> Retention:
    """Which anchors of the session the plan still sends (engine/retention.py)."""
    from .engine.retention import plan_retention

    return plan_retention(plan, session)


def timeline_retention_of(timeline: Timeline) -> TimelineRetention:
    from .engine.retention import timeline_retention

    return timeline_retention(timeline)


def retention_text(retention: Retention) -> str:
    from .io.text_summary import retention_summary

    return retention_summary(retention)


def timeline_retention_text(retention: TimelineRetention) -> str:
    from .io.text_summary import timeline_retention_summary

    return timeline_retention_summary(retention)


def compare_retention_text(a: Retention, b: Retention) -> str:
    """Both sides' retention as rows of the compare table, and what one side keeps that the other loses."""
    rows = [("retention", f"{a.score * 100:.0f} %", f"{b.score * 100:.0f} %"),
            ("anchors kept", f"{a.kept:,}/{a.anchors:,}", f"{b.kept:,}/{b.anchors:,}"),
            ("instructions", f"{a.instructions_kept}/{a.instructions}", f"{b.instructions_kept}/{b.instructions}")]
    lines = [f"{name:18}{va:>14}{vb:>14}" for name, va, vb in rows]
    lost_a, lost_b = {x.id for x in a.lost}, {x.id for x in b.lost}
    for side, mine, theirs, lost in (("A", lost_a, lost_b, a.lost), ("B", lost_b, lost_a, b.lost)):
        only = [x for x in lost if x.id in mine - theirs]
        if only:
            shown = ", ".join(x.label(50) for x in only[:6]) + (f" and {len(only) - 6:,} more" if len(only) > 6 else "")
            lines.append(f"lost by {side} only ({len(only):,}): {shown}")
    return "\n".join(lines) + "\n"


def cmd_where(args: argparse.Namespace) -> int:
    """Follow a term through the replay: when it was in the context, when it left and why."""
    from .engine.retention import where
    from .engine.simulate import simulate
    from .io.text_summary import where_summary

    if not args.term.strip():
        raise ParameterError("where: the term is empty")
    policy_name, params, tokenizer = resolve_params(args, _one_policy(args))
    session = load_args(args)
    options = PlanOptions(pair_safe=args.pair_safe, pins=tuple(getattr(args, "pin", ()) or ()))
    timeline = simulate(session, policy_name, params, tokenizer, STORE, options=options, per_message=args.per_message)
    found = where(timeline, args.term)
    if args.json:
        write_stdout(json_text({"policy": policy_name, "params": dataclasses.asdict(timeline.params), **found.to_json()}) + "\n")
    else:
        write_stdout(where_summary(found, session.source, policy_name))
    return EXIT_OK


def _compare_side(args: argparse.Namespace, session: Session, name: str | None, extra: Sequence[str],
                  unaligned: list[str]) -> tuple[str, Any, str | None]:
    """One side's (policy, parameters, tokenizer): --config and --set, then the shared trigger and
    keep (`--trigger-tokens`, `--keep-*`) in its own units, then the side's own --set-a/--set-b,
    which has the last word. What the side cannot express is appended to `unaligned`."""
    policy_name, params, tokenizer = resolve_params(args, name, extra)
    if (args.trigger_tokens, args.keep_messages, args.keep_tokens) != (None, None, None):
        from .engine.vocabulary import align

        policy = get_policy(policy_name)
        params = params if params is not None and not isinstance(params, dict) else policy.make_params(params or {})
        params, skipped = align(policy, params, session, args.trigger_tokens, args.keep_messages, args.keep_tokens)
        params = policy.make_params(_parse_sets(extra), base=params)
        unaligned += skipped
    return policy_name, params, tokenizer


def _compare_costs(args: argparse.Namespace, session: Session, sides: Sequence[tuple[str, Any, str | None]]) -> tuple[Any, Any]:
    """Both sides replayed turn by turn and priced with prompt caching (`compare --cost`)."""
    from .engine.simulate import simulate

    options = PlanOptions(pair_safe=args.pair_safe, pins=tuple(args.pin))
    a, b = (_cache_report(args, simulate(session, policy_name, params, tokenizer, STORE, options=options))
            for policy_name, params, tokenizer in sides)
    return a, b


def _knobs(plan: Plan) -> str:
    policy = get_policy(plan.policy)
    names = dict.fromkeys((*policy.trigger, *policy.keep))
    return " ".join(f"{n}={plan.params.get(n)!r}" for n in names) or "no trigger or keep"


def cmd_why(args: argparse.Namespace) -> int:
    from .engine.explain import describe, why

    policy_name, params, tokenizer = resolve_params(args, _one_policy(args))
    session = load_args(args)
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
        print(describe(explanation))
    return EXIT_OK


def cmd_gui(args: argparse.Namespace) -> int:
    from .gui.app import has_display, run

    if not args.screenshot and not has_display():
        raise CtxvizError("gui: no display to open a window on (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset); "
                          "use --screenshot FILE.png, `ctxviz report`, or run under xvfb-run")
    # A policy file of the user's is loaded here (a broken one is one line, before any window opens)
    # and the app then knows it by its own name, in the policy selector like any other.
    policy = get_policy(args.policy).name if args.policy else None
    params, tokenizer = None, args.tokenizer
    if args.compare:
        args.compare = get_policy(args.compare).name
    if args.sets or args.config or args.tokenizer:  # bad values are one line here, before any window opens
        policy, params, tokenizer = resolve_params(args, policy)
    session: Any = args.session
    if args.screenshot:
        check_output_path(args.screenshot, inputs=[args.session] if args.session else [])  # before any window, not after
    if args.session and args.screenshot:
        session = load_session(args.session)  # a bad file is one line here (and the window shows this one: loaded once)
    compare_with = None
    if args.compare or args.compare_set:
        compare_policy = args.compare or policy or "missy"
        get_policy(compare_policy).make_params(_parse_sets(args.compare_set))  # one line now, not a box later
        compare_with = (compare_policy, " ".join(args.compare_set))
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
        if not (320 <= width <= 8000 and 240 <= height <= 8000):
            raise ValueError
    except ValueError:
        raise ParameterError(f"--size {args.size}: expected WIDTHxHEIGHT between 320x240 and 8000x8000, e.g. 1280x720") from None
    return run(session, args.screenshot, args.theme, policy, args.tab, size=(width, height), params=params, tokenizer=tokenizer,
               compare=compare_with)


def cmd_report(args: argparse.Namespace) -> int:
    from .engine.simulate import simulate

    check_output_path(args.output, inputs=[args.session])  # refuse before the work, not after
    session, plan = resolve_plan(args)
    timeline = None
    if not args.no_timeline:
        policy_name, params, tokenizer = resolve_params(args, _one_policy(args))
        timeline = simulate(session, policy_name, params, tokenizer, STORE, options=_options(args))
    from .gui.app import application
    from .gui.report import write_report

    application("light")
    write_report(session, plan, timeline, args.output, inputs=[args.session])
    print(f"wrote {args.output}", file=sys.stderr)
    return EXIT_OK


def sweep_files(paths: Sequence[str]) -> list[str]:
    """Files as given; a folder contributes every file in it (recursively) a loader recognises by name."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                out += [os.path.join(root, f) for f in sorted(files) if f.endswith((".json", ".jsonl", ".yaml", ".yml", ".traj"))]
        else:
            out.append(path)
    if not out:
        raise CtxvizError(f"sweep: no session files in {', '.join(paths)}")
    return out


def cmd_sweep(args: argparse.Namespace) -> int:
    from .engine import sweep

    if args.scheduler:
        sweep.check_scheduler_address(args.scheduler)
    policy = get_policy(args.policy)
    fixed = policy.make_params(_parse_sets(args.sets))  # bad values are one line before any work
    grid = sweep.parse_grid(args.policy, args.grid)
    requirements = [sweep.parse_requirement(r) for r in args.require]
    for combination in sweep.combinations(grid):
        policy.make_params(combination, base=fixed)  # every combination valid before the first replay
    for option, path in (("-o", args.output), ("--png", args.png), ("--results", args.results)):
        if path:  # every output refused before the first replay, not after the last
            check_output_path(path, inputs=args.sessions)
            if option == "--results" and check_output_path(path) == "-":
                raise CtxvizError(f"--results {path}: the results file is read back to resume, so it must be a file")
    if args.output and not args.output.endswith((".csv", ".json")) and check_output_path(args.output) != "-":
        raise CtxvizError(f"{args.output}: the sweep's figures are written as .csv or .json")
    files = sweep_files(args.sessions)
    for path in files:
        load_session(path)  # a bad file is one line now, not a failed worker later
    base = {k: v for k, v in dataclasses.asdict(fixed).items() if k in _parse_sets(args.sets)}
    # Dask workers run in their own folders: a relative path would name another file there, or none.
    where = (lambda path: os.path.abspath(path)) if args.scheduler else (lambda path: path)
    tasks = [sweep.Task(where(path), args.policy, {**base, **combination}, check_model(args.cost_model) if args.cost_model else "", args.tokenizer)
             for combination in sweep.combinations(grid) for path in files]
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty() or done == total:
            print(f"\rsweep: {done:,}/{total:,} replays ({time.monotonic() - started:,.0f} s)", end="\n" if done == total else "", file=sys.stderr)

    from .io.output import open_append

    results = sweep.run(tasks, args.jobs, args.results, args.scheduler, progress, lambda path: open_append(path, args.sessions))
    rows = sweep.summarise(results, requirements)
    best = sweep.cheapest(rows)
    if args.output:
        write_output(args.output, sweep_table(rows, args.output.endswith(".json")), inputs=args.sessions)
    if args.png:
        from .gui.app import application
        from .gui.sweep_chart import write_chart

        application("light")
        write_chart(rows, best, args.png, f"{policy.name} over {len(files)} session(s)", inputs=args.sessions)
    if args.json:
        write_stdout(json_text({"policy": policy.name, "sessions": files, "grid": grid, "requirements": [r.text for r in requirements],
                                "rows": [r.to_json() for r in rows], "cheapest": best.to_json() if best else None}) + "\n")
        return EXIT_OK if best is not None or not requirements else EXIT_OVER_BUDGET
    print(f"{policy.name}: {len(rows):,} combination(s) x {len(files):,} session(s)")
    names = list(grid)
    metric_names = [m for m in sweep.METRICS if any(m in r.metrics for r in rows)]
    print("  ".join([*(f"{n:>14}" for n in names), *(f"{m:>19}" for m in metric_names), "  pareto"]))
    for r in rows:
        cells = [f"{r.params.get(n)!s:>14}" for n in names]
        cells += [f"{_metric_text(m, r.metrics[m]):>19}" if m in r.metrics else f"{'-':>19}" for m in metric_names]
        print("  ".join(cells) + ("  *" if r.pareto else "") + ("" if r.meets else "  fails " + ", ".join(r.failed)))
    if requirements:
        if best is None:
            print("no combination meets " + " and ".join(r.text for r in requirements))
            return EXIT_OVER_BUDGET
        print("cheapest that meets " + " and ".join(r.text for r in requirements) + ": " +
              " ".join(f"{k}={v}" for k, v in best.params.items() if k in grid) + f" (cost ${best.metrics['cost']:,.4f})")
    return EXIT_OK


def _metric_text(name: str, value: float) -> str:
    if name == "cost":
        return f"${value:,.4f}"
    if name in ("retention_mean", "retention_worst", "cache_hit_share"):
        return f"{value:.1%}"
    return f"{value:,.2f}" if isinstance(value, float) and not value.is_integer() else f"{int(value):,}"


def sweep_table(rows: Sequence[Any], as_json: bool) -> str:
    if as_json:
        return json_text([r.to_json() for r in rows]) + "\n"
    import csv
    import io

    docs = [r.to_json() for r in rows]
    params = list(dict.fromkeys(k for d in docs for k in d["params"]))
    metrics = list(dict.fromkeys(k for d in docs for k in d if k not in ("params", "failed")))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*params, *metrics, "failed"])
    for d in docs:
        writer.writerow([*(d["params"].get(p, "") for p in params), *(d.get(m, "") for m in metrics), "; ".join(d.get("failed", []))])
    return out.getvalue()


def cmd_check(args: argparse.Namespace) -> int:
    """Exit 0 when every rule holds for every session, 1 with one line per broken rule."""
    from .engine.gates import check
    from .io.rules import load_rules

    rules = load_rules(args.rules)
    policy_name = args.policy or rules.policy or "missy"
    policy = get_policy(policy_name)
    try:
        params = policy.make_params(rules.params)
    except ParameterError as exc:
        raise LoadError(rules.path, str(exc), field="params") from None
    params = policy.make_params(_parse_sets(args.sets), base=params)
    if rules.cost_model:
        check_model(rules.cost_model)
    if args.junit:
        check_output_path(args.junit, inputs=[*args.sessions, args.rules])
    options = PlanOptions(pair_safe=args.pair_safe, pins=tuple(args.pin))
    from .engine.gates import Outcome

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
        from .io.junit import junit_xml

        write_output(args.junit, junit_xml(results, seconds=seconds), inputs=[*args.sessions, args.rules])
    for path, outcome in errored:
        print(f"{path}: {outcome.rule}: could not be checked: {outcome.message}")
    for path, outcome in broken:
        print(f"{path}: {outcome.rule}: {outcome.message}")
    total = sum(len(o) for o in results.values())
    held = total - len(broken) - len(errored)
    print(f"ctxviz check: {held} of {total} rule(s) hold over {len(results)} session(s) under {policy.name}"
          + (f"; {len(broken)} broken" if broken else "") + (f"; {len(errored)} could not be checked" if errored else ""), file=sys.stderr)
    # 2: something could not be checked (CI must not read that as a pass); 1: a rule was broken.
    return EXIT_USAGE if errored else EXIT_OVER_BUDGET if broken else EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .engine.calibrate import fit, report_json, report_text

    sessions = [load_args(argparse.Namespace(**{**vars(args), "session": path})) for path in args.logs]
    fits, seen = fit(sessions)
    write_stdout(json_text(report_json(fits, seen, len(sessions))) + "\n" if args.json else report_text(fits, seen, len(sessions)))
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    """`ctxviz verify LOG`: how far the replay's requests, cache figures and cost are from the bill."""
    from .engine.verify import report_text, verify

    if args.policy:
        get_policy(args.policy)  # a bad name fails before the file is read
    result = verify(load_args(args), args.policy or None)
    write_stdout(json_text(result.to_json()) + "\n" if args.json else report_text(result))
    return EXIT_OK


COMMANDS = {"calibrate": cmd_calibrate, "verify": cmd_verify, "info": cmd_info, "gui": cmd_gui, "report": cmd_report, "plan": cmd_plan, "export": cmd_export,
            "count": cmd_count, "policies": cmd_policies, "simulate": cmd_simulate, "compare": cmd_compare, "why": cmd_why,
            "sweep": cmd_sweep, "check": cmd_check, "where": cmd_where}


def write_stdout(text: str) -> None:
    """Write to standard output, turning a closed or full stream into one line (not an exit-time
    'Exception ignored' message)."""
    out = sys.stdout
    if out is None or out.closed:
        raise CtxvizError("cannot write to standard output: it is closed")
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        _silence_stdout()
        raise CtxvizError(f"cannot write to standard output ({getattr(exc, 'strerror', None) or exc})") from None


_STDOUT_ERRNOS = {errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT, errno.EFBIG}


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null so the interpreter's last flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _terminate_cleanly() -> None:
    """SIGTERM unwinds like Ctrl+C, so an export in progress removes its temporary file."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def main(argv: Sequence[str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:  # without importing the engine
        print(f"ctxviz {__version__}")
        return EXIT_OK
    _load()
    parser = build_parser()
    args = parser.parse_args(argv)
    _terminate_cleanly()
    writes_stdout = args.command not in ("gui", "report") and getattr(args, "output", "-") == "-"
    if writes_stdout and (sys.stdout is None or sys.stdout.closed):
        print(f"ctxviz {args.command}: cannot write to standard output: it is closed", file=sys.stderr)
        return EXIT_USAGE
    if sys.stdout is not None and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")  # text that is not valid Unicode never aborts a report
    plain = sys.stdout
    if plain is not None and not getattr(args, "json", False) and args.command not in ("export", "count"):
        sys.stdout = TerminalText(plain)  # session text is shown, never obeyed by the terminal
    try:
        code = COMMANDS[args.command](args)
        if sys.stdout is not None:
            sys.stdout.flush()
        return code
    except CtxvizError as exc:
        print(one_line(str(exc)), file=sys.stderr)  # one line, whatever the message holds
        return EXIT_USAGE
    except BrokenPipeError:  # `ctxviz plan x | head`: the reader has what it wanted
        _silence_stdout()
        return EXIT_OK
    except OSError as exc:  # print() into a full or closed standard output
        if exc.errno in _STDOUT_ERRNOS and not exc.filename:
            _silence_stdout()
            print(f"ctxviz {args.command}: cannot write to standard output ({exc.strerror or exc})", file=sys.stderr)
            return EXIT_USAGE
        return _internal_error(args, exc)
    except KeyboardInterrupt:
        return 130
    except RecursionError:
        print(f"ctxviz {args.command}: the input is nested too deeply to process", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        return _internal_error(args, exc)
    finally:
        if sys.stdout is not plain and isinstance(sys.stdout, TerminalText):
            sys.stdout = plain


def _internal_error(args: argparse.Namespace, exc: Exception) -> int:
    if os.environ.get("CTXVIZ_DEBUG"):
        raise exc
    print(f"ctxviz {args.command}: internal error {type(exc).__name__}: {one_line(str(exc))} (set CTXVIZ_DEBUG=1 for a traceback)", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
