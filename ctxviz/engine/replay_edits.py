"""Incremental replayers for the policies that edit the history in place or compact it whole
(issue 12): Anthropic's context editing (clear_tool_uses, clear_thinking), LangChain's
ContextEditingMiddleware, Claude Code's auto-compact, Codex's auto-compaction and Gemini CLI's
chat compression (until its first compression).

Each carries from turn to turn what its policy's plan reads of the prefix (prefix sums of the
session's counts, the tool uses or thinking turns met so far, the summary in force) and computes
only what a `Turn` holds, as the seed replayers in `replay.py` do; a turn it does not cover is
planned by the reference step (`_Replay.step`), so turns, events and summaries are exactly the
reference's (tests/test_replay_edits.py). Common to all of them: pair safety, and the turns from
the first one where a summary recorded in the file is in force, are planned by the reference.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from types import SimpleNamespace
from typing import Any

from .counting import TokenCounts
from .policies import anthropic_editing as ae
from .policies import claude_code as cc
from .policies import codex as cx
from .policies import gemini_cli as gc
from .policies.carried import _Snapshot
from .policies.gemini_history import message_content
from .policies.langchain.context_editing import ClearToolUsesParams, already_cleared
from .policies.langchain.counting import cached_view, count_view, lc_type
from .replay_contract import Event, Turn, _changes, _Cuts, _indices, _Replay, light_plan, untrimmed_cuts
from .session import Message, Session, ThinkingPart, ToolResultPart
from .summarizers import ExtractiveSummarizer, Summarizer


class _EditsReplay(_Replay):
    """What the replayers here share: the fall-back rule (pair safety for the whole replay; the
    turns from the first recorded summary in force on), the growing system prompt, and the
    overflow event."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.tokens = full.message_tokens
        self.first_summary = min(session.summary_start_turns, default=len(session.messages))
        self.usable = not pair_safe
        self.handed_over = False
        self.system_texts: list[str] = [session.system_prompt] if session.system_prompt else []
        self.system_prompt_tokens = full.text(self.system_texts[0]) if self.system_texts else 0

    def absorb(self, i: int) -> None:
        if self.usable and i < self.first_summary:
            self._take(i)

    def step(self, i: int) -> Turn:
        if not self.usable or self.recorded_until(i) >= self.first_summary:
            if not self.handed_over:
                self._hand_over()
                self.handed_over = True
            return super().step(i)
        self._take(i)
        return self._fast(i)

    def _hand_over(self) -> None:
        """Before the first turn the reference step plans: what it reads of the turn before."""

    def _take(self, i: int) -> None:
        """Take message `i` into the carried state (at a step or between two)."""

    def _fast(self, i: int) -> Turn:
        """The turn at step `i`, message `i` already taken in."""
        raise NotImplementedError

    def _system(self, m: Message) -> None:
        """A system message joins the system prompt (`common.base_system_prompt`)."""
        if m.text:
            self.system_texts.append(m.text)
            self.system_prompt_tokens = self.full.text("\n\n".join(self.system_texts))

    def _overflow(self, i: int, fits: bool, events: list[Event], allocation: dict[str, int], usage: dict[str, int], budget: int, used: int) -> None:
        """The overflow event of a turn without trims, and the cuts it leaves (`untrimmed_cuts`)."""
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: light_plan(self.policy, allocation, usage, budget, used, fits))


