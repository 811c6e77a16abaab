"""A jump (Ctrl+J, Ctrl+D, the palette's Go to message) shows the message it selects: from the
Timeline or Context tab it selected a row out of sight, and nothing visible happened."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"
TIMELINE, CONTEXT = 1, 3


@pytest.fixture
def window(open_window):  # type: ignore[no-untyped-def]
    return open_window(SAMPLE)


def row_in_sight(window) -> bool:  # type: ignore[no-untyped-def]
    """The table is on screen, its current row is the selected message's, and that row is inside the viewport."""
    table, row = window.table, window.model.view_row(window.selected)
    current = table.currentIndex()
    if not (table.isVisible() and row is not None and current.isValid() and current.row() == row):
        return False
    return table.viewport().rect().intersects(table.visualRect(current))


@pytest.mark.parametrize("tab", [TIMELINE, CONTEXT])
@pytest.mark.parametrize("action", ["jump-cut", "next-dropped-user"])
def test_a_jump_from_another_tab_shows_the_overview_and_its_row(qtbot, window, tab: int, action: str) -> None:  # type: ignore[no-untyped-def]
    plan = window.vm.plan
    window.tabs.setCurrentIndex(tab)
    qtbot.waitUntil(lambda: window.tabs.currentIndex() == tab, timeout=30000)
    window.registry.actions[action].trigger()
    expected = plan.last_unsent if action == "jump-cut" else next(
        i for i, m in enumerate(plan.messages) if m.role == "user" and not m.sent)
    assert window.selected == expected
    assert window.tabs.currentIndex() == 0
    qtbot.waitUntil(lambda: row_in_sight(window), timeout=30000)


def test_a_jump_from_the_grouped_table_shows_the_table(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.group_button.setChecked(True)
    window.registry.actions["jump-cut"].trigger()
    assert window.selected == window.vm.plan.last_unsent and not window.group_button.isChecked()
    qtbot.waitUntil(lambda: row_in_sight(window), timeout=30000)


def test_the_palettes_go_to_message_shows_the_overview(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.tabs.setCurrentIndex(CONTEXT)
    entry = window.palette_entries("200")[0]
    assert entry.label == "Go to message #200"
    entry.run()
    assert window.selected == 200 and window.tabs.currentIndex() == 0
    qtbot.waitUntil(lambda: row_in_sight(window), timeout=30000)
