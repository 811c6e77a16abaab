"""LLMSummarizingCondenser decided in columns: the same plan as `condenser.plan_records`.

The View the condenser decides on depends on the session and on the log it reads back (which
depends on the parameters only where the session's summary is replayed, log.py): the events, the
View's properties, the events' tokens, the manipulation indices, which message is where and what
the request sends for each event are derived once per log and kept for the last few. A re-plan then
asks `condensation` where to cut (with the indices it already has), takes the forgotten span out
of prefix sums, and keeps the summary it writes for the span; reasons are built for the rows read.

tests/test_openhands_columns.py checks it against `plan_records` on random sessions and parameters.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, SUMMARIZED, Columns, Rows
from ...session import Session
from ..common import base_system_prompt
from .log import LATEST, Log, Measure, placement_notes, recorded_log, replayed_log
from .summary_input import shown_of
from .view import Event, LeftOut, Sizes, condensation, enforce_properties, events_of, manipulation_indices

POLICY_NAME = "openhands-llm-summarizing"
STAND_IN = ("extractive snapshot written offline of what OpenHands' summariser is shown (each forgotten event's 500-character "
            "preview, the previous summary's first 497), sent as OpenHands' CondensationSummaryEvent (a plain user message)")
ZONES = ("system", "head", "forgotten", "tail", "left_out")
SYSTEM_ZONE, HEAD_ZONE, FORGOTTEN_ZONE, TAIL_ZONE, LEFT_OUT_ZONE = range(len(ZONES))
DEFAULT_INPUT_TOKENS = 128_000
_KEEP = 8


def log_of(session: Session, all_events: list[Event], params: Sizes, counts: TokenCounts, prompt_tokens: int,
           token_limit: int | None) -> Log:
    """The event log with the session's summary in place as View.from_events puts it (log.py)."""
    summary = session.summaries[-1] if session.summaries else None
    if summary is None:
        return recorded_log(session, all_events, None)
    tokens = counts.message_tokens

    def event_tokens(e: Event) -> int:
        if e.kind == "system":
            return prompt_tokens
        assert e.message is not None
        return tokens[e.message] if e.kind != "action" or e.id.endswith("#0") else 0

    measure = Measure(session, event_tokens, counts.text)
    key = (params, counts.scheme.label, prompt_tokens, token_limit)
    replayed = replayed_log(session, summary, all_events, params, measure, token_limit, key)
    return replayed if replayed is not None else recorded_log(session, all_events, summary)


class CondenserParams(Sizes, Protocol):
    """What this module reads of `condenser.CondenserParams`."""

    @property
    def max_tokens(self) -> int | None: ...


# Codes as positions in CODES; the View's own codes follow (`unpaired`, `dropped`).
CODES = ("system_prompt", "summarised", "summarised", "dropped", "unpaired", "head", "fresh_tail", "under_trigger", "kept")
SYSTEM_PROMPT, SUMMARISED, EARLIER, LEFT_OUT, LEFT_UNPAIRED, HEAD, FRESH_TAIL, UNDER_TRIGGER, KEPT_CODE = range(len(CODES))


@dataclass(frozen=True)
class _View:
    """One log's View and everything a plan reads of it, whatever the cut."""

    log: Log
    view: list[Event]
    left_out: dict[str, LeftOut]
    summary_tokens: dict[str, int]
    per_event: list[int]
    running: np.ndarray  # running[k]: the tokens of view[:k]
    summary_running: np.ndarray  # the same over the summary events
    indices: set[int]
    event_message: np.ndarray  # per event: its message (-1: none)
    summaries: tuple[tuple[int, Event], ...]  # the summary events and their positions
    has_system: bool
    entries: tuple[Any, ...]  # what the request sends, event by event (an action after a batch's first sends nothing)
    entry_index: tuple[int | None, ...]
    entries_before: np.ndarray  # entries_before[k]: how many entries view[:k] sends
    position: np.ndarray  # per message: its last event in the view (-1: none)
    left_code: np.ndarray  # per message the View leaves out: its code's position in CODES, else -1
    left_why: dict[int, str]
    snapshots: OrderedDict[tuple[int, int], tuple[str, tuple[str, ...], frozenset[int], dict[str, Any]]]


@dataclass
class _Session:
    """What every plan of the session shares: its events, prompt and the Views of the logs seen."""

    all_events: list[Event]
    prompt: str
    prompt_tokens: int
    system: np.ndarray
    views: OrderedDict[tuple[Any, ...], _View]


