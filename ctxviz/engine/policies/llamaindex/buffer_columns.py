"""ChatMemoryBuffer.get decided in columns: the same plan as `chat_memory_buffer.plan_records`, with
no record or request dict per message.

get() shortens the window from the oldest end, one start at a time (skipping starts on an assistant
or tool message), until the joined window fits the limit. What the window starting at each entry
costs depends on the session and its counts alone, so it is computed once per session and counting
scheme (`counting.derived_from_counts`), with the entries, their roles and where each message sits;
a re-plan is then one vectorised search for the first start that fits, and each reason is built for
the row someone reads.

tests/test_llamaindex_buffer_columns.py checks it against `plan_records` on random sessions and
parameters, the samples and the real logs, and on re-plans of one session after a change.
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
from ..base import params_dict
from ..common import history_with_summaries, with_system_messages
from .joined import (
    Entry,
    JoinedCounter,
    _drop_reason,
    _start_rule,
    entry_role,
    joined_counter,
    prefix_tokens,
    text_tokens,
)

NAME = "llamaindex-chat-memory-buffer"
ZONES = ("system", "history")
_ZONES = (*ZONES, "summarized")
SYSTEM_ZONE, HISTORY_ZONE, SUMMARIZED_ZONE = range(len(_ZONES))
_CODES = ("system_prompt", "fits", "fresh_tail", "missed", "after_cut", "start_rule", "summarised", "dropped")
SYSTEM_PROMPT, FITS, FRESH_TAIL, MISSED, AFTER_CUT, START_RULE, SUMMARISED, RAISED = range(len(_CODES))


class BufferParams(Protocol):
    """What this module reads of `chat_memory_buffer.ChatMemoryBufferParams`."""

    initial_token_count: int | None
    system_messages_in_memory: bool

    @property
    def limit(self) -> int: ...


@dataclass(frozen=True, eq=False)
class Store:
    """The chat store get() reads, under one counting scheme, whatever the limit."""

    system_messages: tuple[Message, ...]  # the chat engine's prefix messages (none when they are in memory)
    system_prompt: str
    system_tokens: int
    entries: tuple[Entry, ...]
    roles: list[str]
    counter: JoinedCounter
    window_total: np.ndarray  # int64: the joined window's tokens when it starts at each entry
    candidate: np.ndarray  # bool: a start get() tries (the first, the last, any not on an assistant or tool message)
    not_start_rule: np.ndarray  # bool: an entry get() would leave out for the limit, not for the start rule
    entry_at: np.ndarray  # int64: each entry's session index, -1 for a recorded summary
    message_entry: np.ndarray  # int64 per session message: its entry, -1 for none
    entry_index: tuple[int | None, ...]  # each entry's session index, None for a summary
    covered: dict[str, int]
    superseded: frozenset[int]
    summary_of: np.ndarray  # int64 per session message: the recorded summary in its place, -1 for none
    decision: np.ndarray  # int8: the system and summarised messages decided (the entries per plan)
    zone: np.ndarray
    code: np.ndarray


def store_of(session: Session, counts: TokenCounts, in_memory: bool) -> Store:
    return derived_from_counts(session, counts, ("llamaindex-buffer", in_memory), partial(_store, in_memory=in_memory))


def _store(session: Session, counts: TokenCounts, in_memory: bool) -> Store:
    system_messages = () if in_memory else tuple(session.system_and_history[0])
    system_prompt, system_tokens = prefix_tokens(session, counts, list(system_messages))
    entries, covered, superseded = history_with_summaries(session)
    if in_memory and session.system_and_history[0]:
        entries = with_system_messages(entries, session.system_and_history[0])
    roles = [entry_role(e) for e in entries]
    counter = joined_counter(session, entries, counts, in_memory)
    n = len(entries)
    window_total = np.fromiter((counter.window_total(j) for j in range(n)), dtype=np.int64, count=n)
    not_start_rule = np.fromiter((not _start_rule(roles, k) for k in range(n)), dtype=bool, count=n)
    candidate = not_start_rule.copy()
    if n:
        candidate[0] = candidate[n - 1] = True
    entry_index = tuple(None if isinstance(e, int) else e.index for e in entries)
    entry_at = np.fromiter((-1 if k is None else k for k in entry_index), dtype=np.int64, count=n)
    size = len(session.messages)
    message_entry = np.full(size, -1, dtype=np.int64)
    on = entry_at >= 0
    message_entry[entry_at[on]] = np.flatnonzero(on)
    decision = np.full(size, DROPPED, dtype=np.int8)
    zone = np.full(size, HISTORY_ZONE, dtype=np.int16)
    code = np.full(size, AFTER_CUT, dtype=np.int16)
    system_at = [m.index for m in system_messages]
    decision[system_at], zone[system_at], code[system_at] = KEPT, SYSTEM_ZONE, SYSTEM_PROMPT
    summary_of = np.full(size, -1, dtype=np.int64)
    if covered:
        for m in session.system_and_history[1]:
            k = covered.get(m.id)
            if k is not None:
                summary_of[m.index] = k
        at = summary_of >= 0
        decision[at], zone[at], code[at] = SUMMARIZED, SUMMARIZED_ZONE, SUMMARISED
    return Store(system_messages, system_prompt, system_tokens, tuple(entries), roles, counter, window_total, candidate, not_start_rule,
                 entry_at, message_entry, entry_index, covered, superseded, summary_of, decision, zone, code)


class _Why:
    """Message i's reason, as `plan_records` words it."""

    def __init__(self, st: Store, code: np.ndarray, kept_reason: str, raised_reason: str, summary_decisions: dict[int, tuple[Decision, str]],
                 initial: int, limit: int, cut_reason: str, missed_at: int) -> None:
        self.st, self.code, self.kept_reason, self.raised_reason = st, code, kept_reason, raised_reason
        self.summary_decisions, self.initial, self.limit, self.cut_reason, self.missed_at = summary_decisions, initial, limit, cut_reason, missed_at

    def __call__(self, i: int) -> str:
        c = self.code[i]
        if c == SYSTEM_PROMPT:
            return "kept: part of the system prompt, which the chat engine sends before the memory"
        if c in (FITS, FRESH_TAIL):
            return self.kept_reason
        if c == RAISED:
            return self.raised_reason
        if c == SUMMARISED:
            k = int(self.st.summary_of[i])
            sent = self.summary_decisions[k][0] is Decision.KEPT
            return f"summarized: recorded summary #{k + 1} covers it" + (" and is sent in its place" if sent else "; the summary itself is not sent")
        k = int(self.st.message_entry[i])
        return _drop_reason(self.st.roles, k, self.st.counter, self.initial, self.limit, self.cut_reason, self.missed_at)[0]


