"""The app and the report at real scale (issue 11), measured in interleaved rounds.

    QT_QPA_PLATFORM=offscreen python bench/bench_gui.py [--messages 10000] [--big 100000] [--rounds 3] [--quick]

Sessions are realistic agent sessions (`bench_engine.agent_session`: tool calls answered by long tool
outputs, multi-part user content), written as OpenAI-chat JSONL where a file is needed. Rows:

  1. a parameter change -> the window repainted, 90th percentile over the changes of a round, with
     the table at the top and with it scrolled to the cut (the cut's message selected); the two
     scenarios alternate round by round; goal one 60 Hz frame (16.7 ms)
  2. the longest GUI-thread stall during a 60 Hz slider drag (a 1 ms heartbeat timer's longest gap)
  3. a 100,000-message file: process start -> first plan painted in the app, against the whole
     `ctxviz plan` process on the same file (fresh processes, alternating); goal 2x
  4. cancelling a running simulation: Cancel -> the worker free again; goal 100 ms
  5. `ctxviz report` of a 10,000-message file with the timeline against `--no-timeline`; goal 5x

The in-window measurements (1, 2, 4) run in a child process (`--window-rows`) so that `bench/run.py`
stays a small parent; `run()` returns the rows for its summary. Prints; never asserts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from common import ROOT, Row, interleaved, spread, wall, within  # noqa: E402

FRAME_MS = 1000 / 60
STALL_GOAL_MS = 50.0
CANCEL_GOAL_MS = 100.0


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


def write_agent_file(path: str, messages: int) -> str:
    """The agent session as OpenAI-chat JSONL (written once per size, reused across runs)."""
    if os.path.exists(path):
        return path
    from bench_engine import agent_session

    session = agent_session(messages)
    tmp = path + ".part"
    with open(tmp, "w", encoding="utf-8") as f:
        for m in session.messages:
            f.write(json.dumps(m.to_openai()) + "\n")
    os.replace(tmp, path)
    return path


def scratch_dir() -> str:
    path = os.path.join(tempfile.gettempdir(), "ctxviz-bench-gui")
    os.makedirs(path, exist_ok=True)
    return path


# --- in the window (a child process) --------------------------------------------------------------
def window_rows(messages: int, rounds: int, changes: int) -> list[dict]:
    from bench_engine import agent_session
    from PySide6.QtCore import QElapsedTimer, QEventLoop, QSettings, Qt, QTimer
    from PySide6.QtWidgets import QTableView

    from ctxviz.engine.planner import plan_session
    from ctxviz.gui.app import application
    from ctxviz.gui.main_window import MainWindow

    app = application()
    scratch = tempfile.TemporaryDirectory(prefix="ctxviz-bench-")
    settings = QSettings(os.path.join(scratch.name, "settings.ini"), QSettings.Format.IniFormat)

    gui_ms: list[float] = []

    class TimedWindow(MainWindow):
        def _show_plan(self, session, plan) -> None:  # noqa: ANN001
            t = time.perf_counter()
            super()._show_plan(session, plan)
            gui_ms.append((time.perf_counter() - t) * 1000)

    def wait_for(signal, timeout_ms: int = 120_000) -> None:  # noqa: ANN001
        loop = QEventLoop()
        signal.connect(loop.quit)
        QTimer.singleShot(timeout_ms, loop.quit)
        loop.exec()
        signal.disconnect(loop.quit)

    window = TimedWindow(settings=settings)
    window.resize(1500, 950)
    window.show()
    vm = window.vm
    session = agent_session(messages)
    vm.set_session(session)
    wait_for(vm.planReady)
    vm.wait()
    app.processEvents()
    window.repaint()
    spin = window.params.editors["total"][1]
    slider = window.params.editors["total"][0]
    base_total = vm.params.total

    # The plan alone, for reference: the same engine call the worker makes.
    plan_ms = []
    for i in range(changes):
        params = vm.params.__class__(**{**vars(vm.params), "total": base_total + 997 * (i % 7) + 13 * i})
        t = time.perf_counter()
        plan_session(session, vm.policy, params, vm.tokenizer, vm.store, None, vm.options)
        plan_ms.append((time.perf_counter() - t) * 1000)

    def change_round(r: int, at_cut: bool) -> tuple[list[float], list[float], list[float]]:
        """`changes` parameter changes, each moving the cut; change -> repainted window, and GUI time."""
        if at_cut:
            cut = vm.plan.extra.get("cut_index") if vm.plan is not None else None
            cut = int(cut) if cut is not None else messages // 2
            window.select_message(cut)
            window.table.scrollTo(window.model.index(cut, 0), QTableView.ScrollHint.PositionAtCenter)
        else:
            window.table.clearSelection()
            window.selected = None
            window.table.scrollToTop()
        vm.wait()
        app.processEvents()
        round_trip, gui, cpu = [], [], []
        for i in range(changes):
            value = base_total + 997 * ((i + r) % 7) + 13 * i + 1
            gui_ms.clear()
            c0 = time.thread_time()  # the GUI thread's CPU: what the machine's load does not inflate
            t0 = time.perf_counter()
            spin.setValue(value)  # what a typed value or a slider step does
            wait_for(vm.planReady)
            t1 = time.perf_counter()
            app.processEvents()  # pyqtgraph's deferred updates, then the paint events they post
            t2 = time.perf_counter()
            cpu.append((time.thread_time() - c0) * 1000)
            round_trip.append((t2 - t0) * 1000)
            gui.append(sum(gui_ms) + (t2 - t1) * 1000)
        vm.wait()
        app.processEvents()
        return round_trip, gui, cpu

    def drag_round() -> float:
        """A 60 Hz slider drag over a second; the longest gap of a 1 ms heartbeat on the GUI thread."""
        ticks: list[float] = []
        heartbeat = QTimer()
        heartbeat.setTimerType(Qt.TimerType.PreciseTimer)
        heartbeat.setInterval(1)
        heartbeat.timeout.connect(lambda: ticks.append(time.perf_counter()))
        start = slider.value()
        steps = iter(range(1, 61))
        drag = QTimer()
        drag.setTimerType(Qt.TimerType.PreciseTimer)
        drag.setInterval(int(FRAME_MS))
        loop = QEventLoop()

        def step() -> None:
            k = next(steps, None)
            if k is None:
                drag.stop()
                QTimer.singleShot(300, loop.quit)  # the last plan lands and paints
                return
            slider.setValue(start + k * max(1, slider.singleStep()) * 3)

        drag.timeout.connect(step)
        heartbeat.start()
        drag.start()
        elapsed = QElapsedTimer()
        elapsed.start()
        loop.exec()
        heartbeat.stop()
        slider.setValue(start)
        vm.wait()
        app.processEvents()
        gaps = [(b - a) * 1000 for a, b in zip(ticks, ticks[1:], strict=False)]
        return max(gaps) if gaps else float("nan")

    def cancel_round() -> float:
        """Cancel a running simulation once it has reported progress; ms until its worker is free."""
        started = []
        vm.progress.connect(lambda done, total: started.append(done))
        vm.request_timeline()
        deadline = time.perf_counter() + 60
        while not started and time.perf_counter() < deadline:
            app.processEvents()
            time.sleep(0.001)
        t = time.perf_counter()
        cancel = getattr(window, "cancel_simulation", None)
        if cancel is not None:
            cancel()
        else:  # before the Cancel button: what a change of inputs does to a running replay
            vm._sim_generation += 1
        (getattr(vm, "_sim_executor", None) or vm._side_executor).submit(lambda: None).result(60)
        ms = (time.perf_counter() - t) * 1000
        vm.progress.disconnect()
        vm.progress.connect(window._progress)
        app.processEvents()
        finished = vm.timeline is not None
        return float("nan") if finished else ms

    top_p90, cut_p90, top_gui, cut_gui, top_cpu, cut_cpu, stalls, cancels = [], [], [], [], [], [], [], []
    for r in range(rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        for at_cut in order:
            trip, gui, cpu = change_round(r, at_cut)
            (cut_p90 if at_cut else top_p90).append(p90(trip))
            (cut_gui if at_cut else top_gui).append(p90(gui))
            (cut_cpu if at_cut else top_cpu).append(p90(cpu))
        stalls.append(drag_round())
        cancels.append(cancel_round())
    vm.shutdown()
    window.close()
    scratch.cleanup()
    med = statistics.median
    print(f"  plan alone (engine, the same changes): median {med(plan_ms):.1f} ms, p90 {p90(plan_ms):.1f} ms", file=sys.stderr)
    print(f"  GUI-thread part of a change (slots + repaint), p90: table at top {spread(top_gui)} ms, at the cut {spread(cut_gui)} ms",
          file=sys.stderr)
    print(f"  GUI-thread CPU time of a change, p90: table at top {spread(top_cpu)} ms, at the cut {spread(cut_cpu)} ms",
          file=sys.stderr)
    print(f"  load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", file=sys.stderr)
    n = f"{messages:,}"
    cancels_ok = [c for c in cancels if not math.isnan(c)] or [float("nan")]
    return [
        {"name": f"app: parameter change -> repainted, {n} msgs, p90, table at top", "ratios": top_p90, "unit": " ms",
         "goal": f"<= {FRAME_MS:.1f} ms", "met": within(FRAME_MS, top_p90)},
        {"name": f"app: parameter change -> repainted, {n} msgs, p90, table at the cut", "ratios": cut_p90, "unit": " ms",
         "goal": f"<= {FRAME_MS:.1f} ms", "met": within(FRAME_MS, cut_p90)},
        {"name": f"app: longest GUI-thread stall, 60 Hz slider drag, {n} msgs", "ratios": stalls, "unit": " ms",
         "goal": f"<= {STALL_GOAL_MS:.0f} ms", "met": within(STALL_GOAL_MS, stalls)},
        {"name": f"app: Cancel -> simulation stopped, {n} msgs", "ratios": cancels_ok, "unit": " ms",
         "goal": f"<= {CANCEL_GOAL_MS:.0f} ms", "met": within(CANCEL_GOAL_MS, cancels_ok)},
    ]


def first_plan_child(path: str) -> None:
    """Open `path` as a user would and exit as soon as its first plan has been painted."""
    from PySide6.QtCore import QSettings

    from ctxviz.gui.app import application
    from ctxviz.gui.main_window import MainWindow

    app = application()
    scratch = tempfile.TemporaryDirectory(prefix="ctxviz-bench-")
    window = MainWindow(settings=QSettings(os.path.join(scratch.name, "settings.ini"), QSettings.Format.IniFormat))
    window.resize(1500, 950)
    window.show()

    def shown(_session, _plan) -> None:  # noqa: ANN001
        app.processEvents()  # the paint the plan caused
        os._exit(0)

    window.vm.planReady.connect(shown)
    window.open_path(path)
    app.exec()


# --- the rows -----------------------------------------------------------------------------------
def as_rows(dicts: list[dict]) -> list[Row]:
    return [Row(d["name"], d["ratios"], d["goal"], d["met"], unit=d.get("unit", "x")) for d in dicts]


def run(rounds: int = 3, quick: bool = False, messages: int | None = None, big: int | None = None, changes: int = 20) -> list[Row]:
    import subprocess

    messages = messages or (2000 if quick else 10_000)
    big = big or (10_000 if quick else 100_000)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": ROOT}
    rows: list[Row] = []
    out = subprocess.run([sys.executable, __file__, "--window-rows", "--messages", str(messages), "--rounds", str(rounds),
                          "--changes", str(changes)], capture_output=True, text=True, env=env, cwd=ROOT)
    sys.stderr.write(out.stderr[-3000:])
    if out.returncode == 0:
        rows += as_rows(json.loads(out.stdout.strip().splitlines()[-1]))
    else:
        print(f"bench_gui: the window measurements failed ({out.returncode})", file=sys.stderr)

    py = sys.executable

    def agent_file(n: int) -> str:  # written by a child: the session is not kept in this (small) parent
        path = os.path.join(scratch_dir(), f"agent{n}.jsonl")
        subprocess.run([py, __file__, "--write", path, str(n)], check=True, env=env, cwd=ROOT)
        return path

    big_file = agent_file(big)
    _, _, ratios = interleaved(lambda: wall([py, "-m", "ctxviz", "plan", big_file], env=env),
                               lambda: wall([py, __file__, "--first-plan", big_file], env=env), rounds)
    rows.append(Row(f"app: first plan of {big:,} msgs vs `ctxviz plan` (whole processes)", ratios, "<= 2x", within(2.0, ratios)))

    report_file = agent_file(messages)
    html_out = os.path.join(scratch_dir(), "report.html")
    _, _, ratios = interleaved(lambda: wall([py, "-m", "ctxviz", "report", report_file, "-o", html_out, "--no-timeline"], env=env),
                               lambda: wall([py, "-m", "ctxviz", "report", report_file, "-o", html_out], env=env), rounds)
    rows.append(Row(f"report: {messages:,} msgs with the timeline vs without", ratios, "<= 5x", within(5.0, ratios)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, to check the harness")
    parser.add_argument("--window-rows", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first-plan", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--write", nargs=2, metavar=("FILE", "MESSAGES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write_agent_file(args.write[0], int(args.write[1]))
        return
    if args.first_plan:
        first_plan_child(args.first_plan)
        return
    if args.window_rows:
        print(json.dumps(window_rows(args.messages, max(1, args.rounds), args.changes)))
        return
    from run import table

    rows = run(max(3, args.rounds), args.quick, None if args.quick else args.messages, None if args.quick else args.big, args.changes)
    print(table(rows))


if __name__ == "__main__":
    main()