def _session_of(session: Session, counts: TokenCounts) -> _Session:
    return derived_from_counts(session, counts, POLICY_NAME, _make_session_of)


def _make_session_of(session: Session, counts: TokenCounts) -> _Session:
    system_messages = [m for m in session.messages if m.role == "system"]
    prompt = base_system_prompt(session, system_messages)
    system = np.zeros(len(session.messages), dtype=bool)
    system[[m.index for m in system_messages]] = True
    made = _Session(events_of(session, set()), prompt, counts.text(prompt) if prompt else 0, system, OrderedDict())
    return made


def _view_of(session: Session, counts: TokenCounts, s: _Session, log: Log) -> _View:
    tokens = counts.message_tokens
    n = len(tokens)
    view, left_out = enforce_properties(log.events, log.marked)
    summary_tokens = {name: counts.text(text) for name, text in log.texts.items()}

    def event_tokens(e: Event) -> int:
        if e.kind == "system":
            return s.prompt_tokens
        if e.kind == "summary":
            return summary_tokens[e.id]
        assert e.message is not None
        return tokens[e.message] if e.kind != "action" or e.id.endswith("#0") else 0

    per_event = [event_tokens(e) for e in view]
    running = np.zeros(len(view) + 1, dtype=np.int64)
    np.cumsum(np.array(per_event, dtype=np.int64), out=running[1:])
    is_summary = np.array([e.kind == "summary" for e in view], dtype=bool)
    summary_running = np.zeros(len(view) + 1, dtype=np.int64)
    np.cumsum(np.where(is_summary, np.array(per_event, dtype=np.int64), 0), out=summary_running[1:])
    entries: list[Any] = []
    entry_index: list[int | None] = []
    entries_before = np.zeros(len(view) + 1, dtype=np.int64)
    position = np.full(n, -1, dtype=np.int64)
    messages = session.messages
    for k, e in enumerate(view):
        entries_before[k] = len(entries)
        if e.message is not None:
            position[e.message] = k
        if e.kind == "system":
            entries.append({"role": "system", "content": s.prompt})
            entry_index.append(None)
        elif e.kind == "summary":
            if e.id != "new-summary":
                entries.append({"role": "user", "content": log.texts[e.id]})
                entry_index.append(None)
        elif e.message is not None and (e.kind != "action" or e.id.endswith("#0")):
            entries.append(messages[e.message])
            entry_index.append(e.message)
    entries_before[len(view)] = len(entries)
    left_code = np.full(n, -1, dtype=np.int16)
    left_why: dict[int, str] = {}
    for e in s.all_events:
        if e.id in left_out and e.message is not None:
            left_code[e.message] = LEFT_OUT if left_out[e.id].code == "dropped" else LEFT_UNPAIRED
            left_why[e.message] = left_out[e.id].why
    return _View(log, view, left_out, summary_tokens, per_event, running, summary_running, manipulation_indices(view),
                 np.array([-1 if e.message is None else e.message for e in view], dtype=np.int64),
                 tuple((k, e) for k, e in enumerate(view) if e.kind == "summary"), any(e.kind == "system" for e in view),
                 tuple(entries), tuple(entry_index), entries_before, position, left_code, left_why, OrderedDict())


def _written(session: Session, v: _View, start: int, end: int) -> tuple[str, tuple[str, ...], frozenset[int], dict[str, Any]]:
    """The summary of view[start:end] (and of the summaries among it): its text, made of what its
    summariser is shown (summary_input.py), its covers, the messages forgotten, and what it was
    shown as a plan's JSON says it."""
    hit = v.snapshots.get((start, end))
    if hit is not None:
        v.snapshots.move_to_end((start, end))
        return hit
    gone = v.view[start:end]
    forgotten = frozenset(e.message for e in gone if e.message is not None)
    folded = {e.id for e in gone if e.kind == "summary"}
    all_covered = sorted(forgotten.union(*(v.log.covers[name] for name in folded)))
    text, said = shown_of(gone, session.messages, v.log.texts)
    made = (text, tuple(session.messages[i].id for i in all_covered), forgotten, said)
    v.snapshots[(start, end)] = made
    while len(v.snapshots) > _KEEP:
        v.snapshots.popitem(last=False)
    return made


