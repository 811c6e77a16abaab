"""The incremental replayers of Anthropic's context editing: clear_thinking (`anthropic-clear-thinking`)
and clear_tool_uses (`anthropic-clear-tool-uses`), carried from turn to turn.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import Turn, _Replay
from ...session import Message, Session, ThinkingPart, ToolResultPart
from ...summarizers import Summarizer
from ..replay_common import _EditsReplay
from ..replay_recorded import _RecordedInForce, _RecordedShapes
from . import context_editing as ae


class _AnthropicReplay(_EditsReplay):
    """Anthropic's context editing sends the whole history with the system prompt and the tool
    definitions: the history's tokens less what the edit saves. Pair safety drops what
    `_unpaired` says, each message with what it sends at this turn (`_sent_as`: edited or not).

    A client that compacted sends its latest summary (the last in force in the file's order) in
    place of the messages it covers (`context_editing._start`): the history is the non-system
    messages after that summary's cover, and the edit sees only those (`_carry_recorded`)."""

    pair_safe_incremental = True
    recorded_summaries = "shaped"
    recorded_system_gaps = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self._carry_pair_safety()
        self._carry_recorded()
        tools = ae.tools_json(session)
        self.tools_tokens = full.text(tools) if tools else 0
        self.summary_size: dict[int, int] = {}

    @property
    def system_tokens(self) -> int:
        return self.system_prompt_tokens + self.tools_tokens

    def _grow(self, i: int) -> Message:
        m = self.session.messages[i]
        self._pair(i)
        if m.role == "system":
            self._system(m)
        return m

    def _take(self, i: int) -> None:
        self._grow(i)
        self._enter(i)

    def _enter(self, i: int) -> None:
        """Take message `i` into the edit's state (it is not covered)."""

    def _in_force(self, recorded: _RecordedInForce) -> tuple[int, int]:
        if not recorded.in_force:
            return 0, 0
        k = recorded.in_force[-1]
        size = self.summary_size.get(k)
        if size is None:
            size = self.summary_size[k] = self.full.text(self.session.summaries[k].text)
        return recorded.span[k], size

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str]]:
        assert self.recorded is not None
        summarized = self.history_counts[min(m, self.covered)]  # the latest summary's cover, system messages aside
        if k == self.recorded.in_force[-1]:
            return summarized, (Decision.KEPT, "kept: the client's latest summary, sent as a user message")
        return summarized, (Decision.DROPPED, "dropped: the latest summary takes its place")

    def _turn(self, i: int, saved: int, edited: int, window: int) -> Turn:
        """`saved`: the tokens the edit takes off the history; `edited`: the messages it truncates or replaces."""
        system, summary, covered = self.system_tokens, self.summary_tokens, self.covered
        summarized = self.history_counts[covered]
        history = self.history_sums[-1] - self.history_sums[covered] - saved
        kept = i + 1 - edited - summarized
        unpaired = self._unpaired()
        not_sent = self.history_sums[covered]
        for x in unpaired:  # `checks.drop_messages`: what each sent, its tokens no longer sent
            sent, was_edited = self._sent_as(x)
            history -= sent
            not_sent += self.tokens[x]
            if was_edited:
                edited -= 1
            else:
                kept -= 1
        used = system + summary + history
        fits = used <= window
        events = self._recorded_events(i)
        self._overflow(i, fits, events, {"system": system, "summary": summary, "history": window - system - summary},
                       {"system": system, "summary": summary, "history": history}, window, used)
        return Turn(i, used, window, kept, len(unpaired), summarized, edited, fits, 0, tuple(events), not_sent)

    def _sent_as(self, x: int) -> tuple[int, bool]:
        """What message `x` sends at this turn, and whether the edit changed it."""
        raise NotImplementedError


