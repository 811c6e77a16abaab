"""Where did X go: in which turns of a replay the context held a term (an anchor it names, else a
case-insensitive substring), when it left, and which event or plain trim took it.

- `where(timeline, term) -> Where`: `spans` (inclusive turn ranges in which the context held the
  term, a case-insensitive substring of a sent message, of a cut message's sent text, of a
  summary or the system prompt), `exits` (turn, the event kind or "window", and the event's
  sentence or the message's own reason at that turn), `at_end`, `said` (messages holding it),
  `anchors` (anchors whose value holds it). Turns are read as retention reads them
  (engine/retention.py): every turn planned for a small replay; else from the replay's counts,
  checked against planned turns, and when the counts disagree a grid refined by bisection (a term
  that leaves and comes back between two grid turns can be missed). 10,000 messages: 5-10 s.
- `where_in_plan(plan, session, term)`: whether one plan sends the term, and the decisions of the
  messages that hold it.
- `matcher(session, term)`: the anchor a term names, the messages that hold it, and whether a text
  holds it, matched as retention matches that anchor, so the two never disagree.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .anchors import Anchor, AnchorIndex, anchors_of
from .retention import View, view_of
from .retention_timeline import EXACT_WORK, _causes, _sample_turns, _suffix_turns, _Views

if TYPE_CHECKING:
    from .plan import Plan
    from .session import Session
    from .simulate import Timeline

@dataclass(frozen=True)
class Exit:
    """The turn at which a term stopped reaching the model, and why."""

    turn: int
    kind: str
    event_turn: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "kind": self.kind, "event_turn": self.event_turn, "message": self.message}


@dataclass(frozen=True)
class Where:
    term: str
    #: Session messages whose text holds the term.
    said: tuple[int, ...]
    #: Anchors whose value holds it.
    anchors: tuple[Anchor, ...]
    #: Inclusive turn ranges in which the context held it.
    spans: tuple[tuple[int, int], ...]
    exits: tuple[Exit, ...]
    #: In the context at the last turn.
    at_end: bool
    #: Every turn from its first mention was planned.
    exact: bool
    #: The term is in the system prompt (always sent).
    in_system_prompt: bool = False
    turns: int = 0
    #: How the turns were read, in a few words.
    method: str = "every turn planned"
    #: The last turn's session index (-1: no turn).
    last_turn: int = -1
    #: Whether the plan of the whole file sends it, where the file goes on after the last step (its
    #: messages in no request, a compaction the log records there); None when it does not.
    in_file_plan: bool | None = None
    #: The compactions the log records after the last step (their `before_index`).
    compactions_after: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"term": self.term, "said_in": list(self.said), "anchors": [a.to_json() for a in self.anchors],
                "in_context": [{"from": a, "to": b} for a, b in self.spans], "exits": [e.to_json() for e in self.exits],
                "at_end": self.at_end, "exact": self.exact, "method": self.method, "in_system_prompt": self.in_system_prompt, "turns": self.turns,
                "last_turn": self.last_turn, "in_file_plan": self.in_file_plan}


#: Whether a text (sent beside the messages, or a cut message's sent part, with its role) holds what is searched.
InText = Callable[[str, str], bool]


def _holds(view: View, in_text: InText, said: tuple[int, ...], roles: Sequence[str]) -> bool:
    k = bisect_right(said, view.turn)
    if any(said[j] in view.full for j in range(k)):
        return True
    return any(in_text(text, roles[i]) for i, text in view.partial.items()) or any(in_text(text, "assistant") for text in view.extra)


def matcher(session: Session, term: str, index: AnchorIndex | None = None) -> tuple[Anchor | None, tuple[int, ...], InText]:
    """(the anchor the term names, the messages that hold it, whether a text holds it). A term that
    names an anchor is matched the way retention matches that anchor (`AnchorIndex.mentions`: any
    form, unquoted in code, a path's other forms), so `where` and retention never disagree; any
    other term is a case-insensitive substring."""
    index = index or anchors_of(session)
    anchor = index.find(term)
    if anchor is not None:
        ident, mentions = anchor.id, index.mentions
        return anchor, anchor.messages, lambda text, role="assistant": ident in mentions(text, role)
    needle = term.lower()
    said = tuple(m.index for m in session.messages if needle in m.text.lower()) if needle else ()
    return None, said, lambda text, role="assistant": bool(needle) and needle in text.lower()


def where(timeline: Timeline, term: str, index: AnchorIndex | None = None, samples: int = 30, exact_work: int = EXACT_WORK) -> Where:
    """Where a term (an anchor it names, else a case-insensitive substring) went: in which turns
    the context held it, when it left, and which event (or plain trim) took it."""
    session = timeline.session
    index = index or anchors_of(session)
    anchor, said, in_text = matcher(session, term, index)
    matching = (anchor,) if anchor is not None else tuple(index.search(term))
    n = len(timeline.turns)
    last_turn = timeline.turns[-1].index if n else -1
    roles = [m.role for m in session.messages]
    in_prompt = bool(session.system_prompt) and in_text(session.system_prompt, "assistant")
    if not n or (not said and not in_prompt):
        return Where(term, said, matching, (), (), False, True, in_prompt, n, last_turn=last_turn)
    in_summary = any(in_text(x.text, "assistant") for x in session.summaries)  # a recorded summary can hold it from turn 0
    start = timeline.step_of(said[0]) if said and not in_prompt and not in_summary else 0  # the first step that can hold it
    if start >= n:  # said after the last step's request: no step sent it
        return Where(term, said, matching, (), (), False, True, in_prompt, n, last_turn=last_turn)
    views = _Views(timeline)
    held: dict[int, bool] = {}

    def at(t: int) -> bool:
        if t not in held:
            held[t] = _holds(views(t), in_text, said, roles)
        return held[t]

    exact = sum(t.index + 1 for t in timeline.turns[start:]) <= exact_work
    if exact:
        for t in range(start, n):
            at(t)
    else:
        grid = sorted({start + round(k * (n - 1 - start) / max(1, samples - 1)) for k in range(samples)})
        for t in grid:
            at(t)
        planned = sorted(set(grid) | {t for t in _sample_turns(timeline, 2, 20)[0] if t >= start})
        modelled = _modelled_where(timeline, in_text, said, {t: views(t) for t in planned})
        method = f"a grid of {len(grid)} planned turns, each change located by bisection"
        if modelled is not None:
            held = modelled
            grid = []
            method = f"every turn read from the replay's counts, checked against {views.plans} planned turns"
        for a, b in zip(grid, grid[1:], strict=False):
            lo, hi = a, b
            if at(lo) == at(hi):
                continue
            while hi - lo > 1:  # one change between them, assumed: find it
                mid = (lo + hi) // 2
                if at(mid) == at(lo):
                    lo = mid
                else:
                    hi = mid
    known = sorted(held)
    spans: list[tuple[int, int]] = []
    exits: list[Exit] = []
    open_at: int | None = None
    index_of = [t.index for t in timeline.turns]  # spans and exits name steps by their turns' session indices
    for j, t in enumerate(known):
        if held[t] and open_at is None:
            open_at = t
        if not held[t] and open_at is not None:
            spans.append((index_of[open_at], index_of[known[j - 1]]))
            open_at = None
            exits.append(_exit(timeline, t, said))
    if open_at is not None:
        spans.append((index_of[open_at], index_of[known[-1]]))
    after = _after_last_step(timeline, in_text, said, roles)
    return Where(term, said, matching, tuple(spans), tuple(exits), held[known[-1]], exact, in_prompt, n,
                 "every turn planned" if exact else method, last_turn, *after)


def _after_last_step(timeline: Timeline, in_text: InText, said: tuple[int, ...], roles: Sequence[str]) -> tuple[bool | None, tuple[int, ...]]:
    """Whether the plan of the whole file sends the term, where the file goes on after the replay's
    last step, and the compactions the log records there. The last step held it while the log's own
    compaction after it had taken it out: "at the last turn: in the context" stood alone."""
    last = timeline.turns[-1].index
    if last >= len(timeline.session.messages) - 1:
        return None, ()
    compactions = tuple(c.before_index for c in timeline.session.compactions if c.before_index > last)
    return _holds(view_of(timeline.file_plan()), in_text, said, roles), compactions


def _modelled_where(timeline: Timeline, in_text: InText, said: tuple[int, ...], checks: Mapping[int, View]) -> dict[int, bool] | None:
    """Whether each turn holds the term, from `_suffix_turns`; None when a planned turn sends other
    messages than the model says."""
    walk = _suffix_turns(timeline, {t: view.extra for t, view in checks.items()})
    if walk is None:
        return None
    holders = set(said)
    sent = 0
    messages: set[int] = set()
    texts_seen: tuple[str, ...] | None = None
    in_texts = False
    held: dict[int, bool] = {}
    first = said[0] if said else 0
    for t, entered, left, texts in walk:
        sent += sum(1 for k in entered if k in holders) - sum(1 for k in left if k in holders)
        messages.update(entered)
        messages.difference_update(left)
        if texts != texts_seen:
            texts_seen, in_texts = texts, any(in_text(x, "assistant") for x in texts)
        if timeline.turns[t].index >= first or in_texts:
            held[t] = sent > 0 or in_texts
        view = checks.get(t)
        if view is not None and (view.partial or view.full != messages):
            return None
    return held


def _exit(timeline: Timeline, turn: int, said: tuple[int, ...]) -> Exit:
    """Why step `turn` no longer holds the term; the exit names the step by its turn's session index."""
    causes = _causes(timeline, turn)
    at = timeline.turns[turn].index
    if causes:
        first = causes[0]
        return Exit(at, first.kind, first.turn, "; ".join(e.message for e in causes))
    plan = timeline.plan_at(turn)
    reasons = [f"#{k}: {plan.messages[k].reason}" for k in said if k <= at and not plan.messages[k].sent]
    return Exit(at, "window", at, reasons[-1] if reasons else f"no event: {timeline.policy} no longer sends it")


def where_in_plan(plan: Plan, session: Session, term: str) -> dict[str, Any]:
    """Whether one plan sends a term, and the decisions of the messages that hold it."""
    view = view_of(plan)
    _, said, in_text = matcher(session, term)
    return {"term": term, "sent": _holds(view, in_text, said, [m.role for m in session.messages]),
            "messages": [{"index": k, "decision": plan.messages[k].decision.value, "reason": plan.messages[k].reason} for k in said]}
