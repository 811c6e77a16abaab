"""The incremental replayer of Gemini CLI's chat compression (`gemini-cli-compression`), carried from
turn to turn until its first compression.
"""

from __future__ import annotations

import math
from typing import Any

from ...counting import TokenCounts
from ...replay_contract import Event, Turn, _Replay
from ...session import Message, Session
from ...summarizers import Summarizer
from ..replay_common import _EditsReplay
from . import compression as gc
from .history import message_content


class GeminiCliReplay(_EditsReplay):
    """Gemini CLI's chat compression, until its first compression: the history's Contents grow
    one message at a time (`history.build_contents`, the same cached `message_content`
    with the tool names known at that turn), so the prompt's estimate (every Content but the
    request being sent) is a running sum, and the reported `promptTokenCount` the latest one.

    The turns whose prompt reaches the threshold (the compression truncates outputs and splits
    the whole history) are planned by the reference step, and so is every turn once a summary is in
    force (the outputs truncated at the compression are truncated again at every turn, counted
    over the history held since)."""

    #: Every turn from the first compression on is planned by the reference step.
    after_trigger = "the turns from its first compression on"

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


REPLAYERS: dict[str, type[_Replay]] = {"gemini-cli-compression": GeminiCliReplay}
