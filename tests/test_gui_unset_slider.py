"""Unsetting an optional number puts its slider back where the value in force is: the field read
"unset" while the slider stayed at the value just unset (60,000, the plan using the model's 200,000)."""

from __future__ import annotations

from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
CLAUDE = SAMPLES / "claude_code_compaction.jsonl"
SUPPORT = SAMPLES / "support_chat.yaml"


def slider_value(win, name: str) -> float:  # type: ignore[no-untyped-def]
    slider = win.params.editors[name][0]
    return win.params.scales[name].from_slider(slider.value())


def set_then(qtbot, win, name: str, value: float, back) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.params.editors[name][1].setValue(value)
    assert slider_value(win, name) == value
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        back()


def test_the_unset_button_puts_the_slider_at_the_value_in_force(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(CLAUDE)
    in_force = win.vm.plan.params["context_window"]
    assert win.vm.params.context_window is None and in_force == 200_000 and slider_value(win, "context_window") == in_force
    set_then(qtbot, win, "context_window", 60_000, win.params.unsets["context_window"].click)
    assert win.vm.params.context_window is None and win.vm.plan.params["context_window"] == in_force
    assert win.params.editors["context_window"][1].lineEdit().text() == "unset"
    assert slider_value(win, "context_window") == in_force


def test_undo_puts_the_slider_back_too(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(CLAUDE)
    set_then(qtbot, win, "context_window", 60_000, win.vm.undo)
    assert win.vm.params.context_window is None
    assert slider_value(win, "context_window") == win.vm.plan.params["context_window"] == 200_000


def test_a_field_with_no_value_in_force_goes_back_to_its_default_position(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_policy("strands-sliding-window")
    slider = win.params.editors["proactive_compression"][0]
    built = slider.value()
    set_then(qtbot, win, "proactive_compression", 0.5, win.params.unsets["proactive_compression"].click)
    assert win.params.editors["proactive_compression"][1].lineEdit().text() == "unset" and slider.value() == built