@dataclass
class _Why:
    """Message i's reason, as `plan_records` words it."""

    code: np.ndarray
    place: np.ndarray  # per message: its position in the view as sent
    left_why: dict[int, str]
    params: CondenserParams
    why: str
    head_end: int
    events_from_tail: int
    condensed: bool
    view_events: int
    token_limit: int | None

    def __call__(self, i: int) -> str:
        c = self.code[i]
        p = self.params
        if c == SYSTEM_PROMPT:
            return "kept: part of the SystemPromptEvent, which OpenHands never forgets"
        if c == SUMMARISED:
            return (f"summarized: {self.why}; OpenHands forgets the events after the first {self.head_end} and keeps the newest "
                    f"{self.events_from_tail} (max_size // 2 - keep_first - 1), moved to safe boundaries")
        if c == EARLIER:
            return "summarized: forgotten by an earlier condensation; its summary is sent in its place"
        if c in (LEFT_OUT, LEFT_UNPAIRED):
            return f"dropped: the View leaves out {self.left_why[i]}"
        k = int(self.place[i])
        if k < self.head_end:
            return f"kept: one of the first keep_first={p.keep_first} events" if k < p.keep_first else "kept: before the first safe boundary after keep_first"
        if self.condensed:
            return "kept: in the tail the condensation keeps"
        return f"kept: the view ({self.view_events} events) is within max_size={p.max_size}" + (f" and the token limit {self.token_limit:,}" if self.token_limit else "")


