"""`trim_messages` decided in columns: the same plan as `trim.plan_records`, at C speed.

`trim.plan_records` follows LangChain's code step for step over a list of entries, which costs a
Python record per message on every re-plan. With the default counter (count_tokens_approximately
with its defaults: a list counts the sum of its messages' counts) and without `allow_partial`,
every list trim_messages counts is a run of consecutive entries, so each count is a difference of
prefix sums, and what it keeps is one run of entries (plus the leading system message). This
module computes that run with the same binary search, on the prefix sums, and hands the plan over
as columns whose reasons are built for the rows someone reads. The entries themselves depend only
on the session and its counts, so they are kept per session: a parameter change re-plans without
touching a message.

tests/test_trim_columns.py checks it against `plan_records` on random sessions and parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Joined, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, SUMMARIZED, Columns, Rows
from ...session import Session
from ...wording import noun
from ..base import params_dict
from .counting import SUMMARY_POS, summary_view
from .entries import base_type, parse_types, session_entries


class TrimParams(Protocol):
    """What this module reads of `trim.TrimParams` (named here so the two modules import one way)."""

    max_tokens: float
    strategy: str
    allow_partial: bool
    end_on: str
    start_on: str
    include_system: bool

    @property
    def default_counter(self) -> bool: ...

    @property
    def budget(self) -> int: ...

_ZONES = ("system", "history", "summarized")
_CODES = ("system_prompt", "fits", "summarised", "start_rule", "missed", "after_cut")
SYSTEM_PROMPT, FITS, SUMMARISED, START_RULE, MISSED, AFTER_CUT = range(len(_CODES))


@dataclass(frozen=True)
class _Entries:
    """The messages LangChain receives (`trim.session_entries`), as columns: each entry's position
    (a message index; -1 the system prompt; SUMMARY_POS - k the k-th summary), count and type."""

    pos: np.ndarray
    tokens: np.ndarray
    types: tuple[str, ...]
    cumulative: np.ndarray  # cumulative[k] = the count of entries[:k]
    prompt_tokens: int
    covered: np.ndarray  # per message: an earlier summary replaced it


def entries_of(session: Session, counts: TokenCounts) -> _Entries:
    return derived_from_counts(session, counts, "langchain-trim", _entries)


def _entries(session: Session, counts: TokenCounts) -> _Entries:
    listed, prompt_tokens = session_entries(session, counts)
    covered_ids = {c for s in session.summaries for c in s.covers}
    n = len(session.messages)
    covered = (np.fromiter((i in covered_ids for i in session.message_columns[0]), dtype=bool, count=n) if covered_ids
               else np.zeros(n, dtype=bool))
    tokens = np.fromiter((e.tokens for e in listed), dtype=np.int64, count=len(listed))
    cumulative = np.zeros(len(listed) + 1, dtype=np.int64)
    np.cumsum(tokens, out=cumulative[1:])
    return _Entries(np.fromiter((e.pos for e in listed), dtype=np.int64, count=len(listed)), tokens, tuple(e.type for e in listed),
                    cumulative, prompt_tokens, covered)


@dataclass
class _Run:
    """What trim_messages keeps: entries lo..hi-1 (and the leading system entry), and why the others went."""

    lo: int
    hi: int
    system: int | None = None  # the entry kept by include_system (always entry 0)
    end_on: tuple[int, ...] = ()  # entries end_on removed
    start_on: tuple[int, ...] = ()  # entries start_on removed
    cut: int | None = None  # the first entry the budget could not take


def _fits(cumulative: np.ndarray, lo: int, hi: int, max_tokens: int) -> bool:
    return int(cumulative[hi] - cumulative[lo]) <= max_tokens


def _first_max(cumulative: np.ndarray, lo: int, hi: int, max_tokens: int, reverse: bool) -> int:
    """utils._first_max_tokens' binary search over the list entries[lo:hi] (reversed for 'last'):
    how many entries from its start fit, with LangChain's own iterations."""
    length = hi - lo
    left, right = 0, length
    for _ in range(length.bit_length()):
        if left >= right:
            break
        mid = (left + right + 1) // 2
        fits = _fits(cumulative, hi - mid, hi, max_tokens) if reverse else _fits(cumulative, lo, lo + mid, max_tokens)
        if fits:
            left = mid
        else:
            right = mid - 1
    return left


