"""The desktop app as a person uses it, offscreen (pytest-qt): every number on screen is the engine's."""

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.plan import Decision  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.gui.main_window import MainWindow  # noqa: E402
from ctxviz.gui.viewmodel import ContextViewModel  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

from .loader_checks import assert_one_step_per_call  # noqa: E402

NATIVE = str(Path(__file__).parent / "data" / "native_small.yaml")


@pytest.fixture
def session_file(tmp_path):
    msgs = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(60):
        if i % 3 == 0:
            msgs.append({"role": "user", "content": f"Please fix test {i} in src/mod_{i}.py " + "and explain " * (i % 7 + 1)})
        elif i % 3 == 1:
            msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/mod_{i}.py"})}}]})
        else:
            msgs.append({"role": "tool", "tool_call_id": f"c{i - 1}", "content": "def f():\n    return 1\n" * (i * 30)})
    msgs.append({"role": "user", "content": "Now run the whole suite."})
    path = tmp_path / "coding.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": msgs}))
    return str(path)


@pytest.fixture
def window(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    win.show()
    yield win
    win.vm.shutdown()


def open_and_wait(qtbot, win, path):
    with qtbot.waitSignal(win.vm.planReady, timeout=20000):
        win.open_path(path)


def select_a_dropped_message(qtbot, win, path):
    """Open `path`, select its first dropped message and wait for the "why" answer; its index."""
    open_and_wait(qtbot, win, path)
    dropped = next(m.index for m in win.vm.plan.messages if m.decision is Decision.DROPPED)
    with qtbot.waitSignal(win.vm.explanationReady, timeout=20000):
        win.select_message(dropped)
    qtbot.waitUntil(lambda: "What would keep it" in win.detail_text())
    return dropped


def test_open_shows_the_engines_plan_everywhere(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    expected = plan_session(load_session(session_file), "missy", store=CountStore())
    plan = window.vm.plan
    assert plan.totals == expected.totals
    assert window.model.rowCount() == len(expected.messages)
    assert window.pie.parts == [(k, v, expected.usage[k]) for k, v in expected.allocation.items()]
    assert len(window.strip.item.starts) == len(expected.messages)
    assert "missy budget:" in window.status_label.text() and f"{expected.totals.used:,}" in window.status_label.text()
    assert window.windowTitle().startswith("coding.json")


def test_changing_a_parameter_replans_table_strip_and_pie(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    before = window.vm.plan
    slider, spin = window.params.editors["total"]
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        spin.setValue(8000)
    after = window.vm.plan
    assert after.params["total"] == 8000 and after.totals != before.totals
    assert window.pie.total == 8000
    assert slider.value() == 8000
    decisions = [window.model.index(r, 6).data() for r in range(window.model.rowCount())]
    assert decisions == [m.decision.value for m in after.messages]
    assert list(window.strip.item.decisions) == [m.decision for m in after.messages]
    expected = plan_session(load_session(session_file), "missy", {"total": 8000}, store=CountStore())
    assert after.totals == expected.totals


def test_invalid_value_shows_the_frameworks_message_inline(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    _, spin = window.params.editors["system_reserve"]
    spin.setValue(40000)
    qtbot.waitUntil(lambda: window.params.errors["system_reserve"].isVisible())
    assert window.params.errors["system_reserve"].text() == "system_reserve + tool_definitions_reserve (42000) exceeds total (30000)"
    assert window.vm.params.system_reserve == 2000


def test_select_a_dropped_message_shows_why(qtbot, window, session_file):
    dropped = select_a_dropped_message(qtbot, window, session_file)
    assert window.vm.plan.messages[dropped].reason in window.detail_text()
    assert window.strip.item.selected == dropped


def test_dragging_with_a_dropped_message_selected_searches_why_once_it_settles(qtbot, window, session_file, monkeypatch):
    """Each "why" search re-plans hundreds of times: a drag must not start one per step."""
    dropped = select_a_dropped_message(qtbot, window, session_file)
    requests, layouts = [], []
    original = window.vm.request_explanation
    monkeypatch.setattr(window.vm, "request_explanation", lambda index: (requests.append(index), original(index)))
    monkeypatch.setattr(window.detail, "setHtml", layouts.append)
    for total in range(30_000, 30_600, 60):
        window.vm.set_param("total", total)
        window.vm.wait()
        qtbot.wait(5)
    assert requests == []  # none while the values keep changing
    qtbot.waitUntil(lambda: requests == [dropped], timeout=3000)
    assert layouts == []  # the message body was not laid out again on any step


def test_a_why_answer_never_outlives_the_parameters_it_was_found_for(qtbot, window, session_file):
    dropped = select_a_dropped_message(qtbot, window, session_file)
    old_answer = window.detail_text()
    with qtbot.waitSignal(window.vm.planReady, timeout=5000):
        window.vm.set_param("system_reserve", window.vm.params.system_reserve + 100)
    assert not window.vm.plan.messages[dropped].sent  # less history budget: still dropped
    assert "What would keep it" not in window.detail_text() and "Searching" in window.detail_text()
    qtbot.waitUntil(lambda: "What would keep it" in window.detail_text(), timeout=20000)
    assert window.detail_text() != old_answer  # the smallest total that keeps it moved by 100


def test_opening_another_file_releases_the_first_ones_counts(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    first = window.vm.session
    assert len(window.vm.store) >= 1
    open_and_wait(qtbot, window, NATIVE)
    assert window.vm.session is not first
    assert all(counts.session is not first for counts in window.vm.store._entries.values())


def test_filters_and_search(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    window.role_filter.setCurrentText("tool")
    assert window.model.rowCount() == sum(1 for m in window.vm.plan.messages if m.role == "tool")
    window.role_filter.setCurrentText("all roles")
    window.decision_filter.setCurrentText("kept")
    assert window.model.rowCount() == window.vm.plan.totals.kept_messages
    with qtbot.waitSignal(window.vm.planReady, timeout=5000):  # a re-plan under the filter changes the rows
        window.vm.set_param("total", window.vm.params.total // 2)
    assert window.model.rowCount() == window.vm.plan.totals.kept_messages
    assert all(window.model.index(r, 6).data() == "kept" for r in range(window.model.rowCount()))
    window.decision_filter.setCurrentText("all decisions")
    window.search.setText("mod_27.py")
    assert window.model.rowCount() >= 1
    rows = {window.model.index(r, 0).data() for r in range(window.model.rowCount())}
    assert 28 in rows or 29 in rows


def test_sorting_and_filtering_keep_the_selected_message(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    plan = window.vm.plan
    tool = next(m.index for m in plan.messages if m.role == "tool" and m.index > 20)
    window.select_message(tool)
    window.table.sortByColumn(4, Qt.SortOrder.DescendingOrder)  # tokens, largest first
    tokens = [int(window.model.index(r, 4).data().replace(",", "")) for r in range(window.model.rowCount())]
    assert tokens == sorted(tokens, reverse=True)
    current = window.table.currentIndex()
    assert window.model.message_index(current.row()) == tool
    window.role_filter.setCurrentText("tool")
    assert window.model.message_index(window.table.currentIndex().row()) == tool
    assert window.detail_text().startswith(f"#{tool}")
    window.role_filter.setCurrentText("all roles")
    window.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    assert [window.model.index(r, 0).data() for r in range(3)] == [0, 1, 2]


def test_policy_switch_rebuilds_the_parameter_panel(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.policy_box.setCurrentText("supyagent")
    assert window.vm.plan.policy == "supyagent"
    assert "min_recent_messages" in window.params.editors and "total" not in window.params.editors


def test_timeline_scrub_shows_the_context_at_a_turn(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    with qtbot.waitSignal(window.vm.timelineReady, timeout=30000):
        window.simulate()
    timeline = window.vm.timeline
    assert_one_step_per_call(window.vm.session, timeline)  # the slider's positions are the model calls
    with qtbot.waitSignal(window.vm.planReady, timeout=5000):
        window.timeline.slider.setValue(10)
    turn = timeline.turns[10]
    assert window.model.rowCount() == turn.index + 1  # the request's messages
    assert window.shown_plan.totals.used == turn.tokens_sent
    assert f"Step 11 of {len(timeline.turns)}, Turn {turn.index}: " in window.timeline.label.text()


def test_timeline_overlays_what_the_provider_reported(qtbot, window):
    """A Claude Code log carries the real window fill per call: the chart shows it beside the replay,
    and the replay drops where the agent compacted."""
    sample = str(Path(__file__).parent.parent / "sample_sessions" / "claude_code_compaction.jsonl")
    open_and_wait(qtbot, window, sample)
    with qtbot.waitSignal(window.vm.timelineReady, timeout=30000):
        window.simulate()
    names = [item.name() for item in window.timeline.plot.listDataItems()]
    assert "reported by the provider" in names and "compaction" in names
    boundary = window.vm.session.compactions[0].before_index
    call = next(m.index for m in window.vm.session.messages if m.index > boundary and m.usage is not None)
    (step,) = [k for k, t in enumerate(window.vm.timeline.turns) if t.reply == call]  # the step that call answered
    with qtbot.waitSignal(window.vm.planReady, timeout=5000):
        window.timeline.slider.setValue(step)
    usage = window.vm.session.messages[call].usage
    assert f"the provider reported {usage.window_fill:,} for the call made after this turn, which produced #{call}" in window.timeline.label.text()


def test_compare_highlights_differences(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    window.tabs.setCurrentIndex(window.tabs.indexOf(window.compare))
    # before a comparison, what the tab will show: a sentence, not an empty table under its headers
    assert window.compare.idle.isVisible() and not window.compare.table.isVisible()
    window.compare.policy.setCurrentText("missy")
    window.compare.overrides.setText("total=120000 fresh_tail_count=4")
    with qtbot.waitSignal(window.vm.compareReady, timeout=20000):
        window.compare.request()
    assert window.compare.table.topLevelItemCount() > 0
    assert window.compare.table.isVisible() and not window.compare.idle.isVisible()
    # marked once, in the lane between the strips, not outlined in both strips
    a, b = window.compare.shown
    differing = [x.index for x, y in zip(a.messages, b.messages, strict=True) if x.decision != y.decision]
    assert [i for i, _ in window.compare.lane.marks] == differing != []
    assert window.compare.strip_a.item.highlight == window.compare.strip_b.item.highlight == set()


def test_export_context_and_command(qtbot, window, session_file, tmp_path):
    open_and_wait(qtbot, window, session_file)
    out = tmp_path / "ctx.jsonl"
    window.write_export(str(out), "jsonl")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    # what `ctxviz export --to jsonl` writes for the same plan: the context, repaired as the API needs
    # (a tool result whose call is not sent is left out)
    from ctxviz.io.exporters import export_text

    expected = [json.loads(line) for line in export_text(window.vm.plan, window.vm.session, "jsonl").splitlines()]
    assert lines == expected and all(line in [dict(c) for c in window.vm.plan.context] for line in lines)
    window.copy_command()
    from PySide6.QtGui import QGuiApplication
    assert QGuiApplication.clipboard().text().startswith(f"ctxviz plan {session_file} --policy missy")


def test_presets_save_and_load(qtbot, window, session_file, tmp_path):
    open_and_wait(qtbot, window, session_file)
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.vm.set_param("fresh_tail_count", 3)
    path = tmp_path / "p.yaml"
    window.write_preset(str(path))
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.vm.set_param("fresh_tail_count", 9)
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.apply_preset(str(path))
    assert window.vm.params.fresh_tail_count == 3


def test_bad_file_gives_a_message_box_not_a_crash(qtbot, window, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [')
    with qtbot.waitSignal(window.vm.errorOccurred, timeout=10000) as blocker:
        window.open_path(str(bad))
    assert blocker.args[0].startswith(f"{bad}:1: invalid JSON")
    qtbot.waitUntil(lambda: window.last_error_box.isVisible())
    assert window.last_error_box.text() == blocker.args[0]
    window.last_error_box.close()


def test_window_state_and_recent_files_are_saved(qtbot, tmp_path, session_file):
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    win.show()
    open_and_wait(qtbot, win, session_file)
    win.resize(1111, 777)
    win.close()
    assert settings.value("window/geometry") is not None
    # Every divider is kept too (restoring them is QSplitter.restoreState's job; the offscreen
    # screen is too small to tell a restored layout from a default one).
    assert all(settings.value(f"splitters/{name}") is not None for name in win.splitters)
    assert settings.value("recent/files") in ([os.path.abspath(session_file)], os.path.abspath(session_file))
    again = MainWindow(settings=settings)
    qtbot.addWidget(again)
    assert again.recent_files() == [os.path.abspath(session_file)]
    assert [a.text() for a in again.recent_menu.actions()] == ["coding.json"]
    again.vm.shutdown()


def test_command_palette_runs_registered_actions(qtbot, window, session_file):
    open_and_wait(qtbot, window, session_file)
    window.show_palette()
    palette = window.palette_dialog
    # every action but the palette itself, and a "switch policy" entry per other policy
    assert palette.model.rowCount() == len(window.registry.specs) - 1 + len(window.vm.policies()) - 1
    palette.search.setText("View: Context as sent")
    assert palette.shown[0].label == "View: Context as sent"
    palette.run_current()
    assert window.tabs.currentIndex() == 3
    assert window.registry.actions["palette"].shortcut().toString() == "Ctrl+Shift+P"


def test_viewmodel_coalesces_rapid_changes(qtbot, session_file):
    vm = ContextViewModel()
    with qtbot.waitSignal(vm.planReady, timeout=20000):
        vm.open(session_file)
    for total in range(5000, 9000, 250):
        vm.set_param("total", total)
    qtbot.waitUntil(lambda: vm.plan is not None and vm.plan.params["total"] == 8750, timeout=20000)
    vm.wait()
    assert vm.plan.params["total"] == 8750
    vm.shutdown()


def test_screenshot_and_report(tmp_path, qapp):
    from ctxviz.cli import main

    shot = tmp_path / "shot.png"
    assert main(["gui", NATIVE, "--screenshot", str(shot), "--theme", "dark"]) == 0
    from PySide6.QtGui import QImage
    image = QImage(str(shot))
    assert image.width() >= 1200 and image.height() >= 800
    for suffix in ("png", "svg", "pdf", "html"):
        out = tmp_path / f"report.{suffix}"
        assert main(["report", NATIVE, "-o", str(out)]) == 0
        assert out.stat().st_size > 1000
    from PySide6.QtSvg import QSvgRenderer
    assert QSvgRenderer(str(tmp_path / "report.svg")).isValid()
    assert (tmp_path / "report.pdf").read_bytes().startswith(b"%PDF")


def test_html_report_escapes_every_message(tmp_path, qapp):
    from ctxviz.cli import main

    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps([{"role": "user", "content": "<script>alert('x')</script> & <b>bold</b>"}]))
    out = tmp_path / "r.html"
    assert main(["report", str(evil), "-o", str(out)]) == 0
    text = out.read_text()
    assert "<script>alert" not in text and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "<b>bold</b>" not in text


def test_gui_bad_session_is_one_line(capsys):
    from ctxviz.cli import main

    assert main(["gui", "/nonexistent/file.json", "--screenshot", "/tmp/never.png"]) == 2
    assert capsys.readouterr().err == "/nonexistent/file.json: no such file\n"


def test_message_box_type(qtbot, window):
    window.show_error("x.json:3: broken")
    assert window.last_error_box.icon() == QMessageBox.Icon.Warning
    window.last_error_box.close()
    assert Qt.AlignmentFlag.AlignLeft  # the import is used by the module under test too
