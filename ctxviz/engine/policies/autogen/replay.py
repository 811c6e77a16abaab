"""AutoGen's incremental replayers: its three model contexts, each carrying the LLMMessages so far and
the prefix sums of their counts from turn to turn.
"""

from __future__ import annotations

from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import Event, Turn, _changes, _Cuts, _Replay, light_plan
from ...session import Session
from ...summarizers import Summarizer
from ..pins_carried import carried_pins
from ..replay_pairs import _PairSafety
from ..replay_recorded import _InForceTotal, _RecordedInForce, _RecordedShapes, recorded_events
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
    first, as the plan counts it). Pair safety where a tool call id is on more than one call is
    replayed by the reference step.

    A recorded summary stands in the model context where the messages it covers were, as a
    SystemMessage unit (`common.history_with_summaries`). Those in force cover a prefix of the file
    (`_RecordedShapes`; else the turns from the first covering a message of it on go to the
    reference step), so the units are the summaries' (`_summary_units`) and then the messages
    after the cover: when what is in force changes, the units are rebuilt from the cover on.

    Pins are carried (`pins_carried`, without pair safety): the units sent are one or two runs of
    the history, and a message pushed out sends its count less, with the 3 of its LLMMessage when
    it is the unit's first (`free_firsts`); a pinned message comes in at its count alone."""

    pair_safe_incremental = True
    pins_incremental = True
    recorded_summaries = "shaped"
    recorded_system_gaps = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.usable = not pair_safe or self.pairs is not None
        self.shapes = _RecordedShapes.of(session) if session.summaries else None
        self.recorded = _RecordedInForce(self.shapes) if self.shapes is not None else None
        self.first_covering = self.shapes.first_covering if self.shapes is not None and self.shapes.why_not_for(self) else len(session.messages)
        self.history_index: list[int] = []  # history position (non-system messages) -> session index
        self.history_before = [0]  # history_before[k]: the non-system messages among the first k
        self.tokens = full.message_tokens
        self.seen = 0  # the measured tokens of messages 0..i
        self.system_raw = 0  # ... of the system-role messages among them
        self.system_count = 0
        self.system_tokens = (TOKENS_PER_MESSAGE + full.text(session.system_prompt) + full.text("system")) if session.system_prompt else 0
        self.budget = model_limit(session)[0]
        # The recorded summaries in force: the messages [0, lo) their covers reach, the summaries'
        # units (in the context's order) and their counts.
        self.lo = 0
        self.summary_units: list[int] = []
        self.summary_size: dict[int, int] = {}
        shapes = self.shapes
        self.lo_total = _InForceTotal(lambda k: shapes.lo[k] if shapes is not None else 0, max)
        self._units_from(0)

    def _units_from(self, lo: int) -> None:
        """The units: the summaries' (`summary_units`), then none of the messages from `lo` on yet."""
        self.lo = lo
        self.base = self.history_before[min(lo, len(self.history_before) - 1)]  # the history positions before the first unit's
        self.kinds: list[str] = ["summary"] * len(self.summary_units)
        self.sums: list[int] = [0]  # sums[k]: the first k units' counts (3 each plus their messages'; a summary's SystemMessage)
        for k in self.summary_units:
            self.sums.append(self.sums[-1] + self._summary_size(k))
        self.raws: list[int] = [0] * (len(self.summary_units) + 1)  # raws[k]: the first k units' messages' measured tokens
        self.members: list[int] = [self.base] * (len(self.summary_units) + 1)  # members[k]: history positions before unit k's end
        self.first_in_unit: list[bool] = []  # per history position from `base`: the first message of its LLMMessage
        self.free_firsts = [0]  # with pins: free_firsts[k], how many of the first k positions from `base` are unpinned unit firsts

    def _summary_size(self, k: int) -> int:
        found = self.summary_size.get(k)
        if found is None:  # `messages.summary_tokens`
            found = self.summary_size[k] = TOKENS_PER_MESSAGE + self.full.text(self.session.summaries[k].text) + self.full.text("system")
        return found

    def _grow(self, i: int) -> None:
        if self.pairs is not None:
            self.pairs.grow(i)
        m = self.session.messages[i]
        t = self.tokens[i]
        self.seen += t
        if m.role == "system":
            self.history_before.append(self.history_before[-1])
            self.system_count += 1
            self.system_raw += t
            self.system_tokens += TOKENS_PER_MESSAGE + t
            return
        self.history_before.append(self.history_before[-1] + 1)
        self.history_index.append(i)
        if i >= self.lo:
            self._unit(i)

    def _unit(self, i: int) -> None:
        """Take history message `i` (not covered) into the units."""
        m = self.session.messages[i]
        t = self.tokens[i]
        joins = m.role == "tool" and bool(self.kinds) and self.kinds[-1] == "results"
        self.first_in_unit.append(not joins)
        if self.pins:
            self.free_firsts.append(self.free_firsts[-1] + (not joins and i not in self.pins))
        if joins:
            self.sums[-1] += t
            self.raws[-1] += t
            self.members[-1] += 1
            return
        self.kinds.append("results" if m.role == "tool" else ("function_calls" if m.tool_calls else "assistant") if m.role == "assistant" else "user")
        self.sums.append(self.sums[-1] + TOKENS_PER_MESSAGE + t)
        self.raws.append(self.raws[-1] + t)
        self.members.append(self.members[-1] + 1)

    def absorb(self, i: int) -> None:
        if self.usable:
            self._grow(i)

    def step(self, i: int) -> Turn:
        if not self.usable or self.recorded_until(i) >= self.first_covering:
            return super().step(i)
        self._grow(i)
        if self.recorded is not None:
            self._follow_recorded(i)
        return self._fast(i)

    def _follow_recorded(self, i: int) -> None:
        """The recorded summaries in force at step `i`: their units, and the units rebuilt after their cover when it changed."""
        recorded = self.recorded
        assert recorded is not None and self.shapes is not None
        if not recorded.update(i + 1, self.recorded_until(i)):
            return
        live = recorded.live
        span = recorded.span
        # `history_with_summaries`: each live summary owns the covered messages no later one does
        # (their spans fall in the file's order); one owning a history message stands at the
        # first of them, the others at the front in the file's order.
        ends = [span[k] for k in live]
        placed: list[int] = []
        front: list[int] = []
        for x, k in enumerate(live):
            after = next((e for e in ends[x + 1 :] if e), 0)  # the next live one with a span owns [0, after)
            if span[k] and self.history_before[span[k]] > self.history_before[after]:
                placed.append(k)
            else:
                front.append(k)
        units = front + placed[::-1]
        lo = self.lo_total.read(recorded)
        if units == self.summary_units and lo == self.lo and self.base == self.history_before[min(lo, i + 1)]:
            return  # (a cover reaching past the prefix moves the first unit's history position as messages come in)
        self.summary_units = units
        self._units_from(lo)
        for k in range(lo, i + 1):
            if self.session.messages[k].role != "system":
                self._unit(k)

    def _fast(self, i: int) -> Turn:
        raise NotImplementedError

    def _turn(self, i: int, runs: list[tuple[int, int]], placeholder: int = 0, tools: int = 0, budget: int | None = None) -> Turn:
        """The turn that sends the units of `runs` (each [a, b)) with the SystemMessages, a placeholder and tool schemas."""
        S, C, R = self.sums, self.members, self.raws
        message_tokens = sum(S[b] - S[a] for a, b in runs)
        sent_members = sum(C[b] - C[a] for a, b in runs)
        sent_raw = sum(R[b] - R[a] for a, b in runs)
        events = self._recorded_events(i, runs)
        if self.pairs is not None and runs:  # the sent history positions: one run, or two with the last ending at h
            positions = [(C[a], C[b]) for a, b in runs]
            h = C[len(self.kinds)]
            (j, e), (t, end) = positions[0], positions[-1] if len(positions) == 2 else (h, h)
            assert end == h and len(positions) <= 2
            dropped = self.pairs.drops(j, e, t, h)
            for k in dropped:
                index = self.history_index[k]
                message_tokens -= self.tokens[index] + TOKENS_PER_MESSAGE * self.first_in_unit[k - self.base]
                sent_raw -= self.tokens[index]
            sent_members -= len(dropped)  # among the dropped below (i + 1 - kept)
        budget = self.budget if budget is None else budget
        used = self.system_tokens + message_tokens + REPLY_PRIMING + placeholder + tools
        summarized = self.history_before[min(self.lo, i + 1)]
        pins = carried_pins(self)
        if pins is not None:
            base, firsts, free = self.base, self.free_firsts, pins.free_sums
            effect = pins.effect(C[len(self.kinds)], [(C[a], C[b]) for a, b in runs], summarized, used, budget,
                                 lambda x: free[x] + TOKENS_PER_MESSAGE * firsts[x - base])
            used += effect.sent_change
            message_tokens += effect.sent_change
            sent_members += effect.added - effect.pushed
            sent_raw += effect.added_tokens - effect.pushed_tokens
            summarized -= effect.added_summarized
        fits = used <= budget
        if not fits and self.before.fits:
            usage = {"system": self.system_tokens, "messages": message_tokens + REPLY_PRIMING, "placeholder": placeholder, "tools": tools}
            allocation = divide(budget, {"system": self.system_tokens, "placeholder": placeholder, "tools": tools})
            self.before = _changes(i, light_plan(self.policy, allocation, usage, budget, used, fits), self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        kept = self.system_count + sent_members
        return Turn(i, used, budget, kept, i + 1 - kept - summarized, summarized, 0, fits, 0, tuple(events), self.seen - self.system_raw - sent_raw)

    def _recorded_events(self, i: int, runs: list[tuple[int, int]]) -> list[Event]:
        """The reference's compaction events for the recorded summaries written since the step
        before: each covers the prefix's first m messages (its history ones summarised), and is
        sent where its unit is among the runs sent (`messages.build_plan`'s summary decisions)."""
        recorded = self.recorded
        if recorded is None:
            return []

        def decide(k: int, m: int) -> tuple[int, tuple[Decision, str]]:
            unit = self.summary_units.index(k) if k in self.summary_units else -1
            if unit >= 0 and any(a <= unit < b for a, b in runs):
                return self.history_before[m], (Decision.KEPT, "kept: a recorded summary, in the model context as a SystemMessage where the messages "
                                                               "it covers were")
            if k in recorded.superseded:
                return self.history_before[m], (Decision.DROPPED, "dropped: superseded by a later recorded summary, which covers every message of "
                                                                  "the file this one covers")
            return self.history_before[m], (Decision.DROPPED, "dropped: a recorded summary (a SystemMessage where the messages it covers were) "
                                                              "this context leaves out")

        return recorded_events(self, recorded, i, decide)


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
    every pop, so the number of pops is the first k whose count fits. It is searched from the
    turn before's, doubling the step until the count crosses the limit and bisecting there: a few
    counts per turn, not a bisection over all n units (any search of a falling count finds the
    same first k)."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.tools = tool_schema_tokens(session.tools, full.tokenizer) if params.tool_schema else 0
        self.limit = params.token_limit if params.token_limit is not None else self.budget
        self.pops = 0  # the turn before's number of pops

    @staticmethod
    def removed(n: int, k: int) -> tuple[int, int]:
        """The run [lo, hi) of units the first k pops of n units remove."""
        if k == 0:
            return n // 2, n // 2
        left = k // 2 if n % 2 == 0 else (k - 1) // 2
        return n // 2 - left, n // 2 + k - left

    def _fast(self, i: int) -> Turn:
        S, n = self.sums, len(self.kinds)
        need = S[n] + REPLY_PRIMING + self.tools - self.limit  # what the pops must take out for the count to fit
        half, odd = n // 2, n & 1

        def fits(k: int) -> bool:  # (`removed(n, k)` inlined: a cutting turn calls it a few times)
            lo = half - ((k - odd) >> 1) if k else half
            return S[lo + k] - S[lo] >= need

        lo_k = self.pops = _first_fitting(fits, n, self.pops)
        lo, hi = self.removed(n, lo_k)
        runs = [(0, lo), (hi, n)]
        first = 0 if lo > 0 else hi
        if first < n and self.kinds[first] == "results":  # AutoGen removes a leading tool result after trimming
            runs = [(1, lo), (hi, n)] if lo > 0 else [(hi + 1, n)]
        return self._turn(i, [(a, b) for a, b in runs if a < b], tools=self.tools, budget=self.limit)


def _first_fitting(fits: Any, n: int, guess: int) -> int:
    """The first k in [0, n) with `fits(k)` (n: none), where fits is False and then True as k
    grows: searched from `guess` (the turn before's), doubling the step away from it until fits
    changes, then bisecting the last step."""
    if n <= 0:
        return 0
    g = min(max(guess, 0), n - 1)
    step = 1
    if fits(g):  # the first is at g or before: lo (-1: before 0) does not fit, hi fits
        hi, lo = g, g - 1
        while lo >= 0 and fits(lo):
            hi, step = lo, step * 2
            lo = hi - step
        lo = max(lo, -1)
    else:  # after g: lo does not fit, hi fits (n: none does)
        lo, hi = g, g + 1
        while hi < n and not fits(hi):
            lo, step = hi, step * 2
            hi = lo + step
        hi = min(hi, n)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi


REPLAYERS: dict[str, type[_Replay]] = {
    "autogen-buffered": AutoGenBufferedReplay,
    "autogen-head-and-tail": AutoGenHeadAndTailReplay,
    "autogen-token-limited": AutoGenTokenLimitedReplay,
}