def _trim(e: _Entries, params: TrimParams, end_on: tuple[str, ...], start_on: tuple[str, ...]) -> _Run:
    """`trim.trim` for the default counter without allow_partial, on the entries' prefix sums."""
    lo, hi = 0, len(e.pos)
    max_tokens = params.budget
    types = e.types
    if params.strategy == "first":
        run = _Run(lo, hi)
        if not _fits(e.cumulative, lo, hi, max_tokens):
            idx = _first_max(e.cumulative, lo, hi, max_tokens, reverse=False)
            if idx < hi:
                run.cut = idx
            hi = idx
        removed = []
        if end_on:
            while hi > lo and types[hi - 1] not in end_on:
                hi -= 1
                removed.append(hi)
        run.hi, run.end_on = hi, tuple(removed)
        return run
    run = _Run(lo, hi)
    if hi == lo:
        return run
    removed = []
    if end_on:
        while hi > lo and types[hi - 1] not in end_on:
            hi -= 1
            removed.append(hi)
    run.end_on = tuple(removed)
    remaining = max_tokens
    if params.include_system and hi > lo and base_type(types[lo]) == "system":
        run.system = lo
        remaining = max(0, max_tokens - int(e.tokens[lo]))
        lo += 1
    # _first_max_tokens on the reversed list: its "start" is the newest entry.
    if hi > lo and not _fits(e.cumulative, lo, hi, remaining):
        idx = _first_max(e.cumulative, lo, hi, remaining, reverse=True)
        if idx < hi - lo:
            run.cut = hi - idx - 1
        lo = hi - idx
    gone = []
    if start_on:
        while hi > lo and types[lo] not in start_on:
            gone.append(lo)
            lo += 1
    run.lo, run.hi, run.start_on = lo, hi, tuple(gone)
    return run


def missed_reason(strategy: str, max_tokens: int) -> str:
    """The message at the cut: it did not fit itself (it read "older than the newest messages that
    fit", as every message beyond it does, while its code said it missed)."""
    if strategy == "last":
        return (f"dropped: the newest message that did not fit max_tokens={max_tokens:,} with the newer ones (strategy='last'); "
                "trim_messages stops here, so every older message goes too")
    return (f"dropped: the first message that did not fit max_tokens={max_tokens:,} after the ones before it (strategy={strategy!r}); "
            "trim_messages stops here, so every later message goes too")


SUMMARY_SENT = "summarized: an earlier summary replaced it; the summary is passed in its place"
SUMMARY_CUT = "summarized: an earlier summary replaced it, and trim_messages cut that summary like any message: neither is sent"


def unsent_covers(session: Session, sent_summaries: set[int]) -> set[str]:
    """The ids of messages whose every covering summary trim_messages cut: they read "the summary is
    passed in its place" where nothing stood in for them."""
    if len(sent_summaries) == len(session.summaries):
        return set()
    sent = {c for k in sent_summaries for c in session.summaries[k].covers}
    return {c for k, s in enumerate(session.summaries) if k not in sent_summaries for c in s.covers if c not in sent}


