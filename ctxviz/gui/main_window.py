"""The main window: views over the view-model's plan, with desktop conventions users expect.

The window is put together here from its parts, one module per tab or dock in `gui/window/`
(the Overview's charts and cards, the table, the detail panel, the Timeline and Compare tabs,
the context as sent, the parameters, the menus, the status bar, opening files) and the live side
in `gui/live_window.py`. What ties them together stays here: showing a plan in every view, a
session loaded, a tab opened, the window's state saved and restored.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QMainWindow, QSplitter, QTabWidget

from ..engine.plan import Plan
from ..engine.policies import get_policy
from ..engine.session import Session
from ..resources import resource_path
from .live import LiveController
from .live_window import LiveWindow
from .viewmodel import ContextViewModel
from .vm.compare import input_changes
from .window.context_tab import CONTEXT_TAB, ContextTab
from .window.detail import DetailPanel
from .window.files import FileOpening
from .window.menus import Menus
from .window.overview import SHORT_WINDOW, OverviewTab
from .window.parameters import ParametersDock
from .window.plan_table import PlanTable
from .window.session_change import SessionChange
from .window.status_bar import StatusBar
from .window.timeline_tab import AUTO_SIMULATE_MESSAGES, TIMELINE_TAB, TimelineTab

__all__ = ["AUTO_SIMULATE_MESSAGES", "CONTEXT_TAB", "TIMELINE_TAB", "MainWindow"]


class MainWindow(LiveWindow, OverviewTab, PlanTable, DetailPanel, SessionChange, TimelineTab, ContextTab, ParametersDock, Menus,
                 StatusBar, FileOpening, QMainWindow):
    def __init__(self, vm: ContextViewModel | None = None, settings: QSettings | None = None) -> None:
        super().__init__()
        self.vm = vm or ContextViewModel(self)
        self.settings = settings or QSettings("ctxviz", "ctxviz")
        self.shown_session: Session | None = None
        self.shown_plan: Plan | None = None
        self.selected: int | None = None
        self._context_stale = True
        self.setWindowTitle("ctxviz")
        self.setWindowIcon(QIcon(str(resource_path("icons", "ctxviz.svg"))))
        self.setAcceptDrops(True)
        self.resize(1400, 900)
        # The sessions on this machine, a followed log, the next compaction (gui/live.py).
        self.live = LiveController(self.vm, self.session_roots, self)
        self._build_views()
        self._build_actions()
        self._build_toolbar()
        self._connect()
        self._connect_live()
        self.live.forecastReady.connect(self._forecast_shown)  # after the card's own slot (`_connect_live`)
        self._history_changed(False, False)
        self._restore()

    # --- construction -------------------------------------------------------------------------
    def _build_views(self) -> None:
        self._build_charts()
        table_box = self._build_table()
        detail_box = self._build_detail()
        self._build_overview(table_box, detail_box)
        self._build_replay_tabs()
        context_box = self._build_context_tab()

        self.tabs = QTabWidget()
        self.tabs.addTab(self.overview_stack, "Overview")
        self.tabs.addTab(self.timeline, "Timeline")
        self.tabs.addTab(self.compare, "Compare")
        self.tabs.addTab(context_box, "Context as sent")

        scroll = self._build_params_dock()
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(scroll)
        main.addWidget(self.tabs)
        main.setSizes([340, 1060])
        main.setStretchFactor(1, 1)
        self.setCentralWidget(main)
        # Every divider the user can drag, persisted with the window (names are the settings keys).
        self.splitters = {"main": main, "overview": self.overview, "charts": self.charts_splitter,
                          "table": self.table_splitter, "detail": detail_box}
        self._build_status_bar()

    def _connect(self) -> None:
        vm = self.vm
        vm.sessionLoaded.connect(self._session_loaded)
        vm.planReady.connect(self._show_plan)
        vm.timelineReady.connect(self._timeline_ready)
        vm.answersReady.connect(self.timeline.set_answers)
        vm.compositionReady.connect(self.timeline.set_composition)
        vm.retentionReady.connect(self.lost_card.set_retention)
        vm.whereReady.connect(self.timeline.set_found)
        self.timeline.findRequested.connect(vm.find_term)
        vm.timelineStale.connect(self._timeline_stale)
        vm.simulating.connect(self._simulating)
        vm.timelinePartial.connect(self.timeline.set_partial)
        vm.timelineCancelled.connect(self._timeline_cancelled)
        vm.realCounting.connect(self._real_counting)
        vm.realCountReady.connect(self._real_count_ready)
        vm.explanationReady.connect(self._show_explanation)
        vm.compareReady.connect(self.compare.show_result)
        vm.compareCosted.connect(self.compare.show_costs)
        vm.paramError.connect(self.params.show_error)
        vm.paramsChanged.connect(self.params.set_values)
        vm.historyChanged.connect(self._history_changed)
        vm.policyChanged.connect(self._policy_changed)
        vm.busy.connect(self._busy)
        vm.progress.connect(self._progress)
        vm.errorOccurred.connect(self.show_error)
        vm.pinsCleared.connect(self._pins_cleared)
        vm.planFailed.connect(self._plan_failed)
        self.params.valueChanged.connect(vm.set_param)
        self.policy_box.currentTextChanged.connect(vm.set_policy)
        self.tokenizer_box.currentTextChanged.connect(lambda t: vm.set_tokenizer(None if t == "policy's own" else t))
        self.model_box.currentTextChanged.connect(lambda t: vm.set_options(model="" if t == "session's model" else t))
        self.real_box.toggled.connect(lambda v: vm.set_options(real_count=v))
        self.pair_box.toggled.connect(lambda v: vm.set_options(pair_safe=v))
        self.role_filter.currentTextChanged.connect(lambda t: self._filter(role="" if t.startswith("all") else t))
        self.decision_filter.currentIndexChanged.connect(lambda _: self._filter(decision=self.decision_filter.currentData() or ""))
        self.search.textChanged.connect(self._search_typed)
        self.reason_filter.codeChanged.connect(lambda code: self._filter(reason=code))
        self.group_button.toggled.connect(self._group_by_reason)
        self.reason_groups.groupOpened.connect(self._open_reason_group)
        self.table.selectionModel().currentRowChanged.connect(self._row_selected)
        self.strip.messageClicked.connect(self.select_message)
        self.timeline.simulateRequested.connect(self.simulate)
        self.timeline.turnChanged.connect(vm.show_turn)
        self.timeline.latestRequested.connect(vm.show_latest)
        self.compare.compareRequested.connect(vm.request_compare)
        self.compare.messageRequested.connect(self._open_from_compare)
        self.context_format.currentTextChanged.connect(lambda _t: self._render_context())
        self.tabs.currentChanged.connect(self._tab_changed)
        self._policy_changed(vm.policy)

    # --- state --------------------------------------------------------------------------------
    def _restore(self) -> None:
        geometry = self.settings.value("window/geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = self.settings.value("window/state")
        if state is not None:
            self.restoreState(state)
        self._overview_fitted = False  # the overview's split follows the window until the user or saved state sets it
        for name, splitter in self.splitters.items():
            sizes = self.settings.value(f"splitters/{name}")
            if sizes is not None:
                splitter.restoreState(sizes)
                if name == "overview":
                    self._overview_fitted = True
        self.overview.splitterMoved.connect(self._overview_moved)

    def resizeEvent(self, event) -> None:  # noqa: N802
        """On a short screen the cards sit beside the donut (`place_cards`): the table keeps its
        rows. (The notes start folded at every size: one click, or the status bar's count, opens them.)"""
        super().resizeEvent(event)
        if not getattr(self, "_overview_fitted", True):
            QTimer.singleShot(0, self._fit_overview_once_laid_out)
        short = self.height() < SHORT_WINDOW
        if short != getattr(self, "_short_screen", None):
            self._short_screen = short
            self.place_cards(short)
        self.fit_cards()

    def closeEvent(self, event) -> None:  # noqa: N802
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        for name, splitter in self.splitters.items():
            self.settings.setValue(f"splitters/{name}", splitter.saveState())
        self.settings.sync()
        self.live.stop(quiet=True)
        self.vm.shutdown()
        super().closeEvent(event)

    # --- view updates -------------------------------------------------------------------------
    def _session_loaded(self, session: Session) -> None:
        self.overview_stack.setCurrentIndex(1)
        path = getattr(self, "_pending_path", None) or session.source
        if path and os.path.exists(path):
            self._remember(path)
        title = session.title or os.path.basename(session.source)
        self.setWindowTitle(f"{title} — ctxviz")
        self.timeline.set_timeline(None)
        self.clear_selection()  # a message number of the previous file: #145 of a 57-message file was still explained
        self._show_policy_title(self.vm.policy)
        self._fresh_session = True  # its first plan starts the replay when the Timeline tab is shown

    def _show_plan(self, session: Session, plan: Plan) -> None:
        first_for_policy = self.shown_plan is None or self.shown_plan.policy != plan.policy
        if getattr(self, "_fresh_session", False) and session is self.vm.session:
            self._fresh_session = False
            # The replay fills in after the first plan (off this thread, with progress), as opening the tab would.
            QTimer.singleShot(0, lambda: self._tab_changed(self.tabs.currentIndex()) if self.tabs.currentIndex() == TIMELINE_TAB else None)
        self.shown_session, self.shown_plan = session, plan
        self.overview_stack.setCurrentIndex(1)  # (the welcome page after a first plan that failed)
        latest = session is self.vm.session
        self.pie.set_plan(plan, unseen=self._unseen(plan), trigger=self._trigger(plan))
        vm = self.vm
        self.lost_card.set_plan(session, plan, vm.prepared(plan, "lost"))
        if latest:
            self.compare.check_current(plan, input_changes(vm.compared_inputs, vm.compare_inputs()))
        self.bars.set_plan(plan)
        voices = self._voices(session)
        self.strip.set_plan(session, plan, self._search_hits(), voices=voices)
        self._show_range()
        self.model.set_plan(session, plan, voices)
        self._fit_columns(plan, voices)
        self._restore_table_selection()
        self._update_count()
        self.reason_filter.set_plan(self._policy_codes(plan), plan, vm.prepared(plan, "reason_counts"))
        self._update_reason_groups()
        if first_for_policy:
            shown = get_policy(self.vm.policy)
            self.params.build(self.vm.params, dict(plan.params), shown.trigger, shown.keep, self._limits(plan))
        self._render_context()
        self._update_status(plan)
        self._show_notes(session, plan, latest)
        if latest:
            self._update_versus()
        if self.selected is not None and self.selected < len(plan.messages):
            self._show_detail(self.selected, replanned=True)
        elif self.selected is not None:  # an earlier turn, before the message was written: nothing to explain
            self._selection_not_in(session)

    def _tab_changed(self, index: int) -> None:
        if index == CONTEXT_TAB and self._context_stale:
            self._render_context()
        if index == TIMELINE_TAB and self.vm.timeline is None and self.vm.session is not None and len(self.vm.session.messages) <= AUTO_SIMULATE_MESSAGES:
            self.vm.request_timeline()
        if index == 0:
            self.vm.show_latest()
