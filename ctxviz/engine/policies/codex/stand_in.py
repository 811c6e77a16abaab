"""The stand-in summary of the newest live messages, their reading kept per session (`Session.derived`).

When a compaction request overflows the window, Codex drops its oldest items, so the stand-in
summary (supyagent's snapshot, `summarizers.supyagent_snapshot`) reads the live history from the
first item the request still holds: a suffix, which each window size moves. Each of the snapshot's
sections keeps its last items in order of first appearance, so every message of the suffix counts
(an item seen late may first appear early) and the first plan that compacts reads them all.

What that reading yields is kept here, per section, as columns over the messages read: each item
in order, where each message's items end, and where each item last occurred before. An item first
appears in a suffix where it did not occur before the suffix's start, so a later plan whose suffix
starts within what was read finds a section's last items with one comparison over the suffix's
items in numpy, and one that starts earlier reads only the messages before what was read. (Gathering
the sections message by message from the kept readings took nearly a microsecond a message: at
100,000 messages a re-plan with the window moved spent 40 ms there.) The text is
`supyagent_snapshot(live[start:])`'s, byte for byte (tests/test_codex_stand_in.py holds them together).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from ...session import Message, Session
from ...summarizers import features_of, render_snapshot

#: How many items each kept section shows (`supyagent_snapshot`'s): files modified, key decisions,
#: important values, and the requests (pending tasks).
LIMITS = (12, 8, 12, 4)


class _Section:
    """One section's items over the messages read, in order: what `summarizers._unique` needs of
    any suffix of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: list[str] = []
        self.ends = np.zeros(1, dtype=np.int64)  # ends[k]: how many items the first k messages read have
        # Made at the second ask: each item's code (equal items, equal codes) and where the same
        # item occurred last before it (-1: never; an empty item: never first).
        self.table: dict[str, int] = {}
        self.codes: np.ndarray | None = None
        self.before: np.ndarray | None = None

    def prepend(self, items: list[str], lengths: np.ndarray) -> None:
        """The items of messages read before those read so far (`lengths`: how many each has)."""
        ends = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ends[1:])
        self.ends = np.concatenate((ends[:-1], self.ends + len(items)))
        if self.codes is not None:
            self.codes = np.concatenate((self._coded(items), self.codes))
            self.before = None
        self.items = items + self.items

    def last_unique(self, first_message: int) -> list[str]:
        """`_unique(items of messages[first_message:], limit)`: the last `limit` distinct non-empty
        items, in order of first appearance: the items that occurred nowhere before in the suffix."""
        if self.before is None:
            self._index()
        assert self.before is not None
        start = int(self.ends[first_message])
        firsts = np.flatnonzero(self.before[start:] < start)[-self.limit:]
        return [self.items[start + k] for k in firsts.tolist()]

    def _coded(self, items: list[str]) -> np.ndarray:
        table = self.table
        for item in dict.fromkeys(items):
            if item not in table:
                table[item] = len(table)
        return np.fromiter(map(table.__getitem__, items), dtype=np.int64, count=len(items))

    def _index(self) -> None:
        if self.codes is None:
            self.codes = self._coded(self.items)
        codes = self.codes
        # Each item's last occurrence before it: the one before it among the equal codes, in order.
        order = np.argsort(codes, kind="stable")
        same = codes[order[1:]] == codes[order[:-1]]
        before = np.full(len(codes), -1, dtype=np.int64)
        before[order[1:][same]] = order[:-1][same]
        empty = self.table.get("")
        if empty is not None:  # `_unique` leaves empty items out
            before[codes == empty] = len(before)
        self.before = before


_Columns = tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...], tuple[str, ...]]


