"""Retention turn by turn through a simulation: which of the session's anchors each turn of a
replay still sends, which each change lost, and what took them (engine/retention.py measures one
plan; engine/retention_walk.py walks every turn per anchor).

- `timeline_retention(timeline) -> TimelineRetention`: `points` (a `TurnRetention` per turn:
  anchors said so far, kept, instructions, instructions kept, score), `losses` (each change that
  lost anchors: the turn, the event that caused it or "window" for a plain trim, the anchors),
  `event_losses`, `lowest`, `final` (the last turn's `Retention`, with reasons). The replay's
  `Turn` keeps counts, not which messages were sent, so:
  * a small replay (`EXACT_WORK`: up to ~550 turns) plans every turn with `Timeline.plan_at`
    (the samples: 0.2-1.3 s);
  * a larger one plans a grid of `samples` turns and the turns around up to `max_events` events,
    then reads *every* turn from the counts: the system messages, the newest `kept - system`
    other messages, and the texts a planned turn with the same summaries in force sends beside
    them. It is used only when it agrees with every planned turn (same messages, same anchors);
    otherwise (a policy that does not keep a suffix, like `categories`, or a turn that truncates)
    `points` are the planned turns only. `method` says which. 10,000 messages of a coding agent:
    31-71 plans (missy: about 5 ms each, 0.15 s), then every turn read per anchor as columns
    (engine/retention_walk.py) in about 0.06 s; each loss is put in rank order when read.
    The plans need no anchors: `planned_views(timeline)` makes them ahead, and `simulate` does so
    while a child process extracts the anchors (engine/anchors_ahead.py); pass them as `views=`.
- `timeline_retention_score(timeline) -> float`: the last turn's score, one plan (what
  `ctxviz sweep` and `ctxviz check`'s min_retention read).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from .anchors import Anchor, AnchorIndex, anchors_of
from .gc_pause import without_gc
from .plan import Plan
from .ranking import Rank
from .retention import Retention, Scored, View, _Ranked, _Ranks, plan_retention, present, view_of
from .wording import clip, counted, flat

if TYPE_CHECKING:
    from .replay_contract import Event
    from .simulate import Timeline

#: Replays up to this many message-plans in all (the sum of every turn's prefix length) are
#: planned turn by turn; larger ones are read from the replay's counts (checked) or sampled.
EXACT_WORK = 150_000
#: Event kinds after which a new summary is in force from the next turn (when the turn count says so).
SUMMARY_KINDS = frozenset({"summary", "consolidation", "compaction", "hard_threshold"})
#: Event kinds that never remove anything.
NEUTRAL_KINDS = frozenset({"overflow"})


@dataclass(frozen=True)
class TurnRetention(Scored):
    turn: int
    anchors: int
    kept: int
    instructions: int
    instructions_kept: int

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "score": round(self.score, 4), "anchors": self.anchors, "kept": self.kept,
                "instruction_score": round(self.instruction_score, 4), "instructions": self.instructions,
                "instructions_kept": self.instructions_kept}


@dataclass(frozen=True)
class Loss:
    """Anchors in the context at `turn - 1` and gone at `turn`, and what took them."""

    turn: int
    #: The cause's kind: an event kind (summary, compaction, trim...), or "window" for a plain trim.
    kind: str
    #: The turn of the event that caused it (a summary made at turn t is in force from t + 1).
    event_turn: int
    #: The event's own sentence, or what happened when no event did.
    message: str
    lost: tuple[Anchor, ...]
    ranks: Mapping[int, Rank] = field(default_factory=dict)
    #: Set when the event put ctxviz's offline stand-in summary in force (the policy's `stand_in`).
    stand_in: str = ""

    def sentence(self, shown: int = 6, width: int | None = None) -> str:
        """`lost at turn 96 (summary at turn 95: ...): `src/auth/session.py`, #4512, 'never push to main'`.

        With `width`, the sentence is one line (white space runs as one space) of at most `width`
        characters: fewer anchors are named, then the cause is cut with "…", so the count of the
        anchors not named always ends it."""
        cause = f"{self.kind} at turn {self.event_turn}: {self.message}" if self.kind != "window" else self.message
        against = " [lost against ctxviz's offline stand-in summary, not the agent's own]" if self.stand_in else ""
        labels = [a.label() for a in self.lost[:shown]]

        def text(cause: str, names: list[str]) -> str:
            more = len(self.lost) - len(names)
            return f"lost at turn {self.turn} ({cause}){against}: {', '.join(names)}" + (f" and {more} more" if more else "")

        if width is None:
            return text(cause, labels)
        cause, labels = flat(cause), [flat(label) for label in labels]
        for k in range(len(labels), 0, -1):
            if len(line := text(cause, labels[:k])) <= width:
                return line
        # Too long even with one anchor named: cut the cause (to no less than 60), then that anchor.
        name, fixed = labels[0], len(text("", [""]))
        cause = clip(cause, max(width - fixed - len(name), 60))
        return text(cause, [clip(name, max(width - fixed - len(cause), 20))])

    def to_json(self, limit: int | None = None) -> dict[str, Any]:
        lost = self.lost if limit is None else self.lost[:limit]
        return {"turn": self.turn, "kind": self.kind, "event_turn": self.event_turn, "message": self.message,
                **({"stand_in": self.stand_in} if self.stand_in else {}), "lost_count": len(self.lost),
                "lost": [{**a.to_json(), **({"rank": self.ranks[a.id].tier, "why": self.ranks[a.id].why} if a.id in self.ranks else {})}
                         for a in lost]}


@dataclass(frozen=True)
class TimelineRetention:
    points: tuple[TurnRetention, ...]
    losses: tuple[Loss, ...]
    final: Retention | None
    #: True when every turn was planned (otherwise `points` are the sampled turns).
    exact: bool
    #: How the turns were chosen, in a sentence.
    method: str
    plans: int

    def point(self, turn: int) -> TurnRetention | None:
        """The retention at `turn`, or at the nearest computed turn before it."""
        turns = [p.turn for p in self.points]
        k = bisect_right(turns, turn)
        return self.points[k - 1] if k else None

    @property
    def lowest(self) -> TurnRetention | None:
        return min(self.points, key=lambda p: (p.score, p.turn), default=None)

    @property
    def event_losses(self) -> tuple[Loss, ...]:
        return tuple(loss for loss in self.losses if loss.kind != "window")

    def to_json(self, limit: int | None = 50) -> dict[str, Any]:
        return {"exact": self.exact, "method": self.method, "plans": self.plans, "points": [p.to_json() for p in self.points],
                "losses": [loss.to_json(limit) for loss in self.losses],
                "final": self.final.to_json(limit) if self.final is not None else None}


class _Views:
    """Turn views rebuilt from the replay (`Timeline.plan_at`), each planned once, and the last
    turn's whole plan (`final_plan`)."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.cache: dict[int, View] = {}
        self.plans = 0
        self._final: Plan | None = None

    def final_plan(self) -> Plan:
        """The last turn's plan (what `TimelineRetention.final` reads), planned once: the sampled
        turns end with the last one, and its view and this read the same plan (the replay's
        largest: planned twice, it was about a tenth of the samples' cost)."""
        if self._final is None:
            self._final = self.timeline.plan_at(len(self.timeline.turns) - 1)
        return self._final

    def __call__(self, turn: int) -> View:
        found = self.cache.get(turn)
        if found is None:
            self.plans += 1
            last = turn == len(self.timeline.turns) - 1
            plan = self.final_plan() if last else self.timeline.plan_at(turn)
            found = view_of(plan, self.timeline.turns[turn].index)
            if len(self.cache) > 256:
                self.cache.pop(next(iter(self.cache)))
            self.cache[turn] = found
        return found


