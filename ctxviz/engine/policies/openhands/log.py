"""OpenHands' event log as `View.from_events` reads it back (openhands-sdk 1.58.0,
openhands/sdk/context/view/view.py and openhands/sdk/event/condenser.py).

`View.from_events` appends the log's events one by one and applies each Condensation to the events
it holds *so far* (`Condensation.apply`: drop the forgotten ones, insert the summary at
`summary_offset`); only at the end does it enforce the View's properties. But the condenser
computed `summary_offset` on a view whose properties were already enforced. So when the view had
left events out ahead of the forgotten span (a second observation of one tool call, a call without
its observation, the rest of a broken thinking tool loop), the summary lands that many events
earlier than where the forgotten span began: sometimes inside the protected head, where the next
condensation keeps it rather than folding it into the new summary.

ctxviz reproduces this by replaying a replay's condensations (the messages after which each fired,
`Summary.written_after`) on the log: each is recomputed with `condensation()` on the view at that
point and applied as the SDK applies it. A summary whose recomputed covers are not its own (one a
file records, or made with other parameters) is placed the plain way instead: where the span it
covers began (`recorded_log`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from ...session import Message, Session, Summary
from .summary_input import forgotten_items, summary_text
from .view import Event, Sizes, condensation, enforce_properties

LATEST = "summary"  # the event id of the summary the session holds (the latest condensation's)


@dataclass
class Log:
    """The log as View.from_events holds it before it enforces the properties."""

    #: The events not forgotten, in the log's order, each summary where its Condensation put it.
    events: list[Event]
    #: Every event of the log with a mark where each Condensation sits: a Condensation ends a tool
    #: loop, and ToolLoopAtomicityProperty reads the whole log.
    marked: list[Event]
    #: Per summary event: the messages it stands for (its forgotten events' and the summaries' it folded).
    covers: dict[str, frozenset[int]] = field(default_factory=dict)
    #: Per summary event: its text (the latest's is the session's; earlier ones' are ctxviz's offline stand-in).
    texts: dict[str, str] = field(default_factory=dict)
    #: Per summary OpenHands put ahead of events of the head it kept: how many of those, and how
    #: many events the view had left out ahead of the span it forgot.
    early: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: The messages some condensation forgot.
    forgotten: set[int] = field(default_factory=set)
    #: Per summary a condensation replayed here wrote: what its summariser was shown, in the view's
    #: order (a summary it folded by name, a message by index), which its text is made of.
    inputs: dict[str, tuple[str | int, ...]] = field(default_factory=dict)

    def copy(self) -> Log:
        return Log(list(self.events), list(self.marked), dict(self.covers), dict(self.texts), dict(self.early), set(self.forgotten),
                   dict(self.inputs))


def recorded_log(session: Session, all_events: list[Event], summary: Summary | None) -> Log:
    """The log for a summary ctxviz cannot replay: its covered messages forgotten, the summary where
    the first of them was, and a mark wherever the covered part begins and ends (or after each
    message the summary says it was written after)."""
    if summary is None:
        return Log(list(all_events), list(all_events))
    index = {m.id: m.index for m in session.messages}
    covered = {index[c] for c in summary.covers if c in index}
    events = [e for e in all_events if e.message not in covered]
    first = next((k for k, e in enumerate(all_events) if e.message in covered), len(all_events))
    events.insert(sum(1 for e in all_events[:first] if e.message not in covered), Event(LATEST, "summary", None))
    return Log(events, _marks(all_events, summary, session), {LATEST: frozenset(covered)}, {LATEST: summary.text}, {}, covered)


def _marks(events: list[Event], summary: Summary, session: Session) -> list[Event]:
    covered = set(summary.covers)
    after = set(summary.written_after)
    out: list[Event] = []
    previous = None
    for k, e in enumerate(events):
        state = e.message is not None and session.messages[e.message].id in covered
        if previous is not None and state != previous and not after:
            out.append(Event(f"mark{len(out)}", "mark", None))
        out.append(e)
        previous = state
        last_of_message = k + 1 == len(events) or events[k + 1].message != e.message
        if e.message is not None and last_of_message and session.messages[e.message].id in after:
            out.append(Event(f"mark{len(out)}", "mark", None))
    return out


def replayed_log(session: Session, summary: Summary, all_events: list[Event], params: Sizes, measure: Measure,
                 token_limit: int | None, cache_key: tuple[object, ...]) -> Log | None:
    """The log with each of the replay's condensations applied where and as OpenHands applies it
    (None: the summary does not say where they fired, or they do not come out as it says)."""
    if not summary.written_after:
        return None
    index = {m.id: m.index for m in session.messages}
    if len(index) != len(session.messages):
        return None  # an id on more than one message: the points are ambiguous
    points = [index.get(i, -1) for i in summary.written_after]
    if min(points) < 0 or points != sorted(set(points)):
        return None
    at_last = _log_at(session, summary.written_after, points, all_events, params, measure, token_limit, cache_key)
    if at_last is None or at_last.covers[LATEST] != {index[c] for c in summary.covers if c in index}:
        return None
    log = at_last.copy()
    log.texts[LATEST] = summary.text
    for e in all_events:
        if e.message is not None and e.message > points[-1]:
            log.events.append(e)
            log.marked.append(e)
    for e in log.events:
        if e.kind == "summary":
            measure.text_of(log, e.id)  # an earlier summary still in the view is sent: it needs its text
    return log


class Measure:
    """The tokens of the view's events: `event_tokens` for the system prompt and the messages'
    events; a summary's text is counted, and an earlier summary's text (which the replay did not
    keep) is ctxviz's offline stand-in of what its summariser was shown (`Log.inputs`: the summary
    it folded, as far as it is shown, and the events it forgot), made when first needed."""

    def __init__(self, session: Session, event_tokens: Callable[[Event], int], count_text: Callable[[str], int]) -> None:
        self.session = session
        self.event_tokens = event_tokens
        self.count_text = count_text

    def text_of(self, log: Log, name: str) -> str:
        """The summary's text, and first those of the summaries it folded that have none yet (in a
        loop, not by recursion: a long session's chain holds thousands)."""
        if name in log.texts:
            return log.texts[name]
        messages = self.session.messages
        texts = log.texts
        pending = [name]
        while pending:
            current = pending[-1]
            inputs = log.inputs[current]  # (every summary without a text was written by a condensation replayed here)
            needed = [i for i in inputs if isinstance(i, str) and i not in texts]
            if needed:
                pending += needed
                continue
            pending.pop()
            texts[current] = summary_text([texts[i] if isinstance(i, str) else messages[i] for i in inputs])
        return texts[name]

    def __call__(self, e: Event, log: Log) -> int:
        return self.count_text(self.text_of(log, e.id)) if e.kind == "summary" else self.event_tokens(e)


