"""The parameter panel: undo and redo (a drag is one step), reset to the defaults, unset an optional
value, ranges that fit the session, a rejected value never left on screen, and it collapses."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")



SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml")


@pytest.fixture
def window(open_window):  # type: ignore[no-untyped-def]
    return open_window(SAMPLE)


def test_undo_and_redo_treat_a_drag_as_one_step(window) -> None:  # type: ignore[no-untyped-def]
    vm = window.vm
    assert not window.registry.actions["undo"].isEnabled()
    for total in range(30_000, 31_000, 100):  # a drag: one field, quick steps
        vm.set_param("total", total)
    vm.set_param("fresh_tail_count", 8)
    assert (vm.params.total, vm.params.fresh_tail_count) == (30_900, 8)
    window.registry.trigger("undo")
    assert (vm.params.total, vm.params.fresh_tail_count) == (30_900, 16)
    window.registry.trigger("undo")
    assert vm.params.total == 30_000  # the whole drag undone at once
    assert window.registry.actions["redo"].isEnabled()
    window.registry.trigger("redo")
    assert vm.params.total == 30_900
    vm.set_param("total", 25_000)
    assert not window.registry.actions["redo"].isEnabled()  # a new change forgets the redo


def test_undo_reaches_back_over_a_policy_switch_and_reset_restores_the_defaults(window) -> None:  # type: ignore[no-untyped-def]
    vm = window.vm
    vm.set_param("total", 12_000)
    vm.set_policy("supyagent")
    vm.undo()
    assert vm.policy == "missy" and vm.params.total == 12_000 and window.policy_box.currentText() == "missy"
    assert "fresh_tail_count" in window.params.editors and "min_recent_messages" not in window.params.editors  # missy's panel
    window.reset_button.click()
    assert vm.params == window.vm.params.__class__()
    vm.undo()
    assert vm.params.total == 12_000


def test_an_optional_value_can_be_unset_again(window) -> None:  # type: ignore[no-untyped-def]
    vm = window.vm
    vm.set_policy("supyagent")
    assert vm.params.context_limit is None and not window.params.unsets["context_limit"].isEnabled()
    vm.set_param("context_limit", 50_000)
    assert window.params.unsets["context_limit"].isEnabled()
    window.params.unsets["context_limit"].click()
    assert vm.params.context_limit is None


def test_a_message_count_slider_reaches_the_sessions_messages_not_1000(window) -> None:  # type: ignore[no-untyped-def]
    slider, spin = window.params.editors["fresh_tail_count"]
    scale = window.params.scales["fresh_tail_count"]
    assert scale.hi == len(window.vm.plan.messages) == 230


def test_a_rejected_value_is_replaced_by_the_value_in_force(window) -> None:  # type: ignore[no-untyped-def]
    _slider, spin = window.params.editors["fresh_tail_count"]
    spin.setValue(-3)  # missy: fresh_tail_count must be >= 0
    assert window.vm.params.fresh_tail_count == 16
    assert spin.value() == 16
    assert "fresh_tail_count must be >= 0, got -3" in window.params.errors["fresh_tail_count"].text()


def test_the_panel_collapses_and_comes_back(window) -> None:  # type: ignore[no-untyped-def]
    window.registry.trigger("toggle-params")
    assert not window.params_panel.isVisible()
    window.registry.trigger("toggle-params")
    assert window.params_panel.isVisible()


def test_a_message_is_pinned_from_the_detail_panel_and_says_how_far_it_missed(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.select_message(145)  # missy: "689 tokens did not fit in the 685 left"
    assert "missed by 4 tokens" in window.detail_head.text()
    window.select_message(1)  # the user's opening request, dropped
    assert "Pin this message" in window.detail_head.text()
    with qtbot.waitSignal(window.vm.planReady, timeout=30000):
        window.detail_head.linkActivated.emit("pin")
    assert window.vm.options.pins == ("#1",)
    assert window.vm.plan.messages[1].sent and "pinned" in window.vm.plan.messages[1].reason
    assert any(n.startswith("pins added 1 message ") for n in window.vm.plan.notes)
    with qtbot.waitSignal(window.vm.planReady, timeout=30000):
        window.registry.trigger("pin")  # Ctrl+K unpins it again
    assert window.vm.options.pins == () and not window.vm.plan.messages[1].sent
