"""ChatSummaryMemoryBuffer.get decided in columns: the same plan as `chat_summary_memory_buffer.plan_records`.

get() walks the chat store newest first and stops at the first message that does not fit, so what
it keeps as full text is the longest run of newest entries whose counts fit: a binary search on
the entries' running count. Everything else it needs (the chat store's entries, their counts and
roles, which message is which entry, the system prompt, the request entries) depends on the session
and its counts alone and is kept per session, as are the last few summaries it wrote; reasons are
built for the rows someone reads (engine/plan_rows.py).

tests/test_llamaindex_summary_columns.py checks it against `plan_records` on random sessions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, SUMMARIZED, Columns, Rows
from ...session import Message, Session
from ...wording import noun
from ..base import params_dict
from ..common import history_with_summaries
from .joined import llama_role, prefix_tokens, text_tokens
from .summary_input import shown_all

NAME = "llamaindex-chat-summary-memory-buffer"
ZONES = ("system", "summarized", "full_text")
STAND_IN = ("ctxviz's offline extractive snapshot stands in for the LLM's answer to LlamaIndex's SUMMARIZE_PROMPT; it is sent "
            "as LlamaIndex sends the answer: one SYSTEM message before the full-text messages")

_snapshots: OrderedDict[tuple[int, ...], tuple[list[Message], str]] = OrderedDict()
_snapshots_lock = threading.Lock()


def stand_in_summary(messages: list[Message]) -> str:
    """The offline snapshot of the messages to summarise. A slider move re-plans with the same
    messages to summarise most of the time, so the last few snapshots are kept (with the messages,
    so that their ids stay theirs)."""
    key = tuple(map(id, messages))
    with _snapshots_lock:
        hit = _snapshots.get(key)
        if hit is not None:
            _snapshots.move_to_end(key)
            return hit[1]
    from ...summarizers import supyagent_snapshot  # lazily: it imports urllib, which the engine need not load

    text = supyagent_snapshot(shown_all(messages))  # what LlamaIndex's summariser is shown of them
    with _snapshots_lock:
        _snapshots[key] = (messages, text)
        while len(_snapshots) > 8:
            _snapshots.popitem(last=False)
    return text


class SummaryParams(Protocol):
    """What this module reads of `ChatSummaryMemoryBufferParams` (named here so the modules import one way)."""

    llm: bool
    count_initial_tokens: bool
    initial_token_count: int | None
    system_messages_in_memory: bool

    @property
    def limit(self) -> int: ...


_CODES = ("system_prompt", "summarised", "fits", "kept", "missed", "after_cut", "start_rule", "dropped")
SYSTEM_PROMPT, SUMMARISED, FITS, PASSED, MISSED, AFTER_CUT, START_RULE, RAISED = range(len(_CODES))
_ZONE = {name: k for k, name in enumerate(ZONES)}


@dataclass(frozen=True)
class _Store:
    """The chat store get() sees, as columns: every entry (a message, or a recorded summary as a SYSTEM
    message where the messages it covers were) with its count and role, and where each message is."""

    system_messages: tuple[Message, ...]
    rest: tuple[Message, ...]
    system_prompt: str
    system_tokens: int
    summary_at: np.ndarray  # per entry: the summary it is (-1: a message)
    message_at: np.ndarray  # per entry: the message it is (-1: a summary)
    roles: tuple[str, ...]
    tokens: np.ndarray  # per entry: its count
    cumulative: np.ndarray  # cumulative[p]: the count of entries[:p]
    message_cumulative: np.ndarray  # the same over the messages' counts alone
    next_start: np.ndarray  # next_start[p]: the first entry at or after p the full text may start on
    entry_of: np.ndarray  # per message: its entry (-1: none)
    owner: np.ndarray  # per message of the memory: the summary that covers it (-1: none)
    system: np.ndarray  # per message: part of the system prompt (outside the memory)
    rank: np.ndarray  # per message of `rest`: its entry, or its covering summary's
    summary_tokens: tuple[int, ...]
    superseded: frozenset[int]
    context: tuple[Any, ...]  # per entry: what the request sends for it
    context_index: tuple[int | None, ...]
    #: The summaries get() wrote, by how many entries it summarised: (text, its tokens, summarised ids).
    written: OrderedDict[int, tuple[str, int, list[str]]] = field(default_factory=OrderedDict)


def chat_store(session: Session, counts: TokenCounts, in_memory: bool) -> _Store:
    return derived_from_counts(session, counts, (NAME, in_memory), lambda s, c: _derive(s, c, in_memory))


def _derive(session: Session, counts: TokenCounts, in_memory: bool) -> _Store:
    tokens = counts.message_tokens
    n = len(session.messages)
    system_messages, rest = ((), session.messages) if in_memory else session.system_and_history
    system_prompt, system_tokens = prefix_tokens(session, counts, list(system_messages))
    raw, covered_by, superseded = history_with_summaries(session, with_system=in_memory)
    summaries = session.summaries
    summary_tokens = tuple(text_tokens(counts, s.text) for s in summaries)
    entries = len(raw)
    summary_at = np.fromiter((e if isinstance(e, int) else -1 for e in raw), dtype=np.int64, count=entries)
    message_at = np.fromiter((-1 if isinstance(e, int) else e.index for e in raw), dtype=np.int64, count=entries)
    roles = tuple("system" if isinstance(e, int) else llama_role(e) for e in raw)
    entry_tokens = np.fromiter((summary_tokens[e] if isinstance(e, int) else tokens[e.index] for e in raw), dtype=np.int64, count=entries)
    cumulative = np.zeros(entries + 1, dtype=np.int64)
    np.cumsum(entry_tokens, out=cumulative[1:])
    message_cumulative = np.zeros(entries + 1, dtype=np.int64)
    np.cumsum(np.where(message_at >= 0, entry_tokens, 0), out=message_cumulative[1:])
    next_start = np.full(entries + 1, entries, dtype=np.int64)
    for p in range(entries - 1, -1, -1):
        next_start[p] = next_start[p + 1] if roles[p] in ("assistant", "tool") else p
    entry_of = np.full(n, -1, dtype=np.int64)
    entry_of[message_at[message_at >= 0]] = np.flatnonzero(message_at >= 0)
    owner = np.full(n, -1, dtype=np.int64)
    for m in rest:
        if m.id in covered_by:
            owner[m.index] = covered_by[m.id]
    system = np.zeros(n, dtype=bool)
    system[[m.index for m in system_messages]] = True
    summary_entry = {int(k): p for p, k in enumerate(summary_at.tolist()) if k >= 0}
    rank = np.fromiter((summary_entry.get(int(owner[m.index]), entries) if owner[m.index] >= 0 else entry_of[m.index] for m in rest),
                       dtype=np.int64, count=len(rest))
    context = tuple({"role": "system", "content": summaries[e].text} if isinstance(e, int) else e for e in raw)
    context_index = tuple(None if isinstance(e, int) else e.index for e in raw)
    return _Store(tuple(system_messages), tuple(rest), system_prompt, system_tokens, summary_at, message_at, roles, entry_tokens, cumulative,
                  message_cumulative, next_start, entry_of, owner, system, rank, summary_tokens, superseded, context, context_index)


def _written(store: _Store, counts: TokenCounts, q: int) -> tuple[str, int, list[str]]:
    """The summary get() writes of entries[:q] (and what the summaries among them cover): kept for
    the last few cuts, since a re-plan with the same cut writes the same summary."""
    hit = store.written.get(q)
    if hit is not None:
        store.written.move_to_end(q)
        return hit
    covered = [store.rest[j] for j in np.flatnonzero(store.rank < q).tolist()]
    text = stand_in_summary(covered)
    made = (text, text_tokens(counts, text), [m.id for m in covered])
    store.written[q] = made
    while len(store.written) > 8:
        store.written.popitem(last=False)
    return made


@dataclass
class _Why:
    """Message i's reason, as `plan_records` words it."""

    store: _Store
    params: SummaryParams
    limit: int
    initial: int
    token_count: int
    position: int  # the first entry kept as full text before the start rule
    q: int  # the first entry of the full text
    passed_through: int  # the lone SYSTEM message passed through (-1: none)
    raised: bool
    summary_fates: dict[int, Decision]

    def __call__(self, i: int) -> str:
        s, p = self.store, self.params
        if s.system[i]:
            return "kept: part of the system prompt, which the chat engine sends before the memory"
        k = int(s.owner[i])
        if k >= 0:
            fate = {Decision.KEPT: "which is sent in its place", Decision.SUMMARIZED: "which is summarised again",
                    Decision.DROPPED: "which is not sent"}[self.summary_fates.get(k, Decision.DROPPED)]
            return f"summarized: summary #{k + 1} (written by an earlier get(), or recorded) covers it, {fate}"
        e = int(s.entry_of[i])
        if self.raised:
            return f"dropped: get() raises because the {self.initial:,} initial tokens exceed token_limit {self.limit:,}"
        t = int(s.tokens[e])
        if e == self.passed_through:
            return f"kept: its {t:,} tokens no longer fit, but LlamaIndex passes a lone SYSTEM message through unsummarised"
        if e >= self.q:
            limit_left = self.limit - (self.initial if p.count_initial_tokens else 0)
            return f"kept: its {t:,} tokens fit in the {limit_left:,}-token full-text budget (newest first)"
        verb = "summarized" if p.llm else "dropped"
        fate = "summarised by the llm" if p.llm else "removed (no llm)"
        if e >= self.position:
            role = s.roles[e]
            return f"{verb}: the full text may not start with {'an' if role == 'assistant' else 'a'} {role} message, so it is {fate} with the older ones"
        if e == self.position - 1:
            return (f"{verb}: its {t:,} tokens did not fit in the {self.limit - self.token_count:,} left of token_limit {self.limit:,} "
                    f"(newest first; stops at the first misfit), so it is {fate}")
        return f"{verb}: older than the first message that did not fit, so it is {fate}"


