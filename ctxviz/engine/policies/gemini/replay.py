"""The incremental replayer of Gemini CLI's chat compression (`gemini-cli-compression`), carried from
turn to turn, before its first compression and after each.
"""

from __future__ import annotations

import math
from typing import Any

from ...counting import TokenCounts
from ...replay_contract import Event, Turn, _Replay
from ...session import Message, Session, Summary
from ...summarizers import Summarizer
from ..replay_common import _EditsReplay, _PairSafety
from . import compression as gc
from .history import build_contents, estimate_part, message_content, own_parts, text_content


class GeminiCliReplay(_EditsReplay):
    """Gemini CLI's chat compression: the history's Contents grow one message at a time
    (`history.build_contents`, the same cached `message_content` with the tool names known at
    that turn), so the prompt's estimate (every Content but the request being sent) is a running
    sum, and the reported `promptTokenCount` the latest one.

    The turns whose prompt reaches the threshold (the compression truncates outputs and splits
    the whole history) are planned by the reference step. After a compression the plan holds the
    summary turn, its acknowledgement and the Contents of the messages it does not cover, and
    truncates again the outputs up to the message held when it compressed (`Summary.held_until`):
    `_sync` rebuilds that once (those Contents no longer change), and the later turns add the new
    messages to running sums as before. (Every estimate is a multiple of 1/4: the sums are exact
    in floating point, in any order.)

    Pair safety is carried too (`_PairSafety`): the history sent is one run, all of it before a
    compression and what the summary does not cover after one, so a turn drops what
    `apply_pair_safety` would from the problems and the pairs crossing the run's start. A session
    with a tool call id on more than one call replays from scratch with pair safety."""

    pair_safe_incremental = True

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
        self.synced = 0  # len(generated) the state after a compression reflects
        self.seen: list[Message] = []  # the history so far (messages 0..i but the system ones)
        self.summary_estimate = 0.0  # the summary turn's and its acknowledgement's estimates
        self.summary_tokens = 0
        self.covered = self.covered_tokens = 0
        self.truncated = 0
        self.truncated_extra = 0  # what the truncated outputs send less than their tokens (<= 0)
        self.truncated_estimate = 0.0  # what they estimate less
        self.truncated_sent: dict[int, int] = {}  # session index -> what a truncated output sends
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.usable = not pair_safe or self.pairs is not None
        self.run_start: int | None = 0  # the history position the sent run starts at (None: not one run)

    def absorb(self, i: int) -> None:
        if self.pairs is not None:
            self.pairs.grow(i)
        m = self.session.messages[i]
        if m.role == "system":
            self._system(m)
        else:
            self._grow(i, m)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.usable or (not self.generated and self.recorded_until(i) >= self.first_summary):
            return _Replay.step(self, i)
        if self.synced != len(self.generated):
            self._sync(self.generated[-1])
        return self._fast(i)

    def _grow(self, i: int, m: Message) -> None:
        for c in m.tool_calls:
            if c.id:
                self.call_names[c.id] = c.name
        self.seen.append(m)
        self._content(m)
        self.history_sum += self.tokens[i]
        if m.role == "assistant":
            reported = gc.reported_prompt_tokens(m)
            if reported is not None:
                self.reported = reported

    def _content(self, m: Message) -> None:
        """Add message m's parts to the Contents' running sums (`build_contents`, one step)."""
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

    def _sync(self, summary: Summary) -> None:
        """Take over the compression the reference step ran: the Contents of the messages its
        summary does not cover, built afresh (`plan_records`), and the outputs truncated up to
        the message it held (fixed from now on: later messages start Contents of their own)."""
        covered = set(summary.covers)
        rest = [m for m in self.seen if m.id not in covered]
        gone = [m for m in self.seen if m.id in covered]
        self.covered, self.covered_tokens = len(gone), sum(self.tokens[m.index] for m in gone)
        self.run_start = self.covered if all(m.id in covered for m in self.seen[: self.covered]) else None
        self.previous, self.key, self.role = None, None, ""
        self.contents, self.last_estimate, self.estimate, self.history_sum = 0, 0.0, 0.0, 0
        for m in rest:
            self._content(m)
            self.history_sum += self.tokens[m.index]
        head = [text_content("user", summary.text), text_content("model", gc.ACK_TEXT)]
        self.summary_estimate = head[0].estimate + head[1].estimate
        self.summary_tokens = self.full.text(summary.text) + self.full.text(gc.ACK_TEXT) if summary.text else 0
        self.truncated = self.truncated_extra = 0
        self.truncated_estimate = 0.0
        self.truncated_sent = {}
        contents = build_contents(rest, self.call_names)
        held = head + (contents[:-1] if contents and contents[-1].role == "user" else contents)
        ids = {m.id: k for k, c in enumerate(held) for m in c.messages}
        upto = ids.get(summary.held_until) if summary.held_until else None
        if upto is not None:
            by_content: dict[int, list[gc.Truncation]] = {}
            for t in gc.truncate_history_to_budget(held[: upto + 1], gc._max_chars(self.params, self.limit, None)):
                by_content.setdefault(t.content, []).append(t)
                part = held[t.content].parts[t.part]
                self.truncated_estimate += estimate_part(gc.truncated_part(part, t.output)) - estimate_part(part)
            for ci, found in by_content.items():
                c = held[ci]
                for m in c.messages:
                    hits = [t for t in found if gc._part_owner(c, t.part, m)]
                    if hits:
                        sent = math.floor(sum(estimate_part(gc.truncated_part(c.parts[t.part], t.output)) for t in hits)
                                          + sum(estimate_part(p) for p in own_parts(m, m.name) if "functionResponse" not in p))
                        self.truncated += 1
                        self.truncated_extra += sent - self.tokens[m.index]
                        self.truncated_sent[m.index] = sent
        self.synced = len(self.generated)

    def _fast(self, i: int) -> Turn:
        pending = self.role == "user"  # the request being sent joins the history after any compression
        held = self.estimate - (self.last_estimate if pending else 0.0)
        active = len(self.generated)
        if active:
            prompt_tokens = math.floor(self.summary_estimate + held + self.truncated_estimate)
        else:
            prompt_tokens = self.reported if self.reported is not None else math.floor(held)
        if (active or self.contents > pending) and prompt_tokens >= self.threshold:
            return _Replay.step(self, i)  # the compression: the reference plans it and runs the policy's compact
        system, summary = self.system_prompt_tokens, self.summary_tokens if active else 0
        history = self.history_sum + (self.truncated_extra if active else 0)
        covered, truncated, not_sent = (self.covered, self.truncated, self.covered_tokens) if active else (0, 0, 0)
        unpaired = 0
        if self.pairs is not None:  # pair safety drops the sent half of broken pairs: history[start:h] is sent
            start = self.run_start if active else 0
            if start is None:
                return _Replay.step(self, i)
            dropped = self.pairs.drops(start, len(self.seen), len(self.seen), len(self.seen))
            for k in dropped:
                index = self.seen[k].index
                sent = self.truncated_sent.get(index) if active else None
                history -= self.tokens[index] if sent is None else sent
                truncated -= sent is not None
                not_sent += self.tokens[index]
            unpaired = len(dropped)
        used = system + summary + history
        fits = used <= self.limit
        events: list[Event] = []
        self._overflow(i, fits, events, {"system": system, "summary": summary, "history": self.limit - system - summary},
                       {"system": system, "summary": summary, "history": history}, self.limit, used)
        return Turn(i, used, self.limit, i + 1 - covered - truncated - unpaired, unpaired, covered, truncated, fits, active, tuple(events), not_sent)


REPLAYERS: dict[str, type[_Replay]] = {"gemini-cli-compression": GeminiCliReplay}
