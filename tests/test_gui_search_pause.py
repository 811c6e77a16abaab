"""In a long session the search waits for a pause in typing: each keystroke filtered the whole
plan on the GUI thread (about 0.2 s at 46,000 messages). A short session filters at once."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from ctxviz.gui.window.plan_table import SEARCH_PAUSE_ROWS  # noqa: E402

SAMPLE = Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml"


def _spy(win) -> list[str]:  # type: ignore[no-untyped-def]
    calls: list[str] = []
    real = win.model.set_filters

    def spy(**kwargs):  # type: ignore[no-untyped-def]
        if "search" in kwargs or kwargs.get("search") is not None:
            calls.append(kwargs.get("search"))
        return real(**kwargs)

    win.model.set_filters = spy
    return calls


def _long_session(path: Path) -> None:
    words = "deploy the service then check error logs for the value".split()
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(words[(i + k) % len(words)] for k in range(8)) + f" step {i}"}
                for i in range(SEARCH_PAUSE_ROWS + 200)]
    path.write_text(yaml.safe_dump({"ctxviz": 1, "model": "gpt-4o", "messages": messages}))


def test_a_long_session_filters_once_typing_pauses(qtbot, open_window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "long.yaml"
    _long_session(log)
    win = open_window(str(log))
    qtbot.waitUntil(lambda: win.vm.plan is not None and win.model.total_count() == SEARCH_PAUSE_ROWS + 200, timeout=60000)
    calls = _spy(win)
    for text in ("s", "st", "ste", "step 42"):
        win.search.setText(text)
    assert calls == []  # nothing filtered while typing
    qtbot.waitUntil(lambda: calls == ["step 42"], timeout=20000)
    qtbot.waitUntil(lambda: win.count_label.text().startswith(f"{win.model.rowCount():,} of"), timeout=20000)
    assert 0 < win.model.rowCount() < win.model.total_count()


def test_a_short_session_filters_at_each_keystroke(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(str(SAMPLE))
    qtbot.waitUntil(lambda: win.vm.plan is not None and win.model.total_count() > 0, timeout=60000)
    calls = _spy(win)
    win.search.setText("r")
    win.search.setText("re")
    assert calls == ["r", "re"]