class _AnthropicReplay(_EditsReplay):
    """Anthropic's context editing sends the whole history with the system prompt and the tool
    definitions: the history's tokens less what the edit saves."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
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
        used = system + history
        fits = used <= window
        events: list[Event] = []
        self._overflow(i, fits, events, {"system": system, "summary": 0, "history": window - system},
                       {"system": system, "summary": 0, "history": history}, window, used)
        return Turn(i, used, window, i + 1 - edited, 0, 0, edited, fits, 0, tuple(events), 0)


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
                        self.saved += self.tokens[k] - max(0, self.tokens[k] - cut)
                        self.truncated += 1
                self.cleared += 1
        return self._turn(i, self.saved, self.truncated, self.params.context_window)


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
        if results or self.inputs[c]:
            freed = self.result_freed.prefix(c) + self.input_freed[c]
            if freed >= self.at_least:
                saved = -self.result_delta.prefix(c) + self.input_saved[c]
                edited = results + self.input_messages[c]
        return self._turn(i, saved, edited, p.context_window)


class LangChainContextEditingReplay(_EditsReplay):
    """LangChain's ClearToolUsesEdit: whether a tool message can be cleared (not cleared before,
    an AI message before it carrying its call, its tool not excluded) and what clearing it changes
    in the count (its placeholder, and with clear_tool_inputs its AI message's emptied arguments)
    are fixed when it arrives, and the request's count only grows, so once the trigger fires the
    cleared results are the first clearable ones among all but the newest `keep` tool messages (up
    to where clear_at_least is reached: a bisection over the running maximum of what is reclaimed)."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
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

    def _hand_over(self) -> None:
        if self.cut:
            self.before = _Cuts(self.before.fits, frozenset(self.clearable[: self.cut]))

    def _take(self, i: int) -> None:
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
        fired = self.total > p.trigger
        cut = 0
        if fired:
            available = bisect_left(self.ordinal, self.tool_messages - p.keep) if p.keep < self.tool_messages else 0
            cut = available
            if p.clear_at_least > 0 and available:
                reach = bisect_left(self.reclaimed_max, p.clear_at_least, 1, available + 1)
                cut = min(reach, available)
        used = self.total + self.delta[cut]
        events: list[Event] = []
        if cut > self.cut:
            by_category: dict[str, list[int]] = {}
            for k in self.clearable[self.cut : cut]:
                by_category.setdefault(self.session.messages[k].category.upper(), []).append(k)
            for category, indices in by_category.items():
                events.append(Event(i, "trim", f"{category}: images of {_indices(indices)} replaced by the placeholder"))
        fits = used <= p.trigger
        if not fits and self.before.fits:
            plan = light_plan(self.policy, {"summary": 0, "history": p.trigger}, {"summary": 0, "history": used}, p.trigger, used, fits)
            _changes(i, plan, _Cuts(), events)
        self.before = _Cuts(fits)
        self.cut = cut
        edited = cut + self.ai_messages[cut]
        return Turn(i, used, p.trigger, i + 1 - edited, 0, 0, edited, fits, 0, tuple(events), 0)

    def _tool(self, i: int, m: Message, p: ClearToolUsesParams) -> None:
        """ClearToolUsesEdit.apply's tests for one tool message, and its change to the count."""
        ai = self.last_ai
        if already_cleared(m.raw) or ai < 0:
            return
        tool_view = cached_view(m)
        ai_view = self.ai_view.get(ai) or cached_view(self.session.messages[ai])
        call = next((c for c in ai_view.tool_calls if c.get("id") == tool_view.tool_call_id), None)
        if call is None or (tool_view.name or call["name"]) in p.excluded:
            return
        tok = self.full.tokenizer
        change = count_view(tool_view._replace(content=p.placeholder), tok) - self.tokens[i]
        if p.clear_tool_inputs:
            calls = tuple({**c, "args": {}} if c.get("id") == tool_view.tool_call_id else c for c in ai_view.tool_calls)
            before = self.ai_tokens.get(ai, self.tokens[ai])
            self.ai_view[ai] = ai_view._replace(tool_calls=calls)
            self.ai_tokens[ai] = count_view(self.ai_view[ai], tok)
            change += self.ai_tokens[ai] - before
            self.ai_messages.append(self.ai_messages[-1] + (ai not in self.emptied))
            self.emptied.add(ai)
        else:
            self.ai_messages.append(self.ai_messages[-1])
        self.clearable.append(i)
        self.ordinal.append(self.tool_messages)
        self.delta.append(self.delta[-1] + change)
        self.reclaimed_max.append(max(self.reclaimed_max[-1], -self.delta[-1]))


class _CarriedSnapshot:
    """The extractive summarizer's `supyagent_snapshot` over a list of messages that only grows at
    the end (a compaction covers every message so far): what was gathered is carried over."""

    def __init__(self) -> None:
        self.snapshot = _Snapshot()

    def supyagent_snapshot(self, messages: list[Message]) -> str:
        return self.snapshot.text(messages)


class ClaudeCodeReplay(_EditsReplay):
    """Claude Code's auto-compact: the count is the last reported usage plus the tokens after it
    (prefix sums), or, with ctxviz's summary in force, the messages since it and the summary; the
    policy's own `compact` runs at the turns that reach the trigger, with the snapshot gathered so
    far carried over (its summary covers every message so far).

    A session with compactions recorded (a generated summary could then coincide with one, and
    the log's usage would count again), or with an id on more than one message, replays from
    scratch; so do the turns with a recorded summary in force before the first generated one."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        ids = [m.id for m in session.messages]
        self.usable = self.usable and not session.compactions and len(set(ids)) == len(ids)
        self.position = {m.id: m.index for m in session.messages}
        self.threshold = cc.threshold(session.model, params, session.context_window)
        t = self.threshold
        self.cap = max(0, min(t.trigger, t.window))
        self.extra = {"autocompact_threshold": t.trigger, "threshold_how": t.how}
        self.sums = [0]  # all messages' tokens
        self.history_sums = [0]  # sums[k + 1] - the system messages' tokens: per session index
        self.last_usage = -1  # the last message with usage (any role) that measured a window (`cc.plan`'s anchor)
        self.synced = 0  # len(generated) the summary state reflects
        self.covered = 0  # the messages the summary in force covers, and their tokens
        self.covered_tokens = 0
        self.covered_upto = -1  # the session index of its last cover
        self.summary_tokens = 0
        self.carried = _CarriedSnapshot() if type(summarizer) is ExtractiveSummarizer else summarizer

    def absorb(self, i: int) -> None:
        m = self.session.messages[i]
        self.sums.append(self.sums[-1] + self.tokens[i])
        self.history_sums.append(self.history_sums[-1] + (0 if m.role == "system" else self.tokens[i]))
        if m.usage is not None and m.usage.window_fill > 0:  # a report of 0 tokens measured nothing
            self.last_usage = i

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.usable or (not self.generated and self.recorded_until(i) >= self.first_summary):
            return _Replay.step(self, i)
        if self.synced != len(self.generated):
            summary = self.generated[-1]
            self.covered = len(summary.covers)
            self.covered_upto = self.position[summary.covers[-1]]
            self.covered_tokens = self.history_sums[self.covered_upto + 1]
            self.summary_tokens = self.full.text(summary.text)
            self.synced = len(self.generated)
        return self._fast(i)

    def _fast(self, i: int) -> Turn:
        t = self.threshold
        total = self.sums[i + 1]
        if self.generated:  # ctxviz's summary: the log's usage does not apply (cc._recorded is False without compactions)
            used = total - self.covered_tokens + self.summary_tokens
        elif self.last_usage >= 0:
            u = self.session.messages[self.last_usage].usage
            assert u is not None
            used = u.window_fill + u.output_tokens + total - self.sums[self.last_usage + 1]
        else:
            used = total
        fits = used <= t.window
        events: list[Event] = []
        active = len(self.generated)
        compacts = used >= t.trigger and self.session.messages[i].role in ("user", "tool")
        plan = light_plan(self.policy, {"context": self.cap, "autocompact_buffer": t.window - self.cap}, cc._split(used, self.cap),
                          t.window, used, fits, extra=self.extra) if compacts or not fits else None
        if compacts:
            prefix = SimpleNamespace(messages=self.session.messages[: i + 1])
            summary = cc.compact(prefix, plan, self.params, self.full, self.carried, i, events)  # type: ignore[arg-type]
            if summary is not None:
                self.generated.append(summary)
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: plan)  # type: ignore[arg-type,return-value]  (built when it does not fit)
        kept = i + 1 - self.covered if active else i + 1
        return Turn(i, used, t.window, kept, 0, i + 1 - kept, 0, fits, active, tuple(events), self.covered_tokens if active else 0)


class CodexReplay(_EditsReplay):
    """Codex's auto-compaction: the history (what is neither a leading developer message nor the
    initial context, decided as each message arrives; a developer message after the conversation
    began is a history item, sent in its place) is sent whole until the trigger fires; its running
    sums, the last reported usage and, after a compaction, the user messages it keeps and its
    summary give each turn's count. The turns that compact (the compaction request, its trimming
    and the new summary are built from the whole history anyway) are planned by the reference
    step; the next turns take its summary over.

    A session with an id on more than one message replays from scratch; so do the turns with a
    recorded summary in force before the first generated one."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        ids = [m.id for m in session.messages]
        self.usable = self.usable and len(set(ids)) == len(ids)
        self.position = {m.id: m.index for m in session.messages}
        self.window, self.limit = cx._limits(session, params)
        self.budget = self.window if self.window is not None else (session.context_window or cx.CONTEXT_WINDOW_272K)
        self.instructions = cx.approx_token_count(session.system_prompt) if session.system_prompt else 0
        self.system_count = 0  # the leading developer messages, sent with the instructions
        self.conversation = False  # a message of another role seen: later developer messages are history items
        self.real_user = False  # a real user message seen: no later message is initial context
        self.initial_count = self.initial_tokens = 0
        self.history: list[int] = []  # session indices
        self.history_sum = 0
        self.last_usage = -1  # the last assistant message with usage
        self.synced = 0
        self.covered = self.covered_tokens = 0
        self.retained_kept = self.retained_truncated = self.retained_sent = self.retained_tokens = 0
        self.summary_tokens = 0

    def _grow(self, i: int) -> None:
        m = self.session.messages[i]
        if m.role == "system" and not self.conversation:  # cx.leading_system_messages
            self.system_count += 1
            if m.text:
                self.system_texts.append(m.text)
                self.instructions = cx.approx_token_count("\n\n".join(self.system_texts))
            return
        self.conversation = True
        if m.role == "user" and not self.real_user:
            if cx.user_message_text(m) is None:  # initial context (before the first real user message)
                self.initial_count += 1
                self.initial_tokens += self.tokens[i]
                return
            self.real_user = True
        self.history.append(i)
        self.history_sum += self.tokens[i]
        if m.role == "assistant" and m.usage is not None:
            self.last_usage = i

    def absorb(self, i: int) -> None:
        self._grow(i)

    def step(self, i: int) -> Turn:
        self._grow(i)
        if not self.usable or (not self.generated and self.recorded_until(i) >= self.first_summary):
            return _Replay.step(self, i)
        if self.synced != len(self.generated):
            self._sync()
        return self._fast(i)

    def _sync(self) -> None:
        """Take over the summary the reference step generated: it covers the history so far."""
        summary = self.generated[-1]
        messages = self.session.messages
        covered = [messages[self.position[c]] for c in summary.covers]
        self.covered = len(covered)
        self.covered_tokens = sum(self.tokens[m.index] for m in covered)
        users = [(m, text) for m in covered if (text := cx.user_message_text(m)) is not None]
        chosen = cx.select_user_messages([t for _, t in users], self.params.compact_user_message_max_tokens)
        self.retained_kept = self.retained_truncated = self.retained_sent = self.retained_tokens = 0
        for k, text in chosen:
            m = users[k][0]
            self.retained_sent += cx.item_tokens(cx.user_item(text))
            self.retained_tokens += self.tokens[m.index]
            if text == cx.user_message_text(m):
                self.retained_kept += 1
            else:
                self.retained_truncated += 1
        self.summary_tokens = cx.item_tokens(cx.user_item(summary.text))
        self.synced = len(self.generated)

    def _fast(self, i: int) -> Turn:
        active = len(self.generated)
        live = len(self.history) - self.covered if active else len(self.history)
        live_tokens = self.history_sum - self.covered_tokens if active else self.history_sum
        retained = self.retained_sent if active else 0
        summary = self.summary_tokens if active else 0
        used = self.instructions + self.initial_tokens + retained + summary + live_tokens
        total = used
        if not active and self.last_usage >= 0:
            total = cx.reported_total(self.session.messages[self.last_usage]) or 0
        if self.limit is not None and total >= self.limit and live:
            return _Replay.step(self, i)  # the compaction: the reference plans it and runs the policy's compact
        fits = used <= self.budget
        events: list[Event] = []
        fixed = self.instructions + self.initial_tokens + retained + summary
        parts = {"instructions": self.instructions, "initial_context": self.initial_tokens, "retained_user": retained, "summary": summary}
        self._overflow(i, fits, events, {**parts, "history": self.budget - fixed}, {**parts, "history": live_tokens}, self.budget, used)
        if active:
            kept = self.system_count + self.initial_count + self.retained_kept + live
            summarized = self.covered - self.retained_kept - self.retained_truncated
            not_sent = self.covered_tokens - self.retained_tokens
            truncated = self.retained_truncated
        else:
            kept, summarized, not_sent, truncated = i + 1, 0, 0, 0
        return Turn(i, used, self.budget, kept, 0, summarized, truncated, fits, active, tuple(events), not_sent)


