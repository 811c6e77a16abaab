"""supyagent's build_messages_for_llm decided in columns: the same plan as
`context_manager.plan_records`, with no record or request dict per message.

What the build reads of a session does not depend on the settings: the system prompt and its
count, the tool definitions' count, the latest summary and where it sits in the history, and each
history message's charge (its count plus 3: supyagent measures it as a one-message list). That is
kept per session and counting scheme (`counting.derived_from_counts`), with the charges summed
newest first. The fill then is one binary search: the newest messages are taken while they fit
(the `min_recent_messages` newest always), and the first that does not fit is where supyagent
stops, so what is sent is one run of history ending at the newest message. The messages go out as
the session's own (`Context` builds their request form when read) and the reasons are built for
the rows someone reads.

Emergency truncation can only change a message between the protected ends of the list; when it
would, the step-by-step `plan_records` plans instead (in a build only the protected messages can
overflow, so it does not happen).

tests/test_supyagent_columns.py checks it against `plan_records` on random sessions and settings,
the samples and the real logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, SUMMARIZED, Columns, Rows
from ...session import Message, Session, Summary
from ..base import params_dict
from ..common import base_system_prompt, tools_json
from .messages import (
    SUMMARY_SHARE,
    ZONES,
    count_message_dict,
    get_context_limit,
    summary_last_index,
    summary_message,
    trigger_figures,
)

SYSTEM_ZONE, SUMMARIZED_ZONE, EVICTABLE_ZONE, RECENT_ZONE = range(len(ZONES))
_CODES = ("system_prompt", "summarised", "fresh_tail", "fits", "missed", "after_cut")
SYSTEM_PROMPT, SUMMARISED, FRESH_TAIL, FITS, MISSED, AFTER_CUT = range(len(_CODES))


class Settings(Protocol):
    """What this module reads of `context_manager.ContextSettings`."""

    max_messages_before_summary: int
    max_tokens_before_summary: int
    min_recent_messages: int
    response_reserve: int
    context_limit: int | None
    trim_protected_tail: bool


@dataclass(frozen=True, eq=False)
class Build:
    """What the build reads of one session under one counting scheme, whatever the settings."""

    system_index: np.ndarray  # the system-role messages (sent inside the system prompt)
    history: tuple[Message, ...]  # every other message, in order
    history_index: tuple[int, ...]
    history_at: np.ndarray  # int64: the session index of each history message
    position: np.ndarray  # int64 per session message: its position in the history, -1 for a system message
    newest_first: np.ndarray  # int64: newest_first[k] = the charges (count + 3) of the k+1 newest history messages
    history_total: int  # count_messages_tokens(history): 3 + the counts
    system_message: dict[str, str]
    system_tokens: int  # 3 + its count: what the build charges the system prompt
    tools_tokens: int
    summary: Summary | None  # the latest recorded summary
    summary_idx: int | None  # its last_message_idx in the history
    summary_size: int  # its message's count
    summary_entry: dict[str, str] | None


def build_of(session: Session, counts: TokenCounts) -> Build:
    return derived_from_counts(session, counts, "supyagent", _build)


def _build(session: Session, counts: TokenCounts) -> Build:
    tok = counts.tokenizer
    system_messages, history = session.system_and_history
    tokens = counts.token_array
    n = len(session.messages)
    history_index = session.history_columns[0]
    history_at = np.asarray(history_index, dtype=np.int64)
    position = np.full(n, -1, dtype=np.int64)
    position[history_at] = np.arange(len(history_at))
    newest_first = np.cumsum(tokens[history_at[::-1]] + 3) if len(history_at) else np.zeros(0, dtype=np.int64)
    system_prompt = base_system_prompt(session, list(system_messages))
    system_message = {"role": "system", "content": system_prompt}
    tools = tools_json(session)
    summary = session.summaries[-1] if session.summaries else None
    entry = summary_message(summary) if summary is not None else None
    return Build(
        np.fromiter((m.index for m in system_messages), dtype=np.int64, count=len(system_messages)), history, history_index, history_at,
        position, newest_first, 3 + int(tokens[history_at].sum()), system_message, 3 + count_message_dict(system_message, tok),
        counts.text(tools) if tools else 0, summary, summary_last_index(summary, list(history)) if summary is not None else None,
        count_message_dict(entry, tok) if entry is not None else 0, entry,
    )


class _Why:
    """The reason sentence of message i, as `plan_records` words it."""

    def __init__(self, b: Build, tokens: np.ndarray, code: np.ndarray, zone: np.ndarray, available: int, recent: int, limit: int,
                 cut: int | None) -> None:
        self.b, self.tokens, self.code, self.zone, self.available, self.recent, self.limit, self.cut = \
            b, tokens, code, zone, available, recent, limit, cut

    def left(self, i: int) -> int:
        """What was left when the fill reached message i: the budget less the newer messages' charges."""
        rank = len(self.b.history) - 1 - int(self.b.position[i])
        return self.available - (int(self.b.newest_first[rank - 1]) if rank else 0)

    def charged(self, i: int) -> str:
        t = int(self.tokens[i])
        return f"{t + 3:,} tokens as supyagent charges it (its {t:,} plus 3: it measures each message as a one-message list)"

    def __call__(self, i: int) -> str:
        code = self.code[i]
        if code == SYSTEM_PROMPT:
            return "kept: part of the system prompt, which supyagent always sends first"
        if code == SUMMARISED:
            return f"summarized: covered by the summary of {self.b.summary.messages_covered if self.b.summary else 0} messages sent in its place"
        if code == AFTER_CUT:
            return f"dropped: supyagent stops at the first message that does not fit (#{self.cut})"
        left = self.left(i)
        if code == MISSED:
            return f"dropped: the {self.charged(i)} did not fit in the {max(left, 0):,} left of the {self.limit:,}-token context limit after reserves"
        if code == FITS:
            return f"kept: the {self.charged(i)} fit in the {left:,} left (filled newest first)"
        forced = int(self.tokens[i]) + 3 > left
        return (f"kept: one of the {self.recent} most recent messages, always included"
                + (f" even though the {self.charged(i)} exceed the {max(left, 0):,} left" if forced else ""))


