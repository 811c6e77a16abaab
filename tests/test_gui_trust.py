"""The app trusts nothing in a session file and never hangs (the "Trust" issue, GUI side).

- cyclic garbage is collected on the GUI thread only, while any window lives (a collection on a
  worker once deadlocked the suite: it destroyed a QObject there while the GUI thread destroyed a menu);
- session text is plain text in every label, message box and tooltip (`<img src=/dev/zero>` made
  Qt's rich text read /dev/zero until the app died);
- numbers are bounded before Qt or pyqtgraph see them (10**20 tokens crashed the timeline; 2**29
  and more broke the parameter controls);
- a load that never returns blocks neither later loads nor closing the window;
- Open Recent leaves out files that are gone; headless runs print no offscreen-plugin noise;
- the status bar says exactly what plan.totals says.
"""

from __future__ import annotations

import dataclasses
import gc
import html
import json
import os
import re
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6 import QtGui  # noqa: E402
from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtGui import QAction, QTextDocument  # noqa: E402
from PySide6.QtWidgets import QLabel, QMenu  # noqa: E402

from ctxviz.engine.checks import PlanOptions  # noqa: E402
from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import get_policy  # noqa: E402
from ctxviz.engine.session import Usage  # noqa: E402
from ctxviz.engine.simulate import simulate  # noqa: E402
from ctxviz.errors import LoadError  # noqa: E402
from ctxviz.gui import viewmodel  # noqa: E402
from ctxviz.gui.main_window import MainWindow  # noqa: E402
from ctxviz.gui.safe import PLOT_LIMIT  # noqa: E402
from ctxviz.gui.status import SEPARATOR  # noqa: E402
from ctxviz.gui.threads import COLLECTOR, GC_THRESHOLD, WORKER_PREFIX, worker_threads  # noqa: E402
from ctxviz.gui.widgets.param_form import SLIDER_STEPS, ParamForm  # noqa: E402
from ctxviz.gui.widgets.timeline import TimelineView  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402
from ctxviz.io.text_summary import plan_summary  # noqa: E402

ROOT = Path(__file__).parent.parent
NATIVE = str(ROOT / "tests" / "data" / "native_small.yaml")
SAMPLES = ROOT / "sample_sessions"
EVIL = "<img src=/dev/zero>"
BOLD = "<b>bold</b>"
HUGE = 10**20
HUGE_TOTAL = 2**53  # the largest total ctxviz accepts: far beyond int32 and the plot's 1e15 bound


# --- helpers ---------------------------------------------------------------------------------------
def chat_file(tmp_path: Path, name: str, n: int) -> str:
    """An OpenAI chat of `n` exchanges with tool calls, large enough for missy to drop some."""
    msgs = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(n):
        if i % 3 == 0:
            msgs.append({"role": "user", "content": f"Please fix test {i} in src/mod_{i}.py " + "and explain " * (i % 7 + 1)})
        elif i % 3 == 1:
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{i}.py"})}}]})
        else:
            msgs.append({"role": "tool", "tool_call_id": f"c{i - 1}", "content": "def f():\n    return 1\n" * (i * 30)})
    msgs.append({"role": "user", "content": "Now run the whole suite."})
    path = tmp_path / name
    path.write_text(json.dumps({"model": "gpt-4o", "messages": msgs}))
    return str(path)


