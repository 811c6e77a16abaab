"""Incremental replayers for the trimming policies of issue 12 (see `replay.py` for the contract):
AutoGen's three model contexts, LlamaIndex's ChatMemoryBuffer and LangChain's trim_messages.

Each carries, from turn to turn, the prefix sums of the history's counts (`full.message_tokens`,
never recounted) and what the policy's decision depends on, and computes only what a `Turn` holds;
turns they do not cover go to the reference step (`_Replay.step`), so turns and events are exactly
the reference's (tests/test_replay_trims.py). None of these policies has a trigger of its own
(`Policy.compact` is None): no summary is ever generated here.

Strands' SlidingWindowConversationManager has no replayer yet: its plan replays apply_management
at every earlier management point (path-dependent trims, pins, tool-result truncation on overflow),
so it still replays from scratch.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from .counting import TokenCounts
from .plan import Plan, Totals
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
from .policies.llamaindex_chat_memory_buffer import joined_counter, text_tokens
from .session import Session
from .simulate import Event, Turn, _changes, _Cuts, _Replay
from .summarizers import Summarizer


def _overflow(i: int, policy: str, allocation: dict[str, int], usage: dict[str, int], budget: int, used: int, fits: bool,
              before: _Cuts, events: list[Event], fits_test: str = "total") -> _Cuts:
    """The overflow event `_changes` writes for a plan without trims, from its totals and parts;
    the cuts the next turn compares with."""
    if not fits and before.fits:
        plan = Plan(policy, {}, "", allocation, usage, "", (), (), Totals(budget, used, 0, 0, fits, fits_test=fits_test))
        return _changes(i, plan, before, events)
    return before if fits == before.fits else _Cuts(fits)


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
            self.before = _overflow(i, self.policy, allocation, usage, budget, used, fits, self.before, events)
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
        prompt = base_system_prompt(self.session, self.system_messages)
        return text_tokens(self.full, prompt) if prompt else 0

    def _total(self, j: int) -> int:
        """`len(tokenizer(" ".join(strs[j:h])))` for this turn's h (no run of joins crosses h)."""
        c, h = self.counter, self.h
        return c.window_total(j) - c.suffix[h] - c.fix_suffix[bisect_left(c.run_starts, h)]  # type: ignore[union-attr]

    def step(self, i: int) -> Turn:
        if not self.usable:
            return super().step(i)
        m = self.session.messages[i]
        if m.role == "system":
            self.system_messages.append(m)
            initial = self._initial()
            if initial != self.initial:
                self.initial, self.start = initial, 0
        else:
            self.h += 1
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
            self.before = _overflow(i, self.policy, allocation, {"initial": initial, "history": window}, limit, total, fits, self.before,
                                    events, "parts")
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        kept = len(self.system_messages) + h - start
        return Turn(i, total, limit, kept, i + 1 - kept, 0, 0, fits, 0, tuple(events), self.sums[start])


REPLAYERS: dict[str, type[_Replay]] = {
    "autogen-buffered": AutoGenBufferedReplay,
    "autogen-head-and-tail": AutoGenHeadAndTailReplay,
    "autogen-token-limited": AutoGenTokenLimitedReplay,
    "llamaindex-chat-memory-buffer": LlamaIndexReplay,
}
