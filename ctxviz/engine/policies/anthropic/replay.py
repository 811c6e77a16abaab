"""The incremental replayers of Anthropic's context editing: clear_thinking (`anthropic-clear-thinking`)
and clear_tool_uses (`anthropic-clear-tool-uses`), carried from turn to turn.
"""

from __future__ import annotations

from typing import Any

from ...counting import TokenCounts
from ...replay_contract import Event, Turn, _Replay
from ...session import Message, Session, ThinkingPart, ToolResultPart
from ...summarizers import Summarizer
from ..replay_common import _EditsReplay
from . import context_editing as ae


class _AnthropicReplay(_EditsReplay):
    """Anthropic's context editing sends the whole history with the system prompt and the tool
    definitions: the history's tokens less what the edit saves. Pair safety drops what
    `_unpaired` says, each message with what it sends at this turn (`_sent_as`: edited or not)."""

    pair_safe_incremental = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self._carry_pair_safety()
        tools = ae.tools_json(session)
        self.tools_tokens = full.text(tools) if tools else 0
        self.history_sum = 0  # the non-system messages' tokens
        self.all_sum = 0
        self.sums = [0]  # sums[k]: the tokens of messages 0..k-1

    @property
    def system_tokens(self) -> int:
        return self.system_prompt_tokens + self.tools_tokens

    def _grow(self, i: int) -> Message:
        m = self.session.messages[i]
        self._pair(i)
        self.all_sum += self.tokens[i]
        self.sums.append(self.all_sum)
        if m.role == "system":
            self._system(m)
        else:
            self.history_sum += self.tokens[i]
        return m

    def _turn(self, i: int, saved: int, edited: int, window: int) -> Turn:
        """`saved`: the tokens the edit takes off the history; `edited`: the messages it truncates or replaces."""
        system = self.system_tokens
        history = self.history_sum - saved
        kept = i + 1 - edited
        unpaired = self._unpaired()
        not_sent = 0
        for x in unpaired:  # `checks.drop_messages`: what each sent, its tokens no longer sent
            sent, was_edited = self._sent_as(x)
            history -= sent
            not_sent += self.tokens[x]
            if was_edited:
                edited -= 1
            else:
                kept -= 1
        used = system + history
        fits = used <= window
        events: list[Event] = []
        self._overflow(i, fits, events, {"system": system, "summary": 0, "history": window - system},
                       {"system": system, "summary": 0, "history": history}, window, used)
        return Turn(i, used, window, kept, len(unpaired), 0, edited, fits, 0, tuple(events), not_sent)

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

    def _take(self, i: int) -> None:
        m = self._grow(i)
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

    A session where a tool call id is on more than one call (or on none) replays from scratch."""

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        ids = [c.id for m in session.messages if m.role == "assistant" for c in m.tool_calls]
        return None if len(set(ids)) == len(ids) and all(ids) else "a tool call id on more than one call, or on none"

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
        self.all_uses = 0
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

    def _take(self, i: int) -> None:
        m = self._grow(i)
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
                if call.name in self.excluded:
                    continue
                position = self.use_of[call.id] = len(self.result_at)
                self.result_at.append(-1)
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
                measured = u.window_fill + u.output_tokens + self.all_sum - self.sums[self.last_usage + 1]
            else:
                measured = self.system_tokens + self.all_sum
        else:
            measured = self.all_uses
        eligible = len(self.result_at)
        c = max(0, eligible - self.keep) if measured > self.trigger_value else 0
        results = self.present.prefix(c)
        saved = edited = 0
        self.c = 0
        if results or self.inputs[c]:
            freed = self.result_freed.prefix(c) + self.input_freed[c]
            if freed >= self.at_least:
                saved = -self.result_delta.prefix(c) + self.input_saved[c]
                edited = results + self.input_messages[c]
                self.c = c
        return self._turn(i, saved, edited, p.context_window)

    def _sent_as(self, x: int) -> tuple[int, bool]:
        m = self.session.messages[x]
        c = self.c
        if m.role == "tool":  # cleared: the latest result of one of the first c uses
            call_id = m.tool_call_id or next((part.tool_call_id for part in m.parts if isinstance(part, ToolResultPart)), "")
            position = self.use_of.get(call_id)
            if position is not None and position < c and self.result_at[position] == x:
                return self.placeholder_tokens, True
        elif x in self.uses_of:  # its calls among the first c uses with their input cleared
            a, b = self.uses_of[x]
            e = min(b, c)
            if e > a and self.inputs[e] > self.inputs[a]:
                return self.tokens[x] - (self.input_saved[e] - self.input_saved[a]), True
        return self.tokens[x], False


REPLAYERS: dict[str, type[_Replay]] = {ae.POLICY_THINKING: ClearThinkingReplay, ae.POLICY_TOOLS: ClearToolUsesReplay}
