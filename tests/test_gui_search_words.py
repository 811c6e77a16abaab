"""The search box takes the words the table shows, and says when a value can match nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "claude_code_compaction.jsonl"


@pytest.fixture
def window(open_window):  # type: ignore[no-untyped-def]
    return open_window(SAMPLE)


def shown(window, column: int) -> set[str]:  # type: ignore[no-untyped-def]
    model = window.model
    return {model.data(model.index(r, column)) for r in range(model.rowCount())}


def test_the_decision_and_category_the_table_shows_find_their_messages(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    plan, total = window.vm.plan, len(window.vm.plan.messages)
    summarised = sum(m.decision.value == "summarized" for m in plan.messages)
    tools = sum(m.category == "system_output" for m in plan.messages)
    assert "summarised" in shown(window, 6) and "Tool output" in shown(window, 3)
    window.search.setText("decision:summarised")
    qtbot.waitUntil(lambda: window.count_label.text() == f"{summarised:,} of {total:,}", timeout=30000)
    assert summarised and window.search.property("query_error") == ""
    window.search.setText('category:"Tool output"')
    qtbot.waitUntil(lambda: window.count_label.text() == f"{tools:,} of {total:,}", timeout=30000)
    assert tools and shown(window, 3) == {"Tool output"}


def test_a_value_the_field_never_holds_is_said(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.search.setText("decision:foo")
    qtbot.waitUntil(lambda: bool(window.search.property("query_error")), timeout=30000)
    assert "no decision is called 'foo' (kept, dropped, summarised, truncated, replaced)" in window.search.toolTip()
    window.search.setText('zone:"fresh tail"')  # Claude Code's zones are context and summarised
    qtbot.waitUntil(lambda: "no zone is called 'fresh tail'" in window.search.toolTip(), timeout=30000)


def test_a_phrase_of_the_reason_column_finds_its_rows(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    """The column reads "since compaction"; the sentence behind it says otherwise."""
    model, total = window.model, len(window.vm.plan.messages)
    since = sum(model.data(model.index(r, 8)) == "since compaction" for r in range(model.rowCount()))
    window.search.setText('"since compaction"')
    qtbot.waitUntil(lambda: window.count_label.text() == f"{since:,} of {total:,}", timeout=30000)
    assert since and {model.data(model.index(r, 8)) for r in range(model.rowCount())} == {"since compaction"}


def test_a_search_error_leaves_the_status_bar_once_the_query_parses(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.search.setText("tokens>abc")
    qtbot.waitUntil(lambda: window.statusBar().currentMessage().startswith("search: tokens>abc"), timeout=30000)
    window.search.setText("index>=5 index<=9")
    qtbot.waitUntil(lambda: window.count_label.text().startswith("5 of "), timeout=30000)
    assert window.statusBar().currentMessage() == ""


def test_clearing_the_search_does_not_clear_another_message(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.search.setText("decision:kept")
    window.statusBar().showMessage("something else", 60000)
    window.search.setText("decision:dropped")
    qtbot.waitUntil(lambda: window.model.search == "decision:dropped", timeout=30000)
    assert window.statusBar().currentMessage() == "something else"


def test_role_harness_finds_the_rows_the_role_column_calls_harness(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml")
    model, total = win.model, len(win.vm.plan.messages)
    harness = sum(model.data(model.index(r, 2)) == "harness" for r in range(model.rowCount()))
    win.search.setText("role:harness")
    qtbot.waitUntil(lambda: win.count_label.text() == f"{harness:,} of {total:,}", timeout=30000)
    assert harness and {model.data(model.index(r, 2)) for r in range(model.rowCount())} == {"harness"}
    win.search.setText("role:user")
    qtbot.waitUntil(lambda: model.rowCount() and {model.data(model.index(r, 2)) for r in range(model.rowCount())} == {"user"}, timeout=30000)