def plan_columns(session: Session, params: CondenserParams, counts: TokenCounts, limit_in: int | None, params_json: dict[str, Any]) -> Plan:
    s = _session_of(session, counts)
    limits = [x for x in (params.max_tokens, limit_in) if x is not None]
    token_limit = min(limits) if limits else None
    summary = session.summaries[-1] if session.summaries else None
    # The log depends on the parameters only where the session's summary is replayed on it.
    log_key: tuple[Any, ...] = (params, counts.scheme.label, s.prompt_tokens, token_limit) if summary is not None else ()
    v = s.views.get(log_key)
    if v is None:
        log = log_of(session, s.all_events, params, counts, s.prompt_tokens, token_limit)
        v = s.views[log_key] = _view_of(session, counts, s, log)
        while len(s.views) > _KEEP:
            s.views.popitem(last=False)
    else:
        s.views.move_to_end(log_key)
    log = v.log
    summary_plans = [SummaryPlan(i, 0, Decision.DROPPED, "dropped: OpenHands' latest summary forgot this one with its events", x.text)
                     for i, x in enumerate(session.summaries[:-1])]
    notes: list[str] = []
    summary_text = summary.text if summary is not None else ""
    view = v.view
    outcome = condensation(view, params, v.per_event, token_limit, v.indices)
    forgotten: frozenset[int] = frozenset()
    new_ids: tuple[str, ...] = ()
    new_text = ""
    shown: dict[str, Any] = {}
    why = ""
    used = int(v.running[-1])
    summary_used = int(v.summary_running[-1])
    start = end = 0  # the span forgotten (view positions)
    summaries_in_view = [e for _, e in v.summaries]
    if outcome is not None:
        why = outcome.why(len(view), params.max_size, used, token_limit)
        if outcome.error:
            notes.append(outcome.cannot_note(why))
        else:
            start, end = outcome.start, outcome.start + len(outcome.forgotten)
            new_text, new_ids, forgotten, shown = _written(session, v, start, end)
            gone_summaries = {e.id for k, e in v.summaries if start <= k < end}
            new_tokens = counts.text(new_text)
            used += new_tokens - int(v.running[end] - v.running[start])
            summary_used += new_tokens - int(v.summary_running[end] - v.summary_running[start])
            summaries_in_view = ([e for k, e in v.summaries if k < start] + [Event("new-summary", "summary", None)]
                                 + [e for k, e in v.summaries if k >= end])
            if summary is not None:
                state = ((Decision.SUMMARIZED, "summarized: forgotten with the events the new summary covers") if LATEST in gone_summaries
                         else (Decision.KEPT, "kept: in the head the condensation keeps"))
                summary_plans.append(SummaryPlan(len(session.summaries) - 1, counts.text(summary_text), state[0], state[1], summary_text))
            summary_plans.append(SummaryPlan(len(session.summaries), new_tokens, Decision.KEPT,
                                             f"kept: the CondensationSummaryEvent of {len(outcome.forgotten)} forgotten events, a user message at event {outcome.start} ({STAND_IN})", new_text))
            notes.append(f"{why}: one condensation forgets events {outcome.start}-{outcome.start + len(outcome.forgotten) - 1} and keeps "
                         f"{outcome.events_from_tail} from the tail; the summary text is ctxviz's offline stand-in")
    cut = end > start  # the view as sent lost the span and gained the new summary
    condensed = bool(forgotten)  # it forgot messages (not only earlier summaries)
    if summary is not None and not any(sp.index == len(session.summaries) - 1 for sp in summary_plans):
        summary_plans.append(SummaryPlan(len(session.summaries) - 1, counts.text(summary_text), Decision.KEPT,
                                         "kept: OpenHands sends its summary as a user message where the forgotten events were", summary_text))
    notes += placement_notes(log, summaries_in_view)  # it reads the view's summaries alone
    if "tokens" in (outcome.reasons if outcome else ()) or token_limit is not None:
        notes.append(f"token limit {token_limit:,} counted with ctxviz's chat-format count, not litellm's token_counter" if token_limit else "")
    notes = [x for x in notes if x]
    view_events = len(view) - (end - start) + (1 if cut else 0)

    # -- the messages ---------------------------------------------------------------------------
    tokens = counts.token_array
    n = len(tokens)
    head_end = start if outcome is not None and not outcome.error else params.keep_first
    place = v.position if not cut else np.where(v.position >= end, v.position - (end - start) + 1, v.position)
    code = np.where(place < head_end, HEAD, FRESH_TAIL if condensed else UNDER_TRIGGER if outcome is None else KEPT_CODE).astype(np.int16)
    zone = np.where(place < head_end, HEAD_ZONE, TAIL_ZONE).astype(np.int16)
    decision = np.full(n, KEPT, dtype=np.int8)
    in_view = v.position >= 0
    if cut:
        in_view &= (v.position < start) | (v.position >= end)
        in_view[list(forgotten)] = False  # a message is in the view as sent while one of its events is
        in_view[v.event_message[:start][v.event_message[:start] >= 0]] = True
        in_view[v.event_message[end:][v.event_message[end:] >= 0]] = True
    if v.left_why:
        left = (v.left_code >= 0) & ~in_view
        decision[left], zone[left], code[left] = DROPPED, LEFT_OUT_ZONE, v.left_code[left]
    if log.forgotten:
        earlier = list(log.forgotten)
        decision[earlier], zone[earlier], code[earlier] = SUMMARIZED, FORGOTTEN_ZONE, EARLIER
    if forgotten:
        now = list(forgotten)
        decision[now], zone[now], code[now] = SUMMARIZED, FORGOTTEN_ZONE, SUMMARISED
    decision[s.system], zone[s.system], code[s.system] = KEPT, SYSTEM_ZONE, SYSTEM_PROMPT
    sent = decision == KEPT
    sent_tokens = np.where(sent, tokens, 0)
    reason = _Why(code, place, v.left_why, params, why, head_end, outcome.events_from_tail if outcome else 0, condensed, view_events, token_limit)
    columns = Columns(session, decision, tokens, sent_tokens, zone, ZONES, code, CODES, partial(_reason, reason))

    if cut:
        a, b = int(v.entries_before[start]), int(v.entries_before[end])
        context = v.entries[:a] + ({"role": "user", "content": new_text},) + v.entries[b:]
        context_index = v.entry_index[:a] + (None,) + v.entry_index[b:]
    else:
        context, context_index = v.entries, v.entry_index
    if summaries_in_view:
        notes.append("OpenHands merges the summary into a plain user message that follows it (events_to_messages); ctxviz lists them apart")
    budget = token_limit if token_limit is not None else DEFAULT_INPUT_TOKENS
    system_used = s.prompt_tokens if v.has_system else 0
    allocation = {"system": min(s.prompt_tokens, budget), "events": budget - min(s.prompt_tokens, budget)}
    usage = {"system": system_used, "events": used - system_used}  # the summary is one of the events
    kept = int(tokens[sent].sum())
    kept_messages = int(sent.sum())
    totals = Totals(budget=budget, used=used, kept=kept, dropped=int(tokens.sum()) - kept, fits=used <= budget, kept_messages=kept_messages,
                    dropped_messages=n - kept_messages)
    return Plan(
        policy=POLICY_NAME, params={**params_json, "max_input_tokens": limit_in}, tokenizer=counts.scheme.label,
        allocation=allocation, usage=usage, system_prompt=s.prompt, messages=Rows(columns), context=Context(context),
        context_index=context_index, totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"view_events": view_events, "events_before": len(view),
               "condensed": bool(new_ids), "summarized_ids": list(new_ids), "reduce_reason": why,
               "forgotten_events": len(outcome.forgotten) if outcome is not None and not outcome.error else 0,
               "summary_shown": shown,
               "token_limit": token_limit, "left_out_events": len(v.left_out), "summary_tokens": summary_used},
    )


def _reason(why: _Why, i: int) -> str:
    return why(i)
