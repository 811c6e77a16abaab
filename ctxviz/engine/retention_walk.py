"""Retention at every turn of a large replay, read from the replay's counts as columns.

`retention._modelled` walks the turns and moves a count per anchor for every anchor of every
message that enters or leaves the context: about 200,000 steps in Python for 10,000 messages of a
coding agent, and then ranks the anchors of each of some 2,000 losses. This module gives the same
points and losses from the same walk (`retention._suffix_turns`), computed once per anchor rather
than once per turn:

- each message's stays in the context are intervals of turns (it enters, it leaves);
- an anchor is held by messages in the union of the intervals of the messages that name it
  (a message that leaves at the turn another enters keeps it held: the count never reaches 0);
- the texts beside the messages (system prompt, summary in force) hold a set of anchors that changes
  only when those texts change, so they are added per stretch of turns with the same texts.

Per turn, the count of anchors held is a difference array summed once (numpy); an anchor is lost
at the turn its last interval ends, unless the texts beside the messages hold it then, or at a
change of those texts that drops it while no message holds it. Same answers as `_modelled`
(tests/test_retention_walk.py compares them on every policy); losses are ranked when read.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from .anchors import AnchorIndex

if TYPE_CHECKING:
    from .simulate import Timeline

Walk = Iterator[tuple[int, list[int], list[int], tuple[str, ...]]]
#: Per turn: (its session index, anchors said so far, kept, instructions said, instructions kept).
Row = tuple[int, int, int, int, int]


class NotStays(Exception):
    """The walk's enters and leaves of a message do not alternate (no walk `_suffix_turns` makes)."""


