"""A compaction's label on the Timeline keeps off the data where it can: on a real Claude Code log
whose chart is zoomed to its data (the trigger and budget "above the chart"), the label
"compacted (manual) / 26,239 → 1,442 tokens" hung at the top of the chart, over the last calls
the provider reported and the tokens-sent line beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF  # noqa: E402

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
