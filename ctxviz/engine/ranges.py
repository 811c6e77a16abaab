"""What a span of messages holds, in one line: "#12-#40: 29 messages, 12,300 tokens (8,100 sent):
5 user, 9 assistant, 15 tool; 3 tool pairs".

Selecting a span on the app's strip answers "what is in this stretch" the way a DevTools time range
does, without adding up 29 rows of the table by hand. Pure: the plan and its session in, figures out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .plan import Plan
from .session import Session, ToolResultPart

#: Roles in the order the sentence names them.
ROLE_ORDER = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class RangeSummary:
    first: int
    last: int
    messages: int
    tokens: int
    sent_tokens: int
    roles: tuple[tuple[str, int], ...]
    #: Tool calls whose result is in the span too.
    tool_pairs: int
    not_sent: int
    not_sent_tokens: int

    def sentence(self) -> str:
        span = f"#{self.first}" if self.first == self.last else f"#{self.first}-#{self.last}"
        roles = ", ".join(f"{n:,} {role}" for role, n in self.roles)
        pairs = f"; {self.tool_pairs:,} tool pair{'s' if self.tool_pairs != 1 else ''}" if self.tool_pairs else ""
        gone = (f"; {self.not_sent:,} not sent ({self.not_sent_tokens:,} tokens)" if self.not_sent and self.not_sent < self.messages
                else "; none sent" if self.not_sent else "; all sent")
        return (f"{span}: {self.messages:,} message{'s' if self.messages != 1 else ''}, {self.tokens:,} tokens "
                f"({self.sent_tokens:,} sent): {roles}{pairs}{gone}")


def range_summary(plan: Plan, session: Session, first: int, last: int) -> RangeSummary:
    """The messages first..last (clamped to the plan; swapped when given the other way round)."""
    n = len(plan.messages)
    first, last = sorted((first, last))
    first, last = max(0, first), min(n - 1, last)
    if n == 0 or first > last:
        return RangeSummary(first, last, 0, 0, 0, (), 0, 0, 0)
    cols = plan.columns
    span = range(first, last + 1)
    roles = Counter(cols.role[i] for i in span)
    ordered = [(r, roles[r]) for r in ROLE_ORDER if roles[r]] + sorted((r, c) for r, c in roles.items() if r not in ROLE_ORDER)
    messages = session.messages
    calls = {c.id for i in span for c in messages[i].tool_calls if c.id}
    results = {messages[i].tool_call_id for i in span} | {p.tool_call_id for i in span for p in messages[i].parts if isinstance(p, ToolResultPart)}
    answered = calls & results
    gone = [i for i in span if not plan.messages[i].sent]
    return RangeSummary(first, last, len(span), sum(cols.tokens[first:last + 1]), sum(cols.sent_tokens[first:last + 1]),
                        tuple(ordered), len(answered), len(gone), sum(cols.tokens[i] for i in gone))