def _applies_at(timeline: Timeline, event: Event) -> int:
    """The first step whose context an event changes: a summary made after step t's build is in
    force from t + 1; a trim, a truncation or a recorded summary changes step t itself. (Steps are
    positions in `timeline.turns`; an event names its turn's session index.)"""
    t = timeline.step_of(event.turn)
    turns = timeline.turns
    if event.kind in SUMMARY_KINDS and t + 1 < len(turns) and turns[t + 1].summaries > turns[t].summaries:
        return t + 1
    return t


def _causes(timeline: Timeline, turn: int) -> list[Event]:
    """The events that changed the context between turn - 1 and turn. A summary made after turn
    t's build is in force from t + 1; one made before it (Codex compacts before the call, so the
    turn that fires it already sends the compacted history) changes turn t itself: an event of
    the turn is its cause when no earlier event explains the change."""
    turns = timeline.turns
    candidates = [*(turns[turn - 1].events if turn > 0 else ()), *turns[turn].events]
    found = [e for e in candidates if e.kind not in NEUTRAL_KINDS and _applies_at(timeline, e) == turn]
    return found or [e for e in turns[turn].events if e.kind not in NEUTRAL_KINDS]


def _writes_summary(timeline: Timeline, event: Event) -> bool:
    """Whether the event put a summary the replay wrote (ctxviz's stand-in) in force."""
    if event.kind not in SUMMARY_KINDS:
        return False
    turns, t = timeline.turns, timeline.step_of(event.turn)  # an event names its turn's session index
    if t >= len(turns):
        return False
    return (t + 1 < len(turns) and turns[t + 1].summaries > turns[t].summaries) or (t > 0 and turns[t].summaries > turns[t - 1].summaries)