class SuffixSnapshots:
    """The snapshot of `messages[start:]` for any start, each message read once.

    The first ask, which may be the only one, gathers its sections from the readings as
    `supyagent_snapshot` does (a plan that compacts once pays nothing for an index it never uses);
    the sections' columns are made from those readings at the second."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.read_from = len(messages)  # messages[read_from:] are read
        self.sections = tuple(_Section(limit) for limit in LIMITS)
        self.last_action: tuple[int, str] | None = None  # the newest message read with an action: position, action
        self.last_request: tuple[int, str] | None = None
        self.asked = False
        self.unindexed: _Columns | None = None  # the first ask's readings, not yet in the sections
        # The app plans on worker threads: one ask at a time, so none sees another's half-made columns.
        self.lock = threading.Lock()

    def text(self, start: int) -> str:
        """`supyagent_snapshot(messages[start:])`."""
        with self.lock:
            return self._text(start)

    def _text(self, start: int) -> str:
        if not self.asked:
            self.asked = True
            self.unindexed = files, decisions, values, requests = self._read(start)
            f, d, v, p = (_unique(items, limit) for items, limit in zip((chain.from_iterable(files), chain.from_iterable(decisions),
                                                                         chain.from_iterable(values), requests), LIMITS, strict=True))
            return render_snapshot(f, d, v, _value(self.last_action), _value(self.last_request), p)
        if self.unindexed is not None:
            self._prepend(self.unindexed)
            self.unindexed = None
        if start < self.read_from:
            self._prepend(self._read(start))
        first = start - self.read_from
        files, decisions, values, pending = (s.last_unique(first) for s in self.sections)
        action = self.last_action[1] if self.last_action is not None and self.last_action[0] >= start else ""
        request = self.last_request[1] if self.last_request is not None and self.last_request[0] >= start else ""
        return render_snapshot(files, decisions, values, action, request, pending)

    def _read(self, start: int) -> _Columns:
        """Read messages[start:read_from]: their files, decisions, values and requests, in columns."""
        features = features_of(self.messages[start:self.read_from])
        if not features:  # (the first ask may be of no message)
            return (), (), (), ()
        # The columns, each one pass at C speed (zip(*features) handed it one argument per message:
        # twice as slow); the last action is found from the end, its column never made.
        files, decisions, values, requests = (tuple(map(itemgetter(k), features)) for k in (0, 1, 2, 4))
        if self.last_action is None:
            self.last_action = _last_written(features, start, 3)
        if self.last_request is None:
            self.last_request = _last_written(requests, start)
        self.read_from = start
        return files, decisions, values, requests

    def _prepend(self, columns: _Columns) -> None:
        """Put the columns of messages read before those in the sections into the sections."""
        *items, requests = columns
        for section, column in zip(self.sections, items, strict=False):
            section.prepend(list(chain.from_iterable(column)), np.fromiter(map(len, column), dtype=np.int64, count=len(column)))
        self.sections[3].prepend(list(filter(None, requests)), np.fromiter(map(bool, requests), dtype=np.int64, count=len(requests)))


def _unique(items: Iterable[str], limit: int) -> list[str]:
    """`summarizers._unique`: the last `limit` distinct non-empty items, in order of first appearance."""
    return list(filter(None, dict.fromkeys(items)))[-limit:]


def _value(last: tuple[int, str] | None) -> str:
    return last[1] if last is not None else ""


def _last_written(column: Sequence[Any], start: int, field: int | None = None) -> tuple[int, str] | None:
    """The last non-empty value of `column` (the messages' from `start` on; with `field`, that
    field of each of its rows) and its message's position (nearly always among the last few)."""
    for k in range(len(column) - 1, -1, -1):
        value = column[k] if field is None else column[k][field]
        if value:
            return start + k, value
    return None


def suffix_snapshots(session: Session, live: Sequence[Message]) -> SuffixSnapshots:
    """The session's `SuffixSnapshots` of its live history. The live history follows from the
    session alone (`compaction_columns.rollout_parts`), the same messages under every counting
    scheme, so one is kept per session."""
    return session.derive(("codex.stand_in", "live"), lambda _session: SuffixSnapshots(live))