def modelled_columns(timeline: Timeline, index: AnchorIndex, model: Any, checks: Mapping[int, set[int]],
                     views: Callable[[int], Any]) -> tuple[list[Row], dict[int, list[int]]] | None:
    """`retention._modelled` for the model `_suffix_turns` walks (`retention._Suffix`): a row per
    turn and the ids of the anchors lost at each turn that lost some, or None when a planned turn in
    `checks` (turn -> the anchors its plan sends) disagrees with the model. `views(t)` gives a
    checked turn's `retention.View`. Raises `NotStays` for a walk it cannot read."""
    turns = timeline.turns
    n = len(turns)
    anchors = index.anchors
    count_anchors = len(anchors)
    if not n:
        return [], {}
    # -- the stretches of turns with the same texts beside the messages (anchor ids they hold)
    stretch_starts: list[int] = []
    stretch_ids: list[frozenset[int]] = []
    texts_now: tuple[str, ...] = ()
    for t in model.breaks():
        texts = model.beside(t)
        if texts != texts_now or not stretch_starts:
            ids = frozenset().union(*(index.ids_in_text(x) for x in texts)) if texts else frozenset()
            if not stretch_starts or ids != stretch_ids[-1]:
                stretch_starts.append(t)
                stretch_ids.append(ids)
            texts_now = texts
    # -- each message's stays: (message, from turn, to turn), to n when it never leaves
    history, system, systems, start, end = model.windows()
    if np.all(start[1:] >= start[:-1]):  # the window never moves back: one stay per message at most
        stays = _stays_of_windows(history, system, systems, start, end)
        for t in sorted(checks):
            view = views(t)
            if view.partial or view.full != {*system[:systems[t]], *history[start[t]:end[t]]}:
                return None
    else:
        found = _stays_of_walk(model.walk(), checks, views, n)
        if found is None:
            return None
        stays = found
    checked = sorted(checks)
    index_at = np.fromiter((turn.index for turn in turns), dtype=np.int64, count=n)
    first = np.asarray(index.first_indices, dtype=np.int64)
    scope = np.searchsorted(first, index_at, side="right")  # anchors said by each turn
    in_scope_from = np.searchsorted(index_at, first, side="left")  # each anchor: the first turn that counts it
    instruction = np.fromiter((a.kind == "instruction" for a in anchors), dtype=bool, count=count_anchors)
    instruction_ids = np.flatnonzero(instruction)
    stay_msgs, stay_from, stay_to = stays
    # -- each anchor's stays through its messages, joined where they touch or overlap
    by_message = index.by_message
    lengths = np.fromiter(map(len, by_message), dtype=np.int64, count=len(by_message))
    flat = np.fromiter(chain.from_iterable(by_message), dtype=np.int64, count=int(lengths.sum()))
    offsets = np.zeros(len(by_message) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    per = lengths[stay_msgs]
    total = int(per.sum())
    big = n + 2
    if total:
        starts = np.repeat(offsets[stay_msgs] - (np.cumsum(per) - per), per)
        held_by = flat[np.arange(total, dtype=np.int64) + starts]
        held_from = np.repeat(stay_from, per)
        held_to = np.repeat(stay_to, per)
        order = np.lexsort((held_from, held_by))
        held_by, held_from, held_to = held_by[order], held_from[order], held_to[order]
        reach = np.maximum.accumulate(held_by * big + held_to)  # the latest end so far, within each anchor
        before = np.empty(total, dtype=np.int64)
        before[0] = -1
        before[1:] = reach[:-1] - held_by[1:] * big  # negative at an anchor's first stay
        opens = held_from > before
        heads = np.flatnonzero(opens)
        tails = np.append(heads[1:] - 1, total - 1)
        block_anchor = held_by[heads]
        block_from = held_from[heads]
        block_to = reach[tails] - block_anchor * big
    else:
        block_anchor = block_from = block_to = np.zeros(0, dtype=np.int64)
    held = np.cumsum(np.bincount(block_from, minlength=n + 1) - np.bincount(block_to, minlength=n + 1))[:n]
    is_rule = instruction[block_anchor]
    rules_held = np.cumsum(np.bincount(block_from[is_rule], minlength=n + 1) - np.bincount(block_to[is_rule], minlength=n + 1))[:n]
    block_key = block_anchor * big + block_from  # sorted: by anchor, then by turn
    # -- the texts beside the messages, a stretch of turns at a time
    beside = np.zeros(n + 1, dtype=np.int64)
    rules_beside = np.zeros(n + 1, dtype=np.int64)
    stretch_ends = stretch_starts[1:] + [n]
    stretch_arrays = [np.fromiter(sorted(ids), dtype=np.int64, count=len(ids)) for ids in stretch_ids]
    for s0, s1, x in zip(stretch_starts, stretch_ends, stretch_arrays, strict=True):
        if not len(x):
            continue
        lo = np.maximum(in_scope_from[x], s0)
        keep = lo < s1
        x, lo = x[keep], lo[keep]
        _add(beside, rules_beside, instruction[x], lo, np.full(len(x), s1), 1)
        # minus the turns in which a message holds it too (counted once)
        a, b0, b1 = _blocks_of(x, block_anchor, block_from, block_to)
        lo_of = lo[np.searchsorted(x, a)]
        c0, c1 = np.maximum(b0, lo_of), np.minimum(b1, s1)
        overlap = c0 < c1
        _add(beside, rules_beside, instruction[a[overlap]], c0[overlap], c1[overlap], -1)
    beside = np.cumsum(beside)[:n]
    rules_beside = np.cumsum(rules_beside)[:n]
    kept = held + beside
    rules_kept = rules_held + rules_beside
    rules = np.searchsorted(instruction_ids, scope, side="left")
    # -- the planned turns agree with the model on what they send
    for t in checked:
        sent = set(block_anchor[(block_from <= t) & (block_to > t)].tolist())
        k = bisect_right(stretch_starts, t) - 1
        limit = int(scope[t])
        sent.update(i for i in stretch_ids[k] if i < limit)
        if {i for i in checks[t] if i < limit} != sent:
            return None
    # -- losses: a stay that ends while the texts beside hold nothing of it, and texts that drop what no message holds
    gone: dict[int, list[int]] = {}
    ends = block_to < n
    end_turn, end_anchor = block_to[ends], block_anchor[ends]
    if len(end_turn):
        stretch_of = np.searchsorted(np.asarray(stretch_starts, dtype=np.int64), end_turn, side="right") - 1
        beside_too = np.zeros(len(end_turn), dtype=bool)
        # `sorted(set(...))`, not `np.unique`: the same ints in the same order, and `np.unique` imports
        # numpy.ma the first time (10-20 ms of a `simulate` that needs nothing else of it).
        for k in sorted(set(stretch_of.tolist())):
            if stretch_ids[k]:
                at = stretch_of == k
                beside_too[at] = np.isin(end_anchor[at], stretch_arrays[k])
        lost_turn, lost_anchor = end_turn[~beside_too], end_anchor[~beside_too]
        order = np.argsort(lost_turn, kind="stable")
        lost_turn, lost_anchor = lost_turn[order], lost_anchor[order]
        heads = [0, *(np.flatnonzero(np.diff(lost_turn)) + 1).tolist()]
        ids = lost_anchor.tolist()
        for t, a, b in zip(lost_turn[heads].tolist(), heads, [*heads[1:], len(ids)], strict=True):
            gone[t] = ids[a:b]
    for k in range(1, len(stretch_starts)):
        t = stretch_starts[k]
        dropped = np.fromiter(sorted(stretch_ids[k - 1] - stretch_ids[k]), dtype=np.int64)
        dropped = dropped[in_scope_from[dropped] <= t - 1] if len(dropped) else dropped
        if not len(dropped):
            continue
        where = np.searchsorted(block_key, dropped * big + t, side="right") - 1
        found = where >= 0
        safe = np.where(found, where, 0)
        by_message_now = found & (block_anchor[safe] == dropped) & (block_to[safe] > t) if len(block_key) else np.zeros(len(dropped), dtype=bool)
        dropped = dropped[~by_message_now]
        if len(dropped):  # a stay that ended here is already among them: `_Ranked` keeps each id once
            gone.setdefault(t, []).extend(dropped.tolist())
    rows = list(zip(index_at.tolist(), scope.tolist(), kept.tolist(), rules.tolist(), rules_kept.tolist(), strict=True))
    return rows, {t: gone[t] for t in sorted(gone)}


def _stays_of_windows(history: list[int], system: list[int], systems: np.ndarray, start: np.ndarray, end: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stays of a walk whose window only moves forward (`_Suffix.windows`): the message at
    place p of the others enters at the first turn whose window ends past it and leaves at the
    first whose window starts past it (a message the window skipped never stays); a system
    message enters at the first turn that takes it in and stays."""
    n = len(start)
    places = np.arange(len(history), dtype=np.int64)
    enters = np.searchsorted(end, places, side="right")
    leaves = np.searchsorted(start, places, side="right")
    stays = enters < leaves
    system_enters = np.searchsorted(systems, np.arange(1, len(system) + 1, dtype=np.int64), side="left")
    taken = system_enters < n
    return (np.concatenate([np.asarray(history, dtype=np.int64)[stays], np.asarray(system, dtype=np.int64)[taken]]),
            np.concatenate([enters[stays], system_enters[taken]]), np.concatenate([leaves[stays], np.full(int(taken.sum()), n, dtype=np.int64)]))


def _stays_of_walk(walk: Walk, checks: Mapping[int, set[int]], views: Callable[[int], Any], n: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The stays of any walk, read turn by turn; None when a planned turn in `checks` sends other
    messages than the walk. Raises `NotStays` when the enters and leaves do not alternate."""
    enter_msgs: list[int] = []
    enter_turns: list[int] = []
    leave_msgs: list[int] = []
    leave_turns: list[int] = []
    messages: set[int] = set()
    for t, entered, left, _ in walk:
        if entered:
            enter_msgs += entered
            enter_turns += [t] * len(entered)
        if left:
            leave_msgs += left
            leave_turns += [t] * len(left)
        if checks:
            messages.update(entered)
            messages.difference_update(left)
            if t in checks:
                view = views(t)
                if view.partial or view.full != messages:
                    return None
    stays = _stays(enter_msgs, enter_turns, leave_msgs, leave_turns, n)
    if stays is None:
        raise NotStays
    return stays


def _stays(enter_msgs: list[int], enter_turns: list[int], leave_msgs: list[int], leave_turns: list[int], n: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Each stay of a message in the context as (message, from turn, to turn): its enters and leaves
    alternate, each leave closing the stay before it; a stay never closed lasts to turn n. None when
    they do not alternate (not a walk `_suffix_turns` makes)."""
    msgs = np.asarray(enter_msgs + leave_msgs, dtype=np.int64)
    when = np.asarray(enter_turns + leave_turns, dtype=np.int64)
    leaving = np.zeros(len(msgs), dtype=bool)
    leaving[len(enter_msgs):] = True
    order = np.lexsort((leaving, when, msgs))
    msgs, when, leaving = msgs[order], when[order], leaving[order]
    same_next = np.zeros(len(msgs), dtype=bool)
    same_next[:-1] = msgs[1:] == msgs[:-1]
    follows = np.zeros(len(msgs), dtype=bool)  # a leave right after its message's enter
    follows[1:] = leaving[1:] & ~leaving[:-1] & same_next[:-1]
    if int(leaving.sum()) != int(follows.sum()):
        return None
    if np.any(~leaving[:-1] & ~leaving[1:] & same_next[:-1]):  # entered twice without leaving
        return None
    enters = np.flatnonzero(~leaving)
    closes = np.zeros(len(enters), dtype=bool)
    nxt = enters + 1
    inside = nxt < len(msgs)
    closes[inside] = follows[nxt[inside]]
    to = np.full(len(enters), n, dtype=np.int64)
    to[closes] = when[nxt[closes]]
    return msgs[enters], when[enters], to


def _blocks_of(x: np.ndarray, block_anchor: np.ndarray, block_from: np.ndarray, block_to: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stays (joined) of the anchors `x` (sorted ids): (anchor, from, to) of each."""
    lo = np.searchsorted(block_anchor, x, side="left")
    hi = np.searchsorted(block_anchor, x, side="right")
    per = hi - lo
    total = int(per.sum())
    if not total:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    at = np.arange(total, dtype=np.int64) + np.repeat(lo - (np.cumsum(per) - per), per)
    return block_anchor[at], block_from[at], block_to[at]


def _add(counts: np.ndarray, rules: np.ndarray, is_rule: np.ndarray, lo: np.ndarray, hi: np.ndarray, sign: int) -> None:
    """Add `sign` over the turns [lo, hi) of each row to `counts` (and to `rules` for instruction rows): a difference array."""
    size = len(counts)
    counts += sign * (np.bincount(lo, minlength=size) - np.bincount(hi, minlength=size))[:size]
    if is_rule.any():
        rules += sign * (np.bincount(lo[is_rule], minlength=size) - np.bincount(hi[is_rule], minlength=size))[:size]
