"""The app's main window opened on a file at a given size, as the layout tests need it: shown,
planned, and (unless told not to) settled, with the real count, the retention and the forecast
filled in after the first plan. One place, so that every layout test measures the same window."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

from ctxviz.gui.main_window import MainWindow


def window_at(qtbot, tmp_path: Path, size: tuple[int, int], path: Path | str, *, settled: bool = True) -> MainWindow:  # type: ignore[no-untyped-def]
    """A window of `size` on `path`, with settings of its own (nothing a developer's app saved)."""
    win = MainWindow(settings=QSettings(str(tmp_path / f"s{size[0]}x{size[1]}.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.open_path(str(path))
    if settled:
        settle(qtbot, win)
    else:
        qtbot.wait(100)
    return win


def settle(qtbot, win: MainWindow) -> None:  # type: ignore[no-untyped-def]
    """Wait for what fills the cards in after the first plan: the real count, the retention, the forecast."""
    for _ in range(3):
        win.vm.wait(30)
        qtbot.wait(150)
    qtbot.waitUntil(lambda: not win.live.forecast_pending(), timeout=30000)
    win.vm.wait(30)
    qtbot.wait(50)


def timeline_at(qtbot, tmp_path: Path, size: tuple[int, int], path: Path | str) -> MainWindow:  # type: ignore[no-untyped-def]
    """`window_at`, on its Timeline tab once the replay is drawn."""
    win = window_at(qtbot, tmp_path, size, path)
    with qtbot.waitSignal(win.vm.timelineReady, timeout=120000):
        win.tabs.setCurrentIndex(1)
    qtbot.wait(300)
    return win
