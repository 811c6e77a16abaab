"""A reason in a few words, for a table column at 1280 px: "after cut #145", "missed by 4",
"fresh tail", "over SYSTEM_OUTPUT 7,500". The full sentence stays the plan's (hover, detail panel,
every export); this only recognises the policies' phrasings and falls back to the sentence's opening.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .plan import MessagePlan

_N = r"(\d[\d,]*)"
_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), t) for p, t in (
    (r"pinned \(", "pinned"),
    (r"pushed out to make room for the pinned", "pushed out by a pin"),
    (r"pair_safe keeps tool calls", "pair-safe"),
    (rf"{_N} tokens did not fit in the {_N} left", "missed by {missed}"),
    (r"stops at the first message that does not fit \(#(\d+)\)", "after cut #{0}"),
    (r"(\w+) held [\d,]+ tokens, over its " + _N + " maximum", "over {0} {1}"),
    (r"newer than the (\w+) messages removed", "newer than {0} cut"),
    (r"(\w+) \([\d,]+ tokens\) is within its", "{0} within max"),
    (r"fresh tail|most recent messages|last \d+ messages", "fresh tail"),
    (r"new user message", "new message"),
    (r"part of the system prompt|system prompt", "system prompt"),
    (r"(\w+) messages are never trimmed", "{0} never trimmed"),
    (r"since the last compaction", "since last compaction"),
    (r"summar", "summarised"),
    (r"\bfit in the\b|\bfit\b", "fits"),
))


@lru_cache(maxsize=65536)
def short_reason(reason: str, decision: str = "") -> str:
    for pattern, template in _RULES:
        match = pattern.search(reason)
        if match is None:
            continue
        if "{missed}" in template:
            need, left = (int(g.replace(",", "")) for g in match.groups())
            return template.format(missed=f"{need - left:,}")
        return template.format(*match.groups())
    head = reason.split(":", 1)[-1].strip() if ":" in reason[:14] else reason
    words = head.split()
    text = " ".join(words[:4])
    return (text[:28] + "…") if len(text) > 28 or len(words) > 4 else text or decision


def short(m: MessagePlan) -> str:
    return short_reason(m.reason, m.decision.value)
