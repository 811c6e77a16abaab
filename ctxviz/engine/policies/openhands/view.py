"""OpenHands' View (openhands-sdk 1.58.0, openhands/sdk/context/view/): the session as the SDK's
events, the properties that leave events out (ObservationUniquenessProperty,
BatchAtomicityProperty, ToolCallMatchingProperty, ToolLoopAtomicityProperty, enforced in that order
until nothing changes) and the manipulation indices a condensation may cut at. The condenser
(condenser.py) decides on this view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

from ...session import Message, Session, ThinkingPart


@dataclass(frozen=True)
class Event:
    """One event of the view: what the condenser and the View's properties look at."""

    id: str
    kind: str  # system, message, action, observation, summary
    message: int | None  # the ctxviz message it comes from (None: the system prompt, a summary)
    tool_call_id: str = ""
    batch: str = ""  # llm_response_id of an action
    thinking: bool = False  # an action carrying thinking blocks: it starts a tool loop


def events_of(session: Session, skip: set[str]) -> list[Event]:
    """The session as OpenHands' event log (messages whose ids are in `skip` left out)."""
    out: list[Event] = []
    if session.system_prompt or any(m.role == "system" for m in session.messages):
        out.append(Event("system", "system", None))
    for m in session.messages:
        if m.role == "system" or m.id in skip:
            continue
        calls = m.tool_calls if m.role == "assistant" else ()
        if calls:
            thinking = any(isinstance(p, ThinkingPart) for p in m.parts)
            for k, call in enumerate(calls):
                out.append(Event(f"{m.id}#{k}", "action", m.index, call.id, m.id, thinking and k == 0))
        elif m.role == "tool":
            out.append(Event(m.id, "observation", m.index, m.tool_call_id or _result_id(m)))
        else:
            out.append(Event(m.id, "message", m.index))
    return out


def _result_id(m: Message) -> str:
    return next((getattr(p, "tool_call_id", "") for p in m.parts if getattr(p, "tool_call_id", "")), "")


def _tool_loops(events: list[Event]) -> list[set[str]]:
    loops: list[set[str]] = []
    current: set[str] | None = None
    for e in events:
        if e.kind == "action" and e.thinking:
            if current is not None:
                loops.append(current)
            current = {e.id}
        elif e.kind in ("action", "observation"):
            if current is not None:
                current.add(e.id)
        elif current is not None:
            loops.append(current)
            current = None
    if current is not None:
        loops.append(current)
    return loops


class LeftOut(NamedTuple):
    """Why the View leaves an event out: the property's words, and the reason code
    (engine/reason_codes.py) of a message it leaves out."""

    why: str
    code: str


def _enforce_once(view: list[Event], all_events: list[Event]) -> tuple[set[str], LeftOut]:
    """The first property (in ALL_PROPERTIES order) that wants events gone, and what it is."""
    seen: set[str] = set()
    duplicates = set()
    for e in view:
        if e.kind == "observation":
            if e.tool_call_id in seen:
                duplicates.add(e.id)
            seen.add(e.tool_call_id)
    if duplicates:
        return duplicates, LeftOut("a second observation of the same tool call (ObservationUniquenessProperty)", "dropped")
    batches_all: dict[str, set[str]] = {}
    for e in all_events:
        if e.kind == "action":
            batches_all.setdefault(e.batch, set()).add(e.id)
    batches_view: dict[str, set[str]] = {}
    for e in view:
        if e.kind == "action":
            batches_view.setdefault(e.batch, set()).add(e.id)
    partial = {i for b, ids in batches_view.items() if ids != batches_all.get(b, set()) for i in ids}
    if partial:
        return partial, LeftOut("part of a batch of tool calls whose other calls are not in the view (BatchAtomicityProperty)", "unpaired")
    actions = {e.tool_call_id for e in view if e.kind == "action"}
    observations = {e.tool_call_id for e in view if e.kind == "observation"}
    unmatched = {e.id for e in view if (e.kind == "action" and e.tool_call_id not in observations)
                 or (e.kind == "observation" and e.tool_call_id not in actions)}
    if unmatched:
        return unmatched, LeftOut("a tool call without its observation, or an observation without its call (ToolCallMatchingProperty)", "unpaired")
    ids = {e.id for e in view}
    loops = _tool_loops(all_events)
    partial_loops: set[str] = set()
    for e in view:
        if e.id in partial_loops:
            continue
        for loop in loops:
            if e.id in loop:
                if not loop <= ids:
                    partial_loops |= ids & loop
                break
    if partial_loops:
        return partial_loops, LeftOut("part of a thinking tool loop that is not whole in the view (ToolLoopAtomicityProperty)", "unpaired")
    return set(), LeftOut("", "")


