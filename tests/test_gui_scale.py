"""The app and the report at scale (issue 11), offscreen: a simulation can be cancelled, the Timeline
tab and `--screenshot` load and simulate once, the first plan does not wait for the real count, and
the HTML report of a long session is paged with every message escaped. No timings here: speed is
measured in bench/bench_gui.py."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import threading

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings  # noqa: E402

from ctxviz import cli  # noqa: E402
from ctxviz.cli import gui as gui_command  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart  # noqa: E402
from ctxviz.gui import viewmodel  # noqa: E402
from ctxviz.gui.main_window import TIMELINE_TAB, MainWindow  # noqa: E402
from ctxviz.gui.report import PAGE_ROWS, render_html  # noqa: E402

HOSTILE = "</script><img src=x onerror=alert(1)> & <b>bold</b>"


def agent_session(n: int, hostile_at: int | None = None) -> Session:
    """User turns, assistant tool calls answered by tool outputs, closing answers: n messages."""
    msgs: list[Message] = []
    while len(msgs) < n:
        i = len(msgs)
        kind = i % 4
        if kind == 0:
            text = HOSTILE if i == hostile_at else f"turn {i}: please look at src/mod_{i}.py " + "and explain " * (i % 5 + 1)
            msgs.append(Message(id=f"m{i}", index=i, role="user", parts=(TextPart(text),)))
        elif kind == 1:
            msgs.append(Message(id=f"m{i}", index=i, role="assistant", parts=(ToolCallPart(f"c{i}", "read_file", json.dumps({"path": f"src/mod_{i}.py"})),)))
        elif kind == 2:
            msgs.append(Message(id=f"m{i}", index=i, role="tool", tool_call_id=f"c{i - 1}",
                                parts=(ToolResultPart(f"c{i - 1}", "def f():\n    return 1\n" * (i % 40 + 1)),)))
        else:
            msgs.append(Message(id=f"m{i}", index=i, role="assistant", parts=(TextPart(f"done with {i}"),)))
    return Session(messages=tuple(msgs), source="<scale-test>", format="test", model="gpt-4o")


@pytest.fixture
def window(qtbot, tmp_path):
    win = MainWindow(settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.show()
    yield win
    win.vm.shutdown()


@pytest.fixture
def simulate_spy(monkeypatch):
    """Counts the app's calls of `simulate` (and how each ended)."""
    calls: list[str] = []
    real = viewmodel.simulate

    def spy(*args, **kwargs):
        calls.append("started")
        try:
            result = real(*args, **kwargs)
        except viewmodel.Cancelled:
            calls.append("cancelled")
            raise
        calls.append("finished")
        return result

    monkeypatch.setattr(viewmodel, "simulate", spy)
    return calls


def load(qtbot, win: MainWindow, session: Session) -> None:
    with qtbot.waitSignal(win.vm.planReady, timeout=20000):
        win.vm.set_session(session)


# --- cancelling a simulation ----------------------------------------------------------------------
def test_cancel_stops_a_running_simulation_and_says_so(qtbot, window, monkeypatch):
    """The Cancel button beside the progress stops the replay at its next progress report: the
    engine's simulate raises out (it does not run on to the end), no timeline is shown, the state
    is "cancelled" and the Timeline tab and status bar say so; Simulate starts it again."""
    session = agent_session(600)
    load(qtbot, window, session)
    paused, resume = threading.Event(), threading.Event()
    reports: list[int] = []
    outcome: list[str] = []
    real = viewmodel.simulate

    def simulate(*args, progress, **kwargs):
        def watched(done: int, total: int) -> None:
            reports.append(done)
            if len(reports) == 1:  # hold the replay at its first report until the test has pressed Cancel
                paused.set()
                resume.wait(20)
            progress(done, total)

        try:
            result = real(*args, progress=watched, **kwargs)
        except viewmodel.Cancelled:
            outcome.append("cancelled")
            raise
        outcome.append("finished")
        return result

    monkeypatch.setattr(viewmodel, "simulate", simulate)
    window.simulate()
    assert window.vm.timeline_state == "running"
    qtbot.waitUntil(paused.is_set, timeout=20000)
    qtbot.waitUntil(window.cancel_button.isVisible, timeout=5000)
    cancelled = []
    window.vm.timelineCancelled.connect(cancelled.append)
    window.cancel_button.click()
    resume.set()
    window.vm.wait(20)
    qtbot.waitUntil(lambda: outcome != [], timeout=5000)
    assert outcome == ["cancelled"]
    assert len(reports) == 1, "it stops at the first progress report after Cancel (the one it was held at)"
    assert reports[-1] < len(session.messages)
    assert window.vm.timeline is None and window.vm.timeline_state == "cancelled"
    assert cancelled and "cancelled" in cancelled[0].lower()
    assert "cancelled" in window.timeline.label.text().lower()
    assert "cancelled" in window.status_label.text().lower()
    assert not window.cancel_button.isVisible()
    assert window.timeline.timeline is None

    # And it can be run again, to the end.
    monkeypatch.setattr(viewmodel, "simulate", real)
    with qtbot.waitSignal(window.vm.timelineReady, timeout=30000):
        window.simulate()
    assert window.vm.timeline_state == "done" and window.vm.timeline is not None


