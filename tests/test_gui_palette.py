"""Keyboard first: the command palette moves with the arrows, matches fuzzily, runs what is selected,
and offers switching policy, going to a message, the cut and the next dropped user message; every
action has a shortcut, shown in its menu."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from ctxviz.gui.actions import fuzzy_score  # noqa: E402

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml")


@pytest.fixture
def window(open_window):  # type: ignore[no-untyped-def]
    return open_window(SAMPLE)


def palette(qtbot, win, query: str):  # type: ignore[no-untyped-def]
    win.show_palette()
    dialog = win.palette_dialog
    qtbot.keyClicks(dialog.search, query)
    return dialog


def test_fuzzy_matching_prefers_word_starts() -> None:
    assert fuzzy_score("jc", "Edit: Jump to the cut") is not None
    assert fuzzy_score("xyz", "Edit: Jump to the cut") is None
    assert fuzzy_score("sp", "Switch policy") > fuzzy_score("sp", "transpose") > fuzzy_score("sp", "s" + "x" * 20 + "p")


def test_the_palette_runs_the_best_match_and_the_arrows_choose_another(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    dialog = palette(qtbot, window, "jump cut")
    assert dialog.shown[0].label == "Edit: Jump to the cut"
    qtbot.keyClick(dialog.search, Qt.Key.Key_Return)
    plan = window.vm.plan
    newest_dropped = max(m.index for m in plan.messages if not m.sent)
    assert window.selected == newest_dropped
    dialog = palette(qtbot, window, "view")
    labels = [e.label for e in dialog.shown]
    qtbot.keyClick(dialog.search, Qt.Key.Key_Down)
    assert dialog.list.currentIndex().row() == 1
    qtbot.keyClick(dialog.search, Qt.Key.Key_Return)
    second = {"View: Overview": 0, "View: Timeline": 1, "View: Compare": 2, "View: Context as sent": 3}.get(labels[1])
    if second is not None:
        assert window.tabs.currentIndex() == second


def test_the_palette_switches_policy_and_goes_to_a_message(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    dialog = palette(qtbot, window, "switch supyagent")
    assert dialog.shown[0].label == "Switch policy: supyagent"
    with qtbot.waitSignal(window.vm.planReady, timeout=30000):
        qtbot.keyClick(dialog.search, Qt.Key.Key_Return)
    assert window.vm.policy == "supyagent" and window.policy_box.currentText() == "supyagent"
    dialog = palette(qtbot, window, "42")
    assert dialog.shown[0].label == "Go to message #42"
    qtbot.keyClick(dialog.search, Qt.Key.Key_Return)
    assert window.selected == 42


def test_next_dropped_user_message_walks_the_lost_requests(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    lost = [m.index for m in window.vm.plan.messages if m.role == "user" and not m.sent]
    assert len(lost) >= 2  # missy drops the opening request of this sample, and more
    window.registry.trigger("next-dropped-user")
    assert window.selected == lost[0]
    window.registry.trigger("next-dropped-user")
    assert window.selected == lost[1]


def test_every_action_has_a_shortcut_shown_in_its_menu(window) -> None:  # type: ignore[no-untyped-def]
    missing = [i for i, a in window.registry.actions.items() if a.shortcut().isEmpty()]
    assert missing == []
    in_menus = [a for top in window.menuBar().actions() for a in top.menu().actions() if a.menu() is None and not a.isSeparator()]
    assert set(window.registry.actions.values()) <= set(in_menus) | {window.registry.actions["palette"]}


def test_the_search_box_speaks_the_filter_language(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.search.setText("role:user decision:dropped")
    expected = [m.index for m in window.vm.plan.messages if m.role == "user" and not m.sent and m.decision.value == "dropped"]
    assert [window.model.message_index(r) for r in range(window.model.rowCount())] == expected
    assert window.count_label.text() == f"{len(expected):,} of {len(window.vm.plan.messages):,}"
    window.search.setText("colour:red")
    assert "unknown field 'colour'" in window.search.toolTip() and "border" in window.search.styleSheet()
    window.search.setText("")
    assert window.search.styleSheet() == "" and window.model.rowCount() == len(window.vm.plan.messages)
