"""The decision code "summarized" as the command line's sentences spell it: "summarised".

The project's rule (gui/words.py): a decision code keeps the spelling `plan --json`, the exports and
`--filter` use ("summarized"), and every sentence says "summarised". The engine's reasons start with
their decision's code ("summarized: Claude Code's compact summary replaced ..."), so a text output
that printed them as they are said "summarized" in one line and "summarised" in the next.
"""

from __future__ import annotations


def spelled(text: str) -> str:
    """A decision or zone code, or a reason sentence that starts with one, as a sentence spells it."""
    return text.replace("summarized", "summarised") if "summarized" in text else text
