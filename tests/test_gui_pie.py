"""The budget donut is honest about a plan that does not fit: its centre figures turn red."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QColor  # noqa: E402

from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.gui.theme import WARNING  # noqa: E402
from ctxviz.gui.widgets.budget_pie import BudgetPie  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"


def red_pixels_in_the_centre(qtbot, plan) -> int:  # type: ignore[no-untyped-def]
    pie = BudgetPie()
    qtbot.addWidget(pie)
    pie.resize(700, 260)
    pie.set_plan(plan)
    image = pie.grab().toImage()
    # the donut is the square on the left; its hole holds the figures
    side = min(image.width(), image.height())
    cx, cy, r = side // 2, image.height() // 2, side // 6
    warning = QColor(WARNING)
    count = 0
    for x in range(cx - r, cx + r):
        for y in range(cy - r, cy + r):
            c = image.pixelColor(x, y)
            if abs(c.red() - warning.red()) + abs(c.green() - warning.green()) + abs(c.blue() - warning.blue()) < 60:
                count += 1
    return count


def test_the_centre_is_red_only_when_the_plan_does_not_fit(qtbot) -> None:  # type: ignore[no-untyped-def]
    session = load_session(str(SAMPLE))
    store = CountStore()
    fits = plan_session(session, "missy", store=store)
    over = plan_session(session, "missy", {"total": 12000, "system_reserve": 500, "tool_definitions_reserve": 500}, store=store)
    assert fits.totals.fits and not over.totals.fits
    assert red_pixels_in_the_centre(qtbot, fits) == 0
    assert red_pixels_in_the_centre(qtbot, over) > 30


def test_the_real_count_stands_beside_the_policys_figure(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    """With the real count on (the default), the donut's legend says it once the worker has counted."""
    win = open_window(str(SAMPLE))
    qtbot.waitUntil(lambda: win.vm.plan is not None and win.vm.plan.real is not None and win.pie.real is not None, timeout=30000)
    real = win.vm.plan.real
    line = next(line for line in win.pie.legend_lines() if "count:" in line)
    assert f"{real.tokens:,}" in line and real.encoding in line and line.startswith("real count" if real.exact else "est. count")
    assert win.pie.legend_lines()[0].startswith("System reserve")  # the policy's own parts still come first
    win.real_box.setChecked(False)
    qtbot.waitUntil(lambda: win.pie.real is None, timeout=30000)
    assert not any("count:" in line for line in win.pie.legend_lines())


def test_allotments_past_the_budget_are_said_not_shown_as_free_space(qtbot) -> None:  # type: ignore[no-untyped-def]
    session = load_session(str(SAMPLE))
    over = plan_session(session, "missy", {"memory_fraction": 0.9, "learnings_fraction": 0.5}, store=CountStore())
    assert not over.totals.fits and over.allocation["history"] < 0
    pie = BudgetPie()
    qtbot.addWidget(pie)
    pie.resize(700, 260)
    pie.set_plan(over)
    lines = pie.legend_lines()
    allotted = sum(v for v in over.allocation.values() if v > 0)
    # "Free space 22,006 of 30,000 (73 %)" stood beside "does not fit", nothing saying why.
    assert not any(line.startswith("Free space") for line in lines)
    assert f"the allotments add up to {allotted:,}, over the budget by {allotted - over.totals.budget:,}" in lines
    fits = plan_session(session, "missy", store=CountStore())
    pie.set_plan(fits)
    assert any(line.startswith("Free space") for line in pie.legend_lines())
    assert not any("allotments add up" in line for line in pie.legend_lines())


def test_the_real_count_from_usage_is_the_status_bars(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    """Where the log reports the provider's usage, the legend gives the count the status bar gives
    (reported usage plus what follows), not the o200k estimate that read 12 % under it."""
    log = Path(__file__).parent.parent / "sample_sessions" / "claude_code_compaction.jsonl"
    win = open_window(str(log))
    qtbot.waitUntil(lambda: win.vm.plan is not None and win.vm.plan.real is not None and win.pie.real is not None, timeout=30000)
    real = win.vm.plan.real
    assert real.from_usage is not None and real.reference != real.tokens
    line = next(line for line in win.pie.legend_lines() if "count:" in line)
    assert line.startswith(f"real count: {real.reference:,}") and "from usage" in line
