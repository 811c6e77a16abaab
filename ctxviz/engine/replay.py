"""Incremental replays: each policy's turn-by-turn figures carried from one turn to the next.

`simulate` asks `replayer()` for the policy's replayer; a policy without one (a plugin, or a
case a replayer does not cover) replays by planning the whole prefix at every turn (the
reference, `simulate(..., incremental=False)`). A replayer computes only what a `Turn` holds
(tokens sent, budget, kept / dropped / summarized / truncated counts, fits, events) from running
sums, and hands any turn it does not cover to the reference step, so the turns and events are
exactly the reference's (tests/test_replay_incremental.py checks it on random sessions).
"""

from __future__ import annotations

import re
from bisect import bisect_left, insort
from typing import Any

from .carried import IdPrefix, _Snapshot, _SummaryCounter
from .counting import TokenCounts
from .plan import Plan
from .policies.categories import CATEGORY_ORDER, LATER_TRIM_ORDER, SEED_TRIM_ORDER, CategoryBudgets
from .policies.categories import OTHER as CATEGORIES_OTHER
from .policies.common import tools_json
from .policies.consolidator import (
    RECENT_KEEP,
    ConsolidatorSettings,
    consolidated_message,
    should_consolidate,
    threshold_usage,
)
from .policies.missy import TokenBudget, enrich_system_prompt, format_summary
from .policies.mnesis import MnesisBudget, model_info, tool_parts
from .policies.supyagent import SUMMARY_SHARE, ContextSettings, count_message_dict, get_context_limit, summary_message
from .replay_contract import FITS, NOT_FITS, Event, Turn, _changes, _Cuts, _Replay, light_plan, untrimmed_cuts
from .session import Category, Session, Summary, ToolCallPart, ToolResultPart
from .summarizers import ExtractiveSummarizer, Summarizer
from .tokenizers import HEURISTICS