def test_cancel_with_nothing_running_does_nothing(qtbot, window):
    load(qtbot, window, agent_session(40))
    assert window.vm.cancel_timeline() is False
    assert window.vm.timeline_state == ""


# --- simulate and load once -----------------------------------------------------------------------
def test_the_timeline_tab_simulates_once(qtbot, window, simulate_spy):
    """Opening the tab, pressing Simulate while it runs and after, and coming back to the tab: one replay."""
    load(qtbot, window, agent_session(400))
    with qtbot.waitSignal(window.vm.timelineReady, timeout=30000):
        window.tabs.setCurrentIndex(TIMELINE_TAB)
        window.simulate()  # while it runs
    window.simulate()  # after: the same inputs, already replayed
    window.tabs.setCurrentIndex(0)
    window.tabs.setCurrentIndex(TIMELINE_TAB)
    window.vm.wait(20)
    qtbot.wait(50)
    assert simulate_spy == ["started", "finished"]
    assert window.timeline.timeline is window.vm.timeline is not None

    # A change of inputs is replayed again, once.
    with qtbot.waitSignal(window.vm.timelineReady, timeout=30000):
        window.vm.set_param("total", window.vm.params.total + 1000)
    window.vm.wait(20)
    qtbot.wait(400)  # past the re-simulation timer
    assert simulate_spy.count("started") == 2


def test_screenshot_of_the_timeline_loads_and_simulates_once(tmp_path, monkeypatch, simulate_spy):
    """`ctxviz gui FILE --tab 1 --screenshot` reads the file once (the CLI's check hands the
    session to the window) and replays it once."""
    from ctxviz.io import loaders

    cli._load()
    loads: list[str] = []
    real = loaders.load_session

    def load_session(path, *args, **kwargs):
        loads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(loaders, "load_session", load_session)
    monkeypatch.setattr(gui_command, "load_session", load_session)
    monkeypatch.setattr(viewmodel, "load_session", load_session)
    source = tmp_path / "agent.jsonl"
    source.write_text("".join(json.dumps(m.to_openai()) + "\n" for m in agent_session(200).messages))
    shot = tmp_path / "timeline.png"
    assert cli.main(["gui", str(source), "--tab", "1", "--screenshot", str(shot)]) == 0
    assert shot.stat().st_size > 0
    assert loads == [str(source)]
    assert simulate_spy == ["started", "finished"]


