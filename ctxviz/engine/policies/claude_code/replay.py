"""The incremental replayer of Claude Code's auto-compact (`claude-code`): the count since the last
reported usage or summary, carried from turn to turn, with the offline snapshot gathered so far.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Any

import numpy as np

from ...counting import TokenCounts
from ...id_prefix import IdPrefix
from ...replay_contract import (
    Event,
    Turn,
    _Replay,
    light_plan,
    new_turn,
    prefix_counts,
    recorded_summary_text,
    untrimmed_cuts,
)
from ...reported import reported_usage, usage_mask
from ...session import Message, Session, Summary
from ...summarizers import ExtractiveSummarizer, Summarizer
from ..carried import _Snapshot
from ..pins_carried import NO_EFFECT, CarriedPins, PinEffect, carried_pins
from ..replay_common import _EditsReplay
from ..replay_pairs import _PairSafety
from . import auto_compact as cc


class _CarriedSnapshot:
    """The extractive summarizer's `supyagent_snapshot` over a list of messages that only grows at
    the end (a compaction covers every message so far): what was gathered is carried over."""

    def __init__(self) -> None:
        self.snapshot = _Snapshot()

    def supyagent_snapshot(self, messages: list[Message]) -> str:
        return self.snapshot.text(messages)


class _InForce:
    """A summary in force during a replay, as `cc.plan` reads it, in a form each step reads in O(1):
    its covers are the positions [0, lo) less `holes` (sorted), and `cc._boundary` of a prefix of L
    messages is the first of `candidates` (the compactions, in order, that can match) whose
    window holds L: (before_index, the last L it matches at, or None: every L >= lo)."""

    def __init__(self, summary: Summary, lo: int, holes: list[int], present: bool, candidates: list[tuple[int, int | None]], tokens: list[int]) -> None:
        self.summary = summary
        self.lo = lo
        self.holes = holes
        self.count = lo - len(holes)  # the covers in the session
        self.present = present  # every cover is a message of the session
        self.candidates = candidates
        self.at = 0  # candidates before this one stopped matching (L only grows)
        self.first_gap: int | None = None  # the first hole that is not a system message (lo: none), found when pair safety asks
        self.hole_sums = [0]
        for h in holes:
            self.hole_sums.append(self.hole_sums[-1] + tokens[h])
        self.pinned_holes: tuple[list[int], list[int], list[int], list[int]] | None = None  # with pins: `pin_sums`
        # What every step from `lo` on reads (a generated summary is in force only from there):
        # the covers' count and tokens (`whole`), and the summary's own tokens (`text_tokens`),
        # made on first use, not looked up again at each of the hundreds of steps it stays in force.
        self.whole_covered: tuple[int, int] | None = None
        self.text_tokens = -1

    def whole(self, sums: list[int]) -> tuple[int, int]:
        """How many messages it covers and their tokens, in a prefix of at least `lo` messages
        (`sums`: the prefix sums of every message's tokens)."""
        found = self.whole_covered
        if found is None:
            found = self.whole_covered = (self.count, sums[self.lo] - self.hole_sums[-1])
        return found

    def pin_sums(self, pinned: dict[int, str], tokens: list[int]) -> tuple[list[int], list[int], list[int], list[int]]:
        """Prefix sums over `holes` (the messages before `lo` it leaves, which are sent): how many
        are pinned and their counts, how many are not and theirs (built once, on first use)."""
        if self.pinned_holes is None:
            sums: tuple[list[int], list[int], list[int], list[int]] = ([0], [0], [0], [0])
            for h in self.holes:
                on = h in pinned
                for column, add in zip(sums, (on, tokens[h] if on else 0, not on, 0 if on else tokens[h]), strict=True):
                    column.append(column[-1] + add)
            self.pinned_holes = sums
        return self.pinned_holes

    def covered(self, length: int) -> tuple[int, int]:
        """How many of the first `length` messages it covers, and the bisection point in `holes`."""
        m = min(length, self.lo)
        k = bisect_left(self.holes, m)
        return m - k, k

    def boundary(self, length: int) -> int | None:
        """`cc._boundary` of the session's first `length` messages (lengths asked in increasing order)."""
        if length < self.lo:
            return None
        while self.at < len(self.candidates):
            b, last = self.candidates[self.at]
            if last is None or length <= last:
                return b
            self.at += 1
        return None


class _Covers:
    """Each recorded summary's covers and candidate compactions, read once per session (kept in
    `Session.derived`): a session with many compactions, each covering everything before it, has
    covers whose total length grows as the square of the session's, so covers that are the file's
    first messages in order (a log's compactions) are recognised by one tuple comparison, not a
    look-up per cover."""

    def __init__(self, session: Session) -> None:
        messages = session.messages
        self.position = {m.id: m.index for m in messages}
        self.ids = [m.id for m in messages]
        self.preserved = [set(c.preserved) for c in session.compactions]
        self.befores = [c.before_index for c in session.compactions]
        self.sorted_befores = self.befores == sorted(self.befores)
        self.shapes: list[tuple[int, list[int], bool, list[tuple[int, int | None]]] | None] = []
        first = session.summaries_cover_first
        for k, summary in enumerate(session.summaries):
            covers = summary.covers
            if first[k]:  # the file's first messages, in order (`Session.summaries_cover_first`)
                self.shapes.append((len(covers), [], True, self.candidates(len(covers), [], True)))
                continue
            positions = [self.position.get(c) for c in covers]
            present = [j for j in positions if j is not None]
            if len(set(present)) != len(present):  # a cover named twice: the reference counts it twice
                self.shapes.append(None)
                continue
            lo = max(present) + 1 if present else 0
            holes: list[int] = []
            if len(present) < lo:
                taken = set(present)
                holes = [j for j in range(lo) if j not in taken]
            whole = len(present) == len(summary.covers)
            self.shapes.append((lo, holes, whole, self.candidates(lo, holes, whole)))

    def candidates(self, lo: int, holes: list[int], whole: bool) -> list[tuple[int, int | None]]:
        """The compactions, in order, whose `_boundary` test the covers [0, lo) less `holes` can pass,
        each with the last prefix length it passes at (None: every length from lo on)."""
        if not whole or lo == 0:
            return []
        hole_set = set(holes)
        found: list[tuple[int, int | None]] = []
        start = bisect_left(self.befores, lo) if self.sorted_befores else 0
        for k in range(start, len(self.befores)):
            b, preserved = self.befores[k], self.preserved[k]
            if b < lo or len(holes) > len(preserved):
                continue
            if any((j := self.position.get(p)) is not None and j < lo and j not in hole_set for p in preserved):
                continue  # a preserved message is a cover
            if any(self.ids[h] not in preserved for h in holes):
                continue  # a message before the covers' end is neither a cover nor preserved
            g = lo  # the first position from lo on whose id is not preserved
            while g < len(self.ids) and self.ids[g] in preserved:
                g += 1
            found.append((b, None if b <= g else g))
            if b <= g:
                break  # it matches at every length from lo on: none after it is asked
        return found


def _covers(session: Session) -> _Covers:
    return session.derive(("claude_code.replay", "covers"), _Covers)


class ClaudeCodeReplay(_EditsReplay):
    """Claude Code's auto-compact: the count is the last reported usage plus the tokens after it
    (prefix sums), or, with a summary in force, the messages it does not cover and the summary;
    the policy's own `compact` runs at the turns that reach the trigger, with the snapshot gathered
    so far carried over (its summary covers every message so far).

    The summaries the log records (its compactions) are in force from `Turn.horizon` on, the
    latest in the file's order standing for all, as `cc.plan` takes them; whether the log's usage
    after one counts (`cc._boundary`, the compaction that wrote it) is read from each summary's
    candidate compactions, found once per session (`_Covers`). A session with an id on more than
    one message, a cover named twice, a compaction before_index below 0 or the same summary
    recorded twice replays from scratch.

    Pair safety is carried too (`_PairSafety`): the history sent is one run, every message the
    summary in force does not cover (all of them without one), so a turn drops what
    `apply_pair_safety` would from the problems and the pairs crossing the run's start, and sends
    their tokens less (the trigger is checked before, on the count without the drops, as the
    reference checks it). A turn whose summary leaves a message of the history uncovered before
    its last cover (a recorded compaction's preserved messages) is planned by the reference
    step; a session with a tool call id on more than one call replays from scratch with pair safety.

    Pins are carried (`pins_carried`, over every message: a system message is no zone of its own
    here, so pins push it out like any other): what is not sent is what the summary covers, so
    the pins add covered messages, and push out the oldest unpinned messages sent, first those the
    summary leaves before its last cover (`_InForce.pin_sums`), then the run after it.

    A step reads what is made once per session (the prefix sums, the messages with usage), and a
    summary in force keeps what every later step reads of it (its covers' count and tokens, its
    own tokens): the steps under one summary cost the same as those before it. Each turn is made
    with the step and reply `simulate` numbers it with, so it is not copied."""

    unique_ids = True
    recorded_summaries = ""
    pair_safe_incremental = True
    pins_incremental = True

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        if any(c.before_index < 0 for c in session.compactions):
            return "a compaction before the start of the log"
        if len({id(s) for s in session.summaries}) != len(session.summaries):
            return "the same summary recorded twice"
        if session.summaries and any(shape is None for shape in _covers(session).shapes):
            return "a summary that names a message twice"
        return None

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        messages = session.messages
        ids = [m.id for m in messages]
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.usable = (not pair_safe or self.pairs is not None) and len(set(ids)) == len(ids) and self.scratch_reason(session, params) is None
        if self.pairs is not None:
            self.history_index = [m.index for m in messages if m.role != "system"]  # history position -> session index
        self.threshold = cc.threshold(session.model, params, session.context_window)
        t = self.threshold
        self.cap = max(0, min(t.trigger, t.window))
        self.extra = {"autocompact_threshold": t.trigger, "threshold_how": t.how}
        # What a step reads of the messages so far, made once for the session (at C speed where it
        # can be), not grown message by message: `absorb` has nothing to do but pair safety's.
        self.sums = list(accumulate(self.tokens, initial=0))  # the prefix sums of all messages' tokens
        # The messages with usage (any role) that measured a window (a report of 0 tokens measured
        # nothing): `cc.plan`'s anchor is the last of them in the prefix.
        self.usage_at: list[int] = np.flatnonzero(usage_mask(session)).tolist()
        # The non-system messages up to `grown` and their ids: what a compaction covers (lists that
        # only grow at the end, so a summary's covers are a view and the snapshot is carried),
        # grown when a compaction reads them.
        self.non_system: list[Message] = []
        self.non_system_ids: list[str] = []
        self.grown = 0
        self.synced = 0  # len(generated) the summary state reflects
        self.carried = _CarriedSnapshot() if type(summarizer) is ExtractiveSummarizer else summarizer
        self.system_positions = [m.index for m in messages if m.role == "system"]
        self.recorded: dict[int, _InForce] = {}
        self.generated_in_force: _InForce | None = None
        self.decisions: dict[int, tuple[Any, str]] = {}
        # The log's first call and the tokens before it no call saw: counted after a summary the
        # log's compaction wrote, recorded or generated, and after every summary of ctxviz's own
        # (its request opens with the system prompt and tools as any other does).
        found = reported_usage(session) if self.usable else None
        self.first_call = found.first_index if found is not None else len(messages)
        self.found = found
        if self.usable and session.summaries:
            self.covers = _covers(session)
            starts = session.summary_start_turns
            order = sorted(range(len(starts)), key=lambda k: starts[k])
            self.order = order  # the summaries by their start
            self.starts = [starts[k] for k in order]
            self.latest: list[int] = []  # latest[j]: the last summary in file order among the j + 1 starting first
            for k in order:
                self.latest.append(max(k, self.latest[-1]) if self.latest else k)
            self.earlier_start: list[float] = []  # the first start among the summaries before k in the file
            for k in range(len(starts)):
                self.earlier_start.append(min(self.earlier_start[-1], starts[k - 1]) if k else float("inf"))

    def absorb(self, i: int) -> None:
        if self.pairs is not None:
            self.pairs.grow(i)

    def _grow(self, length: int) -> int:
        """Take the non-system messages among the first `length` into `non_system`; their number."""
        if self.grown < length:
            new = [m for m in self.session.messages[self.grown: length] if m.role != "system"]
            self.non_system += new
            self.non_system_ids += [m.id for m in new]
            self.grown = length
        return len(self.non_system)

    def _last_usage(self, i: int) -> int:
        """The last message up to `i` with usage that measured a window (-1: none)."""
        at = self.usage_at
        if not at:
            return -1
        k = bisect_right(at, i)
        return at[k - 1] if k else -1

    def step(self, i: int) -> Turn:
        if self.pairs is not None:
            self.pairs.grow(i)
        if not self.usable:
            return _Replay.step(self, i)
        if self.synced != len(self.generated):
            self.generated_in_force = self._generated(self.generated[-1], i + 1)
            self.synced = len(self.generated)
        return self._fast(i)

    def _generated(self, summary: Summary, length: int) -> _InForce:
        """ctxviz's summary: it covers every message so far but the system messages (those of the
        prefix it was written at, which `length`, the prefix now, holds)."""
        self._grow(length)
        lo = self.non_system[len(summary.covers) - 1].index + 1
        holes = self.system_positions[: bisect_left(self.system_positions, lo)]
        candidates: list[tuple[int, int | None]] = []
        if self.session.compactions:
            candidates = _covers(self.session).candidates(lo, holes, True)
        return _InForce(summary, lo, holes, True, candidates, self.tokens)

    def _in_force(self, until: int) -> _InForce | None:
        """The summary `cc.plan` reads at a step whose recorded summaries are in force up to `until`."""
        if self.generated:
            return self.generated_in_force
        if not self.session.summaries:
            return None
        j = bisect_right(self.starts, until)
        if not j:
            return None
        return self._recorded(self.latest[j - 1])

    def _recorded(self, k: int) -> _InForce:
        found = self.recorded.get(k)
        if found is None:
            shape = self.covers.shapes[k]
            assert shape is not None
            lo, holes, whole, candidates = shape
            found = self.recorded[k] = _InForce(self.session.summaries[k], lo, holes, whole, candidates, self.tokens)
        return found

    def _fast(self, i: int) -> Turn:
        t = self.threshold
        length = i + 1
        sums = self.sums
        total = sums[length]
        until = self.recorded_until(i)
        summary = self.generated_in_force if self.generated else self._in_force(until)
        covered = covered_tokens = 0
        boundary = None
        if summary is None:
            anchor = self._last_usage(i)
        else:
            if length >= summary.lo:  # (every step from a generated summary on)
                whole = summary.whole_covered
                covered, covered_tokens = whole if whole is not None else summary.whole(sums)
            else:
                covered, k = summary.covered(length)
                covered_tokens = sums[length] - summary.hole_sums[k]
            if summary.candidates and summary.present:
                boundary = summary.boundary(length)
            anchor = -1
            if boundary is not None:
                last_usage = self._last_usage(i)
                if last_usage >= boundary:
                    anchor = last_usage
        if anchor >= 0:
            u = self.session.messages[anchor].usage
            assert u is not None
            used = u.window_fill + u.output_tokens + total - sums[anchor + 1]
        else:
            used = total - covered_tokens
            if summary is not None:
                text_tokens = summary.text_tokens
                used += text_tokens if text_tokens >= 0 else self._summary_tokens(summary)
                if self.first_call < length and self.found is not None:  # (any summary in force: `cc._derive`)
                    used += self.found.unseen_at(length - 1)
        dropped: set[int] | frozenset[int] = _NONE
        freed = 0
        if self.pairs is not None:  # the sent history is history[start:h]: pair safety drops the sent half of broken pairs
            start = self._run_start(summary, length)
            if start is None:
                return _Replay.step(self, i)
            h = length - bisect_left(self.system_positions, length)
            dropped = self.pairs.drops(start, h, h, h)
            if dropped:
                freed = sum(self.tokens[self.history_index[k]] for k in dropped)
        fits = used <= t.window
        events: list[Event] = []
        active = len(self.generated)
        compacts = used >= t.trigger and self.session.messages[i].role in ("user", "tool")
        plan = light_plan(self.policy, {"context": self.cap, "autocompact_buffer": t.window - self.cap}, cc._split(used, self.cap),
                          t.window, used, fits, extra=self.extra) if compacts or (not fits and not freed) else None
        if compacts:  # `cc.compact`'s summary, over the non-system messages so far
            assert plan is not None
            n = self._grow(length)
            self.generated.append(cc.compacted(self.non_system, IdPrefix(self.non_system_ids, n), self.session.messages[i].timestamp,
                                               plan, self.carried, i, events))
        if not self.generated and self.session.summaries:
            recorded = self._recorded_events(i, until, summary)
            if recorded is None:  # a summary written covers none of the messages so far: the reference step (nothing was generated)
                return _Replay.step(self, i)
            events += recorded
        pushed = 0
        if self.pins:  # after the trigger, which reads the count before the pins
            pins = carried_pins(self, every_message=True)
            assert pins is not None
            effect = self._pinned(pins, summary, length, used, t.window)
            if effect.added:
                used += effect.sent_change
                covered -= effect.added
                covered_tokens += effect.pushed_tokens - effect.added_tokens
                pushed = effect.pushed
                fits = used <= t.window
                plan = light_plan(self.policy, {"context": self.cap, "autocompact_buffer": t.window - self.cap}, cc._split(used, self.cap),
                                  t.window, used, fits, extra=self.extra) if not fits else None
        if freed:  # the turn as pair safety leaves it (the trigger above read the count before)
            used -= freed
            fits = used <= t.window
            if not fits:
                plan = light_plan(self.policy, {"context": self.cap, "autocompact_buffer": t.window - self.cap}, cc._split(used, self.cap),
                                  t.window, used, fits, extra=self.extra)
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: plan)  # type: ignore[arg-type,return-value]  (built when it does not fit)
        out = len(dropped) + pushed if dropped or pushed else 0
        return new_turn(i, used, t.window, length - covered - out, out, covered, 0, fits, active, tuple(events), covered_tokens + freed,
                        self.step_at, self.reply)

    def _pinned(self, pins: CarriedPins, summary: _InForce | None, length: int, used: int, window: int) -> PinEffect:
        """What the pins do to the turn of the first `length` messages: they add the pinned
        messages the summary covers, and push out the oldest unpinned sent ones while the count
        is over the window because of them."""
        if summary is None:
            return pins.effect(length, [(0, length)], 0, used, window)
        m, k = min(length, summary.lo), summary.covered(length)[1]
        pinned_count, pinned_tokens, free_count, free_tokens = summary.pin_sums(self.pins, self.tokens)
        count, tokens = pins.pinned_in(0, length)
        tail_count, tail_tokens = pins.pinned_in(m, length)
        added = count - pinned_count[k] - tail_count
        if not added:
            return NO_EFFECT
        extra = tokens - pinned_tokens[k] - tail_tokens
        over = min(extra, used + extra - window)
        effect = PinEffect(added, extra, added)
        if over > 0:  # the messages the summary leaves before its last cover go first
            x = k if free_tokens[k] < over else bisect_left(free_tokens, over, 1, k + 1)
            effect = PinEffect(added, extra, added, free_count[x], free_tokens[x], free_tokens[x])
            over -= free_tokens[x]
        return pins.pushed_out([(m, length)], over, effect)

    def _run_start(self, summary: _InForce | None, length: int) -> int | None:
        """The history position the sent run starts at in the prefix of `length` messages: after
        the summary's covers, where every message it leaves before its last cover is a system one
        (None: one is not, the sent history is not one run)."""
        if summary is None:
            return 0
        gap = summary.first_gap
        if gap is None:  # the first message of the history it leaves before its last cover
            gap = summary.first_gap = next((j for j in summary.holes if self.session.messages[j].role != "system"), summary.lo)
        m = min(length, summary.lo)
        if gap < m:
            return None
        return m - bisect_left(self.system_positions, m)

    def _summary_tokens(self, summary: _InForce) -> int:
        found = summary.text_tokens
        if found < 0:
            found = summary.text_tokens = self.full.text(summary.summary.text)
        return found

    def _recorded_events(self, i: int, until: int, in_force: _InForce | None) -> list[Event] | None:
        """The reference's events for the recorded summaries written since the step before (None:
        one covers none of the messages so far, which the reference step handles)."""
        starts = self.session.summary_start_turns
        lo = bisect_right(self.starts, self.last_horizon)
        hi = bisect_right(self.starts, until)
        if lo >= hi:
            return []
        length = i + 1
        written = sorted(k for k in self.order[lo:hi] if starts[k] > 0)
        events: list[Event] = []
        for k in written:
            summary = self._recorded(k)
            count, _ = summary.covered(length)
            if not count:
                return None
            head, first, last = self._head(summary, min(length, summary.lo))
            if in_force is summary:
                summarized = count
            else:
                assert in_force is not None
                m = min(length, summary.lo, in_force.lo)
                out = set(summary.holes[: bisect_left(summary.holes, m)]) | set(in_force.holes[: bisect_left(in_force.holes, m)])
                summarized = m - len(out)
            decided = self._decided(k) if self.earlier_start[k] > until else None
            events.append(Event(i, "compaction", recorded_summary_text(k, head, first, last, count, last - first + 1 == count, summarized,
                                                                       self.policy, decided)))
        return events

    @staticmethod
    def _head(summary: _InForce, m: int) -> tuple[list[int], int, int]:
        """The first five covered positions below m, the first and the last."""
        holes, head, j, h = summary.holes, [], 0, 0
        while len(head) < 5 and j < m:
            if h < len(holes) and holes[h] == j:
                h += 1
            else:
                head.append(j)
            j += 1
        last = m - 1
        k = bisect_left(holes, m) - 1
        while k >= 0 and holes[k] == last:
            last -= 1
            k -= 1
        return head, head[0], last

    def _decided(self, k: int) -> tuple[Any, str]:
        """The plan's decision on recorded summary k when it opens the summaries in force (the
        plan decides the summary it sends as its first): `cc.plan` of no message under it."""
        found = self.decisions.get(k)
        if found is None:
            alone = dataclasses.replace(self.session, messages=(), summaries=(self.session.summaries[k],))
            decided = cc.plan(alone, self.params, prefix_counts(self.full, alone)).summaries[0]
            found = self.decisions[k] = (decided.decision, decided.reason)
        return found


_NONE: frozenset[int] = frozenset()


REPLAYERS: dict[str, type[_Replay]] = {"claude-code": ClaudeCodeReplay}
