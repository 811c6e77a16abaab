"""SummarizationMiddleware's plan in columns: the state it holds, derived once per session.

`summarization.run_pass` builds LangChain's state (the earlier summaries, then every message no
summary covers), a view of each AI message and the scaled total on every plan, and
`summarization.plan_records` a record per message. None of that depends on the parameters but the
model's provider (which AI messages of a log that is no LangChain dump count as the model's own),
so it is kept per session, counting scheme and provider (`counting.derived_from_counts`); a
parameter change decides on it with `summarization.decide` (the trigger, a binary search on the
suffix sums, the summarizer's trim) and hands the messages over as columns whose reasons are built
for the rows someone reads.

tests/test_summarization_columns.py checks it against `plan_records` on random sessions and
parameters, the samples and the real logs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Plan, SummaryPlan, Totals
from ...plan_rows import KEPT, SUMMARIZED, Columns, Rows
from ...session import Session
from .counting import SUMMARY_POS, LCMessage, cached_view, count_view, lc_type, scaled_total, summary_view
from .entries import Entry

_ZONES = ("summarized", "recent")
_SUMMARIZED_ZONE, _RECENT_ZONE = range(len(_ZONES))


class Pass(Protocol):
    """What this module reads of `summarization.Pass` (named here so the two modules import one way)."""

    state: list[Entry]
    total_tokens: int
    fired: bool
    why: str
    cutoff: int
    cutoff_why: str
    summary_input: list[Entry]
    kept_code: str


@dataclass(frozen=True, eq=False)
class HeldState:
    """LangChain's state for one session, counting scheme and provider: its entries (as
    `run_pass` builds them), the AI messages' views, the scaled total, and as arrays each entry's
    position and the suffix sums the cutoff's binary search reads."""

    session: Session
    state: list[Entry]
    views: dict[int, LCMessage]
    total: int
    pos: np.ndarray  # each entry's position: a message index, or SUMMARY_POS - k
    suffix: Sequence[int]  # suffix[i] = the unscaled count of state[i:]
    covered: np.ndarray  # per message: an earlier summary replaced it

    def view_of(self, pos: int) -> LCMessage:
        view = self.views.get(pos)
        return view if view is not None else cached_view(self.session.messages[pos])

    def scaled(self, entries: Sequence[Entry]) -> int:
        views = self.views
        return scaled_total([e.tokens for e in entries], [(e.view or views.get(e.pos)) if e.type == "ai" else None for e in entries])

    def bounded_count(self, bound: int) -> Callable[[Sequence[Entry]], int]:
        """`scaled`, for a trim to `bound` tokens: a list whose plain sum is past `bound` is over it
        scaled too (scaling only multiplies by 1 to 1.25), so its count is that partial sum, and
        the trim's binary search over a long history adds up a few thousand tokens, not all of it."""

        def count(entries: Sequence[Entry]) -> int:
            running = 0
            for e in entries:
                running += e.tokens
                if running > bound:
                    return running
            return self.scaled(entries)
        return count


def state_of(session: Session, counts: TokenCounts, ls_provider: str) -> HeldState:
    return derived_from_counts(session, counts, ("langchain-summarization", ls_provider), partial(_held, ls_provider=ls_provider))


def _held(session: Session, counts: TokenCounts, ls_provider: str) -> HeldState:
    """`run_pass`' state and views, built the same way."""
    tokenizer = counts.tokenizer
    covered_ids = {c for s in session.summaries for c in s.covers}
    views: dict[int, LCMessage] = {}
    state: list[Entry] = []
    for k, s in enumerate(session.summaries):
        view = summary_view(s.text)
        views[SUMMARY_POS - k] = view
        state.append(Entry(SUMMARY_POS - k, count_view(view, tokenizer), "human"))
    tokens = counts.message_tokens
    for m in session.messages:
        if m.id in covered_ids:
            continue
        kind = lc_type(m)
        if kind == "ai":
            view = cached_view(m)
            if view.provider is None and m.raw is None and view.total_tokens is not None:
                view = view._replace(provider=ls_provider or None)  # run_pass: not a LangChain dump
            views[m.index] = view
        state.append(Entry(m.index, tokens[m.index], kind))
    entry_tokens = np.fromiter((e.tokens for e in state), dtype=np.int64, count=len(state))
    suffix = np.zeros(len(state) + 1, dtype=np.int64)
    suffix[:-1] = np.cumsum(entry_tokens[::-1])[::-1]
    n = len(session.messages)
    covered = (np.fromiter((i in covered_ids for i in session.message_columns[0]), dtype=bool, count=n) if covered_ids
               else np.zeros(n, dtype=bool))
    held = HeldState(session, state, views, 0, np.fromiter((e.pos for e in state), dtype=np.int64, count=len(state)),
                     suffix.tolist(), covered)
    object.__setattr__(held, "total", held.scaled(state))
    return held


