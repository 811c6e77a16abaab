"""Incremental replayers for the trimming policies of issue 12 (see `replay.py` for the contract):
AutoGen's three model contexts, LlamaIndex's ChatMemoryBuffer, LangChain's trim_messages and
Strands' SlidingWindowConversationManager.

Each carries, from turn to turn, the prefix sums of the history's counts (`full.message_tokens`,
never recounted) and what the policy's decision depends on, and computes only what a `Turn` holds;
turns they do not cover go to the reference step (`_Replay.step`), so turns and events are exactly
the reference's (tests/test_replay_trims.py). None of these policies has a trigger of its own
(`Policy.compact` is None): no summary is ever generated here. Every replayer hands a session with
recorded summaries, and pair safety, to the reference step for the whole replay (the common case,
an agent log without either, is incremental).
"""

from __future__ import annotations

import copy
from bisect import bisect_left, bisect_right
from typing import Any

from .counting import TokenCounts
from .plan import Decision
from .policies.autogen_head_and_tail import placeholder_text
from .policies.autogen_messages import (
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    divide,
    model_limit,
    placeholder_tokens,
    tool_schema_tokens,
)
from .policies.common import base_system_prompt
from .policies.langchain_counting import count_view, lc_type, text_message_tokens
from .policies.langchain_trim import (
    Entry,
    TrimParams,
    TrimTrace,
    _first_max_tokens,
    additive,
    parse_types,
    separator_splitter,
    view_getter,
)
from .policies.llamaindex_chat_memory_buffer import joined_counter, prefix_tokens
from .policies.strands_common import StrandsMessage, context_window_limit
from .policies.strands_sliding import SlidingWindowParams, _Manager, request_overhead, split_window
from .replay_contract import Event, Turn, _changes, _Cuts, _indices, _Replay, light_plan
from .session import Session
from .summarizers import Summarizer


