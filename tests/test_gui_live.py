"""Your agent, live, in the app (gui/live.py, gui/live_window.py): a real log written by another
process while the window follows it, the session browser over fake home folders holding real logs,
and the "Next compaction" card against `engine.forecast.forecast`.

After each write the window's figures (the plan's used and budget, its messages and decisions, the
lost card, the status bar) must equal `plan_session(load_session(the file so far))`, a cut-off line,
a replaced file and a deleted file included, and nothing counted before is counted again.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from ctxviz.engine import counting  # noqa: E402
from ctxviz.engine.forecast import forecast  # noqa: E402
from ctxviz.engine.lost import lost  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.gui.models import MessageTableModel  # noqa: E402
from ctxviz.io import follow as io_follow  # noqa: E402
from ctxviz.io.discovery import discover  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
REAL = DATA / "real"
#: A real Claude Code session that ends in an automatic compaction (118 lines).
LOG = DATA / "claude_code" / "spotter-8463c716-autocompact.jsonl"
#: The budget for one update to reach the window after a write, generous for a loaded 2-core machine
#: (the figures measured are printed; the goal is under a second).
UPDATE_TIMEOUT_MS = 15000

WRITER = r"""
import os, sys, time
path, source, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(source, encoding="utf-8").read().splitlines(keepends=True)
for command in sys.stdin:
    step, _, arg = command.strip().partition(" ")
    if step == "append":  # the next N lines, one at a time, with a pause between, as an agent writes
        for line in lines[at:at + int(arg)]:
            with open(path, "a", encoding="utf-8") as h:
                h.write(line)
            time.sleep(0.01)
        at += int(arg)
    elif step == "half":  # the first half of the next line, no newline yet
        with open(path, "a", encoding="utf-8") as h:
            h.write(lines[at][: len(lines[at]) // 2])
    elif step == "rest":
        with open(path, "a", encoding="utf-8") as h:
            h.write(lines[at][len(lines[at]) // 2 :])
        at += 1
    elif step == "replace":  # another file at the path: the first N lines, written beside it and renamed over it
        with open(path + ".new", "w", encoding="utf-8") as h:
            h.write("".join(lines[: int(arg)]))
        os.replace(path + ".new", path)
        at = int(arg)
    elif step == "delete":
        os.remove(path)
    print("done", flush=True)
"""


class Writer:
    """Another process that writes the log when told to."""

    def __init__(self, path: Path, source: Path, start: int = 0) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(source), str(start)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def do(self, command: str) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "done"
        return time.perf_counter()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(10)


def _figures(plan) -> tuple:  # type: ignore[no-untyped-def]
    t = plan.totals
    return (t.used, t.budget, t.kept_messages, t.dropped_messages, len(plan.messages), tuple(m.decision for m in plan.messages))


def _expect(path: Path, policy: str = "claude-code"):  # type: ignore[no-untyped-def]
    session = load_session(path)
    return session, plan_session(session, policy)


def _shows(win, session, plan) -> bool:  # type: ignore[no-untyped-def]
    """The window shows this state: the view-model's session, the plan on screen, its lost card."""
    shown = win.shown_plan
    return (win.vm.session == session and shown is not None and win.shown_session is win.vm.session
            and _figures(shown) == _figures(plan))


def _check_window(win, session, plan) -> None:  # type: ignore[no-untyped-def]
    assert _figures(win.shown_plan) == _figures(plan)
    assert win.lost_card.found == lost(plan, session)
    t = plan.totals
    assert f"budget: {t.used:,} of {t.budget:,} tokens" in win.status_label.text()
    # The table, grown row by row as the log grew, shows what a table given this state afresh shows.
    fresh = MessageTableModel()
    fresh.set_plan(win.shown_session, win.shown_plan, win.model.voices)
    cells = [(r, c) for r in range(fresh.rowCount()) for c in range(fresh.columnCount())]
    assert win.model.rowCount() == fresh.rowCount() == len(win.shown_plan.messages)
    assert ([win.model.data(win.model.index(r, c)) for r, c in cells] == [fresh.data(fresh.index(r, c)) for r, c in cells])


@pytest.fixture
def count_spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    """Every whole-session count: (messages, thread)."""
    calls: list[tuple[int, str]] = []
    real = counting.count_session

    def spy(session, scheme, progress=None):  # type: ignore[no-untyped-def]
        import threading

        if threading.current_thread() is not threading.main_thread():  # (the test's own plans count on the main thread)
            calls.append((len(session.messages), threading.current_thread().name))
        return real(session, scheme, progress)

    monkeypatch.setattr(counting, "count_session", spy)
    monkeypatch.setattr(io_follow, "count_session", spy)
    return calls


def test_the_window_follows_a_log_another_process_writes(open_window, qtbot, tmp_path, count_spy) -> None:  # type: ignore[no-untyped-def]
    lines = LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(lines[:12]), encoding="utf-8")
    win = open_window()
    with qtbot.waitSignal(win.vm.realCountReady, timeout=30000):  # the first state, planned, then its real count
        win.open_live(str(path), agent="claude-code", follow=True)
    assert win.live.following and win.registry.actions["follow"].isChecked() and win.follow_label.isVisible()
    assert win.vm.policy == "claude-code"  # the agent's own policy
    session, plan = _expect(path)
    _check_window(win, session, plan)
    win.simulate()  # a timeline on screen: it is replayed again as the log grows
    qtbot.waitUntil(lambda: win.vm.timeline is not None, timeout=30000)
    count_spy.clear()
    writer = Writer(path, LOG, start=12)
    latencies = []
    try:
        for command in ("append 5", "append 1", "half", "rest", "append 20", "half"):
            done = writer.do(command)
            session, plan = _expect(path)
            if command == "half":
                assert any("mid-record" in n or "cut" in n for n in session.notes)  # a cut-off last line, as load_session reads it
            qtbot.waitUntil(lambda s=session, p=plan: _shows(win, s, p), timeout=UPDATE_TIMEOUT_MS)
            latencies.append(time.perf_counter() - done)
            _check_window(win, session, plan)
        writer.do("rest")
        writer.do("append 200")  # the rest of the log, past its automatic compaction
        session, plan = _expect(path)
        assert session.compactions  # the log recorded its compaction meanwhile
        qtbot.waitUntil(lambda: _shows(win, session, plan), timeout=UPDATE_TIMEOUT_MS)
        _check_window(win, session, plan)
        # Nothing counted was counted again: every state after the first was extended, never recounted.
        assert count_spy == [], f"whole-session counts while following: {count_spy}"
        # The timeline was replayed again, quietly, of the latest state.
        qtbot.waitUntil(lambda: win.vm.timeline is not None and win.vm.timeline.session is win.vm.session, timeout=60000)
        # A replaced file (another inode at the path): read again whole, with a note.
        writer.do("replace 30")
        session, plan = _expect(path)
        qtbot.waitUntil(lambda: _shows(win, session, plan), timeout=UPDATE_TIMEOUT_MS)
        _check_window(win, session, plan)
        qtbot.waitUntil(lambda: "replaced" in win.follow_label.text(), timeout=5000)
        # A deleted file: what was read stays, with a note.
        writer.do("delete")
        qtbot.waitUntil(lambda: "deleted" in win.follow_label.text(), timeout=UPDATE_TIMEOUT_MS)
        assert win.vm.session == session and win.live.following
        _check_window(win, session, plan)
    finally:
        writer.close()
    print(f"write -> window: median {statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")
    assert statistics.median(latencies) < 5.0


# --- the session browser ---------------------------------------------------------------------------
def _session_id(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if isinstance(record.get("sessionId"), str):
            return record["sessionId"]
    raise AssertionError(path)


def _place(source: Path, target: Path, mtime: float | None) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    if mtime is not None:
        os.utime(target, (mtime, mtime))
    return target


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home with real Claude Code (one with a sub-agent, one written just now), Codex and Gemini CLI
    logs where each agent writes them, a second Claude Code folder through CLAUDE_CONFIG_DIR, and a
    FIFO where a log would be (skipped with a note)."""
    home = tmp_path / "home"
    config = tmp_path / "claude-config"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    projects = home / ".claude" / "projects"
    main = REAL / "claude_code" / "tugtool-subagent-main.jsonl"
    sid = _session_id(main)
    codex = REAL / "codex" / "localpush-rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
    placed = {
        "claude_main": _place(main, projects / "-work-tugtool" / f"{sid}.jsonl", 1_700_000_100),
        "claude_sub": _place(REAL / "claude_code" / "agent-a0b12ac0cae20818c.jsonl",
                             projects / "-work-tugtool" / sid / "subagents" / "agent-a0b12ac0cae20818c.jsonl", 1_700_000_150),
        "claude_live": _place(LOG, config / "projects" / "-home-USER-projects-spotter" / f"{_session_id(LOG)}.jsonl", None),
        "codex": _place(codex, home / ".codex" / "sessions" / "2026" / "02" / "23" / codex.name[codex.name.index("rollout-"):], 1_700_000_300),
        "gemini": _place(REAL / "gemini_cli" / "aim_matrix_pro.migrated.jsonl",
                         home / ".gemini" / "tmp" / "aim-matrix" / "chats" / "session-2026-01-03T10-00-aim.jsonl", 1_700_000_250),
    }
    (home / ".gemini" / "tmp" / "aim-matrix" / ".project_root").write_text("/work/aim-matrix\n", encoding="utf-8")
    fifo = projects / "-work-tugtool" / "stuck.jsonl"
    os.mkfifo(fifo)
    placed["fifo"] = fifo
    return placed


def _rows(win) -> list[str]:  # type: ignore[no-untyped-def]
    """The browser's rows as shown: headings as '== text', sessions by path."""
    browser = win.browser
    out = []
    for r in range(browser.proxy.rowCount()):
        row = browser.model.rows[browser.proxy.mapToSource(browser.proxy.index(r, 0)).row()]
        out.append(row.session.path if row.session is not None else "== " + row.heading)
    return out


def test_the_browser_lists_this_machines_sessions_filters_and_opens_one(open_window, qtbot, fake_home) -> None:  # type: ignore[no-untyped-def]
    win = open_window()
    assert win.overview_stack.currentWidget() is win.welcome and win.browser.isVisible()
    qtbot.waitUntil(lambda: win.browser.listing is not None, timeout=20000)  # listed on a worker once shown
    expected = discover()
    # Newest first, grouped by (agent, project), each sub-agent right after its parent.
    want = []
    for (agent, project), sessions in expected.by_project():
        want.append(f"== {project}  ·  {agent}  ·  {len(sessions)} session{'s' if len(sessions) != 1 else ''}")
        for s in sessions:
            want += [s.path, *(c.path for c in s.subagents)]
    assert _rows(win) == want
    paths = [p for p in want if not p.startswith("==")]
    assert paths[0] == str(fake_home["claude_live"])  # written just now: first
    assert paths.index(str(fake_home["claude_sub"])) == paths.index(str(fake_home["claude_main"])) + 1
    assert {str(fake_home[k]) for k in ("claude_main", "claude_sub", "claude_live", "codex", "gemini")} == set(paths)
    # Every heading spans the table; the listing's columns say what `ctxviz sessions` says.
    heading_rows = [r for r, p in enumerate(_rows(win)) if p.startswith("==")]
    assert all(win.browser.table.columnSpan(r, 0) == 7 for r in heading_rows)
    model = win.browser.model
    codex_row = next(r for r, row in enumerate(model.rows) if row.session is not None and row.session.agent == "codex")
    info = model.rows[codex_row].session
    shown = [model.data(model.index(codex_row, c)) for c in range(7)]
    assert shown[1] == "codex" and shown[4] == info.model and shown[5].startswith(f"{info.fill:,} of {info.window:,}")
    # The FIFO is skipped, and the browser says so.
    assert any("stuck.jsonl" in n for n in expected.notes)
    assert "1 file skipped" in win.browser.summary.text() and "stuck.jsonl" in win.browser.summary.text()
    # The search box filters, as `ctxviz sessions QUERY` does; a heading stays while one of its rows does.
    qtbot.keyClicks(win.browser.search, "codex")
    assert win.browser.shown_paths() == [str(fake_home["codex"])]
    assert [p for p in _rows(win) if p.startswith("==")] == [want[want.index(str(fake_home["codex"])) - 1]]
    win.browser.search.clear()
    qtbot.keyClicks(win.browser.search, "agent-a0b12")  # a sub-agent's name: it shows, under its parent
    assert win.browser.shown_paths() == [str(fake_home["claude_main"]), str(fake_home["claude_sub"])]
    win.browser.search.setText("no such session anywhere")
    assert win.browser.shown_paths() == [] and "0 of 5 sessions match" in win.browser.summary.text()
    win.browser.search.clear()
    # One click opens a session, under its agent's own policy; an old one is not followed.
    row = _rows(win).index(str(fake_home["codex"]))
    rect = win.browser.table.visualRect(win.browser.proxy.index(row, 0))
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        qtbot.mouseClick(win.browser.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert win.vm.session.source == str(fake_home["codex"]) and win.vm.policy == "codex-compaction"
    assert not win.live.following and not win.registry.actions["follow"].isChecked()
    assert win.overview_stack.currentIndex() == 1


def test_file_browse_sessions_opens_one_with_enter_and_follows_one_written_just_now(open_window, qtbot, fake_home) -> None:  # type: ignore[no-untyped-def]
    win = open_window(str(ROOT / "sample_sessions" / "support_chat.yaml"))  # a session open: the welcome page is gone
    win.registry.trigger("browse")
    dialog = win.browse_dialog
    assert dialog.isVisible() and dialog.focusWidget() is dialog.browser.search  # type to search at once
    qtbot.waitUntil(lambda: dialog.browser.listing is not None and bool(dialog.browser.shown_paths()), timeout=20000)
    qtbot.keyClicks(dialog.browser.search, "spotter")
    assert dialog.browser.shown_paths() == [str(fake_home["claude_live"])]
    qtbot.keyClick(dialog.browser.search, Qt.Key.Key_Down)  # down into the table, then Enter
    qtbot.keyClick(dialog.browser.table, Qt.Key.Key_Return)
    assert not dialog.isVisible()
    qtbot.waitUntil(lambda: win.shown_session is not None and win.shown_session.source == str(fake_home["claude_live"]), timeout=30000)
    assert win.vm.policy == "claude-code" and win.shown_plan.policy == "claude-code"
    assert win.live.following and win.registry.actions["follow"].isChecked()  # written in the last few minutes
    win.registry.trigger("follow")  # File > Follow off
    assert not win.live.following and not win.follow_label.isVisible()


def test_folders_added_and_removed_in_the_browser_are_listed_and_kept_in_the_settings(open_window, qtbot, fake_home, tmp_path,
                                                                                       monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QDialogButtonBox

    from ctxviz.gui.main_window import MainWindow
    from ctxviz.gui.widgets import session_browser

    extra = tmp_path / "elsewhere"
    rollout = REAL / "codex" / "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
    kept = _place(rollout, extra / "nightly" / "run-7.jsonl", 1_700_000_500)  # a Codex log kept where no agent looks
    monkeypatch.setattr(session_browser, "choose_folder", lambda _parent: str(extra))
    win = open_window()
    qtbot.waitUntil(lambda: win.browser.listing is not None, timeout=20000)
    assert str(kept) not in win.browser.shown_paths() and win.browser.folders == []

    def choose(browser, *, add: bool = False, remove: str = "", ok: bool = True):  # type: ignore[no-untyped-def]
        qtbot.mouseClick(browser.folders_button, Qt.MouseButton.LeftButton)
        dialog = browser.folders_dialog
        assert dialog is not None and dialog.isVisible()
        # It says where ctxviz looks by itself (each agent's folder) before the user's own.
        assert str(fake_home["codex"]).split("/.codex/")[0] + "/.codex/sessions" in dialog.findChildren(session_browser.QLabel)[0].text()
        if add:
            qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
        if remove:
            item = dialog.list.findItems(remove, Qt.MatchFlag.MatchExactly)[0]
            item.setSelected(True)
            assert dialog.remove_button.isEnabled()
            qtbot.mouseClick(dialog.remove_button, Qt.MouseButton.LeftButton)
        box = dialog.findChild(QDialogButtonBox)
        which = QDialogButtonBox.StandardButton.Ok if ok else QDialogButtonBox.StandardButton.Cancel
        qtbot.mouseClick(box.button(which), Qt.MouseButton.LeftButton)
        assert not dialog.isVisible()
        return dialog

    # Added, then Cancel: nothing changes.
    dialog = choose(win.browser, add=True, ok=False)
    assert dialog.folders() == [str(extra)] and win.browser.folders == [] and win.session_roots() == []
    # Added, then OK: kept in the settings, listed at once, shown on the button.
    listed_before = win.browser.listing
    choose(win.browser, add=True)
    assert win.session_roots() == [str(extra)] and win.browser.folders == [str(extra)]
    assert "1 added" in win.browser.folders_button.text()
    qtbot.waitUntil(lambda: win.browser.listing is not listed_before and str(kept) in win.browser.shown_paths(), timeout=20000)
    listed = next(s for s in win.browser.listing.sessions if s.path == str(kept))
    assert listed.agent == "codex"  # found by its content
    # The same folder twice is not added twice.
    dialog = session_browser.FoldersDialog([str(extra)])
    assert not dialog.add_folder(str(extra)) and "already listed" in dialog.note.text()
    assert not dialog.add_folder(str(tmp_path / "no-such-folder")) and "not a folder" in dialog.note.text()
    assert dialog.folders() == [str(extra)]
    # A new window with the same settings (the app started again) looks there too.
    settings_file = win.settings.fileName()
    again = MainWindow(settings=QSettings(settings_file, QSettings.Format.IniFormat))
    qtbot.addWidget(again)
    again.show()
    try:
        assert again.browser.folders == [str(extra)]
        qtbot.waitUntil(lambda: again.browser.listing is not None and str(kept) in again.browser.shown_paths(), timeout=20000)
        # Removed in File > Browse sessions: out of the settings and of the listing.
        again.registry.trigger("browse")
        browser = again.browse_dialog.browser
        assert browser.folders == [str(extra)]
        qtbot.waitUntil(lambda: str(kept) in browser.shown_paths(), timeout=20000)
        choose(browser, remove=str(extra))
        assert again.session_roots() == [] and again.browser.folders == [] and "added" not in again.browser.folders_button.text()
        qtbot.waitUntil(lambda: str(kept) not in browser.shown_paths() and str(kept) not in again.browser.shown_paths(), timeout=20000)
        assert str(fake_home["codex"]) in browser.shown_paths()
        assert QSettings(settings_file, QSettings.Format.IniFormat).value("sessions/roots", []) in ([], None, "")
    finally:
        again.vm.shutdown()


def test_the_strip_keeps_the_users_zoom_and_span_while_a_followed_log_grows(open_window, qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A new state of the same log is no new session: a zoomed strip stays where the user put it, a
    span stays selected, and a strip showing everything takes in what was appended."""
    lines = LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(lines[:60]), encoding="utf-8")
    win = open_window(str(path))
    strip = win.strip
    view = strip.getViewBox()

    def grow(upto: int) -> None:
        path.write_text("".join(lines[:upto]), encoding="utf-8")
        session = load_session(path)
        with qtbot.waitSignal(win.vm.planReady, timeout=30000):
            win.vm.grow(session)
        qtbot.waitUntil(lambda: win.shown_session is win.vm.session)

    # The whole strip shown: after a write it still shows the whole strip, appended part included.
    strip.setXRange(0, strip._extent, padding=0.01)
    grow(80)
    x0, x1 = view.viewRange()[0]
    assert x0 <= 0.01 * strip._extent and x1 >= strip._extent
    # Zoomed in on the first messages, a span selected: both stay through the next write.
    strip.zoom_to(2, 8)
    strip.select_range(3, 6)
    zoomed = view.viewRange()[0]
    grow(100)
    assert view.viewRange()[0] == pytest.approx(zoomed)
    assert strip.selected_range == (3, 6)
    # Another file is a new session: the span goes, and the view is the new strip's.
    other = tmp_path / "other.jsonl"
    other.write_text("".join(lines[:50]), encoding="utf-8")
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.open_path(str(other))
    qtbot.waitUntil(lambda: win.shown_session is win.vm.session)
    assert strip.selected_range is None


def test_while_a_log_is_followed_the_lost_cards_retention_takes_a_share_of_the_time(open_window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Retention (an anchor index of the whole log, seconds at 200 MB) is spaced out while a log is
    followed, as the forecast is; stopping gives it back its usual short delay."""
    from ctxviz.gui import live

    path = tmp_path / "live.jsonl"
    shutil.copyfile(LOG, path)
    win = open_window()
    assert win.vm.retention_share is None
    win.open_live(str(path), agent="claude-code", follow=True)
    assert win.live.following and win.vm.retention_share == live.FORECAST_SHARE
    win.registry.trigger("follow")  # File > Follow off
    assert not win.live.following and win.vm.retention_share is None


# --- the Next compaction card ---------------------------------------------------------------------
def _card(win, qtbot):  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: not win.live.forecast_pending(), timeout=30000)
    return win.next_card


def test_the_card_says_what_forecast_says(open_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    path = REAL / "claude_code" / "spotter-4d5611e5.jsonl"  # requirements the agent read with a tool: what the user asked
    win = open_window()
    win.vm.set_policy("claude-code")
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.open_path(str(path))
    card = _card(win, qtbot)
    expected = forecast(load_session(path), "claude-code", win.vm.params)
    assert card.forecast.to_json() == expected.to_json()
    text = card.label.text()
    w = expected.when
    assert f"in about {w.calls:,} calls</b> (range {w.low:,}-{w.high:,})" in text
    assert f"count {w.level:,} of the trigger {w.trigger:,}" in text
    drop = expected.next_drop
    assert drop is not None and drop.user_losses  # compacting now would lose what the user asked...
    assert card.warning and f"would lose {len(drop.user_losses)} things you asked" in text  # ...so the card warns
    assert f"{drop.messages} messages, {drop.tokens:,} tokens no longer sent" in text
    first = drop.anchors[0]  # ranked: the user's first
    assert drop.ranks[first.id].tier == 1 and f'href="#{first.first_index}"' in text
    card.label.linkActivated.emit(f"#{first.first_index}")  # a link selects where it was said
    assert win.selected == first.first_index


def test_the_card_after_a_real_compaction_and_under_a_policy_that_never_compacts(open_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    path = REAL / "claude_code" / "tugtool-rewind-branch.jsonl"  # three /compact, each with its summary
    win = open_window()
    win.vm.set_policy("claude-code")
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.open_path(str(path))
    card = _card(win, qtbot)
    expected = forecast(load_session(path), "claude-code", win.vm.params)
    assert card.forecast.to_json() == expected.to_json()
    last = expected.last_compaction
    assert last is not None and "The last recorded compaction dropped" in card.label.text()
    assert f"{last.messages} messages, {last.tokens:,} tokens no longer sent" in card.label.text()
    assert not card.warning  # compacting now would lose nothing the user asked
    # missy never compacts: the card is one line saying so, with no forecast.
    win.policy_box.setCurrentText("missy")
    qtbot.waitUntil(lambda: win.live.forecast is not None and win.live.forecast.policy == "missy", timeout=30000)
    assert card.isVisible() and card.forecast is None
    assert "missy does not compact" in card.label.text() and "<br>" not in card.label.text()


# --- gui --latest and --follow ----------------------------------------------------------------------
def test_gui_latest_and_follow_choose_the_session_and_say_when_there_is_none(fake_home, tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.cli import main
    from ctxviz.gui import app

    opened: list[tuple[object, object]] = []
    monkeypatch.setattr(app, "run", lambda session, *args, **kwargs: opened.append((session, kwargs.get("live"))) or 0)
    assert main(["gui", "--latest"]) == 0
    assert opened[-1] == (str(fake_home["claude_live"]), ("claude-code", None))  # the newest; followed if written lately
    assert main(["gui", "--latest", "--agent", "codex"]) == 0
    assert opened[-1] == (str(fake_home["codex"]), ("codex", None))
    assert main(["gui", "--follow", str(fake_home["gemini"])]) == 0
    assert opened[-1] == (str(fake_home["gemini"]), (None, True))
    assert main(["gui", "--agent", "codex"]) == 2
    assert "--agent chooses among the sessions --latest looks at" in capsys.readouterr().err
    assert main(["gui", str(fake_home["codex"]), "--latest"]) == 2
    assert "give one of SESSION, --latest and --follow FILE" in capsys.readouterr().err
    empty = tmp_path / "empty-home"
    empty.mkdir()
    monkeypatch.setenv("HOME", str(empty))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert main(["gui", "--latest", "--agent", "gemini-cli"]) == 2
    err = capsys.readouterr().err
    assert "gui --latest: no gemini-cli session found (looked in " in err and str(empty / ".gemini" / "tmp") in err
    assert len(err.strip().splitlines()) == 1


def test_gui_latest_screenshot_shows_the_agents_policy_and_the_card(fake_home, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QImage

    from ctxviz.cli import main
    from ctxviz.gui import app

    seen = {}
    render = app.render_window

    def spy(window, path, inputs=()):  # type: ignore[no-untyped-def]
        seen.update(policy=window.vm.policy, source=window.vm.session.source, card=window.next_card.forecast,
                    visible=not window.next_card.isHidden())
        render(window, path, inputs)

    monkeypatch.setattr(app, "render_window", spy)
    out = tmp_path / "latest.png"
    assert main(["gui", "--latest", "--agent", "claude-code", "--screenshot", str(out), "--size", "1280x800"]) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    assert seen["policy"] == "claude-code" and seen["source"] == str(fake_home["claude_live"])
    expected = forecast(load_session(fake_home["claude_live"]), "claude-code")
    assert seen["visible"] and seen["card"].to_json() == expected.to_json()  # the card is in the still, with forecast()'s figures
