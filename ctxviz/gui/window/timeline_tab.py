"""The Timeline and Compare tabs: the turn-by-turn replay (started when the tab opens on a session
small enough, replayed again when the inputs change while it is shown, cancelled on request) and
the comparison of two policies.

A mixin of `MainWindow` (gui/main_window.py).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer

from ..widgets.compare_view import CompareView
from ..widgets.timeline import TimelineView

TIMELINE_TAB = 1
#: Sessions up to this many messages are replayed without asking (opening the tab, changing a parameter on it).
AUTO_SIMULATE_MESSAGES = 3000


class TimelineTab:
    """The replay and the comparison, for `MainWindow`."""

    vm: Any
    tabs: Any
    progress_bar: Any
    status_label: Any
    cancel_button: Any
    _context_stale: bool

    def _build_replay_tabs(self) -> None:
        """The Timeline and Compare views, and the timer that replays again once values settle."""
        self.timeline = TimelineView()
        self.compare = CompareView(self.vm.policies())
        # A change of inputs while the timeline is shown replays again once the values settle.
        self._resimulate_timer = QTimer(self)
        self._resimulate_timer.setSingleShot(True)
        self._resimulate_timer.setInterval(300)
        self._resimulate_timer.timeout.connect(self._resimulate)

    def simulate(self) -> None:
        self._resimulate_timer.stop()
        self.tabs.setCurrentIndex(TIMELINE_TAB)  # (opening the tab may already have started it)
        self.vm.request_timeline()

    def cancel_simulation(self) -> None:
        self._resimulate_timer.stop()
        self.vm.cancel_timeline()

    def _simulating(self, running: bool) -> None:
        self.cancel_button.setVisible(running)
        if running:
            self.timeline.set_timeline(None, "Simulating turn by turn… (Cancel, at the bottom right, stops it)")

    def _timeline_cancelled(self, message: str) -> None:
        self.timeline.set_timeline(None, message)
        self.progress_bar.hide()
        self.status_label.setText(message)

    def _timeline_ready(self, timeline: Any) -> None:
        self.timeline.set_timeline(timeline)
        self._update_versus()

    def _update_versus(self) -> None:
        """Under the chart: the engine's sentence on this plan and its replay (only when both are of the same inputs)."""
        if self.timeline.timeline is not None:
            self.timeline.set_versus(self.vm.plan_versus_replay())

    def _timeline_stale(self) -> None:
        """The parameters, policy, tokenizer or pair safety changed: the replay on screen is of
        another plan. On the Timeline tab it is replayed again once the values settle; elsewhere
        it is cleared (opening the tab replays it)."""
        shown = self.tabs.currentIndex() == TIMELINE_TAB
        small = self.vm.session is not None and len(self.vm.session.messages) <= AUTO_SIMULATE_MESSAGES
        if self.timeline.timeline is not None or shown:
            self.timeline.set_timeline(None, "The inputs changed since the last replay: simulating again…" if shown and small
                                       else "The inputs changed since the last replay: Simulate to replay this plan.")
        if shown and small:
            self._resimulate_timer.start()

    def _resimulate(self) -> None:
        if self.tabs.currentIndex() == TIMELINE_TAB and self.vm.timeline is None:
            self.vm.request_timeline()

    def _open_from_compare(self, index: int) -> None:
        self.tabs.setCurrentIndex(0)
        self.select_message(index)
