"""Strands Agents' SummarizingConversationManager (strands-agents 1.62.0,
strands/agent/conversation_manager/summarizing_conversation_manager.py).

It does nothing until the model overflows (`apply_management` is a no-op); then `reduce_context`
runs `_summarize_oldest` once: max(1, int(len * summary_ratio)) oldest Strands messages, at most
len - preserve_recent_messages, the split moved forward past toolResults and toolUses without
their result; pinned messages (pin_first, at the first reduction) stay in front; the rest become one
*user* message holding the model's summary text, unwrapped, placed after the pinned ones. A later
overflow summarises that summary again with the next oldest messages.

A static plan shows that one pass when Strands' own estimate (`Model.count_tokens`) exceeds
`context_window_limit` (or, with proactive compression, reaches its threshold); the replay
(`compact`) puts the summary in force so later turns carry it: what Strands summarised stays
summarised, as in the agent's history. Strands retries an overflowing call after each pass, so one
call can make several passes; ctxviz makes one per model call (the next at the next step), and
says so in the plan's notes. The summary text is ctxviz's offline
stand-in (an extractive snapshot), not the model's: only its place and what it replaces are Strands'.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from ...counting import TokenCounts
from ...growth import same_prefix
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import KEPT, SUMMARIZED, Columns, Rows
from ...session import Message, Session, Summary
from ..base import Policy, params_dict
from .messages import (
    COUNTER,
    FRAMEWORK,
    FRAMEWORK_VERSION,
    Held,
    NoSplitPoint,
    StrandsMessage,
    adjust_split_point_for_tool_pairs,
    check_manager_params,
    context_window_limit,
    held,
    is_pinned,
    measure_message,
)
from .sliding_window import request_overhead, split_window

#: A Strands message's fields, read in C over the tens of thousands a long session's plan walks (a
#: generator expression per message cost a re-plan at 100,000 messages about 15 ms).
_PINNED, _MEMBERS, _TOKENS = attrgetter("pinned"), attrgetter("members"), attrgetter("tokens")

ZONES = ("system", "pinned", "summarized", "history")
STAND_IN = "extractive snapshot written offline, sent as Strands' unwrapped user-role summary message"


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class SummarizingParams:
    """SummarizingConversationManager's arguments, plus the model's context_window_limit."""

    summary_ratio: float = field(default=0.3, metadata=_help(unit="share", text="Share of the messages summarised at an overflow (Strands clamps it to 0.1-0.8)", min=0.0, max=1.0, step=0.05))
    preserve_recent_messages: int = field(default=10, metadata=_help(unit="messages", text="Newest messages never summarised", min=0))
    pin_first: int | None = field(default=None, metadata=_help(unit="messages", text="Messages at the start pinned at the first reduction, never summarised", min=0))
    proactive_compression: float | None = field(default=None, metadata=_help(unit="fraction", text="compression_threshold: summarise before the model call when the estimate reaches this share of the window (Strands' True = 0.7; none: off)", min=0.01, max=1.0, step=0.05))
    context_window_limit: int | None = field(default=None, metadata=_help(unit="tokens", text="The model's context window (default: ctxviz's model catalogue, else Strands' 200,000)", min=1, step=1000))

    def __post_init__(self) -> None:
        if self.preserve_recent_messages < 0:
            raise ValueError(f"preserve_recent_messages must be >= 0, got {self.preserve_recent_messages}")
        check_manager_params(self)

    @property
    def ratio(self) -> float:
        return max(0.1, min(0.8, self.summary_ratio))  # Strands clamps silently


@dataclass(frozen=True)
class Outcome:
    """One `_summarize_oldest` on a Strands message list."""

    ok: bool
    split: int = 0  # messages_to_summarize_count after the tool-pair adjustment
    asked: int = 0  # before it
    protected: tuple[int, ...] = ()  # positions in [0, split) kept for being pinned
    summarized: tuple[int, ...] = ()  # positions summarised
    error: str = ""


def oldest_split(messages: Sequence[StrandsMessage], ratio: float, preserve: int) -> tuple[int, int, str]:
    """`_summarize_oldest`'s split before it looks at pins: (messages_to_summarize_count after the
    tool-pair adjustment, before it, why it raises: "" when it does not). It reads the list's
    length and the few messages the adjustment walks past, so the incremental replay hands it a
    view of the messages it holds (strands/replay.py `_Holding`) rather than a copy of them."""
    n = len(messages)
    count = min(max(1, int(n * ratio)), n - preserve)
    if count <= 0:
        return 0, 0, "Cannot summarize: insufficient messages for summarization"
    asked = count
    try:
        count = adjust_split_point_for_tool_pairs(messages, count)
    except NoSplitPoint as exc:
        return 0, asked, str(exc)
    if count <= 0:
        return 0, asked, "Cannot summarize: insufficient messages for summarization"
    return count, asked, ""


def summarize_oldest(messages: list[StrandsMessage], ratio: float, preserve: int, pin_first: int | None, pins_applied: bool) -> Outcome:
    """`_summarize_oldest` up to the model call: where it splits and what it keeps, or why it raises."""
    n = len(messages)
    count, asked, error = oldest_split(messages, ratio, preserve)
    if error:
        return Outcome(False, asked=asked, error=error)
    if pin_first and not pins_applied:
        for i in range(min(pin_first, n)):
            messages[i].pinned = True
    if any(map(_PINNED, messages[: count + 1])):
        protected = tuple(i for i in range(count) if is_pinned(messages, i))
        summarized = tuple(i for i in range(count) if i not in protected)
    else:  # is_pinned looks at a message and its neighbours only: nothing is pinned among them
        protected, summarized = (), tuple(range(count))
    if not summarized:
        return Outcome(False, count, asked, protected, error="Cannot summarize: all messages in summarize range are pinned")
    return Outcome(True, count, asked, protected, summarized)


def _summary_message(text: str, tokens: int) -> StrandsMessage:
    return StrandsMessage("user", [{"text": text}], (), tokens=tokens)


_ZONE_NAMES = ("system", "summarized", "pinned", "history")
_CODE_NAMES = ("system_prompt", "summarised", "head", "fresh_tail", "kept", "under_trigger")
K_SYSTEM, K_SUMMARISED, K_HEAD, K_FRESH, K_KEPT, K_UNDER = range(len(_CODE_NAMES))


class _Why:
    """The reason sentence of message i, built when someone reads that row."""

    def __init__(self, start: Held, summarised_reason: str, kept_reason: str, covered: int, pin_first: int | None) -> None:
        self.start, self.summarised_reason, self.kept_reason, self.covered, self.pin_first = start, summarised_reason, kept_reason, covered, pin_first
        self.code: np.ndarray = np.zeros(0, dtype=np.int16)

    def __call__(self, i: int) -> str:
        code = self.code[i]
        if code == K_SYSTEM:
            return "kept: part of the system prompt, which Strands passes apart from the messages"
        if code == K_SUMMARISED:
            if self.start.is_covered[i]:
                return f"summarized: covered by the summary of {self.covered} messages, sent as a user message in their place"
            return self.summarised_reason
        if code == K_HEAD:
            return f"kept: pinned (pin_first={self.pin_first}), never summarised"
        return self.kept_reason


def _columns(session: Session, counts: TokenCounts, start: Held, summarised: list[int], pinned: list[int], kept_code: int, why: _Why) -> Columns:
    """Every message's decision, in the order of precedence of the record each once had: system
    message, summarised (earlier or now), pinned, kept."""
    tokens = counts.token_array
    n = len(tokens)
    code = np.full(n, kept_code, dtype=np.int16)
    zone = np.full(n, 3, dtype=np.int16)
    code[pinned] = K_HEAD
    zone[pinned] = 2
    gone = start.is_covered.copy()
    gone[summarised] = True
    code[gone] = K_SUMMARISED
    zone[gone] = 1
    code[start.is_system] = K_SYSTEM
    zone[start.is_system] = 0
    gone &= ~start.is_system
    decision = np.where(gone, np.int8(SUMMARIZED), np.int8(KEPT)).astype(np.int8)
    why.code = code
    return Columns(session, decision, tokens, np.where(gone, 0, tokens), zone, _ZONE_NAMES, code, _CODE_NAMES, partial(_reason, why))


def _reason(why: _Why, i: int) -> str:
    return why(i)


def plan(session: Session, params: SummarizingParams, counts: TokenCounts) -> Plan:
    limit, limit_source = context_window_limit(session, params.context_window_limit)
    start = held(session, counts)  # shared by every plan: a message is copied before it is pinned
    system, messages, summary, covered, at = list(start.system), list(start.messages), start.summary, start.covered, start.at
    prompt, system_tokens, tools_tokens = request_overhead(session, counts, system)
    fixed = system_tokens + tools_tokens
    notes: list[str] = []
    summary_plans: list[SummaryPlan] = []
    summarised: list[int] = []  # the messages the pass summarises now
    summarised_reason = ""
    pins_applied = False
    if summary is not None:
        # Strands' list after an earlier pass: the pinned messages, the summary, the rest.
        if params.pin_first:
            messages[:at] = [dataclasses.replace(sm, pinned=True) for sm in messages[:at]]
            pins_applied = True
        for i, s in enumerate(session.summaries[:-1]):
            summary_plans.append(SummaryPlan(i, 0, Decision.DROPPED, "dropped: Strands holds one summary message; the latest absorbed this one", s.text))
        summary_plans.append(SummaryPlan(len(session.summaries) - 1, counts.text(summary.text), Decision.KEPT,
                                         "kept: Strands sends its summary as a user message in place of the messages it covers", summary.text))

    estimate = fixed + start.tokens  # pinning a message copies it, tokens and all
    why = ""
    if estimate > limit:
        why = f"the context overflowed ({estimate:,} estimated tokens > context_window_limit {limit:,})"
    elif params.proactive_compression is not None and estimate / limit >= params.proactive_compression:
        why = (f"proactive compression: the estimated {estimate:,} tokens are {estimate / limit:.0%} of the {limit:,}-token window, "
               f"at least compression_threshold {params.proactive_compression:g}")
    new_ids: tuple[str, ...] = ()
    new_text = ""
    split: int | None = None  # where a pass split the messages Strands holds
    if why:
        n = len(messages)
        if params.pin_first and not pins_applied:  # summarize_oldest pins these in place
            messages[:params.pin_first] = [dataclasses.replace(sm) for sm in messages[:params.pin_first]]
        outcome = summarize_oldest(messages, params.ratio, params.preserve_recent_messages, params.pin_first, pins_applied)
        if not outcome.ok:
            notes.append(f"{why}, but Strands cannot summarise: {outcome.error}"
                         + (" (it raises ContextWindowOverflowException)" if estimate > limit else " (proactive: it carries on)"))
        else:
            moved = f", moved forward from {outcome.asked} past tool calls and results" if outcome.split != outcome.asked else ""
            reason = (f"summarized: {why}; Strands summarises the oldest {outcome.split} of the {n} messages it holds "
                      f"(summary_ratio={params.ratio:g}, preserve_recent_messages={params.preserve_recent_messages}{moved})")
            # The pass summarises the same messages whenever it splits at the same place: kept per session.
            found = start.found.get((outcome.split, outcome.protected))
            if found is None:
                gone = [messages[i] for i in outcome.summarized]
                members = sorted(chain.from_iterable(map(_MEMBERS, gone)))
                previous = start.found.get("covered messages")
                if previous is None:  # the same for every split: kept with the splits' summaries
                    previous = start.found["covered messages"] = [m.index for m in session.messages if m.id in covered]
                # (members are in order already: the summarised messages' members, oldest first)
                covering = list(map(session.messages.__getitem__, sorted({*previous, *members}) if previous else dict.fromkeys(members)))
                new_ids = tuple(m.id for m in covering if m.role != "system")
                new_text = _snapshot(start, covering)
                found = start.found[(outcome.split, outcome.protected)] = (members, new_ids, new_text)
            members, new_ids, new_text = found
            summarised, summarised_reason = members, reason
            new_summary = _summary_message(new_text, counts.text(new_text))
            messages[:] = [messages[i] for i in outcome.protected] + [new_summary] + messages[outcome.split:]
            for plan_summary in summary_plans:
                if plan_summary.decision is Decision.KEPT:
                    summary_plans[summary_plans.index(plan_summary)] = SummaryPlan(
                        plan_summary.index, plan_summary.tokens, Decision.SUMMARIZED, "summarized: the new summary covers it and its messages", plan_summary.text)
            summary_plans.append(SummaryPlan(len(session.summaries), new_summary.tokens, Decision.KEPT,
                                             f"kept: Strands' new summary of {len(new_ids)} messages, a user message after the pinned ones ({STAND_IN})", new_text))
            notes.append(f"{why}: one reduce_context pass; the summary text is ctxviz's offline stand-in ({STAND_IN})")
            split = outcome.split
            # What Strands now holds: the pinned ones and the summary, then the messages from the split
            # on, whose tokens the session's running sums give (`_flat`) without a pass over them.
            ahead = len(outcome.protected) + 1
            if fixed + sum(map(_TOKENS, messages[:ahead])) + start.tokens - int(_flat(session, start).tokens[split]) > limit:
                notes.append("still over the window after one pass: Strands retries the call at once, which overflows again and "
                             "summarises again; ctxviz makes one pass per model call, so the replay shows the next pass at its next step")

    # Only pin_first pins (the session's own Strands messages never are).
    pinned_members = ([i for pos, sm in enumerate(messages) if sm.members and is_pinned(messages, pos) for i in sm.members]
                      if params.pin_first and any(map(_PINNED, messages)) else [])
    if why and new_ids:
        kept_code, kept_reason = K_FRESH, "kept: after the summarised span"
    else:
        kept_code = K_KEPT if why else K_UNDER
        kept_reason = f"kept: the context fits ({estimate:,} of {limit:,} estimated tokens); Strands summarises only when the model overflows"
    columns = _columns(session, counts, start, summarised, pinned_members, kept_code,
                       _Why(start, summarised_reason, kept_reason, len(covered), params.pin_first))

    flat = _flat(session, start)
    head: list[Any] = [{"role": "system", "content": prompt}] if prompt else []
    head_index: list[int | None] = [None] if prompt else []
    if split is None:  # Strands holds the session's messages as they are
        tail_from, holding, summary_tokens = 0, start.tokens, flat.summary_tokens
    else:  # the pinned ones, the new summary, the rest
        for sm in messages[: len(messages) - (len(start.messages) - split)]:
            entries, index = _entries(session, sm)
            head += entries
            head_index += index
        tail_from = split
        kept = messages[: len(messages) - (len(start.messages) - split)]
        holding = sum(sm.tokens for sm in kept) + start.tokens - int(flat.tokens[split])
        summary_tokens = sum(sm.tokens for sm in kept if not sm.members) + flat.summary_tokens - int(flat.summary_before[split])
    context = (*head, *flat.entries[flat.start[tail_from]:])
    context_index = (*head_index, *flat.index[flat.start[tail_from]:])
    used = fixed + holding
    allocation = split_window(limit, system_tokens, tools_tokens)
    usage = {"system": system_tokens, "tool_definitions": tools_tokens, "messages": holding}
    sent = columns.sent
    kept_messages = int(sent.sum())
    kept = int(columns.tokens[sent].sum())
    totals = Totals(budget=limit, used=used, kept=kept, dropped=int(columns.tokens.sum()) - kept,
                    fits=used <= limit, kept_messages=kept_messages, dropped_messages=len(sent) - kept_messages)
    return Plan(
        policy=POLICY.name, params={**params_dict(params), "context_window_limit": limit}, tokenizer=counts.scheme.label,
        allocation=allocation, usage=usage, system_prompt=prompt, messages=Rows(columns), context=Context(context),
        context_index=context_index, totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"context_window_limit": limit, "context_window_source": limit_source, "estimate_before": estimate,
               "summary_ratio_used": params.ratio, "summary_tokens": summary_tokens, "strands_messages": len(messages),
               "summarized_ids": list(new_ids), "reduce_reason": why},
    )


def compact(prefix: Session, plan_: Plan, params: SummarizingParams, counts: TokenCounts, summarizer: Any, turn: int, events: list[Any]) -> Summary | None:
    """The overflow pass the plan made, put in force for the turns after it."""
    ids = plan_.extra.get("summarized_ids") or []
    if not ids:
        return None
    from ...replay_contract import Event

    by_id = {m.id: m for m in prefix.messages}
    covered = [by_id[i] for i in ids if i in by_id]
    text = summarizer.supyagent_snapshot(covered)
    events.append(Event(turn, "summary", f"{plan_.extra['reduce_reason']}: Strands summarised {len(covered)} messages into one user message"))
    return Summary(text=text, messages_covered=len(covered), covers=tuple(ids), created_at=prefix.messages[-1].timestamp if prefix.messages else "")


POLICY = Policy(
    reason_codes=("system_prompt", "head", "fresh_tail", "under_trigger", "kept", "summarised"),
    name="strands-summarizing",
    schedule='reduce_context before the model call that overflows (or reaches the proactive threshold)',
    title="Strands SummarizingConversationManager",
    params_type=SummarizingParams,
    measure_name="strands-blocks",
    measure=measure_message,
    default_tokenizer="strands",
    plan=plan,
    zone_parts={"history": "messages", "pinned": "messages"},
    description="On a context overflow, the oldest summary_ratio of the messages (never the newest preserve_recent_messages) become one user-role summary.",
    framework=FRAMEWORK,
    framework_version=FRAMEWORK_VERSION,
    source="strands/agent/conversation_manager/summarizing_conversation_manager.py reduce_context, _summarize_oldest",
    counter=COUNTER,
    trigger=("context_window_limit", "proactive_compression"),
    keep=("summary_ratio", "preserve_recent_messages", "pin_first"),
    stand_in=STAND_IN,
    compact=compact,
)


@dataclass(frozen=True)
class _Flat:
    """The session's Strands messages as the request sends them, flattened once per session: a
    plan's context is a slice of it after the messages it summarised or pinned."""

    entries: tuple[Any, ...]  # per request entry: a session message (built when read), or the summary's user message
    index: tuple[int | None, ...]
    start: list[int]  # per Strands message (and one past the last): its first entry
    tokens: np.ndarray  # tokens[k]: the tokens of the first k Strands messages
    summary_before: np.ndarray  # summary_before[k]: the tokens of the summary messages among the first k
    summary_tokens: int


