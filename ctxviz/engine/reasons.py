"""A reason in a few words, for a table column at 1280 px: "after cut #145", "missed by 4",
"fresh tail", "over SYSTEM_OUTPUT 7,500".

The words come from the message's reason code (engine/reason_codes.py), so the column can never
say "fits" of a message that is not sent. For three codes the figure a user wants at a glance (the
cut's index, by how much it missed, the category and its maximum) is lifted from the policy's
sentence; where the sentence has no such figure the code's label stands alone. The full sentence
stays the plan's (hover, detail panel, every export).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .plan import MessagePlan
from .reason_codes import code_of

_N = r"(\d[\d,]*)"


def _missed(match: re.Match[str]) -> str:
    need, left = (int(g.replace(",", "")) for g in match.groups())
    return f"missed by {need - left:,}"


#: code -> (the figure's pattern in the sentence, how to say it). Only figures: the words are the code's.
DETAILS: dict[str, tuple[re.Pattern[str], object]] = {
    "after_cut": (re.compile(r"\(#(\d+)\)"), lambda m: f"after cut #{m.group(1)}"),
    "missed": (re.compile(rf"{_N} tokens did not fit in the {_N} left"), _missed),
    "over_cap": (re.compile(r"(\w+) held [\d,]+ tokens, over its " + _N + " maximum"), lambda m: f"over {m.group(1)} {m.group(2)}"),
}


@lru_cache(maxsize=65536)
def short_of(code: str, decision: str, reason: str) -> str:
    """The column's text for a message with this code, decision and sentence."""
    rc = code_of(code, decision)
    detail = DETAILS.get(rc.code)
    if detail is not None:
        match = detail[0].search(reason)
        if match is not None:
            return detail[1](match)  # type: ignore[operator]
    return rc.label


def short(m: MessagePlan) -> str:
    return short_of(m.code, m.decision.value, m.reason)


@lru_cache(maxsize=65536)
def short_reason(reason: str, decision: str = "") -> str:
    """By how much a sentence says its message missed the budget ("missed by 4"), for the detail
    panel, or "" when it says no such thing."""
    match = DETAILS["missed"][0].search(reason)
    return _missed(match) if match is not None else ""