# --- the first plan before the real count ---------------------------------------------------------
def test_the_first_plan_shows_before_the_real_count_which_fills_in_off_the_gui_thread(qtbot, window, monkeypatch):
    counted_on: list[str] = []
    real = viewmodel.real_count_scheme

    def scheme(model):
        counted_on.append(threading.current_thread().name)
        return real(model)

    monkeypatch.setattr(viewmodel, "real_count_scheme", scheme)
    plans, filled, counting = [], [], []
    window.vm.planReady.connect(lambda _s, plan: plans.append(plan))
    window.vm.realCountReady.connect(lambda before, plan: filled.append((before, plan)))
    window.vm.realCounting.connect(counting.append)
    assert window.vm.options.real_count  # the app's default
    session = agent_session(300)
    window.vm.set_session(session)
    qtbot.waitUntil(lambda: len(filled) == 1, timeout=20000)
    assert len(plans) == 1 and plans[0].real is None, "the first plan does not wait for the real count"
    before, plan = filled[0]
    assert before is plans[0] and plan.real is not None and window.vm.plan is plan
    assert counting == [True, False]
    assert counted_on and all(name.startswith("ctxviz-count") for name in counted_on)
    # The same figures as a plan with the real count made in one go.
    whole = plan_session(session, "missy", None, None, None, None, viewmodel.PlanOptions(real_count=True))
    assert plan.real == whole.real and plan.totals == whole.totals
    assert window.shown_plan is plan
    assert f"{whole.real.tokens:,}" in window.status_label.text() and "counting" not in window.status_label.text()
    # A later change plans with the real count at once (the messages are counted), without counting again.
    with qtbot.waitSignal(window.vm.planReady, timeout=20000) as blocker:
        window.vm.set_param("total", window.vm.params.total + 500)
    assert blocker.args[1].real is not None and len(counted_on) == 1


# --- the HTML report of a long session ------------------------------------------------------------
def rows_json(page: str) -> list[list]:
    found = re.search(r'<script type="application/json" id="ctxviz-rows">(.*?)</script>', page, re.S)
    assert found, "the rows are in the page as data"
    return json.loads(found.group(1))


def test_the_html_report_of_a_long_session_is_paged_and_escapes_every_message():
    n = PAGE_ROWS * 3 + 17
    hostile_at = PAGE_ROWS * 2 + 4  # on the third page: only in the data, not the first page's HTML
    session = agent_session(n, hostile_at=hostile_at)
    plan = plan_session(session, "missy")
    page = render_html(session, plan, b"")
    # The first page is HTML, the rest is data the pager script shows a page at a time.
    assert page.count("<tr class=") == PAGE_ROWS
    assert f"page 1 of {4:,}" in page and 'id="ctxviz-pager"' in page
    rows = rows_json(page)
    assert len(rows) == n and [r[0] for r in rows] == list(range(n))
    assert rows[hostile_at][8] == HOSTILE, "the text survives as data, unchanged"
    # Nothing from the file can end the script element or start markup.
    assert "<img src=x" not in page and "<b>bold" not in page
    assert page.count("</script>") == 2  # the data's and the pager's own
    data = re.search(r'id="ctxviz-rows">(.*?)</script>', page, re.S).group(1)
    assert "<" not in data and ">" not in data and "&" not in data

    # A session with the hostile text on the first page: escaped in the HTML there too.
    session = agent_session(PAGE_ROWS + 5, hostile_at=4)
    page = render_html(session, plan_session(session, "missy"), b"")
    assert html.escape(HOSTILE) in page and "<img src=x" not in page


def test_a_short_session_keeps_its_whole_table_without_a_script():
    session = agent_session(50, hostile_at=8)
    page = render_html(session, plan_session(session, "missy"), b"")
    assert page.count("<tr class=") == 50
    assert "<script" not in page and html.escape(HOSTILE) in page