# The log at each replayed condensation (before the summary's own text is set), by the messages
# after which the condensations fired: every later turn of a replay plans with the same summary,
# and the next summary's condensations extend its, so each condensation is replayed once.
_CACHE: OrderedDict[tuple[object, ...], tuple[tuple[Message, ...], Log | None]] = OrderedDict()
_CACHE_SIZE = 8


def _log_at(session: Session, written_after: tuple[str, ...], points: list[int], all_events: list[Event], params: Sizes,
            measure: Measure, token_limit: int | None, cache_key: tuple[object, ...]) -> Log | None:
    """The log right after the last of the condensations (the latest summary named LATEST)."""
    # Whether the log starts with the system prompt's event is part of what a cached log was made
    # from: a prefix whose only system message is empty has one, the same messages before it do not.
    cache_key = (any(e.kind == "system" for e in all_events[:1]), *cache_key)

    def cached(n: int) -> tuple[bool, Log | None]:
        hit = _CACHE.get((written_after[:n], *cache_key))
        if hit is not None and hit[0] == session.messages[: points[n - 1] + 1]:
            _CACHE.move_to_end((written_after[:n], *cache_key))
            return True, hit[1]
        return False, None

    done = 0
    log: Log | None = Log([], [])
    for n in range(len(points), 0, -1):
        found, at = cached(n)
        if found:
            done, log = n, at
            break
    for n in range(done + 1, len(points) + 1):
        if log is None:
            return None
        log = log.copy()
        if LATEST in log.covers:  # the summary the previous condensation wrote is an earlier one now
            _rename(log, LATEST, f"summary-{n - 1}")
        since = points[n - 2] if n > 1 else -1
        for e in all_events:
            if (e.message is None and n == 1) or (e.message is not None and since < e.message <= points[n - 1]):
                log.events.append(e)
                log.marked.append(e)
        if _condense(log, LATEST, params, measure, token_limit):
            log.marked.append(Event(f"condensation-{n}", "mark", None))
        else:
            log = None
        _CACHE[(written_after[:n], *cache_key)] = (session.messages[: points[n - 1] + 1], log)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return log


