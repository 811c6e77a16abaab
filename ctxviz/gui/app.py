"""Starting the desktop app (and rendering it headless for `--screenshot`)."""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from typing import Any

from ..engine.session import Session
from .threads import GC_THRESHOLD

#: Qt messages that say nothing to a user, silenced exactly (everything else passes through). The
#: offscreen platform plugin says this whenever a top-level window is shown (`report`, `--screenshot`).
SILENCED_QT_MESSAGES = frozenset({"This plugin does not support propagateSizeHints()"})


def has_display() -> bool:
    """Whether a window can be shown: a display server, or a Qt platform the user chose (e.g. offscreen)."""
    if not sys.platform.startswith("linux"):
        return True
    return any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))


def ensure_qt_platform() -> None:
    """Without a display Qt would abort the process; fall back to offscreen rendering."""
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def serial_fills() -> None:
    """Qt's raster engine hands every fill of 96 or more spans (a donut slice, a table row's
    background, a chart's bars) to a pool of threads and waits for them: for shapes the size of
    this window's that costs more than the fill, and on a busy machine the GUI thread waited for
    the pool's threads to be scheduled (a fifth of a re-plan's frame at 10,000 messages, most of
    the donut's paint). `QT_NO_GUI_THREADPOOL` is Qt's own switch for filling on the painting
    thread (set to any value); it is read once, before the first paint. `CTXVIZ_QT_FILL_THREADS=1`
    leaves Qt's pool in use (to compare, or on a machine where it pays)."""
    if os.environ.get("CTXVIZ_QT_FILL_THREADS") != "1":
        os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")


def application(scheme: str = "auto"):
    ensure_qt_platform()
    serial_fills()
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from ..resources import resource_path
    from .theme import apply_color_scheme

    install_message_filter()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    tune_garbage_collector()
    app.setApplicationName("ctxviz")
    app.setOrganizationName("ctxviz")
    app.setWindowIcon(QIcon(str(resource_path("icons", "ctxviz.svg"))))
    apply_color_scheme(app, scheme)
    return app


def tune_garbage_collector() -> None:
    """A re-plan of a long session allocates tens of thousands of small records that all
    survive; with CPython's default thresholds the cyclic collector walks them again and again,
    which doubled the plan time and added 10 ms pauses to slider drags. Collecting less often
    trades a few megabytes of pending garbage for that time; the engine and CLI keep Python's
    defaults. (While a window is open, automatic collection is off altogether and the GUI thread
    collects at these thresholds: see `threads.py`.)"""
    if gc.get_threshold()[0] < GC_THRESHOLD[0]:
        gc.set_threshold(*GC_THRESHOLD)


_previous_handler: Any = None