def plan_columns(session: Session, settings: Settings, counts: TokenCounts) -> Plan | None:
    """The plan in columns, or None where emergency truncation would change a message."""
    b = build_of(session, counts)
    tokens = counts.token_array
    n = len(session.messages)
    h = len(b.history)
    limit = settings.context_limit or get_context_limit(session.model)
    available = limit - settings.response_reserve - b.tools_tokens - b.system_tokens

    summary, summary_plans = b.summary, []
    start = 0
    summary_kept = False
    if summary is not None and b.summary_idx is not None and b.summary_idx < h:
        t = 3 + b.summary_size  # count_messages_tokens([summary_msg])
        share = available * SUMMARY_SHARE
        charge = f"{t:,} tokens as supyagent charges it (its {b.summary_size:,} plus 3 for the one-message list)"
        text = b.summary_entry["content"] if b.summary_entry is not None else ""
        if t < share:  # strict
            available -= t
            start = b.summary_idx + 1
            summary_kept = True
            summary_plans.append(SummaryPlan(len(session.summaries) - 1, b.summary_size, Decision.KEPT,
                                             f"kept: {charge} are under 30 % of the {max(0, available + t):,} available ({share:,.0f})", text))
        else:
            summary_plans.append(SummaryPlan(len(session.summaries) - 1, b.summary_size, Decision.DROPPED,
                                             f"dropped: {charge} are not under 30 % of the {max(0, available):,} available ({share:,.0f})", text))
    summary_plans[:0] = [SummaryPlan(i, 0, Decision.DROPPED, "dropped: supyagent keeps only the latest summary", s.text)
                         for i, s in enumerate(session.summaries[:-1])]

    # Newest first, the k+1 newest cost newest_first[k]: the (k+1)-th is taken while that is within
    # `available`, and the min_recent_messages newest whatever they cost (unless trim_protected_tail).
    candidates = h - start
    fitting = int(np.searchsorted(b.newest_first[:candidates], available, side="right"))
    protected = 0 if settings.trim_protected_tail else min(settings.min_recent_messages, candidates)
    taken = max(protected, fitting)
    kept_lo = h - taken  # history[kept_lo:] is sent
    cut = kept_lo - 1 if taken < candidates else None  # the history position where supyagent stops
    history_tokens = (int(b.newest_first[taken - 1]) if taken else 0) - 3 * taken

    target = limit - settings.response_reserve
    total = b.system_tokens + (b.summary_size if summary_kept else 0) + history_tokens + b.tools_tokens
    notes: list[str] = []
    if total > target:
        length = 1 + summary_kept + taken  # the list: system prompt, summary, messages
        protected_start = 2 if length > 2 else 1
        protected_end = min(settings.min_recent_messages, length - protected_start)
        if protected_start < length - protected_end:
            return None  # emergency truncation changes a message: plan_records follows it step by step
        notes.append(f"emergency truncation: {total:,} tokens exceed the {target:,} left after the response reserve")
        notes.append(f"still {total - target:,} tokens over after emergency truncation: the protected messages alone are too big")

    at = b.history_at
    decision = np.full(n, DROPPED, dtype=np.int8)
    zone = np.full(n, EVICTABLE_ZONE, dtype=np.int16)
    code = np.full(n, AFTER_CUT, dtype=np.int16)
    decision[b.system_index] = KEPT
    zone[b.system_index] = SYSTEM_ZONE
    code[b.system_index] = SYSTEM_PROMPT
    covered = at[:start]
    decision[covered] = SUMMARIZED
    zone[covered] = SUMMARIZED_ZONE
    code[covered] = SUMMARISED
    decision[at[kept_lo:]] = KEPT
    code[at[kept_lo:]] = FITS
    recent = at[h - min(taken, settings.min_recent_messages):] if settings.min_recent_messages else at[:0]
    zone[recent] = RECENT_ZONE
    code[recent] = FRESH_TAIL
    cut_index = int(at[cut]) if cut is not None else None
    if cut_index is not None:
        code[cut_index] = MISSED
    sent_tokens = np.where(decision == KEPT, tokens, 0)
    why = _Why(b, tokens, code, zone, available, settings.min_recent_messages, limit, cut_index)
    columns = Columns(session, decision, tokens, sent_tokens, zone, ZONES, code, _CODES, partial(_reason, why))

    head: tuple[Any, ...] = (b.system_message, b.summary_entry) if summary_kept else (b.system_message,)
    context = Context(head + b.history[kept_lo:])
    context_index = (None,) * len(head) + b.history_index[kept_lo:]

    summary_used = b.summary_size if summary_kept else 0
    allocation = {
        "response_reserve": settings.response_reserve,
        "tool_definitions": b.tools_tokens,
        "system": b.system_tokens,
        "summary": summary_used,
        "history": limit - settings.response_reserve - b.tools_tokens - b.system_tokens - summary_used,
    }
    usage = {"response_reserve": 0, "tool_definitions": b.tools_tokens, "system": b.system_tokens, "summary": summary_used, "history": history_tokens}
    kept_tokens = int(sent_tokens.sum())
    kept_messages = len(b.system_index) + taken
    totals = Totals(budget=limit, used=total, kept=kept_tokens, dropped=int(tokens.sum()) - kept_tokens, fits=total <= target,
                    kept_messages=kept_messages, dropped_messages=n - kept_messages, fits_test="parts")
    status = trigger_figures(h, b.history_total, b.summary_idx, settings)
    return Plan(
        policy="supyagent", params={**params_dict(settings), "context_limit": limit}, tokenizer=counts.scheme.label,
        allocation=allocation, usage=usage, system_prompt=b.system_message["content"], messages=Rows(columns), context=context,
        context_index=context_index, totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"context_limit": limit, "trigger": status.to_json(), "emergency_truncation": total > target,
               "tools": len(session.tools), "tool_tokens": b.tools_tokens, "summary_tokens": b.summary_size,
               "summary_messages": summary.messages_covered if summary else 0,
               "summary_created": summary.created_at if summary else ""},
    )


def _reason(why: _Why, i: int) -> str:
    return why(i)
