"""Worker threads that can never deadlock the app, and the garbage collector that makes it so.

Python's cyclic garbage collector runs on whichever thread happens to allocate when a generation's
threshold is crossed. On a worker thread it may destroy a QObject that was part of a cycle made on
the GUI thread; Qt's destructor then takes a Qt mutex and waits for the GIL while the GUI thread
holds the GIL and waits for that mutex (a QMenu being destroyed): the app hangs. This happened in
the test suite, with the collector running on the plan worker inside missy's record building.

So while any view-model (and so any worker thread) is alive, automatic collection is off and a
timer on the GUI thread collects instead, generation by generation with CPython's own rule (the
oldest generation whose count is over its threshold), at the app's tuned thresholds. This is the
technique of pyqtgraph's `GarbageCollector`. Collection is restored (only if it was on) once the
last view-model has shut down and no ctxviz worker thread is left running.

Workers are daemon threads: a load that never returns (a FIFO, a dead network mount) holds its own
thread only, never a later load, closing the window or the interpreter's exit.
"""

from __future__ import annotations

import gc
import itertools
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QCoreApplication, QTimer
from shiboken6 import Shiboken

#: Every worker thread's name starts with this (the collector waits for them before restoring gc).
WORKER_PREFIX = "ctxviz-"

#: Thresholds the GUI-thread collector applies (CPython's defaults are 700, 10, 10). A re-plan of a
#: long session allocates tens of thousands of small records that all survive; collecting them
#: again and again doubled the plan time and added 10 ms pauses to slider drags.
GC_THRESHOLD = (50_000, 20, 10)
#: How often the GUI thread checks the counts.
CHECK_INTERVAL_MS = 200
#: A full collection walks every object; at most this share of the time goes to them.
FULL_COLLECTION_SHARE = 0.02
#: While the user is changing inputs (a slider drag re-plans every frame), collections wait this
#: long after the latest change: one can take tens of milliseconds with a few plans of 10,000
#: messages alive, a visible stall in a drag. They run once the inputs settle...
QUIET_AFTER_INPUT_S = 0.4
#: ...unless this many times the threshold has piled up meanwhile.
QUIET_LIMIT = 10


def worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(WORKER_PREFIX) and t.is_alive()]


