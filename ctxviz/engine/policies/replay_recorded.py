"""The summaries a log records (Claude Code's, Codex's and the Responses API's compactions), carried
by the incremental replayers as prefixes of the file: their shapes read once per session
(`_RecordedShapes`), those in force as the replay goes (`_RecordedInForce`, `_InForceTotal`), and
the reference's compaction events at each step (`recorded_events`).
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections.abc import Callable

from ..plan import Decision
from ..replay_contract import Event, _Replay, recorded_summary_text
from ..session import Message, Session


def recorded_events(replay: _Replay, recorded: _RecordedInForce, i: int,
                    decide: Callable[[int, int], tuple[int, tuple[Decision, str] | None]]) -> list[Event]:
    """The reference's compaction events (`replay_contract._recorded_summary_event`) at step `i`
    for the recorded summaries written since the step before, each covering the prefix's first m
    messages: `decide(k, m)` says how many of those the plan summarises and its decision on
    summary k. One loop for every replayer that carries recorded summaries as prefixes."""
    events = []
    for k in recorded.written(replay.last_horizon, replay.recorded_until(i)):
        m = recorded.span[k]
        summarized, decided = decide(k, m)
        events.append(Event(i, "compaction", recorded.shapes.span_text(k, m, summarized, replay.policy, decided)))
    return events


class _RecordedShapes:
    """The session's recorded summaries in the shape the replayers carry (kept in `Session.derived`,
    read once per session): each summary's covers among the file's messages as the positions
    [0, lo) (lo 0: it covers none of them), the summaries by the turn they start, and why a session
    cannot be carried that way (`why_not`; then the replay hands the turns from the first summary
    that covers a message of the file on to the reference step).

    Claude Code's compactions cover every message before their boundary but a preserved tail, each
    compaction the one before, so a summary's covers are a prefix of the file and the latest one in
    force supersedes the earlier ones. Codex's compactions cover the non-system messages before
    them: the system messages among them stay where they are (`system_gaps`; `lo` then ends after
    the last message covered, and a replayer that does not say it carries that shape hands those
    turns to the reference step, `why_not_for`)."""

    def __init__(self, session: Session) -> None:
        messages = session.messages
        self.lo: list[int] = []
        self.why_not: str | None = None
        #: Every summary covering messages of the file covers just its non-system ones before `lo`,
        #: and some system message lies among them.
        self.system_gaps = False
        self.system_before: list[int] = []
        if not session.summaries:  # nothing recorded: no pass over the messages
            self.starts: tuple[int, ...] = ()
            self.order: list[int] = []
            self.sorted_starts: list[int] = []
            self.first_covering = len(messages)
            return
        position: dict[str, int] = {}
        for m in messages:
            position.setdefault(m.id, m.index)
        prefix, non_system = True, True  # every covering summary covers all of [0, lo); just its non-system messages
        first = session.summaries_cover_first
        system_before = _system_counts(messages)
        for k, summary in enumerate(session.summaries):
            covers = summary.covers
            if first[k]:  # the file's first messages, in order
                self.lo.append(len(covers))
                non_system = non_system and not system_before[len(covers)]
                continue
            present = [position[c] for c in covers if c in position]
            lo = max(present) + 1 if present else 0
            if lo:
                distinct = len(set(present)) == len(present)
                prefix = prefix and distinct and len(present) == lo
                non_system = (non_system and distinct and len(present) == lo - system_before[lo]
                              and all(messages[j].role != "system" for j in present))
            self.lo.append(lo)
        covering = any(self.lo)
        if not prefix:
            if non_system:
                self.system_gaps = True
            else:
                self.why_not = "a recorded summary that covers the file's messages with gaps"
        if covering and len(position) != len(messages):
            self.why_not = "an id on more than one message"
        if len({id(s) for s in session.summaries}) != len(session.summaries):
            self.why_not = "the same summary recorded twice"
        starts = session.summary_start_turns
        self.starts = starts
        self.order = sorted(range(len(starts)), key=lambda k: starts[k])  # the summaries by their start
        self.sorted_starts = [starts[k] for k in self.order]
        self.first_covering = min((s for s, lo in zip(starts, self.lo, strict=True) if lo), default=len(messages))
        self.system_before = system_before

    def why_not_for(self, replayer: object) -> str | None:
        """Why `replayer` (a replayer or its class) cannot carry these summaries (None: it can)."""
        if self.why_not is None and self.system_gaps and not getattr(replayer, "recorded_system_gaps", False):
            return "a recorded summary that leaves out the system messages among those it covers, as Codex's compactions do"
        return self.why_not

    def covered_count(self, m: int) -> int:
        """How many of the prefix's first m messages a summary spanning them covers."""
        return m - self.system_before[m] if self.system_gaps else m

    def span_text(self, k: int, m: int, summarized: int, policy: str, decided: tuple[Decision, str] | None) -> str:
        """The reference's compaction sentence (`replay_contract._recorded_summary_event`) for
        summary k spanning the prefix's first m messages, of which the plan summarises `summarized`."""
        if not self.system_gaps:
            return recorded_summary_text(k, list(range(min(m, 5))), 0, m - 1, m, True, summarized, policy, decided)
        covered = self._non_system(m)
        contiguous = covered[-1] - covered[0] + 1 == len(covered)
        return recorded_summary_text(k, covered[:5], covered[0], covered[-1], len(covered), contiguous, summarized, policy, decided)

    def _non_system(self, m: int) -> list[int]:
        """The positions of the non-system messages among the first m (a compaction event's; rare)."""
        before = self.system_before
        return [j for j in range(m) if before[j + 1] == before[j]]

    @staticmethod
    def of(session: Session) -> _RecordedShapes:
        return session.derive(("replay_recorded", "recorded shapes"), _RecordedShapes)


