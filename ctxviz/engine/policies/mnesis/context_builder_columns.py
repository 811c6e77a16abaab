"""mnesis' ContextBuilder.build decided in columns: the same plan as `context_builder.plan_records`,
with no record, rendering or request dict per message.

What the build reads of a session does not depend on the budget: the system prompt and its
count, the summaries and their stored counts, which messages a summary covers, and mnesis' units
(a message with the tool messages its ToolParts carry), each counted on its first message. That is
kept per session and counting scheme (`counting.derived_from_counts`), with the units' counts
summed newest first. The fill then is one binary search: units are taken newest first while they
fit, and the first that does not is where mnesis stops, so what is sent is one run of units ending
at the newest. A sent message is rendered (its ToolParts through json.dumps) only when its request
form is read (`Context`), once per session; BuiltContext's tool_output_tokens is a sum of the
ToolParts' shares `measure_session` counted (rendered and counted here only for counts made
another way, once per message and session). Reasons are built for the rows someone reads.

tests/test_mnesis_columns.py checks it against `plan_records` on random sessions and budgets, the
samples and the real logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, SUMMARIZED, Columns, Rows
from ...session import Message, Session
from ...tokenizers import HEURISTICS
from ..base import params_dict
from ..common import base_system_prompt
from .messages import ZONES, ToolParts, measured_tool_tokens, model_info, render_message, tool_output_tokens, tool_parts

SYSTEM_ZONE, SUMMARIZED_ZONE, RAW_ZONE = range(len(ZONES))
_CODES = ("system_prompt", "summarised", "fits", "fresh_tail", "missed", "after_cut")
SYSTEM_PROMPT, SUMMARISED, FITS, FRESH_TAIL, MISSED, AFTER_CUT = range(len(_CODES))


class Budget(Protocol):
    """What this module reads of `context_builder.MnesisBudget`."""

    context_limit: int | None
    reserved_output_tokens: int | None
    compaction_buffer: int
    always_include_latest: bool


class Rendered:
    """A sent message in mnesis' form (`render_message`), rendered when first read and kept: a
    message's ToolParts go through json.dumps, which a re-plan that reads no context never pays."""

    __slots__ = ("message", "results", "_built")

    def __init__(self, message: Message, parts: ToolParts) -> None:
        self.message, self.results = message, parts.results.get(message.index)
        self._built: dict[str, Any] | None = None

    def to_openai(self) -> dict[str, Any]:
        if self._built is None:
            self._built = render_message(self.message, self.results)
        return dict(self._built)


@dataclass(frozen=True, eq=False)
class Build:
    """What the build reads of one session under one counting scheme, whatever the budget."""

    system_index: np.ndarray  # the system-role messages (sent inside the system prompt)
    system_prompt: str
    system_tokens: int
    summary_tokens: tuple[int, ...]  # each summary's stored count (mnesis' heuristic)
    covered: np.ndarray  # raw messages a summary replaces
    orphans: np.ndarray  # tool messages whose carrier a summary replaced
    heads: np.ndarray  # int64: each unit's first message, oldest unit first
    head_tokens: np.ndarray
    newest_first: np.ndarray  # int64: newest_first[k] = the counts of the k+1 newest units
    members: np.ndarray  # int64: the messages of the units, in order
    unit_start: np.ndarray  # int64: unit u's messages are members[unit_start[u]:unit_start[u + 1]]
    unit: np.ndarray  # int64 per session message: its unit, or -1
    head_index: tuple[int, ...]
    entries: tuple[Rendered, ...]  # per unit, its first message as sent
    carried: np.ndarray  # int64: the tool messages an earlier message's ToolPart carries
    carrier: np.ndarray  # int64: that message, for each
    carrier_of: tuple[int | None, ...]
    tool_tokens: np.ndarray  # int64 per unit: its ToolParts' count (-1: not counted yet)


def build_of(session: Session, counts: TokenCounts) -> Build:
    return derived_from_counts(session, counts, "mnesis", _build)


