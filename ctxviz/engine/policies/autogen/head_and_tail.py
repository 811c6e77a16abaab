"""AutoGen's HeadAndTailChatCompletionContext.get_messages (autogen_core/model_context/
_head_and_tail_chat_completion_context.py, autogen-core 0.7.5): the first `head_size` and last
`tail_size` LLMMessages with a `UserMessage("Skipped N messages.", source="System")` between them.
tests/golden/autogen holds it to the framework's own class.
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
    Unit,
    autogen_policy,
    build_plan,
    model_context,
    model_limit,
    system_in_context_field,
)

NAME = "autogen-head-and-tail"


@dataclass(frozen=True)
class HeadAndTailParams:
    head_size: int = field(default=2, metadata={"unit": "messages", "help": "The first N LLMMessages kept (AutoGen has no default)", "min": 1, "step": 1})
    tail_size: int = field(default=10, metadata={"unit": "messages", "help": "The last N LLMMessages kept (AutoGen has no default)", "min": 1, "step": 1})

    system_messages_in_context: bool = system_in_context_field()

    @property
    def needs_full_replay(self) -> bool:
        """`simulate` plans every prefix from scratch: its incremental replayer keeps system messages apart."""
        return self.system_messages_in_context

    def __post_init__(self) -> None:
        if self.head_size <= 0:
            raise ValueError(f"head_size must be greater than 0 (got {self.head_size})")
        if self.tail_size <= 0:
            raise ValueError(f"tail_size must be greater than 0 (got {self.tail_size})")


def placeholder_text(num_skipped: int) -> str:
    return f"Skipped {num_skipped} messages."


_CODES = ("head", "in_window", "outside_window", "start_rule", "in_window")
HEAD, TAIL, OUTSIDE, START_RULE, ALL = range(len(_CODES))  # ALL: every message fits head and tail


def plan(session: Session, params: HeadAndTailParams, counts: TokenCounts) -> Plan:
    """`plan_records` in columns: the head and the tail are two slices of the model context kept
    per session (columns.py), and nothing per message is built."""
    mc = model_context_columns(session, counts, params.system_messages_in_context)
    h, t = params.head_size, params.tail_size
    units = len(mc.units)
    notes: list[str] = []
    budget, note = model_limit(session)
    if note:
        notes.append(note)
    num_skipped = units - h - t
    if num_skipped <= 0:
        code = np.full(units, ALL, dtype=np.int16)
        return plan_from_units(NAME, session, params, counts, mc, np.ones(units, dtype=bool), code, _CODES,
                               partial(_unit_reason, code, h, t, units, num_skipped), budget, notes, {"llm_messages": units, "num_skipped": 0})
    code = np.full(units, OUTSIDE, dtype=np.int16)
    code[:h] = HEAD
    code[units - t :] = TAIL
    if mc.kinds[h - 1] == "function_calls":
        code[h - 1] = START_RULE
    if mc.kinds[units - t] == "results":
        code[units - t] = START_RULE
    text = placeholder_text(num_skipped)
    notes.append(f"'{text}' is inserted as a user message named System between the head and the tail (num_skipped counts "
                 "LLMMessages, and ignores a head or tail message AutoGen then removes)")
    return plan_from_units(NAME, session, params, counts, mc, (code == HEAD) | (code == TAIL), code, _CODES,
                           partial(_unit_reason, code, h, t, units, num_skipped), budget, notes,
                           {"llm_messages": units, "num_skipped": num_skipped, "placeholder": text}, placeholder=(h, text))


def _unit_reason(code: np.ndarray, h: int, t: int, units: int, num_skipped: int, p: int) -> str:
    """The reason of LLMMessage p's messages, as `plan_records` words it."""
    c = code[p]
    if c == ALL:
        return f"kept: {units} messages fit in head_size {h} + tail_size {t}, so all are sent"
    if c == HEAD:
        return f"kept: among the first {h} messages (head_size={h})"
    if c == TAIL:
        return f"kept: among the last {t} messages (tail_size={t})"
    if c == START_RULE and p < h:
        return "dropped: the head would end on this function call without its result, so AutoGen removes it (the placeholder's count still includes it as head)"
    if c == START_RULE:
        return ("dropped: a tool result would start the tail without its call, so AutoGen removes it (the placeholder's count still "
                "includes it as tail)")
    return f"dropped: between the first {h} and the last {t} messages; the placeholder '{placeholder_text(num_skipped)}' stands in its place"