class _Why:
    """The reason sentence of message i, as `trim.plan_records` words it."""

    def __init__(self, params: TrimParams, zone: np.ndarray, code: np.ndarray, end_on: tuple[str, ...], start_on: tuple[str, ...],
                 end_on_set: frozenset[int]) -> None:
        self.params, self.zone, self.code, self.end_on, self.start_on, self.end_on_set = params, zone, code, end_on, start_on, end_on_set
        self.cut_covers: set[str] = set()  # (`unsent_covers`, set by `plan_columns`)
        self.ids: Sequence[str] = ()

    def __call__(self, i: int) -> str:
        p = self.params
        side = "newest" if p.strategy == "last" else "oldest"
        code = self.code[i]
        types_note = lambda names: " or ".join(repr(t) for t in names)  # noqa: E731
        if code == SUMMARISED:
            return SUMMARY_CUT if self.cut_covers and self.ids[i] in self.cut_covers else SUMMARY_SENT
        if code == SYSTEM_PROMPT:
            return "kept: include_system keeps the leading system message whatever it costs"
        if code == FITS:
            return f"kept: among the {side} messages that fit max_tokens={p.max_tokens:,} (strategy={p.strategy!r})"
        if code == START_RULE:
            if i in self.end_on_set:
                return f"dropped: end_on={p.end_on!r}: the result must end on a {types_note(self.end_on)} message"
            return f"dropped: start_on={p.start_on!r}: the result must start on a {types_note(self.start_on)} message"
        if code == MISSED:
            return missed_reason(p.strategy, p.max_tokens)
        older = "older than" if p.strategy == "last" else "after"
        return f"dropped: {older} the {side} messages that fit max_tokens={p.max_tokens:,} (strategy={p.strategy!r})"


def plan_columns(session: Session, params: TrimParams, counts: TokenCounts) -> Plan | None:
    """The plan in columns, or None where only `plan_records` can say (another counter, allow_partial)."""
    if not params.default_counter or params.allow_partial:
        return None
    e = entries_of(session, counts)
    end_on, start_on = parse_types(params.end_on, "end_on"), parse_types(params.start_on, "start_on")
    run = _trim(e, params, end_on, start_on)
    n = len(session.messages)
    tokens = counts.token_array
    pos = e.pos
    kept_entries = np.zeros(len(pos), dtype=bool)
    kept_entries[run.lo:run.hi] = True
    if run.system is not None:
        kept_entries[run.system] = True
    messages_at = pos >= 0
    kept = np.zeros(n, dtype=bool)
    kept[pos[kept_entries & messages_at]] = True
    system_kept = int(pos[run.system]) if run.system is not None else None

    code = np.full(n, AFTER_CUT, dtype=np.int16)
    if run.cut is not None and pos[run.cut] >= 0:
        code[pos[run.cut]] = MISSED
    rule = [int(pos[k]) for k in (*run.end_on, *run.start_on) if pos[k] >= 0]
    code[rule] = START_RULE
    code[kept] = FITS
    code[e.covered] = SUMMARISED
    zone = np.where(e.covered, np.int16(2), np.int16(1)).astype(np.int16)
    if system_kept is not None and system_kept >= 0:
        code[system_kept] = SYSTEM_PROMPT
        zone[system_kept] = 0
    decision = np.full(n, DROPPED, dtype=np.int8)
    decision[kept] = KEPT
    decision[e.covered] = SUMMARIZED
    sent_tokens = np.where(kept, tokens, 0)
    end_on_set = frozenset(int(pos[k]) for k in run.end_on if pos[k] >= 0)
    why = _Why(params, zone, code, end_on, start_on, end_on_set)
    columns = Columns(session, decision, tokens, sent_tokens, zone, _ZONES, code, _CODES, partial(_reason, why))

    order = np.flatnonzero(kept_entries)  # the kept entries in LangChain's order
    system_tokens = int(e.tokens[run.system]) if run.system is not None else 0
    usage = {"system": system_tokens, "history": int(e.tokens[order].sum()) - system_tokens}
    context, context_index, kept_ids = _sent(session, pos[order])
    notes: list[str] = []
    if session.system_prompt:
        where = "kept" if bool(kept_entries[pos == -1].any()) else "dropped"
        notes.append(f"the session's system prompt is passed first as a SystemMessage ({e.prompt_tokens:,} tokens): {where}")
    summary_plans = []
    by_pos = {int(p): int(t) for p, t in zip(pos[pos <= SUMMARY_POS].tolist(), e.tokens[pos <= SUMMARY_POS].tolist(), strict=True)}
    kept_positions = set(pos[order].tolist()) if session.summaries else set()
    if session.summaries:
        why.cut_covers = unsent_covers(session, {k for k in range(len(session.summaries)) if SUMMARY_POS - k in kept_positions})
        why.ids = session.message_columns[0]
    for k, summary in enumerate(session.summaries):
        p = SUMMARY_POS - k
        if p in kept_positions:
            summary_plans.append(SummaryPlan(k, by_pos[p], Decision.KEPT, "kept: passed as LangChain's summary HumanMessage, trimmed like any message",
                                             summary.text))
        else:
            summary_plans.append(SummaryPlan(k, by_pos[p], Decision.DROPPED, "dropped: trim_messages cut it like any message", summary.text))
    if session.summaries:
        notes.append(f"the session's {len(session.summaries):,} earlier {noun(len(session.summaries), 'summary', 'summaries')} {'is' if len(session.summaries) == 1 else 'are'} passed as LangChain's summary HumanMessage "
                     "in place of the messages they cover")
    budget = max(0, params.budget)
    kept_tokens = int(sent_tokens.sum())
    kept_count = int(kept.sum())
    used = usage["system"] + usage["history"]
    if system_kept == -1:
        system_allot = min(e.prompt_tokens, budget)
    else:
        system_allot = min(int(tokens[system_kept]) if system_kept is not None else 0, budget)
    totals = Totals(budget=budget, used=used, kept=kept_tokens, dropped=int(tokens.sum()) - kept_tokens, fits=used <= budget,
                    kept_messages=kept_count, dropped_messages=n - kept_count)
    if params.max_tokens != budget:
        notes.append(f"max_tokens={params.max_tokens:g}: counts are whole numbers, so LangChain keeps what fits {budget:,}"
                     + (" (a negative max_tokens keeps nothing)" if params.max_tokens < 0 else ""))
    return Plan(
        policy="langchain-trim", params=params_dict(params), tokenizer=counts.scheme.label,
        allocation={"system": system_allot, "history": budget - system_allot}, usage=usage,
        system_prompt=session.system_prompt, messages=Rows(columns), context=Context(context), context_index=context_index,
        totals=totals, summaries=tuple(summary_plans), zones=_ZONES, notes=tuple(notes),
        extra={"kept_ids": kept_ids, "partial_index": None, "trimmed": kept_count < n},
    )