PAGER_HARNESS = r"""
// A minimal DOM: enough for the report's pager script (elements by id, textContent, children).
function El(tag) { this.tag = tag; this.children = []; this.textContent = ""; this.className = ""; this.value = ""; this.open = false;
  this.childNodes = this.children; this.listeners = {}; }
El.prototype.appendChild = function (c) { if (c.tag === "#fragment") { this.children.push.apply(this.children, c.children); } else { this.children.push(c); } return c; };
El.prototype.addEventListener = function (k, f) { this.listeners[k] = f; };
Object.defineProperty(El.prototype, "textContent", { get: function () { return this._text; },
  set: function (t) { this._text = t; if (t === "" && this.children) { this.children.length = 0; } } });
var byId = {};
var html = require("fs").readFileSync(process.argv[2], "utf8");
["ctxviz-rows", "ctxviz-body", "ctxviz-page", "ctxviz-search", "ctxviz-decision", "ctxviz-first", "ctxviz-prev", "ctxviz-next", "ctxviz-last", "ctxviz-pager"]
  .forEach(function (id) { byId[id] = new El(id); });
byId["ctxviz-rows"].textContent = html.match(/id="ctxviz-rows">([\s\S]*?)<\/script>/)[1];
global.document = { getElementById: function (id) { return byId[id]; }, createElement: function (t) { return new El(t); },
  createDocumentFragment: function () { return new El("#fragment"); } };
var scripts = html.match(/<script>([\s\S]*?)<\/script>/);
eval(scripts[1]);
function shown() { return byId["ctxviz-body"].children.map(function (tr) { return [tr.children[0].textContent, tr.children[8].children[0].children[0].textContent]; }); }
var out = { first: shown(), page: byId["ctxviz-page"].textContent };
byId["ctxviz-next"].onclick(); byId["ctxviz-next"].onclick(); out.third = shown(); out.third_page = byId["ctxviz-page"].textContent;
byId["ctxviz-last"].onclick(); out.last = shown();
byId["ctxviz-search"].value = "onerror"; byId["ctxviz-search"].oninput(); out.search = shown(); out.search_page = byId["ctxviz-page"].textContent;
console.log(JSON.stringify(out));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the pager script")
def test_the_report_pager_script_pages_and_searches(tmp_path):
    n = PAGE_ROWS * 3 + 17
    hostile_at = PAGE_ROWS * 2 + 4
    session = agent_session(n, hostile_at=hostile_at)
    page = tmp_path / "report.html"
    page.write_text(render_html(session, plan_session(session, "missy"), b""), encoding="utf-8")
    harness = tmp_path / "harness.js"
    harness.write_text(PAGER_HARNESS)
    out = json.loads(subprocess.run(["node", str(harness), str(page)], capture_output=True, text=True, check=True, timeout=60).stdout)
    assert [int(i) for i, _ in out["first"]] == list(range(PAGE_ROWS))
    assert out["page"].startswith("page 1 of 4")
    assert [int(i) for i, _ in out["third"]] == list(range(2 * PAGE_ROWS, 3 * PAGE_ROWS))
    assert out["third_page"].startswith("page 3 of 4")
    assert [int(i) for i, _ in out["last"]] == list(range(3 * PAGE_ROWS, n))
    assert out["search"] == [[str(hostile_at), HOSTILE[:80]]], "found, and shown as text"
    assert out["search_page"].startswith("page 1 of 1 (1 of")


# --- a re-plan repaints what changed on screen ----------------------------------------------------
def test_a_replan_announces_every_changed_cell_the_table_shows():
    """The table compares only the rows it shows: each changed cell among them is inside a
    dataChanged range (so it is repainted), and rows out of sight are not announced."""
    from ctxviz.gui.models import FIELDS, MessageTableModel

    session = agent_session(600)
    before = plan_session(session, "missy", {"total": 12_000})
    after = plan_session(session, "missy", {"total": 15_000})
    model = MessageTableModel()
    model.set_plan(session, before)
    cut = next(m.index for m in after.messages if m.decision != before.messages[m.index].decision)
    first, last = max(0, cut - 10), cut + 10
    model.shown_rows = lambda: (first, last)
    announced: list[tuple[int, int, int, int]] = []
    model.dataChanged.connect(lambda tl, br, *_: announced.append((tl.row(), br.row(), tl.column(), br.column())))
    model.set_plan(session, after)
    changed = {(r, c) for r in range(len(after.messages)) for c, f in enumerate(FIELDS)
               if getattr(before.messages[r], f) != getattr(after.messages[r], f)}
    assert any(first <= r <= last for r, _ in changed) and any(r > last + 50 for r, _ in changed)
    covered = {(r, c) for top, bottom, left, right in announced for r in range(top, bottom + 1) for c in range(left, right + 1)}
    assert {(r, c) for r, c in changed if first <= r <= last} <= covered
    assert all(first <= r <= last for r, _ in covered), "rows out of sight are read afresh when scrolled to"
    assert model.plan is after
