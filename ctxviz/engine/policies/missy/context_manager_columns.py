"""missy's build_messages decided in columns: the same plan as `context_manager.plan_records`, with
no record or request dict per message.

What the build reads of a session does not depend on the budget: which messages are the system
prompt, the history, the new message and what a recorded summary covers, and the history's counts
as prefix sums. That is kept per session and counting scheme (`counting.derived_from_counts`).
missy fills the evictable prefix newest first and stops at the first message that does not fit;
with counts that are never negative the messages that fit are one run ending at the fresh tail, so
the cut is one binary search on the prefix sums (and so is `trim_protected_tail`'s trim of the
tail). The messages go out as the session's own (`Context` builds their request form when read)
and each reason is built for the row someone reads.

tests/test_missy_columns.py checks it against `plan_records` on random sessions and budgets, the
samples and the real logs, and on re-plans of one session after a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Joined, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, SUMMARIZED, Columns, Rows
from ...prefix_columns import history_index_array
from ...session import Message, Session
from ..base import params_dict
from ..common import base_system_prompt, recorded_covers, split_new_message, tools_json
from .parts import ZONES, Budget, enrich_system_prompt, format_summary, fresh_tail_reason, invisible_call_notes

_ZONES = ("system", "evictable", "fresh_tail", "new_message", "summarized")
SYSTEM_ZONE, EVICTABLE_ZONE, TAIL_ZONE, NEW_ZONE, SUMMARIZED_ZONE = range(len(_ZONES))
_CODES = ("system_prompt", "fresh_tail", "new_message", "fits", "missed", "after_cut", "summarised")
SYSTEM_PROMPT, FRESH_TAIL, NEW_MESSAGE, FITS, MISSED, AFTER_CUT, SUMMARISED = range(len(_CODES))


@dataclass(frozen=True, eq=False)
class Build:
    """What the build reads of one session under one counting scheme, whatever the budget."""

    system_count: int  # system-role messages (sent inside the system prompt)
    system_tokens: int  # their counts, summed
    history: tuple[Message, ...]  # the history missy fills: neither system, new nor covered
    history_index: tuple[int, ...]
    history_at: np.ndarray  # int64: the session index of each history message
    position: np.ndarray  # int64 per session message: its position in `history`, -1 if none
    cumulative: np.ndarray  # int64: cumulative[k] = the counts of history[:k]
    new_message: Message | None
    new_tokens: int
    covered: dict[str, int]  # message id -> the recorded summary in its place
    superseded: frozenset[int]
    summary_of: np.ndarray  # int64 per session message: the summary in its place, -1 if none
    summarized_count: int
    base_system: str
    base_system_tokens: int
    tools_tokens: int
    all_tokens: int
    decision: np.ndarray  # int8: every message outside the history decided (the history is filled per plan)
    zone: np.ndarray
    code: np.ndarray


def build_of(session: Session, counts: TokenCounts) -> Build:
    return derived_from_counts(session, counts, "missy", _build)


def _build(session: Session, counts: TokenCounts) -> Build:
    system_messages, history, new_message = split_new_message(session)
    covered, superseded = recorded_covers(session)
    if covered and new_message is not None and new_message.id in covered:
        history.append(new_message)
        new_message = None
    n = len(session.messages)
    tokens = counts.token_array
    summary_of = np.full(n, -1, dtype=np.int64)
    summarized = [m for m in history if m.id in covered] if covered else []
    if summarized:
        history = [m for m in history if m.id not in covered]
        summary_of[[m.index for m in summarized]] = [covered[m.id] for m in summarized]
    # (the history's indices are the session's column where no summary took any of it: a replay's
    # prefix has that column sliced from the whole session's, not made again per step)
    if summarized:
        history_index = tuple(m.index for m in history)
        history_at = np.array(history_index, dtype=np.int64)
    else:
        history_index, history_at = session.history_columns[0][: len(history)], history_index_array(session)[: len(history)]
    position = np.full(n, -1, dtype=np.int64)
    position[history_at] = np.arange(len(history_at), dtype=np.int64)
    cumulative = np.zeros(len(history_at) + 1, dtype=np.int64)
    np.cumsum(tokens[history_at], out=cumulative[1:])
    system_at = [m.index for m in system_messages]
    decision = np.full(n, DROPPED, dtype=np.int8)
    zone = np.full(n, EVICTABLE_ZONE, dtype=np.int16)
    code = np.full(n, AFTER_CUT, dtype=np.int16)
    decision[system_at], zone[system_at], code[system_at] = KEPT, SYSTEM_ZONE, SYSTEM_PROMPT
    summarized_at = [m.index for m in summarized]
    decision[summarized_at], zone[summarized_at], code[summarized_at] = SUMMARIZED, SUMMARIZED_ZONE, SUMMARISED
    if new_message is not None:
        decision[new_message.index], zone[new_message.index], code[new_message.index] = KEPT, NEW_ZONE, NEW_MESSAGE
    base_system = base_system_prompt(session, system_messages)
    tools = tools_json(session)
    return Build(
        system_count=len(system_messages), system_tokens=int(tokens[system_at].sum()), history=tuple(history), history_index=history_index,
        history_at=history_at, position=position, cumulative=cumulative, new_message=new_message,
        new_tokens=int(tokens[new_message.index]) if new_message is not None else 0, covered=covered, superseded=superseded,
        summary_of=summary_of, summarized_count=len(summarized), base_system=base_system,
        base_system_tokens=counts.text(base_system) if base_system else 0, tools_tokens=counts.text(tools) if tools else 0,
        all_tokens=int(tokens.sum()), decision=decision, zone=zone, code=code,
    )


@dataclass(frozen=True)
class _Fill:
    """Where one budget's fill fell, in positions of `Build.history`: [0, end) is the evictable
    prefix and [keep, end) the part of it that fits (history[keep - 1] is the cut when keep > 0);
    [end, tail) are the fresh-tail messages `trim_protected_tail` dropped, [tail, len) the tail sent."""

    end: int
    tail: int
    keep: int
    remaining: int  # what was left of the history budget for the evictable prefix


class _Why:
    """The reason sentence of message i, as `plan_records` words it."""

    def __init__(self, b: Build, budget: Budget, fill: _Fill, tail_reason: str, summary_plans: tuple[SummaryPlan, ...],
                 tokens: np.ndarray, code: np.ndarray, zone: np.ndarray, cut_index: int | None) -> None:
        self.b, self.budget, self.fill, self.tail_reason, self.summary_plans = b, budget, fill, tail_reason, summary_plans
        self.tokens, self.code, self.zone, self.cut_index = tokens, code, zone, cut_index

    def __call__(self, i: int) -> str:
        code = self.code[i]
        hb = self.budget.history_budget
        if code == SYSTEM_PROMPT:
            return (f"kept: part of the system prompt (missy never measures it; the {self.budget.system_reserve:,}-token system reserve "
                    "stands in for it)")
        if code == FRESH_TAIL:
            return self.tail_reason
        if code == NEW_MESSAGE:
            return "kept: the new user message is always sent last"
        if code == SUMMARISED:
            k = int(self.b.summary_of[i])
            s = self.summary_plans[k]
            return f"summarized: recorded summary #{k + 1} covers it" + (" and is sent in its place" if s.decision is Decision.KEPT
                                                                         else f"; the summary itself is not sent ({s.reason})")
        if code == AFTER_CUT:
            return f"dropped: missy stops at the first message that does not fit (#{self.cut_index}), so older messages are not considered"
        if code == MISSED and self.zone[i] == TAIL_ZONE:
            return f"dropped: trim_protected_tail removes the oldest fresh-tail messages until the tail fits the {hb:,}-token history budget"
        c, f = self.b.cumulative, self.fill
        j = int(self.b.position[i])
        t = int(self.tokens[i])
        if code == MISSED:
            left = f.remaining - int(c[f.end] - c[f.keep])
            return f"dropped: {t:,} tokens did not fit in the {left:,} left of the {hb:,}-token history budget"
        left = f.remaining - int(c[f.end] - c[j + 1])
        return f"kept: {t:,} tokens fit in the {left:,} left of the {hb:,}-token history budget (filled newest first)"


def plan_columns(session: Session, budget: Budget, counts: TokenCounts) -> Plan:
    b = build_of(session, counts)
    count = counts.text
    enriched, memory_tokens, learnings_tokens, notes = enrich_system_prompt(b.base_system, session.memory, session.learnings, budget, count)
    hb = budget.history_budget
    c = b.cumulative
    size = len(b.history)
    n = budget.fresh_tail_count
    end = size if n <= 0 else max(0, size - n)

    used = b.new_tokens + int(c[size] - c[end])
    tail = end
    tail_over = used > hb
    if tail_over and budget.trim_protected_tail:
        # The oldest tail messages go while the rest is over: the first position whose tail fits.
        tail = min(size, end + int(np.searchsorted(c[end:], int(c[size]) + b.new_tokens - hb, side="left")))
        used = b.new_tokens + int(c[size] - c[tail])
        notes.append(f"trim_protected_tail dropped the oldest fresh-tail messages; {used:,} of {hb:,} history tokens remain")
        tail_over = used > hb
    tail_reason = fresh_tail_reason(n, used, hb, tail_over, notes)

    summary_plans: list[SummaryPlan] = []
    summary_messages: list[dict[str, Any]] = []
    for i, summary in enumerate(session.summaries):
        text = format_summary(summary)
        t = count(text)
        if i in b.superseded:
            summary_plans.append(SummaryPlan(i, t, Decision.DROPPED, "dropped: superseded by a later recorded summary, which covers every "
                                             "message of the file this one covers", text))
            continue
        if used + t > hb:
            summary_plans.append(SummaryPlan(i, t, Decision.DROPPED, f"dropped: {t:,} tokens did not fit in the {max(0, hb - used):,} left of "
                                             f"the {hb:,}-token history budget", text))
            continue
        summary_messages.append({"role": "user", "content": text})
        used += t
        summary_plans.append(SummaryPlan(i, t, Decision.KEPT, f"kept: {t:,} tokens fit in the {hb - used + t:,} left of the {hb:,}-token "
                                         "history budget", text))

    remaining = max(0, hb - used)
    # The newest evictable messages fit while their sum does: history[keep:end] with the counts'
    # prefix sum at keep at least c[end] - remaining; history[keep - 1] is the first misfit.
    keep = int(np.searchsorted(c[: end + 1], int(c[end]) - remaining, side="left"))
    used += int(c[end] - c[keep])
    fill = _Fill(end, tail, keep, remaining)

    tokens = counts.token_array
    at = b.history_at
    decision, zone, code = b.decision.copy(), b.zone.copy(), b.code.copy()
    if keep > 0:
        cut = at[keep - 1]
        code[cut] = MISSED  # decision DROPPED, zone evictable and after_cut below it, as built
    decision[at[keep:end]] = KEPT
    code[at[keep:end]] = FITS
    zone[at[end:]] = TAIL_ZONE
    code[at[end:tail]] = MISSED
    decision[at[tail:]] = KEPT
    code[at[tail:]] = FRESH_TAIL
    cut_index = b.history_index[keep - 1] if keep > 0 else None
    sent_tokens = np.where(decision == KEPT, tokens, 0)
    frozen_plans = tuple(summary_plans)
    why = _Why(b, budget, fill, tail_reason, frozen_plans, tokens, code, zone, cut_index)
    columns = Columns(session, decision, tokens, sent_tokens, zone, _ZONES, code, _CODES, partial(_reason, why))

    # What is sent is two runs of the history (the evictable messages that fit, the fresh tail):
    # handed over as runs, not copied (`Joined`), so a re-plan builds nothing per message.
    head = ({"role": "system", "content": enriched}, *summary_messages)
    last: tuple[Any, ...] = ()
    last_index: tuple[int, ...] = ()
    if b.new_message is not None:
        last, last_index = ({"role": "user", "content": b.new_message.openai_content()},), (b.new_message.index,)
    context = Joined((head, 0, len(head)), (b.history, keep, end), (b.history, tail, size), (last, 0, len(last)))
    context_index = Joined(((None,) * len(head), 0, len(head)), (b.history_index, keep, end), (b.history_index, tail, size),
                           (last_index, 0, len(last_index)))

    usage = {"system_reserve": b.base_system_tokens, "tool_definitions_reserve": b.tools_tokens, "memory": memory_tokens,
             "learnings": learnings_tokens, "history": used}
    allocation = {"system_reserve": budget.system_reserve, "tool_definitions_reserve": budget.tool_definitions_reserve,
                  "memory": budget.memory_budget, "learnings": budget.learnings_budget, "history": hb}
    kept_tokens = b.system_tokens + int(c[end] - c[keep]) + int(c[size] - c[tail]) + b.new_tokens
    kept_count = b.system_count + (end - keep) + (size - tail) + (b.new_message is not None)
    totals = Totals(budget=budget.total, used=sum(usage.values()), kept=kept_tokens, dropped=b.all_tokens - kept_tokens,
                    fits=all(usage[part] <= allocation[part] for part in allocation), kept_messages=kept_count,
                    dropped_messages=len(session.messages) - kept_count, fits_test="parts")
    return Plan(
        policy="missy", params=params_dict(budget), tokenizer=counts.scheme.label, allocation=allocation, usage=usage,
        system_prompt=enriched, messages=Rows(columns), context=Context(context), context_index=context_index, totals=totals,
        summaries=frozen_plans, zones=ZONES + (("summarized",) if b.covered else ()), notes=(*notes, *invisible_call_notes(session)),
        extra={"history_budget": hb, "history_used": used, "fresh_tail_start": b.history_index[tail] if tail < size else None,
               "cut_index": cut_index, "new_message_index": b.new_message.index if b.new_message is not None else None},
    )


def _reason(why: _Why, i: int) -> str:
    return why(i)
