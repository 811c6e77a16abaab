"""Every bar of the per-category chart keeps its name: pyqtgraph drops a tick label wider than its
room, and on a real Codex log at 1440x900 the fifth bar ("Outside the messages", what the plan
sends that is no message of the file) was drawn with no name under it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QImage, QPainter  # noqa: E402

from . import gui_windows  # noqa: E402

CODEX_LOG = Path(__file__).parent / "data" / "real" / "codex" / "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"


def drawn_tick_texts(axis) -> list[str]:  # type: ignore[no-untyped-def]
    """The tick labels pyqtgraph draws (it leaves out those that would not fit), one line each."""
    image = QImage(max(1, int(axis.width())), max(1, int(axis.height())), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [" ".join(text.split()) for _rect, _flags, text in specs[2]]


@pytest.mark.parametrize("size", [(1440, 900), (1024, 700)])
def test_every_category_bar_is_named_under_it(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    win = gui_windows.window_at(qtbot, tmp_path, size, CODEX_LOG)
    try:
        tabs = win.cards_tabs
        tabs.setCurrentIndex(tabs.indexOf(win.bars))
        qtbot.wait(100)
        bars = win.bars
        assert bars.isVisible()
        names = [" ".join(text.split()) for _, text in bars.getAxis("bottom")._tickLevels[0]]
        assert "Outside the messages" in names and len(names) == 5
        drawn = drawn_tick_texts(bars.getAxis("bottom"))
        assert drawn == names, (size, drawn, names)
        # And whole: every label's lines inside the axis (the second line was cut at its foot).
        axis = bars.getAxis("bottom")
        image = QImage(max(1, int(axis.width())), max(1, int(axis.height())), QImage.Format.Format_ARGB32)
        painter = QPainter(image)
        try:
            rects = [rect for rect, _flags, _text in axis.generateDrawSpecs(painter)[2]]
        finally:
            painter.end()
        assert all(rect.bottom() <= axis.height() + 1 for rect in rects), ([r.bottom() for r in rects], axis.height())
    finally:
        win.vm.shutdown()