def _rename(log: Log, old: str, new: str) -> None:
    log.events = [Event(new, "summary", None) if e.id == old else e for e in log.events]
    log.covers[new] = log.covers.pop(old)
    if old in log.inputs:
        log.inputs[new] = log.inputs.pop(old)
    if old in log.early:
        log.early[new] = log.early.pop(old)
    log.texts.pop(old, None)  # the latest summary's text is the session's; an earlier one's is made when needed


def _condense(log: Log, name: str, params: Sizes, measure: Measure, token_limit: int | None) -> bool:
    """One Condensation, decided on the enforced view and applied to the log's events before enforcement."""
    view, _ = enforce_properties(log.events, log.marked)
    # The tokens matter only to a token limit (and an earlier summary's text is made only then).
    per_event = [measure(e, log) for e in view] if token_limit is not None else [0] * len(view)
    outcome = condensation(view, params, per_event, token_limit)
    if outcome is None or outcome.error:
        return False
    gone = [view[k] for k in outcome.forgotten]
    gone_ids = {e.id for e in gone}
    messages = {e.message for e in gone if e.message is not None}
    folded = [e.id for e in gone if e.kind == "summary"]
    # Where the forgotten span began in the log, and where Condensation.apply puts the summary:
    # `summary_offset` counted on the log's events, which still hold the events the view left out.
    began = next(k for k, e in enumerate(log.events) if e.id in gone_ids)
    in_view = {e.id for e in view}
    passed = sum(1 for e in log.events[outcome.start:began] if e.id in in_view)  # head events the summary now precedes
    log.events = [e for e in log.events if e.id not in gone_ids]
    log.events.insert(outcome.start, Event(name, "summary", None))
    log.covers[name] = frozenset(messages.union(*(log.covers[s] for s in folded)))
    log.inputs[name] = forgotten_items(gone)
    if passed:
        log.early[name] = (passed, began - outcome.start)
    log.forgotten |= messages
    return True


def placement_notes(log: Log, view: list[Event]) -> list[str]:
    """Where the summaries in the view sit other than where their forgotten span began, and why."""
    notes: list[str] = []
    in_view = [e.id for e in view if e.kind == "summary" and e.id in log.covers]
    if LATEST in log.early and LATEST in in_view:
        passed, left_out = log.early[LATEST]
        notes.append(f"OpenHands put the summary ahead of the last {_events(passed)} of the head it kept, not where the span it forgot "
                     f"began: the view had left {_events(left_out)} out ahead of that span, and View.from_events applies the "
                     "condensation's summary_offset before it leaves them out")
    earlier = [name for name in in_view if name != LATEST]
    if earlier:
        notes.append(f"{len(earlier)} earlier summar{'y stays' if len(earlier) == 1 else 'ies stay'} in the view: OpenHands put "
                     f"{'it' if len(earlier) == 1 else 'them'} early, inside the head a later condensation keeps "
                     "(text: ctxviz's offline stand-in of the messages covered)")
    return notes


def _events(n: int) -> str:
    return f"{n} event{'s' if n != 1 else ''}"
