"""AutoGen's incremental replayers: its three model contexts, each carrying the LLMMessages so far and
the prefix sums of their counts from turn to turn.
"""

from __future__ import annotations

from typing import Any

from ...counting import TokenCounts
from ...replay_contract import Event, Turn, _changes, _Cuts, _Replay, light_plan
from ...session import Session
from ...summarizers import Summarizer
from ..replay_common import _PairSafety
from .head_and_tail import placeholder_text
from .messages import (
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    divide,
    model_limit,
    placeholder_tokens,
    tool_schema_tokens,
)


class _AutoGenReplay(_Replay):
    """What AutoGen's three model contexts share: the LLMMessages so far (consecutive tool messages
    are one FunctionExecutionResultMessage, so the last unit may grow), their kinds and the prefix
    sums of their counts (3 per LLMMessage plus its messages') and of their message counts, and the
    agent's SystemMessages, which are always sent.

    Pair safety is carried too (`_PairSafety`): the units sent are one or two runs of the history
    (the tail; the head and the tail; what the middle pops leave), so a turn drops what
    `apply_pair_safety` would from the problems and the pairs crossing the runs' boundaries, and
    sends each dropped message's count less (with the 3 of its LLMMessage when it is the unit's
    first, as the plan counts it). Sessions with recorded summaries (a summary stands in the model
    context where the messages it covers were) are replayed by the reference step, and so is
    pair safety where a tool call id is on more than one call."""

    pair_safe_incremental = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.pairs = _PairSafety.of(session) if pair_safe and not session.summaries else None
        self.usable = (not pair_safe or self.pairs is not None) and not session.summaries
        self.history_index: list[int] = []  # history position (non-system messages) -> session index
        self.first_in_unit: list[bool] = []  # per history position: the first message of its LLMMessage
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
        if self.pairs is not None:
            self.pairs.grow(i)
        m = self.session.messages[i]
        t = self.tokens[i]
        self.seen += t
        if m.role == "system":
            self.system_count += 1
            self.system_raw += t
            self.system_tokens += TOKENS_PER_MESSAGE + t
            return
        self.history_index.append(i)
        joins = m.role == "tool" and bool(self.kinds) and self.kinds[-1] == "results"
        self.first_in_unit.append(not joins)
        if joins:
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
        if self.pairs is not None and runs:  # the sent history positions: one run, or two with the last ending at h
            positions = [(C[a], C[b]) for a, b in runs]
            h = C[len(self.kinds)]
            (j, e), (t, end) = positions[0], positions[-1] if len(positions) == 2 else (h, h)
            assert end == h and len(positions) <= 2
            dropped = self.pairs.drops(j, e, t, h)
            for k in dropped:
                index = self.history_index[k]
                message_tokens -= self.tokens[index] + TOKENS_PER_MESSAGE * self.first_in_unit[k]
                sent_raw -= self.tokens[index]
            sent_members -= len(dropped)  # among the dropped below (i + 1 - kept)
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


REPLAYERS: dict[str, type[_Replay]] = {
    "autogen-buffered": AutoGenBufferedReplay,
    "autogen-head-and-tail": AutoGenHeadAndTailReplay,
    "autogen-token-limited": AutoGenTokenLimitedReplay,
}