def _loss(timeline: Timeline, turn: int, lost: Iterable[int], index: AnchorIndex) -> Loss:
    """What step `turn` lost (the anchors' ids); the loss names the step by its turn's session index, as events do.
    Its anchors are put in rank order when first read (`_Ranked`)."""
    order = _Ranked(lost, index)
    ranks = _Ranks(order)
    causes = _causes(timeline, turn)
    at = timeline.turns[turn].index
    if causes:
        first = causes[0]
        message = "; ".join(e.message for e in causes)
        stand_in = ""
        if any(_writes_summary(timeline, e) for e in causes):
            from .policies import get_policy

            try:
                stand_in = get_policy(timeline.policy).stand_in
            except Exception:  # a plugin policy no longer registered
                stand_in = ""
        return Loss(at, first.kind, first.turn, message, order, ranks, stand_in)
    return Loss(at, "window", at, f"no event: {timeline.policy} no longer sends them (plain trim)", order, ranks)


def work(timeline: Timeline) -> int:
    """Message-plans needed to plan every turn: the sum of the prefix lengths."""
    return sum(t.index + 1 for t in timeline.turns)


def _sample_turns(timeline: Timeline, samples: int, max_events: int) -> tuple[list[int], list[int]]:
    """(turns to plan, turns whose change from the turn before is explained): a grid, and the
    turn before and after each event (summaries and compactions first, spread over the session)."""
    n = len(timeline.turns)
    grid = {round(k * (n - 1) / max(1, samples - 1)) for k in range(samples)} if n else set()
    applied = sorted({_applies_at(timeline, e) for e in timeline.events if e.kind not in NEUTRAL_KINDS and 0 < _applies_at(timeline, e) < n})
    if len(applied) > max_events:
        step = len(applied) / max_events
        applied = [applied[int(k * step)] for k in range(max_events)]
    wanted = grid | set(applied) | {t - 1 for t in applied}
    return sorted(wanted), applied


def _suffix_turns(timeline: Timeline, planned: Mapping[int, tuple[str, ...]] | None = None
                  ) -> Iterator[tuple[int, list[int], list[int], tuple[str, ...]]] | None:
    """The replay's counts read as contexts, turn by turn, without planning: every system message,
    the newest `kept - system messages` others, and the texts beside them. Yields (turn, messages
    that enter, messages that leave, texts beside the messages); None when a turn cut a message (its
    cut text is not in the counts). Only a model of the context: callers check it against planned
    turns before they trust it.

    The texts beside the messages are a planned turn's own (`planned`: turn -> `View.extra`), else
    those of the latest planned turn with the same summaries in force (the policy's wrapper, a
    prompt enriched with memory), else the system prompt and the summary in force."""
    model = _suffix_model(timeline, planned)
    return model.walk() if model is not None else None


