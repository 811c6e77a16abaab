"""A real agent's log in a small window (issue 24: "At 10,000 messages and at 1024x700"), the
report's fill figure, and the strip's Shift+drag done with the mouse.

The samples kept more than four table rows at 1024x700, but a real Claude Code log (the provider's
fill, the lost card and the next-compaction card above the charts) left three; at 1280x720 the
"why" answer of its #0 was below the detail panel's fold."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QMouseEvent, QTextDocument  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from ctxviz.engine.fill import fill  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.ranges import range_summary  # noqa: E402
from ctxviz.gui.main_window import MainWindow  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

from . import gui_windows  # noqa: E402

REAL = Path(__file__).parent / "data" / "real" / "claude_code"
#: A real Claude Code log with a recorded compaction: the provider's usage, a lost card and a forecast.
CLAUDE_LOG = REAL / "tugtool-compact-native.jsonl"
SUPPORT = Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml"


def window_at(qtbot, tmp_path, size, path=CLAUDE_LOG):  # type: ignore[no-untyped-def]
    return gui_windows.window_at(qtbot, tmp_path, size, path)


def rows_shown(win: MainWindow) -> float:
    return win.table.viewport().height() / win.table.verticalHeader().defaultSectionSize()


def test_at_1024x700_a_real_claude_code_log_keeps_eight_table_rows_and_its_lost_headline(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1024, 700))
    try:
        assert win.width() == 1024 and win.height() == 700
        assert win.lost_card.found is not None and not win.lost_card.found.nothing
        assert not win.next_card.isHidden(), "the forecast card is part of the picture this test is about"
        assert rows_shown(win) >= 8, f"{rows_shown(win):.1f} rows"
        # The cards are still shown, the red headline of what was lost in full view, not scrolled away.
        card = win.lost_card
        assert card.isVisible() and card.height() >= card.fontMetrics().lineSpacing() * 2
        top_left = card.label.mapTo(win, QPoint(0, 0))
        assert 0 <= top_left.y() and top_left.y() + card.fontMetrics().lineSpacing() <= win.table.mapTo(win, QPoint(0, 0)).y()
        # The next compaction, the fill and notes, and the per-category bars are each one click away, not gone.
        tabs = win.cards_tabs
        for widget in (win.next_card, win.notes_panel, win.bars):
            index = next(i for i in range(tabs.count()) if tabs.widget(i).isAncestorOf(widget) or tabs.widget(i) is widget)
            assert tabs.isTabVisible(index)
            tabs.setCurrentIndex(index)
            assert widget.isVisible()
    finally:
        win.vm.shutdown()


def test_a_tall_window_keeps_the_cards_above_the_charts_and_the_bars_beside_the_donut(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1920, 1080))
    try:
        assert win.bars.isVisible() and win.lost_card.isVisible()
        assert win.lost_card.mapTo(win, QPoint(0, 0)).y() < win.pie.mapTo(win, QPoint(0, 0)).y()
        assert rows_shown(win) >= 10
        # Made short, then tall again: the layout follows, and nothing is lost on the way.
        win.resize(1024, 700)
        qtbot.waitUntil(lambda: rows_shown(win) >= 8, timeout=5000)
        win.resize(1920, 1080)
        qtbot.waitUntil(lambda: win.bars.isVisible() and win.lost_card.mapTo(win, QPoint(0, 0)).y() < win.pie.mapTo(win, QPoint(0, 0)).y(),
                        timeout=5000)
    finally:
        win.vm.shutdown()


def test_at_1280x720_the_why_answer_of_the_real_logs_first_message_is_in_view(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1280, 720))
    try:
        assert not win.vm.plan.messages[0].sent
        win.select_message(0)
        qtbot.waitUntil(lambda: "What would keep it" in win.detail_text(), timeout=60000)
        qtbot.wait(50)
        head = win.detail_head
        viewport = head.parentWidget()
        doc = QTextDocument()
        doc.setDefaultFont(head.font())
        doc.setHtml(head.text().split("What would keep it")[0])
        doc.setTextWidth(head.width())
        # The answer's first line is inside the visible head, with nothing to scroll.
        assert doc.size().height() + head.fontMetrics().height() <= viewport.height()
        assert win.width() == 1280 and win.height() == 720
    finally:
        win.vm.shutdown()


def test_the_report_quotes_the_one_fill_figure_the_app_shows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The HTML report says what the overview says: the figure to quote with the others beside it,
    never a second wording of the provider's figure."""
    from ctxviz.gui.report import render_html

    session = load_session(str(CLAUDE_LOG))
    plan = plan_session(session, "claude-code", None, None, None, None)
    assert plan.reported is not None
    page = render_html(session, plan, b"")
    import html

    assert html.escape(fill(plan, session).sentence()) in page
    assert "Reported by the provider" not in page


def press(widget, kind, pos: QPointF, buttons, modifiers) -> None:  # type: ignore[no-untyped-def]
    button = Qt.MouseButton.LeftButton if kind != QEvent.Type.MouseMove else Qt.MouseButton.NoButton
    event = QMouseEvent(kind, pos, widget.mapToGlobal(pos), button, buttons, modifiers)
    QApplication.sendEvent(widget, event)


def test_shift_drag_on_the_strip_with_the_mouse_sums_up_the_span(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Press with Shift, move, release, as a user does: the span is selected and summed up under
    the strip (the same figures as the engine's range summary)."""
    win = window_at(qtbot, tmp_path, (1280, 900), SUPPORT)
    try:
        win.zoom_all()
        qtbot.wait(50)
        strip, viewport = win.strip, win.strip.viewport()
        y = viewport.height() * 0.45
        start, end = QPointF(viewport.width() * 0.30, y), QPointF(viewport.width() * 0.55, y)
        shift, left = Qt.KeyboardModifier.ShiftModifier, Qt.MouseButton.LeftButton
        press(viewport, QEvent.Type.MouseButtonPress, start, left, shift)
        for step in range(1, 11):
            point = start + (end - start) * (step / 10)
            press(viewport, QEvent.Type.MouseMove, point, left, shift)
            qtbot.wait(5)
        press(viewport, QEvent.Type.MouseButtonRelease, end, Qt.MouseButton.NoButton, shift)
        qtbot.waitUntil(lambda: strip.selected_range is not None, timeout=3000)
        first, last = strip.selected_range
        n = len(win.shown_plan.messages)
        assert 0 < first < last < n - 1, (first, last, n)
        assert win.range_label.isVisible()
        summary = range_summary(win.shown_plan, win.shown_session, first, last)
        assert summary.sentence() in win.range_label.text()
        # A plain drag (no Shift) pans: it selects nothing new.
        win.strip.clear_range()
        press(viewport, QEvent.Type.MouseButtonPress, start, left, Qt.KeyboardModifier.NoModifier)
        for step in range(1, 6):
            press(viewport, QEvent.Type.MouseMove, start + (end - start) * (step / 5), left, Qt.KeyboardModifier.NoModifier)
        press(viewport, QEvent.Type.MouseButtonRelease, end, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
        qtbot.wait(50)
        assert strip.selected_range is None and not win.range_label.isVisible()
    finally:
        win.vm.shutdown()
