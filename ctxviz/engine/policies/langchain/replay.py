"""LangChain's incremental replayers: trim_messages (`langchain-trim`), the SummarizationMiddleware
(`langchain-summarization`) and the ContextEditingMiddleware (`langchain-context-editing`), each
carrying the prefix sums of LangChain's counts from turn to turn.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, Plan
from ...replay_contract import (
    Event,
    Turn,
    _changes,
    _Cuts,
    _indices,
    _Replay,
    light_plan,
    recorded_summary_text,
    untrimmed_cuts,
)
from ...session import Message, Session
from ...summarizers import Summarizer
from ..replay_common import (
    _EditsReplay,
    _InForceTotal,
    _PairSafety,
    _RecordedInForce,
    _RecordedShapes,
    _SummaryReplay,
    recorded_events,
)
from .context_editing import ClearToolUsesParams, already_cleared
from .counting import (
    SUMMARY_POS,
    cached_view,
    count_view,
    lc_type,
    lc_type_name,
    max_input_tokens,
    model_provider,
    summary_view,
    text_message_tokens,
)
from .entries import base_type
from .summarization import SummarizationParams, parse_trigger, provider_matches
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
    messages, the summaries, the other messages), each position mapped onto the sums. Where the
    summaries do not cover a prefix of the file (`_RecordedShapes.why_not`), the turns from the
    first one covering a message of it on are replayed by the reference step.

    Pair safety is carried (`_PairSafety`, where every tool call id is on one call): the messages
    sent are one run of the history (the system message kept by include_system is no history
    message), or two where the partial message's run meets the rest; the messages it drops join
    the trimmed ones (when trim_messages trimmed any, as `_changes` reads the plan's `trimmed`)."""

    recorded_summaries = "shaped"
    pair_safe_incremental = True

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
        self.trimmed: list[tuple[int, int]] = []  # the turn before's trimmed messages, as runs [a, b) of indices
        # The recorded summaries: which are in force, their entries' counts (file order) and their sums.
        self.shapes = _RecordedShapes.of(session) if session.summaries else None
        self.first_covering = len(session.messages)
        if self.shapes is not None and self.shapes.why_not_for(self) is not None:
            self.first_covering = self.shapes.first_covering
        self.recorded = _RecordedInForce(self.shapes) if self.shapes is not None else None
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
            self.before = _Cuts(self.before.fits, frozenset(k for a, b in self.trimmed for k in range(a, b)))
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

    def _search(self, size: int, fits: Any) -> int:
        """LangChain's binary search over `size` entries (at most bit_length steps, as it loops:
        enough to end on the largest count that fits, which a bisection of the sums finds too)."""
        left, right = 0, size
        for _ in range(size.bit_length()):
            if left >= right:
                break
            mid = (left + right + 1) // 2
            if fits(mid):
                left = mid
            else:
                right = mid - 1
        return left

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
                self.in_force = self.recorded.in_force
                self.SS = [0]
                for k in self.in_force:
                    self.SS.append(self.SS[-1] + self.summary_tokens[k])
            C = self.recorded.covered
        SS, S = self.SS, len(self.in_force)
        lead = min(self.system_run[C], L - C)
        # The entries: the prompt [0, off), system messages C..C+lead-1 [off, B), the summaries [B, R),
        # the messages C+lead..L-1 [R, N); a message entry q is the sums' position q + C (before the
        # summaries) or q - S + C (after them).
        B = off + lead
        R = B + S
        N = R + L - C - lead
        base = P[off + C] - P[off]  # the covered messages' tokens

        def PV(q: int) -> int:
            if q <= off:
                return P[q]
            if q <= B:
                return P[q + C] - base
            if q <= R:
                return P[B + C] - base + SS[q - B]
            return P[q - S + C] - base + SS[S]

        def type_of(q: int) -> str:
            return "human" if B <= q < R else self.types[q if q < off else (q + C if q < B else q - S + C)]

        def prev_end(q: int) -> int:
            if q > R:
                x = self.prev_end[q - S + C]
                if x > B + C:
                    return x - C + S
                q = R
            if q > B:
                if "human" in self.end_on:
                    return q
                q = B
            if q > off:
                x = self.prev_end[q + C]
                if x > off + C:
                    return x - C
                q = off
            return self.prev_end[q]

        def next_start(q: int) -> int:
            if q < off:
                if self.types[0] in self.start_on:
                    return 0
                q = off
            if q < B:
                x = self.next_start[q + C]
                if x < B + C:
                    return x - C
                q = B
            if q < R:
                if "human" in self.start_on:
                    return q
                q = R
            return self.next_start[q - S + C] - C + S

        def entry(q: int) -> Entry:
            if B <= q < R:
                k = self.in_force[q - B]
                return Entry(SUMMARY_POS - k, self.summary_tokens[k], "human")
            x = q if q < off else (q + C if q < B else q - S + C)
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
                if C or S:
                    idx = self._search(m, lambda k: PV(end) - PV(end - k) <= remaining)
                else:  # the entries are the sums' positions: LangChain's search ends where bisection does
                    idx = end - bisect_left(P, P[end] - remaining, rs, end)
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
                idx = self._search(N, lambda k: PV(k) <= budget) if C or S else max(0, bisect_right(P, budget, 0, N + 1) - 1)
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
        for a, b in sent:
            for lo, hi, shift in ((off, B, C - off), (R, N, C - off - S)):
                x, y = max(a, lo), min(b, hi)
                if x < y:
                    sent_runs.append((x + shift, y + shift))
        trimmed: list[tuple[int, int]] = []
        at = C
        for a, b in sent_runs:
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
            if not (sys == 0 and off == 0 and self.session.messages[C].role != "system"):  # that one is never dropped
                found = self._unpaired(sent_runs, L)
            if found is None:
                return self._reference(i)
            unpaired = found
        kept = sent_messages - truncated
        not_sent = tokens_all - sent_tokens
        if unpaired:  # `checks.drop_messages`: what each sent, its tokens no longer sent
            partial_message = (partial_at + C - off if partial_at < B else partial_at - S + C - off) if truncated else -1
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
                q = B + self.in_force.index(k)
                if q == partial_at:
                    assert partial is not None
                    decided = (Decision.TRUNCATED, f"truncated to {partial.tokens:,} tokens: passed as LangChain's summary HumanMessage, trimmed like any message")
                elif ks <= q < ke:
                    decided = (Decision.KEPT, "kept: passed as LangChain's summary HumanMessage, trimmed like any message")
                else:
                    decided = (Decision.DROPPED, "dropped: trim_messages cut it like any message")
                m_ = self.recorded.span[k]
                events.append(Event(i, "compaction", recorded_summary_text(k, list(range(min(m_, 5))), 0, m_ - 1, m_, True, m_, self.policy, decided)))
        if trimmed:
            self._trim_events(i, trimmed, events)
        self.trimmed = trimmed
        fits = used <= budget
        if not fits and self.before.fits:
            allot = min(system_tokens, budget)
            self.before = _changes(i, light_plan(self.policy, {"system": allot, "history": budget - allot},
                                    {"system": system_tokens, "history": used - system_tokens}, budget, used, fits), self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        return Turn(i, used, budget, kept, L - sent_messages - C + len(unpaired), C, truncated, fits, 0, tuple(events), not_sent)

    def _trim_events(self, i: int, trimmed: list[tuple[int, int]], events: list[Event]) -> None:
        """`_changes`' trim events: per category, in the order of its first newly trimmed message,
        the messages trimmed now and not the turn before."""
        new: list[tuple[int, int]] = []
        before, k = self.trimmed, 0
        for a, b in trimmed:  # minus the turn before's runs (both sorted, each disjoint)
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
            in_all = sum(bisect_left(members, b) - bisect_left(members, a) for a, b in trimmed)
            listed = ", ".join(f"#{k}" for k in shown[:5]) + (f" and {count - 5} more" if count > 5 else "")
            events.append(Event(i, "trim", f"{c}: {count} more message(s) removed ({listed}, {tokens:,} tokens), {in_all} removed in all"))


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


class LangchainSummarizationReplay(_SummaryReplay):
    """SummarizationMiddleware: the state is the summary in force (its covers are a prefix of the
    session) and the messages after it; the trigger reads the running count of that state
    (`scaled_total`'s usage scaling carried: the AI messages' providers and the last reported
    total). A turn whose trigger is met (it fires, or keep leaves nothing to summarise) is planned
    by the reference step, which writes the summary. Pair safety is carried (`_SummaryReplay`): the
    state's messages are the one run sent.

    The summaries the file records stand first in the state, each one as a summary HumanMessage
    (every one in force, none superseded), in place of every message they cover: where each
    covers a prefix of the file (`_carry_recorded`), the state is those entries (their count,
    `_InForceTotal`) and the messages after the union of their covers, and the scaling walk starts
    again from there when that union moves.

    From scratch: ids on more than one message, pair safety where a tool call id is on more than
    one call."""

    recorded_summaries = "shaped until generated"

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        p: SummarizationParams = params
        self.clauses = parse_trigger(p.trigger)
        self.ls_provider = p.model_provider or model_provider(session.model)
        self.limit = max_input_tokens(session.model, p.max_input_tokens)
        self.tokenizer = full.tokenizer
        self.c = 0  # messages 0..c-1 are covered by the summaries in force
        self.head_count = 0  # the summary entries standing first in the state (the generated one, or the recorded ones in force)
        self.head_tokens = 0  # their count
        self._carry_recorded()
        self.recorded_total = _InForceTotal(self._summary_size)
        self._reset_scaling()

    def _reset_scaling(self) -> None:
        self.provider: str | None = None
        self.invalid = False
        self.last_total: int | None = None
        self.at_last = 0  # tokens of the state's messages up to the last AI message reporting a total
        self.last_ai: Any = None

    def _scale(self, k: int) -> None:
        """scaled_total's walk and run_pass' last AI message, one message on."""
        m = self.session.messages[k]
        view = cached_view(m)
        if view.type != "ai":
            return
        if view.provider is None and m.raw is None and view.total_tokens is not None:
            view = view._replace(provider=self.ls_provider or None)  # run_pass: not a LangChain dump
        if self.provider is None:
            self.provider = view.provider
        elif view.provider != self.provider:
            self.invalid = True
        if view.total_tokens is not None:
            self.last_total = view.total_tokens
            self.at_last = self.sums[k + 1] - self.sums[self.c]
        self.last_ai = view

    def _grow(self, i: int) -> None:
        self._scale(i)

    def _summary_size(self, k: int) -> int:
        """Recorded summary k's count as the state's summary HumanMessage."""
        return count_view(summary_view(self.session.summaries[k].text), self.tokenizer)

    def _recorded_moved(self, i: int) -> None:
        recorded = self.recorded
        assert recorded is not None
        self.head_count = len(recorded.in_force)
        self.head_tokens = self.recorded_total.read(recorded)
        if recorded.covered != self.c:
            self._cover(recorded.covered, i)

    def _cover(self, c: int, i: int) -> None:
        """Messages 0..c-1 are covered from step `i`: the scaling walk starts again after them."""
        self.c = c
        self._reset_scaling()
        for k in range(c, i + 1):
            self._scale(k)

    def _sync(self, i: int) -> None:
        summary = self.generated[-1]
        covers = tuple(summary.covers)
        if self.recorded is not None:  # the recorded summaries' covers come first: those of messages before the file are no message of it
            known = set(self.ids)
            covers = tuple(x for x in covers if x in known)
        c = len(covers)
        if c > i + 1 or covers != tuple(self.ids[:c]):
            self.ok = False
            return
        self.head_count = 1
        self.head_tokens = count_view(summary_view(summary.text), self.tokenizer)
        self._cover(c, i)

    def _met(self, n_state: int, total: int) -> bool:
        """run_pass' trigger test (any doubt counts as met: the reference step then decides)."""
        last_ai, limit = self.last_ai, self.limit

        def reported(threshold: float) -> bool:
            return bool(last_ai is not None and last_ai.total_tokens and last_ai.total_tokens >= threshold
                        and last_ai.provider and provider_matches(last_ai.provider, self.ls_provider))

        for clause in self.clauses:
            met = True
            for kind, value in clause.items():
                if kind == "messages":
                    met = n_state >= value
                elif kind == "fraction" and limit is None:
                    met = False
                else:
                    threshold = int(value) if kind == "tokens" else max(1, int(limit * value))  # type: ignore[operator]
                    met = total >= threshold or reported(float(threshold))
                if not met:
                    break
            if met:
                return True
        return False

    def _fast(self, i: int) -> Turn | None:
        c, P = self.c, self.sums
        S = self.head_tokens
        messages_tokens = P[i + 1] - P[c]
        n_state = (i + 1 - c) + self.head_count
        token_count = float(S + messages_tokens)
        if n_state > 1 and not self.invalid and self.provider is not None and self.last_total is not None:
            at_last = float(S + self.at_last)
            if at_last:
                token_count *= min(1.25, max(1.0, self.last_total / at_last))
        total = math.ceil(token_count)
        if self.clauses and self._met(n_state, total):
            return None
        used = S + messages_tokens
        budget = self.limit if self.limit is not None else max(used, total)
        unpaired, unpaired_tokens = self._unpaired_from(c, i)  # what pair safety drops of messages c..i
        used -= unpaired_tokens
        messages_tokens -= unpaired_tokens
        fits = used <= budget
        events: list[Event] = [] if self.recorded is None or self.generated else recorded_events(self, self.recorded, i, self._recorded_decision)

        def light() -> Plan:
            allot = min(S, budget)
            return light_plan(self.policy, {"summary": allot, "messages": budget - allot}, {"summary": S, "messages": messages_tokens}, budget, used, fits)

        self.before = untrimmed_cuts(i, self.before, fits, events, light)
        return Turn(i, used, budget, i + 1 - c - unpaired, unpaired, c, 0, fits, len(self.generated), tuple(events), P[c] + unpaired_tokens)

    @staticmethod
    def _recorded_decision(k: int, m: int) -> tuple[int, tuple[Decision, str]]:
        """A recorded summary in force on a turn the trigger is not met at: its covers are summarised, it is sent."""
        return m, (Decision.KEPT, "kept: the earlier summary message stays first in the state")


class LangChainContextEditingReplay(_EditsReplay):
    """LangChain's ClearToolUsesEdit: whether a tool message can be cleared (not cleared before,
    an AI message before it carrying its call, its tool not excluded) and what clearing it changes
    in the count (its placeholder, and with clear_tool_inputs its AI message's emptied arguments)
    are fixed when it arrives, and the request's count only grows, so once the trigger fires the
    cleared results are the first clearable ones among all but the newest `keep` tool messages (up
    to where clear_at_least is reached: a bisection over the running maximum of what is reclaimed).

    Pair safety drops what `_unpaired` says (the history is sent whole), each message with what it
    sends at this turn; the trim events then name the dropped messages as removed beside the
    cleared ones, as `_changes` reads the pair-safe plan.

    The recorded summaries in force go in as LangChain's summary HumanMessages in place of every
    message they cover (`context_editing.plan_records`): the messages [0, C) of their union (a
    prefix of the file, `_carry_recorded`; or its non-system messages, as Codex's compactions
    cover, the system ones staying in the request) are out of the request, the summaries' counts
    in it, and the state is rebuilt from message C (an AI message before it is no longer one a
    tool message can belong to)."""

    pair_safe_incremental = True
    recorded_summaries = "shaped"
    recorded_system_gaps = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self._carry_pair_safety()
        self._carry_recorded()
        self.gaps = self.recorded is not None and self.recorded.shapes.system_gaps
        self.summary_total = _InForceTotal(self._summary_size)  # what the summaries in force count
        self.before_trimmed: frozenset[int] | None = None  # after a restart: what the turn before trimmed
        self.total = 0
        self.tool_messages = 0
        self.last_ai = -1
        self.clearable: list[int] = []  # session indices of the clearable tool messages
        self.ordinal: list[int] = []  # each one's position among the tool messages
        self.delta = [0]  # prefix sums: what clearing the first k clearable ones changes in the count
        self.reclaimed_max = [0]  # prefix maxima of -delta (clear_at_least stops at the first reach)
        self.ai_messages = [0]  # prefix sums: AI messages with an argument emptied
        self.ai_view: dict[int, Any] = {}  # an AI message's view with the arguments emptied so far
        self.ai_tokens: dict[int, int] = {}
        self.emptied: set[int] = set()  # AI messages with an argument emptied
        self.cut = 0  # the clearable ones cleared at the turn before
        self.excluded = params.excluded  # (a property that splits exclude_tools at each call)
        # With pair safety: a clearable one's position, the count it sends cleared, and (with
        # clear_tool_inputs) its AI message's count once its call is emptied; an AI message's
        # first and last clearable positions; the messages pair safety dropped the turn before.
        self.clear_at: dict[int, int] = {}
        self.cleared_tokens: list[int] = []
        self.ai_after: list[int] = []
        self.ai_span: dict[int, tuple[int, int]] = {}
        self.unpaired: list[int] = []

    def _hand_over(self) -> None:
        if self.cut:
            self.before = _Cuts(self.before.fits, frozenset(self.clearable[: self.cut]) | frozenset(self.unpaired))

    def _in_force(self, recorded: _RecordedInForce) -> tuple[int, int]:
        return recorded.covered, self.summary_total.read(recorded)

    def _summary_size(self, k: int) -> int:
        return count_view(summary_view(self.session.summaries[k].text), self.full.tokenizer)

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str]]:
        assert self.recorded is not None
        return self.recorded.shapes.covered_count(m), (Decision.KEPT, "kept: passed as LangChain's summary HumanMessage; only tool results are cleared")

    def _restart(self, i: int) -> None:
        self.before_trimmed = (frozenset(self.clearable[: self.cut]) | frozenset(self.unpaired)) if self.cut else frozenset()
        self.total = self.tool_messages = self.cut = 0
        self.last_ai = -1
        self.clearable, self.ordinal, self.delta, self.reclaimed_max, self.ai_messages = [], [], [0], [0], [0]
        self.ai_view, self.ai_tokens, self.emptied = {}, {}, set()
        self.clear_at, self.cleared_tokens, self.ai_after, self.ai_span, self.unpaired = {}, [], [], {}, []
        if self.gaps:  # the system messages the summaries leave (Codex's) stay in the request
            self.total = self.all_sums[self.covered] - self.history_sums[self.covered]
        for k in range(self.covered, i + 1):
            self._enter(k)

    def _take(self, i: int) -> None:
        self._pair(i)
        self._enter(i)

    def _enter(self, i: int) -> None:
        """Take message `i` into the middleware's state (it is not covered)."""
        p: ClearToolUsesParams = self.params
        m = self.session.messages[i]
        self.total += self.tokens[i]
        kind = lc_type(m)
        if kind == "ai":
            self.last_ai = i
        elif kind == "tool":
            self._tool(i, m, p)
            self.tool_messages += 1

    def _fast(self, i: int) -> Turn:
        p: ClearToolUsesParams = self.params
        summary, covered = self.summary_tokens, self.covered
        fired = self.total + summary > p.trigger
        cut = 0
        if fired:
            available = bisect_left(self.ordinal, self.tool_messages - p.keep) if p.keep < self.tool_messages else 0
            cut = available
            if p.clear_at_least > 0 and available:
                reach = bisect_left(self.reclaimed_max, p.clear_at_least, 1, available + 1)
                cut = min(reach, available)
        used = self.total + summary + self.delta[cut]
        edited = cut + self.ai_messages[cut]
        if self.gaps:  # the summaries cover the non-system messages before `covered` (Codex's)
            covered, not_sent = self.history_counts[covered], self.history_sums[covered]
        else:
            not_sent = self.all_sums[covered]
        kept = i + 1 - edited - covered
        unpaired = self._unpaired()
        for x in unpaired:  # `checks.drop_messages`: what each sent, its tokens no longer sent
            sent, was_edited = self._sent_as(x, cut)
            used -= sent
            not_sent += self.tokens[x]
            if was_edited:
                edited -= 1
            else:
                kept -= 1
        events = self._recorded_events(i)
        if cut and (cut > self.cut or unpaired or self.before_trimmed is not None):
            self._trim_events(i, cut, unpaired, events)
        self.before_trimmed = None
        fits = used <= p.trigger
        if not fits and self.before.fits:
            allot = min(summary, p.trigger)
            plan = light_plan(self.policy, {"summary": allot, "history": p.trigger - allot}, {"summary": summary, "history": used - summary},
                              p.trigger, used, fits)
            _changes(i, plan, _Cuts(), events)
        self.before = _Cuts(fits)
        self.cut = cut
        self.unpaired = unpaired
        return Turn(i, used, p.trigger, kept, len(unpaired), covered, edited, fits, 0, tuple(events), not_sent)

    def _sent_as(self, x: int, cut: int) -> tuple[int, bool]:
        """What message `x` sends when the first `cut` clearable ones are cleared, and whether that changed it."""
        at = self.clear_at.get(x)
        if at is not None and at < cut:
            return self.cleared_tokens[at], True
        span = self.ai_span.get(x)
        if span is not None and span[0] < cut:
            return self.ai_after[min(span[1], cut - 1)], True
        return self.tokens[x], False

    def _trim_events(self, i: int, cut: int, unpaired: list[int], events: list[Event]) -> None:
        """`_changes`' trim events: the cleared and the dropped messages not trimmed the turn before
        (when it cleared any), per category in the order of its first one."""
        messages = self.session.messages
        if self.before_trimmed is not None:  # the first turn after a restart: what the turn before trimmed, as a set
            before = self.before_trimmed
            new = sorted(k for k in set(self.clearable[:cut]) | set(unpaired) if k not in before)
            self._trim_event_text(i, new, set(unpaired), unpaired, events)
            return
        if not unpaired and not self.unpaired:  # only cleared ones (most turns)
            by_category: dict[str, list[int]] = {}
            for k in self.clearable[self.cut : cut]:
                by_category.setdefault(messages[k].category.upper(), []).append(k)
            for category, indices in by_category.items():
                events.append(Event(i, "trim", f"{category}: images of {_indices(indices)} replaced by the placeholder"))
            return
        dropped = set(unpaired)
        if self.cut:
            before = set(self.unpaired)
            new = [k for k in self.clearable[self.cut : cut] if k not in before]
            new += [k for k in unpaired if k not in before and self.clear_at.get(k, cut) >= cut]
        else:
            new = self.clearable[:cut] + [k for k in unpaired if self.clear_at.get(k, cut) >= cut]
        self._trim_event_text(i, sorted(new), dropped, unpaired, events)

    def _trim_event_text(self, i: int, new: list[int], dropped: set[int], unpaired: list[int], events: list[Event]) -> None:
        """The trim events of the messages `new` (sorted) trimmed now and not the turn before."""
        messages = self.session.messages
        by_category: dict[str, list[int]] = {}
        for k in new:
            by_category.setdefault(messages[k].category.upper(), []).append(k)
        for category, indices in by_category.items():
            removed = [k for k in indices if k in dropped]
            replaced = [k for k in indices if k not in dropped]
            what = []
            if removed:
                in_all = sum(1 for k in unpaired if messages[k].category.upper() == category)
                what.append(f"{len(removed)} more message(s) removed ({_indices(removed)}, {sum(self.tokens[k] for k in removed):,} tokens), "
                            f"{in_all} removed in all")
            if replaced:
                what.append(f"images of {_indices(replaced)} replaced by the placeholder")
            events.append(Event(i, "trim", f"{category}: " + "; ".join(what)))

    def _tool(self, i: int, m: Message, p: ClearToolUsesParams) -> None:
        """ClearToolUsesEdit.apply's tests for one tool message, and its change to the count."""
        ai = self.last_ai
        if already_cleared(m.raw) or ai < 0:
            return
        tool_view = cached_view(m)
        ai_view = self.ai_view.get(ai) or cached_view(self.session.messages[ai])
        call = next((c for c in ai_view.tool_calls if c.get("id") == tool_view.tool_call_id), None)
        if call is None or (tool_view.name or call["name"]) in self.excluded:
            return
        tok = self.full.tokenizer
        cleared = count_view(tool_view._replace(content=p.placeholder), tok)
        change = cleared - self.tokens[i]
        if self.pairs is not None:
            self.clear_at[i] = len(self.clearable)
            self.cleared_tokens.append(cleared)
        if p.clear_tool_inputs:
            calls = tuple({**c, "args": {}} if c.get("id") == tool_view.tool_call_id else c for c in ai_view.tool_calls)
            before = self.ai_tokens.get(ai, self.tokens[ai])
            self.ai_view[ai] = ai_view._replace(tool_calls=calls)
            self.ai_tokens[ai] = count_view(self.ai_view[ai], tok)
            change += self.ai_tokens[ai] - before
            self.ai_messages.append(self.ai_messages[-1] + (ai not in self.emptied))
            self.emptied.add(ai)
            if self.pairs is not None:
                self.ai_after.append(self.ai_tokens[ai])
                first = self.ai_span.get(ai, (len(self.clearable), 0))[0]
                self.ai_span[ai] = (first, len(self.clearable))
        else:
            self.ai_messages.append(self.ai_messages[-1])
        self.clearable.append(i)
        self.ordinal.append(self.tool_messages)
        self.delta.append(self.delta[-1] + change)
        self.reclaimed_max.append(max(self.reclaimed_max[-1], -self.delta[-1]))


REPLAYERS: dict[str, type[_Replay]] = {"langchain-trim": LangChainTrimReplay, "langchain-summarization": LangchainSummarizationReplay,
                                       "langchain-context-editing": LangChainContextEditingReplay}
