"""Pair safety carried from turn to turn (`checks.apply_pair_safety` incrementally), for the
replayers whose sent history is one or two runs of history positions: missy, supyagent, AutoGen,
Claude Code, Codex, Gemini CLI, the summarising replayers, LlamaIndex's ChatMemoryBuffer, Strands'
sliding window and Penguin.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from itertools import accumulate

from ..session import Session, ToolCallPart, ToolResultPart


class _PairSafety:
    """`checks.apply_pair_safety` for a replay whose sent history is one or two runs of history
    positions (missy: history[j:E] and history[tail_start:h]), carried from turn to turn.

    Only for sessions where every tool call id is on one call: then the prefix's pairs are the
    whole session's pairs with both ends seen, and each message is a "problem" (a sent call or
    result whose partner is not in the file as the APIs need it) up to a turn known in advance
    (an assistant's call until its first result, a result until its call). A turn's drops are
    the closure apply_pair_safety reaches: the sent problems, the sent half of every pair that
    crosses a boundary of the sent runs, and what loses its partner to those drops. Pairs are
    found by the boundary they cross: short ones (up to SHORT positions apart) filed at every
    boundary they cross when they complete (a few list appends each, once), the rest (a
    long-running tool, a sub-agent's Task, a result that arrives late) in a stabbing tree over the
    boundaries, so a turn reads only the pairs that cross one of its boundaries: not every long
    pair so far (which made a log with many of them quadratic), nor the SHORT positions before
    each boundary (which made a turn that cuts cost several times one that does not, and
    lifted the exponent of the replays whose cutting starts part-way)."""

    SHORT = 64

    def __init__(self, session: Session, calls: list[tuple[ToolCallPart, ...]]) -> None:
        messages = session.messages
        history = [m.index for m in messages if m.role != "system"]
        self.position: dict[int, int] = dict(zip(history, range(len(history)), strict=True))  # session index -> history position
        position = self.position
        # The tool messages and the messages with calls, in order: no other is a problem or in a pair.
        relevant = [m for m, c in zip(messages, calls, strict=True) if c or m.role == "tool"]
        owner: dict[str, int] = {}
        first_result: dict[str, int] = {}
        answers: dict[int, str] = {}  # a tool message's call id
        for m in relevant:
            if m.role == "tool":
                call_id = answers[m.index] = m.tool_call_id or next((p.tool_call_id for p in m.parts if isinstance(p, ToolResultPart)), "")
                if call_id:
                    first_result.setdefault(call_id, m.index)
            for call in calls[m.index]:
                if call.id:
                    owner[call.id] = m.index
        self.edges_at: dict[int, list[tuple[int, int]]] = {}  # turn -> pairs (history positions) complete from then
        edges_at = self.edges_at
        until: dict[int, float] = {}
        inf = float("inf")
        for m in relevant:
            i = m.index
            limit: float = 0.0
            if m.role == "tool":
                call_id = answers[i]
                caller = owner.get(call_id) if call_id else None
                if caller is None or messages[caller].role != "assistant":
                    limit = inf
                else:
                    limit = max(limit, caller)
                    a, b = position[caller], position[i]
                    edge = (a, b) if a < b else (b, a)
                    at = caller if caller > i else i
                    found = edges_at.get(at)
                    if found is None:
                        edges_at[at] = [edge]
                    else:
                        found.append(edge)
                if calls[i]:  # a tool message's own calls
                    limit = inf
            elif m.role == "assistant":
                for call in calls[i]:
                    answered = first_result.get(call.id) if call.id else None
                    limit = max(limit, inf if answered is None else answered)
            elif m.role != "system":  # (a system message's calls are neither problems nor pairs)
                limit = inf
            if limit > i:
                until[i] = limit
        self.until = until
        # crossed[p]: whether any pair of the session, complete or not, has one end before p and
        # the other at or after it (a boundary no pair crosses is not searched at every turn)
        opened = [0] * (len(self.position) + 2)
        for pairs in self.edges_at.values():
            for a, b in pairs:  # (a < b) crosses the boundaries a + 1 .. b
                opened[a + 1] += 1
                opened[b + 1] -= 1
        self.crossed = bytes(c > 0 for c in accumulate(opened[: len(self.position) + 1]))
        self.ends: dict[float, list[int]] = {}  # turn -> positions that stop being problems
        self.problems: list[int] = []  # history positions of the problems so far, sorted
        self.partners: dict[int, list[int]] = {}
        # across[p]: the short pairs complete so far that cross boundary p (a < p <= b), None for none
        self.across: list[list[tuple[int, int]] | None] = [None] * (len(self.position) + 1)
        # The long pairs by the boundaries they cross ((a, b) crosses a + 1 .. b): a segment tree
        # over the boundaries 0 .. len(history), whose node k holds the pairs that cross every
        # boundary under it and not every one under its parent. The pairs crossing p are those
        # on the path from leaf p to the root (`_crossing`), found in O(log n + their number).
        self.leaves = 1 << len(self.position).bit_length()  # (a power of two above len(history))
        self.long: list[list[tuple[int, int]] | None] = [None] * (2 * self.leaves)
        self.long_pairs = 0

    @staticmethod
    def of(session: Session) -> _PairSafety | None:
        """The carried pair safety, or None where a call id is on more than one call (the
        owner of an id can change as the file goes on: the reference step decides)."""
        calls = [tuple([p for p in m.parts if isinstance(p, ToolCallPart)]) for m in session.messages]  # (each one's `tool_calls`)
        ids = [call.id for c in calls for call in c if call.id]
        return _PairSafety(session, calls) if len(set(ids)) == len(ids) else None

    def grow(self, i: int) -> None:
        """Take message `i` in: the pairs it completes, whether it is a problem, which stop being."""
        for position in self.ends.pop(i, ()):
            self.problems.pop(bisect_left(self.problems, position))
        limit = self.until.get(i)
        if limit is not None and i in self.position:
            insort(self.problems, self.position[i])
            if limit != float("inf"):
                self.ends.setdefault(limit, []).append(self.position[i])
        for a, b in self.edges_at.get(i, ()):
            self.partners.setdefault(a, []).append(b)
            self.partners.setdefault(b, []).append(a)
            if b - a <= self.SHORT:
                across, pair = self.across, (a, b)
                for p in range(a + 1, b + 1):
                    found = across[p]
                    if found is None:
                        across[p] = [pair]
                    else:
                        found.append(pair)
            else:
                self._add_long(a, b)

    def _add_long(self, a: int, b: int) -> None:
        """File the long pair (a, b) at the tree nodes that cover the boundaries a + 1 .. b exactly."""
        long, pair = self.long, (a, b)
        lo, hi = a + 1 + self.leaves, b + 1 + self.leaves
        while lo < hi:
            if lo & 1:
                found = long[lo]
                if found is None:
                    long[lo] = [pair]
                else:
                    found.append(pair)
                lo += 1
            if hi & 1:
                hi -= 1
                found = long[hi]
                if found is None:
                    long[hi] = [pair]
                else:
                    found.append(pair)
            lo >>= 1
            hi >>= 1
        self.long_pairs += 1

    def _crossing(self, p: int) -> list[tuple[int, int]]:
        """The long pairs (a, b) with a < p <= b: those filed on the path from leaf p to the root."""
        long, found = self.long, []
        node = p + self.leaves
        while node:
            here = long[node]
            if here is not None:
                found += here
            node >>= 1
        return found

    def drops(self, j: int, e: int, t: int, h: int) -> set[int] | frozenset[int]:
        """History positions pair safety drops when history[j:e] and history[t:h] are sent."""
        problems, partners, across = self.problems, self.partners, self.across
        runs = ((j, h),) if t == e else ((j, e), (t, h))
        seeds: list[int] = []
        if problems:
            for lo, hi in runs:
                if lo < hi:
                    seeds += problems[bisect_left(problems, lo) : bisect_left(problems, hi)]
        # A pair with one end sent crosses a boundary of the sent runs: j, and e and t when the
        # runs are apart (no pair crosses h, the end of what was seen).
        crossed = self.crossed  # (none crosses 0 or a boundary past the history)
        boundaries = [p for p in ((j, e, t) if t > e else (j,)) if 0 < p < len(crossed) and crossed[p]]
        if not seeds and not boundaries:
            return _NO_DROPS

        def sent(k: int) -> bool:
            return j <= k < e or t <= k < h

        for p in boundaries:
            here = across[p]
            if here is not None:
                for a, b in here:
                    if sent(a) != sent(b):
                        seeds.append(a if sent(a) else b)
            if self.long_pairs:
                for a, b in self._crossing(p):
                    if sent(a) != sent(b):
                        seeds.append(a if sent(a) else b)
        if not seeds:
            return _NO_DROPS
        dropped: set[int] = set()
        while seeds:
            k = seeds.pop()
            if k in dropped:
                continue
            dropped.add(k)
            seeds += [x for x in partners.get(k, ()) if x not in dropped and sent(x)]
        return dropped


_NO_DROPS: frozenset[int] = frozenset()
