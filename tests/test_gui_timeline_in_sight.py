"""What the Timeline draws stays in sight. A compaction's label keeps off the data where it can:
on a real Claude Code log whose chart is zoomed to its data (the trigger and budget "above the
chart"), the label "compacted (manual) / 26,239 → 1,442 tokens" hung at the top of the chart,
over the last calls the provider reported and the tokens-sent line beside them. And the user
instructions' retention line shows where it lies on the anchors' line."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF, Qt  # noqa: E402

from . import gui_windows  # noqa: E402

CLAUDE_LOG = Path(__file__).parent / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"


@pytest.mark.parametrize("size", [(1024, 700), (1440, 900)])
def test_a_compaction_label_covers_no_point_of_the_data(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    win = gui_windows.timeline_at(qtbot, tmp_path, size, CLAUDE_LOG)
    try:
        view = win.timeline
        vb = view.plot.getPlotItem().vb
        assert view.compaction_marks
        series = {item.name(): item for item in view.plot.getPlotItem().listDataItems() if item.name()}
        points = []
        for name in ("tokens sent", "reported by the provider"):
            xs, ys = series[name].getData()
            points += [vb.mapViewToScene(QPointF(float(x), float(y))) for x, y in zip(xs, ys, strict=True)]
        assert len(points) > 10
        box = vb.sceneBoundingRect()
        for _c, line, _tick in view.compaction_marks:
            rect = line.label.sceneBoundingRect()
            assert box.contains(rect), (rect, box)
            covered = [(p.x(), p.y()) for p in points if rect.contains(p)]
            assert not covered, (rect, covered)
    finally:
        win.vm.shutdown()


GEMINI_LOG = Path(__file__).parent / "data" / "real" / "gemini_cli" / "aim_matrix_pro.migrated.jsonl"


def test_the_instructions_line_shows_where_it_lies_on_the_anchors_line(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A real Gemini CLI log keeps all its anchors and its one instruction: both retention lines lie
    at 100 %, and the instructions' 1-pixel dashes were lost in the anchors' 2-pixel line while
    the legend named them. Drawn after it, dashed, at least as thick: the dashes show over it."""
    win = gui_windows.timeline_at(qtbot, tmp_path, (1440, 900), GEMINI_LOG)
    try:
        view = win.timeline
        qtbot.waitUntil(lambda: any(item.name() == "user instructions still sent" for item in view.answers_plot.listDataItems()), timeout=60000)
        items = view.answers_plot.listDataItems()
        names = [item.name() for item in items]
        anchors = items[names.index("anchors still sent (retention)")]
        instructions = items[names.index("user instructions still sent")]
        assert list(anchors.getData()[1])[-1] == list(instructions.getData()[1])[-1] == 100  # the case: one on the other
        assert names.index("user instructions still sent") > names.index("anchors still sent (retention)")  # drawn over it
        pen, under = instructions.opts["pen"], anchors.opts["pen"]
        assert pen.style() == Qt.PenStyle.DashLine and pen.widthF() >= under.widthF(), (pen.widthF(), under.widthF())
    finally:
        win.vm.shutdown()