def _build(session: Session, counts: TokenCounts) -> Build:
    system_messages, raw = session.system_and_history
    system_prompt = base_system_prompt(session, list(system_messages))
    heuristic = HEURISTICS["mnesis"]
    covered_ids = session.covered_ids
    parts = tool_parts(session)
    carrier_of = parts.carrier
    covered: list[int] = []
    orphans: list[int] = []
    heads: list[int] = []
    members: list[int] = []
    unit_start: list[int] = []
    candidate: set[int] = set()
    for m in raw:
        if m.id in covered_ids:
            covered.append(m.index)
            continue
        candidate.add(m.index)
        c = carrier_of[m.index]
        if c is None:
            heads.append(m.index)
            unit_start.append(len(members))
            members.append(m.index)
        elif c in candidate:
            members.append(m.index)
        else:
            orphans.append(m.index)
    unit_start.append(len(members))
    n = len(session.messages)
    tokens = counts.token_array
    head_at = np.asarray(heads, dtype=np.int64)
    start = np.asarray(unit_start, dtype=np.int64)
    member_at = np.asarray(members, dtype=np.int64)
    unit = np.full(n, -1, dtype=np.int64)
    unit[member_at] = np.repeat(np.arange(len(heads)), np.diff(start))
    head_tokens = tokens[head_at]
    measured = measured_tool_tokens(session, counts)
    tool_tokens = (np.asarray(measured, dtype=np.int64)[head_at] if measured is not None else np.full(len(heads), -1, dtype=np.int64))
    carried = [i for i, c in enumerate(carrier_of) if c is not None]
    messages = session.messages
    return Build(
        np.fromiter((m.index for m in system_messages), dtype=np.int64, count=len(system_messages)), system_prompt,
        counts.text(system_prompt) if system_prompt else 0, tuple(heuristic.count(s.text) for s in session.summaries),
        np.asarray(covered, dtype=np.int64), np.asarray(orphans, dtype=np.int64), head_at, head_tokens,
        np.cumsum(head_tokens[::-1]) if heads else np.zeros(0, dtype=np.int64), member_at, start, unit, tuple(heads),
        tuple(Rendered(messages[i], parts) for i in heads), np.asarray(carried, dtype=np.int64),
        np.asarray([carrier_of[i] for i in carried], dtype=np.int64), carrier_of, tool_tokens,
    )


def _tool_tokens(b: Build, lo: int, session: Session, counts: TokenCounts) -> int:
    """BuiltContext.tool_output_tokens of units lo..: the counts measure_session kept, or for counts
    made another way, each unit's ToolParts rendered and counted the first time it is sent."""
    sent = b.tool_tokens[lo:]
    missing = np.flatnonzero(sent < 0)
    if len(missing):
        parts = tool_parts(session)
        for k in (missing + lo).tolist():
            b.tool_tokens[k] = tool_output_tokens([session.messages[int(b.heads[k])]], counts, parts)
    return int(b.tool_tokens[lo:].sum())


class _Why:
    """The reason sentence of message i, as `plan_records` words it."""

    def __init__(self, b: Build, decision: np.ndarray, code: np.ndarray, available: int, usable: int, cut: int | None) -> None:
        self.b, self.decision, self.code, self.available, self.usable, self.cut = b, decision, code, available, usable, cut

    def _unit(self, i: int) -> tuple[int, int, list[int]]:
        """Message i's unit: its number, its rank from the newest, its messages."""
        u = int(self.b.unit[i])
        return u, len(self.b.heads) - 1 - u, self.b.members[self.b.unit_start[u]:self.b.unit_start[u + 1]].tolist()

    def _used(self, rank: int) -> int:
        return int(self.b.newest_first[rank - 1]) if rank else 0

    def __call__(self, i: int) -> str:
        code = self.code[i]
        b = self.b
        if code == SYSTEM_PROMPT:
            return "kept: part of the system prompt, which mnesis counts against the budget"
        if code == SUMMARISED:
            if self.decision[i] == SUMMARIZED:
                return "summarized: replaced in context by the summary that covers it"
            return f"dropped: its output belongs to the tool part of #{b.carrier_of[i]}, which is not a raw message here"
        u, rank, unit = self._unit(i)
        head = unit[0]
        t = int(b.head_tokens[u])
        label = f" (with its tool outputs #{', #'.join(str(c) for c in unit[1:])})" if len(unit) > 1 else ""
        if code == FITS:
            if i != head:
                return f"kept: its output is sent inside the tool part of #{head}, which mnesis counts there"
            return f"kept: {t:,} tokens{label} fit in the {self.available - self._used(rank):,} left of the {self.usable:,} usable (newest first)"
        if code == FRESH_TAIL:
            return f"kept: the most recent message is always included (option), even though its {t:,} tokens exceed the {max(self.available, 0):,} left"
        if code == MISSED:
            if i != head:
                return f"dropped with #{head}: its output is part of that message's tool part"
            return f"dropped: {t:,} tokens{label} did not fit in the {max(self.available - self._used(rank), 0):,} left of the {self.usable:,} usable"
        return f"dropped: mnesis stops at the first message that does not fit (#{self.cut})"


