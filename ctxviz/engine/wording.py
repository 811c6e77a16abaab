"""Counts, ranks and quotes as a sentence writes them: "1 call", "3 calls", "the 2nd", "a long quo…".

The text outputs say "1 message", never "1 messages" or "message(s)". JSON keeps its numbers and
its own sentences; these are for the lines people read.
"""

from __future__ import annotations


def noun(count: int | float, singular: str, plural: str = "") -> str:
    """The noun for `count` of it: `singular` for exactly 1, else `plural` (default: singular + "s")."""
    return singular if count == 1 else plural or singular + "s"


def counted(count: int, singular: str, plural: str = "") -> str:
    """`1 call`, `2 calls`, `1,024 calls`; `plural` for nouns that do not take an "s" ("summaries")."""
    return f"{count:,} {noun(count, singular, plural)}"


def flat(text: str) -> str:
    """The text on one line: its white space runs as single spaces, none at either end."""
    return " ".join(text.split())


def clip(text: str, width: int = 160) -> str:
    """`flat(text)`, cut to `width` characters with "…" where it is cut (a quote, a preview, a label)."""
    line = flat(text)
    return line if len(line) <= width else line[: width - 1] + "…"


def ordinal(n: int) -> str:
    """`1st`, `2nd`, `3rd`, `4th`, `11th`, `12th`, `13th`, `21st`, `102nd`, `111th`."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix}"


def spelled(text: str) -> str:
    """A decision or zone code, or a reason sentence that starts with one, as a sentence spells it.

    A plan's decision codes keep the spelling `plan --json`, the exports and `--filter` use
    ("summarized"), while every sentence the app and the command line show says "summarised": the
    engine's reasons start with their decision's code, so an output that printed them as they are
    said "summarized" in one line and "summarised" in the next. One rule for the app and the CLI."""
    return text.replace("summarized", "summarised") if "summarized" in text else text
