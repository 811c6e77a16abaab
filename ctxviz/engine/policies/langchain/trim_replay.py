"""LangChain's trim_messages (`langchain-trim`) replayed turn to turn: the prefix sums of LangChain's
counts carried, the cut found by bisection, recorded compactions, pair safety and pins carried.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import replace
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import (
    Event,
    Turn,
    _changes,
    _Cuts,
    _Replay,
    light_plan,
)
from ...session import Session
from ...summarizers import Summarizer
from ...wording import noun
from ..pins_carried import carried_pins, merged_runs
from ..replay_pairs import _PairSafety
from ..replay_recorded import _RecordedInForce, _RecordedShapes
from .counting import (
    SUMMARY_POS,
    count_view,
    lc_type,
    lc_type_name,
    summary_view,
    text_message_tokens,
)
from .entries import base_type
from .trim import (
    Entry,
    TrimParams,
    TrimTrace,
    _first_max_tokens,
    additive,
    parse_types,
    separator_splitter,
    view_getter,
)


class LangChainTrimReplay(_Replay):
    """langchain-trim: trim_messages over the messages so far (the session's system prompt first),
    from the prefix sums of their counts: end_on is the last message of its types so far,
    include_system the first entry, the longest suffix (strategy "last") or prefix ("first") that
    fits is LangChain's own binary search (its bounded number of steps included) read off the sums,
    start_on the next message of its types from the cut. allow_partial cuts the one message past
    the cut by LangChain's own code (`_first_max_tokens` on that message after one entry that
    stands for everything kept before it: the count is additive). What is trimmed is a few runs
    of positions, so the trim events (the newly trimmed messages per category) come from per-category
    sorted indices and sums.

    The recorded summaries in force (`_RecordedInForce`) cover the prefix's first C messages and
    go in as LangChain's summary HumanMessages after the leading system messages that follow
    (`entries.session_entries`): the entries are read as four runs (the prompt, those system
    messages, the summaries, the other messages), each position mapped onto the sums. Codex's
    compactions cover just the non-system messages before C (`recorded_system_gaps`): the G
    system messages among those are the first of the leading system messages (one more run, the
    gap's, before the others), trimmed or kept like them. Where the summaries do not cover a
    prefix of the file (`_RecordedShapes.why_not`, or a system message LangChain does not take
    for a plain SystemMessage among Codex's gaps), the turns from the first one covering a
    message of it on are replayed by the reference step.

    Pair safety is carried (`_PairSafety`, where every tool call id is on one call): the messages
    sent are one run of the history (the system message kept by include_system is no history
    message), or two where the partial message's run meets the rest; the messages it drops join
    the trimmed ones (when trim_messages trimmed any, as `_changes` reads the plan's `trimmed`).

    Pins are carried (`pins_carried`, over every message; without pair safety): they add the
    pinned messages trimmed or summarised, and push out the oldest unpinned ones sent (the partial
    message at what it sent; never the system message include_system keeps). A pinned message is
    never trimmed, so the trimmed messages are runs less the pinned ones, and the trim events
    count per category only the unpinned members (`members` once pins are known)."""

    recorded_summaries = "shaped"
    recorded_system_gaps = True
    pair_safe_incremental = True
    pins_incremental = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.pairs = _PairSafety.of(session) if pair_safe else None
        # The session indices of the non-system messages (with `pairs`: its history positions).
        self.history = [m.index for m in session.messages if m.role != "system"] if self.pairs is not None else []
        self.usable = not pair_safe or self.pairs is not None
        if not self.usable:
            return
        p: TrimParams = params
        tokenizer = full.tokenizer
        self.off = 1 if session.system_prompt else 0
        tokens: list[int] = [text_message_tokens(session.system_prompt, "system", tokenizer)] if self.off else []
        types: list[str] = ["system"] if self.off else []
        tokens += full.message_tokens
        types += [lc_type(m) for m in session.messages]
        self.T, self.types = tokens, types
        self.P = [0]
        for t in tokens:
            self.P.append(self.P[-1] + t)
        n = len(tokens)
        end_on, start_on = set(parse_types(p.end_on, "end_on")), set(parse_types(p.start_on, "start_on"))
        self.end_on, self.start_on = end_on, start_on
        # prev_end[q]: 1 + the last position < q whose type is in end_on (0: none); next_start[q]: the
        # first position >= q whose type is in start_on (n: none).
        self.prev_end = [0] * (n + 1)
        for q in range(n):
            self.prev_end[q + 1] = q + 1 if types[q] in end_on else self.prev_end[q]
        self.next_start = [n] * (n + 1)
        for q in range(n - 1, -1, -1):
            self.next_start[q] = q if types[q] in start_on else self.next_start[q + 1]
        self.count_one = lambda view: count_view(view, tokenizer)
        self.view_of = view_getter(session)
        self.splitter = separator_splitter(p.text_splitter)
        # Per category (as the trim event spells it): its messages' indices and the prefix sums of their counts.
        self.category_of = [m.category.upper() for m in session.messages]
        self.members: dict[str, list[int]] = {}
        self.member_sums: dict[str, list[int]] = {}
        for m in session.messages:
            c = self.category_of[m.index]
            self.members.setdefault(c, []).append(m.index)
            sums = self.member_sums.setdefault(c, [0])
            sums.append(sums[-1] + full.message_tokens[m.index])
        self.trimmed: list[tuple[int, int]] = []  # the turn before's trimmed messages, as runs [a, b) of indices (less the pinned ones)
        self.members_unpinned = False  # `members` and `member_sums` hold only the unpinned messages (with pins)
        # The recorded summaries: which are in force, their entries' counts (file order) and their sums.
        self.shapes = _RecordedShapes.of(session) if session.summaries else None
        self.first_covering = len(session.messages)
        if self.shapes is not None and self.shapes.why_not_for(self) is not None:
            self.first_covering = self.shapes.first_covering
        self.recorded = _RecordedInForce(self.shapes) if self.shapes is not None else None
        # With Codex's gaps: the system messages' indices (the first G are the gap's), the prefix
        # sums of their counts, and their runs of consecutive indices (`_gap_runs`).
        self.gaps = self.shapes is not None and self.shapes.system_gaps and self.first_covering == len(session.messages)
        self.system_at: list[int] = []
        self.system_sums = [0]
        self.system_run_of: list[int] = []  # the run each system message is in
        self.system_runs: list[tuple[int, int, int]] = []  # (its first system message, first index, end index)
        if self.gaps:
            for m in session.messages:
                if m.role == "system":
                    if lc_type_name(m) != "system" or types[self.off + m.index] != "system":  # (the entries' lead would differ)
                        self.gaps = False
                        self.first_covering = self.shapes.first_covering  # type: ignore[union-attr]
                        break
                    if self.system_at and self.system_at[-1] == m.index - 1:
                        j0, a, _ = self.system_runs[-1]
                        self.system_runs[-1] = (j0, a, m.index + 1)
                    else:
                        self.system_runs.append((len(self.system_at), m.index, m.index + 1))
                    self.system_run_of.append(len(self.system_runs) - 1)
                    self.system_at.append(m.index)
                    self.system_sums.append(self.system_sums[-1] + tokens[self.off + m.index])
        self.summary_tokens = [count_view(summary_view(x.text), tokenizer) for x in session.summaries]
        self.in_force: list[int] = []
        self.SS = [0]
        # system_run[x]: how many messages from x on are system messages (`session_entries`' lead).
        system_run = [0] * (len(session.messages) + 1)
        for x in range(len(session.messages) - 1, -1, -1):
            system_run[x] = system_run[x + 1] + 1 if base_type(lc_type_name(session.messages[x])) == "system" else 0
        self.system_run = system_run
        self.handed_over = False

    def absorb(self, i: int) -> None:
        if self.pairs is not None:
            self.pairs.grow(i)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if self.usable and self.recorded_until(i) < self.first_covering:
            return self._fast(i)
        if self.usable and not self.handed_over:  # the reference step reads the messages trimmed the turn before
            self.before = _Cuts(self.before.fits, frozenset(k for a, b in self.trimmed for k in range(a, b) if k not in self.pins))
        self.handed_over = True
        return super().step(i)

    def _reference(self, i: int) -> Turn:
        """A turn pair safety cannot carry (what is sent is not one or two runs the way `_PairSafety`
        reads them, or include_system keeps a message that is no system message): the reference
        step, reading the messages trimmed the turn before, and the trimmed ones taken back."""
        self.before = _Cuts(self.before.fits, frozenset(k for a, b in self.trimmed for k in range(a, b)))
        turn = super().step(i)
        self.trimmed = _runs(sorted(self.before.trimmed))
        return turn

    def _unpaired(self, sent_runs: list[tuple[int, int]], length: int) -> list[int] | None:
        """The session indices pair safety drops when the messages in `sent_runs` (of the first
        `length`) are sent (None: not one run of the history, or two with the second reaching
        the end of what was seen)."""
        assert self.pairs is not None
        history = self.history
        runs: list[tuple[int, int]] = []
        for a, b in sent_runs:
            x, y = bisect_left(history, a), bisect_left(history, b)
            if x < y:
                if runs and runs[-1][1] == x:
                    runs[-1] = (runs[-1][0], y)
                else:
                    runs.append((x, y))
        if not runs:
            return []
        h = bisect_left(history, length)
        if len(runs) == 1:
            (j, e), (t, end) = runs[0], (h, h)
        elif len(runs) == 2 and runs[1][1] == h:
            (j, e), (t, end) = runs
        else:
            return None
        return [history[k] for k in sorted(self.pairs.drops(j, e, t, end))]

    def _partial(self, before: int, target: Entry, budget: int, strategy: str) -> Entry | None:
        """The part of entry `target` allow_partial keeps after `before` tokens of kept entries, or None."""
        kept, trace = [Entry(_AGGREGATE, before, "human"), target], TrimTrace()
        out = _first_max_tokens(kept, budget, additive, self.count_one, self._view, self.splitter, strategy, (), trace, set())
        return out[1] if len(out) > 1 else None

    def _view(self, pos: int) -> Any:
        """The message view of an entry position (a recorded summary k is at SUMMARY_POS - k)."""
        if pos <= SUMMARY_POS:
            return summary_view(self.session.summaries[SUMMARY_POS - pos].text)
        return self.view_of(pos)

    def _fast(self, i: int) -> Turn:
        p: TrimParams = self.params
        P, T, off, budget = self.P, self.T, self.off, p.max_tokens
        L = i + 1  # messages so far
        C = 0
        events: list[Event] = []
        if self.recorded is not None:
            until = self.recorded_until(i)
            if self.recorded.update(L, until):
                # A log's compactions come into force one after the other, appended to the same
                # list (`_RecordedInForce._append`): only their sums are added. Any other change
                # is a new list, summed again.
                if self.recorded.in_force is not self.in_force or len(self.SS) > len(self.in_force) + 1:
                    self.in_force, self.SS = self.recorded.in_force, [0]
                sums = self.SS
                for k in self.in_force[len(sums) - 1 :]:
                    sums.append(sums[-1] + self.summary_tokens[k])
            C = self.recorded.covered
        SS, S = self.SS, len(self.in_force)
        lead = min(self.system_run[C], L - C)
        G = self.shapes.system_before[C] if self.gaps else 0  # type: ignore[union-attr]
        system_at, system_sums = self.system_at, self.system_sums
        # The entries: the prompt [0, off), the system messages among the covered ones [off, A)
        # (Codex's gaps), system messages C..C+lead-1 [A, B), the summaries [B, R), the messages
        # C+lead..L-1 [R, N); a message entry q is the sums' position off + system_at[q - off]
        # (in the gap), q + D (before the summaries) or q - S + D (after them).
        A = off + G
        D = C - G
        B = A + lead
        R = B + S
        N = R + L - C - lead
        base = P[off + C] - P[off] - system_sums[G]  # the covered messages' tokens

        def PV(q: int) -> int:
            if q <= off:
                return P[q]
            if q <= A:
                return P[off] + system_sums[q - off]
            if q <= B:
                return P[q + D] - base
            if q <= R:
                return P[B + D] - base + SS[q - B]
            return P[q - S + D] - base + SS[S]

        def position(q: int) -> int:
            """The sums' position of message entry q."""
            return q if q < off else (off + system_at[q - off] if q < A else (q + D if q < B else q - S + D))

        def last_within(limit: int, lo: int, hi: int) -> int:
            """The last entry position q in [lo, hi] with PV(q) <= limit (lo - 1: none). PV never
            falls, and each of its five runs (`PV`'s) is one array of sums read at q + shift, plus add: the
            run holding q is the last one starting within the limit, bisected at C speed (LangChain's
            own binary search, bounded by its bit_length steps, ends on the same entry)."""
            runs = ((0, off, P, 0, 0), (off, A, system_sums, -off, P[off]), (A, B, P, D, -base), (B, R, SS, -B, P[B + D] - base),
                    (R, N, P, D - S, SS[S] - base))
            for a, b, sums, shift, add in reversed(runs):
                a, b = max(a, lo), min(b, hi)
                if a <= b and sums[a + shift] + add <= limit:
                    return bisect_right(sums, limit - add, a + shift, b + shift + 1) - 1 - shift
            return lo - 1

        def type_of(q: int) -> str:
            return "human" if B <= q < R else self.types[position(q)]

        def prev_end(q: int) -> int:
            if q > R:
                x = self.prev_end[q - S + D]
                if x > B + D:
                    return x - D + S
                q = R
            if q > B:
                if "human" in self.end_on:
                    return q
                q = B
            if q > A:
                x = self.prev_end[q + D]
                if x > off + C:
                    return x - D
                q = A
            if q > off:
                if "system" in self.end_on:
                    return q
                q = off
            return self.prev_end[q]

        def next_start(q: int) -> int:
            if q < off:
                if self.types[0] in self.start_on:
                    return 0
                q = off
            if q < A:
                if "system" in self.start_on:
                    return q
                q = A
            if q < B:
                x = self.next_start[q + D]
                if x < B + D:
                    return x - D
                q = B
            if q < R:
                if "human" in self.start_on:
                    return q
                q = R
            return self.next_start[q - S + D] - D + S

        def entry(q: int) -> Entry:
            if B <= q < R:
                k = self.in_force[q - B]
                return Entry(SUMMARY_POS - k, self.summary_tokens[k], "human")
            x = position(q)
            return Entry(x - off, T[x], self.types[x])

        sys = -1
        partial: Entry | None = None
        partial_at = -1
        if p.strategy == "last":
            end = prev_end(N) if self.end_on else N
            rs = 0
            if p.include_system and end > 0 and type_of(0) == "system":
                sys, rs = 0, 1
            remaining = max(0, budget - PV(1)) if sys == 0 else budget
            m = end - rs
            if PV(end) - PV(rs) <= remaining:
                idx = m
            else:
                idx = end - 1 - last_within(PV(end) - remaining - 1, rs, end)  # the longest suffix that fits
                if p.allow_partial and idx < m:
                    partial = self._partial(PV(end) - PV(end - idx), entry(end - idx - 1), remaining, "last")
                    partial_at = end - idx - 1 if partial is not None else -1
            ks = end - idx
            if self.start_on and (partial is None or partial.type not in self.start_on):
                partial, partial_at = None, -1
                ks = min(next_start(ks), end)
            ke = end
        else:
            if PV(N) <= budget:
                idx = N
            else:
                idx = max(0, last_within(budget, 0, N))  # the longest prefix that fits
                if p.allow_partial and idx < N:
                    partial = self._partial(PV(idx), entry(idx), budget, "first")
                    partial_at = idx if partial is not None else -1
            ks, ke = 0, idx
            if self.end_on and (partial is None or partial.type not in self.end_on):
                partial, partial_at = None, -1
                ke = prev_end(idx)
        kept_points = sorted(q for q in (sys, partial_at) if q >= 0)
        system_tokens = PV(1) if sys == 0 else 0
        used = system_tokens + (partial.tokens if partial is not None else 0) + PV(ke) - PV(ks)
        # What is sent, as runs of entry positions; as runs of message indices; what is not (messages only).
        sent = [(q, q + 1) for q in kept_points if not ks <= q < ke] + ([(ks, ke)] if ks < ke else [])
        sent.sort()
        sent_runs: list[tuple[int, int]] = []
        trimmed: list[tuple[int, int]] = []
        if G:  # the gap's entries sent, as runs of messages; those not sent are trimmed
            at = 0
            for a, b in sent:
                x, y = max(a, off) - off, min(b, A) - off
                if x < y:
                    trimmed += self._gap_runs(at, x)
                    sent_runs += self._gap_runs(x, y)
                    at = y
            trimmed += self._gap_runs(at, G)
        gap_trimmed = len(trimmed)  # (the leading runs, the same from turn to turn between compactions)
        for a, b in sent:
            for lo, hi, shift in ((A, B, D - off), (R, N, D - off - S)):
                x, y = max(a, lo), min(b, hi)
                if x < y:
                    sent_runs.append((x + shift, y + shift))
        at = C
        for a, b in sent_runs:
            if a < C:
                continue
            if a > at:
                trimmed.append((at, a))
            at = max(at, b)
        if at < L:
            trimmed.append((at, L))
        tokens_all = P[off + L] - P[off]
        sent_messages = sum(b - a for a, b in sent_runs)
        sent_tokens = sum(P[off + b] - P[off + a] for a, b in sent_runs)
        truncated = 1 if partial_at >= 0 and not B <= partial_at < R and partial_at >= off else 0
        unpaired: list[int] = []
        if self.pairs is not None:
            found = None
            if not (sys == 0 and off == 0 and self.session.messages[position(0)].role != "system"):  # that one is never dropped
                found = self._unpaired(sent_runs, L)
            if found is None:
                return self._reference(i)
            unpaired = found
        kept = sent_messages - truncated
        not_sent = tokens_all - sent_tokens
        dropped = L - sent_messages - D + len(unpaired)
        summarized = D
        system_usage = system_tokens  # the plan's "system" part (a pinned summarised message counts in "history")
        pins = carried_pins(self, every_message=True)
        if pins is not None:  # after pair safety, which is never carried with pins
            if not self.members_unpinned:
                self._unpinned_members()
            pm = position(partial_at) - off if truncated else -1
            cost = None
            if pm >= 0 and pm not in self.pins:
                assert partial is not None
                free, less = pins.free_sums, T[off + pm] - partial.tokens
                cost = lambda x: free[x] - (less if x > pm else 0)  # noqa: E731
            first = position(0)  # the message include_system keeps
            push = [(first + 1 if a == first else a, b) for a, b in sent_runs if b > (first + 1 if a == first else a)] if sys == 0 and off == 0 else None
            effect = pins.effect(L, sent_runs, C, used, budget, cost, push)
            if effect.added and G:  # a pinned system message of the gap not sent was trimmed, not summarised
                effect = replace(effect, added_summarized=effect.added_summarized - self._gap_pinned_unsent(G, sent_runs))
            if effect.added:
                partial_out = pm >= 0 and pm not in self.pins and any(a <= pm < b for a, b in effect.pushed_runs)
                used += effect.sent_change
                kept += effect.added - effect.pushed + partial_out
                truncated -= partial_out
                dropped += effect.pushed - effect.added + effect.added_summarized
                summarized -= effect.added_summarized
                not_sent += effect.pushed_tokens - effect.added_tokens
                trimmed = merged_runs(trimmed, effect.pushed_runs)
        if unpaired:  # `checks.drop_messages`: what each sent, its tokens no longer sent
            partial_message = position(partial_at) - off if truncated else -1
            for x in unpaired:
                if x == partial_message:
                    assert partial is not None
                    used -= partial.tokens
                    truncated -= 1
                else:
                    used -= T[off + x]
                    kept -= 1
                not_sent += T[off + x]
            if trimmed or C:  # the plan's `trimmed`: trim_messages left out some message
                trimmed = _merged(trimmed, unpaired)
        if self.recorded is not None:
            written = self.recorded.written(self.last_horizon, until)
            for k in written:
                q = B + bisect_left(self.in_force, k)  # (in force: in the file's order)
                if q == partial_at:
                    assert partial is not None
                    decided = (Decision.TRUNCATED, f"truncated to {partial.tokens:,} tokens: passed as LangChain's summary HumanMessage, trimmed like any message")
                elif ks <= q < ke:
                    decided = (Decision.KEPT, "kept: passed as LangChain's summary HumanMessage, trimmed like any message")
                else:
                    decided = (Decision.DROPPED, "dropped: trim_messages cut it like any message")
                m_ = self.recorded.span[k]
                events.append(Event(i, "compaction", self.recorded.shapes.span_text(k, m_, self.recorded.shapes.covered_count(m_), self.policy, decided)))
        if trimmed:
            self._trim_events(i, trimmed, events, gap_trimmed)
        self.trimmed = trimmed
        fits = used <= budget
        if not fits and self.before.fits:
            allot = min(system_tokens, budget)
            self.before = _changes(i, light_plan(self.policy, {"system": allot, "history": budget - allot},
                                    {"system": system_usage, "history": used - system_usage}, budget, used, fits), self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        return Turn(i, used, budget, kept, dropped, summarized, truncated, fits, 0, tuple(events), not_sent)

    def _gap_runs(self, x: int, y: int) -> list[tuple[int, int]]:
        """The system messages system_at[x:y] as runs [a, b) of message indices."""
        if x >= y:
            return []
        cached = self.__dict__.get("_gap_runs_of")
        if cached is not None and cached[0] == (x, y):  # (the same from turn to turn between compactions)
            return cached[1]
        at, runs = self.system_at, self.system_runs
        r0, r1 = self.system_run_of[x], self.system_run_of[y - 1]
        if r0 == r1:
            return [(at[x], at[y - 1] + 1)]
        found = [(at[x], runs[r0][2]), *[(a, b) for _, a, b in runs[r0 + 1 : r1]], (runs[r1][1], at[y - 1] + 1)]
        self.__dict__["_gap_runs_of"] = ((x, y), found)
        return found

    def _gap_pinned_unsent(self, G: int, sent_runs: list[tuple[int, int]]) -> int:
        """How many pinned system messages of the gap (the first G) no run sends."""
        assert self.pins
        count = 0
        for x in self.system_at[:G]:
            if x in self.pins and not any(a <= x < b for a, b in sent_runs):
                count += 1
        return count

    def _unpinned_members(self) -> None:
        """Per category, only the unpinned messages and their sums: a pinned message is never trimmed."""
        self.members_unpinned = True
        for c, members in self.members.items():
            kept = [k for k in members if k not in self.pins]
            self.members[c] = kept
            sums = self.member_sums[c] = [0]
            for k in kept:
                sums.append(sums[-1] + self.full.message_tokens[k])

    def _trim_events(self, i: int, trimmed: list[tuple[int, int]], events: list[Event], lead: int = 0) -> None:
        """`_changes`' trim events: per category, in the order of its first newly trimmed message,
        the messages trimmed now and not the turn before. The first `lead` runs (the gap's system
        messages, many on a long Codex rollout) are compared with the turn before's and counted per
        category once, at list speed, while they stay the same."""
        new: list[tuple[int, int]] = []
        before = self.trimmed
        head = trimmed[:lead]
        g = lead if lead and before[:lead] == head else 0  # runs both turns begin with: none is new
        k = g
        for a, b in trimmed[g:] if g else trimmed:  # minus the turn before's runs (both sorted, each disjoint)
            while k < len(before) and before[k][1] <= a:
                k += 1
            q = k
            while a < b and q < len(before) and before[q][0] < b:
                c, d = before[q]
                if c > a:
                    new.append((a, c))
                a = max(a, d)
                q += 1
            if a < b:
                new.append((a, b))
        if not new:
            return
        found: dict[str, tuple[int, list[int], int, int]] = {}  # category -> (first new, indices shown, count, tokens)
        for c, members in self.members.items():
            sums = self.member_sums[c]
            first, shown, count, tokens = -1, [], 0, 0
            for a, b in new:
                lo, hi = bisect_left(members, a), bisect_left(members, b)
                if lo < hi:
                    if first < 0:
                        first = members[lo]
                    if len(shown) < 6:
                        shown += members[lo : min(hi, lo + 6)]
                    count += hi - lo
                    tokens += sums[hi] - sums[lo]
            if count:
                found[c] = (first, shown, count, tokens)
        for c, (_first, shown, count, tokens) in sorted(found.items(), key=lambda item: item[1][0]):
            members = self.members[c]
            in_all = self._head_count(c, head) + sum(bisect_left(members, b) - bisect_left(members, a) for a, b in trimmed[lead:])
            listed = ", ".join(f"#{k}" for k in shown[:5]) + (f" and {count - 5} more" if count > 5 else "")
            events.append(Event(i, "trim", f"{c}: {count:,} more {noun(count, 'message')} removed ({listed}, {tokens:,} tokens), {in_all} removed in all"))

    def _head_count(self, c: str, head: list[tuple[int, int]]) -> int:
        """How many of category c's members the runs `head` hold (kept per category while `head` stays the same)."""
        if not head:
            return 0
        cache = self.__dict__.get("_head_counts")
        if cache is None or cache[0] != head or cache[1] != self.members_unpinned:  # (the members change once pins are known)
            cache = self.__dict__["_head_counts"] = (head, self.members_unpinned, {})
        found = cache[2].get(c)
        if found is None:
            members = self.members[c]
            found = cache[2][c] = sum(bisect_left(members, b) - bisect_left(members, a) for a, b in head)
        return found


_AGGREGATE = -(10**9)  # the position of the entry that stands for the kept entries before the cut message


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Sorted indices as runs [a, b)."""
    runs: list[tuple[int, int]] = []
    for k in indices:
        if runs and runs[-1][1] == k:
            runs[-1] = (runs[-1][0], k + 1)
        else:
            runs.append((k, k + 1))
    return runs


def _merged(runs: list[tuple[int, int]], indices: list[int]) -> list[tuple[int, int]]:
    """Disjoint sorted runs with the sorted indices (none in them) added, as disjoint sorted runs."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(runs + [(k, k + 1) for k in indices]):
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out