def enforce_properties(view: list[Event], all_events: list[Event]) -> tuple[list[Event], dict[str, LeftOut]]:
    """View.enforce_properties: drop, property by property, until nothing changes."""
    removed: dict[str, LeftOut] = {}
    while True:
        gone, why = _enforce_once(view, all_events)
        if not gone:
            return view, removed
        removed.update(dict.fromkeys(gone, why))
        view = [e for e in view if e.id not in gone]


def manipulation_indices(view: list[Event]) -> set[int]:
    """View.manipulation_indices: the boundaries every property allows."""
    indices = set(range(len(view) + 1))
    for i in range(len(view) - 1):
        left, right = view[i], view[i + 1]
        if left.kind == "action" and right.kind == "action" and left.batch == right.batch:
            indices.discard(i + 1)
    pending: set[str] = set()
    for i, e in enumerate(view):
        if e.kind == "action":
            pending.add(e.tool_call_id)
        elif e.kind == "observation":
            pending.discard(e.tool_call_id)
        if pending:
            indices.discard(i + 1)
    in_loop = False
    for i, e in enumerate(view):
        if e.kind == "action" and e.thinking:
            in_loop = True
        elif e.kind in ("action", "observation"):
            if in_loop:
                indices.discard(i)
        else:
            in_loop = False
    return indices


def find_next(indices: set[int], threshold: int) -> int | None:
    found = [i for i in indices if i >= threshold]
    return min(found) if found else None


class Sizes(Protocol):
    """The condenser's fields the cut reads (CondenserParams)."""

    @property
    def max_size(self) -> int: ...

    @property
    def keep_first(self) -> int: ...

    @property
    def minimum_progress(self) -> float: ...


@dataclass(frozen=True)
class Condensing:
    """What get_condensation decided (or why it could not)."""

    reasons: tuple[str, ...]
    forgotten: tuple[int, ...] = ()  # view positions
    start: int = 0
    events_from_tail: int = 0
    error: str = ""

    def why(self, events: int, max_size: int, used: int, token_limit: int | None) -> str:
        """The sentence a plan gives for condensing (both plans, step by step and in columns, say it)."""
        what = []
        if "events" in self.reasons:
            what.append(f"the view has {events} events, over max_size={max_size}")
        if "tokens" in self.reasons:
            what.append(f"its {used:,} tokens exceed the token limit {token_limit:,}")
        return " and ".join(what)

    def cannot_note(self, why: str) -> str:
        """The note when OpenHands has a reason to condense but cannot (`error` is set)."""
        hard = "tokens" in self.reasons
        return (f"{why}, but OpenHands cannot condense: {self.error}"
                + ("; the requirement is hard, so it would reset the whole context (hard_context_reset)" if hard
                   else "; the requirement is soft, so the view is sent as it is"))


def condensation(view: list[Event], params: Sizes, event_tokens: list[int], token_limit: int | None,
                 indices: set[int] | None = None) -> Condensing | None:
    """get_condensation_reasons and _get_forgotten_events (None: no reason to condense).
    `indices`: the view's manipulation indices, where the caller keeps them per view."""
    reasons: list[str] = []
    total = sum(event_tokens)
    if token_limit is not None and total > token_limit:
        reasons.append("tokens")
    if len(view) > params.max_size:
        reasons.append("events")
    if not reasons:
        return None
    tails: list[int] = []
    if "events" in reasons:
        tails.append(params.max_size // 2 - params.keep_first - 1)
    if "tokens" in reasons:
        assert token_limit is not None
        reduce = total - token_limit // 2
        rest = event_tokens[params.keep_first:]
        # get_suffix_length_for_token_reduction: shortest prefix whose tokens exceed `reduce`.
        running, prefix = 0, len(rest)
        if sum(rest) > reduce:
            for k, t in enumerate(rest, start=1):
                running += t
                if running > reduce:
                    prefix = k
                    break
        tails.append(len(rest) - prefix)
    events_from_tail = min(tails)
    naive_end = len(view) - events_from_tail
    protected = params.keep_first
    system = next((i for i, e in enumerate(view) if e.kind == "system"), None)
    if system is not None:
        protected = max(protected, system + 1)
    if indices is None:
        indices = manipulation_indices(view)
    start = find_next(indices, protected)
    end = find_next(indices, naive_end)
    if start is None or end is None:
        return Condensing(tuple(reasons), events_from_tail=events_from_tail, error="Unable to compute forgotten events (no manipulation index past the threshold)")
    forgotten = tuple(range(start, end))
    if not forgotten:
        return Condensing(tuple(reasons), start=start, events_from_tail=events_from_tail,
                          error="Cannot condense 0 events (a tool loop spans almost the entire view)")
    if len(forgotten) < len(view) * params.minimum_progress:
        return Condensing(tuple(reasons), forgotten, start, events_from_tail,
                          error="events forgotten below the minimum progress threshold")
    return Condensing(tuple(reasons), forgotten, start, events_from_tail)
