"""The policy API: everything a policy of your own needs, in one stable place.

A policy is a `Policy` record naming a pure function `plan(session, params, counts) -> Plan`:

- `params` is an instance of your frozen dataclass of parameters (int, float, bool, str or
  `X | None` fields; `field(metadata={"help": ..., "min": ..., "max": ..., "step": ...})`), which
  the CLI's `--set`, YAML presets and the app's controls all fill in; raise ValueError in
  `__post_init__` to reject a value, with a message the user can act on.
- `counts.message_tokens[i]` is message i's tokens, measured once by your `measure(message,
  tokenizer)` with `default_tokenizer` (or the one the user picks); `counts.text(s)` counts any
  other text. Never tokenise messages in `plan`: it runs on every slider move.
- `plan_from_decisions` turns one decision and one reason per message into a complete Plan.

Load it with `ctxviz plan FILE --policy path/to/file.py:NAME`, or publish it under the
`ctxviz.policies` entry-point group of your package. See examples/sliding_window.py.
"""

from __future__ import annotations

from .engine.counting import TokenCounts
from .engine.plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from .engine.policies.base import Policy
from .engine.policies.builder import plan_from_decisions
from .engine.session import Message, Session, Summary
from .engine.tokenizers import Tokenizer


def measure_text(message: Message, tokenizer: Tokenizer) -> int:
    """The simplest measure: the tokens of the message's text (tool calls and parts rendered as text)."""
    return tokenizer.count(message.text)


__all__ = [
    "Decision",
    "Message",
    "MessagePlan",
    "Plan",
    "Policy",
    "Session",
    "Summary",
    "SummaryPlan",
    "TokenCounts",
    "Tokenizer",
    "Totals",
    "measure_text",
    "plan_from_decisions",
]