class _AutoGenReplay(_Replay):
    """What AutoGen's three model contexts share: the LLMMessages so far (consecutive tool messages
    are one FunctionExecutionResultMessage, so the last unit may grow), their kinds and the prefix
    sums of their counts (3 per LLMMessage plus its messages') and of their message counts, and the
    agent's SystemMessages, which are always sent.

    Sessions with recorded summaries (a summary stands in the model context where the messages it
    covers were), and pair safety, are replayed by the reference step."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.usable = not pair_safe and not session.summaries
        self.tokens = full.message_tokens
        self.kinds: list[str] = []
        self.sums: list[int] = [0]  # sums[k]: the first k units' counts (3 each plus their messages')
        self.members: list[int] = [0]  # members[k]: the session messages of the first k units
        self.seen = 0  # the measured tokens of messages 0..i
        self.system_raw = 0  # ... of the system-role messages among them
        self.system_count = 0
        self.system_tokens = (TOKENS_PER_MESSAGE + full.text(session.system_prompt) + full.text("system")) if session.system_prompt else 0
        self.budget = model_limit(session)[0]

    def _grow(self, i: int) -> None:
        m = self.session.messages[i]
        t = self.tokens[i]
        self.seen += t
        if m.role == "system":
            self.system_count += 1
            self.system_raw += t
            self.system_tokens += TOKENS_PER_MESSAGE + t
            return
        if m.role == "tool" and self.kinds and self.kinds[-1] == "results":
            self.sums[-1] += t
            self.members[-1] += 1
            return
        self.kinds.append("results" if m.role == "tool" else ("function_calls" if m.tool_calls else "assistant") if m.role == "assistant" else "user")
        self.sums.append(self.sums[-1] + TOKENS_PER_MESSAGE + t)
        self.members.append(self.members[-1] + 1)

    def absorb(self, i: int) -> None:
        if self.usable:
            self._grow(i)

    def step(self, i: int) -> Turn:
        if not self.usable:
            return super().step(i)
        self._grow(i)
        return self._fast(i)

    def _fast(self, i: int) -> Turn:
        raise NotImplementedError

    def _turn(self, i: int, runs: list[tuple[int, int]], placeholder: int = 0, tools: int = 0, budget: int | None = None) -> Turn:
        """The turn that sends the units of `runs` (each [a, b)) with the SystemMessages, a placeholder and tool schemas."""
        S, C = self.sums, self.members
        message_tokens = sum(S[b] - S[a] for a, b in runs)
        sent_members = sum(C[b] - C[a] for a, b in runs)
        sent_raw = message_tokens - TOKENS_PER_MESSAGE * sum(b - a for a, b in runs)
        budget = self.budget if budget is None else budget
        used = self.system_tokens + message_tokens + REPLY_PRIMING + placeholder + tools
        fits = used <= budget
        events: list[Event] = []
        if not fits and self.before.fits:
            usage = {"system": self.system_tokens, "messages": message_tokens + REPLY_PRIMING, "placeholder": placeholder, "tools": tools}
            allocation = divide(budget, {"system": self.system_tokens, "placeholder": placeholder, "tools": tools})
            self.before = _changes(i, light_plan(self.policy, allocation, usage, budget, used, fits), self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        kept = self.system_count + sent_members
        return Turn(i, used, budget, kept, i + 1 - kept, 0, 0, fits, 0, tuple(events), self.seen - self.system_raw - sent_raw)


class AutoGenBufferedReplay(_AutoGenReplay):
    """autogen-buffered: the last buffer_size units, less a leading tool-results unit."""

    def _fast(self, i: int) -> Turn:
        n = len(self.kinds)
        a = max(0, n - self.params.buffer_size)
        if a < n and self.kinds[a] == "results":
            a += 1
        return self._turn(i, [(a, n)])


class AutoGenHeadAndTailReplay(_AutoGenReplay):
    """autogen-head-and-tail: the first head_size and last tail_size units (a head ending on a
    function call and a tail starting on results each lose that unit) and the placeholder."""

    def _fast(self, i: int) -> Turn:
        n, h, t = len(self.kinds), self.params.head_size, self.params.tail_size
        skipped = n - h - t
        if skipped <= 0:
            return self._turn(i, [(0, n)])
        head_end = h - 1 if self.kinds[h - 1] == "function_calls" else h
        tail_start = n - t + 1 if self.kinds[n - t] == "results" else n - t
        return self._turn(i, [(0, head_end), (tail_start, n)], placeholder_tokens(placeholder_text(skipped), self.full))


class AutoGenTokenLimitedReplay(_AutoGenReplay):
    """autogen-token-limited: `messages.pop(len(messages) // 2)` until the count fits. After k pops
    of n units the removed units are one run around n // 2 (`middle_pops`): for an even n the pops
    alternate right, left..., for an odd n right, right, left, right...; the count falls with
    every pop, so the number of pops is one bisection over k."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.tools = tool_schema_tokens(session.tools, full.tokenizer) if params.tool_schema else 0
        self.limit = params.token_limit if params.token_limit is not None else self.budget

    @staticmethod
    def removed(n: int, k: int) -> tuple[int, int]:
        """The run [lo, hi) of units the first k pops of n units remove."""
        if k == 0:
            return n // 2, n // 2
        left = k // 2 if n % 2 == 0 else (k - 1) // 2
        return n // 2 - left, n // 2 + k - left

    def _fast(self, i: int) -> Turn:
        S, n, limit = self.sums, len(self.kinds), self.limit
        base = S[n] + REPLY_PRIMING + self.tools

        def count(k: int) -> int:
            lo, hi = self.removed(n, k)
            return base - (S[hi] - S[lo])

        lo_k, hi_k = 0, n  # the fewest pops after which the count fits (n: even all of them do not)
        while lo_k < hi_k:
            mid = (lo_k + hi_k) // 2
            if count(mid) <= limit:
                hi_k = mid
            else:
                lo_k = mid + 1
        lo, hi = self.removed(n, lo_k)
        runs = [(0, lo), (hi, n)]
        first = 0 if lo > 0 else hi
        if first < n and self.kinds[first] == "results":  # AutoGen removes a leading tool result after trimming
            runs = [(1, lo), (hi, n)] if lo > 0 else [(hi + 1, n)]
        return self._turn(i, [(a, b) for a, b in runs if a < b], tools=self.tools, budget=limit)


