"""Before a session is open the overview welcomes: samples and recent files one click away."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from ctxviz.gui.main_window import MainWindow  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


def test_the_welcome_page_opens_a_sample_and_gives_way_to_the_overview(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.show()
    assert win.overview_stack.currentWidget() is win.welcome
    text = win.welcome.label.text()
    sample = SAMPLES / "coding_agent.yaml"
    assert f'href="{sample}"' in text and "Recent" not in text
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.welcome.label.linkActivated.emit(str(sample))
    assert win.overview_stack.currentIndex() == 1
    assert "coding_agent.yaml" in win.welcome.label.text().split("<h3>Recent</h3>", 1)[1]
    win.vm.shutdown()


def test_screenshots_take_a_size_and_a_bad_one_is_one_line(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QImage

    from ctxviz.cli import main

    out = tmp_path / "small.png"
    assert main(["gui", str(SAMPLES / "support_chat.yaml"), "--screenshot", str(out), "--size", "1280x720"]) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 720)  # nothing's minimum size pushes the window past a 720p screen
    small = tmp_path / "smaller.png"
    assert main(["gui", str(SAMPLES / "support_chat.yaml"), "--screenshot", str(small), "--size", "1024x700"]) == 0
    image = QImage(str(small))
    assert (image.width(), image.height()) == (1024, 700)  # the strip's legend wraps rather than widen the window
    assert main(["gui", "--screenshot", str(tmp_path / "x.png"), "--size", "huge"]) == 2
    assert "--size huge: expected WIDTHxHEIGHT" in capsys.readouterr().err


def test_the_strip_its_overview_and_legend_never_overlap_on_a_small_screen(open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(str(SAMPLES / "support_chat.yaml"))
    win.resize(1024, 700)
    QTest.qWait(100)
    strip, overview, legend = win.strip.geometry(), win.strip_overview.geometry(), win.strip_legend.geometry()
    assert strip.bottom() < overview.top() and overview.bottom() < legend.top()
    assert win.strip.getAxis("bottom").sceneBoundingRect().bottom() <= win.strip.height()