def raise_note(initial_token_count: int | None, initial: int, limit: int) -> str:
    """The note of a get() that raises because the initial tokens alone exceed token_limit (both
    plans word it alike)."""
    initial_from = ("the system prompt's tokens, counted as LlamaIndex's chat engines count prefix messages"
                    if initial_token_count is None else "initial_token_count")
    return (f"ChatMemoryBuffer.get raises 'Initial token count exceeds token limit': {initial_from} is {initial:,} > "
            f"token_limit {limit:,}; no history is returned")


def plan_columns(session: Session, params: BufferParams, counts: TokenCounts) -> Plan:
    limit = params.limit
    st = store_of(session, counts, params.system_messages_in_memory)
    initial = st.system_tokens if params.initial_token_count is None else params.initial_token_count
    notes: list[str] = []
    n = len(st.entries)
    start = n
    window_tokens = 0
    shares: list[int] = []
    cut_reason = ""
    raised = initial > limit
    if raised:
        notes.append(raise_note(params.initial_token_count, initial, limit))
    elif n:
        # get()'s loop: the first start it tries (oldest first) whose window fits, else the newest message alone.
        fits = st.candidate & (st.window_total + initial <= limit)
        first = int(np.argmax(fits))
        if fits[first]:
            start = first
        else:
            start, cut_reason = n - 1, "last"
        window_tokens, shares = st.counter.window(start)
    total = initial + window_tokens
    if cut_reason == "last":
        notes.append(f"even the newest message alone ({window_tokens:,} tokens, plus {initial:,} initial) exceeds token_limit {limit:,}: "
                     "ChatMemoryBuffer returns it anyway, so the LLM call fails loudly")
        kept_code = FRESH_TAIL
        kept_reason = (f"kept: the newest message is returned alone even though the window ({window_tokens:,} tokens + {initial:,} initial) "
                       f"exceeds token_limit {limit:,} (LlamaIndex lets the LLM raise the error)")
    else:
        kept_code = FITS
        kept_reason = f"kept: the newest {n - start} messages join to {window_tokens:,} tokens, within token_limit {limit:,} with {initial:,} initial"
    raised_reason = f"dropped: get() raises because the {initial:,} initial tokens exceed token_limit {limit:,}"
    below = np.flatnonzero(st.not_start_rule[:start])
    missed_at = int(below[-1]) if len(below) else -1

    summary_decisions: dict[int, tuple[Decision, str]] = {k: (Decision.DROPPED, "dropped: superseded by a later recorded summary, which "
                                                                               "covers every message of the file this one covers")
                                                          for k in st.superseded}
    for k in np.flatnonzero(st.entry_at < 0).tolist():
        entry = st.entries[k]
        assert isinstance(entry, int)
        if k >= start:
            summary_decisions[entry] = (Decision.KEPT, "kept: a recorded summary, in the chat store as a SYSTEM message where the messages "
                                                       f"it covers were; {kept_reason.removeprefix('kept: ')}")
        elif raised:
            summary_decisions[entry] = (Decision.DROPPED, raised_reason)
        else:
            summary_decisions[entry] = (Decision.DROPPED, "dropped: a recorded summary (a SYSTEM message in the chat store); "
                                        + _drop_reason(st.roles, k, st.counter, initial, limit, cut_reason, missed_at)[0].removeprefix("dropped: "))

    tokens = counts.token_array
    decision, zone, code = st.decision.copy(), st.zone.copy(), st.code.copy()
    sent_tokens = np.zeros(len(tokens), dtype=np.int64)
    system_at = [m.index for m in st.system_messages]
    sent_tokens[system_at] = tokens[system_at]
    at = st.entry_at
    if raised:
        code[at[at >= 0]] = RAISED
    else:
        before = at[:start]
        on = before >= 0
        code[before[on & ~st.not_start_rule[:start]]] = START_RULE
        if 0 <= missed_at and at[missed_at] >= 0:
            code[at[missed_at]] = MISSED
        after = at[start:]
        on = after >= 0
        decision[after[on]] = KEPT
        code[after[on]] = kept_code
        sent_tokens[after[on]] = np.array(shares, dtype=np.int64)[on]
    why = _Why(st, code, kept_reason, raised_reason, summary_decisions, initial, limit, cut_reason, missed_at)
    columns = Columns(session, decision, tokens, sent_tokens, zone, _ZONES, code, _CODES, partial(_reason, why))

    summary_plans = []
    for k, summary in enumerate(session.summaries):
        d, reason = summary_decisions.get(k, (Decision.DROPPED, "dropped: not in the chat store"))
        summary_plans.append(SummaryPlan(k, text_tokens(counts, summary.text), d, reason, summary.text))
    head: tuple[Any, ...] = ({"role": "system", "content": st.system_prompt},) if st.system_prompt else ()
    context = head + tuple({"role": "system", "content": session.summaries[e].text} if isinstance(e, int) else e for e in st.entries[start:])
    context_index = (None,) * len(head) + st.entry_index[start:]
    sent = decision == KEPT
    kept = int(tokens[sent].sum())
    kept_messages = int(sent.sum())
    totals = Totals(budget=limit, used=total, kept=kept, dropped=int(tokens.sum()) - kept, fits=total <= limit and not raised,
                    kept_messages=kept_messages, dropped_messages=len(tokens) - kept_messages, fits_test="parts")
    first_sent = st.entries[start] if start < n else None
    return Plan(
        policy=NAME, params={**params_dict(params), "token_limit": limit, "initial_token_count": initial},
        tokenizer=counts.scheme.label, allocation={"initial": min(initial, limit), "history": max(0, limit - initial)},
        usage={"initial": initial, "history": window_tokens}, system_prompt=st.system_prompt, messages=Rows(columns), context=Context(context),
        context_index=context_index, totals=totals, summaries=tuple(summary_plans), zones=ZONES + (("summarized",) if st.covered else ()),
        notes=tuple(notes),
        extra={"token_count": total, "start_index": first_sent.index if isinstance(first_sent, Message) else None, "raised": raised,
               "last_message_only": cut_reason == "last"},
    )


def _reason(why: _Why, i: int) -> str:
    return why(i)