class LlamaIndexReplay(_Replay):
    """llamaindex-chat-memory-buffer: ChatMemoryBuffer.get tries windows newest-last from the oldest
    (a window may not start on an assistant or tool message, but the first and the last may) and
    takes the first that fits. A new message adds its count to every window's (when the join
    before it is a plain one), so a window that did not fit still does not: the search goes on
    from the turn before's start, and every message is passed over once. The windows' counts come
    from the whole session's `JoinedCounter`, less what lies after the turn.

    Turns whose last message is joined to the next by whitespace meeting whitespace (the joined
    count of the run differs from the whole session's), sessions with recorded summaries, and pair
    safety, are planned by the reference step."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.usable = not pair_safe and not session.summaries
        self.limit = params.limit
        history = list(session.system_and_history[1]) if self.usable else []
        self.counter = joined_counter(session, history, full) if self.usable else None  # type: ignore[arg-type]
        self.roles = [m.role for m in history]
        self.sums = [0]
        for m in history:
            self.sums.append(self.sums[-1] + full.message_tokens[m.index])
        self.h = 0  # history messages so far
        self.system_messages: list[Any] = []
        self.initial = -1
        self.start = 0  # where the search for the window goes on from
        self.dirty = True

    def _initial(self) -> int:
        if self.params.initial_token_count is not None:
            return self.params.initial_token_count
        return prefix_tokens(self.session, self.full, self.system_messages)[1]  # counted as the chat engines count it

    def _total(self, j: int) -> int:
        """`len(tokenizer(" ".join(strs[j:h])))` for this turn's h (no run of joins crosses h)."""
        c, h = self.counter, self.h
        return c.window_total(j) - c.suffix[h] - c.fix_suffix[bisect_left(c.run_starts, h)]  # type: ignore[union-attr]

    def absorb(self, i: int) -> None:
        if not self.usable:
            return
        m = self.session.messages[i]
        if m.role == "system":
            self.system_messages.append(m)
            initial = self._initial()
            if initial != self.initial:
                self.initial, self.start = initial, 0
        else:
            self.h += 1

    def step(self, i: int) -> Turn:
        if not self.usable:
            return super().step(i)
        self.absorb(i)
        if self.initial < 0:
            self.initial = self._initial()
        c = self.counter
        # A run of whitespace joins crossing the turn's end: its joined count is not the whole session's.
        r = bisect_right(c.run_starts, self.h - 1)  # type: ignore[union-attr]
        if r and c.runs[r - 1][1] >= self.h:  # type: ignore[union-attr]
            self.dirty = True
            return super().step(i)
        if self.dirty:
            self.start, self.dirty = 0, False
        return self._fast(i)

    def _fast(self, i: int) -> Turn:
        h, limit, initial, roles = self.h, self.limit, self.initial, self.roles
        raised = initial > limit
        window = 0
        start = h
        if not raised and h:
            j = self.start
            while True:
                if j == 0 or j == h - 1 or roles[j] not in ("tool", "assistant"):
                    window = self._total(j)
                    if window + initial <= limit or j == h - 1:
                        break
                j += 1
            start = self.start = j
        total = initial + window
        fits = total <= limit and not raised
        events: list[Event] = []
        if not fits and self.before.fits:
            allocation = {"initial": min(initial, limit), "history": max(0, limit - initial)}
            self.before = _changes(i, light_plan(self.policy, allocation, {"initial": initial, "history": window}, limit, total, fits, "parts"),
                                    self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        kept = len(self.system_messages) + h - start
        return Turn(i, total, limit, kept, i + 1 - kept, 0, 0, fits, 0, tuple(events), self.sums[start])


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

    Sessions with recorded summaries (LangChain's summary message among the entries), and pair
    safety, are replayed by the reference step."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.usable = not pair_safe and not session.summaries
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

    def step(self, i: int) -> Turn:
        return self._fast(i) if self.usable else super().step(i)

    def _search(self, size: int, fits: Any) -> int:
        """LangChain's binary search over `size` entries (at most bit_length steps, as it loops)."""
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

    def _partial(self, before: int, q: int, budget: int, strategy: str) -> Entry | None:
        """The part of entry q allow_partial keeps after `before` tokens of kept entries, or None."""
        target = Entry(q - self.off, self.T[q], self.types[q])
        kept, trace = [Entry(_AGGREGATE, before, "human"), target], TrimTrace()
        out = _first_max_tokens(kept, budget, additive, self.count_one, self.view_of, self.splitter, strategy, (), trace, set())
        return out[1] if len(out) > 1 else None

    def _fast(self, i: int) -> Turn:
        p: TrimParams = self.params
        P, T, off, budget = self.P, self.T, self.off, p.max_tokens
        L = off + i + 1  # entries so far
        sys = -1
        partial: Entry | None = None
        partial_at = -1
        if p.strategy == "last":
            end = self.prev_end[L] if self.end_on else L
            rs = 0
            if p.include_system and end > 0 and self.types[0] == "system":
                sys, rs = 0, 1
            remaining = max(0, budget - T[0]) if sys == 0 else budget
            m = end - rs
            if P[end] - P[rs] <= remaining:
                idx = m
            else:
                idx = self._search(m, lambda k: P[end] - P[end - k] <= remaining)
                if p.allow_partial and idx < m:
                    partial = self._partial(P[end] - P[end - idx], end - idx - 1, remaining, "last")
                    partial_at = end - idx - 1 if partial is not None else -1
            ks = end - idx
            if self.start_on and (partial is None or partial.type not in self.start_on):
                partial, partial_at = None, -1
                ks = min(self.next_start[ks], end)
            ke = end
        else:
            if P[L] <= budget:
                idx = L
            else:
                idx = self._search(L, lambda k: P[k] <= budget)
                if p.allow_partial and idx < L:
                    partial = self._partial(P[idx], idx, budget, "first")
                    partial_at = idx if partial is not None else -1
            ks, ke = 0, idx
            if self.end_on and (partial is None or partial.type not in self.end_on):
                partial, partial_at = None, -1
                ke = self.prev_end[idx]
        kept_points = sorted(q for q in (sys, partial_at) if q >= 0)
        used = (T[sys] if sys >= 0 else 0) + (partial.tokens if partial is not None else 0) + P[ke] - P[ks]
        # What is sent, as runs of entry positions; what is not (messages only), as runs of indices.
        sent = [(q, q + 1) for q in kept_points if not ks <= q < ke] + ([(ks, ke)] if ks < ke else [])
        sent.sort()
        trimmed: list[tuple[int, int]] = []
        at = off
        for a, b in sent:
            if a > at:
                trimmed.append((at - off, a - off))
            at = max(at, b)
        if at < L:
            trimmed.append((at - off, L - off))
        tokens_all = P[L] - P[off]
        sent_messages = sum(min(b, L) - max(a, off) for a, b in sent if b > off)
        sent_tokens = sum(P[b] - P[max(a, off)] for a, b in sent if b > off)
        truncated = 1 if partial_at >= off else 0
        events: list[Event] = []
        if sent_messages < i + 1:
            self._trim_events(i, trimmed, events)
        else:
            trimmed = []
        self.trimmed = trimmed
        fits = used <= budget
        if not fits and self.before.fits:
            system_tokens = T[0] if sys == 0 else 0
            allot = min(system_tokens, budget)
            self.before = _changes(i, light_plan(self.policy, {"system": allot, "history": budget - allot},
                                    {"system": system_tokens, "history": used - system_tokens}, budget, used, fits), self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        kept = sent_messages - truncated
        return Turn(i, used, budget, kept, i + 1 - sent_messages, 0, truncated, fits, 0, tuple(events), tokens_all - sent_tokens)

    def _trim_events(self, i: int, trimmed: list[tuple[int, int]], events: list[Event]) -> None:
        """`_changes`' trim events: per category, in the order of its first newly trimmed message,
        the messages trimmed now and not the turn before."""
        new: list[tuple[int, int]] = []
        for a, b in trimmed:  # minus the turn before's runs
            for c, d in self.trimmed:
                if d <= a or c >= b:
                    continue
                if c > a:
                    new.append((a, c))
                a = max(a, d)
                if a >= b:
                    break
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


class StrandsSlidingReplay(_Replay):
    """strands-sliding-window: the agent's history as the agent mutated it, carried from call to
    call, as the plan replays it (the policy's own `_Manager`: `take` each Strands message, which
    makes the model call before an assistant message, with its proactive compression, per_turn
    count and overflow recoveries, and runs apply_management after a final reply). What one call
    trimmed or cut stays so. A step is the request's own call, made on a copy of that history
    (and the run of tool messages it may end inside) only when it would change something.

    The trim events follow `_changes`: a turn's trimmed messages are those the history has lost
    or had images replaced in (`permanent`, which only grows) and those the step's own call does
    (`own`), so the newly trimmed ones are the permanent additions since the step before and the
    step's own, less what the step before trimmed.

    Sessions with recorded summaries, replay_history off (the file as it stands), and pair
    safety, are replayed by the reference step."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        p: SlidingWindowParams = params
        self.usable = not pair_safe and not session.summaries and p.replay_history
        if not self.usable:
            return
        self.mgr = _Manager(session, p, full)
        self.pending, self.pending_owners = self.mgr.messages, self.mgr.owners
        self.mgr.history([], [])
        # The session message that completes each Strands message (the last of a run of tool messages).
        self.completes = {sm.members[-1]: k for k, sm in enumerate(self.pending)}
        self.count = 0  # Strands messages started so far (the last may be a run of tool messages still growing)
        self.previous_role = ""
        self.system_messages: list[Any] = []
        self.system_tokens = self._system_tokens()
        self.tools_tokens = request_overhead(session, full, [])[2]
        self.mgr.fixed = self.system_tokens + self.tools_tokens
        self.mgr.limit = self.limit = context_window_limit(session, p.context_window_limit)[0]
        self.read = 0  # journal entries read
        self.dropped: set[int] = set()  # removed from the history
        self.cut: dict[int, Decision] = {}  # cut in the history (a message is cut once)
        self.cut_alive = 0  # ... and not removed since
        self.category_removed: dict[str, int] = {}
        self.removed_tokens = 0
        self.permanent: set[int] = set()  # removed, or had images replaced: only grows
        self.fresh: list[int] = []  # added to `permanent` since the step before
        self.trimmed_before = False  # whether the turn before trimmed (its plan's extra "trimmed")
        self.own_before: set[int] = set()  # what the step before's own call trimmed

    def _system_tokens(self) -> int:
        prompt = base_system_prompt(self.session, self.system_messages)
        return self.full.text(prompt) if prompt else 0

    def _read_journal(self) -> None:
        """Take in what the history lost or had cut since the last look."""
        journal, messages = self.mgr.journal, self.session.messages
        for index, decision in journal[self.read:]:
            if decision is Decision.DROPPED:
                self.dropped.add(index)
                c = messages[index].category.upper()
                self.category_removed[c] = self.category_removed.get(c, 0) + 1
                self.removed_tokens += self.full.message_tokens[index]
                if index in self.cut:
                    self.cut_alive -= 1
            else:
                self.cut[index] = decision
                self.cut_alive += 1
            if index not in self.permanent and (decision is Decision.DROPPED or decision is Decision.REPLACED):
                self.permanent.add(index)
                self.fresh.append(index)
        self.read = len(journal)

    def absorb(self, i: int) -> None:
        """Take message `i` in; a Strands message the agent appends when complete (the model call
        before an assistant message, apply_management after a final reply: `_Manager.take`)."""
        if not self.usable:
            return
        m = self.session.messages[i]
        if m.role == "system":
            self.system_messages.append(m)
            self.system_tokens = self._system_tokens()
            self.mgr.fixed = self.system_tokens + self.tools_tokens
        else:
            if not (m.role == "tool" and self.previous_role == "tool"):  # strands_common.conversation's runs
                self.count += 1
            self.previous_role = m.role
        k = self.completes.get(i)
        if k is not None:
            self.mgr.take(self.pending[k], self.pending_owners[k])
            self._read_journal()

    def step(self, i: int) -> Turn:
        if not self.usable:
            return super().step(i)
        self.absorb(i)
        tokens = self.full.message_tokens
        mgr, p = self.mgr, self.params
        partial: tuple[StrandsMessage, list[int]] | None = None
        if self._growing(i):
            k = self.count - 1
            sm, owners = self.pending[k], self.pending_owners[k]
            members = tuple(x for x in sm.members if x <= i)  # one block per tool message
            partial = (StrandsMessage(sm.role, sm.content[: len(members)], members, tokens=sum(tokens[x] for x in members)),
                       owners[: len(members)])
        held = mgr.held + (partial[0].tokens if partial else 0)
        used = mgr.fixed + held
        threshold = p.proactive_compression
        acts = (used > self.limit or (threshold is not None and used / self.limit >= threshold)
                or (p.per_turn and (mgr.calls + 1) % p.per_turn == 0 and len(mgr.messages) + (partial is not None) > p.window_size))
        own_dropped: list[int] = []
        own_cut: dict[int, Decision] = {}
        if acts:  # the step's own call, on a copy of the history
            work = copy.copy(mgr)
            work.messages, work.owners = list(mgr.messages), list(mgr.owners)
            work.removed, work.cut, work.sent_tokens, work.journal = {}, {}, {}, []
            if partial:
                work.messages.append(partial[0])
                work.owners.append(partial[1])
                work.held += partial[0].tokens
            work.call("")
            used = work.fixed + work.held
            for index, decision in work.journal:
                if decision is Decision.DROPPED:
                    own_dropped.append(index)
                else:
                    own_cut[index] = decision
        own_set = set(own_dropped)
        cut_count = self.cut_alive - sum(1 for k in own_dropped if k in self.cut) + sum(1 for k in own_cut if k not in own_set)
        dropped = len(self.dropped) + len(own_dropped)
        events: list[Event] = []
        trimming = dropped > 0
        own = own_set | {k for k, d in own_cut.items() if d is Decision.REPLACED and k not in own_set}
        if trimming:
            if not self.trimmed_before:
                new = self.permanent | own
            else:
                fresh = set(self.fresh)
                was = self.own_before
                new = {k for k in fresh if k not in was} | {k for k in own if k not in was and (k not in self.permanent or k in fresh)}
            self._trim_events(i, sorted(new), own_set, own_cut, events)
        self.fresh = []
        self.trimmed_before, self.own_before = trimming, own if trimming else set()
        fits = used <= self.limit
        if not fits and self.before.fits:
            allocation = split_window(self.limit, self.system_tokens, self.tools_tokens)
            usage = {"system": self.system_tokens, "tool_definitions": self.tools_tokens, "messages": used - mgr.fixed}
            self.before = _changes(i, light_plan(self.policy, allocation, usage, self.limit, used, fits), self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        not_sent = self.removed_tokens + sum(tokens[k] for k in own_dropped)
        return Turn(i, used, self.limit, i + 1 - dropped - cut_count, dropped, 0, cut_count, fits, 0, tuple(events), not_sent)

    def _growing(self, i: int) -> bool:
        """Whether the step ends inside a run of tool messages the agent has not appended yet."""
        return self.count > 0 and self.pending[self.count - 1].members[-1] > i

    def _trim_events(self, i: int, new: list[int], own_dropped: set[int], own_cut: dict[int, Decision], events: list[Event]) -> None:
        """`_changes`' trim events for the newly trimmed messages `new` (sorted)."""
        by_category: dict[str, list[int]] = {}
        messages, tokens = self.session.messages, self.full.message_tokens
        for k in new:
            by_category.setdefault(messages[k].category.upper(), []).append(k)
        own_count: dict[str, int] = {}
        for k in own_dropped:
            c = messages[k].category.upper()
            own_count[c] = own_count.get(c, 0) + 1
        for c, indices in by_category.items():
            removed = [k for k in indices if k in self.dropped or k in own_dropped]
            images = [k for k in indices if k not in self.dropped and k not in own_dropped]
            what = []
            if removed:
                in_all = self.category_removed.get(c, 0) + own_count.get(c, 0)
                what.append(f"{len(removed)} more message(s) removed ({_indices(removed)}, {sum(tokens[k] for k in removed):,} tokens), "
                            f"{in_all} removed in all")
            if images:
                what.append(f"images of {_indices(images)} replaced by the placeholder")
            events.append(Event(i, "trim", f"{c}: " + "; ".join(what)))


_AGGREGATE = -(10**9)  # the position of the entry that stands for the kept entries before the cut message


REPLAYERS: dict[str, type[_Replay]] = {
    "autogen-buffered": AutoGenBufferedReplay,
    "autogen-head-and-tail": AutoGenHeadAndTailReplay,
    "autogen-token-limited": AutoGenTokenLimitedReplay,
    "llamaindex-chat-memory-buffer": LlamaIndexReplay,
    "langchain-trim": LangChainTrimReplay,
    "strands-sliding-window": StrandsSlidingReplay,
}
