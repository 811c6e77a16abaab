"""Opening another file starts from nothing of the previous one's: its pins (message numbers of that
file) are cleared and the status bar says so, the selected message and its explanation go, and a
first plan that fails leaves none of the previous file's views under the new file's title.

Before: a pin of #145 carried to a 57-message file failed every plan ("--pin #145: the session has
messages #0-#56") while the donut, table and detail panel kept showing the previous file; a pin of
#1 carried to coding_agent.yaml showed 18,945 tokens where `ctxviz plan` gives 18,637; and the
detail panel went on explaining #145 of the previous file (or, on the Timeline, of the whole file
at a turn before it was written)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
SUPPORT = str(SAMPLES / "support_chat.yaml")
CODEX = str(SAMPLES / "codex_rollout.jsonl")
CODING = str(SAMPLES / "coding_agent.yaml")


def _cli_used(path: str, capsys: pytest.CaptureFixture[str]) -> int:
    from ctxviz.cli import main

    capsys.readouterr()
    assert main(["plan", path, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["totals"]["used"]


def _pin(qtbot, win, index: int) -> None:  # type: ignore[no-untyped-def]
    win.select_message(index)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.registry.trigger("pin")
    assert f"#{index}" in win.vm.options.pins


def _open(qtbot, win, path: str) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.open_path(path)
    qtbot.waitUntil(lambda: win.shown_session is win.vm.session, timeout=30000)


def test_a_pin_past_the_next_files_end_is_cleared_not_an_error(qtbot, open_window, capsys) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    _pin(qtbot, win, 145)
    errors: list[str] = []
    win.vm.errorOccurred.connect(errors.append)
    _open(qtbot, win, CODEX)
    assert errors == []
    assert win.vm.options.pins == ()
    assert win.statusBar().currentMessage().startswith("1 pin cleared (#145): pins are message numbers of the file")
    assert win.shown_session.source == CODEX and len(win.shown_plan.messages) == 57
    assert win.count_label.text() == "57 of 57"
    assert win.shown_plan.totals.used == _cli_used(CODEX, capsys)
    assert "--pin" not in win.vm.command_line()


def test_a_pin_in_range_of_the_next_file_does_not_pin_its_message(qtbot, open_window, capsys) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    _pin(qtbot, win, 1)
    _open(qtbot, win, CODING)
    assert win.vm.options.pins == ()
    assert not any(note.startswith("pins added") for note in win.shown_plan.notes)
    assert win.shown_plan.totals.used == _cli_used(CODING, capsys)  # 18,637, not the 18,945 with #1 pinned
    assert f"{win.shown_plan.totals.used:,} of" in win.status_label.text()


def test_the_detail_panel_forgets_the_previous_files_message(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    win.select_message(145)
    assert win.detail_text().startswith("#145")
    _open(qtbot, win, CODEX)
    assert win.selected is None
    assert "#145" not in win.detail_text() and "What would keep it" not in win.detail_text()
    assert win.detail_text().startswith("Select a message")
    assert not win.table.selectionModel().hasSelection()


def test_a_first_plan_that_fails_leaves_nothing_of_the_previous_file(qtbot, open_window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import ctxviz.gui.viewmodel as viewmodel
    from ctxviz.errors import CtxvizError

    win = open_window(SUPPORT)
    win.select_message(145)
    real_plan = viewmodel.plan_session

    def refuse_codex(session, *args, **kwargs):  # type: ignore[no-untyped-def]
        if session.source == CODEX:
            raise CtxvizError("this plan cannot be made")
        return real_plan(session, *args, **kwargs)

    monkeypatch.setattr(viewmodel, "plan_session", refuse_codex)
    with qtbot.waitSignal(win.vm.planFailed, timeout=30000):
        win.open_path(CODEX)
    assert win.status_label.text() == "this plan cannot be made"
    assert win.shown_plan is None and win.shown_session is None
    assert win.overview_stack.currentIndex() == 0  # the welcome page, not support_chat's donut and table
    assert win.model.rowCount() == 0 and win.selected is None
    assert "#145" not in win.detail_text()
    # Another policy plans it: the views come back, all of the new file.
    monkeypatch.setattr(viewmodel, "plan_session", real_plan)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_policy("missy")
    assert win.overview_stack.currentIndex() == 1 and win.model.rowCount() == 57


def test_a_turn_before_the_selected_message_does_not_explain_it(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    win.select_message(145)
    with qtbot.waitSignal(win.vm.timelineReady, timeout=120000):
        win.simulate()
    turn = max(t for t in range(len(win.vm.timeline.turns)) if len(win.vm.timeline.session_at(t).messages) <= 145)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.show_turn(turn)
    last = len(win.shown_session.messages) - 1
    text = win.detail_text()
    assert text.startswith(f"#145 is not in the replay at turn {last}")
    assert "What would keep it" not in text and "dropped in" not in text
    assert win.selected == 145
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.show_latest()
    assert win.detail_text().startswith("#145 · ")