def _sent(session: Session, placed: np.ndarray) -> tuple[Joined, Joined, list[str]]:
    """The context as sent, its positions and the ids of the session's messages in it, from the
    kept entries' positions in LangChain's order (-1: the system prompt; SUMMARY_POS and below: a
    summary). The messages come in runs of consecutive positions (a budget over a 100,000-message
    session keeps one run of all of them), handed over as runs (`Joined`), not copied one by one."""
    context: list[tuple[Sequence[Any], int, int]] = []
    index: list[tuple[Sequence[Any], int, int]] = []
    ids = session.message_columns[0]
    kept_ids: list[str] = []
    n = len(placed)
    if n:
        starts = np.ones(n, dtype=bool)  # where a run begins: after a gap, and at and after each negative position
        starts[1:] = (placed[1:] != placed[:-1] + 1) | (placed[1:] < 0) | (placed[:-1] < 0)
        at = np.flatnonzero(starts)
        for lo, hi, p in zip(at.tolist(), [*at[1:].tolist(), n], placed[at].tolist(), strict=True):
            if p >= 0:
                end = p + hi - lo
                context.append((session.messages, p, end))
                index.append((_POSITIONS, p, end))
                kept_ids += ids[p:end]
            else:
                if p == -1:
                    entry: dict[str, Any] = {"role": "system", "content": session.system_prompt}
                else:  # (p <= SUMMARY_POS)
                    entry = {"role": "user", "content": summary_view(session.summaries[SUMMARY_POS - p].text).content}
                context.append(((entry,), 0, 1))
                index.append(((None,), 0, 1))
    return Joined(*context), Joined(*index), kept_ids


#: A message's position is itself (`Joined` runs of it stand for `context_index`).
_POSITIONS = range(2**62)


def _reason(why: _Why, i: int) -> str:
    return why(i)
