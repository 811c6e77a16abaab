"""LangChain's ContextEditingMiddleware (`langchain-context-editing`) replayed turn to turn: which tool
messages can be cleared and what clearing each changes are fixed as they arrive, so a turn reads
prefix sums.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import (
    Event,
    Turn,
    _changes,
    _Cuts,
    _indices,
    light_plan,
)
from ...session import Message, Session
from ...summarizers import Summarizer
from ...wording import noun
from ..replay_common import _EditsReplay
from ..replay_recorded import _InForceTotal, _RecordedInForce
from .context_editing import ClearToolUsesParams, already_cleared
from .counting import (
    cached_view,
    count_view,
    lc_type,
    summary_view,
)


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
                what.append(f"{len(removed):,} more {noun(len(removed), 'message')} removed ({_indices(removed)}, {sum(self.tokens[k] for k in removed):,} tokens), "
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
