"""The Compare tab says its comparison is of an earlier view when any input of A's plan changed,
not only the policy and parameters: after a tokenizer, pin, pair-safe or model change it went on
labelling A "(the current view)" while the overview showed another plan."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
SUPPORT = str(SAMPLES / "support_chat.yaml")
CODEX = str(SAMPLES / "codex_rollout.jsonl")


def _stale(win) -> str:  # type: ignore[no-untyped-def]
    """The stale banner's words, or "" when the tab says A is the current view."""
    c = win.compare
    if c.stale.isHidden():
        assert c.label_a.text().endswith("(the current view)")
        return ""
    assert c.label_a.text().endswith("(an earlier view, not the current one)")
    return c.stale_label.text()


def _compare(qtbot, win) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(win.vm.compareReady, timeout=60000):
        win.compare.request()
    assert _stale(win) == ""


def _change(qtbot, win, change) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        change()
    qtbot.waitUntil(lambda: win.shown_plan is win.vm.plan, timeout=30000)


def test_every_input_of_as_plan_makes_the_comparison_stale(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    win.tabs.setCurrentIndex(2)
    win.compare.set_request("missy", "fresh_tail_count=40 total=20000")
    _compare(qtbot, win)

    _change(qtbot, win, lambda: win.tokenizer_box.setCurrentText("cl100k_base"))
    assert _stale(win).endswith("since then: tokenizer: policy's own → cl100k_base.")
    _compare(qtbot, win)

    _change(qtbot, win, lambda: win.vm.toggle_pin(145))
    assert _stale(win).endswith("since then: pins: none → #145.")
    _change(qtbot, win, lambda: win.vm.toggle_pin(145))
    assert _stale(win) == ""  # the same inputs as the comparison's again

    _change(qtbot, win, lambda: win.pair_box.setChecked(True))
    assert _stale(win).endswith("since then: pair-safe: off → on.")
    _compare(qtbot, win)

    _change(qtbot, win, lambda: win.model_box.setCurrentText("gpt-4o"))
    assert "model: the session's → gpt-4o" in _stale(win)
    _compare(qtbot, win)

    _change(qtbot, win, lambda: win.vm.set_param("total", 25000))
    assert "the current view is missy (total=25000)" in _stale(win)


def test_a_comparison_of_the_previous_file_is_stale_in_the_next(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    win.tabs.setCurrentIndex(2)
    win.compare.set_request("missy", "total=20000")
    _compare(qtbot, win)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.open_path(CODEX)
    qtbot.waitUntil(lambda: win.shown_session is win.vm.session, timeout=30000)
    assert "another session" in _stale(win)