def new_window(qtbot, tmp_path: Path, name: str = "settings.ini") -> MainWindow:
    win = MainWindow(settings=QSettings(str(tmp_path / name), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.show()
    return win


def open_and_wait(qtbot, win: MainWindow, path: str, timeout: int = 20000) -> None:
    with qtbot.waitSignal(win.vm.planReady, timeout=timeout):
        win.open_path(path)


def shown_as(tooltip: str) -> str:
    """What Qt shows for a tooltip: it is rich text when Qt guesses so (it always guesses)."""
    if not QtGui.Qt.mightBeRichText(tooltip):
        return tooltip
    document = QTextDocument()
    document.setHtml(tooltip)
    return document.toPlainText()


def assert_literal_tooltip(tooltip: str, text: str) -> None:
    """The tooltip shows `text` literally: escaped (no tag of the file's survives) and complete."""
    assert "<img" not in tooltip and "<b>" not in tooltip, tooltip  # checked before Qt ever renders it
    assert shown_as(tooltip) == text


def make_qt_cycles(count: int) -> list[weakref.ref]:
    """QObjects (menus with actions, as in the deadlock) kept alive only by reference cycles, so only
    the cyclic collector can free them, on whichever thread it runs."""
    refs = []
    for i in range(count):
        menu = QMenu()
        action = QAction(f"cycle {i}", menu)
        menu.addAction(action)
        menu.myself = menu
        menu.payload = [menu, action]
        refs.append(weakref.ref(menu))
    return refs


class DeathProbe:
    """Records the thread that frees it."""

    def __init__(self, sink: list[str]) -> None:
        self.sink = sink

    def __del__(self) -> None:
        self.sink.append(threading.current_thread().name)


@pytest.fixture
def collections():
    """(thread id, thread name, generation) of every cyclic collection from here on. Python's own
    thresholds are set very low, so any thread that is allowed to collect automatically does."""
    seen: list[tuple[int, str, int]] = []

    def hook(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append((threading.get_ident(), threading.current_thread().name, info["generation"]))

    before = gc.get_threshold()
    gc.set_threshold(100, 2, 2)
    gc.callbacks.append(hook)
    try:
        yield seen
    finally:
        gc.callbacks.remove(hook)
        gc.set_threshold(*before)


# --- 1. never hang: cyclic garbage is collected on the GUI thread only -----------------------------
def test_cyclic_garbage_is_collected_on_the_gui_thread_only(qtbot, tmp_path, collections):
    """Stress: QObjects in cycles made on the GUI thread while re-plans and loads run on workers."""
    files = [chat_file(tmp_path, "a.json", 60), chat_file(tmp_path, "b.json", 90)]
    win = new_window(qtbot, tmp_path)
    enabled = [gc.isenabled()]
    cycles = []
    for round_ in range(4):
        open_and_wait(qtbot, win, files[round_ % 2])
        for step in range(8):
            cycles += make_qt_cycles(15)
            with qtbot.waitSignal(win.vm.planReady, timeout=20000):
                win.vm.set_param("total", 4000 + 1500 * step + round_)
        enabled.append(gc.isenabled())  # loading (which switches gc off and back on) left it off
    # The GUI thread's collector still frees them once enough has been allocated. They may sit in
    # the oldest generation, whose collections the collector spaces out by their cost (2 % of the
    # time); in a full test run the heap is large and one costs long enough that the next would be
    # due only after this wait: start from a spacing already served, as after a quiet minute.
    COLLECTOR._last_full_end = 0.0
    # The cycles have aged into the oldest generation, which is collected only once more than
    # GC_THRESHOLD[2] younger collections have run since the last full one (CPython's rule, which
    # the collector keeps): how many had, after the stress, varied from run to run, and an idle
    # test allocates too little for more. Younger collections here, on this (the GUI) thread, make
    # the full one due (they reach no object of the oldest generation: the aged cycles are left to
    # the app's collector).
    for _ in range(GC_THRESHOLD[2] + 1):
        gc.collect(1)
    junk = [[] for _ in range(GC_THRESHOLD[0] + 1000)]
    for j in junk:
        j.append(j)
    del junk, j
    qtbot.waitUntil(lambda: all(ref() is None for ref in cycles), timeout=30000)
    main = threading.main_thread().ident
    assert collections, "nothing was collected at all"
    elsewhere = [(name, generation) for ident, name, generation in collections if ident != main]
    assert elsewhere == []
    assert not any(enabled)


def test_no_collection_starts_on_a_ctxviz_worker(qtbot, tmp_path, collections):
    """Every kind of background work: loads, plans, the simulation, the `why` search, compare."""
    path = chat_file(tmp_path, "c.json", 60)
    win = new_window(qtbot, tmp_path)
    open_and_wait(qtbot, win, path)
    with qtbot.waitSignal(win.vm.timelineReady, timeout=30000):
        win.simulate()
    dropped = next(m.index for m in win.vm.plan.messages if not m.sent)
    with qtbot.waitSignal(win.vm.explanationReady, timeout=30000):
        win.select_message(dropped)
    with qtbot.waitSignal(win.vm.compareReady, timeout=20000):
        win.vm.request_compare("supyagent", {})
    for total in (5000, 7000, 9000):
        make_qt_cycles(10)
        with qtbot.waitSignal(win.vm.planReady, timeout=20000):
            win.vm.set_param("total", total)
    open_and_wait(qtbot, win, NATIVE)
    gc.collect()  # on the GUI thread: allowed
    assert collections
    assert [name for _, name, _ in collections if name.startswith(WORKER_PREFIX)] == []


def test_loading_on_a_worker_cannot_switch_the_collector_back_on(qtbot, tmp_path):
    """The loader switches gc off while it reads and back on only if it was on: never, here."""
    win = new_window(qtbot, tmp_path)
    seen = []
    win.vm.sessionLoaded.connect(lambda _s: seen.append(gc.isenabled()))
    for path in (NATIVE, chat_file(tmp_path, "d.json", 30), NATIVE):
        open_and_wait(qtbot, win, path)
    assert seen == [False, False, False] and not gc.isenabled()


def test_collection_is_restored_when_the_last_window_closes(qtbot, tmp_path):
    assert gc.isenabled() and COLLECTOR.holders == 0
    first, second = new_window(qtbot, tmp_path, "1.ini"), new_window(qtbot, tmp_path, "2.ini")
    open_and_wait(qtbot, first, NATIVE)
    assert not gc.isenabled() and COLLECTOR.holders == 2
    first.close()
    assert not gc.isenabled()  # the second window's workers may still run
    second.close()
    qtbot.waitUntil(lambda: gc.isenabled(), timeout=5000)
    assert worker_threads() == []


# --- 4. a load that never returns ------------------------------------------------------------------
@pytest.fixture
def stuck_loads(monkeypatch):
    """Loading a file whose name contains 'stuck' blocks until its gate is opened (`gates[name].set()`;
    all open at teardown, and after 30 s at the latest), then fails."""
    gates: dict[str, threading.Event] = {}
    lock = threading.Lock()
    real = viewmodel.load_session

    def gate(name: str) -> threading.Event:
        with lock:
            return gates.setdefault(name, threading.Event())

    def load(path, *args, **kwargs):
        name = os.path.basename(str(path))
        if "stuck" in name:
            gate(name).wait(30)
            raise LoadError(str(path), "gave up")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(viewmodel, "load_session", load)
    yield gate
    with lock:
        for event in gates.values():
            event.set()


def test_a_load_that_never_returns_blocks_neither_later_opens_nor_closing(qtbot, tmp_path, stuck_loads):
    win = new_window(qtbot, tmp_path)
    errors = []
    win.vm.errorOccurred.connect(errors.append)
    win.open_path(str(tmp_path / "stuck.json"))
    good = chat_file(tmp_path, "good.json", 30)
    open_and_wait(qtbot, win, good, timeout=10000)  # not queued behind the stuck load
    assert win.vm.session.source == good
    # The stuck load finishing late (here: failing) changes nothing: a newer open superseded it.
    stuck_loads("stuck.json").set()
    qtbot.waitUntil(lambda: not [t for t in worker_threads() if "load" in t.name], timeout=5000)
    qtbot.wait(50)
    assert errors == [] and win.vm.session.source == good
    win.open_path(str(tmp_path / "stuck-again.json"))  # and one still running when the window closes
    started = time.monotonic()
    win.close()
    assert time.monotonic() - started < 3 and not win.isVisible()


def test_closing_while_a_load_hangs_does_not_wait_for_it(qtbot, tmp_path, stuck_loads):
    win = new_window(qtbot, tmp_path)
    win.open_path(str(tmp_path / "stuck.json"))
    qtbot.waitUntil(lambda: any("load" in t.name for t in worker_threads()), timeout=5000)
    started = time.monotonic()
    win.close()
    assert time.monotonic() - started < 3
    assert not gc.isenabled()  # the stuck worker may still allocate: the collector stays with the GUI thread
    stuck_loads("stuck.json").set()
    qtbot.waitUntil(lambda: gc.isenabled(), timeout=5000)  # and comes back once it has ended


def test_a_view_model_outlived_by_its_load_is_destroyed_on_the_gui_thread(qtbot, stuck_loads):
    """The load's job holds the view-model: had it the last reference, the QObject would be
    destroyed on the worker when the job ends."""
    vm = viewmodel.ContextViewModel()
    where: list[str] = []
    vm.probe = DeathProbe(where)  # freed with the view-model's wrapper, on the same thread
    vm.open("stuck.json")
    vm.shutdown()
    del vm
    gc.collect()
    assert where == []  # kept while its load runs
    stuck_loads("stuck.json").set()
    qtbot.waitUntil(lambda: bool(where), timeout=5000)
    assert where == [threading.main_thread().name]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_never_wedges_the_window(qtbot, tmp_path):
    fifo = tmp_path / "session.json"
    os.mkfifo(fifo)
    win = new_window(qtbot, tmp_path)
    try:
        win.open_path(str(fifo))  # refused up front, or a load that waits for a writer forever
        open_and_wait(qtbot, win, NATIVE, timeout=10000)
        assert win.vm.session.source == NATIVE
        started = time.monotonic()
        win.close()
        assert time.monotonic() - started < 3
    finally:
        try:  # a reader still blocked on the FIFO gets end-of-file
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        qtbot.waitUntil(lambda: not [t for t in worker_threads() if "load" in t.name], timeout=5000)


# --- 5. Open Recent --------------------------------------------------------------------------------
def test_open_recent_leaves_out_files_that_are_gone(qtbot, tmp_path):
    kept, gone, later = (chat_file(tmp_path, f"{n}.json", 10) for n in ("kept", "gone", "later"))
    settings = QSettings(str(tmp_path / "recent.ini"), QSettings.Format.IniFormat)
    settings.setValue("recent/files", [gone, kept, later])
    settings.sync()
    os.remove(gone)
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    assert [a.text() for a in win.recent_menu.actions()] == ["kept.json", "later.json"]
    assert settings.value("recent/files") == [kept, later]
    # Deleted after the menu was built: left out when the menu next opens ...
    os.remove(later)
    win.recent_menu.aboutToShow.emit()
    assert [a.text() for a in win.recent_menu.actions()] == ["kept.json"]
    # ... and chosen before it was rebuilt: said so, and dropped; nothing is loaded.
    stale = win.recent_menu.actions()[0]
    os.remove(kept)
    errors = []
    win.vm.errorOccurred.connect(errors.append)
    stale.trigger()
    assert win.status_label.text() == f"{kept} no longer exists; removed from Open Recent"
    assert win.recent_menu.actions() == [] and not win.recent_menu.isEnabled()
    assert win.recent_files() == [] and win.vm.session is None and errors == []
    win.close()


# --- 2. session text is plain text everywhere ------------------------------------------------------
def evil_session(tmp_path: Path) -> str:
    """Markup in every field a session file controls, and in the file's own path."""
    folder = tmp_path / "<img src=" / "dev" / f"zero> {BOLD.split('/')[0]}"
    folder.mkdir(parents=True)
    path = folder / "b>.yaml"
    assert str(path).endswith(f"{EVIL} {BOLD}.yaml")
    doc = {
        "ctxviz": 1, "title": f"{BOLD} {EVIL}", "model": "gpt-4o", "system_prompt": f"{EVIL} system",
        "messages": [
            {"id": EVIL, "role": "user", "content": f"{EVIL} please {BOLD}"},
            {"id": BOLD, "role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "name": EVIL, "arguments": json.dumps({"q": EVIL})}]},
            {"id": "t1", "role": "tool", "tool_call_id": "c1", "content": f"{BOLD} " + "result " * 4000},
            *({"id": f"{BOLD}{i}", "role": "user" if i % 2 else "assistant", "content": f"{EVIL} turn {i} " * 40}
              for i in range(40)),
        ],
    }
    path.write_text(json.dumps(doc))
    return str(path)


def assert_no_label_renders_markup(win: MainWindow) -> None:
    """A label showing the file's markup shows it as plain text; rich-text labels only escaped."""
    for label in win.findChildren(QLabel):
        text = label.text()
        if EVIL in text or BOLD in text:
            assert label.textFormat() == Qt.TextFormat.PlainText, (label, text)


def test_session_text_is_plain_text_everywhere(qtbot, tmp_path):
    path = evil_session(tmp_path)
    win = new_window(qtbot, tmp_path)
    win.open_path(path)
    assert win.status_label.textFormat() == Qt.TextFormat.PlainText
    assert win.status_label.text() == f"Loading {path}…"
    qtbot.waitUntil(lambda: win.vm.plan is not None, timeout=20000)
    session, plan = win.vm.session, win.vm.plan
    assert session.messages[0].id == EVIL and session.messages[1].tool_calls[0].name == EVIL
    assert win.windowTitle() == f"{BOLD} {EVIL} — ctxviz"
    # The table's tooltips: every message's text and reason, literally.
    model = win.model
    for row in range(model.rowCount()):
        index = model.message_index(row)
        text = session.messages[index].text[:600]
        assert_literal_tooltip(model.index(row, 1).data(Qt.ItemDataRole.ToolTipRole), text)
        assert_literal_tooltip(model.index(row, 8).data(Qt.ItemDataRole.ToolTipRole), plan.messages[index].reason)
        assert model.index(row, 1).data() == session.messages[index].id
    # The detail panel (HTML, escaped): the message and its tool call as written.
    win.select_message(1)
    assert EVIL in win.detail.toPlainText()
    win.select_message(0)
    assert f"{EVIL} please {BOLD}" in win.detail_text()
    assert "<img" not in win.detail.toHtml() and "&lt;img src=/dev/zero&gt;" in win.detail.toHtml()
    # Open Recent names the file in its tooltip.
    (action,) = win.recent_menu.actions()
    assert_literal_tooltip(action.toolTip(), path)
    # Compare: reasons in tooltips.
    with qtbot.waitSignal(win.vm.compareReady, timeout=20000):
        win.vm.request_compare("missy", {"total": "6000"})
    groups = win.compare.group_items()
    assert groups
    a, b = win.compare.shown
    for group in groups:  # (grouped by reason since issue 24: a group's messages are its children)
        group.setExpanded(True)
        for row in range(group.childCount()):
            item = group.child(row)
            index = int(item.text(0).lstrip("#"))
            for col, side in ((3, a), (4, b)):  # the short reason in the cell, the plan's whole sentence on hover
                assert_literal_tooltip(item.toolTip(col), side.messages[index].reason)
    # The timeline's turn label quotes event messages.
    with qtbot.waitSignal(win.vm.timelineReady, timeout=30000):
        win.simulate()
    assert win.timeline.label.textFormat() == Qt.TextFormat.PlainText
    # A value the framework refuses: its message, inline.
    assert all(label.textFormat() == Qt.TextFormat.PlainText for label in win.params.errors.values())
    win.copy_command()
    assert path in win.status_label.text()
    assert_no_label_renders_markup(win)
    win.close()


@pytest.mark.parametrize("field_", ["role", "content-type"])
def test_an_error_quoting_the_file_is_shown_as_plain_text(qtbot, tmp_path, field_):
    """A loader refuses a 60-byte session with markup for a role (or a part type): the error box and
    the status bar show the literal text instead of loading what it names."""
    bad = tmp_path / "bad.json"
    if field_ == "role":
        bad.write_text(json.dumps([{"role": EVIL, "content": BOLD}]))
    else:
        bad.write_text(json.dumps([{"role": "user", "content": [{"type": EVIL, "text": BOLD}]}]))
    win = new_window(qtbot, tmp_path)
    errors = []
    win.vm.errorOccurred.connect(errors.append)
    win.vm.sessionLoaded.connect(lambda _s: errors.append(None))
    win.open_path(str(bad))
    qtbot.waitUntil(lambda: bool(errors), timeout=10000)
    if errors[0] is None:  # accepted after all: nothing to show, and nothing rendered
        assert_no_label_renders_markup(win)
        return
    message = errors[0]
    assert EVIL in message
    box = win.last_error_box
    assert box.textFormat() == Qt.TextFormat.PlainText
    assert box.text() == message
    qtbot.waitUntil(box.isVisible)
    assert win.status_label.textFormat() == Qt.TextFormat.PlainText and win.status_label.text() == message
    assert_no_label_renders_markup(win)
    box.close()
    win.close()


# --- 3. numbers within what Qt and pyqtgraph can hold ----------------------------------------------
def huge_timeline():
    session = load_session(str(SAMPLES / "claude_code_compaction.jsonl"))
    messages = list(session.messages)
    reported = [i for i, m in enumerate(messages) if m.usage is not None]
    for i in reported[::3]:
        messages[i] = dataclasses.replace(messages[i], usage=Usage(input_tokens=HUGE, cache_read_input_tokens=HUGE))
    session = dataclasses.replace(session, messages=tuple(messages))
    params = get_policy("missy").make_params({"total": HUGE_TOTAL})
    return simulate(session, "missy", params, store=CountStore())


def test_timeline_draws_huge_usage_and_budgets_within_bounds(qtbot):
    timeline = huge_timeline()
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    view.set_timeline(timeline)
    view.grab()  # painted, not only built
    items = view.plot.listDataItems()
    assert {item.name() for item in items} >= {"tokens sent", "budget", "reported by the provider"}
    for item in items:
        xs, ys = item.getData()
        for values in (xs, ys):
            assert values.dtype.kind == "f" and all(abs(v) <= PLOT_LIMIT for v in values)
    (y0, y1) = view.plot.getViewBox().viewRange()[1]
    assert 0 <= y0 < y1 <= PLOT_LIMIT * 1.2
    # The exact numbers are still there, in words.
    view.slider.setValue(len(timeline.turns) - 1)
    assert f"of {HUGE_TOTAL:,} tokens" in view.label.text()


@dataclass(frozen=True)
class BigParams:
    count: int = field(default=2**40, metadata={"help": "an int beyond 32 bits", "min": 0, "step": 1000})
    bounded: int = field(default=2**40, metadata={"help": "beyond its own maximum", "min": 0, "max": 1000})
    share: float = field(default=2.0**40, metadata={"help": "a float beyond its slider", "min": 0.0, "max": 1.0})
    limit: int | None = field(default=None, metadata={"help": "optional", "min": 1, "step": 1000})
    flag: bool = True


def test_parameter_controls_hold_values_beyond_32_bits(qtbot):
    form = ParamForm()
    qtbot.addWidget(form)
    emitted = []
    form.valueChanged.connect(lambda name, value: emitted.append((name, value)))
    form.build(BigParams(), {"limit": 2**45})
    for name, value in (("count", 2**40), ("bounded", 2**40), ("share", 2.0**40), ("limit", 2**45)):
        slider, spin = form.editors[name]
        assert spin.value() == value  # kept exactly
        assert slider.minimum() <= slider.value() <= slider.maximum()
    assert form.editors["count"][1].text() == "1,099,511,627,776"  # and shown
    assert form.editors["bounded"][0].value() == 1000  # the slider pinned to its end
    # Values set elsewhere (a preset): shown exactly, no signal.
    form.set_values(BigParams(count=2**62, bounded=3, share=0.5, limit=7 * 10**20))
    assert form.editors["count"][1].value() == 2**62 and form.editors["limit"][1].value() == 7 * 10**20
    assert form.editors["bounded"][0].value() == 3 and form.editors["share"][0].value() == 500
    assert emitted == []
    # Typed: the exact value goes out.
    spin = form.editors["count"][1]
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "12,345,678,901,234,567")
    qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
    assert emitted[-1] == ("count", 12_345_678_901_234_567)
    # The slider over a range beyond 32 bits moves in proportional steps.
    slider = form.editors["count"][0]
    assert slider.maximum() == SLIDER_STEPS
    # (its range, which ctxviz guessed, grew to take in the 2**62 set above: the handle is where the value is)
    scale = form.scales["count"]
    assert scale.lo == 0 and scale.hi == 2**63
    slider.setValue(SLIDER_STEPS // 2)
    name, value = emitted[-1]
    assert name == "count" and isinstance(value, int) and abs(value - 2**62) <= 2**63 // SLIDER_STEPS
    assert spin.value() == value


def test_window_with_a_huge_budget_and_timeline(qtbot, tmp_path):
    win = new_window(qtbot, tmp_path)
    open_and_wait(qtbot, win, NATIVE)
    with qtbot.waitSignal(win.vm.planReady, timeout=20000):
        win.vm.set_param("total", HUGE_TOTAL)
    slider, spin = win.params.editors["total"]
    assert spin.value() == HUGE_TOTAL and slider.minimum() <= slider.value() <= slider.maximum()
    with qtbot.waitSignal(win.vm.timelineReady, timeout=30000):
        win.simulate()
    win.grab()
    assert f"{HUGE_TOTAL:,}" in win.status_label.text()
    win.close()


# --- 3 and 6 headless, in real processes: no crash, no plugin noise --------------------------------
@pytest.fixture(scope="module")
def headless_runs(tmp_path_factory):
    """Each command once, at most one per core at a time (six Qt processes at once took half the
    fixture's timeout on a loaded 2-core machine): {name: (exit code, stderr, output path)}."""
    tmp = tmp_path_factory.mktemp("headless")
    huge = tmp / "huge.json"  # a two-message chat whose provider reported 10**20 input tokens
    huge.write_text('[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","usage":{"input_tokens":'
                    f'{HUGE}' '}}]')
    commands = {
        "report-usage": ["report", str(huge), "-o", "{out}.png"],
        "report-total": ["report", NATIVE, "--set", f"total={HUGE_TOTAL}", "-o", "{out}.png"],
        "report-html": ["report", NATIVE, "-o", "{out}.html"],
        "shot-usage": ["gui", str(huge), "--screenshot", "{out}.png", "--tab", "1"],
        "shot-total": ["gui", NATIVE, "--set", f"total={HUGE_TOTAL}", "--screenshot", "{out}.png", "--tab", "1"],
        "shot-2**40": ["gui", NATIVE, "--set", f"total={2**40}", "--set", f"fresh_tail_count={2**40}", "--screenshot", "{out}.png"],
    }
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONFAULTHANDLER": "1"}
    env.pop("CTXVIZ_DEBUG", None)
    from concurrent.futures import ThreadPoolExecutor

    def one(name: str, args: list[str]) -> tuple[int, str, Path]:
        out = str(tmp / name.replace("*", "x"))
        argv = [sys.executable, "-m", "ctxviz", *(a.replace("{out}", out) for a in args)]
        target = next(a for a in argv if a.startswith(out))
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
        return done.returncode, done.stderr, Path(target)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = {name: pool.submit(one, name, args) for name, args in commands.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", ["report-usage", "report-total", "shot-usage", "shot-total", "shot-2**40"])
def test_huge_numbers_render_headless(headless_runs, name):
    code, err, out = headless_runs[name]
    assert code == 0, err
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and out.stat().st_size > 10_000
    assert "Traceback" not in err and "Fatal" not in err, err


def test_headless_runs_print_no_offscreen_plugin_noise(headless_runs):
    for name, (code, err, _) in headless_runs.items():
        assert code == 0, (name, err)
        assert "propagateSizeHints" not in err, (name, err)


def test_the_message_filter_passes_every_other_qt_message_through():
    script = ("from ctxviz.gui.app import application\n"
              "from PySide6.QtCore import qWarning\n"
              "application()\n"
              "qWarning('This plugin does not support propagateSizeHints()')\n"
              "qWarning('ctxviz: a message worth reading')\n")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ctxviz: a message worth reading" in done.stderr
    assert "propagateSizeHints" not in done.stderr


# --- 7. the status bar says what plan.totals says --------------------------------------------------
STATUS = re.compile(r"^(?P<policy>[\w-]+) budget: (?P<used>[\d,]+) of (?P<budget>[\d,]+) tokens \((?P<tokenizer>[^)]*)\)$")
TOTAL_ROW = re.compile(r"^  total\s+(?P<budget>[\d,]+)\s+(?P<used>[\d,]+)\s+(?P<verdict>.+)$", re.M)


def number(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.mark.parametrize(("policy", "sets"), [
    ("missy", {}),
    ("missy", {"total": "8000", "fresh_tail_count": "40"}),  # within the total, history over its part
    ("supyagent", {}),
    ("supyagent", {"context_limit": "10000", "min_recent_messages": "40"}),  # over the budget
    ("categories", {}),
    ("categories", {"max_tokens": "1500"}),
    ("missy-consolidator", {}),
    ("missy-consolidator", {"max_tokens": "2000"}),
])
def test_the_status_bar_shows_exactly_the_plans_totals(qtbot, tmp_path, policy, sets):
    path = str(SAMPLES / "coding_agent.yaml")
    win = new_window(qtbot, tmp_path)
    open_and_wait(qtbot, win, path)
    with qtbot.waitSignal(win.vm.planReady, timeout=20000):
        win.pair_box.setChecked(True)
    with qtbot.waitSignal(win.vm.planReady, timeout=20000):
        win.vm.set_params(get_policy(policy).make_params(sets), policy)
    plan, session = win.vm.plan, win.vm.session
    assert plan.policy == policy and win.shown_plan is plan
    # The CLI's plan (`ctxviz plan --pair-safe`) has the same totals ...
    cli = plan_session(load_session(path), policy, get_policy(policy).make_params(sets), store=CountStore(),
                       options=PlanOptions(pair_safe=True))
    assert cli.totals == plan.totals
    # ... and the status bar shows them, nothing else.
    t = plan.totals
    parts = win.status_label.text().split(SEPARATOR)
    head = STATUS.match(parts[0])
    assert head is not None, parts[0]
    assert (head["policy"], number(head["used"]), number(head["budget"])) == (policy, t.used, t.budget)
    verdict = parts[1]
    assert verdict == plan.fit_verdict()
    if t.fits:
        assert verdict.startswith("fits")
    elif t.used > t.budget:
        assert verdict.startswith(f"OVER by {t.used - t.budget:,}")
    else:  # the policy's own test fails within the total: which parts are over, by how much
        over = plan.parts_over()
        assert over and verdict == "does not fit: " + "; ".join(
            f"{k} is over its {plan.allocation[k]:,} allotment by {n:,}" for k, n in over.items())
    assert not re.search(r"by -", verdict)  # never "OVER by -1,481"
    sent = re.fullmatch(r"([\d,]+) sent, ([\d,]+) not sent", parts[2])
    assert sent is not None and (number(sent[1]), number(sent[2])) == (t.kept_messages, t.dropped_messages)
    # The same total row as `ctxviz plan` prints.
    row = TOTAL_ROW.search(plan_summary(cli, session))
    assert row is not None
    assert (number(row["budget"]), number(row["used"])) == (t.budget, t.used)
    assert row["verdict"].strip() == verdict
    win.close()


def test_the_report_gives_the_same_verdict(qtbot):
    from ctxviz.gui.report import ReportWidget, render_html

    session = load_session(str(SAMPLES / "coding_agent.yaml"))
    plan = plan_session(session, "supyagent", get_policy("supyagent").make_params({"context_limit": "10000", "min_recent_messages": "40"}),
                        store=CountStore(), options=PlanOptions(pair_safe=True))
    said = plan.fit_verdict()
    assert said.startswith("OVER by ")
    assert f" · {html.escape(said)} · " in render_html(session, plan, b"")
    widget = ReportWidget(session, plan, None)
    qtbot.addWidget(widget)
    title = widget.findChildren(QLabel)[0]
    document = QTextDocument()
    document.setHtml(title.text())
    assert f" · {said} · " in document.toPlainText()
