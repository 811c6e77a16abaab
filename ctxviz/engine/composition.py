"""What each call's request was made of: tokens sent per category, step by step.

One total line says how full the context was; bands per category say with what (claude-devtools
shows per-turn attribution the same way): a tool output that floods the window, a system prompt
that grows with every reminder. Each band is the plan at that step (`Timeline.plan_at`), so a long
replay is sampled (at most `MAX_STEPS` steps, evenly, the last always) and says so. Pure: run it
off the GUI thread; `should_stop` abandons it between steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Steps planned at most: a plan per step of a 10,000-call replay would take minutes.
MAX_STEPS = 300
#: The band for what the request holds beyond the session's messages (the system prompt the policy
#: builds, summaries, memory, and where a policy counts from the provider's usage, what that usage
#: holds besides): the step's tokens sent minus its messages' sent tokens.
ADDED = "outside the messages"


@dataclass(frozen=True)
class Composition:
    #: The positions in `Timeline.turns` planned, and each one's x (its request's last message).
    steps: tuple[int, ...]
    indices: tuple[int, ...]
    #: Tokens sent per category at each of those steps, categories in first-seen order; ADDED last.
    bands: dict[str, tuple[int, ...]]
    #: How many steps the replay has (more than `steps` when sampled).
    total_steps: int

    @property
    def sampled(self) -> bool:
        return len(self.steps) < self.total_steps

    def describe(self) -> str:
        if not self.sampled:
            return f"composition of every one of the {self.total_steps:,} steps"
        return (f"composition sampled at {len(self.steps):,} of {self.total_steps:,} steps (evenly, the last included): "
                "a plan per step of a long replay takes minutes")


def sample_steps(total: int, limit: int = MAX_STEPS) -> list[int]:
    """`limit` positions of 0..total-1, evenly spread, first and last included (all when fewer)."""
    if total <= limit:
        return list(range(total))
    return sorted({round(k * (total - 1) / (limit - 1)) for k in range(limit)})


def composition(timeline: Any, limit: int = MAX_STEPS, should_stop: Callable[[], bool] | None = None) -> Composition | None:
    """The tokens sent per category at each (sampled) step of `timeline`; None when `should_stop`
    said so before the end."""
    steps = sample_steps(len(timeline.turns), limit)
    per_step: list[dict[str, int]] = []
    for k in steps:
        if should_stop is not None and should_stop():
            return None
        plan = timeline.plan_at(k)
        sent = {str(category): tokens for category, (tokens, _all) in plan.category_totals.items()}
        sent[ADDED] = max(0, plan.totals.used - sum(sent.values()))
        per_step.append(sent)
    categories = [c for c in dict.fromkeys(c for row in per_step for c in row) if c != ADDED] + [ADDED]
    bands = {c: tuple(row.get(c, 0) for row in per_step) for c in categories}
    if not any(bands[ADDED]):
        del bands[ADDED]
    return Composition(tuple(steps), tuple(timeline.turns[k].index for k in steps), bands, len(timeline.turns))