class ClearThinkingReplay(_AnthropicReplay):
    """clear_thinking_20251015: the assistant turns (a new one at every user message) so far; the
    thinking of all but the newest `keep` is cleared, so each turn that becomes old adds its saving
    once (a turn is complete before it can be old: keep is at least 1)."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        settings: ae.ClearThinking20251015 = params
        self.keep_all = settings.keep.strip().lower() == "all"
        self.keep = 0 if self.keep_all else ae.parse_amount("keep", settings.keep, ("thinking_turns",))[1]
        self.closed: list[list[int]] = []  # the assistant turns before the current one
        self.current: list[int] = []
        self.cleared = 0  # turns whose thinking is cleared (their saving is in `saved`)
        self.saved = 0
        self.truncated = 0
        self.saving: dict[int, int] = {}  # a message whose thinking is cleared -> what that saves

    def _restart(self, i: int) -> None:
        self.closed, self.current, self.cleared, self.saved, self.truncated, self.saving = [], [], 0, 0, 0, {}
        for k in range(self.covered, i + 1):
            self._enter(k)

    def _enter(self, i: int) -> None:
        m = self.session.messages[i]
        if m.role == "user":
            if self.current:
                self.closed.append(self.current)
            self.current = []
        elif m.role == "assistant":
            self.current.append(i)

    def _fast(self, i: int) -> Turn:
        if not self.keep_all:
            turns = len(self.closed) + (1 if self.current else 0)
            while self.cleared < turns - self.keep:
                for k in self.closed[self.cleared]:
                    thinking = [p for p in self.session.messages[k].parts if isinstance(p, ThinkingPart)]
                    if thinking:
                        cut = sum(self.full.text(p.text) for p in thinking)
                        saving = self.saving[k] = self.tokens[k] - max(0, self.tokens[k] - cut)
                        self.saved += saving
                        self.truncated += 1
                self.cleared += 1
        return self._turn(i, self.saved, self.truncated, self.params.context_window)

    def _sent_as(self, x: int) -> tuple[int, bool]:
        saving = self.saving.get(x)
        return (self.tokens[x], False) if saving is None else (self.tokens[x] - saving, True)


class _Fenwick:
    """Prefix sums over a list whose entries change (a tool use's result arrives after its call)."""

    def __init__(self, size: int) -> None:
        self.tree = [0] * (size + 1)

    def add(self, k: int, value: int) -> None:
        k += 1
        tree = self.tree
        while k < len(tree):
            tree[k] += value
            k += k & -k

    def prefix(self, k: int) -> int:
        """The sum of the first k entries."""
        total, tree = 0, self.tree
        while k > 0:
            total += tree[k]
            k -= k & -k
        return total


class ClearToolUsesReplay(_AnthropicReplay):
    """clear_tool_uses_20250919: the tool uses so far (those of excluded tools aside) in order; the
    trigger clears all but the newest `keep`, so a turn reads prefix sums over the uses: what a
    cleared result saves (kept in a Fenwick tree, as a call's result may arrive turns later) and
    what a cleared input saves (fixed when the call arrives).

    A session where a tool call id is on more than one call (or on none) replays from scratch.

    The uses whose call the recorded summaries in force cover are out of the request: the uses
    seen are those from the first one after the cover on (`u0`), a suffix of them all, so the same
    sums serve, read from there. A tool result before its call (whose call may be seen while it
    is covered) hands the turns from the first summary covering a message of the file on to the
    reference step."""

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        ids = [c.id for m in session.messages if m.role == "assistant" for c in m.tool_calls]
        return None if len(set(ids)) == len(ids) and all(ids) else "a tool call id on more than one call, or on none"

    @classmethod
    def later_reason(cls, session: Session, params: Any) -> str | None:
        if session.summaries and _RecordedShapes.of(session).first_covering < len(session.messages) and _result_before_call(session):
            return "the turns from the first recorded summary of the file's messages on: a tool result before its call"
        return None

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        p: ae.ClearToolUses20250919 = params
        self.trigger_kind, self.trigger_value = ae.parse_amount("trigger", p.trigger, ("input_tokens", "tool_uses"))
        self.keep = ae.parse_amount("keep", p.keep, ("tool_uses",))[1]
        self.at_least = ae.parse_amount("clear_at_least", p.clear_at_least, ("input_tokens",))[1] if p.clear_at_least and p.clear_at_least.strip() else 0
        self.placeholder_tokens = full.text(p.placeholder)
        self.excluded = p.excluded
        ids = [c.id for m in session.messages if m.role == "assistant" for c in m.tool_calls]
        self.usable = self.usable and len(set(ids)) == len(ids) and all(ids)
        if self.recorded is not None and _result_before_call(session):
            self.first_summary = min(self.first_summary, self.recorded.shapes.first_covering)
        self.all_uses = 0
        self.all_use_at: list[int] = []  # per tool use: its call's session index
        self.use_at: list[int] = []  # per eligible use: its call's session index
        self.u0 = self.a0 = 0  # the first use (eligible, and of all) whose call is not covered
        self.use_of: dict[str, int] = {}  # call id -> position among the eligible uses
        self.result_of: dict[str, int] = {}  # call id -> the latest tool message answering it
        self.result_at: list[int] = []  # per eligible use: its result's session index, or -1
        size = len(ids)
        self.present = _Fenwick(size)  # 1 where the use has a result
        self.result_delta = _Fenwick(size)  # placeholder - the result's tokens (the history's change)
        self.result_freed = _Fenwick(size)  # max(0, result - placeholder) (what clear_at_least reads)
        # Per eligible use, prefix sums of what clearing its input does: uses with an input cleared,
        # the tokens freed, the history's saving and the call messages replaced.
        self.inputs = [0]
        self.input_freed = [0]
        self.input_saved = [0]
        self.input_messages = [0]
        self.last_usage = -1  # the last assistant message with a reported window
        self.uses_of: dict[int, tuple[int, int]] = {}  # an assistant message -> its eligible uses' positions [a, b)
        self.c = 0  # this turn's uses cleared (0: none, or the edit not applied)

    def _set_result(self, position: int, r: int) -> None:
        old = self.result_at[position]
        if old >= 0:
            self.present.add(position, -1)
            self.result_delta.add(position, -(self.placeholder_tokens - self.tokens[old]))
            self.result_freed.add(position, -max(0, self.tokens[old] - self.placeholder_tokens))
        self.result_at[position] = r
        self.present.add(position, 1)
        self.result_delta.add(position, self.placeholder_tokens - self.tokens[r])
        self.result_freed.add(position, max(0, self.tokens[r] - self.placeholder_tokens))

    def _restart(self, i: int) -> None:
        self.u0, self.a0 = bisect_left(self.use_at, self.covered), bisect_left(self.all_use_at, self.covered)

    def _enter(self, i: int) -> None:
        m = self.session.messages[i]
        p: ae.ClearToolUses20250919 = self.params
        if m.role == "tool":
            call_id = m.tool_call_id or next((part.tool_call_id for part in m.parts if isinstance(part, ToolResultPart)), "")
            self.result_of[call_id] = i
            position = self.use_of.get(call_id)
            if position is not None:
                self._set_result(position, i)
        elif m.role == "assistant":
            if m.usage is not None and m.usage.window_fill:
                self.last_usage = i
            cut = 0
            first = True
            start = len(self.result_at)
            for call in m.tool_calls:
                self.all_uses += 1
                self.all_use_at.append(i)
                if call.name in self.excluded:
                    continue
                position = self.use_of[call.id] = len(self.result_at)
                self.result_at.append(-1)
                self.use_at.append(i)
                r = self.result_of.get(call.id)
                if r is not None:
                    self._set_result(position, r)
                cleared = p.clears_input(call.name)
                freed = saved = new_message = 0
                if cleared:
                    freed = ae.part_tokens(call, self.full.text)
                    before = self.tokens[i] - max(0, self.tokens[i] - cut)
                    cut += self.full.text(call.arguments or "{}") - self.full.text("{}")
                    saved = self.tokens[i] - max(0, self.tokens[i] - cut) - before
                    new_message, first = (1 if first else 0), False
                self.inputs.append(self.inputs[-1] + cleared)
                self.input_freed.append(self.input_freed[-1] + freed)
                self.input_saved.append(self.input_saved[-1] + saved)
                self.input_messages.append(self.input_messages[-1] + new_message)
            if len(self.result_at) > start:
                self.uses_of[i] = (start, len(self.result_at))

    def _fast(self, i: int) -> Turn:
        p: ae.ClearToolUses20250919 = self.params
        if self.trigger_kind == "input_tokens":
            if self.last_usage >= 0:
                u = self.session.messages[self.last_usage].usage
                assert u is not None
                measured = u.window_fill + u.output_tokens + self.all_sums[-1] - self.all_sums[self.last_usage + 1]
            else:
                measured = self.system_tokens + self.all_sums[-1]
        else:
            measured = self.all_uses - self.a0
        u0 = self.u0
        eligible = len(self.result_at) - u0
        e = u0 + (max(0, eligible - self.keep) if measured > self.trigger_value else 0)  # the uses [u0, e) are cleared
        results = self.present.prefix(e) - self.present.prefix(u0)
        saved = edited = 0
        self.c = u0
        if results or self.inputs[e] > self.inputs[u0]:
            freed = self.result_freed.prefix(e) - self.result_freed.prefix(u0) + self.input_freed[e] - self.input_freed[u0]
            if freed >= self.at_least:
                saved = self.result_delta.prefix(u0) - self.result_delta.prefix(e) + self.input_saved[e] - self.input_saved[u0]
                edited = results + self.input_messages[e] - self.input_messages[u0]
                self.c = e
        return self._turn(i, saved, edited, p.context_window)

    def _sent_as(self, x: int) -> tuple[int, bool]:
        m = self.session.messages[x]
        c = self.c
        if m.role == "tool":  # cleared: the latest result of one of the uses [u0, c)
            call_id = m.tool_call_id or next((part.tool_call_id for part in m.parts if isinstance(part, ToolResultPart)), "")
            position = self.use_of.get(call_id)
            if position is not None and self.u0 <= position < c and self.result_at[position] == x:
                return self.placeholder_tokens, True
        elif x in self.uses_of:  # its calls among the first c uses with their input cleared
            a, b = self.uses_of[x]
            e = min(b, c)
            if e > a and self.inputs[e] > self.inputs[a]:
                return self.tokens[x] - (self.input_saved[e] - self.input_saved[a]), True
        return self.tokens[x], False


def _result_before_call(session: Session) -> bool:
    """Whether a tool message answers a call made on a later message."""
    owner = {c.id: m.index for m in session.messages if m.role == "assistant" for c in m.tool_calls}
    for m in session.messages:
        if m.role == "tool":
            call_id = m.tool_call_id or next((part.tool_call_id for part in m.parts if isinstance(part, ToolResultPart)), "")
            if owner.get(call_id, -1) > m.index:
                return True
    return False


REPLAYERS: dict[str, type[_Replay]] = {ae.POLICY_THINKING: ClearThinkingReplay, ae.POLICY_TOOLS: ClearToolUsesReplay}