def on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class MainThreadCollector:
    """Automatic cyclic collection off, a GUI-thread timer collecting instead, while held."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._active = False
        self._was_enabled = False
        self._timer: QTimer | None = None
        self._last_full_end = 0.0
        self._last_full_cost = 0.0
        self._kept: list[tuple[Any, list[threading.Thread]]] = []
        self._quiet_until = 0.0
        self.collections = [0, 0, 0]  # per generation, for tests and curiosity
        self.deferred = 0  # checks that waited for the inputs to settle

    def input_changed(self) -> None:
        """The user changed an input (GUI thread): hold collections until the changes settle."""
        self._quiet_until = time.perf_counter() + QUIET_AFTER_INPUT_S

    @property
    def active(self) -> bool:
        return self._active

    @property
    def holders(self) -> int:
        return self._holders

    def acquire(self) -> None:
        """Called on the GUI thread by everything that starts worker threads, before it starts any."""
        if not on_main_thread():
            raise RuntimeError("the garbage collector guard must be taken on the GUI thread")
        with self._lock:
            self._holders += 1
            if not self._active:
                self._active = True
                self._was_enabled = gc.isenabled()
            gc.disable()
        self._start_timer()

    def _start_timer(self) -> None:
        app = QCoreApplication.instance()
        if app is None:  # no event loop can run yet; the next hold (or a test's gc.collect()) collects
            return
        if self._timer is None or not Shiboken.isValid(self._timer):
            self._timer = QTimer(app)
            self._timer.setInterval(CHECK_INTERVAL_MS)
            self._timer.timeout.connect(self.check)
        if not self._timer.isActive():
            self._timer.start()

    def release(self, owner: Any = None, threads: list[threading.Thread] | None = None) -> None:
        """Give up one hold; collection is restored on the GUI thread once nothing needs it off.

        `owner` (a view-model) is kept alive until its `threads` have ended, so that the last
        reference to it, which their jobs hold, is never dropped on a worker: that would destroy
        a QObject there."""
        with self._lock:
            self._holders = max(0, self._holders - 1)
            alive = [t for t in threads or () if t.is_alive()]
            if owner is not None and alive:
                self._kept.append((owner, alive))
        if on_main_thread():
            self._maybe_restore()

    def check(self) -> None:
        """The timer: collect like CPython would have, here on the GUI thread; restore when free."""
        if not self._active:
            return
        if gc.isenabled():  # someone switched it back on: not while workers may allocate
            gc.disable()
        self.collect_due()
        self._maybe_restore()

    def collect_due(self) -> int | None:
        """Collect the oldest generation whose count is over its threshold (None: nothing due)."""
        c0, c1, c2 = gc.get_count()
        t0, t1, t2 = GC_THRESHOLD
        if c0 <= t0:
            return None
        if time.perf_counter() < self._quiet_until and c0 <= t0 * QUIET_LIMIT:
            self.deferred += 1
            return None
        generation = 0
        if c2 > t2 and self._full_collection_affordable():
            generation = 2
        elif c1 > t1:
            generation = 1
        started = time.perf_counter()
        gc.collect(generation)
        if generation == 2:
            self._last_full_end = time.perf_counter()
            self._last_full_cost = self._last_full_end - started
        self.collections[generation] += 1
        return generation

    def _full_collection_affordable(self) -> bool:
        """CPython defers full collections while few objects became long-lived since the last one;
        that count is not exposed, so the same purpose is served by spacing them out in time."""
        return time.perf_counter() - self._last_full_end >= self._last_full_cost / FULL_COLLECTION_SHARE

    def _maybe_restore(self) -> None:
        with self._lock:
            # Owners whose workers have ended are let go here, on the GUI thread.
            self._kept = [(owner, threads) for owner, threads in self._kept if any(t.is_alive() for t in threads)]
            if not self._active or self._holders > 0 or worker_threads():
                return
            self._active = False
            if self._was_enabled:
                gc.enable()
        if self._timer is not None and Shiboken.isValid(self._timer):
            self._timer.stop()


COLLECTOR = MainThreadCollector()


class Worker:
    """One daemon thread running submitted jobs in order; `ThreadPoolExecutor(max_workers=1)`
    without its join at interpreter exit, and with a shutdown that gives up on a stuck job."""

    _ids = itertools.count()

    def __init__(self, name: str) -> None:
        self.name = f"{WORKER_PREFIX}{name}"
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                future.cancel()
                return future
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"{self.name}_{next(self._ids)}", daemon=True)
                self._thread.start()
            self._queue.put((future, fn))
        return future

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn = item
            item = None
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits, like an executor
                future.set_exception(exc)
            else:
                future.set_result(result)
            future = fn = None  # type: ignore[assignment]

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    def shutdown(self, timeout: float | None = None) -> bool:
        """Cancel queued jobs and stop; wait up to `timeout` seconds for a running one (None: not
        at all). True when the thread has ended."""
        with self._lock:
            self._closed = True
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
            self._queue.put(None)
        thread = self._thread
        if thread is None:
            return True
        if timeout is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return not thread.is_alive()


def start_daemon(name: str, target: Callable[[], None]) -> threading.Thread:
    """A one-off daemon worker thread (a load: one that may never return must not block anything)."""
    thread = threading.Thread(target=target, name=f"{WORKER_PREFIX}{name}", daemon=True)
    thread.start()
    return thread


#: A worker's progress reaches the GUI thread at most this often (each report is a queued event).
PROGRESS_INTERVAL_S = 0.05


def throttled(report: Callable[[int, int], None], interval: float = PROGRESS_INTERVAL_S) -> Callable[[int, int], None]:
    """`report`, called at most every `interval` seconds (and always for the last step), so that a
    worker counting or replaying 100,000 messages does not flood the GUI thread's event queue."""
    last = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if done >= total or now - last >= interval:
            last = now
            report(done, total)

    return progress