def _suffix_model(timeline: Timeline, planned: Mapping[int, tuple[str, ...]] | None = None) -> _Suffix | None:
    """The model `_suffix_turns` walks, or None when a turn cut a message."""
    if any(t.truncated for t in timeline.turns):
        return None
    return _Suffix(timeline, planned or {})


class _Suffix:
    """What `_suffix_turns` reads: each turn's window over the messages (`walk`, or `windows` as
    columns) and the texts beside them (`beside`, the same for every turn between two `breaks`)."""

    def __init__(self, timeline: Timeline, planned: Mapping[int, tuple[str, ...]]) -> None:
        self.timeline = timeline
        self.turns = timeline.turns
        self.planned = planned
        self.starts = timeline.session.summary_start_turns
        self.by_state: dict[tuple[int, int], list[tuple[int, tuple[str, ...]]]] = {}
        for t in sorted(planned):
            self.by_state.setdefault(self.state(t), []).append((t, planned[t]))

    def state(self, t: int) -> tuple[int, int]:
        """The summaries in force at turn t: the replay's count, and the session's recorded ones begun by its horizon."""
        turn = self.turns[t]
        return turn.summaries, sum(1 for first in self.starts if first <= turn.horizon)

    def beside(self, t: int) -> tuple[str, ...]:
        planned = self.planned
        if t in planned:
            return planned[t]
        same = self.by_state.get(self.state(t))
        if same:  # the latest planned turn before t with the same state, else the first after it
            k = bisect_left(same, t, key=itemgetter(0))  # (turn, texts) pairs, by turn
            return same[k - 1][1] if k else same[0][1]
        turn = self.turns[t]
        session = self.timeline.session
        if turn.summaries:
            summaries: tuple[str, ...] = (self.timeline.summaries[turn.summaries - 1].text,)
        else:
            summaries = tuple(x.text for x, first in zip(session.summaries, self.starts, strict=True) if first <= turn.index)
        return ((session.system_prompt,) if session.system_prompt else ()) + summaries

    def breaks(self) -> list[int]:
        """The turns at which `beside` may change (sorted): the first, each change of state or of the
        recorded summaries begun, each planned turn and the turn after it. Between two of them it
        gives the same texts: the same state and the same planned turns before."""
        turns = self.turns
        n = len(turns)
        if not n:
            return []
        summaries = np.fromiter((t.summaries for t in turns), dtype=np.int64, count=n)
        changes = np.diff(summaries) != 0
        if self.starts:  # recorded summaries begun by each turn's horizon (its state) and by its index (its default texts)
            starts = np.sort(np.asarray(self.starts, dtype=np.int64))
            for at in ((t.horizon for t in turns), (t.index for t in turns)):
                changes |= np.diff(np.searchsorted(starts, np.fromiter(at, dtype=np.int64, count=n), side="right")) != 0
        changed = np.flatnonzero(changes) + 1
        planned = {t for p in self.planned for t in (p, p + 1) if 0 <= t < n}
        return sorted({0, *changed.tolist(), *planned})

    def windows(self) -> tuple[list[int], list[int], np.ndarray, np.ndarray, np.ndarray]:
        """Every turn's window as columns: (the messages that are not system messages, the system
        messages, and per turn the system messages taken so far and the window's start and end
        among the others), as `walk` moves them."""
        turns = self.turns
        messages = self.timeline.session.messages
        n = len(turns)
        taken = turns[-1].index + 1 if n else 0
        is_system = np.fromiter((m.role == "system" for m in messages[:taken]), dtype=bool, count=taken)
        history = np.flatnonzero(~is_system).tolist()
        system = np.flatnonzero(is_system).tolist()
        index_at = np.fromiter((t.index for t in turns), dtype=np.int64, count=n)
        kept = np.fromiter((t.kept for t in turns), dtype=np.int64, count=n)
        systems = np.cumsum(is_system)[index_at] if n else np.zeros(0, dtype=np.int64)
        end = index_at + 1 - systems
        start = end - np.minimum(np.maximum(kept - systems, 0), end)
        return history, system, systems, start, end

    def walk(self) -> Iterator[tuple[int, list[int], list[int], tuple[str, ...]]]:
        messages = self.timeline.session.messages
        history: list[int] = []
        systems = 0
        start = end = 0
        taken = 0  # messages taken in: a step takes those since the step before
        for t, turn in enumerate(self.turns):
            entered: list[int] = []
            left: list[int] = []
            for k in range(taken, turn.index + 1):
                if messages[k].role == "system":
                    systems += 1
                    entered.append(k)
                else:
                    history.append(k)
            taken = turn.index + 1
            h = len(history)
            keep = min(max(turn.kept - systems, 0), h)
            new_start, new_end = h - keep, h
            if new_end > end:
                entered += history[max(end, new_start):new_end]
            if new_start < start:
                entered += history[new_start:min(start, new_end)]
            if new_start > start:
                left += history[start:min(new_start, end)]
            start, end = new_start, new_end
            yield t, entered, left, self.beside(t)


