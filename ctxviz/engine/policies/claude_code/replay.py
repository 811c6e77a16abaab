"""The incremental replayer of Claude Code's auto-compact (`claude-code`): the count since the last
reported usage or summary, carried from turn to turn, with the offline snapshot gathered so far.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from ...counting import TokenCounts
from ...replay_contract import Event, Turn, _Replay, light_plan, untrimmed_cuts
from ...session import Message, Session
from ...summarizers import ExtractiveSummarizer, Summarizer
from ..carried import _Snapshot
from ..replay_common import _EditsReplay
from . import auto_compact as cc


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

    unique_ids = True

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        return "compactions recorded in the log" if session.compactions else None

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


REPLAYERS: dict[str, type[_Replay]] = {"claude-code": ClaudeCodeReplay}
