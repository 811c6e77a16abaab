"""The detail panel beside the table on a small window: at 1024x700 the table's filters (three
choices, the search box, "By reason" and the count, about 600 pixels) took the Overview's lower
half and left the panel showing the selected message 157 pixels, a word a line. The filters now
span the table and the panel, and the panel keeps a readable width."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, QRect  # noqa: E402

from ctxviz.gui.window.overview import DETAIL_LEAST  # noqa: E402

from . import gui_windows  # noqa: E402

CLAUDE_LOG = Path(__file__).parent / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"


def rect_in(win, widget) -> QRect:  # type: ignore[no-untyped-def]
    return QRect(widget.mapTo(win, QPoint(0, 0)), widget.size())


@pytest.mark.parametrize("size", [(1024, 700), (1280, 720)])
def test_the_detail_panel_is_readable_and_no_filter_is_clipped(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    win = gui_windows.window_at(qtbot, tmp_path, size, CLAUDE_LOG)
    try:
        win.select_message(0)
        qtbot.wait(50)
        assert win.width() == size[0] and win.height() == size[1]
        assert DETAIL_LEAST >= 280
        panel = win.table_splitter.widget(1)
        assert panel.width() >= DETAIL_LEAST, panel.width()
        assert win.detail.width() >= DETAIL_LEAST and win.detail_head.width() >= DETAIL_LEAST - 20
        # The head's first line (the message's number, role and category) on one or two lines, not a word a line.
        lines = win.detail_head.heightForWidth(win.detail_head.width()) / win.detail_head.fontMetrics().lineSpacing()
        words = len(win.detail_text().split())
        assert lines < words / 3, (lines, words)
        tabs = rect_in(win, win.tabs)
        for control in (win.role_filter, win.decision_filter, win.reason_filter, win.group_button, win.count_label):
            assert control.isVisible()
            assert control.width() >= control.sizeHint().width(), (control, control.width(), control.sizeHint().width())
            assert tabs.contains(rect_in(win, control)), (control, rect_in(win, control), tabs)
        assert win.search.width() >= win.search.minimumWidth() > 100
        assert tabs.contains(rect_in(win, win.search))
        # The filters no longer squeeze the table's neighbour: they sit above both.
        assert rect_in(win, win.filter_row).bottom() < rect_in(win, panel).top()
        # And the table keeps its eight rows at the smallest size (tests/test_gui_small_windows.py).
        assert win.table.viewport().height() / win.table.verticalHeader().defaultSectionSize() >= 8
    finally:
        win.vm.shutdown()


CODEX_LOG = Path(__file__).parent / "data" / "real" / "codex" / "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"


@pytest.mark.parametrize("path", [CLAUDE_LOG, CODEX_LOG], ids=lambda p: p.parent.name)
def test_at_1024x700_the_table_beside_the_panel_shows_each_decision_whole(qtbot, tmp_path, path) -> None:  # type: ignore[no-untyped-def]
    """The category column's fixed 112 pixels pushed the decision past the table's edge
    ("summarisec") once the panel kept its width; it is as wide as its longest name and swatch."""
    win = gui_windows.window_at(qtbot, tmp_path, (1024, 700), path)
    try:
        table, plan = win.table, win.vm.plan
        metrics = table.fontMetrics()
        decisions = {win.model.data(win.model.index(r, 6)) for r in range(win.model.rowCount())}
        assert table.columnWidth(6) >= max(metrics.horizontalAdvance(d) for d in decisions) + 6
        assert table.columnViewportPosition(6) + table.columnWidth(6) <= table.viewport().width()
        labels = {win.model.data(win.model.index(r, 3)) for r in range(win.model.rowCount())}
        assert table.columnWidth(3) >= max(metrics.horizontalAdvance(t) for t in labels) + 20, (labels, table.columnWidth(3))
        assert len(plan.messages) == win.model.rowCount()
    finally:
        win.vm.shutdown()