class GeminiCliReplay(_EditsReplay):
    """Gemini CLI's chat compression, until its first compression: the history's Contents grow
    one message at a time (`gemini_history.build_contents`, the same cached `message_content`
    with the tool names known at that turn), so the prompt's estimate (every Content but the
    request being sent) is a running sum, and the reported `promptTokenCount` the latest one.

    The turns whose prompt reaches the threshold (the compression truncates outputs and splits
    the whole history) are planned by the reference step, and so is every turn once a summary is in
    force (the outputs truncated at the compression are truncated again at every turn, counted
    over the history held since)."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        settings: gc.GeminiCompression = params
        self.limit = settings.tokenLimit if settings.tokenLimit is not None else gc.token_limit(session.model)
        self.threshold = settings.compressionThreshold * self.limit
        self.call_names: dict[str, str] = {}
        self.previous: Message | None = None
        self.key: tuple[Any, ...] | None = None  # the last Content's key, role and estimate
        self.role = ""
        self.contents = 0
        self.last_estimate = 0.0
        self.estimate = 0.0  # all Contents' estimates (multiples of 1/4: exact in floating point)
        self.history_sum = 0
        self.reported: int | None = None

    def absorb(self, i: int) -> None:
        m = self.session.messages[i]
        if m.role == "system":
            self._system(m)
        else:
            self._grow(i, m)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.usable or self.generated or self.recorded_until(i) >= self.first_summary:
            return _Replay.step(self, i)
        return self._fast(i)

    def _grow(self, i: int, m: Message) -> None:
        for c in m.tool_calls:
            if c.id:
                self.call_names[c.id] = c.name
        mc = message_content(m, self.previous, self.call_names.get(m.tool_call_id, m.name))
        if self.key is not None and mc.key == self.key:
            if not mc.whole_record:
                self.last_estimate += mc.estimate
                self.estimate += mc.estimate
        else:
            self.key, self.role, self.last_estimate = mc.key, mc.role, mc.estimate
            self.estimate += mc.estimate
            self.contents += 1
        if m.role != "tool":
            self.previous = m
        self.history_sum += self.tokens[i]
        if m.role == "assistant":
            reported = gc.reported_prompt_tokens(m)
            if reported is not None:
                self.reported = reported

    def _fast(self, i: int) -> Turn:
        pending = self.role == "user"  # the request being sent joins the history after any compression
        held = self.estimate - (self.last_estimate if pending else 0.0)
        prompt_tokens = self.reported if self.reported is not None else math.floor(held)
        if self.contents > pending and prompt_tokens >= self.threshold:
            return _Replay.step(self, i)  # the compression: the reference plans it and runs the policy's compact
        system = self.system_prompt_tokens
        used = system + self.history_sum
        fits = used <= self.limit
        events: list[Event] = []
        self._overflow(i, fits, events, {"system": system, "summary": 0, "history": self.limit - system},
                       {"system": system, "summary": 0, "history": self.history_sum}, self.limit, used)
        return Turn(i, used, self.limit, i + 1, 0, 0, 0, fits, 0, tuple(events), 0)


REPLAYERS: dict[str, type[_Replay]] = {
    ae.POLICY_THINKING: ClearThinkingReplay,
    ae.POLICY_TOOLS: ClearToolUsesReplay,
    "langchain-context-editing": LangChainContextEditingReplay,
    "claude-code": ClaudeCodeReplay,
    "codex-compaction": CodexReplay,
    "gemini-cli-compression": GeminiCliReplay,
}