class _GrowingReplay(_Replay):
    """What missy, mnesis and supyagent carry alike from turn to turn: the history's session
    indices, ids, user turns and prefix sums of its counts, and the system messages joined into the
    prompt (each framework counts that prompt its own way: `_system_prompt_tokens`)."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.tokens = full.message_tokens
        self.history: list[int] = []  # session indices of the non-system messages so far
        self.history_ids: list[str] = []
        self.users: list[int] = []  # session indices of the user messages so far
        self.sums: list[int] = [0]  # sums[k]: tokens of the first k history messages
        self.system_count = 0
        self.system_texts: list[str] = [session.system_prompt] if session.system_prompt else []
        self.system_tokens = self._system_prompt_tokens("\n\n".join(self.system_texts)) if self.system_texts else 0

    def _system_prompt_tokens(self, prompt: str) -> int:
        return self.full.text(prompt)

    def _grow(self, i: int) -> None:
        """Take message `i` into the state (before the turn that ends with it is computed)."""
        m = self.session.messages[i]
        if m.role == "system":
            self.system_count += 1
            if m.text:
                self.system_texts.append(m.text)
                self.system_tokens = self._system_prompt_tokens("\n\n".join(self.system_texts))
            return
        self.history.append(i)
        self.history_ids.append(m.id)
        self.sums.append(self.sums[-1] + self.tokens[i])
        if m.role == "user":
            self.users.append(i)


class MissyReplay(_GrowingReplay):
    """missy: the fresh tail of K history messages, the new user message, and the evictable prefix
    filled newest first until the first misfit. Token counts are never negative, so "the newest
    messages that fit, stopping at the first that does not" is the shortest suffix whose sum fits:
    one bisection over the prefix sums of the history's counts.

    Turns with a recorded summary in force (its covers take messages out of the history) are
    planned by the reference step; pair safety is carried too (`_PairSafety`), except where a
    tool call id is on more than one call."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        budget: TokenBudget = params
        _, self.memory_tokens, self.learnings_tokens, _ = enrich_system_prompt("", session.memory, session.learnings, budget, full.text)
        tools = tools_json(session)
        self.tools_usage = full.text(tools) if tools else 0
        self.allocation = {
            "system_reserve": budget.system_reserve,
            "tool_definitions_reserve": budget.tool_definitions_reserve,
            "memory": budget.memory_budget,
            "learnings": budget.learnings_budget,
            "history": budget.history_budget,
        }
        # Recorded summaries of what came before the file (no cover names a message of it) are in
        # force from the start and take no message out of the history: missy sends each that fits.
        # One that covers messages of the file is in force from the turn after them: the reference
        # step plans from there.
        ids = {m.id for m in session.messages}
        in_file = [any(c in ids for c in summary.covers) for summary in session.summaries]
        starts = [start for start, covers in zip(session.summary_start_turns, in_file, strict=True) if covers]
        self.first_covering = min(starts, default=len(session.messages))
        self.summary_tokens = [full.text(format_summary(summary)) for summary, covers in zip(session.summaries, in_file, strict=True)
                               if not covers] if self.first_covering else []
        self.total, self.history_budget, self.tail_count, self.trim_tail = budget.total, budget.history_budget, budget.fresh_tail_count, budget.trim_protected_tail
        self.fixed_parts = {"system_reserve": 0, "tool_definitions_reserve": self.tools_usage, "memory": self.memory_tokens,
                            "learnings": self.learnings_tokens}
        self.pairs = _PairSafety.of(session) if pair_safe else None

    pair_safe_incremental = True

    def absorb(self, i: int) -> None:
        self._grow(i)
        if self.pairs is not None:
            self.pairs.grow(i)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if (self.pair_safe and self.pairs is None) or self.first_covering <= self.recorded_until(i):
            return super().step(i)
        return self._fast(i)

    def _fast(self, i: int) -> Turn:
        P, tokens, history, n, hb = self.sums, self.tokens, self.history, self.tail_count, self.history_budget
        h = len(history)
        new = h > 0 and self.session.messages[history[-1]].role == "user"
        H = h - 1 if new else h  # the history before the new message
        E = H if n <= 0 else (H - n if H > n else 0)  # evictable: history[:E]; fresh tail: history[E:H]
        used = (tokens[history[-1]] if new else 0) + P[H] - P[E]
        tail_start = E
        if used > hb and self.trim_tail:
            # Oldest tail messages go until the rest fits: the first s whose sum from s on fits.
            s = min(bisect_left(P, P[E] + used - hb, E, H + 1), H)
            used -= P[s] - P[E]
            tail_start = s
        for t in self.summary_tokens:  # `continue`, not `break`: an oversized summary does not starve later ones
            if used + t <= hb:
                used += t
        remaining = hb - used if used < hb else 0
        j = bisect_left(P, P[E] - remaining, 0, E)  # history[j:E] fit, newest first; history[j - 1] is the cut
        used += P[E] - P[j]
        kept = self.system_count + (E - j) + (H - tail_start) + (1 if new else 0)
        not_sent = P[j] + P[tail_start] - P[E]
        if self.pairs is not None:  # pair safety drops the sent half of broken pairs: history[j:E], history[tail_start:h] are sent
            dropped = self.pairs.drops(j, E, tail_start, h)
            unpaired = sum(tokens[history[k]] for k in dropped)
            used -= unpaired
            not_sent += unpaired
            kept -= len(dropped)
        total = self.fixed_usage + used
        fits = self.fixed_fit and used <= hb
        events: list[Event] = []
        usage = {**self.fixed_parts, "system_reserve": self.system_tokens, "history": used}
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: light_plan("missy", self.allocation, usage, self.total, total, fits, "parts"))
        return Turn(i, total, self.total, kept, i + 1 - kept, 0, 0, fits, 0, tuple(events), not_sent)

    @property
    def fixed_usage(self) -> int:
        return self.system_tokens + self.tools_usage + self.memory_tokens + self.learnings_tokens

    @property
    def fixed_fit(self) -> bool:
        a = self.allocation
        return (self.system_tokens <= a["system_reserve"] and self.tools_usage <= a["tool_definitions_reserve"]
                and self.memory_tokens <= a["memory"] and self.learnings_tokens <= a["learnings"])