class _RecordedInForce:
    """The session's recorded summaries in force at a step, as `state()` hands them to the plan (those
    starting up to `Turn.horizon`, in the file's order) and as `common.recorded_covers` reads them:
    each one's span is the positions [0, min(lo, L)) of the prefix of L messages; one is superseded
    when a later one's span holds it. Recomputed only when a summary comes into force (or while
    one in force reaches past the prefix), so a step reads it in O(1)."""

    def __init__(self, shapes: _RecordedShapes) -> None:
        self.shapes = shapes
        self.j = -1  # how many summaries (by start) are in force
        self.pending = False  # a summary in force reaches past the prefix: its span grows with L
        self.in_force: list[int] = []  # summary indices, file order
        self.live: list[int] = []  # those not superseded, file order
        self.superseded: set[int] = set()
        self.covered = 0  # C: the prefix's messages [0, C) are covered
        self.span: dict[int, int] = {}

    def update(self, length: int, until: int) -> bool:
        """Bring the state to the prefix of `length` messages, summaries starting up to `until`;
        whether what is in force changed."""
        j = bisect_left(self.shapes.sorted_starts, until + 1)
        if j == self.j and not self.pending:
            return False
        if self.j >= 0 and not self.pending and j > self.j and self._append(j, length):
            return True
        self.j = j
        lo = self.shapes.lo
        self.in_force = sorted(self.shapes.order[:j])
        self.span = {k: min(lo[k], length) for k in self.in_force}
        self.pending = any(lo[k] > length for k in self.in_force)
        later = 0
        superseded: set[int] = set()
        for k in reversed(self.in_force):
            m = self.span[k]
            if m and later >= m:
                superseded.add(k)
            later = max(later, m)
        self.superseded = superseded
        self.covered = later
        self.live = [k for k in self.in_force if k not in superseded]
        return True

    def _append(self, j: int, length: int) -> bool:
        """`update` where the summaries coming into force follow every one in force in the file's
        order and lie within the prefix (a log's compactions, one after the other): each
        supersedes the newest ones not superseded whose spans it holds. False: recompute."""
        lo = self.shapes.lo
        new = sorted(self.shapes.order[self.j : j])
        if (self.in_force and new[0] < self.in_force[-1]) or any(lo[k] > length for k in new):
            return False
        for k in new:
            m = lo[k]
            self.span[k] = m
            if m:
                live = self.live
                while live and self.span[live[-1]] and self.span[live[-1]] <= m:
                    self.superseded.add(live.pop())
                if live and not self.span[live[-1]] and any(0 < self.span[x] <= m for x in live):
                    self.j = -1  # a summary of nothing before the file stands between: recompute
                    return False
                self.covered = max(self.covered, m)
            self.in_force.append(k)
            self.live.append(k)
        self.j = j
        return True

    def written(self, last_horizon: int, until: int) -> list[int]:
        """The summaries written since the step before (the reference's compaction events), in the file's order."""
        s = self.shapes
        lo, hi = bisect_left(s.sorted_starts, last_horizon + 1), bisect_left(s.sorted_starts, until + 1)
        return sorted(k for k in s.order[lo:hi] if s.starts[k] > 0)


def carried_recorded(replay: _Replay) -> tuple[_RecordedInForce | None, int]:
    """The recorded summaries a replayer carries as prefixes of the file (None: the session records
    none), and the first turn it hands to the reference step for them (the session's length: none,
    or the first summary covering a message of the file where the replayer cannot carry their shape)."""
    session = replay.session
    if not session.summaries:
        return None, len(session.messages)
    shapes = _RecordedShapes.of(session)
    return _RecordedInForce(shapes), shapes.first_covering if shapes.why_not_for(replay) is not None else len(session.messages)


class _InForceTotal:
    """A running total over the recorded summaries in force (each one's value once, combined with
    `combine`: a sum, a maximum): as a log's compactions come into force one after the other they
    are appended to `_RecordedInForce.in_force`, so only the new ones are read; any other change
    reads them all again."""

    def __init__(self, value: Callable[[int], int], combine: Callable[[int, int], int] = operator.add) -> None:
        self.value, self.combine = value, combine
        self.seen: list[int] | None = None
        self.count = self.total = 0

    def read(self, recorded: _RecordedInForce) -> int:
        in_force = recorded.in_force
        if in_force is not self.seen or len(in_force) < self.count:
            self.seen, self.count, self.total = in_force, 0, 0
        for k in in_force[self.count :]:
            self.total = self.combine(self.total, self.value(k))
        self.count = len(in_force)
        return self.total


def _system_counts(messages: tuple[Message, ...]) -> list[int]:
    """Prefix counts of the system messages: [j] is how many of the first j are."""
    counts = [0]
    for m in messages:
        counts.append(counts[-1] + (m.role == "system"))
    return counts
