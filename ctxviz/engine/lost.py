"""What a plan does not send, the way a person debugging a forgetful agent asks: how much, whose
words, where the cut fell and how close it came, the user's own requests first, then the largest.

The app's overview card and `plan`'s text both read this; it is computed from the plan's columns in
one pass, so it keeps up with re-plans of 100,000 messages.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from itertools import compress

from .plan import SENT_DECISIONS, Decision, Plan
from .policies import get_policy
from .session import Session

#: The user's own words first: they are what a person debugging a forgetful agent looks for.
ROLE_ORDER = {"user": 0, "assistant": 1, "tool": 2, "system": 3}
ROLE_NOUNS = {"user": "user", "assistant": "assistant", "tool": "tool results", "system": "system"}


@dataclass(frozen=True)
class LostMessage:
    index: int
    role: str
    tokens: int
    first_line: str


@dataclass(frozen=True)
class Lost:
    messages: int
    tokens: int
    by_role: dict[str, int]
    cut: int | None  # the newest message not sent
    #: How many more tokens of room the cut message needed (None: it was not left out for room).
    missed_by: int | None
    user_requests: tuple[LostMessage, ...]  # the first few (`users_lost` counts them all)
    largest: tuple[LostMessage, ...]
    summarized: int = 0
    users_lost: int = 0

    def headline(self) -> str:
        if not self.messages:
            return "Every message is sent."
        roles = ", ".join(f"{n:,} {ROLE_NOUNS.get(r, r)}" for r, n in self.by_role.items())
        text = f"{self.messages:,} messages / {self.tokens:,} tokens not sent: {roles}"
        if self.summarized:
            text += f" ({self.summarized:,} of them summarised)"
        if self.cut is not None:
            text += f"; cut at #{self.cut}"
            if self.missed_by is not None:
                text += f", missed by {self.missed_by:,} token{'s' if self.missed_by != 1 else ''}"
        return text


def first_line(text: str, width: int = 72) -> str:
    """The start of the text on one line (a JSON tool output's first line alone is a lone brace)."""
    line = " ".join(text[: width * 4].split())
    return line if len(line) <= width else line[: width - 1] + "…"


def lost(plan: Plan, session: Session, shown: int = 5) -> Lost:
    cols = plan.columns
    if not plan.messages:
        return Lost(0, 0, {}, None, None, (), ())
    unsent = [d not in SENT_DECISIONS for d in cols.decision]
    indices = list(compress(cols.index, unsent))
    if not indices:
        return Lost(0, 0, {}, None, None, (), ())
    by_role: dict[str, int] = {}
    for role in compress(cols.role, unsent):
        by_role[role] = by_role.get(role, 0) + 1
    tokens = sum(compress(cols.tokens, unsent))
    summarized = sum(1 for d in compress(cols.decision, unsent) if d is Decision.SUMMARIZED)
    cut = indices[-1]
    messages = session.messages

    def entry(i: int) -> LostMessage:
        return LostMessage(i, cols.role[i], cols.tokens[i], first_line(messages[i].text) or "(no text)")

    # Only the entries a view shows are made (a 10,000-message session can leave out thousands of user messages).
    user_indices = [i for i in indices if cols.role[i] == "user"]
    users = tuple(entry(i) for i in user_indices[:shown])
    largest = tuple(entry(i) for i in heapq.nlargest(shown, indices, key=cols.tokens.__getitem__))
    return Lost(len(indices), tokens, {r: by_role[r] for r in sorted(by_role, key=lambda r: (ROLE_ORDER.get(r, 9), r))}, cut, _missed_by(plan, cut),
                users, largest, summarized, len(user_indices))


def _missed_by(plan: Plan, cut: int) -> int | None:
    """The room the cut message lacked in the part that holds its zone: its tokens minus what was
    left there. None when it was dropped for another reason (a summary covers it, the policy's
    window is a message count, room was left but the policy stopped)."""
    m = plan.messages[cut]
    if m.decision is not Decision.DROPPED:
        return None
    policy = get_policy(plan.policy)
    if plan.totals.fits_test == "parts":
        part = policy.zone_parts.get(m.zone, m.zone)
        if part not in plan.allocation:
            return None
        room = plan.allocation[part] - plan.usage.get(part, 0)
    else:
        room = plan.totals.budget - plan.totals.used
    missing = m.tokens - room
    return missing if missing > 0 else None