class _PairSafety:
    """`checks.apply_pair_safety` for a replay whose sent history is one or two runs of history
    positions (missy: history[j:E] and history[tail_start:h]), carried from turn to turn.

    Only for sessions where every tool call id is on one call: then the prefix's pairs are the
    whole session's pairs with both ends seen, and each message is a "problem" (a sent call or
    result whose partner is not in the file as the APIs need it) up to a turn known in advance
    (an assistant's call until its first result, a result until its call). A turn's drops are
    the closure apply_pair_safety reaches: the sent problems, the sent half of every pair that
    crosses a boundary of the sent runs, and what loses its partner to those drops. Pairs are
    found by the boundary they cross: short ones (up to SHORT positions apart) in an array by
    their first end, the rest in a list read whole."""

    SHORT = 64

    def __init__(self, session: Session, calls: list[tuple[ToolCallPart, ...]]) -> None:
        messages = session.messages
        self.position: dict[int, int] = {}  # session index -> history position
        for m in messages:
            if m.role != "system":
                self.position[m.index] = len(self.position)
        owner: dict[str, int] = {}
        first_result: dict[str, int] = {}
        answers: dict[int, str] = {}  # a tool message's call id
        self.edges_at: dict[int, list[tuple[int, int]]] = {}  # turn -> pairs (history positions) complete from then
        for m in messages:
            if m.role == "tool":
                call_id = answers[m.index] = m.tool_call_id or next((p.tool_call_id for p in m.parts if isinstance(p, ToolResultPart)), "")
                if call_id:
                    first_result.setdefault(call_id, m.index)
            for call in calls[m.index]:
                if call.id:
                    owner[call.id] = m.index
        until: dict[int, float] = {}
        for m in messages:
            limit = 0.0
            if m.role == "tool":
                call_id = answers[m.index]
                caller = owner.get(call_id) if call_id else None
                if caller is None or messages[caller].role != "assistant":
                    limit = float("inf")
                else:
                    limit = max(limit, caller)
                    a, b = sorted((self.position[caller], self.position[m.index]))
                    self.edges_at.setdefault(max(caller, m.index), []).append((a, b))
            if calls[m.index] and m.role not in ("assistant", "system"):
                limit = float("inf")
            elif m.role == "assistant":
                for call in calls[m.index]:
                    answered = first_result.get(call.id) if call.id else None
                    limit = max(limit, float("inf") if answered is None else answered)
            if limit > m.index:
                until[m.index] = limit
        self.until = until
        self.ends: dict[float, list[int]] = {}  # turn -> positions that stop being problems
        self.problems: list[int] = []  # history positions of the problems so far, sorted
        self.partners: dict[int, list[int]] = {}
        self.short: list[int] = [-1] * len(self.position)  # first end -> the farthest second end of its short pairs
        self.long: list[tuple[int, int]] = []

    @staticmethod
    def of(session: Session) -> _PairSafety | None:
        """The carried pair safety, or None where a call id is on more than one call (the
        owner of an id can change as the file goes on: the reference step decides)."""
        calls = [m.tool_calls for m in session.messages]
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
                self.short[a] = max(self.short[a], b)
            else:
                self.long.append((a, b))

    def drops(self, j: int, e: int, t: int, h: int) -> set[int] | frozenset[int]:
        """History positions pair safety drops when history[j:e] and history[t:h] are sent."""
        problems, partners, short = self.problems, self.partners, self.short
        runs = ((j, h),) if t == e else ((j, e), (t, h))
        seeds: list[int] = []
        for lo, hi in runs:
            if lo < hi:
                seeds += problems[bisect_left(problems, lo) : bisect_left(problems, hi)]

        def sent(k: int) -> bool:
            return j <= k < e or t <= k < h

        # A pair with one end sent crosses a boundary of the sent runs: j, and e and t when the
        # runs are apart (no pair crosses h, the end of what was seen).
        for p in ((j, e, t) if t > e else (j,)):
            lo = max(0, p - self.SHORT)
            if lo < p and max(short[lo:p]) >= p:
                for a in range(lo, p):
                    if short[a] >= p:
                        for b in partners[a]:
                            if a < p <= b and sent(a) != sent(b):
                                seeds.append(a if sent(a) else b)
            for a, b in self.long:
                if a < p <= b and sent(a) != sent(b):
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


