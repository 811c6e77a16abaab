"""AutoGen's BufferedChatCompletionContext.get_messages (autogen_core/model_context/
_buffered_chat_completion_context.py, autogen-core 0.7.5): the last `buffer_size` LLMMessages,
minus a FunctionExecutionResultMessage that would start them. tests/golden/autogen holds it to the
framework's own class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ...counting import TokenCounts
from ...plan import Decision, Plan
from ...session import Session
from .columns import model_context_columns, plan_from_units
from .messages import (
    COUNTER,
    autogen_policy,
    build_plan,
    model_context,
    model_limit,
    system_in_context_field,
)

NAME = "autogen-buffered"


@dataclass(frozen=True)
class BufferedParams:
    buffer_size: int = field(default=5, metadata={"unit": "messages", "help": "The last N LLMMessages kept (AutoGen has no default; 5 is common in its examples)",
                                                   "min": 1, "step": 1})

    system_messages_in_context: bool = system_in_context_field()

    @property
    def needs_full_replay(self) -> bool:
        """`simulate` plans every prefix from scratch: its incremental replayer keeps system messages apart."""
        return self.system_messages_in_context

    def __post_init__(self) -> None:
        if self.buffer_size <= 0:
            raise ValueError(f"buffer_size must be greater than 0 (got {self.buffer_size})")


_CODES = ("in_window", "outside_window", "start_rule")
IN_WINDOW, OUTSIDE, START_RULE = range(len(_CODES))


def plan(session: Session, params: BufferedParams, counts: TokenCounts) -> Plan:
    """`plan_records` in columns: the last buffer_size LLMMessages are one slice of the model
    context kept per session (columns.py), and nothing per message is built."""
    mc = model_context_columns(session, counts, params.system_messages_in_context)
    n = params.buffer_size
    units = len(mc.units)
    first = max(0, units - n)
    code = np.full(units, OUTSIDE, dtype=np.int16)
    code[first:] = IN_WINDOW
    notes: list[str] = []
    if first < units and mc.kinds[first] == "results":
        code[first] = START_RULE
        notes.append(f"the buffer's first message was a tool result (#{int(mc.unit_first[first])}) and is removed, so {units - first - 1} "
                     "messages are sent")
    budget, note = model_limit(session)
    if note:
        notes.append(note)
    sent = code == IN_WINDOW
    return plan_from_units(NAME, session, params, counts, mc, sent, code, _CODES, partial(_unit_reason, code, n), budget, notes,
                           {"llm_messages": units, "sent_llm_messages": int(sent.sum())})


def _unit_reason(code: np.ndarray, n: int, p: int) -> str:
    """The reason of LLMMessage p's messages, as `plan_records` words it."""
    c = code[p]
    if c == IN_WINDOW:
        return f"kept: among the last {n} messages (buffer_size={n})"
    if c == START_RULE:
        return f"dropped: a tool result would start the last {n} messages without its call, so AutoGen removes it"
    return f"dropped: older than the last {n} messages (buffer_size={n})"


def plan_records(session: Session, params: BufferedParams, counts: TokenCounts) -> Plan:
    """get_messages step by step, a record per message: the reference `plan` is checked against
    (tests/test_autogen_buffer_columns.py)."""
    _system, units = model_context(session, params.system_messages_in_context)
    n = params.buffer_size
    kept = list(units[-n:])
    reasons: dict[int, tuple[Decision, str, str]] = {}
    notes: list[str] = []
    for unit in units[: max(0, len(units) - n)]:
        for m in unit.messages:
            reasons[m.index] = (Decision.DROPPED, f"dropped: older than the last {n} messages (buffer_size={n})", "outside_window")
    if kept and kept[0].kind == "results":
        # AutoGen: a FunctionExecutionResultMessage may not start the context (its call is gone).
        first = kept.pop(0)
        for m in first.messages:
            reasons[m.index] = (Decision.DROPPED, f"dropped: a tool result would start the last {n} messages without its call, "
                                                  "so AutoGen removes it", "start_rule")
        notes.append(f"the buffer's first message was a tool result (#{first.first}) and is removed, so {len(kept)} messages are sent")
    for unit in kept:
        for m in unit.messages:
            reasons[m.index] = (Decision.KEPT, f"kept: among the last {n} messages (buffer_size={n})", "in_window")
    budget, note = model_limit(session)
    if note:
        notes.append(note)
    return build_plan(NAME, session, params, counts, kept, reasons, budget, notes,
                      {"llm_messages": len(units), "sent_llm_messages": len(kept)})


POLICY = autogen_policy(
    reason_codes=("system_prompt", "in_window", "outside_window", "start_rule", "summarised"),
    name=NAME,
    title="AutoGen BufferedChatCompletionContext",
    params_type=BufferedParams,
    plan=plan,
    description="The last buffer_size messages; a tool result that would start them is removed.",
    source="autogen_core/model_context/_buffered_chat_completion_context.py BufferedChatCompletionContext.get_messages",
    counter="none for its decisions (it counts messages); tokens shown by " + COUNTER,
    trigger=("buffer_size",),
    keep=("buffer_size",),
)