def _qt_message(mode: Any, context: Any, message: str) -> None:
    if message.strip() in SILENCED_QT_MESSAGES:
        return
    if _previous_handler is not None:
        _previous_handler(mode, context, message)
        return
    from PySide6.QtCore import qFormatLogMessage

    try:
        sys.stderr.write(qFormatLogMessage(mode, context, message) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: nowhere to say it
        pass


def install_message_filter() -> None:
    """Route Qt's messages through `_qt_message`, which drops the SILENCED_QT_MESSAGES and hands
    everything else to the handler that was installed before (Qt's own format otherwise)."""
    global _previous_handler
    from PySide6.QtCore import qInstallMessageHandler

    previous = qInstallMessageHandler(_qt_message)
    if previous is not _qt_message and previous is not None:
        _previous_handler = previous
    elif previous is None:
        _previous_handler = None


def render_window(window, path: str, inputs: tuple[str, ...] = ()) -> None:
    """Let layouts settle and every plot paint, then save the whole window as a PNG (through the
    one writer: atomically, never over `inputs`, appended to standard output for /dev/stdout)."""
    from PySide6.QtWidgets import QApplication

    from ..io.output import write_output
    from .report import render_png

    window.show()
    for _ in range(3):
        QApplication.processEvents()
    window.vm.wait()
    for _ in range(5):
        QApplication.processEvents()
    window._hide_finished_progress()  # the 300 ms grace a finished bar gets on screen has no meaning in a still
    write_output(path, render_png(window), inputs)


def settle(window) -> None:
    """Let the view-model's workers finish and their results reach the window (a few times: a
    result may start more work, as a first plan starts the real count, which plans again)."""
    from PySide6.QtWidgets import QApplication

    for _ in range(4):
        window.vm.wait()
        QApplication.processEvents()


#: How long a screenshot waits for the "why" answer of the selected message (a search of settings).
WHY_WAIT_S = 120.0


def wait_for_why(window, timeout: float = WHY_WAIT_S) -> bool:
    """Process events until the selected message's "What would keep it" answer is on screen: a
    re-plan arriving after the selection restarts the search after a pause (`_why_timer`), and a
    screenshot taken in between showed "Searching…" or nothing. True when the answer is in."""
    from PySide6.QtWidgets import QApplication

    deadline = time.monotonic() + timeout
    while window.why_pending() and time.monotonic() < deadline:
        QApplication.processEvents()
        time.sleep(0.02)
    return not window.why_pending()


def wait_for_live(window, timeout: float = WHY_WAIT_S) -> None:
    """For a still: the session listing (on the welcome page) and the "Next compaction" card are in."""
    from PySide6.QtWidgets import QApplication

    live = window.live
    if window.vm.session is None and live.listing is None:
        live.refresh_listing()
    deadline = time.monotonic() + timeout
    while (live.listing is None if window.vm.session is None else live.forecast_pending()) and time.monotonic() < deadline:
        QApplication.processEvents()
        time.sleep(0.02)
    window.vm.wait()
    QApplication.processEvents()


def run(session: Session | str | None, screenshot: str | None = None, scheme: str = "auto", policy: str | None = None,
        tab: int = 0, size: tuple[int, int] = (1440, 900), params: Any = None, tokenizer: str | None = None,
        compare: tuple[str, str] | None = None, live: tuple[str | None, bool | None] | None = None) -> int:
    """`live`: (agent, follow) for an agent's log opened with `gui --latest` or `--follow` (gui/live_window.py)."""
    app = application(scheme)
    from PySide6.QtCore import QSettings

    from .main_window import MainWindow

    scratch = tempfile.TemporaryDirectory(prefix="ctxviz-screenshot-") if screenshot else None
    # A screenshot shows the default layout: it neither reads nor leaves behind any saved state.
    settings = QSettings(os.path.join(scratch.name, "settings.ini"), QSettings.Format.IniFormat) if scratch else None
    window = MainWindow(settings=settings)
    if policy:
        window.vm.set_policy(policy)
    if params is not None:
        window.vm.set_params(params, policy)
    if tokenizer:
        window.show_tokenizer(tokenizer)  # the Tokenizer box says what the plans count with
        window.vm.set_tokenizer(tokenizer)
    if compare is not None:
        window.compare.set_request(*compare)
    if screenshot:
        window.resize(*size)
        if session:
            if isinstance(session, str):
                from ..io.loaders import load_session

                session = load_session(session)
            if live is not None and not policy:  # the agent's own policy, as the live window would open it
                from ..engine.verify import agent_policy

                window.vm.set_policy(agent_policy(session)[0] if live[0] is None else window.live.agent_policy_for(live[0]) or window.vm.policy)
            window.vm.set_session(session)  # loaded once (the CLI hands over the session it checked)
            settle(window)  # the first plan, then the real count and the plan that shows it
            if compare is not None:
                window.compare.request()
                settle(window)
            # The Timeline tab simulates once, when shown (small sessions; larger ones say how to start it).
            window.tabs.setCurrentIndex(tab)
            settle(window)
            if window.vm.plan is not None:
                dropped = next((i for i, is_sent in enumerate(window.vm.plan.sent_flags) if not is_sent), None)
                if dropped is not None:
                    window.select_message(dropped)
                    window.vm.wait()
        # What follows a settled plan (its retention, after RETENTION_DELAY_MS) belongs in the picture too.
        deadline = time.monotonic() + window.vm.RETENTION_DELAY_MS / 1000 + 0.2
        while time.monotonic() < deadline:
            app.processEvents()
            time.sleep(0.02)
        window.vm.wait()
        wait_for_why(window)
        wait_for_live(window)
        source = window.vm.session.source if window.vm.session is not None else ""
        render_window(window, screenshot, (source,) if source else ())
        window.close()
        if scratch is not None:
            scratch.cleanup()
        return 0
    window.show()
    if isinstance(session, Session):
        window.vm.set_session(session)
    elif session and live is not None:
        window.open_live(session, agent=live[0], follow=live[1], keep_policy=bool(policy))
    elif session:
        window.open_path(session)
    return app.exec()