def plan_columns(session: Session, params: SummaryParams, counts: TokenCounts) -> Plan:
    limit = params.limit
    s = chat_store(session, counts, params.system_messages_in_memory)
    summaries = session.summaries
    initial = s.system_tokens if params.initial_token_count is None else params.initial_token_count
    entries = len(s.roles)
    notes: list[str] = []
    raised = params.count_initial_tokens and initial > limit
    token_count = initial if params.count_initial_tokens else 0
    if raised:
        notes.append(f"ChatSummaryMemoryBuffer.get raises 'Initial token count exceeds token limit': {initial:,} initial tokens > token_limit {limit:,}")
        position = q = 0
        start = entries  # get() raises: nothing is sent as full text
    else:
        # Newest first while the count fits: the longest run of newest entries within what is left.
        total = int(s.cumulative[-1])
        position = int(np.searchsorted(s.cumulative, total - (limit - token_count), side="left"))
        token_count += total - int(s.cumulative[position])
        # LlamaIndex: the full text may not start with an assistant or tool message; they join the summarised part.
        q = start = int(s.next_start[position])
    earlier = s.summary_at[:q][s.summary_at[:q] >= 0].tolist()
    fates: dict[int, Decision] = dict.fromkeys(s.superseded, Decision.DROPPED)
    summary_why = dict.fromkeys(s.superseded, "dropped: superseded by a later summary, which covers every message of the file this one covers")
    summary_tokens = 0
    for k in s.summary_at[start:][s.summary_at[start:] >= 0].tolist():
        summary_tokens += s.summary_tokens[k]
        fates[k] = Decision.KEPT
        summary_why[k] = f"kept: an earlier summary (a SYSTEM message in the chat store) fits as full text ({s.summary_tokens[k]:,} tokens)"
    head: tuple[Any, ...] = ({"role": "system", "content": s.system_prompt},) if s.system_prompt else ()
    passed_through = -1
    new_summary_text = ""
    summarized_ids: list[str] = []
    if raised:
        for k in earlier:
            fates[k], summary_why[k] = Decision.DROPPED, "dropped: get() raises"
    elif q and params.llm and q == 1 and earlier:
        # LlamaIndex passes a lone SYSTEM message (an earlier summary) through unchanged.
        k = earlier[0]
        summary_tokens += s.summary_tokens[k]
        head += ({"role": "system", "content": summaries[k].text},)
        fates[k] = Decision.KEPT
        summary_why[k] = ("kept: the earlier summary no longer fits as full text, but LlamaIndex passes a lone SYSTEM "
                          "message through unsummarised")
    elif q and params.llm and q == 1 and s.roles[0] == "system":
        # ... and so a lone system message of the memory's own (system_messages_in_memory).
        passed_through = start = 0
    elif q and params.llm:
        new_summary_text, new_tokens, summarized_ids = _written(s, counts, q)
        summary_tokens += new_tokens
        head += ({"role": "system", "content": new_summary_text},)
        for k in earlier:
            fates[k] = Decision.SUMMARIZED
            summary_why[k] = "summarized: the earlier summary no longer fits as full text, so the llm summarises it again with the messages that follow it"
        notes.append(f"{q:,} {noun(q, 'message')} {'no longer fits and is' if q == 1 else 'no longer fit and are'} summarised into one SYSTEM message "
                     f"({new_tokens:,} tokens, not counted against token_limit); {STAND_IN}")
    else:
        for k in earlier:
            fates[k], summary_why[k] = Decision.DROPPED, "dropped: it no longer fits, and without an llm what no longer fits is removed"
    full_tokens = int(s.message_cumulative[-1] - s.message_cumulative[start])
    context = head + s.context[start:]
    context_index = (None,) * len(head) + s.context_index[start:]
    summary_plans = tuple(SummaryPlan(k, s.summary_tokens[k], fates.get(k, Decision.DROPPED), summary_why.get(k, "dropped: not in the chat store"),
                                      summaries[k].text) for k in range(len(summaries)))

    tokens = counts.token_array
    n = len(tokens)
    entry = s.entry_of
    at = np.where(entry >= 0, entry, 0)
    in_store = entry >= 0
    code = np.full(n, FITS, dtype=np.int16)
    zone = np.full(n, _ZONE["full_text"], dtype=np.int16)
    decision = np.full(n, KEPT, dtype=np.int8)
    if raised:
        decision[in_store] = DROPPED
        code[in_store] = RAISED
    else:
        gone = in_store & (at < start)
        if params.llm:
            decision[gone] = SUMMARIZED
            zone[gone] = _ZONE["summarized"]
            code[gone] = SUMMARISED
        else:
            decision[gone] = DROPPED
            code[gone & (at < position - 1)] = AFTER_CUT
            code[gone & (at == position - 1)] = MISSED
            code[gone & (at >= position)] = START_RULE
        if passed_through >= 0:
            code[int(s.message_at[passed_through])] = PASSED
    covered = s.owner >= 0
    decision[covered] = SUMMARIZED
    zone[covered] = _ZONE["summarized"]
    code[covered] = SUMMARISED
    decision[s.system] = KEPT
    zone[s.system] = _ZONE["system"]
    code[s.system] = SYSTEM_PROMPT
    sent = decision == KEPT
    sent_tokens = np.where(sent, tokens, 0)
    why = _Why(s, params, limit, initial, token_count, position, start, passed_through, raised, fates)
    columns = Columns(session, decision, tokens, sent_tokens, zone, ZONES, code, _CODES, partial(_reason, why))

    counted_initial = initial if params.count_initial_tokens else 0
    uncounted_system = 0 if params.count_initial_tokens else s.system_tokens
    usage = {"initial": counted_initial, "system": uncounted_system, "summary": summary_tokens, "full_text": full_tokens}
    # Caps: token_limit bounds the counted initial tokens and the full text; the uncounted system
    # prompt and the summary are sent outside it (their caps are what they use, up to the limit
    # itself: a summary or prompt larger than the whole token_limit is shown over).
    allocation = {"initial": min(counted_initial, limit), "system": min(uncounted_system, limit), "summary": min(summary_tokens, limit),
                  "full_text": max(0, limit - counted_initial)}
    used = sum(usage.values())
    kept = int(sent_tokens.sum())
    kept_messages = int(sent.sum())
    totals = Totals(budget=limit, used=used, kept=kept, dropped=int(tokens.sum()) - kept, fits=all(usage[p] <= a for p, a in allocation.items()),
                    kept_messages=kept_messages, dropped_messages=n - kept_messages, fits_test="parts", allocation_kind="caps")
    if summary_tokens and not params.count_initial_tokens:
        notes.append("the summary and the system prompt are sent outside token_limit (count_initial_tokens is off and LlamaIndex never counts the summary it writes)")
    return Plan(
        policy=NAME, params={**params_dict(params), "token_limit": limit, "initial_token_count": initial},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=s.system_prompt, messages=Rows(columns),
        context=Context(context), context_index=context_index, totals=totals, summaries=summary_plans,
        zones=ZONES, notes=tuple(notes),
        extra={"token_count": token_count, "summary_text": new_summary_text, "summarized_ids": summarized_ids, "raised": raised},
    )


def _reason(why: _Why, i: int) -> str:
    return why(i)
