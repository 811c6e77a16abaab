"""A parameter change at 10,000 messages is drawn within a frame (issue 22): the status line and the
strip's tail line, held to what they showed before.

The status line is re-written on every re-plan. A QLabel's new text asks its parent for a layout,
and a status bar answers that by laying itself out and repainting all of itself (the notes' count,
the size grip) in a paint pass of its own. A one-line status replacing a one-line status is only
drawn anew. The protected tail's line is found among the zone codes by numpy, not by walking
10,000 zones in Python."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ctxviz.engine.policies import get_policy, policy_names  # noqa: E402
from ctxviz.gui.status import SEPARATOR  # noqa: E402
from ctxviz.gui.widgets.message_strip import PROTECTED_ZONES, first_in_zones  # noqa: E402

from .hypothesis_budget import examples  # noqa: E402
from .test_gui_replan_frame import _LayoutRequests  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = str(ROOT / "sample_sessions" / "support_chat.yaml")


def test_a_replans_status_line_is_drawn_anew_without_laying_the_status_bar_out(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    status, bar = win.status_label, win.statusBar()
    # The real count filled in, and its progress bar hidden 300 ms later (a layout of the bar's own).
    qtbot.waitUntil(lambda: win.vm.plan.real is not None, timeout=30000)
    qtbot.wait(400)
    qtbot.waitUntil(lambda: not win.progress_bar.isVisible(), timeout=5000)
    qtbot.wait(100)
    watcher = _LayoutRequests()
    bar.installEventFilter(watcher)
    painted: list[str] = []
    paint = status.paintEvent
    status.paintEvent = lambda event: (painted.append(status.shown_text()), paint(event))  # type: ignore[method-assign]
    before = status.text()
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.params.editors["total"][1].setValue(win.vm.params.total // 2)
    plan = win.vm.plan
    painted.clear()  # (a paint of the old status on the way)
    qtbot.waitUntil(lambda: bool(painted), timeout=5000)
    bar.removeEventFilter(watcher)
    # The new plan's status, whole in `text()` and for a screen reader, drawn as it fits...
    assert status.text() != before and status.text().split(SEPARATOR)[0].startswith("missy budget: ")
    assert f"{plan.totals.used:,} of {plan.totals.budget:,} tokens" in status.text()
    assert status.accessibleName() == status.text() and painted[-1] == status.shown_text()
    assert status.shown_text() in (status.text(), *status.shorter) or status.shown_text().endswith("…")
    # ...and the status bar was not laid out again for it (the old code asked on every re-plan).
    assert watcher.seen == 0


def test_a_status_of_other_lines_is_laid_out_and_a_wider_window_shows_more_of_it(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QLabel, QMainWindow, QSizePolicy

    from ctxviz.gui.safe import FittingLabel

    window = QMainWindow()
    qtbot.addWidget(window)
    label = FittingLabel("first", SEPARATOR)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    window.statusBar().addWidget(label, 1)
    window.resize(300, 200)
    window.show()
    qtbot.wait(20)
    whole = SEPARATOR.join(f"part {i} of the status" for i in range(12))
    label.set_texts(whole, "part 0 of the status")
    assert label.text() == whole and QLabel.text(label) == "first"  # one line for another: the layout keeps its line
    assert label.shown_text() == "part 0 of the status" and label.toolTip()  # the shorter wording, the whole in the tip
    window.resize(3000, 200)
    qtbot.waitUntil(lambda: label.width() > 2000, timeout=5000)
    assert label.shown_text() == whole and not label.toolTip()
    label.setText("two\nlines")  # a text of another height: QLabel's own, so the bar makes room for it
    assert QLabel.text(label) == "two\nlines" == label.text() and label.accessibleName() == ""
    label.setText("one line again")
    assert QLabel.text(label) == "one line again" == label.text()


def _reference(plan) -> int | None:  # type: ignore[no-untyped-def]
    zones = plan.columns.zone
    return min((zones.index(z) for z in PROTECTED_ZONES if z in zones), default=None)


@settings(max_examples=examples(40), deadline=None)
@given(policy=st.sampled_from(sorted(policy_names())), share=st.floats(0.05, 1.5), size=st.sampled_from([1, 7, 60, 400]), seed=st.integers(0, 5))
def test_the_tail_line_stands_before_the_first_protected_message(policy: str, share: float, size: int, seed: int) -> None:
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_engine import agent_session
    from hypothesis import assume

    from ctxviz.engine.checks import PlanOptions
    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.planner import plan_session

    session = agent_session(size, seed)
    params = get_policy(policy).default_params()
    if hasattr(params, "total"):
        try:  # (the parameters check themselves as they are made: a budget under missy's reserves raises ValueError)
            params = dataclasses.replace(params, total=max(1, int(params.total * share)))
        except ValueError:
            assume(False)
    plan = plan_session(session, policy, params, None, CountStore(), None, PlanOptions())
    assert first_in_zones(plan, PROTECTED_ZONES) == _reference(plan)
    assert first_in_zones(plan, ("no such zone",)) is None


def _summarised_span(plan) -> tuple[int, int] | None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.plan import Decision

    hits = [m.index for m in plan.messages if m.decision is Decision.SUMMARIZED]
    return (hits[0], hits[-1]) if hits else None


@settings(max_examples=examples(12), deadline=None)
@given(policy=st.sampled_from(["llamaindex-chat-summary-memory-buffer", "missy-consolidator", "openhands-llm-summarizing", "missy", "langchain-trim"]),
       share=st.floats(0.05, 1.2), size=st.sampled_from([7, 60, 300]))
def test_the_strips_summarised_span_and_truncated_fill_follow_the_plans_decisions(qapp, policy: str, share: float, size: int) -> None:  # type: ignore[no-untyped-def]
    """The summarised span's marker covers the first to the last summarised message, and only
    truncated messages are drawn part-filled (both read from the plan's decision numbers)."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_engine import agent_session
    from hypothesis import assume

    from ctxviz.engine.checks import PlanOptions
    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.plan import Decision
    from ctxviz.engine.planner import plan_session
    from ctxviz.errors import CtxvizError
    from ctxviz.gui.widgets.message_strip import MessageStrip

    session = agent_session(size)
    params = get_policy(policy).default_params()
    total = next((name for name in ("total", "token_limit", "max_tokens", "context_window") if isinstance(getattr(params, name, None), int)), None)
    try:
        if total is not None:  # (the parameters check themselves as they are made: missy's reserves raise ValueError)
            params = dataclasses.replace(params, **{total: max(1, int(getattr(params, total) * share))})
        plan = plan_session(session, policy, params, None, CountStore(), None, PlanOptions())
    except (CtxvizError, ValueError):  # (a budget below the policy's own reserves)
        assume(False)
    strip = MessageStrip()
    strip.set_plan(session, plan)
    strip.deleteLater()
    span = _summarised_span(plan)
    assert strip.summary_region.isVisible() == (span is not None) == strip.summary_label.isVisible()
    if span is not None:
        first, last = span
        item = strip.item
        assert strip.summary_region.getRegion() == (float(item.starts[first]), float(item.starts[last]) + float(item.widths[last]))
    truncated = [m.index for m in plan.messages if m.decision is Decision.TRUNCATED]
    sent = [m.sent_tokens for m in plan.messages]
    tokens = [m.tokens for m in plan.messages]
    expected = [min(1.0, s / max(t, 1)) if truncated and t > 0 else 1.0 for s, t in zip(sent, tokens, strict=True)]
    assert strip.item.fractions.tolist() == pytest.approx(expected)
