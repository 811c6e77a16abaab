"""The argparse pieces several commands share: the session and policy options, cost, step and output options.

Building them names every loader, policy and tokenizer, so this module imports the engine and the loaders.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..engine.policies import policy_names
from ..engine.tokenizers import tokenizer_names
from ..io.loaders import loader_names
from .exits import EXIT_USAGE


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other user error
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _add_plan_options(p: argparse.ArgumentParser, *, real_count: bool = False, retention: bool = False) -> None:
    """The session, policy and plan options. `real_count`: also `--real-count` and `--model`, for
    the commands whose output shows the real count; `retention`: also `--retention`, for those that
    show retention (a command that does not show it does not offer it: why, where, export and report
    took `--retention` and printed the same either way)."""
    p.add_argument("session", help=f"session file in a format ctxviz reads ({_formats()}), or - for standard input")
    p.add_argument("--policy", action="append", default=None, help=f"context policy (default: the log's own agent's for a Claude Code, Codex or Gemini CLI log, else missy; available: {', '.join(policy_names(plugins=False))}, "
                   "installed plugins, or your own file.py:NAME); compare takes two")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="set a policy parameter (repeatable)")
    p.add_argument("--config", help="YAML preset with the policy's parameters")
    p.add_argument("--tokenizer", help=f"override the policy's estimator ({', '.join(tokenizer_names())}, or a model name)")
    p.add_argument("--input-format", choices=None, help="skip auto-detection (" + ", ".join(loader_names()) + ")")
    p.add_argument("--conversation", type=int, metavar="N", help="the conversation to read from a file that holds several (1-based)")
    p.add_argument("--pair-safe", action="store_true", help="keep or drop tool calls and their results together")
    p.add_argument("--pin", action="append", default=[], metavar="RULE",
                   help="send this message whatever the policy decides: #INDEX, id:ID, role:ROLE, first-user, last-user, text:WORDS (repeatable)")
    if real_count:
        p.add_argument("--real-count", action="store_true", help="also count the context with the model's real encoding and check its window")
        p.add_argument("--model", default="", help="model for --real-count: its encoding, window and input price (default: the session's)")
    if retention:
        p.add_argument("--retention", choices=("auto", "on", "off"), default="auto",
                       help="which anchors still reach the model; auto: up to 20 MB of session text")


def _add_cost_options(p: argparse.ArgumentParser, help_text: str = "price every turn's input with prompt caching "
                      "(cache reads, writes, the turns where the policy broke the cache)") -> None:
    p.add_argument("--cost", action="store_true", help=help_text)
    p.add_argument("--cost-model", metavar="MODEL", default="", action=_PriceWith,
                   help="price with this catalogue model (implies --cost; default: the session's)")


class _PriceWith(argparse.Action):
    """`--cost-model M` asks for prices: it turns `--cost` on (alone, it was read by nothing)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.cost = True


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

