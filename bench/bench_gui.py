"""From a parameter change to the repainted window, on a 10,000-message session (run by hand).

    QT_QPA_PLATFORM=offscreen python bench/bench_gui.py [--messages 10000] [--changes 30]

Goal: the whole round trip (re-plan on the worker, table/strip/pie/bars update, the paint events
that follow, counted to show they happened) under one 60 Hz frame (16.7 ms) on this machine, reported against the plan
time alone measured in the same run. Three scenarios: a slider drag in small steps (the cut mostly
stays put, so the records older than it are reused and the table's visible rows do not change),
the same drag as if every step moved the cut (nothing reused), and that with the table scrolled to
the rows that change and one of them selected (the worst case). Prints; never asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench_engine import session_of  # noqa: E402
from PySide6.QtCore import QEvent, QEventLoop, QObject, QSettings, QTimer  # noqa: E402
from PySide6.QtWidgets import QTableView  # noqa: E402

from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import missy  # noqa: E402
from ctxviz.gui.app import application  # noqa: E402
from ctxviz.gui.main_window import MainWindow  # noqa: E402

FRAME_MS = 1000 / 60


def wait_for(signal, timeout_ms: int = 60000) -> None:
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    signal.disconnect(loop.quit)


class PaintWatcher(QObject):
    """Counts paint events, to show the measured interval really repainted the changed views."""

    def __init__(self, sink: list[str]) -> None:
        super().__init__()
        self.sink = sink

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Paint:
            self.sink.append(type(obj).__name__)
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--changes", type=int, default=30)
    args = parser.parse_args()

    app = application()  # as `ctxviz gui` starts it (palette, GC tuning)
    scratch = tempfile.TemporaryDirectory(prefix="ctxviz-bench-")  # the default layout, and no file left in the repo
    settings = QSettings(os.path.join(scratch.name, "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    window.resize(1500, 950)
    window.show()
    session = session_of(args.messages)
    vm = window.vm
    vm.set_session(session)
    wait_for(vm.planReady)
    app.processEvents()
    window.repaint()

    # The plan alone, warm caches, the same engine call the worker makes.
    def plan_alone(cold: bool) -> list[float]:
        out = []
        for i in range(args.changes):
            params = vm.params.__class__(**{**vars(vm.params), "total": 24_000 + 53 * i})
            if cold:
                missy._OLDER_CACHE.clear()
            t = time.perf_counter()
            plan_session(session, vm.policy, params, vm.tokenizer, vm.store, None, vm.options)
            out.append((time.perf_counter() - t) * 1000)
        return out

    plan_warm, plan_ms = plan_alone(cold=False), plan_alone(cold=True)

    spin = window.params.editors["total"][1]
    painter_count: list[str] = []
    watcher = PaintWatcher(painter_count)
    app.installEventFilter(watcher)

    def measure(values: list[int], cold: bool) -> tuple[list[float], list[float], list[float], list[int]]:
        round_trip, update, paint, painted = [], [], [], []
        for value in values:
            if cold:  # as if the cut moved somewhere new: nothing older than it can be reused
                missy._OLDER_CACHE.clear()
            t0 = time.perf_counter()
            spin.setValue(value)  # exactly what a slider drag or a typed value does
            wait_for(vm.planReady)  # the window's slots ran before this returns: table, strip, pie, bars
            t1 = time.perf_counter()
            painter_count.clear()
            app.processEvents()  # pyqtgraph's deferred scene updates, then the paint events they post
            t2 = time.perf_counter()
            painted.append(len(painter_count))
            round_trip.append((t2 - t0) * 1000)
            update.append((t1 - t0) * 1000)
            paint.append((t2 - t1) * 1000)
        if os.environ.get("BENCH_VERBOSE"):
            print("  painted in the last change:", painter_count)
        return round_trip, update, paint, painted

    med = statistics.median
    print(f"GUI round trip on {args.messages:,} messages, {args.changes} parameter changes each (medians):")
    print(f"  plan alone (engine, counts cached)     {med(plan_ms):7.2f} ms; {med(plan_warm):.2f} ms when the cut stays put")
    drag = [24_000 + 53 * i for i in range(args.changes)]
    scenarios = [
        # A slider drag: small steps; the cut mostly stays put and the table shows the oldest rows.
        ("drag: small steps, table at the top", drag, None, False),
        # As if every change moved the cut: the records older than it are rebuilt each time.
        ("every change moves the cut", drag, None, True),
        # Worst case: that, with the table scrolled to the rows that change and one of them selected.
        ("every change moves the cut, table at the cut", drag, "cut", True),
    ]
    for label, values, scroll, cold in scenarios:
        if scroll == "cut" and vm.plan is not None and vm.plan.extra.get("cut_index") is not None:
            cut = int(vm.plan.extra["cut_index"])
            window.select_message(cut)
            window.table.scrollTo(window.model.index(cut, 0), QTableView.ScrollHint.PositionAtCenter)
            vm.wait()  # the "why" search for the selected message runs once, not during the timing
            app.processEvents()
        round_trip, update, paint, painted = measure(values, cold)
        print(f"  {label}:")
        print(f"    change -> plan shown (worker + slots)  {med(update):7.2f} ms")
        print(f"    repaint of what changed                 {med(paint):7.2f} ms  ({med(painted):.0f} widgets painted)")
        print(f"    change -> repainted window             {med(round_trip):7.2f} ms  = {med(round_trip) / med(plan_ms):.1f}x the plan alone, "
              f"{med(round_trip) / FRAME_MS:.2f} of a 60 Hz frame (goal < 1)")
    vm.shutdown()
    window.close()
    scratch.cleanup()


if __name__ == "__main__":
    main()
