"""A plan's messages grouped by reason code, and the vocabulary a policy's plans use.

The message table of 10,000 rows answers "why was #4,812 dropped"; the question before it is "why
are 9,000 messages not sent", which is a handful of reasons with counts and tokens ("after cut:
8,412 messages, 1.2M tokens"). Grouping reads the plan's codes (never its sentences), so a group is
sent or not sent as its code is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .plan import Plan
from .reason_codes import CODES, ReasonCode


@dataclass(frozen=True)
class ReasonGroup:
    """The messages of a plan that share one reason code."""

    reason: ReasonCode
    indices: tuple[int, ...]
    #: Their own measured tokens, and what they cost as sent.
    tokens: int
    sent_tokens: int

    @property
    def count(self) -> int:
        return len(self.indices)


def group_by_reason(plan: Plan, indices: Sequence[int] | None = None) -> list[ReasonGroup]:
    """The plan's messages (those of `indices`, in that order; all by default) grouped by reason
    code: not sent before sent, then most tokens first."""
    codes, cols = plan.reason_codes, plan.columns
    members: dict[str, list[int]] = {}
    for i in range(len(codes)) if indices is None else indices:
        members.setdefault(codes[i], []).append(i)
    groups = [ReasonGroup(CODES[code], tuple(rows), sum(cols.tokens[i] for i in rows), sum(cols.sent_tokens[i] for i in rows))
              for code, rows in members.items()]
    return sorted(groups, key=lambda g: (g.reason.sent, -g.tokens, g.reason.code))


def vocabulary(policy_codes: tuple[str, ...], plan: Plan | None = None) -> list[ReasonCode]:
    """The reasons a policy's plans give: its declared codes, and those `plan` carries besides (the
    generic code of a decision its policy gave no code, pins, pair safety). Sent codes first, each
    side in the order declared."""
    found = [*policy_codes, *(plan.reason_codes if plan is not None else ())]
    codes = [CODES[c] for c in dict.fromkeys(found) if c in CODES]
    return [c for c in codes if c.sent] + [c for c in codes if not c.sent]
