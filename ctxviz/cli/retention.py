"""Which anchors still reach the model, for plan, simulate and compare: when to compute it, and how to print it.

The retention engine and its text are imported when used: a command with `--retention off` never loads them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..engine.gc_pause import frozen_after

if TYPE_CHECKING:
    from ..engine.anchors import AnchorIndex
    from ..engine.anchors_ahead import AnchorsAhead
    from ..engine.plan import Plan
    from ..engine.retention import Retention
    from ..engine.retention_timeline import TimelineRetention
    from ..engine.session import Session
    from ..engine.simulate import Timeline


#: Anchors are extracted at about 1.5 MB of text a second: beyond this, `--retention on` asks for it.
RETENTION_AUTO_CHARS = 20_000_000


def retention_skipped(args: argparse.Namespace, session: Session) -> str:
    """Why retention is not computed ("" when it is)."""
    choice = getattr(args, "retention", "auto")
    if choice == "on":
        return ""
    if choice == "off":
        return "retention: not computed (--retention off)"
    chars = sum(len(m.text) for m in session.messages)
    if chars <= RETENTION_AUTO_CHARS:
        return ""
    return (f"retention: not computed for {chars / 1e6:,.0f} MB of session text (the automatic limit is "
            f"{RETENTION_AUTO_CHARS / 1e6:.0f} MB; --retention on computes it, about a second per 1.5 MB)")


#: Lost anchors listed in a --json document (its `lost_count` is the full count).
LOST_IN_JSON = 500


def plan_retention_of(plan: Plan, session: Session) -> Retention:
    """Which anchors of the session the plan still sends (engine/retention.py)."""
    from ..engine.retention import plan_retention

    return plan_retention(plan, session)


def timeline_retention_of(timeline: Timeline, ahead: AnchorsAhead | None = None) -> TimelineRetention:
    """Retention turn by turn; with `ahead` (started by `anchors_ahead`), the anchors a child process
    extracted while the replay ran, and the plans retention checks made before waiting for them."""
    from ..engine.retention_timeline import planned_views, timeline_retention

    if ahead is None:
        return timeline_retention(timeline)
    views = planned_views(timeline)  # needs no anchors: made while the child extracts them
    return timeline_retention(timeline, kept_index(ahead), views=views)


def kept_index(ahead: AnchorsAhead) -> AnchorIndex:
    """The index `ahead` holds, moved out of the collector's generations with everything older (the
    session, the replay), as `load_session` does with the session: the command ends soon after,
    nothing of it is freed before, and it holds no cycles. Left in the youngest generation, its
    100,000 objects were walked again by the collector's next passes (10,000 messages: those passes
    took 0.07 s of CPU, 0.03 s frozen). A process-wide decision, so made here, where `simulate`
    knows the process ends (`frozen_after`: paused from before the index is read until the freeze,
    so no pass walks the new objects in between)."""
    with frozen_after():
        return ahead.index()


def anchors_ahead(session: Session) -> AnchorsAhead:
    """Start extracting the session's anchors in a child process (engine/anchors_ahead.py: in this
    process when a fork cannot help); call before the replay, and `.close()` when done."""
    from ..engine.anchors_ahead import start

    return start(session)


def retention_text(retention: Retention) -> str:
    from ..io.text_summary import retention_summary

    return retention_summary(retention)


def timeline_retention_text(retention: TimelineRetention) -> str:
    from ..io.text_summary import timeline_retention_summary

    return timeline_retention_summary(retention)

