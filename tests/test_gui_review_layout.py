"""The layout defects a review of the app found, each measured in the window as it lays out: the
Timeline's x axis's words inside the chart at 720 pixels, the Overview's table with usable rows
on a real Codex log, the welcome page whole at 1024x700, and the Timeline's lines and labels
distinguishable where they meet."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402

from . import gui_windows  # noqa: E402

ROOT = Path(__file__).parent.parent
SAMPLES = ROOT / "sample_sessions"
REAL = Path(__file__).parent / "data" / "real"


def text_rect(label) -> QRectF:  # type: ignore[no-untyped-def]
    """A QGraphicsTextItem's text in scene coordinates: its bounding rect less the document's margin
    (the blank border Qt keeps around the text, which pyqtgraph's axis lets hang past its edge)."""
    margin = label.document().documentMargin()
    return label.mapRectToScene(label.boundingRect().adjusted(margin, margin, -margin, -margin))


@pytest.mark.parametrize("size", [(1024, 700), (1280, 720), (1920, 1080)])
def test_the_timelines_x_axis_title_is_inside_the_chart(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    """At 1280x720 the legend beside the chart (eleven entries for Codex's sample, from the view's
    row down) was taller than the view and the bottom axis: the chart's layout grew past its widget
    and "message index (a point per model call)" was cut at the bottom edge."""
    win = gui_windows.window_at(qtbot, tmp_path, size, SAMPLES / "codex_rollout.jsonl")
    try:
        with qtbot.waitSignal(win.vm.timelineReady, timeout=120000):
            win.tabs.setCurrentIndex(1)
        view = win.timeline
        qtbot.waitUntil(lambda: len(view.band_samples) >= 4, timeout=60000)  # the composition's legend entries too
        qtbot.wait(200)
        axis = view.plot.getAxis("bottom")
        assert axis.labelText.startswith("message index")
        words = text_rect(axis.label)
        assert words.top() >= 0 and words.bottom() <= view.plot.height(), (words, view.plot.height())
        assert words.left() >= 0 and words.right() <= view.plot.width()
        item = view.plot.getPlotItem()
        assert item.geometry().height() <= view.plot.height()  # the chart's layout no taller than its widget
        assert item.vb.height() >= 120
        assert win.width() == size[0] and win.height() == size[1]
    finally:
        win.vm.shutdown()


CODEX_LOG = REAL / "codex" / "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"


@pytest.mark.parametrize("size", [(1400, 900), (1400, 1000), (1280, 720), (1024, 700)])
def test_a_real_codex_log_leaves_the_overview_table_eight_rows(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    """At 1400x900 the largest real Codex rollout's three cards above the charts (the fill, what
    was lost, the next compaction: 386 pixels) left the table 1.6 rows under the donut and the
    strip; at 1400x1000 its cards, a quarter of the window each, left it four."""
    win = gui_windows.window_at(qtbot, tmp_path, size, CODEX_LOG)
    try:
        qtbot.waitUntil(lambda: win.next_card.forecast is not None, timeout=30000)
        qtbot.wait(100)
        table = win.table
        rows = table.viewport().height() / table.verticalHeader().defaultSectionSize()
        assert rows >= 8, f"{rows:.1f} rows"
        # What was lost is still in view, above the charts or in the first tab beside the donut.
        assert win.lost_card.isVisible() and win.lost_card.height() >= 2 * win.lost_card.fontMetrics().lineSpacing()
        assert win.width() == size[0] and win.height() == size[1]
    finally:
        win.vm.shutdown()


def test_the_table_keeps_its_eight_rows_as_the_window_is_resized(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Made taller, the window gave the cards more room, and the splitter gave the donut and the
    strip what the cards left: from 1400x900 to 1400x1000 the table went from 8 rows to 5.8."""
    win = gui_windows.window_at(qtbot, tmp_path, (1920, 1080), CODEX_LOG)
    try:
        qtbot.waitUntil(lambda: win.next_card.forecast is not None, timeout=30000)
        for size in [(1400, 900), (1400, 1000), (1920, 1080), (1024, 700), (1400, 900), (1400, 1000)]:
            win.resize(*size)
            qtbot.wait(200)
            rows = win.table.viewport().height() / win.table.verticalHeader().defaultSectionSize()
            assert rows >= 8, (size, f"{rows:.1f} rows")
    finally:
        win.vm.shutdown()


@pytest.mark.parametrize("size", [(1024, 700), (1280, 720)])
def test_the_welcome_page_is_whole_and_leaves_the_session_browser_room(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    """At 1024x700 the welcome page cut its last line ("Keys: ... Ctrl+Z undo a parameter change")
    in half and left the list of the machine's sessions 157 pixels; its Session column, stretched
    into what the other columns left, was 26 pixels wide ("essi")."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QLabel

    from ctxviz.gui.main_window import MainWindow

    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    try:
        qtbot.waitUntil(lambda: win.browser.isVisible(), timeout=10000)
        qtbot.wait(200)
        label = win.welcome.label
        # The same text wrapped to the same width, in a label of its own: the height it needs.
        probe = QLabel()
        probe.setTextFormat(label.textFormat())
        probe.setWordWrap(True)
        probe.setFont(label.font())
        probe.setText(label.text())
        assert "Ctrl+Z" in label.text()
        assert label.height() >= probe.heightForWidth(label.width()), (label.height(), probe.heightForWidth(label.width()))
        table = win.browser.table
        assert table.viewport().height() >= 200
        assert table.horizontalHeader().sectionSize(0) >= 150
        assert win.width() == size[0] and win.height() == size[1]
    finally:
        win.vm.shutdown()


def level_ys(view) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The scene heights of the tokens chart's level lines: the budget and the trigger."""
    from PySide6.QtCore import QPointF

    vb = view.plot.getPlotItem().vb
    timeline = view.timeline
    levels = {"budget": float(timeline.turns[-1].budget)}
    if view._trigger_drawn is not None:
        levels["trigger"] = float(view._trigger_drawn)
    return {name: vb.mapViewToScene(QPointF(0, y)).y() for name, y in levels.items()}


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_the_not_sent_line_never_lies_on_the_budget_line(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    """Claude Code's sample: after its compaction the tokens not sent stay at their peak, and both
    axes had the same headroom, so that plateau (a black dashed line) lay exactly on the budget's
    grey dashed line."""
    from PySide6.QtCore import QPointF

    win = gui_windows.window_at(qtbot, tmp_path, size, SAMPLES / "claude_code_compaction.jsonl")
    try:
        with qtbot.waitSignal(win.vm.timelineReady, timeout=120000):
            win.tabs.setCurrentIndex(1)
        qtbot.wait(200)
        view = win.timeline
        peak = max(t.not_sent for t in view.timeline.turns)
        plateau = view.not_sent_box.mapViewToScene(QPointF(0, peak)).y()
        box = view.plot.getPlotItem().vb.sceneBoundingRect()
        assert box.top() <= plateau <= box.bottom()
        for name, y in level_ys(view).items():
            assert abs(plateau - y) >= 8, (name, plateau, y)
    finally:
        win.vm.shutdown()


@pytest.mark.parametrize("size", [(1920, 1080), (1280, 720)])
def test_a_compaction_label_keeps_clear_of_the_trigger_and_budget_lines(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    """The real Codex rollout with a local compaction: the trigger line (244,800 tokens) ran
    through its label, "compacted (auto) / 209,950 tokens"."""
    win = gui_windows.timeline_at(qtbot, tmp_path, size, CODEX_LOG)
    try:
        view = win.timeline
        assert view.compaction_marks and view._trigger_drawn is not None
        box = view.plot.getPlotItem().vb.sceneBoundingRect()
        for _c, line, _tick in view.compaction_marks:
            rect = line.label.sceneBoundingRect()
            assert box.contains(rect), (rect, box)
            for name, y in level_ys(view).items():
                assert not rect.top() - 1 <= y <= rect.bottom() + 1, (name, y, rect)
    finally:
        win.vm.shutdown()
