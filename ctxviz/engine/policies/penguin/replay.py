"""The incremental replayer of Penguin's ContextWindowManager (`categories`): each category's members
and the prefix sums of their counts, carried from turn to turn.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import accumulate
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import FITS, NOT_FITS, Event, Turn, _changes, _Cuts, _indices, _Replay, light_plan
from ...session import Category, Session
from ...summarizers import Summarizer
from ...wording import noun
from ..replay_pairs import _PairSafety
from ..replay_recorded import _RecordedInForce, _RecordedShapes, recorded_events
from .content import count_content
from .context_window import CATEGORY_ORDER, LATER_TRIM_ORDER, SEED_TRIM_ORDER, CategoryBudgets
from .context_window import OTHER as CATEGORIES_OTHER
from .pair_safety import CarriedPairs


class CategoriesReplay(_Replay):
    """Penguin's ContextWindowManager (`categories`): each category over its own maximum loses its
    oldest messages until the excess is freed, so each category carries its members and the
    prefix sums of their counts, and a turn's cut in a category is one bisection (the cut of the
    turn before tells which messages are newly trimmed, for the trim events).

    Pair safety is carried too (`pair_safety.CarriedPairs`: the members a cut passes over update
    their stars). The manager orders a category by timestamp (stably): where the file's timestamps
    go back (a log merged from several files, a repeated one), a message is put in its category's
    place by (timestamp, index) and the sums after it are redone, and a turn's changes are the
    members its cut takes or gives back since the turn before, the messages taken in since then
    included.

    Recorded summaries are carried where each covers a prefix of the file, or just its non-system
    messages as Codex's compactions do (`_RecordedShapes.system_gaps`: the system messages among
    them stay in the manager's session, SYSTEM members never trimmed): the messages they cover are
    out of the manager's session and each summary that takes the place of
    some of them is a CONTEXT member at its own timestamp, so when what is in force changes the
    categories are rebuilt from the first message they leave (`_restart`: the messages after a
    compaction's cover are few) and the cuts start again. Sessions with images (the image rule
    re-counts older messages), and the turns from the first recorded summary of file messages on
    where the summaries do not cover a prefix of the file, are planned by the reference step."""

    recorded_summaries = "shaped"
    recorded_system_gaps = True
    pair_safe_incremental = True

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        if any(m.image_count for m in session.messages):
            return "images (the image rule re-counts older messages)"
        return None

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        budgets: CategoryBudgets = params
        messages = session.messages
        self.tokens = full.message_tokens
        stamps = [m.timestamp for m in messages]
        shared = _PairSafety.of(session) if pair_safe else None
        self.pairs = CarriedPairs(shared, session, self.tokens, list(CATEGORY_ORDER)) if shared is not None else None
        self.usable = (not pair_safe or self.pairs is not None) and not any(m.image_count for m in messages)
        # Timestamps out of order: each category's members kept in the manager's order, (timestamp, index).
        self.stamps = stamps
        self.ordered = all(a <= b for a, b in zip(stamps, stamps[1:], strict=False))
        ids = {m.id for m in messages}
        starts = [start for summary, start in zip(session.summaries, session.summary_start_turns, strict=True) if any(c in ids for c in summary.covers)]
        self.first_covering = min(starts, default=len(messages))
        # Recorded summaries that each cover a prefix of the file (`_RecordedShapes`) are carried:
        # the messages [0, covered) are out of the manager's session, and each summary that takes
        # the place of some of them is in it as a CONTEXT member (marked n + its position), put in
        # its place by its own timestamp (so the categories are kept by (timestamp, index)).
        self.n = len(messages)
        self.recorded: _RecordedInForce | None = None
        shapes = _RecordedShapes.of(session) if session.summaries else None
        if shapes is not None and shapes.why_not_for(self) is None:
            self.recorded = _RecordedInForce(shapes)
            self.first_covering = len(messages)
            if any(shapes.lo):
                self.ordered = False
        self.covered = 0
        #: (Codex's compactions) the system messages, which no recorded summary covers: they stay in the
        #: manager's session wherever the summaries reach.
        self.system_at = [j for j, m in enumerate(messages) if m.role == "system"] if self.recorded is not None and self.recorded.shapes.system_gaps else []
        self.seen = 0  # the measured tokens of messages 0..i
        self.summary_counts: dict[int, int] = {}  # recorded summary -> its CONTEXT message's count
        self.owned: dict[int, tuple[int, int]] = {}  # the summaries in the session: the messages [a, b) each takes the place of
        self.summary_keys: dict[int, tuple[str, int]] = {}
        self.usage_now: list[int] = []  # this turn's usage and excess per category (a cut summary's reason)
        self.excess_now: dict[int, int] = {}
        self.cut_now: list[int] = []
        self.order = list(CATEGORY_ORDER)
        self.position = {c: k for k, c in enumerate(self.order)}
        self.members: list[list[int]] = [[] for _ in self.order]
        self.sums: list[list[int]] = [[0] for _ in self.order]
        self.maxima = [budgets.category_max(c) for c in self.order]
        self.minima = [budgets.category_min(c) for c in self.order]
        self.trim_order = [self.position[c] for c in (LATER_TRIM_ORDER if budgets.trim_other_categories else SEED_TRIM_ORDER)]
        self.others = [] if budgets.trim_other_categories else [self.position[c] for c in CATEGORIES_OTHER]
        self.system = self.position[Category.SYSTEM]
        self.cut = [0] * len(self.order)  # the turn before's trimmed members per category (0 when it did not trim)
        self.allocation = {c.value: m for c, m in zip(self.order, self.maxima, strict=True)}
        self.synced = True  # self.before holds the turn before's trimmed set (False while the fast turns keep it in `cut`)
        self.trimmed = False  # whether the turn before trimmed (its trimmed set is what it did not send)
        self.keys: list[list[tuple[str, int]]] = [[] for _ in self.order]  # (timestamps out of order) per member
        self.cut_key: list[tuple[str, int] | None] = [None] * len(self.order)  # the turn before's newest trimmed key
        self.arrived: set[int] = set()  # (timestamps out of order) the messages taken in since the turn before
        self.arrived_in: list[list[int]] = [[] for _ in self.order]  # the same, per category

    def absorb(self, i: int) -> None:
        self.seen += self.tokens[i]
        k = self.position[self.session.messages[i].category]
        if self.ordered:
            self.members[k].append(i)
            self.sums[k].append(self.sums[k][-1] + self.tokens[i])
        else:
            self._insert(k, i)
        if self.pairs is not None:
            self.pairs.grow(i)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.usable or self.recorded_until(i) >= self.first_covering:
            if not self.synced:  # the reference step reads the turn before's trimmed set
                trimmed = frozenset(j for k in range(len(self.cut)) for j in self._cut_before(k))
                if self.pairs is not None and self.trimmed:
                    trimmed |= self.pairs.drops
                self.before = _Cuts(self.before.fits, trimmed)
                self.synced = True
            return super().step(i)
        self.synced = False
        if self.recorded is not None and self.recorded.update(i + 1, self.recorded_until(i)):
            return self._fast(i, self._restart(i))
        return self._fast(i)

    def _restart(self, i: int) -> set[int]:
        """The summaries in force changed: rebuild the categories from the messages they leave and
        the summaries' CONTEXT members, and start the cuts again. Returns what the turn before did
        not send (the reference's trimmed set: this turn's trim events are what is new against it)."""
        recorded, n = self.recorded, self.n
        assert recorded is not None
        pairs = self.pairs
        before: set[int] = set()
        if self.trimmed:
            before = {j for k in range(len(self.cut)) for j in self._cut_before(k) if j < n}
            if pairs is not None:
                before |= pairs.drops
        covered = recorded.covered
        # `common.recorded_covers` on prefix spans: each live summary takes the place of what no later one covers.
        owned: dict[int, tuple[int, int]] = {}
        later = 0
        for k in reversed(recorded.live):
            m = recorded.span[k]
            if m > later:
                owned[k] = (later, m)
            later = max(later, m)
        self.owned = owned
        messages, stamps = self.session.messages, self.stamps
        entries: list[list[tuple[tuple[str, int], int, int]]] = [[] for _ in self.order]  # (key, member, count) per category
        stays = self.system_at[: bisect_left(self.system_at, covered)]  # (the system messages among those covered)
        for j in (*stays, *range(covered, i + 1)):
            entries[self.position[messages[j].category]].append(((stamps[j], j), j, self.tokens[j]))
        context = self.position[Category.CONTEXT]
        self.summary_keys = {}
        for k, (a, _b) in sorted(owned.items()):
            summary = self.session.summaries[k]
            count = self.summary_counts.get(k)
            if count is None:
                count = self.summary_counts[k] = count_content(summary.text, self.full.tokenizer)
            key = (summary.created_at or stamps[self._first_covered(a)], n + k)
            self.summary_keys[k] = key
            entries[context].append((key, n + k, count))
        for c, held in enumerate(entries):
            held.sort()
            self.keys[c] = [key for key, _, _ in held]
            self.members[c] = [j for _, j, _ in held]
            self.sums[c] = list(accumulate((t for _, _, t in held), initial=0))
        if pairs is not None:
            system = set(self.system_at)
            pairs.set_unsent_all([j for j in range(self.covered, covered) if j not in system], True)
            pairs.set_unsent_all([j for j in (*stays, *range(covered, i + 1)) if pairs.unsent[j]], False)
        self.covered = covered
        self.cut = [0] * len(self.order)
        self.cut_key = [None] * len(self.order)
        self.arrived = set()
        self.arrived_in = [[] for _ in self.order]
        self.trimmed = False
        return before

    def _first_covered(self, a: int) -> int:
        """The first message at or after `a` a summary covers (the first non-system one where
        summaries leave the system messages out)."""
        system_at = self.system_at
        k = bisect_left(system_at, a)
        while k < len(system_at) and system_at[k] == a:
            a, k = a + 1, k + 1
        return a

    def _summaries_cut(self, cut: list[int]) -> dict[int, int]:
        """Per category, how many of the members this turn's cut takes are summaries (not session messages)."""
        out: dict[int, int] = {}
        if self.summary_keys:
            context = self.position[Category.CONTEXT]
            keys = self.keys[context]
            out[context] = sum(1 for key in self.summary_keys.values() if bisect_left(keys, key) < cut[context])
        return out

    def _insert(self, k: int, i: int) -> None:
        """Put message i in its category's place, (timestamp, index), and redo the sums after it."""
        key = (self.stamps[i], i)
        keys, members, S = self.keys[k], self.members[k], self.sums[k]
        at = bisect_left(keys, key)
        keys.insert(at, key)
        members.insert(at, i)
        if at == len(members) - 1:
            S.append(S[-1] + self.tokens[i])
        else:
            tokens, n, summary_counts = self.tokens, self.n, self.summary_counts
            S[at + 1:] = accumulate((tokens[j] if j < n else summary_counts[j - n] for j in members[at:]), initial=S[at])
            del S[at + 1]  # (accumulate's first item is its initial S[at])
        self.arrived.add(i)
        self.arrived_in[k].append(i)

    def _cut_before(self, k: int) -> list[int]:
        """Category k's members the turn before cut (its first `cut[k]` then)."""
        if self.ordered:
            return self.members[k][: self.cut[k]]
        key = self.cut_key[k]
        if key is None:
            return []
        return [j for j in self.members[k][: bisect_right(self.keys[k], key)] if j not in self.arrived]

    def _moved(self, k: int, d: int) -> tuple[list[int], list[int]]:
        """(Timestamps out of order) the members of category k this turn's cut of `d` takes that
        the turn before's did not (the new ones among them), and those it gives back."""
        key, keys, members, arrived = self.cut_key[k], self.keys[k], self.members[k], self.arrived
        p = 0 if key is None else bisect_right(keys, key)  # members[:p]: cut before, or taken in since
        if d >= p:
            return [j for j in self.arrived_in[k] if (self.stamps[j], j) <= key] + members[p:d] if p else members[:d], []  # type: ignore[operator]
        last = keys[d - 1] if d else None
        return ([j for j in self.arrived_in[k] if (self.stamps[j], j) <= last] if d else [],  # type: ignore[operator]
                [j for j in members[d:p] if j not in arrived])

    def _fast(self, i: int, restarted: set[int] | None = None) -> Turn:
        """The turn at step `i`; `restarted`: the summaries in force changed at this step (what the
        turn before did not send: the trim events are read against it)."""
        budgets: CategoryBudgets = self.params
        sums, maxima = self.sums, self.maxima
        usage = [S[-1] for S in sums]
        total = sum(usage)
        # Every usage only grows turn to turn, so a manager that trimmed trims again.
        trimmed = (self.trimmed or total > budgets.max_tokens
                   or any(u > mx for k, (u, mx) in enumerate(zip(usage, maxima, strict=True)) if k != self.system))
        cut = [0] * len(usage)
        excess_of: dict[int, int] = {}
        if trimmed:
            total_over = total > budgets.max_tokens
            to_trim = total - budgets.max_tokens
            for k in self.trim_order:
                if usage[k] <= maxima[k]:
                    continue  # only a category over its own maximum is trimmed
                excess = usage[k] - maxima[k]
                if total_over:
                    excess = max(excess, min(to_trim, usage[k] - self.minima[k]))
                excess_of[k] = excess
                S = sums[k]
                d = min(bisect_left(S, excess), len(S) - 1)  # the oldest members whose tokens reach the excess
                cut[k] = d
                to_trim -= S[d]
                if to_trim <= 0:
                    total_over = False
            for k in self.others:  # the seed version loses ERROR/INTERNAL/UNKNOWN whenever it trims
                cut[k] = len(self.members[k])
        used = total - sum(S[d] for S, d in zip(sums, cut, strict=True))
        summaries_cut = self._summaries_cut(cut)
        pairs = self.pairs
        if pairs is not None:
            events = self._pair_safe(i, cut, trimmed, summaries_cut)
            used -= pairs.dropped_tokens
        if restarted is not None:
            events = self._restart_trims(i, cut, restarted) if trimmed else []
        elif pairs is None:
            events = self._trims(i, cut, summaries_cut) if trimmed else []
        if self.recorded is not None:
            self.usage_now, self.excess_now, self.cut_now = usage, excess_of, cut
            events = recorded_events(self, self.recorded, i, self._recorded_decision) + events
        fits = used <= budgets.max_tokens
        if not fits and self.before.fits:
            final = {c.value: u - S[d] for c, u, S, d in zip(self.order, usage, sums, cut, strict=True)}
            if pairs is not None:
                final = {c: u - t for (c, u), t in zip(final.items(), pairs.tokens_by_category, strict=True)}
            plan = light_plan("categories", self.allocation, final, budgets.max_tokens, used, fits, allocation_kind="caps")
            _changes(i, plan, self.before, events)
        self.before = FITS if fits else NOT_FITS
        self.cut = cut
        self.trimmed = trimmed
        if not self.ordered:
            self.cut_key = [keys[d - 1] if d else None for keys, d in zip(self.keys, cut, strict=True)]
            self.arrived = set()
            self.arrived_in = [[] for _ in self.order]
        dropped = sum(cut) - sum(summaries_cut.values()) + (pairs.count if pairs is not None else 0)
        # What is not sent of the session's messages (the summaries' CONTEXT members are not among them).
        sent_summaries = sum(self.summary_counts[k] for k, key in self.summary_keys.items() if not self._is_cut(key, cut))
        not_sent = self.seen - (used - sent_summaries)
        summarized = self.recorded.shapes.covered_count(self.covered) if self.recorded is not None else self.covered
        return Turn(i, used, budgets.max_tokens, i + 1 - dropped - summarized, dropped, summarized, 0, fits, 0, tuple(events), not_sent)

    def _is_cut(self, key: tuple[str, int], cut: list[int]) -> bool:
        context = self.position[Category.CONTEXT]
        return bisect_left(self.keys[context], key) < cut[context]

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str] | None]:
        """The plan's decision on recorded summary k (written since the step before, covering the
        prefix's first m messages, all summarised but the system
        messages where Codex's compactions leave them), as `context_window.plan_records` words it."""
        recorded = self.recorded
        assert recorded is not None
        m = recorded.shapes.covered_count(m)  # (Codex's compactions: the system messages among them are not summarised)
        if not self.covered:
            return m, None  # no summary covers a message of the prefix: the plan decides none
        if k in recorded.superseded:
            return m, (Decision.DROPPED, "dropped: superseded by a later recorded summary, which covers every message of the file this one covers")
        if k in self.owned:
            if self._is_cut(self.summary_keys[k], self.cut_now):
                c = self.position[Category.CONTEXT]
                return m, (Decision.DROPPED, f"dropped: {self.order[c].name} held {self.usage_now[c]:,} tokens, over its {self.maxima[c]:,} maximum; "
                                             f"the oldest are removed until {self.excess_now[c]:,} are freed")
            a, b = self.owned[k]
            system_before = self.recorded.shapes.system_before
            count = b - a - (system_before[b] - system_before[a] if self.system_at else 0)
            return m, (Decision.KEPT, f"kept: sent as a CONTEXT message in place of the {count} messages it covers")
        return m, (Decision.DROPPED, "dropped: the ContextWindowManager sends only the summaries that cover messages of this file")

    def _restart_trims(self, i: int, cut: list[int], before: set[int]) -> list[Event]:
        """The trim events of a turn whose summaries in force changed (`replay_contract._changes`):
        what it does not send of the session's messages, cut or dropped, less what the turn before did not."""
        n = self.n
        now = {j for k, d in enumerate(cut) for j in self.members[k][:d] if j < n}
        if self.pairs is not None:
            now |= self.pairs.drops
        messages, tokens = self.session.messages, self.tokens
        by_category: dict[int, list[int]] = {}
        for j in sorted(now - before):
            by_category.setdefault(self.position[messages[j].category], []).append(j)
        in_all: dict[int, int] = {}
        for j in now:
            c = self.position[messages[j].category]
            in_all[c] = in_all.get(c, 0) + 1
        return [Event(i, "trim", f"{self.order[k].upper()}: {len(indices):,} more {noun(len(indices), 'message')} removed ({_indices(indices)}, "
                                 f"{sum([tokens[j] for j in indices]):,} tokens), {in_all[k]} removed in all")
                for k, indices in by_category.items()]

    def _trims(self, i: int, cut: list[int], summaries_cut: dict[int, int]) -> list[Event]:
        """The trim events of a turn that trims, without pair safety: each category's newly cut members are a run."""
        sums = self.sums
        events: list[Event] = []
        if not self.ordered:
            return self._trims_moved(i, cut, summaries_cut)
        new = [(self.members[k][self.cut[k]], k) for k, d in enumerate(cut) if d > self.cut[k]]
        for _, k in sorted(new):  # by category, in the order of their first newly trimmed message
            before, d, members = self.cut[k], cut[k], self.members[k]
            shown = ", ".join(f"#{j}" for j in members[before : min(d, before + 5)]) + (f" and {d - before - 5} more" if d - before > 5 else "")
            events.append(Event(i, "trim", f"{self.order[k].upper()}: {d - before:,} more {noun(d - before, 'message')} removed ({shown}, "
                                            f"{sums[k][d] - sums[k][before]:,} tokens), {d} removed in all"))
        return events

    def _trims_moved(self, i: int, cut: list[int], summaries_cut: dict[int, int]) -> list[Event]:
        """`_trims` where timestamps go back: a category's newly cut members are what its cut takes
        since the turn before (by index, as `replay_contract._changes` lists them; a recorded
        summary's CONTEXT member is none of the session's messages)."""
        tokens, n = self.tokens, self.n
        new = [(sorted(taken), k) for k, d in enumerate(cut) if (taken := [j for j in self._moved(k, d)[0] if j < n])]
        return [Event(i, "trim", f"{self.order[k].upper()}: {len(indices):,} more {noun(len(indices), 'message')} removed ({_indices(indices)}, "
                                 f"{sum([tokens[j] for j in indices]):,} tokens), {cut[k] - summaries_cut.get(k, 0)} removed in all")
                for indices, k in sorted(new)]

    def _pair_safe(self, i: int, cut: list[int], trimmed: bool, summaries_cut: dict[int, int]) -> list[Event]:
        """Pair safety on this turn's cuts (the cut's moves since the turn before update their
        stars), and the trim events of a turn that trims: its newly unsent messages, cut or
        dropped, by category in the order of their first (`replay_contract._changes`)."""
        pairs = self.pairs
        assert pairs is not None
        old = self.cut
        n = self.n
        if not self.ordered:
            for k, d in enumerate(cut):
                taken, given = self._moved(k, d)
                if summaries_cut:  # (a recorded summary's member is none of the session's messages)
                    taken, given = [j for j in taken if j < n], [j for j in given if j < n]
                if taken:
                    pairs.set_unsent_all(taken, True)
                if given:
                    pairs.set_unsent_all(given, False)
        elif cut != old:
            for k in range(len(cut)):
                before, d = old[k], cut[k]
                if before < d:
                    pairs.set_unsent_all(self.members[k][before:d], True)
                elif d < before:
                    pairs.set_unsent_all(self.members[k][d:before], False)
        if pairs.dirty:
            pairs.settle()
        if not trimmed:
            pairs.newly_not_sent()
            return []
        if self.trimmed:
            new = sorted(pairs.newly_not_sent())
        else:  # the turn before kept its trimmed set empty: everything not sent now is new
            pairs.newly_not_sent()
            new = sorted([j for k, d in enumerate(cut) for j in self.members[k][:d] if j < n] + list(pairs.drops))
        by_category: dict[int, list[int]] = {}
        category = pairs.category
        for j in new:
            by_category.setdefault(category[j], []).append(j)
        events: list[Event] = []
        tokens = self.tokens
        for k, indices in by_category.items():
            events.append(Event(i, "trim", f"{self.order[k].upper()}: {len(indices):,} more {noun(len(indices), 'message')} removed ({_indices(indices)}, "
                                            f"{sum([tokens[j] for j in indices]):,} tokens), {cut[k] - summaries_cut.get(k, 0) + pairs.by_category[k]} removed in all"))
        return events


REPLAYERS: dict[str, type[_Replay]] = {"categories": CategoriesReplay}