def _entries(session: Session, sm: StrandsMessage) -> tuple[list[Any], list[int | None]]:
    if not sm.members:
        return [{"role": "user", "content": sm.content[0]["text"]}], [None]
    return [session.messages[i] for i in sm.members], list(sm.members)


def _flat(session: Session, start: Held) -> _Flat:
    found = start.found.get("flat")
    if found is None:
        entries: list[Any] = []
        index: list[int | None] = []
        at = [0]
        for sm in start.messages:
            more, where = _entries(session, sm)
            entries += more
            index += where
            at.append(len(entries))
        tokens = np.zeros(len(start.messages) + 1, dtype=np.int64)
        np.cumsum([sm.tokens for sm in start.messages], out=tokens[1:])
        summary_before = np.zeros(len(start.messages) + 1, dtype=np.int64)
        np.cumsum([0 if sm.members else sm.tokens for sm in start.messages], out=summary_before[1:])
        found = start.found["flat"] = _Flat(tuple(entries), tuple(index), at, tokens, summary_before, int(summary_before[-1]))
    return found


def _snapshot(start: Held, messages: list[Message]) -> str:
    """ctxviz's offline stand-in summary of these messages (`supyagent_snapshot`'s text), kept per
    session and counting (`Held.found`) as one snapshot that grows (`carried._Snapshot`): a re-plan
    whose covered messages extend those read last (summary_ratio moved up: 31,000 messages at
    100,000, about 15 ms) gathers only the new ones; any other list is read from its start. One plan
    at a time reads or grows it (the app plans on worker threads). (Imported late: the summarizers
    module loads urllib.)"""
    from ..carried import _Snapshot

    lock = start.found.setdefault("snapshot lock", threading.Lock())
    with lock:
        snapshot = start.found.get("snapshot")
        if snapshot is None or same_prefix(snapshot.seen, messages) < len(snapshot.seen):
            snapshot = start.found["snapshot"] = _Snapshot()
        return snapshot.text(messages)
