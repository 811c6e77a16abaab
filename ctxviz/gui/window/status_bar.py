"""The status bar: what the window is doing or has done (the plan's figures, loading, progress
and Cancel, the notes' count, the followed file) and errors, said in one line and a message box.

A mixin of `MainWindow` (gui/main_window.py).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QMessageBox, QProgressBar, QPushButton, QSizePolicy, QToolButton

from ...engine.plan import Plan
from ...terminal import one_line
from ..safe import FittingLabel, message_box, qt_int
from ..status import SEPARATOR, status_texts


class StatusBar:
    """The status bar's widgets and what they say, for `MainWindow`."""

    vm: Any
    pie: Any
    shown_plan: Plan | None
    shown_session: Any

    def _build_status_bar(self) -> None:
        """The status line, the notes' count, the follow indicator, progress and Cancel."""
        # Shows file paths and error messages (which quote the file): plain text, never HTML.
        self.status_label = FittingLabel("Open a session (Ctrl+O) or drop a file here.", SEPARATOR)
        self.status_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(220)
        self.progress_bar.hide()
        # Beside the progress of a simulation: stops it (at its next progress report, a few turns on).
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancel-simulation")
        self.cancel_button.setToolTip("Stop the turn-by-turn simulation")
        self.cancel_button.clicked.connect(self.cancel_simulation)
        self.cancel_button.hide()
        # How many notes the plan has, on the right (never cut off by a long status); it opens them.
        self.notes_button = QToolButton()
        self.notes_button.setObjectName("notes-count")
        self.notes_button.setAutoRaise(True)
        self.notes_button.setToolTip("Show the notes on the overview")
        self.notes_button.clicked.connect(self.show_notes)
        self.notes_button.hide()
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.notes_button)
        # While a log is followed: how many messages, what the last write added, what happened to the file.
        self.follow_label = QLabel()
        self.follow_label.setObjectName("follow-status")
        self.follow_label.hide()
        self.statusBar().addPermanentWidget(self.follow_label)
        self.statusBar().addPermanentWidget(self.progress_bar)
        self.statusBar().addPermanentWidget(self.cancel_button)

    def _update_status(self, plan: Plan) -> None:
        pending = self._counting(plan)
        counting = SEPARATOR + "real count: counting…" if pending else ""
        self.status_label.set_texts(*(text + counting for text in status_texts(plan)))
        self._status_of = (plan, pending, self.status_label.text())

    def _counting(self, plan: Plan) -> bool:
        return plan.real is None and self.vm.real_count_pending and plan is self.vm.plan

    def _busy(self, busy: bool, message: str) -> None:
        self.progress_bar.setVisible(busy)
        if busy:
            self.progress_bar.setRange(0, 0)
            self.status_label.setText(message)
        elif self.shown_plan is not None and not self._status_shows(self.shown_plan):
            self._update_status(self.shown_plan)

    def _status_shows(self, plan: Plan) -> bool:
        """The status line says `plan`'s status already, as `_update_status` would say it now: the
        end of a re-plan's busy state, just before the new plan is shown, wrote the old plan's again."""
        shown = getattr(self, "_status_of", None)
        return (shown is not None and shown[0] is plan and shown[1] == self._counting(plan)
                and shown[2] == self.status_label.text())

    def _progress(self, done: int, total: int) -> None:
        self.progress_bar.show()
        self.progress_bar.setRange(0, qt_int(total, 0))
        self.progress_bar.setValue(qt_int(done, 0))
        if done >= total:
            QTimer.singleShot(300, self._hide_finished_progress)

    def _hide_finished_progress(self) -> None:
        """Hide a finished bar, unless other work (a simulation after the real count) has reported since."""
        bar = self.progress_bar
        if bar.value() >= bar.maximum() and not self.cancel_button.isVisible():
            bar.hide()

    def _real_counting(self, counting: bool) -> None:
        if self.shown_plan is not None:
            self._update_status(self.shown_plan)

    def _real_count_ready(self, before: Plan, plan: Plan) -> None:
        """The plan on screen, now with its real count: the status bar and the donut say it."""
        if self.shown_plan is before:
            self.shown_plan = plan
            self._update_status(plan)
            self.pie.set_plan(plan, unseen=self._unseen(plan), trigger=self._trigger(plan))  # the real count beside the policy's
            if self.shown_session is not None:
                self._show_notes(self.shown_session, plan, self.shown_session is self.vm.session)

    def show_error(self, message: str) -> None:
        """A bad file or value gets a clear message box, never a traceback. The message quotes the
        file, so it is shown as plain text, cut as the command line cuts it (a 400 KB value quoted
        whole would fill the screen)."""
        message = one_line(message)
        self.status_label.setText(message)
        box = message_box(QMessageBox.Icon.Warning, "ctxviz", message, self)
        box.setObjectName("error-box")
        box.open()
        self.last_error_box = box
