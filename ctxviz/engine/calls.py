"""The agent's calls, one row each: what the provider reported and billed, beside what the policy
would have sent at that call.

Trace viewers (Phoenix, Langfuse) badge every call; the replay steps once per call (engine/steps.py),
so each step is a row: the request's input and its cached part as the provider reported them (the
cache model's estimate where the log records no usage), its input cost at the catalogue's prices,
the tokens the policy sends at that step, and the difference. A large difference says where the
replay and the agent part ways (a compaction the policy makes at another call, the unseen system
prompt and tools the log does not record).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .steps import recorded_call


@dataclass(frozen=True)
class CallRow:
    """One model call: the replay's step `step`, whose request ends at message `index`."""

    step: int
    index: int
    #: The assistant message that answered it (-1: none in the file).
    reply: int
    #: The request's input tokens (input + cache reads + cache writes) and the cached part, and the
    #: input's cost in USD; None where neither the log nor the cache model gives one.
    input: int | None
    cached: int | None
    cost: float | None
    #: True: input, cached and cost are the cache model's estimate (the log records no usage for
    #: this call); False: the provider's own figures (cost at the catalogue's prices).
    estimated: bool
    #: What the policy would have sent at this call, by its own estimator.
    sent: int

    @property
    def difference(self) -> int | None:
        """What the policy would send minus the input the provider reported (None where the log
        reports none: an estimate of the replay's own request is no comparison)."""
        return None if self.input is None or self.estimated else self.sent - self.input


def agent_calls(timeline: Any, cache: Any = None) -> list[CallRow]:
    """A row per step of `timeline` (engine.simulate.Timeline). `cache` (engine.caching.CacheReport
    of the same replay, or None) prices the calls: the provider's figures at its model's prices where
    the log records them, its estimate for the steps it priced otherwise."""
    session = timeline.session
    messages = session.messages
    model = cache.cache if cache is not None else None
    estimates = {t.turn: t for t in cache.turns} if cache is not None else {}
    rows = []
    for k, t in enumerate(timeline.turns):
        answer = messages[t.reply] if 0 <= t.reply < len(messages) else None
        if answer is not None and recorded_call(answer):
            u = answer.usage
            assert u is not None
            cost = model.price(u.cache_read_input_tokens, u.cache_creation_input_tokens, u.input_tokens) if model is not None and model.known else None
            rows.append(CallRow(k, t.index, t.reply, u.window_fill, u.cache_read_input_tokens, cost, False, t.tokens_sent))
            continue
        e = estimates.get(t.index)
        known = e is not None and cache is not None and cache.known
        rows.append(CallRow(k, t.index, t.reply, e.request if e is not None else None, e.cache_read if e is not None else None,
                            e.cost if known else None, True, t.tokens_sent))  # type: ignore[union-attr]
    return rows


def totals(rows: Sequence[CallRow]) -> tuple[int, int, float]:
    """(input, cached, cost) over the rows that have each."""
    return (sum(r.input or 0 for r in rows), sum(r.cached or 0 for r in rows), sum(r.cost or 0.0 for r in rows))