def _modelled(timeline: Timeline, index: AnchorIndex, checks: Mapping[int, set[int]], views: _Views
              ) -> tuple[list[TurnRetention], list[Loss]] | None:
    """Retention at every turn from `_suffix_turns`, or None when the model disagrees with a
    planned turn in `checks` (turn -> the anchors its plan sends): computed per anchor as columns
    (engine/retention_walk.py), or by `_modelled_by_counts` for a walk that is not one of stays."""
    from .retention_walk import NotStays, modelled_columns

    model = _suffix_model(timeline, {t: views(t).extra for t in checks})
    if model is None:
        return None
    try:
        found = modelled_columns(timeline, index, model, checks, views)
    except NotStays:
        return _modelled_by_counts(timeline, index, checks, views)
    if found is None:
        return None
    rows, gone = found
    return [TurnRetention(*row) for row in rows], [_loss(timeline, t, ids, index) for t, ids in gone.items()]


def _modelled_by_counts(timeline: Timeline, index: AnchorIndex, checks: Mapping[int, set[int]], views: _Views
                        ) -> tuple[list[TurnRetention], list[Loss]] | None:
    """`_modelled` turn by turn: a count per anchor moved for every anchor of every message that
    enters or leaves (the reference the columns are tested against)."""
    walk = _suffix_turns(timeline, {t: views(t).extra for t in checks})
    if walk is None:
        return None
    messages: set[int] = set()
    anchors, by_message, first = index.anchors, index.by_message, index.first_indices
    instruction = [a.kind == "instruction" for a in anchors]
    count = [0] * len(anchors)
    scope = kept = instructions = instructions_kept = 0
    extra: tuple[str, ...] = ()
    extra_ids: frozenset[int] = frozenset()
    points: list[TurnRetention] = []
    losses: list[Loss] = []
    for t, entered, left, texts in walk:
        at = timeline.turns[t].index
        grown = bisect_right(first, at)
        for i in range(scope, grown):
            if count[i]:
                kept += 1
                instructions_kept += instruction[i]
            instructions += instruction[i]
        before, scope = scope, grown
        dropped: list[int] = []
        if texts != extra:
            ids = frozenset().union(*(index.ids_in_text(x) for x in texts)) if texts else frozenset()
            additions, removals = [ids - extra_ids], [extra_ids - ids]
            extra, extra_ids = texts, ids
        else:
            additions, removals = [], []
        additions += [by_message[k] for k in entered]
        removals += [by_message[k] for k in left]
        for group in additions:
            for i in group:
                count[i] += 1
                if count[i] == 1 and i < scope:
                    kept += 1
                    instructions_kept += instruction[i]
        for group in removals:
            for i in group:
                count[i] -= 1
                if not count[i]:
                    dropped.append(i)
                    if i < scope:
                        kept -= 1
                        instructions_kept -= instruction[i]
        points.append(TurnRetention(at, scope, kept, instructions, instructions_kept))
        gone = [i for i in dict.fromkeys(dropped) if not count[i] and i < before]  # by id: hashing an Anchor hashes its messages
        if gone:
            losses.append(_loss(timeline, t, gone, index))
        messages.update(entered)
        messages.difference_update(left)
        expected = checks.get(t)
        if expected is not None:
            view = views(t)
            if view.partial or view.full != messages or {i for i in expected if i < scope} != {i for i in range(scope) if count[i]}:
                return None
    return points, losses


