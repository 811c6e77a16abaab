"""Pins carried from turn to turn: `pins.apply_pins` for a turn whose sent history is a few runs of
history positions (the non-system messages, in order), read off prefix sums instead of the plan.

The pins are resolved once, on the whole session (`pins.resolve_pins`; a turn pins those up to its
last message), so which history positions are pinned never changes: the prefix sums of the pinned
messages' counts and of the unpinned ones' are built once. A turn then needs only what its policy
sent before the pins (the runs, the part the pins are counted in and its room): the pinned messages
not sent are added (a bisection per run), and while the plan no longer fits by the policy's own
test the oldest unpinned messages sent are pushed out, found by a bisection over the unpinned sums.
A replayer that carries pins sets `pins_incremental = True`; it reads only the figures a `Turn`
holds, so the policy's `refresh` (which rewrites figures in `Plan.extra`) does not concern it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..replay_contract import _Replay
from ..session import Session


@dataclass(frozen=True)
class PinEffect:
    """What the pins change in a turn: the messages they add (and how many of those the policy had
    summarised rather than dropped), and the messages pushed out to make room."""

    added: int = 0
    added_tokens: int = 0  # their measured counts: each is sent at its count (`apply_pins`)
    added_summarized: int = 0
    pushed: int = 0
    pushed_sent: int = 0  # what the pushed-out messages sent (`MessagePlan.sent_tokens`)
    pushed_tokens: int = 0  # their measured counts (`Totals.dropped` grows by these)
    #: The history positions [a, b) the pushed-out messages lie in (pinned positions in them are not pushed out).
    pushed_runs: tuple[tuple[int, int], ...] = ()
    #: The counts of the added messages the policy had summarised (a policy may count them in another part).
    added_summarized_tokens: int = 0

    @property
    def sent_change(self) -> int:
        """How many more tokens the turn sends."""
        return self.added_tokens - self.pushed_sent


NO_EFFECT = PinEffect()


class CarriedPins:
    """The session's pins as history positions, with the prefix sums `apply_pins` reads."""

    def __init__(self, session: Session, pinned: Mapping[int, str], tokens: Sequence[int], every_message: bool = False) -> None:
        history = [m.index for m in session.messages if every_message or m.role != "system"]
        self.history = history
        self.positions: list[int] = []  # the pinned history positions, in order
        self.pinned_sums = [0]  # pinned_sums[k]: the counts of the first k pinned positions
        self.free_sums = [0]  # free_sums[x]: the counts of the unpinned positions before x
        self.free_counts = [0]  # free_counts[x]: how many positions before x are unpinned
        for x, index in enumerate(history):
            t = tokens[index]
            if index in pinned:
                self.positions.append(x)
                self.pinned_sums.append(self.pinned_sums[-1] + t)
                self.free_sums.append(self.free_sums[-1])
                self.free_counts.append(self.free_counts[-1])
            else:
                self.free_sums.append(self.free_sums[-1] + t)
                self.free_counts.append(self.free_counts[-1] + 1)

    def pinned_in(self, a: int, b: int) -> tuple[int, int]:
        """(how many positions in [a, b) are pinned, their counts)."""
        lo, hi = bisect_left(self.positions, a), bisect_left(self.positions, b)
        return hi - lo, self.pinned_sums[hi] - self.pinned_sums[lo]

    def effect(self, h: int, runs: Sequence[tuple[int, int]], summarized: int, room_used: int, room: int,
               cost: Callable[[int], int] | None = None, push: Sequence[tuple[int, int]] | None = None) -> PinEffect:
        """What the pins do to a turn that has seen history positions [0, h) and sends those in
        `runs` (sorted, disjoint, [a, b)), having summarised [0, `summarized`) and dropped the rest.
        `room_used` and `room` are the policy's own test before the pins: the total used and the
        budget ("total"), or the usage and allotment of the part every history message counts in
        ("parts"). `cost(x)`: the sent tokens of the unpinned positions before x (default: their
        counts; a policy that sends a message at more or less than its count says so). `push`: the
        runs pins may push out of, where a message sent is of the zone "system" (default: `runs`)."""
        count, tokens = self.pinned_in(0, h)
        if not count:
            return NO_EFFECT
        sent_count = sent_tokens = 0
        for a, b in runs:
            c, t = self.pinned_in(a, b)
            sent_count += c
            sent_tokens += t
        added, extra = count - sent_count, tokens - sent_tokens
        if not added:
            return NO_EFFECT
        in_summary = in_summary_tokens = 0
        if summarized:  # the pinned positions before `summarized` that no run sends
            in_summary, in_summary_tokens = self.pinned_in(0, summarized)
            for a, b in runs:
                if a < summarized:
                    c, t = self.pinned_in(a, min(b, summarized))
                    in_summary -= c
                    in_summary_tokens -= t
        over = min(extra, room_used + extra - room)
        return self.pushed_out(runs if push is None else push, over, PinEffect(added, extra, in_summary, added_summarized_tokens=in_summary_tokens), cost)

    def pushed_out(self, runs: Sequence[tuple[int, int]], over: int, effect: PinEffect, cost: Callable[[int], int] | None = None) -> PinEffect:
        """`effect` with the oldest unpinned positions of `runs` pushed out while `over` > 0 (each
        takes its sent tokens, `cost`, off it): the drop loop of `apply_pins`, one bisection a run."""
        F = self.free_sums.__getitem__ if cost is None else cost
        pushed = pushed_sent = pushed_tokens = 0
        pushed_runs: list[tuple[int, int]] = []
        for a, b in runs:
            if over <= 0:
                break
            base = F(a)
            if F(b) - base < over:
                x = b
            elif cost is None:
                x = bisect_left(self.free_sums, base + over, a + 1, b + 1)
            else:
                lo, hi = a + 1, b  # the first x whose cost from a reaches `over`
                while lo < hi:
                    mid = (lo + hi) // 2
                    if F(mid) - base >= over:
                        hi = mid
                    else:
                        lo = mid + 1
                x = lo
            spent = F(x) - base
            over -= spent
            pushed_sent += spent
            pushed += self.free_counts[x] - self.free_counts[a]
            pushed_tokens += self.free_sums[x] - self.free_sums[a]
            if x > a:
                pushed_runs.append((a, x))
        return PinEffect(effect.added, effect.added_tokens, effect.added_summarized, effect.pushed + pushed, effect.pushed_sent + pushed_sent,
                         effect.pushed_tokens + pushed_tokens, effect.pushed_runs + tuple(pushed_runs), effect.added_summarized_tokens)


def carried_pins(replay: _Replay, every_message: bool = False, tokens: Callable[[], Sequence[int]] | None = None) -> CarriedPins | None:
    """The replay's pins as `CarriedPins` over the history positions (`every_message`: over all the
    session's messages), built on first use once `simulate` has resolved them; None without pins.
    `tokens()`: the messages' counts as the plan measures them, where they are not the counts'."""
    if not replay.pins:
        return None
    found: CarriedPins | None = replay.__dict__.get("_carried_pins")
    if found is None:
        counts = replay.full.message_tokens if tokens is None else tokens()
        found = replay.__dict__["_carried_pins"] = CarriedPins(replay.session, replay.pins, counts, every_message)
    return found


def merged_runs(runs: Sequence[tuple[int, int]], more: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Two lists of disjoint runs [a, b) as one list of disjoint sorted runs (touching runs joined)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted([*runs, *more]):
        if out and out[-1][1] >= a:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
