"""Issue 24's last layout points, each measured in the window as it lays out: the next-compaction
card on a tall window, whole words at 1024x700, "What would keep it" in view, the Timeline tab at
720 pixels, and no empty code fence in the Context tab."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, QSettings  # noqa: E402

from ctxviz.gui.main_window import MainWindow  # noqa: E402

REAL = Path(__file__).parent / "data" / "real"
#: A real Claude Code log with a recorded compaction: the provider's usage, a lost card and a forecast.
CLAUDE_LOG = REAL / "claude_code" / "tugtool-compact-native.jsonl"


def window_at(qtbot, tmp_path, size, path=CLAUDE_LOG):  # type: ignore[no-untyped-def]
    win = MainWindow(settings=QSettings(str(tmp_path / f"s{size[0]}x{size[1]}.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.open_path(str(path))
    settle(qtbot, win)
    return win


def settle(qtbot, win) -> None:  # type: ignore[no-untyped-def]
    """The real count, the retention and the forecast fill the cards in after the first plan."""
    for _ in range(3):
        win.vm.wait(30)
        qtbot.wait(50)
    qtbot.waitUntil(lambda: not win.live.forecast_pending(), timeout=30000)
    win.vm.wait(30)


def test_at_1920x1080_the_next_compaction_card_shows_all_of_its_text(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1920, 1080))
    try:
        card = win.next_card
        assert not win.cards_beside
        qtbot.waitUntil(lambda: card.forecast is not None and card.isVisible(), timeout=30000)
        scroll = card.scroll
        # Laid out: the card as tall as its wrapped text (it was capped at 118 pixels and scrolled).
        qtbot.waitUntil(lambda: scroll.verticalScrollBar().maximum() == 0, timeout=5000)
        assert not scroll.verticalScrollBar().isVisible()
        assert scroll.widget().heightForWidth(scroll.viewport().width()) <= scroll.viewport().height()
        assert card.height() > 118, "the forecast of this log is longer than the old cap"
        # Within its quarter of the window, and the charts keep their place below it.
        assert card.height() <= win.height() // 4
        assert card.mapTo(win, QPoint(0, 0)).y() + card.height() <= win.pie.mapTo(win, QPoint(0, 0)).y()
    finally:
        win.vm.shutdown()
