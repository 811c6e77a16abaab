"""The engine's decision and zone codes, and its short reasons, as the app writes them.

A plan's decision codes keep the spelling `plan --json` and every export use ("summarized"), while
the reason codes and every sentence the app shows say "summarised": one screen showing both read as
two different things ("summarized in summarized" beside a legend saying "summarised")."""

from __future__ import annotations

from ..engine.wording import spelled

__all__ = ["decided_where", "spelled"]


def decided_where(decision: str, zone: str) -> tuple[str, str]:
    """(decision, zone) as the app shows them, the zone "" when it only repeats the decision: a zone
    named like its decision read "summarised in summarised"."""
    shown, where = spelled(decision), spelled(zone)
    return shown, ("" if where == shown else where)