@without_gc
def planned_views(timeline: Timeline, samples: int = 30, max_events: int = 20, exact_work: int = EXACT_WORK) -> _Views:
    """The plans `timeline_retention` makes, made now: the sampled turns' views and the last turn's
    plan. They need no anchors, so `simulate` makes them while a child process extracts the anchors
    (engine/anchors_ahead.py); pass the result as `timeline_retention(..., views=)` with the same
    arguments. A replay small enough to plan every turn gets its views as they are asked for
    (holding them all would outgrow the views' cache and plan some twice)."""
    views = _Views(timeline)
    if timeline.turns and work(timeline) > exact_work:
        for t in _sample_turns(timeline, samples, max_events)[0]:
            views(t)
        views.final_plan()
    return views


@without_gc
def timeline_retention(timeline: Timeline, index: AnchorIndex | None = None, samples: int = 30, max_events: int = 20,
                       exact_work: int = EXACT_WORK, views: _Views | None = None) -> TimelineRetention:
    """Retention turn by turn and what each change lost (see the module docstring for the cost).
    `views`: the plans already made by `planned_views` with the same arguments."""
    index = index or anchors_of(timeline.session)
    n = len(timeline.turns)
    views = views if views is not None and views.timeline is timeline else _Views(timeline)
    exact = work(timeline) <= exact_work
    if exact:
        turns, explained = list(range(n)), list(range(1, n))
        method = f"every turn planned ({counted(n, 'plan')})"
    else:
        turns, explained = _sample_turns(timeline, samples, max_events)
        changes = len({_applies_at(timeline, e) for e in timeline.events if e.kind not in NEUTRAL_KINDS})
        method = (f"{len(turns):,} of {n:,} turns planned: a grid of {samples} and the turns around "
                  f"{len(explained):,} of {changes:,} changes by events")
    presence: dict[int, set[int]] = {}
    points: list[TurnRetention] = []
    instruction_ids = [a.id for a in index.anchors if a.kind == "instruction"]
    for t in turns:
        ids = present(index, views(t))
        presence[t] = ids
        at = timeline.turns[t].index
        scope = bisect_right(index.first_indices, at)
        kept = sum(1 for i in ids if i < scope)
        instructions = bisect_right(instruction_ids, scope - 1)
        instructions_kept = sum(1 for i in instruction_ids[:instructions] if i in ids)
        points.append(TurnRetention(at, scope, kept, instructions, instructions_kept))
    losses: list[Loss] = []
    modelled = None if exact else _modelled(timeline, index, presence, views)
    if modelled is not None:
        points, losses = modelled
        method = (f"every turn read from the replay's counts (the newest messages and the summary in force), "
                  f"checked against {len(turns):,} planned turns")
    else:
        for t in explained:
            before, after = presence.get(t - 1), presence.get(t)
            if before is None or after is None:
                continue
            scope = bisect_right(index.first_indices, timeline.turns[t - 1].index)
            gone = [i for i in before - after if i < scope]
            if gone:
                losses.append(_loss(timeline, t, gone, index))
    final = None
    if n:
        final = plan_retention(views.final_plan(), timeline.session, index, lazy=True)
    return TimelineRetention(tuple(points), tuple(losses), final, exact, method, views.plans + (1 if n else 0))


def timeline_retention_score(timeline: Timeline) -> float:
    """The share of the session's anchors still sent at the last turn of a replay: one plan (the
    anchors are extracted once per session), so sweeps and `ctxviz check` can ask it of every
    combination they replay."""
    if not timeline.turns:
        return 1.0
    return plan_retention(timeline.plan_at(len(timeline.turns) - 1), timeline.session).score