def plan_records(session: Session, params: HeadAndTailParams, counts: TokenCounts) -> Plan:
    """get_messages step by step, a record per message: the reference `plan` is checked against
    (tests/test_autogen_buffer_columns.py)."""
    _system, units = model_context(session, params.system_messages_in_context)
    h, t = params.head_size, params.tail_size
    reasons: dict[int, tuple[Decision, str, str]] = {}
    notes: list[str] = []
    budget, note = model_limit(session)
    if note:
        notes.append(note)
    num_skipped = len(units) - h - t
    if num_skipped <= 0:
        for unit in units:
            for m in unit.messages:
                reasons[m.index] = (Decision.KEPT, f"kept: {len(units)} messages fit in head_size {h} + tail_size {t}, so all are sent",
                                    "in_window")
        return build_plan(NAME, session, params, counts, list(units), reasons, budget, notes, {"llm_messages": len(units), "num_skipped": 0})
    head: list[Unit] = list(units[:h])
    tail: list[Unit] = list(units[-t:])
    for unit in units[h : len(units) - t]:
        for m in unit.messages:
            reasons[m.index] = (Decision.DROPPED, f"dropped: between the first {h} and the last {t} messages; the placeholder "
                                                  f"'{placeholder_text(num_skipped)}' stands in its place", "outside_window")
    if head and head[-1].kind == "function_calls":
        # AutoGen: a head that ends on a function call would send it without its result.
        last = head.pop()
        reasons[last.first] = (Decision.DROPPED, "dropped: the head would end on this function call without its result, so AutoGen "
                                                  "removes it (the placeholder's count still includes it as head)", "start_rule")
    if tail and tail[0].kind == "results":
        first = tail.pop(0)
        for m in first.messages:
            reasons[m.index] = (Decision.DROPPED, "dropped: a tool result would start the tail without its call, so AutoGen removes it "
                                                  "(the placeholder's count still includes it as tail)", "start_rule")
    for unit in head:
        for m in unit.messages:
            reasons[m.index] = (Decision.KEPT, f"kept: among the first {h} messages (head_size={h})", "head")
    for unit in tail:
        for m in unit.messages:
            reasons[m.index] = (Decision.KEPT, f"kept: among the last {t} messages (tail_size={t})", "in_window")
    text = placeholder_text(num_skipped)
    notes.append(f"'{text}' is inserted as a user message named System between the head and the tail (num_skipped counts "
                 "LLMMessages, and ignores a head or tail message AutoGen then removes)")
    return build_plan(NAME, session, params, counts, [*head, text, *tail], reasons, budget, notes,
                      {"llm_messages": len(units), "num_skipped": num_skipped, "placeholder": text})


POLICY = autogen_policy(
    reason_codes=("system_prompt", "head", "in_window", "outside_window", "start_rule", "summarised"),
    name=NAME,
    title="AutoGen HeadAndTailChatCompletionContext",
    params_type=HeadAndTailParams,
    plan=plan,
    description="The first head_size and last tail_size messages, with a 'Skipped N messages.' user message between them.",
    source="autogen_core/model_context/_head_and_tail_chat_completion_context.py HeadAndTailChatCompletionContext.get_messages",
    counter="none for its decisions (it counts messages); tokens shown by " + COUNTER,
    trigger=("head_size", "tail_size"),
    keep=("tail_size",),
)