class PlanFields(NamedTuple):
    """What `summarization.plan` hands over besides the pass: the parameters as the plan shows
    them, max_input_tokens, the summaries' plans and the new summary's text."""

    params: dict[str, Any]
    limit: int | None
    summaries: tuple[SummaryPlan, ...]
    summary_text: str


class _Why:
    """The reason sentence of message i, as `plan_records` words it."""

    def __init__(self, run: Pass, covered: np.ndarray, summarized: np.ndarray) -> None:
        self.covered, self.summarized = covered, summarized
        self.cut = f"summarized: before the cutoff ({run.cutoff_why}); {run.why}"
        self.kept = f"kept: after the cutoff ({run.cutoff_why})" if run.fired else f"kept: no summarization ({run.why})"

    def __call__(self, i: int) -> str:
        if self.covered[i]:
            return "summarized: an earlier pass replaced it with the summary message"
        return self.cut if self.summarized[i] else self.kept


def plan_columns(session: Session, counts: TokenCounts, run: Pass, held: HeldState, head: list[dict[str, Any]], summary_usage: int,
                 notes: list[str], fields: PlanFields) -> Plan:
    """The plan of `run` with every message's decision as a column."""
    n = len(session.messages)
    tokens = counts.token_array
    summarized = held.covered.copy()
    if run.fired:
        cut_pos = held.pos[: run.cutoff]
        summarized[cut_pos[cut_pos >= 0]] = True
    kept = ~summarized
    decision = np.where(summarized, np.int8(SUMMARIZED), np.int8(KEPT)).astype(np.int8)
    zone = np.where(summarized, np.int16(_SUMMARIZED_ZONE), np.int16(_RECENT_ZONE)).astype(np.int16)
    code = zone.copy()  # summarised, or the code of the kept messages
    sent_tokens = np.where(kept, tokens, 0)
    columns = Columns(session, decision, tokens, sent_tokens, zone, _ZONES, code, ("summarised", run.kept_code),
                      _Why(run, held.covered, summarized))

    kept_at = np.flatnonzero(kept).tolist()
    messages = session.messages
    context: list[Any] = [*head, *(messages[i] for i in kept_at)]
    context_index: tuple[int | None, ...] = (*([None] * len(head)), *kept_at)
    usage = {"summary": summary_usage, "messages": int(sent_tokens.sum())}
    used = usage["summary"] + usage["messages"]
    budget = fields.limit if fields.limit is not None else max(used, run.total_tokens)
    summary_allot = min(usage["summary"], budget)
    kept_tokens = usage["messages"]
    totals = Totals(budget=budget, used=used, kept=kept_tokens, dropped=int(tokens.sum()) - kept_tokens, fits=used <= budget,
                    kept_messages=len(kept_at), dropped_messages=n - len(kept_at))
    ids = session.message_columns[0]
    summarized_ids: list[str] = []
    if run.fired:
        cut_pos = held.pos[: run.cutoff]
        cut_pos = cut_pos[cut_pos >= 0]
        first = int(cut_pos[0]) if len(cut_pos) else 0
        if len(cut_pos) and int(cut_pos[-1]) - first + 1 == len(cut_pos):  # no summary covers any of them: a run of ids
            summarized_ids = list(ids[first: first + len(cut_pos)])
        else:
            summarized_ids = list(map(ids.__getitem__, cut_pos.tolist()))
    return Plan(
        policy="langchain-summarization", params=fields.params, tokenizer=counts.scheme.label,
        allocation={"summary": summary_allot, "messages": budget - summary_allot}, usage=usage,
        system_prompt=session.system_prompt, messages=Rows(columns), summaries=fields.summaries, context=Context(context),
        context_index=context_index, totals=totals, zones=_ZONES, notes=tuple(notes),
        extra={"fired": run.fired, "total_tokens": run.total_tokens, "cutoff": run.cutoff, "summarized_ids": summarized_ids,
               "summary_input_ids": [ids[e.pos] for e in run.summary_input if e.pos >= 0], "summary_text": fields.summary_text},
    )
