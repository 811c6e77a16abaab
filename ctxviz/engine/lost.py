"""What a plan does not send, the way a person debugging a forgetful agent asks: how much, whose
words, where the cut fell and how close it came, the user's own requests first, then the largest.

Every kind of loss counts: messages not sent, a system prompt the policy dropped (named first),
tool results cleared to a placeholder and messages truncated (sent, but not whole). The user's
messages are the user's own words: harness text and observations sent as user turns
(engine/voices.py) are counted apart and never listed as the user's.

The app's overview card and `plan`'s text both read this; it is computed from the plan's columns in
one pass, so it keeps up with re-plans of 100,000 messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .plan import Decision, Plan
from .plan_rows import REPLACED, SUMMARIZED, TRUNCATED
from .policies import get_policy
from .retention import stand_in_of, system_prompt_sent
from .session import Session
from .voices import voices_of

#: The user's own words first: they are what a person debugging a forgetful agent looks for.
ROLE_ORDER = {"user": 0, "assistant": 1, "tool": 2, "system": 3, "harness": 4, "observation": 5}
ROLE_NOUNS = {"user": "user", "assistant": "assistant", "tool": "tool results", "system": "system", "harness": "harness text",
              "observation": "observations"}
#: Voices of user turns the user did not write (counted apart from the user's).
NOT_THE_USERS = frozenset({"harness", "observation"})


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
    #: Messages sent as a placeholder (a cleared tool result): how many, their tokens, what is sent.
    replaced: int = 0
    replaced_tokens: int = 0
    replaced_sent: int = 0
    #: Messages sent cut short: how many, their tokens, what is sent.
    truncated: int = 0
    truncated_tokens: int = 0
    truncated_sent: int = 0
    #: The policy does not send the system prompt.
    system_prompt_dropped: bool = False
    #: The policy's offline stand-in, when the plan's summary is ctxviz's text and not the agent's.
    stand_in: str = ""

    @property
    def nothing(self) -> bool:
        """Nothing at all is lost: every message is sent whole, and so is the system prompt."""
        return not (self.messages or self.replaced or self.truncated or self.system_prompt_dropped)

    def cuts(self) -> list[str]:
        """The losses inside sent messages, one phrase each ("77 tool results cleared: 31,010 → 308 tokens")."""
        out = []
        if self.replaced:
            out.append(f"{self.replaced:,} {'tool results' if self.replaced != 1 else 'tool result'} cleared: "
                       f"{self.replaced_tokens:,} → {self.replaced_sent:,} tokens")
        if self.truncated:
            out.append(f"{self.truncated:,} message{'s' if self.truncated != 1 else ''} truncated: {self.truncated_tokens:,} → "
                       f"{self.truncated_sent:,} tokens")
        return out

    def headline(self) -> str:
        if self.nothing:
            return "Every message is sent."
        parts = ["the system prompt is not sent"] if self.system_prompt_dropped else []
        if self.messages:
            roles = ", ".join(f"{n:,} {ROLE_NOUNS.get(r, r)}" for r, n in self.by_role.items())
            text = f"{self.messages:,} messages / {self.tokens:,} tokens not sent: {roles}"
            if self.summarized:
                text += f" ({self.summarized:,} of them summarised)"
            if self.cut is not None:
                text += f"; cut at #{self.cut}"
                if self.missed_by is not None:
                    text += f", missed by {self.missed_by:,} token{'s' if self.missed_by != 1 else ''}"
            parts.append(text)
        parts += self.cuts()
        text = "; ".join(parts)
        return text[0].upper() + text[1:]


def first_line(text: str, width: int = 72) -> str:
    """The start of the text on one line (a JSON tool output's first line alone is a lone brace)."""
    line = " ".join(text[: width * 4].split())
    return line if len(line) <= width else line[: width - 1] + "…"


def lost(plan: Plan, session: Session, shown: int = 5) -> Lost:
    cols = plan.columns
    if not plan.messages:
        return Lost(0, 0, {}, None, None, (), (), system_prompt_dropped=bool(plan.system_prompt) and not system_prompt_sent(plan))
    # Masks and sums over the decision column at C speed: the card is made anew for every state of a followed log.
    numbers = plan.decision_numbers
    tokens_of, sent_of = plan.token_arrays
    replaced, truncated = numbers == REPLACED, numbers == TRUNCATED
    losses = {
        "replaced": int(replaced.sum()), "replaced_tokens": int(tokens_of[replaced].sum()), "replaced_sent": int(sent_of[replaced].sum()),
        "truncated": int(truncated.sum()), "truncated_tokens": int(tokens_of[truncated].sum()),
        "truncated_sent": int(sent_of[truncated].sum()),
        "system_prompt_dropped": bool(plan.system_prompt) and not system_prompt_sent(plan),
    }
    unsent = ~plan.sent_mask
    positions = np.flatnonzero(unsent)
    if not len(positions):
        return Lost(0, 0, {}, None, None, (), (), **losses)
    index_of = cols.index
    speakers = _speakers(session, cols.role)
    # Whose words each message not sent holds: a user turn that is not the user's (a reminder the
    # harness sent, an observation) counts under its voice.
    counts = np.bincount(speakers.codes[positions], minlength=len(speakers.names))
    by_role = {speakers.names[k]: int(n) for k, n in enumerate(counts.tolist()) if n}
    tokens = int(tokens_of[unsent].sum())
    summarized = int((numbers == SUMMARIZED).sum())
    cut = index_of[int(positions[-1])]
    messages = session.messages

    def entry(i: int) -> LostMessage:
        return LostMessage(i, cols.role[i], cols.tokens[i], first_line(messages[i].text) or "(no text)")

    # Only the entries a view shows are made (a 10,000-message session can leave out thousands of user messages).
    user_positions = np.flatnonzero(unsent & speakers.users)
    users = tuple(entry(index_of[p]) for p in user_positions[:shown].tolist())
    # The largest first, ties in the session's order (as a stable sort by size, largest first).
    largest_positions = positions[np.argsort(-tokens_of[positions], kind="stable")[:shown]]
    largest = tuple(entry(index_of[p]) for p in largest_positions.tolist())
    stand_in = stand_in_of(plan, session) if summarized else ""
    return Lost(len(positions), tokens, {r: by_role[r] for r in sorted(by_role, key=lambda r: (ROLE_ORDER.get(r, 9), r))}, cut,
                _missed_by(plan, cut), users, largest, summarized, len(user_positions), stand_in=stand_in, **losses)


class _Speakers(NamedTuple):
    """Whose words each message holds, for counting what is not sent: its role, or for a user turn
    the user did not write its voice (`codes`, positions in `names`), and which are the user's own."""

    roles: Sequence[str]
    voices: tuple[str, ...]
    codes: np.ndarray
    names: tuple[str, ...]
    users: np.ndarray


def _speakers(session: Session, roles: Sequence[str]) -> _Speakers:
    """The session's speakers, worked out once per session (and roles column): they do not depend
    on the plan, and reading 10,000 roles and voices took most of each re-plan's card."""
    voices = voices_of(session)
    found = session.derived.get(_SPEAKERS)
    if found is not None and found.roles is roles and found.voices is voices:
        return found  # type: ignore[no-any-return]
    n = len(roles)
    user = np.fromiter(map("user".__eq__, roles), dtype=bool, count=n)
    not_theirs = user & np.fromiter(map(NOT_THE_USERS.__contains__, voices), dtype=bool, count=n)
    spoken = [voices[i] if theirs else role for i, (role, theirs) in enumerate(zip(roles, not_theirs.tolist(), strict=True))]
    names = tuple(dict.fromkeys(spoken))
    number = {name: k for k, name in enumerate(names)}
    codes = np.fromiter(map(number.__getitem__, spoken), dtype=np.int32, count=n)
    found = session.derived[_SPEAKERS] = _Speakers(roles, voices, codes, names, user & ~not_theirs)
    return found


_SPEAKERS = ("lost", "speakers")


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