class ConsolidatorReplay(_Replay):
    """missy's MemoryConsolidator (the seed's key-fact summary; the pipeline is replayed from
    scratch): the messages not yet consolidated and their token sums, carried from turn to turn;
    at a consolidation only the messages since the last one are read.

    The state is rebuilt from the summary in force after any turn the reference step planned
    (pair safety, a recorded summary in force before the first consolidation)."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        settings: ConsolidatorSettings = params
        self.chars = full.tokenizer.name == "chars"
        self.raw = full.message_tokens
        self.starts = sorted(session.summary_start_turns)
        ids = [m.id for m in session.messages]
        # Ids shared by several messages make "covered" a matter of ids, not messages: from scratch.
        # A system prompt that reads like a consolidation would be taken for it by the trigger: from scratch.
        marker = "[Session context consolidated]"
        odd_prompt = session.system_prompt.startswith(marker) or any(m.role == "system" and m.text.startswith(marker) for m in session.messages)
        self.usable = not settings.pipeline and not pair_safe and len(set(ids)) == len(ids) and not odd_prompt
        self.threshold = int(settings.max_tokens * settings.threshold_pct)
        self.allocation = {"below_threshold": self.threshold, "headroom": settings.max_tokens - self.threshold}
        self.synced_to = -1  # the state holds messages 0..synced_to
        self.system_count = 0
        # Each message's tokens as the plan measures it (`_measured`): the system messages', all
        # messages' so far and the pending ones', for the tokens not sent.
        self.system_t = self.seen_t = self.pending_t = 0
        self.system_texts: list[str] = [session.system_prompt] if session.system_prompt else []
        self.system_tokens = self._text_tokens(self.system_texts[0]) if self.system_texts else 0
        self.covered: set[str] = set()
        self.covered_count = 0
        self.pending: list[int] = []  # non-system messages not consolidated yet, oldest first
        self.pending_raw = 0
        self.pending_sent = 0
        self.sent_of: dict[int, int] = {}  # a pending message's tokens as sent

    def _text_tokens(self, text: str) -> int:
        return len(text) // 4 if self.chars else self.full.text(text)

    def _measured(self, k: int) -> int:
        return self.raw[k] // 4 if self.chars else self.raw[k]

    def _add(self, i: int) -> None:
        m = self.session.messages[i]
        t = self._measured(i)
        self.seen_t += t
        if m.role == "system":
            self.system_count += 1
            self.system_t += t
            if m.text:
                self.system_texts.append(m.text)
                self.system_tokens = self._text_tokens("\n\n".join(self.system_texts))
        elif m.id in self.covered:
            self.covered_count += 1
        else:
            self.pending.append(i)
            self.pending_raw += self.raw[i]
            self.pending_t += t
            self.sent_of[i] = sent = self._text_tokens(str(m.openai_content()))
            self.pending_sent += sent

    def _resync(self, i: int) -> None:
        """The state after messages 0..i-1 with the generated summary in force."""
        self.covered = set(self.generated[-1].covers) if self.generated else set()
        self.covered_count = 0
        self.pending, self.pending_raw, self.pending_sent = [], 0, 0
        self.system_count = self.system_t = self.seen_t = self.pending_t = 0
        self.system_texts = [self.session.system_prompt] if self.session.system_prompt else []
        self.system_tokens = self._text_tokens(self.system_texts[0]) if self.system_texts else 0
        for k in range(i):
            self._add(k)

    def absorb(self, i: int) -> None:
        if self.usable and self.synced_to == i - 1:  # else the next step rebuilds the state
            self._add(i)
            self.synced_to = i

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.usable or (not self.generated and self.starts and self.starts[0] <= self.recorded_until(i)):
            self.synced_to = -2  # the reference may write a consolidation: rebuild the state from it
            return super().step(i)
        if self.synced_to != i:
            self._resync(i)
            self._add(i)
            self.synced_to = i
        return self._fast(i)

    def _fast(self, i: int) -> Turn:
        settings: ConsolidatorSettings = self.params
        earlier = [self.generated[-1].text] if self.generated else []
        earlier_raw = sum(len(t) if self.chars else self.full.text(t) for t in earlier)
        current = (self.pending_raw + earlier_raw) // 4 if self.chars else self.pending_raw + earlier_raw
        trigger = should_consolidate(current, settings)
        events: list[Event] = []
        active = len(self.generated)
        consolidate = trigger and len(self.pending) > RECENT_KEEP
        if consolidate:
            messages = self.session.messages
            earlier_facts = [line[2:] for t in earlier for line in t.splitlines() if line.startswith("- ") and "no key facts" not in line]
            older, recent = self.pending[:-RECENT_KEEP], self.pending[-RECENT_KEEP:]
            text = consolidated_message([messages[k] for k in older], earlier_facts)
            recent_sent = sum(self.sent_of[k] for k in recent)
            used = self.system_tokens + self._text_tokens(text) + recent_sent
            kept = self.system_count + RECENT_KEEP
            summarized = self.covered_count + len(older)
            ids = [messages[k].id for k in older]
            # The reference's `{c for s in prefix.summaries for c in s.covers}`: set() adds the same
            # keys in the same order, so the set (and the new covers' order) is the same, at C speed.
            previous = set(self.generated[-1].covers) if self.generated else set()
            events.append(Event(i, "consolidation", f"consolidated {len(ids)} messages at {current:,} estimated tokens"))
            summary = Summary(text=text, messages_covered=len(ids) + len(previous), covers=tuple(previous) + tuple(ids))
            self.generated.append(summary)
            self.covered.update(ids)
            self.covered_count += len(older)
            self.pending = recent
            self.pending_raw = sum(self.raw[k] for k in recent)
            self.pending_t = sum(self._measured(k) for k in recent)
            self.pending_sent = recent_sent
        else:
            used = self.system_tokens + sum(self._text_tokens(t) for t in earlier) + self.pending_sent
            kept = self.system_count + len(self.pending)
            summarized = self.covered_count
        fits = used <= settings.max_tokens
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: light_plan(
            "missy-consolidator", self.allocation, threshold_usage(used, self.threshold), settings.max_tokens, used, fits))
        not_sent = self.seen_t - self.system_t - self.pending_t
        return Turn(i, used, settings.max_tokens, kept, i + 1 - kept - summarized, summarized, 0, fits, active, tuple(events), not_sent)


class MnesisReplay(_GrowingReplay):
    """mnesis: the raw messages not compacted are the history after a boundary, so the newest-first
    fill is one bisection over the history's prefix sums; a compaction's fallback summary reads only
    the newest covered messages (its file-id footer is gathered as messages are covered). A tool
    output carried in its call's ToolPart (counted 0) is a unit with that call: the cut moves past it.

    Turns before the first compaction with a recorded summary in force, and pair safety, are
    planned by the reference step."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        budget: MnesisBudget = params
        info = model_info(session.model)
        self.limit = budget.context_limit if budget.context_limit is not None else info.context_limit
        self.reserved = budget.reserved_output_tokens if budget.reserved_output_tokens is not None else info.max_output_tokens
        self.usable = self.limit - self.reserved - budget.compaction_buffer
        self.soft = int(self.usable * 0.6)
        self.latest = budget.always_include_latest
        self.allocation_fixed = {"reserved_output": self.reserved, "compaction_buffer": budget.compaction_buffer}
        ids = [m.id for m in session.messages]
        self.ok = not pair_safe and len(set(ids)) == len(ids)
        self.starts = sorted(session.summary_start_turns)
        self.covered = 0  # the first `covered` history messages are compacted (in phase with a generated summary)
        self.synced_summaries = 0  # len(generated) the state reflects
        self.file_ids: set[str] = set()
        self.filed = 0  # history messages whose file ids are in `file_ids`
        self.summary_tokens = 0
        # mnesis' unit is its message: a tool message whose output an earlier message's ToolPart
        # holds (counted 0) is kept only with that message.
        self.carrier = tool_parts(session).carrier
        self.carried: list[bool] = []  # per history message

    def _grow(self, i: int) -> None:
        super()._grow(i)
        if self.session.messages[i].role != "system":
            self.carried.append(self.carrier[i] is not None)

    def absorb(self, i: int) -> None:
        self._grow(i)

    def step(self, i: int) -> Turn:
        self._grow(i)
        if not self.ok or (not self.generated and self.starts and self.starts[0] <= self.recorded_until(i)):
            return super().step(i)
        if self.synced_summaries != len(self.generated) and not self._sync():
            self.ok = False
            return super().step(i)
        return self._fast(i)

    def _sync(self) -> bool:
        """Take over a summary the reference step generated: it covers every history message before
        its boundary (mnesis condenses the earlier node with the new span)."""
        summary = self.generated[-1]
        position = {message_id: k for k, message_id in enumerate(self.history_ids)}
        found = [position.get(c) for c in summary.covers]
        if any(k is None for k in found):
            return False
        covered = max(found, default=-1) + 1  # type: ignore[type-var]
        if covered != len(found):
            return False
        self.covered = covered
        self.summary_tokens = HEURISTICS["mnesis"].count(summary.text)
        self.synced_summaries = len(self.generated)
        return True

    def _fast(self, i: int) -> Turn:
        P, h, c0 = self.sums, len(self.history), self.covered
        available = self.usable - self.system_tokens - self.summary_tokens
        j = bisect_left(P, P[h] - available, c0, h) if available >= 0 else h  # history[j:h] fit, newest first
        while j < h and self.carried[j]:  # a carried output without its message's call is not a unit
            j += 1
        used = P[h] - P[j]
        included = h - j
        if not included and self.latest and h > c0:
            start = h - 1
            while start > c0 and self.carried[start]:
                start -= 1
            used, included = P[h] - P[start], h - start
        estimate = self.system_tokens + self.summary_tokens + used
        usable = self.usable
        fits = estimate <= usable
        kept = self.system_count + included
        summarized = c0
        active = len(self.generated)
        events: list[Event] = []
        if usable > 0 and estimate >= self.soft and len(self.users) > 2:
            boundary = self.users[-2]
            b = bisect_left(self.history, boundary)  # history[:b] is before the boundary
            if b > c0:
                kind = "hard_threshold" if estimate >= usable else "compaction"
                events.append(Event(i, kind, f"{estimate:,} tokens >= the {'hard' if kind == 'hard_threshold' else 'soft'} threshold "
                                             f"({usable if kind == 'hard_threshold' else self.soft:,}): {b - c0} messages compacted"))
                text = self._fallback(b, max(1, usable // 10))
                self.generated.append(Summary(text=text, messages_covered=b, covers=tuple(self.history_ids[:b])))
                self.covered = b
                self.summary_tokens = HEURISTICS["mnesis"].count(text)
                self.synced_summaries = len(self.generated)
        def overflow() -> Plan:
            system, summaries = self.system_tokens, self.summary_tokens if active else 0
            allocation = {**self.allocation_fixed, "system": system, "summaries": summaries, "messages": usable - system - summaries}
            usage = {"reserved_output": 0, "compaction_buffer": 0, "system": system, "summaries": summaries, "messages": used}
            return light_plan("mnesis", allocation, usage, self.limit, estimate, fits, "parts")

        self.before = untrimmed_cuts(i, self.before, fits, events, overflow)
        return Turn(i, estimate, self.limit, kept, i + 1 - kept - summarized, summarized, 0, fits, active, tuple(events), P[h] - used)

    def _fallback(self, covered: int, budget_tokens: int) -> str:
        """`summarizers.mnesis_fallback` over the first `covered` history messages, the file ids
        gathered once per message."""
        messages = self.session.messages
        for k in range(self.filed, covered):
            text = messages[self.history[k]].text
            if "file_" in text:  # what the pattern needs before it can match
                self.file_ids.update(FILE_ID_RE.findall(text))
        self.filed = max(self.filed, covered)
        header = "[CONTEXT TRUNCATED \u2014 DETERMINISTIC FALLBACK]\n\n## Kept Messages\n\n"
        file_ids = sorted(self.file_ids)
        footer = f"\n\n[LCM File IDs: {', '.join(file_ids)}]" if file_ids else ""
        room = budget_tokens * 4 - len(header) - len(footer)
        kept: list[str] = []
        for k in range(covered - 1, -1, -1):
            m = messages[self.history[k]]
            line = f"[{'USER' if m.role == 'user' else 'ASSISTANT'}]: {m.text[:500]}"
            if len(line) + 1 > room:
                break
            kept.append(line)
            room -= len(line) + 1
        kept.reverse()
        return header + "\n".join(kept) + footer


class SupyagentReplay(_GrowingReplay):
    """supyagent: the summary in force covers the history up to an index; the newest messages fill
    what is left (the first min_recent_messages whatever they cost), one bisection over the prefix
    sums of the history's charges (count + 3); the trigger reads running totals.

    Turns that need emergency truncation (the list does not fit: those are all the turns that do
    not fit) and turns with a recorded summary in force before the first generated one are
    planned by the reference step; pair safety is carried as missy's (`_PairSafety`), except
    where a tool call id is on more than one call."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        self.tok = full.tokenizer
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        settings: ContextSettings = params
        self.limit = settings.context_limit or get_context_limit(session.model)
        tools = tools_json(session)
        self.tools_tokens = full.text(tools) if tools else 0
        ids = [m.id for m in session.messages]
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.ok = len(set(ids)) == len(ids) and (not pair_safe or self.pairs is not None)
        self.starts = sorted(session.summary_start_turns)
        self.charges: list[int] = [0]  # of count + 3, as the fitting loop charges each message
        self.system_tokens = self._system_prompt_tokens("\n\n".join(self.system_texts))  # counted even when empty, as supyagent does
        self.synced = 0  # len(generated) the summary state reflects
        self.summary_idx: int | None = None
        self.summary_size = 0
        # supyagent re-summarises from message 0 at every trigger: the extractive snapshot is built
        # from what it gathered the time before (any other summarizer is asked each time).
        self.summary_counter = _SummaryCounter(self.tok)
        counter = self.summary_counter.count if self.summary_counter.piecewise else None
        self.snapshot = _Snapshot(counter) if type(summarizer) is ExtractiveSummarizer else None
        self.sizes: dict[int, int] = {}  # id(summary) -> its count, for the summaries generated here

    def _system_prompt_tokens(self, prompt: str) -> int:
        # supyagent counts the system message as a one-message list (3 for the list, its own count)
        return 3 + count_message_dict({"role": "system", "content": prompt}, self.tok)

    def _sync(self) -> None:
        summary = self.generated[-1]
        self.summary_idx = len(summary.covers) - 1  # supyagent's summaries cover the history from 0
        size = self.sizes.pop(id(summary), None)
        self.summary_size = size if size is not None else count_message_dict(summary_message(summary), self.tok)
        self.synced = len(self.generated)

    pair_safe_incremental = True

    def absorb(self, i: int) -> None:
        self._grow(i)
        if self.pairs is not None:
            self.pairs.grow(i)
        if self.session.messages[i].role != "system":
            self.charges.append(self.charges[-1] + self.tokens[i] + 3)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.ok or (not self.generated and self.starts and self.starts[0] <= self.recorded_until(i)):
            return super().step(i)
        if self.synced != len(self.generated):
            self._sync()
        turn = self._fast(i)
        if turn is None:  # emergency truncation: the reference plans this turn
            turn = super().step(i)
            if self.synced != len(self.generated):
                self._sync()
        return turn

    def _fast(self, i: int) -> Turn | None:
        settings: ContextSettings = self.params
        P, Q, h = self.sums, self.charges, len(self.history)
        available = self.limit - settings.response_reserve - self.tools_tokens - self.system_tokens
        start = 0
        summary_used = 0
        if self.summary_idx is not None and self.summary_idx < h:
            t = 3 + self.summary_size
            if t < available * SUMMARY_SHARE:
                available -= t
                start = self.summary_idx + 1
                summary_used = self.summary_size
        forced = 0 if settings.trim_protected_tail else min(settings.min_recent_messages, h - start)
        e = h - forced
        available -= Q[h] - Q[e]
        j = bisect_left(Q, Q[e] - available, start, e) if available >= 0 else e  # history[j:e] fit, newest first
        total = self.system_tokens + summary_used + (P[h] - P[j]) + self.tools_tokens
        target = self.limit - settings.response_reserve
        if total > target:
            return None
        kept = self.system_count + (h - j)
        not_sent = P[j]
        if self.pairs is not None:  # pair safety, after the build (the trigger reads the build): history[j:h] is sent
            dropped = self.pairs.drops(j, h, h, h)
            unpaired = sum(self.tokens[self.history[k]] for k in dropped)
            total -= unpaired
            not_sent += unpaired
            kept -= len(dropped)
        active = len(self.generated)
        events: list[Event] = []
        # The trigger, on the whole history (count_messages_tokens = 3 + the sum).
        since = h - self.summary_idx - 1 if self.summary_idx is not None else h
        history_total = 3 + P[h]
        N, K = settings.max_messages_before_summary, settings.max_tokens_before_summary
        if settings.auto_summarize and h >= settings.min_recent_messages + 4 and (since >= N or history_total >= K):
            messages = self.session.messages
            up_to = max(0, h - settings.min_recent_messages - 1)
            text_count: int | None = None
            if self.snapshot is not None:
                self.snapshot.advance([messages[k] for k in self.history[len(self.snapshot.seen) : up_to + 1]])
                text, text_count = self.snapshot.counted()
                text_count = text_count if self.snapshot.count is not None else None
            else:
                text = self.summarizer.supyagent_snapshot([messages[k] for k in self.history[: up_to + 1]])
            last = self.history[up_to]
            why = (f"{since} messages since the last summary >= {N}" if since >= N
                   else f"the history's {history_total:,} tokens >= max_tokens_before_summary {K:,}")
            events.append(Event(i, "summary", f"summarised messages 0-{last} ({why})"))
            # The covers are the first up_to + 1 history ids: a view of the growing list, not a copy.
            summary = Summary(text=text, messages_covered=up_to + 1, covers=IdPrefix(self.history_ids, up_to + 1),  # type: ignore[arg-type]
                              created_at=messages[i].timestamp)
            self.generated.append(summary)
            self.sizes.clear()
            self.sizes[id(summary)] = self.summary_counter.size(summary, text_count)
        self.before = FITS  # the list fits (emergency truncation would have taken this turn)
        return Turn(i, total, self.limit, kept, i + 1 - kept - start, start, 0, True, active, tuple(events), not_sent)




class CategoriesReplay(_Replay):
    """Penguin's ContextWindowManager (`categories`): each category over its own maximum loses its
    oldest messages until the excess is freed, so each category carries its members and the
    prefix sums of their counts, and a turn's cut in a category is one bisection (the cut of the
    turn before tells which messages are newly trimmed, for the trim events).

    Sessions with images (the image rule re-counts older messages) or timestamps out of order
    (the manager orders a category by timestamp), turns with a recorded summary of file messages
    in force, and pair safety are planned by the reference step."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        budgets: CategoryBudgets = params
        messages = session.messages
        self.tokens = full.message_tokens
        stamps = [m.timestamp for m in messages]
        self.usable = not pair_safe and not any(m.image_count for m in messages) and all(a <= b for a, b in zip(stamps, stamps[1:], strict=False))
        ids = {m.id for m in messages}
        starts = [start for summary, start in zip(session.summaries, session.summary_start_turns, strict=True) if any(c in ids for c in summary.covers)]
        self.first_covering = min(starts, default=len(messages))
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

    def absorb(self, i: int) -> None:
        k = self.position[self.session.messages[i].category]
        self.members[k].append(i)
        self.sums[k].append(self.sums[k][-1] + self.tokens[i])

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.usable or self.recorded_until(i) >= self.first_covering:
            if not self.synced:  # the reference step reads the turn before's trimmed set
                trimmed = frozenset(j for k, d in enumerate(self.cut) for j in self.members[k][:d])
                self.before = _Cuts(self.before.fits, trimmed)
                self.synced = True
            return super().step(i)
        self.synced = False
        return self._fast(i)

    def _fast(self, i: int) -> Turn:
        budgets: CategoryBudgets = self.params
        sums, maxima = self.sums, self.maxima
        usage = [S[-1] for S in sums]
        total = sum(usage)
        trimmed = total > budgets.max_tokens or any(u > mx for k, (u, mx) in enumerate(zip(usage, maxima, strict=True)) if k != self.system)
        cut = [0] * len(usage)
        if trimmed:
            total_over = total > budgets.max_tokens
            to_trim = total - budgets.max_tokens
            for k in self.trim_order:
                if usage[k] <= maxima[k]:
                    continue  # only a category over its own maximum is trimmed
                excess = usage[k] - maxima[k]
                if total_over:
                    excess = max(excess, min(to_trim, usage[k] - self.minima[k]))
                S = sums[k]
                d = min(bisect_left(S, excess), len(S) - 1)  # the oldest members whose tokens reach the excess
                cut[k] = d
                to_trim -= S[d]
                if to_trim <= 0:
                    total_over = False
            for k in self.others:  # the seed version loses ERROR/INTERNAL/UNKNOWN whenever it trims
                cut[k] = len(self.members[k])
        used = total - sum(S[d] for S, d in zip(sums, cut, strict=True))
        fits = used <= budgets.max_tokens
        events: list[Event] = []
        if trimmed:
            new = [(self.members[k][self.cut[k]], k) for k, d in enumerate(cut) if d > self.cut[k]]
            for _, k in sorted(new):  # by category, in the order of their first newly trimmed message
                before, d, members = self.cut[k], cut[k], self.members[k]
                shown = ", ".join(f"#{j}" for j in members[before : min(d, before + 5)]) + (f" and {d - before - 5} more" if d - before > 5 else "")
                events.append(Event(i, "trim", f"{self.order[k].upper()}: {d - before} more message(s) removed ({shown}, "
                                                f"{sums[k][d] - sums[k][before]:,} tokens), {d} removed in all"))
        if not fits and self.before.fits:
            final = {c.value: u - S[d] for c, u, S, d in zip(self.order, usage, sums, cut, strict=True)}
            plan = light_plan("categories", self.allocation, final, budgets.max_tokens, used, fits, allocation_kind="caps")
            _changes(i, plan, self.before, events)
        self.before = FITS if fits else NOT_FITS
        self.cut = cut
        dropped = sum(cut)
        return Turn(i, used, budgets.max_tokens, i + 1 - dropped, dropped, 0, 0, fits, 0, tuple(events), total - used)



FILE_ID_RE = re.compile(r"\bfile_[0-9a-fA-F]{8,32}\b")

REPLAYERS: dict[str, type[_Replay]] = {"missy": MissyReplay, "missy-consolidator": ConsolidatorReplay, "mnesis": MnesisReplay,
                                       "supyagent": SupyagentReplay, "categories": CategoriesReplay}


def replayer(session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> _Replay | None:
    """The policy's incremental replayer, or None: `simulate` then plans every prefix from scratch
    (also where the parameters say its replayer does not follow them: `params.needs_full_replay`)."""
    if getattr(params, "needs_full_replay", False):
        return None
    kind = REPLAYERS.get(policy)
    return None if kind is None else kind(session, policy, params, full, summarizer, pair_safe)


def replays_incrementally(policy: str, pair_safe: bool = False) -> str:
    """How `simulate` replays the policy: 'incremental', 'incremental (pair safety: from scratch)', or 'from scratch'."""
    if policy not in REPLAYERS:
        return "from scratch"
    if pair_safe and not getattr(REPLAYERS[policy], "pair_safe_incremental", False):
        return "from scratch (pair safety)"
    return "incremental"


# The replayers of the policies added for issue 12 (their modules import this one's helpers, so last).
from .replay_edits import REPLAYERS as _EDITS  # noqa: E402
from .replay_summaries import REPLAYERS as _SUMMARIES  # noqa: E402
from .replay_trims import REPLAYERS as _TRIMS  # noqa: E402

REPLAYERS.update(_TRIMS)
REPLAYERS.update(_SUMMARIES)
REPLAYERS.update(_EDITS)