def plan_columns(session: Session, budget: Budget, counts: TokenCounts) -> Plan:
    b = build_of(session, counts)
    tokens = counts.token_array
    n = len(session.messages)
    info = model_info(session.model)
    limit = budget.context_limit if budget.context_limit is not None else info.context_limit
    reserved = budget.reserved_output_tokens if budget.reserved_output_tokens is not None else info.max_output_tokens
    usable = limit - reserved - budget.compaction_buffer  # can be negative
    summary_tokens = sum(b.summary_tokens)
    available = usable - b.system_tokens - summary_tokens
    notes: list[str] = []
    if usable <= 0:
        notes.append(f"usable budget is {usable:,} ({limit:,} - {reserved:,} reserved output - {budget.compaction_buffer:,} compaction buffer): no raw message can fit")

    # Newest first, the k+1 newest units count newest_first[k]: taken while that is within
    # `available`; with always_include_latest the newest is taken whatever it counts.
    units = len(b.heads)
    taken = int(np.searchsorted(b.newest_first, available, side="right"))
    forced = taken == 0 and units > 0 and budget.always_include_latest
    if forced:
        taken = 1
    lo = units - taken  # units lo.. are sent
    cut_unit = lo - 1 if lo > 0 else None
    used = int(b.newest_first[taken - 1]) if taken else 0

    decision = np.full(n, DROPPED, dtype=np.int8)
    zone = np.full(n, RAW_ZONE, dtype=np.int16)
    code = np.full(n, AFTER_CUT, dtype=np.int16)
    decision[b.system_index] = KEPT
    zone[b.system_index] = SYSTEM_ZONE
    code[b.system_index] = SYSTEM_PROMPT
    decision[b.covered] = SUMMARIZED
    zone[b.covered] = SUMMARIZED_ZONE
    code[b.covered] = SUMMARISED
    code[b.orphans] = SUMMARISED
    sent = b.members[b.unit_start[lo]:]
    decision[sent] = KEPT
    code[sent] = FRESH_TAIL if forced else FITS
    if cut_unit is not None:
        code[b.members[b.unit_start[cut_unit]:b.unit_start[cut_unit + 1]]] = MISSED
    sent_tokens = np.where(decision == KEPT, tokens, 0)
    cut = int(b.heads[cut_unit]) if cut_unit is not None else None
    why = _Why(b, decision, code, available, usable, cut)
    columns = Columns(session, decision, tokens, sent_tokens, zone, ZONES, code, _CODES, partial(_reason, why))
    if units and not taken:
        notes.append("no raw message is included: the newest alone does not fit (mnesis does not enforce its 'most recent always included' invariant)")

    summary_plans = tuple(SummaryPlan(i, t, Decision.KEPT, f"kept: summaries are always sent first and charged without a fit check ({t:,} tokens)", s.text)
                          for i, (s, t) in enumerate(zip(session.summaries, b.summary_tokens, strict=True)))
    head: tuple[Any, ...] = ({"role": "system", "content": b.system_prompt}, *({"role": "assistant", "content": s.text} for s in session.summaries))
    context = Context(head + b.entries[lo:])
    context_index = (None,) * len(head) + b.head_index[lo:]
    token_estimate = b.system_tokens + summary_tokens + used
    allocation = {"reserved_output": reserved, "compaction_buffer": budget.compaction_buffer, "system": b.system_tokens,
                  "summaries": summary_tokens, "messages": usable - b.system_tokens - summary_tokens}
    usage = {"reserved_output": 0, "compaction_buffer": 0, "system": b.system_tokens, "summaries": summary_tokens, "messages": used}
    kept_tokens = int(sent_tokens.sum())
    kept_messages = len(b.system_index) + len(sent)
    totals = Totals(budget=limit, used=token_estimate, kept=kept_tokens, dropped=int(tokens.sum()) - kept_tokens, fits=token_estimate <= usable,
                    kept_messages=kept_messages, dropped_messages=n - kept_messages, fits_test="parts")
    carried_sent = decision[b.carried] == KEPT
    ids = session.message_columns[0]
    return Plan(
        policy="mnesis", params={**params_dict(budget), "context_limit": limit, "reserved_output_tokens": reserved},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=b.system_prompt, messages=Rows(columns),
        context=context, context_index=context_index, totals=totals, summaries=summary_plans, zones=ZONES, notes=tuple(notes),
        extra={"usable": usable, "has_summary": bool(session.summaries), "token_estimate": token_estimate,
               "summary_token_count": summary_tokens, "raw_message_tokens": used, "tool_output_tokens": _tool_tokens(b, lo, session, counts),
               "oldest_included_message_id": ids[int(b.heads[lo])] if taken else None,
               "cut_index": cut,
               # tool messages sent inside an earlier message's tool part (no context entry of their own)
               "carried_by": dict(zip(b.carried[carried_sent].tolist(), b.carrier[carried_sent].tolist(), strict=True))},
    )


def _reason(why: _Why, i: int) -> str:
    return why(i)
