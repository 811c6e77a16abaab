"""LangChain's SummarizationMiddleware (`langchain-summarization`) replayed turn to turn: the summary in
force and the running count of the state after it carried; a turn whose trigger is met is planned by
the reference step, which writes the summary.
"""

from __future__ import annotations

import math
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, Plan
from ...replay_contract import (
    Event,
    Turn,
    light_plan,
    untrimmed_cuts,
)
from ...session import Session
from ...summarizers import Summarizer
from ..replay_common import _SummaryReplay
from ..replay_recorded import _InForceTotal, recorded_events
from .counting import (
    cached_view,
    count_view,
    lc_type,
    max_input_tokens,
    model_provider,
    summary_view,
)
from .summarization import SummarizationParams, parse_trigger, provider_matches


class LangchainSummarizationReplay(_SummaryReplay):
    """SummarizationMiddleware: the state is the summary in force (its covers are a prefix of the
    session) and the messages after it; the trigger reads the running count of that state
    (`scaled_total`'s usage scaling carried: the AI messages' providers and the last reported
    total). A turn whose trigger is met (it fires, or keep leaves nothing to summarise) is planned
    by the reference step, which writes the summary. Pair safety is carried (`_SummaryReplay`): the
    state's messages are the one run sent.

    The summaries the file records stand first in the state, each one as a summary HumanMessage
    (every one in force, none superseded), in place of every message they cover: where each
    covers a prefix of the file (`_carry_recorded`), the state is those entries (their count,
    `_InForceTotal`) and the messages after the union of their covers, and the scaling walk starts
    again from there when that union moves. Codex's compactions cover just the non-system messages
    before them (`recorded_system_gaps`): the system messages among those stay in the state, in
    order before the messages after the union (`kept_system`), as they stay when the policy's own
    summary (which folds those covers in) summarises some of them and leaves the others.

    From scratch: ids on more than one message, pair safety where a tool call id is on more than
    one call."""

    recorded_summaries = "shaped until generated"
    recorded_system_gaps = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        p: SummarizationParams = params
        self.clauses = parse_trigger(p.trigger)
        self.ls_provider = p.model_provider or model_provider(session.model)
        self.limit = max_input_tokens(session.model, p.max_input_tokens)
        self.tokenizer = full.tokenizer
        self.c = 0  # messages 0..c-1 are covered by the summaries in force
        self.head_count = 0  # the summary entries standing first in the state (the generated one, or the recorded ones in force)
        self.head_tokens = 0  # their count
        # The system messages among 0..c-1 that no summary covers (Codex's compactions leave them):
        # they stand in the state before message c. How many, and their count.
        self.kept_system = self.kept_system_tokens = 0
        self.system_sums: list[int] | None = None  # with them: tokens of the system messages among 0..k-1
        self.index_of: dict[str, int] | None = None  # with them: each id's session index
        self._carry_recorded()
        self.recorded_total = _InForceTotal(self._summary_size)
        self._reset_scaling()

    def _reset_scaling(self) -> None:
        self.provider: str | None = None
        self.invalid = False
        self.last_total: int | None = None
        self.at_last = 0  # tokens of the state's messages up to the last AI message reporting a total
        self.last_ai: Any = None

    def _scale(self, k: int) -> None:
        """scaled_total's walk and run_pass' last AI message, one message on."""
        m = self.session.messages[k]
        if lc_type(m) != "ai":  # (its view's type, without building the view)
            return
        view = cached_view(m)
        if view.provider is None and m.raw is None and view.total_tokens is not None:
            view = view._replace(provider=self.ls_provider or None)  # run_pass: not a LangChain dump
        if self.provider is None:
            self.provider = view.provider
        elif view.provider != self.provider:
            self.invalid = True
        if view.total_tokens is not None:
            self.last_total = view.total_tokens
            self.at_last = self.sums[k + 1] - self.sums[self.c]
        self.last_ai = view

    def _grow(self, i: int) -> None:
        self._scale(i)

    def _summary_size(self, k: int) -> int:
        """Recorded summary k's count as the state's summary HumanMessage."""
        return count_view(summary_view(self.session.summaries[k].text), self.tokenizer)

    def _recorded_moved(self, i: int) -> None:
        recorded = self.recorded
        assert recorded is not None
        self.head_count = len(recorded.in_force)
        self.head_tokens = self.recorded_total.read(recorded)
        if recorded.covered != self.c:
            self._cover(recorded.covered, i)
            if recorded.shapes.system_gaps:
                if self.system_sums is None:
                    sums = [0]
                    for m, t in zip(self.session.messages, self.tokens, strict=False):
                        sums.append(sums[-1] + (t if m.role == "system" else 0))
                    self.system_sums = sums
                self.kept_system = recorded.shapes.system_before[self.c]
                self.kept_system_tokens = self.system_sums[self.c]

    def _cover(self, c: int, i: int) -> None:
        """Messages 0..c-1 are covered from step `i`: the scaling walk starts again after them."""
        self.c = c
        self._reset_scaling()
        for k in range(c, i + 1):
            self._scale(k)

    def _sync(self, i: int) -> None:
        summary = self.generated[-1]
        covers = tuple(summary.covers)
        if self.recorded is not None:  # the recorded summaries' covers come first: those of messages before the file are no message of it
            known = set(self.ids)
            covers = tuple(x for x in covers if x in known)
        c = len(covers)
        kept = kept_tokens = 0
        if c > i + 1 or covers != tuple(self.ids[:c]):
            if not self.kept_system:
                self.ok = False
                return
            # The state had system messages the recorded summaries leave: the summary covers the
            # messages before some c but a few of those system ones, which stay before message c.
            if self.index_of is None:
                self.index_of = {x: k for k, x in enumerate(self.ids)}
            at = [self.index_of[x] for x in covers]
            c = max(at, default=-1) + 1
            messages, system_before = self.session.messages, self.recorded.shapes.system_before  # type: ignore[union-attr]
            kept = c - len(at)
            kept_tokens = self.sums[c] - sum(self.tokens[k] for k in at)
            if c > i + 1 or len(set(at)) != len(at) or sum(messages[k].role != "system" for k in at) != c - system_before[c]:
                self.ok = False  # (a message left before c that is not a system one)
                return
        self.head_count = 1
        self.head_tokens = count_view(summary_view(summary.text), self.tokenizer)
        self._cover(c, i)
        self.kept_system, self.kept_system_tokens = kept, kept_tokens

    def _met(self, n_state: int, total: int) -> bool:
        """run_pass' trigger test (any doubt counts as met: the reference step then decides)."""
        last_ai, limit = self.last_ai, self.limit

        def reported(threshold: float) -> bool:
            return bool(last_ai is not None and last_ai.total_tokens and last_ai.total_tokens >= threshold
                        and last_ai.provider and provider_matches(last_ai.provider, self.ls_provider))

        for clause in self.clauses:
            met = True
            for kind, value in clause.items():
                if kind == "messages":
                    met = n_state >= value
                elif kind == "fraction" and limit is None:
                    met = False
                else:
                    threshold = int(value) if kind == "tokens" else max(1, int(limit * value))  # type: ignore[operator]
                    met = total >= threshold or reported(float(threshold))
                if not met:
                    break
            if met:
                return True
        return False

    def _fast(self, i: int) -> Turn | None:
        c, P = self.c, self.sums
        S = self.head_tokens
        kept, kept_tokens = self.kept_system, self.kept_system_tokens
        messages_tokens = P[i + 1] - P[c] + kept_tokens
        n_state = (i + 1 - c) + self.head_count + kept
        token_count = float(S + messages_tokens)
        if n_state > 1 and not self.invalid and self.provider is not None and self.last_total is not None:
            at_last = float(S + kept_tokens + self.at_last)
            if at_last:
                token_count *= min(1.25, max(1.0, self.last_total / at_last))
        total = math.ceil(token_count)
        if self.clauses and self._met(n_state, total):
            return None
        used = S + messages_tokens
        budget = self.limit if self.limit is not None else max(used, total)
        unpaired, unpaired_tokens = self._unpaired_from(c, i)  # what pair safety drops of messages c..i
        used -= unpaired_tokens
        messages_tokens -= unpaired_tokens
        fits = used <= budget
        events: list[Event] = [] if self.recorded is None or self.generated else recorded_events(self, self.recorded, i, self._recorded_decision)

        def light() -> Plan:
            allot = min(S, budget)
            return light_plan(self.policy, {"summary": allot, "messages": budget - allot}, {"summary": S, "messages": messages_tokens}, budget, used, fits)

        self.before = untrimmed_cuts(i, self.before, fits, events, light)
        return Turn(i, used, budget, i + 1 - c - unpaired + kept, unpaired, c - kept, 0, fits, len(self.generated), tuple(events),
                    P[c] - kept_tokens + unpaired_tokens)

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str]]:
        """A recorded summary in force on a turn the trigger is not met at: its covers are summarised, it is sent."""
        assert self.recorded is not None
        return self.recorded.shapes.covered_count(m), (Decision.KEPT, "kept: the earlier summary message stays first in the state")
