"""The incremental replayer of Codex CLI's local auto-compaction (`codex-compaction`), carried from
turn to turn.
"""

from __future__ import annotations

from typing import Any

from ...counting import TokenCounts
from ...replay_contract import Event, Turn, _Replay
from ...session import Session
from ...summarizers import Summarizer
from ..replay_common import _EditsReplay
from . import compaction as cx


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

    unique_ids = True

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


REPLAYERS: dict[str, type[_Replay]] = {"codex-compaction": CodexReplay}
