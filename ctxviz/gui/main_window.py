"""The main window: views over the view-model's plan, with desktop conventions users expect."""

from __future__ import annotations

import html
import os
from typing import Any

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QFontDatabase, QGuiApplication, QIcon, QKeySequence, QTextDocument
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTabWidget,
    QTextBrowser,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..engine.catalog import load_catalog
from ..engine.explain import Explanation, describe
from ..engine.fill import fill
from ..engine.plan import Plan
from ..engine.policies import get_policy
from ..engine.policies.base import params_dict
from ..engine.ranges import range_summary
from ..engine.reasons import short_reason
from ..engine.session import Session, ToolCallPart, part_text
from ..engine.tokenizers import tokenizer_names
from ..engine.vocabulary import trigger_level
from ..engine.voices import voices_of
from ..errors import CtxvizError
from ..io.config import dump_preset, load_preset
from ..io.exporters import EXPORTERS, GAP_MARK, export, export_text, marked_markdown, write_atomic
from ..resources import resource_path
from ..terminal import one_line
from .actions import ActionRegistry, ActionSpec, CommandPalette, PaletteEntry
from .live import LiveController
from .live_window import LiveWindow
from .models import VOICE_MEANINGS, MessageTableModel, role_shown
from .safe import FittingLabel, message_box, plain_label, qt_int, set_plain_tooltip
from .status import SEPARATOR, notes_count, reported_turn_text, status_text, unseen_text
from .theme import CATEGORY_COLORS, CATEGORY_LABELS, WARNING, category_label
from .viewmodel import ContextViewModel
from .widgets.budget_pie import BudgetPie
from .widgets.category_bars import CategoryBars
from .widgets.compare_view import CompareView
from .widgets.lost_card import LostCard
from .widgets.message_strip import USER_LOST, MessageStrip, sent_span
from .widgets.message_table import MessageTableView
from .widgets.next_compaction import NextCompactionCard
from .widgets.notes import NotesPanel
from .widgets.param_form import ParamForm
from .widgets.reason_groups import ReasonFilter, ReasonGroupView
from .widgets.session_browser import SessionBrowser
from .widgets.strip_overview import StripOverview
from .widgets.timeline import TimelineView
from .widgets.welcome import WelcomePanel

MAX_RECENT = 10


def strip_legend_html() -> str:
    """One line under the strip: the category colours (the same everywhere) and how decisions are drawn."""
    swatches = " ".join(f'<span style="color:{CATEGORY_COLORS[c]};">■</span>&nbsp;{CATEGORY_LABELS[c]}'
                        for c in ("system", "context", "dialog", "system_output", "error"))
    return (f"<small>{swatches} · faint: not sent · hatched: summarised · part-filled: truncated · "
            f'<span style="color:{USER_LOST};">■</span> user msg. not sent · a search dims the rest</small>')
#: Where the "why" answer goes in the detail's head: after the decision, before the reason.
DETAIL_SPLIT = "<!--why-->"
SEARCHING_HTML = "<p><i>Searching for the smallest change that would keep it…</i></p>"
CONTEXT_TAB = 3  # Overview, Timeline, Compare, Context as sent
SESSION_FILTER = "Sessions (*.yaml *.yml *.json *.jsonl *.ndjson);;All files (*)"
TIMELINE_TAB = 1
#: Sessions up to this many messages are replayed without asking (opening the tab, changing a parameter on it).
AUTO_SIMULATE_MESSAGES = 3000


class MainWindow(LiveWindow, QMainWindow):
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
        self._history_changed(False, False)
        self._restore()

    # --- construction -------------------------------------------------------------------------
    def _build_views(self) -> None:
        self.pie = BudgetPie()
        self.bars = CategoryBars()
        self.strip = MessageStrip()
        self.strip_overview = StripOverview(self.strip)
        self.model = MessageTableModel(self)  # sorts and filters itself (see models.py for why)
        self.table = MessageTableView()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setAlternatingRowColors(True)
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)
        for col, width in enumerate((42, 58, 62, 112, 56, 56, 66, 72)):  # the reason (stretched) keeps the rest
            header.resizeSection(col, width)
        header.setSectionResizeMode(8, QHeaderView.ResizeMode.Stretch)

        self.role_filter = QComboBox()
        # "user" lists the user's own turns; what the harness sent as user turns (reminders,
        # attachments, command output) and the observations of coding agents are listed apart.
        self.role_filter.addItems(["all roles", "system", "user", "harness", "observation", "assistant", "tool"])
        self.decision_filter = QComboBox()
        self.decision_filter.addItems(["all decisions", "kept", "dropped", "summarized", "truncated", "replaced"])
        self.search = QLineEdit()
        self.search.setPlaceholderText('Search (Ctrl+F): words, "a phrase", role:user decision:dropped tokens>1000 -zone:system')
        self.search_help = ("Terms are ANDed. field:value for role, decision, category, zone, id; tokens, sent and index "
                               "compare with > >= < <= =; a word or \"quoted phrase\" must be in the id, reason or text; "
                               "a leading - negates a term.")
        self.search.setToolTip(self.search_help)
        self.search.setClearButtonEnabled(True)
        # The policy's reason codes, and the table grouped by them (counts and tokens per reason).
        self.reason_filter = ReasonFilter()
        self.group_button = QToolButton()
        self.group_button.setText("By reason")
        self.group_button.setObjectName("group-by-reason")
        self.group_button.setCheckable(True)
        self.group_button.setToolTip("Show the messages the filters select as one row per reason, with counts and tokens")
        self.reason_groups = ReasonGroupView()
        filters = QHBoxLayout()
        filters.addWidget(self.role_filter)
        filters.addWidget(self.decision_filter)
        filters.addWidget(self.reason_filter)
        filters.addWidget(self.search, 1)
        filters.addWidget(self.group_button)
        self.count_label = plain_label()
        # Labels that change on every re-plan get a fixed size policy, so new text repaints the
        # label alone instead of re-laying out (and repainting) the whole window.
        self.count_label.setMinimumWidth(self.count_label.fontMetrics().horizontalAdvance("100,000 of 100,000") + 8)
        self.count_label.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
        filters.addWidget(self.count_label)
        table_box = QWidget()
        tl = QVBoxLayout(table_box)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addLayout(filters)
        self.table_stack = QStackedWidget()
        self.table_stack.addWidget(self.table)
        self.table_stack.addWidget(self.reason_groups)
        tl.addWidget(self.table_stack)

        # The decision and the "why" answer change on every re-plan; the message body does not, and
        # laying out a long tool output again on each slider step would stall the drag.
        self.detail_head = QLabel()
        self.detail_head.setWordWrap(True)
        self.detail_head.setTextFormat(Qt.TextFormat.RichText)
        self.detail_head.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.detail_head.linkActivated.connect(self._detail_link)
        self.detail_head.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.detail_head.setContentsMargins(6, 2, 6, 2)
        self.detail = QTextBrowser()
        self.detail.setOpenExternalLinks(False)
        self.detail.setPlaceholderText("Select a message to see it whole, and why.")
        # Head and body share the panel through a splitter, the head scrolling when a long
        # answer would otherwise squeeze the message out of sight on a small screen.
        head_scroll = QScrollArea()
        head_scroll.setWidget(self.detail_head)
        head_scroll.setWidgetResizable(True)
        head_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        head_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        detail_box = QSplitter(Qt.Orientation.Vertical)
        detail_box.addWidget(head_scroll)
        detail_box.addWidget(self.detail)
        detail_box.setStretchFactor(0, 3)
        detail_box.setStretchFactor(1, 2)
        detail_box.setSizes([300, 200])  # scaled to the space it gets: three fifths for the decision and why
        detail_box.setChildrenCollapsible(False)
        # The message whose body the panel shows: the session itself, not its id (ids are reused once freed).
        self._detail_session: Session | None = None
        self._detail_index = -1
        self._detail_record: Any = None
        self._detail_head_html = ""
        self._why_html = ""
        # A re-plan asks "why" again only once the parameters settle: each search re-plans hundreds of times.
        self._why_timer = QTimer(self)
        self._why_timer.setSingleShot(True)
        self._why_timer.setInterval(250)
        self._why_timer.timeout.connect(self._request_why)

        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.pie)
        top.addWidget(self.bars)
        top.setSizes([560, 440])
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(table_box)
        lower.addWidget(detail_box)
        lower.setSizes([820, 420])
        overview = QSplitter(Qt.Orientation.Vertical)
        overview.addWidget(top)
        strip_box = QWidget()
        sb = QVBoxLayout(strip_box)
        sb.setContentsMargins(0, 0, 0, 0)
        sb.setSpacing(0)
        sb.addWidget(self.strip, 1)
        sb.addWidget(self.strip_overview)
        # The span selected on the strip (Shift+drag), summed up: tokens, roles, tool pairs.
        self.range_label = plain_label()
        self.range_label.setObjectName("strip-range")
        self.range_label.setContentsMargins(6, 0, 6, 0)
        self.range_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.range_label.setWordWrap(True)
        self.range_label.setToolTip("Shift+drag on the strip selects a span of messages; Esc on the strip clears it")
        self.range_label.hide()
        self.strip.rangeChanged.connect(lambda _first, _last: self._show_range())
        sb.addWidget(self.range_label)
        self.strip_legend = QLabel(strip_legend_html())
        self.strip_legend.setTextFormat(Qt.TextFormat.RichText)
        self.strip_legend.setWordWrap(True)  # one line at 1280 px; two at 1024 rather than a window wider than the screen
        self.strip_legend.setContentsMargins(6, 0, 6, 2)
        sb.addWidget(self.strip_legend)
        # The splitter may not squeeze the strip, its overview and a two-line legend into each other.
        strip_box.setMinimumHeight(self.strip.minimumHeight() + self.strip_overview.height() + 2 * self.fontMetrics().lineSpacing() + 6)
        overview.addWidget(strip_box)
        overview.addWidget(lower)
        overview.setSizes([190, 130, 540])
        # A taller window gives its extra height to the table first (at 1024x700 it showed four rows).
        overview.setStretchFactor(0, 0)
        overview.setStretchFactor(1, 0)
        overview.setStretchFactor(2, 1)
        self.overview = overview
        # What the provider's log says beside the plan, and the notes, above the charts (not in the
        # splitter: a layout gives them the height their wrapped text needs).
        self.notes_panel = NotesPanel()
        overview_page = QWidget()
        ol = QVBoxLayout(overview_page)
        ol.setContentsMargins(0, 0, 0, 0)
        ol.setSpacing(2)
        ol.addWidget(self.notes_panel)
        self.lost_card = LostCard()
        self.lost_card.messageClicked.connect(self.select_message)
        ol.addWidget(self.lost_card)
        self.next_card = NextCompactionCard()
        self.next_card.messageClicked.connect(self.select_message)
        ol.addWidget(self.next_card)
        ol.addWidget(overview, 1)
        # Before a session is open, the overview is a welcome page (samples, recent files), not bare axes.
        self.welcome = WelcomePanel()
        self.welcome.openRequested.connect(self.open_path)
        self.browser = SessionBrowser()
        self.welcome.set_browser(self.browser)
        self.overview_stack = QStackedWidget()
        self.overview_stack.addWidget(self.welcome)
        self.overview_stack.addWidget(overview_page)

        self.timeline = TimelineView()
        self.compare = CompareView(self.vm.policies())
        self.context_view = QPlainTextEdit()
        self.context_view.setReadOnly(True)
        self.context_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.context_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))  # JSON and fences line up
        context_box = QWidget()
        cl = QVBoxLayout(context_box)
        buttons = QHBoxLayout()
        self.context_format = QComboBox()
        self.context_format.addItems(list(EXPORTERS))
        self.context_format.setCurrentText("markdown")
        copy = QPushButton("Copy")
        copy.clicked.connect(self.copy_context)
        export = QPushButton("Export…")
        export.clicked.connect(self.export_context)
        command = QPushButton("Copy as command")
        command.clicked.connect(self.copy_command)
        buttons.addWidget(QLabel("Format:"))
        buttons.addWidget(self.context_format)
        buttons.addStretch(1)
        buttons.addWidget(copy)
        buttons.addWidget(export)
        buttons.addWidget(command)
        cl.addLayout(buttons)
        # Which context this is: the plan of the whole file, or a turn of the replay scrubbed to.
        self.context_scope = plain_label()
        self.context_scope.setWordWrap(True)  # however long, it never widens the window
        self.context_scope.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        cl.addWidget(self.context_scope)
        cl.addWidget(self.context_view)

        self.tabs = QTabWidget()
        self.tabs.addTab(self.overview_stack, "Overview")
        self.tabs.addTab(self.timeline, "Timeline")
        self.tabs.addTab(self.compare, "Compare")
        self.tabs.addTab(context_box, "Context as sent")

        self.params = ParamForm()
        self.policy_title = QLabel()
        self.policy_title.setWordWrap(True)
        self.reset_button = QPushButton("Reset to defaults")
        self.reset_button.setToolTip("Every parameter back to the framework's default (Ctrl+Shift+0; Ctrl+Z undoes)")
        self.reset_button.clicked.connect(self.vm.reset_params)
        side = QWidget()
        sl = QVBoxLayout(side)
        sl.addWidget(self.policy_title)
        sl.addWidget(self.params)
        sl.addWidget(self.reset_button, 0, Qt.AlignmentFlag.AlignLeft)
        sl.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(side)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(250)
        side.setMinimumWidth(230)

        self.params_panel = scroll
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(scroll)
        main.addWidget(self.tabs)
        main.setSizes([340, 1060])
        main.setStretchFactor(1, 1)
        self.setCentralWidget(main)
        # Every divider the user can drag, persisted with the window (names are the settings keys).
        self.splitters = {"main": main, "overview": overview, "charts": top, "table": lower, "detail": detail_box}

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
        # A change of inputs while the timeline is shown replays again once the values settle.
        self._resimulate_timer = QTimer(self)
        self._resimulate_timer.setSingleShot(True)
        self._resimulate_timer.setInterval(300)
        self._resimulate_timer.timeout.connect(self._resimulate)

    def _build_toolbar(self) -> None:
        bar = QToolBar("Policy")
        bar.setObjectName("policy-toolbar")
        self.addToolBar(bar)
        self.policy_box = QComboBox()
        self.policy_box.addItems(self.vm.policies())
        self.tokenizer_box = QComboBox()
        self.tokenizer_box.addItems(["policy's own", *tokenizer_names()])
        self.model_box = QComboBox()
        self.model_box.addItems(["session's model", *[m.name for m in load_catalog()]])
        self.real_box = QCheckBox("real count")
        self.real_box.setChecked(self.vm.options.real_count)
        self.pair_box = QCheckBox("pair-safe")
        for label, widget in (("Policy", self.policy_box), ("Tokenizer", self.tokenizer_box), ("Model", self.model_box)):
            bar.addWidget(QLabel(f" {label} "))
            bar.addWidget(widget)
        bar.addSeparator()
        bar.addWidget(self.real_box)
        bar.addWidget(self.pair_box)
        bar.addSeparator()
        for action_id in ("open", "export", "palette"):
            bar.addAction(self.registry.actions[action_id])

    def _build_actions(self) -> None:
        r = self.registry = ActionRegistry(self)
        S = QKeySequence.StandardKey
        specs = [
            ActionSpec("open", "&Open…", "File", self.open_dialog, S.Open),
            ActionSpec("browse", "&Browse sessions on this machine…", "File", self.browse_sessions, "Ctrl+Shift+O"),
            ActionSpec("follow", "&Follow the file as it grows", "File", self.toggle_follow, "Ctrl+Shift+F"),
            ActionSpec("export", "&Export context…", "File", self.export_context, "Ctrl+E"),
            ActionSpec("report", "Export &report…", "File", self.export_report, "Ctrl+Shift+R"),
            ActionSpec("save-preset", "&Save parameters as preset…", "File", self.save_preset, S.Save),
            ActionSpec("load-preset", "&Load parameter preset…", "File", self.load_preset_dialog, "Ctrl+L"),
            ActionSpec("quit", "&Quit", "File", self.close, "Ctrl+Q"),
            ActionSpec("undo", "&Undo parameter change", "Edit", self.vm.undo, S.Undo),
            ActionSpec("redo", "&Redo parameter change", "Edit", self.vm.redo, "Ctrl+Shift+Z"),
            ActionSpec("reset-params", "Reset parameters to the &defaults", "Edit", self.vm.reset_params, "Ctrl+Shift+0"),
            ActionSpec("copy-context", "&Copy context as sent", "Edit", self.copy_context, "Ctrl+Shift+C"),
            ActionSpec("copy-command", "Copy as co&mmand", "Edit", self.copy_command, "Ctrl+Shift+M"),
            ActionSpec("find", "&Find message", "Edit", self.focus_search, S.Find),
            ActionSpec("go-to", "&Go to message…", "Edit", self.go_to_dialog, "Ctrl+G"),
            ActionSpec("jump-cut", "&Jump to the cut", "Edit", self.jump_to_cut, "Ctrl+J"),
            ActionSpec("next-dropped-user", "&Next dropped user message", "Edit", self.next_dropped_user, "Ctrl+D"),
            ActionSpec("pin", "P&in / unpin the selected message", "Edit", self.toggle_pin, "Ctrl+K"),
            ActionSpec("switch-policy", "S&witch policy…", "Tools", self.choose_policy, "Ctrl+P"),
            ActionSpec("view-overview", "&Overview", "View", lambda: self.tabs.setCurrentIndex(0), "Ctrl+1"),
            ActionSpec("view-timeline", "&Timeline", "View", lambda: self.tabs.setCurrentIndex(1), "Ctrl+2"),
            ActionSpec("view-compare", "&Compare", "View", lambda: self.tabs.setCurrentIndex(2), "Ctrl+3"),
            ActionSpec("view-context", "Context as &sent", "View", lambda: self.tabs.setCurrentIndex(3), "Ctrl+4"),
            ActionSpec("strip-width", "Strip: width by tokens / by message", "View", self.toggle_strip_width, "Ctrl+T"),
            ActionSpec("toggle-params", "&Parameter panel (show / hide)", "View", self.toggle_params, "Ctrl+B"),
            ActionSpec("zoom-cut", "Strip: zoom to the &cut", "View", self.zoom_to_cut, "Ctrl+Shift+J"),
            ActionSpec("zoom-sent", "Strip: zoom to what is &sent", "View", self.zoom_to_sent, "Ctrl+Shift+S"),
            ActionSpec("zoom-all", "Strip: show &all", "View", self.zoom_all, "Ctrl+Shift+A"),
            ActionSpec("simulate", "&Simulate turn by turn", "Tools", self.simulate, "Ctrl+R"),
            ActionSpec("sweep", "S&weep trigger and keep…", "Tools", self.show_sweep, "Ctrl+Shift+W"),
            ActionSpec("palette", "Command &palette…", "Tools", self.show_palette, "Ctrl+Shift+P"),
            ActionSpec("about", "&About ctxviz", "Help", self.about, S.HelpContents),
        ]
        for spec in specs:
            r.add(spec)
        r.actions["follow"].setCheckable(True)
        menus = {}
        for name in ("File", "Edit", "View", "Tools", "Help"):
            menus[name] = self.menuBar().addMenu(f"&{name}")
        self.recent_menu = menus["File"].addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._refresh_recent)  # files deleted since are left out
        for spec in specs:
            menus[spec.menu].addAction(r.actions[spec.id])
            if spec.id == "open":
                menus["File"].addMenu(self.recent_menu)
        self._refresh_recent()

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
        self.params.valueChanged.connect(vm.set_param)
        self.policy_box.currentTextChanged.connect(vm.set_policy)
        self.tokenizer_box.currentTextChanged.connect(lambda t: vm.set_tokenizer(None if t == "policy's own" else t))
        self.model_box.currentTextChanged.connect(lambda t: vm.set_options(model="" if t == "session's model" else t))
        self.real_box.toggled.connect(lambda v: vm.set_options(real_count=v))
        self.pair_box.toggled.connect(lambda v: vm.set_options(pair_safe=v))
        self.role_filter.currentTextChanged.connect(lambda t: self._filter(role="" if t.startswith("all") else t))
        self.decision_filter.currentTextChanged.connect(lambda t: self._filter(decision="" if t.startswith("all") else t))
        self.search.textChanged.connect(lambda t: self._filter(search=t))
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

    def _fit_overview_once_laid_out(self) -> None:
        if not self._overview_fitted:
            self.overview.blockSignals(True)
            self.fit_overview()
            self.overview.blockSignals(False)

    def _overview_moved(self, *_: object) -> None:
        self._overview_fitted = True

    def fit_overview(self) -> None:
        """Split the overview's height: the donut and the strip at what they need (a little more
        on a tall window), the table the rest, so a 700-pixel window shows more than four rows."""
        total = sum(self.overview.sizes())
        if total <= 0:
            return
        main = self.splitters["main"]
        width = sum(main.sizes())
        if width > 0:  # the parameters take less of a narrow window (340 of 1024 pixels squeezed the charts)
            side = min(340, max(250, int(width * 0.24)))
            main.setSizes([side, width - side])
        pie = min(max(int(total * 0.3), self.pie.minimumHeight()), 280)
        strip = self.overview.widget(1).minimumHeight() + max(0, min(60, int((total - 560) * 0.15)))
        self.overview.setSizes([pie, strip, max(total - pie - strip, 1)])

    def resizeEvent(self, event) -> None:  # noqa: N802
        """On a short screen the notes start folded (one click opens them): the table keeps its rows."""
        super().resizeEvent(event)
        if not getattr(self, "_overview_fitted", True):
            QTimer.singleShot(0, self._fit_overview_once_laid_out)
        short = self.height() < 800
        if short != getattr(self, "_short_screen", None):
            self._short_screen = short
            self.notes_panel.expand(not short)

    def closeEvent(self, event) -> None:  # noqa: N802
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        for name, splitter in self.splitters.items():
            self.settings.setValue(f"splitters/{name}", splitter.saveState())
        self.settings.sync()
        self.live.stop(quiet=True)
        self.vm.shutdown()
        super().closeEvent(event)

    def recent_files(self) -> list[str]:
        """The recent files that still exist (the others are dropped from the settings too)."""
        value = self.settings.value("recent/files", [])
        if isinstance(value, str):
            value = [value]
        stored = [v for v in (value or []) if isinstance(v, str)]
        files = [f for f in stored if os.path.isfile(f)]
        if files != stored:
            self.settings.setValue("recent/files", files)
        return files

    def _remember(self, path: str) -> None:
        files = [os.path.abspath(path)] + [f for f in self.recent_files() if f != os.path.abspath(path)]
        self.settings.setValue("recent/files", files[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        for path in files:
            action = self.recent_menu.addAction(os.path.basename(path).replace("&", "&&"))  # a name, not a mnemonic
            set_plain_tooltip(action, path)
            action.triggered.connect(lambda _c=False, p=path: self.open_recent(p))
        self.recent_menu.setEnabled(bool(files))
        if hasattr(self, "welcome"):
            self.welcome.set_recent(files)

    def open_recent(self, path: str) -> None:
        """Open a file from Open Recent; one deleted since the menu was built is dropped, and said so."""
        if os.path.isfile(path):
            self.open_path(path)
            return
        self._refresh_recent()  # recent_files() forgets it
        self.status_label.setText(f"{path} no longer exists; removed from Open Recent")

    # --- commands -----------------------------------------------------------------------------
    def open_path(self, path: str) -> None:
        """Open a file; one an agent is writing now (in its own folder, written in the last few
        minutes) is followed as it grows."""
        self.status_label.setText(f"Loading {path}…")
        self._pending_path = path
        if self.live.should_follow(path):
            self.live.follow(path)
        else:
            self.live.stop()
            self.vm.open(path)

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open session", "", SESSION_FILTER)
        if path:
            self.open_path(path)

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.open_path(urls[0].toLocalFile())
            event.acceptProposedAction()

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

    def focus_search(self) -> None:
        self.tabs.setCurrentIndex(0)
        self.search.setFocus()
        self.search.selectAll()

    def toggle_strip_width(self) -> None:
        self.strip.set_by_tokens(not self.strip.by_tokens)

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

    def _real_counting(self, counting: bool) -> None:
        if self.shown_plan is not None:
            self._update_status(self.shown_plan)

    def _real_count_ready(self, before: Plan, plan: Plan) -> None:
        """The plan on screen, now with its real count: the status bar and the donut say it."""
        if self.shown_plan is before:
            self.shown_plan = plan
            self._update_status(plan)
            self.pie.set_plan(plan, unseen=self._unseen(), trigger=self._trigger(plan))  # the real count beside the policy's
            if self.shown_session is not None:
                self._show_notes(self.shown_session, plan, self.shown_session is self.vm.session)

    def show_notes(self) -> None:
        self.tabs.setCurrentIndex(0)
        self.notes_panel.expand(True)

    def show_sweep(self) -> None:
        if self.vm.session is None:
            self.statusBar().showMessage("open a session to sweep its settings", 4000)
            return
        from .sweep_dialog import SweepDialog

        self.sweep_dialog = SweepDialog(self.vm, self)
        self.sweep_dialog.open()

    def show_palette(self) -> None:
        self.palette_dialog = CommandPalette(self.registry, self, self.palette_entries)
        self.palette_dialog.open()

    def palette_entries(self, query: str) -> list[PaletteEntry]:
        """The palette's own entries: one per policy, and "go to message N" when the query is a number."""
        entries = [PaletteEntry(f"Switch policy: {name}", lambda name=name: self.policy_box.setCurrentText(name))
                   for name in self.vm.policies() if name != self.vm.policy]
        number = query.strip().lstrip("#").removeprefix("go to").strip().lstrip("#")
        if number.isdigit() and self.shown_plan is not None and int(number) < len(self.shown_plan.messages):
            entries.insert(0, PaletteEntry(f"Go to message #{int(number)}", lambda n=int(number): self.select_message(n)))
        return entries

    def go_to_dialog(self) -> None:
        if self.shown_plan is None or not self.shown_plan.messages:
            return
        last = len(self.shown_plan.messages) - 1
        number, ok = QInputDialog.getInt(self, "Go to message", f"Message number (0-{last:,}):", self.selected or 0, 0, last)
        if ok:
            self.select_message(number)

    def _limits(self, plan: Plan | None = None) -> dict[str, int]:
        """What the sliders of a unit should reach for this session: all its messages, all its tokens."""
        plan = plan or self.vm.plan
        if plan is None:
            return {}
        return {"messages": len(plan.messages), "tokens": sum(plan.columns.tokens) + plan.totals.used}

    def _open_from_compare(self, index: int) -> None:
        self.tabs.setCurrentIndex(0)
        self.select_message(index)

    def toggle_pin(self) -> None:
        """Pin the selected message (sent whatever the policy decides; the plan says what it pushed out)."""
        if self.selected is None or self.vm.session is None:
            return
        pinned = self.vm.toggle_pin(self.selected)
        self.statusBar().showMessage(f"#{self.selected} {'pinned: it is sent whatever the policy decides' if pinned else 'unpinned'}"
                                     f" ({len(self.vm.options.pins)} pinned)", 5000)

    def _detail_extras(self, m: Any) -> str:
        """How far the message missed the budget by, and the tool-call partner a broken pair needs."""
        extras: list[str] = []
        code = short_reason(m.reason, m.decision.value)
        if code.startswith("missed by"):
            extras.append(f"<b>{html.escape(code)} token{'s' if not code.endswith(' 1') else ''}</b>: that much more room and it would be sent")
        plan = self.shown_plan
        for orphan in plan.orphans if plan is not None else ():
            if orphan.index == m.index:
                link = f'<a href="#{orphan.partner}">#{orphan.partner}</a>' if orphan.partner is not None else "a partner not in the file"
                extras.append(f"<b>broken tool-call pair</b> with {link}: {html.escape(orphan.message)}")
            elif orphan.partner == m.index:
                extras.append(f'<b>broken tool-call pair</b>: <a href="#{orphan.index}">#{orphan.index}</a> is sent without this message')
        return "".join(f"<p>{e}</p>" for e in extras)

    def _detail_link(self, href: str) -> None:
        if href == "pin":
            self.toggle_pin()
        elif href.startswith("#") and href[1:].isdigit():
            self.select_message(int(href[1:]))

    def zoom_to_cut(self) -> None:
        """The strip around the newest message not sent: twenty messages either side."""
        plan = self.shown_plan
        cut = next((m.index for m in reversed(plan.messages) if not m.sent), None) if plan is not None else None
        if cut is not None:
            self.strip.zoom_to(max(0, cut - 20), min(len(plan.messages) - 1, cut + 20))  # type: ignore[union-attr]

    def zoom_to_sent(self) -> None:
        """The strip from the first to the last message sent, the leading system message left out."""
        span = sent_span(self.shown_plan) if self.shown_plan is not None else None
        if span is not None:
            self.strip.zoom_to(*span)

    def zoom_all(self) -> None:
        if self.shown_plan is not None and self.shown_plan.messages:
            self.strip.zoom_to(0, len(self.shown_plan.messages) - 1)

    def toggle_params(self) -> None:
        self.params_panel.setVisible(not self.params_panel.isVisible())

    def _history_changed(self, can_undo: bool, can_redo: bool) -> None:
        self.registry.actions["undo"].setEnabled(can_undo)
        self.registry.actions["redo"].setEnabled(can_redo)

    def jump_to_cut(self) -> None:
        """Select the newest message the plan does not send: where the cut falls."""
        plan = self.shown_plan
        if plan is None:
            return
        cut = next((m.index for m in reversed(plan.messages) if not m.sent), None)
        if cut is None:
            self.statusBar().showMessage("every message is sent: there is no cut", 4000)
        else:
            self.select_message(cut)

    def next_dropped_user(self) -> None:
        """Select the next user message the plan does not send, after the selected one (wrapping)."""
        plan = self.shown_plan
        if plan is None:
            return
        lost = [m.index for m in plan.messages if m.role == "user" and not m.sent]
        if not lost:
            self.statusBar().showMessage("every user message is sent", 4000)
            return
        current = self.selected if self.selected is not None else -1
        self.select_message(next((i for i in lost if i > current), lost[0]))

    def choose_policy(self) -> None:
        self.policy_box.setFocus()
        self.policy_box.showPopup()

    def about(self) -> None:
        QMessageBox.about(self, "About ctxviz", "ctxviz: see and tune how agent context managers trim a conversation.")

    def copy_context(self) -> None:
        QGuiApplication.clipboard().setText(self._context_text())
        self.status_label.setText("Context copied to the clipboard")

    def copy_command(self) -> None:
        QGuiApplication.clipboard().setText(self.vm.command_line())
        self.status_label.setText(f"Copied: {self.vm.command_line()}")

    def export_context(self) -> None:
        if self.shown_plan is None or self.shown_session is None:
            return
        fmt = self.context_format.currentText()
        suffix = {"openai": "json", "anthropic": "json", "jsonl": "jsonl", "markdown": "md"}[fmt]
        path, _ = QFileDialog.getSaveFileName(self, "Export context", f"context.{suffix}")
        if path:
            self.write_export(path, fmt)

    def write_export(self, path: str, fmt: str) -> None:
        try:
            # What the context tab shows and copies: the scrubbed turn's context when one is shown.
            write_atomic(path, export_text(self.shown_plan, self.shown_session, fmt), inputs=self._input_files())  # type: ignore[arg-type]
        except CtxvizError as exc:
            self.show_error(str(exc))
        else:
            self.status_label.setText(f"Exported {fmt} ({self._context_scope()}) to {path}")

    def _input_files(self) -> list[str]:
        """The open session's file: no export, report or preset may be written over it."""
        session = self.vm.session
        return [session.source] if session is not None and session.source else []

    def export_report(self) -> None:
        if self.vm.session is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export report", "report.html", "Report (*.html *.png *.svg *.pdf)")
        if path:
            from .report import write_report

            try:
                # The plan on screen (planning again here could count 100,000 messages on this thread).
                plan = self.vm.plan if self.vm.plan is not None else self.vm.plan_now()
                write_report(self.vm.session, plan, self.vm.timeline, path, inputs=self._input_files())  # type: ignore[arg-type]
            except CtxvizError as exc:
                self.show_error(str(exc))
            else:
                self.status_label.setText(f"Report written to {path}")

    def save_preset(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save parameters", f"{self.vm.policy}.yaml", "YAML (*.yaml *.yml)")
        if path:
            self.write_preset(path)

    def write_preset(self, path: str) -> None:
        try:
            write_atomic(path, dump_preset(self.vm.policy, params_dict(self.vm.params), self.vm.tokenizer or ""), inputs=self._input_files())
        except CtxvizError as exc:
            self.show_error(str(exc))

    def load_preset_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load parameters", str(resource_path("presets")), "YAML (*.yaml *.yml)")
        if path:
            self.apply_preset(path)

    def apply_preset(self, path: str) -> None:
        try:
            preset = load_preset(path)
            policy = preset.policy or self.vm.policy
            params = get_policy(policy).make_params(preset.params)
        except CtxvizError as exc:
            self.show_error(str(exc))
            return
        self.policy_box.blockSignals(True)
        self.policy_box.setCurrentText(policy)
        self.policy_box.blockSignals(False)
        self.vm.set_params(params, policy)
        self._policy_changed(policy)

    # --- view updates -------------------------------------------------------------------------
    def _session_loaded(self, session: Session) -> None:
        self.overview_stack.setCurrentIndex(1)
        path = getattr(self, "_pending_path", None) or session.source
        if path and os.path.exists(path):
            self._remember(path)
        title = session.title or os.path.basename(session.source)
        self.setWindowTitle(f"{title} — ctxviz")
        self.timeline.set_timeline(None)
        self._show_policy_title(self.vm.policy)
        self._fresh_session = True  # its first plan starts the replay when the Timeline tab is shown

    def _policy_changed(self, name: str) -> None:
        self._show_policy_title(name)
        policy = get_policy(name)
        effective = dict(self.vm.plan.params) if self.vm.plan is not None and self.vm.plan.policy == name else {}
        self.params.build(self.vm.params, effective, policy.trigger, policy.keep, self._limits())
        if self.policy_box.currentText() != name:
            self.policy_box.blockSignals(True)
            self.policy_box.setCurrentText(name)
            self.policy_box.blockSignals(False)

    def _show_policy_title(self, name: str) -> None:
        """The policy's title and what it does, and, when the open log chose it, why (its agent's own)."""
        policy = get_policy(name)
        opened = self.vm.opened
        why = (f"<br><small><i>Opened under {html.escape(opened.reason)}; the Policy box chooses another.</i></small>"
               if opened is not None and opened.agents_own and opened.policy == name else "")
        self.policy_title.setText(f"<b>{policy.title}</b><br><small>{html.escape(policy.description)}</small>{why}")

    def _show_plan(self, session: Session, plan: Plan) -> None:
        first_for_policy = self.shown_plan is None or self.shown_plan.policy != plan.policy
        if getattr(self, "_fresh_session", False) and session is self.vm.session:
            self._fresh_session = False
            # The replay fills in after the first plan (off this thread, with progress), as opening the tab would.
            QTimer.singleShot(0, lambda: self._tab_changed(self.tabs.currentIndex()) if self.tabs.currentIndex() == TIMELINE_TAB else None)
        self.shown_session, self.shown_plan = session, plan
        latest = session is self.vm.session
        self.pie.set_plan(plan, unseen=self._unseen(), trigger=self._trigger(plan))
        self.lost_card.set_plan(session, plan)
        if latest:
            self.compare.check_current(plan)
        self.bars.set_plan(plan)
        voices = self._voices(session)
        self.strip.set_plan(session, plan, self._search_hits(), voices=voices)
        self._show_range()
        self.model.set_plan(session, plan, voices)
        self._restore_table_selection()
        self._update_count()
        self.reason_filter.set_plan(self._policy_codes(plan), plan)
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
        elif self.selected is not None:  # a shorter session or an earlier turn: nothing to explain
            self._why_timer.stop()
            self.vm.cancel_explanation()

    def _trigger(self, plan: Plan) -> int | None:
        """The token count at which the plan's policy acts (engine.vocabulary), for the donut's verdict."""
        if plan.policy != self.vm.policy or self.vm.session is None:
            return None
        try:
            return trigger_level(get_policy(plan.policy), self.vm.params, self.vm.session)
        except Exception:  # a policy that cannot say (a plugin): no trigger mark, the plan's own verdict
            return None

    def _unseen(self) -> int:
        """The estimate of what the log does not record: a fact of the file, whatever turn is shown."""
        latest = self.vm.plan
        return latest.reported.unseen if latest is not None and latest.reported is not None else 0

    def plan_notes(self, session: Session, plan: Plan, latest: bool) -> tuple[str, ...]:
        """The notes of the plan on screen: a plan of the whole file has the loader's already; the
        context at a turn of the replay gets them here (they are about the file, not the turn)."""
        return plan.notes if latest else (*session.notes, *plan.notes)

    def _show_notes(self, session: Session, plan: Plan, latest: bool) -> None:
        notes = self.plan_notes(session, plan, latest)
        facts = []
        if latest and plan.reported is not None:  # the one fill figure to quote, the others explained beside it
            facts.append(fill(plan, session).sentence())
        elif self.vm.session is not None:  # the context at a turn: the call made after it
            full = self.vm.session.messages
            turn = len(session.messages) - 1
            after = full[turn + 1] if 0 <= turn + 1 < len(full) else None
            if after is not None and after.usage is not None and after.usage.window_fill:
                facts.append(reported_turn_text(turn, after.usage.window_fill, plan.totals.used))
        facts.append(unseen_text(self._unseen()))
        self.notes_panel.set_content(facts, notes)
        count = notes_count(notes)
        self.notes_button.setText(count)
        self.notes_button.setVisible(bool(count))

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

    def _restore_table_selection(self) -> None:
        """A re-plan resets the table model; keep the selected message selected without re-announcing it."""
        if self.selected is None:
            return
        row = self.model.view_row(self.selected)
        current = self.table.currentIndex()
        if row is not None and not (current.isValid() and current.row() == row and self.table.selectionModel().isRowSelected(row)):
            selection = self.table.selectionModel()
            selection.blockSignals(True)
            self.table.setCurrentIndex(self.model.index(row, 0))
            selection.blockSignals(False)

    def _update_status(self, plan: Plan) -> None:
        pending = plan.real is None and self.vm.real_count_pending and plan is self.vm.plan
        self.status_label.setText(status_text(plan) + (SEPARATOR + "real count: counting…" if pending else ""))

    def _render_context(self) -> None:
        """The context text is the whole trimmed conversation: build it only when its tab is shown."""
        self._context_stale = True
        if self.tabs.currentIndex() == CONTEXT_TAB:
            marked = self.context_format.currentText() == "markdown" and self.shown_plan is not None
            # The markdown view marks each section's #index and the gaps between sent runs; copy and
            # export give the request itself. The JSON forms are shown exactly as they are copied.
            self.context_view.setPlainText(marked_markdown(self.shown_plan) if marked else self._context_text())  # type: ignore[arg-type]
            self.context_scope.setText(f"Showing, copying and exporting: {self._context_scope()}"
                                       + (f". Shown with each section's #index and a {GAP_MARK} line where messages are not sent "
                                          "(copy and export leave both out)" if marked else
                                          f". The markdown format marks each section's #index and the messages not sent ({GAP_MARK})"))
            self._context_stale = False

    def _context_scope(self) -> str:
        plan, session = self.shown_plan, self.shown_session
        if plan is None or session is None:
            return "nothing yet"
        sent = sum(1 for m in plan.messages if m.sent)
        counted = f"{sent:,} of {len(plan.messages):,} messages sent{self._entries_note(plan, session, sent)}"
        if session is self.vm.session:
            return f"the plan of the whole file ({counted})"
        return (f"the replay at turn {len(session.messages) - 1} ({counted}); "
                "Back to latest on the Timeline returns to the whole file")

    def _entries_note(self, plan: Plan, session: Session, sent: int) -> str:
        """Why the request below has another number of entries than messages sent: system messages
        folded into the system prompt, a system prompt or summaries added, turns merged (the
        Anthropic form). "" when the two agree."""
        try:
            entries = export(plan, session, self.context_format.currentText()).messages
        except CtxvizError:
            return ""
        if entries == sent:
            return ""
        from_messages = {i for i in plan.context_index if i is not None}
        folded = sum(1 for m in plan.messages if m.sent and m.index not in from_messages)
        added = sum(1 for i in plan.context_index if i is None)
        why = []
        if folded:
            why.append(f"{folded:,} system message{'s' if folded != 1 else ''} folded into the system prompt")
        if added:
            why.append(f"{added:,} added by the policy (the system prompt and what it writes, such as summaries)")
        merged = len(plan.context) - entries
        if self.context_format.currentText() == "anthropic" and merged:
            why.append(f"{merged:,} {'fewer' if merged > 0 else 'more'} after the Messages API's turns are merged "
                       "(the system prompt apart, tool results in user turns)")
        return f"; the request below has {entries:,} entries" + (f": {', '.join(why)}" if why else "")

    def _context_text(self) -> str:
        if self.shown_plan is None or self.shown_session is None:
            return ""
        return export_text(self.shown_plan, self.shown_session, self.context_format.currentText())

    def _filter(self, **kwargs: Any) -> None:
        self.model.set_filters(**kwargs)
        self._restore_table_selection()
        self._update_count()
        self._update_reason_groups()
        if self.shown_plan is not None and "search" in kwargs:  # what the search does not match is dimmed in the strip too
            self.strip.set_plan(self.shown_session, self.shown_plan, self._search_hits(), voices=self.model.voices)

    def _search_hits(self) -> set[int] | None:
        """The messages the search box matches (None without a search: nothing dimmed)."""
        if not self.model.search.strip() or self.model.query.error:
            return None
        return {self.model.message_index(r) for r in range(self.model.rowCount())}

    def _update_count(self) -> None:
        self.count_label.setText(f"{self.model.rowCount():,} of {self.model.total_count():,}")
        error = self.model.query.error if self.model.search else ""
        if error != self.search.property("query_error"):  # a malformed term is said, not silently ignored
            self.search.setProperty("query_error", error)
            self.search.setStyleSheet(f"QLineEdit {{ border: 1px solid {WARNING}; }}" if error else "")
            self.search.setToolTip(error or self.search_help)
            if error:
                self.statusBar().showMessage(f"search: {error}", 8000)

    def _voices(self, session: Session) -> tuple[str, ...]:
        """Each message's voice (engine/voices.py: a user turn may be the harness's). A turn of the
        replay holds a prefix of the file's messages: its voices are the file's, not worked out again."""
        full = self.vm.session
        n = len(session.messages)
        if full is not None and session is not full and n <= len(full.messages) and (n == 0 or session.messages[-1] is full.messages[n - 1]):
            return voices_of(full)[:n]
        return voices_of(session)

    def _show_range(self) -> None:
        """The strip's selected span in one line (hidden without one): what a DevTools range says."""
        span, plan, session = self.strip.selected_range, self.shown_plan, self.shown_session
        if span is None or plan is None or session is None or span[1] >= len(plan.messages):
            self.range_label.hide()
            return
        self.range_label.setText(f"Span {range_summary(plan, session, *span).sentence()}")
        self.range_label.show()

    def _policy_codes(self, plan: Plan) -> tuple[str, ...]:
        try:
            return get_policy(plan.policy).reason_codes
        except CtxvizError:  # a plan of a policy no longer registered (a plugin): the codes it carries
            return ()

    def _group_by_reason(self, grouped: bool) -> None:
        """The table, or the same messages as one row per reason (counts and tokens)."""
        self.table_stack.setCurrentIndex(1 if grouped else 0)
        self._update_reason_groups()

    def _update_reason_groups(self) -> None:
        if self.group_button.isChecked():
            self.reason_groups.groups.set_groups(self.shown_plan, self.model.rows_by_other_filters())

    def _open_reason_group(self, code: str) -> None:
        """A group opened: the table lists its messages (the reason filter set to its code)."""
        self.group_button.setChecked(False)
        self.reason_filter.set_code(code)

    def _row_selected(self, current, _previous) -> None:
        if current.isValid():
            self._show_detail(self.model.message_index(current.row()))

    def select_message(self, index: int) -> None:
        row = self.model.view_row(index)
        if row is not None:
            cell = self.model.index(row, 0)
            self.table.setCurrentIndex(cell)
            self.table.scrollTo(cell)
        self._show_detail(index)

    def _show_detail(self, index: int, replanned: bool = False) -> None:
        """Show message `index`: its body once, its decision whenever it changes, and the smallest
        change that would keep it (searched at once for a click, after a pause for a re-plan)."""
        if self.shown_plan is None or self.shown_session is None or index >= len(self.shown_plan.messages):
            return
        self.selected = index
        self.strip.select(index)
        m = self.shown_plan.messages[index]
        message = self.shown_session.messages[index]
        if self.shown_session is not self._detail_session or index != self._detail_index:
            self._detail_session, self._detail_index, self._detail_record = self.shown_session, index, None
            # The tool calls once, as a list: `Message.text` renders them too, so the body is the other parts.
            other = "\n".join(filter(None, (part_text(p) for p in message.parts if not isinstance(p, ToolCallPart))))
            body = html.escape(other) or ("" if message.tool_calls else "<i>(no text)</i>")
            calls = "".join(f"<li><code>{html.escape(c.name)}({html.escape(c.arguments[:400])})</code></li>" for c in message.tool_calls)
            self.detail.setHtml((f"<p><b>Tool calls</b></p><ul>{calls}</ul>" if calls else "")
                                + (f"<pre style='white-space: pre-wrap'>{body}</pre>" if body else ""))
        searching = not m.sent and self.shown_session is self.vm.session
        if m != self._detail_record or replanned:
            # After a re-plan the answer belongs to the old parameters even when this message's
            # decision and reason did not change: never leave it on screen as if it were current.
            self._detail_record = m
            voice = self.model.voices[index] if index < len(self.model.voices) else ""
            who = role_shown(m.role, voice)
            self._detail_head_html = (
                f"<p style='font-size:large'><b>#{m.index} · {html.escape(who)} · {html.escape(category_label(str(m.category)))}</b></p>"
                + (f"<p><i>{html.escape(VOICE_MEANINGS[voice])}</i></p>" if who != m.role else "")
                + f"<p><b>{m.decision.value}</b> in <i>{html.escape(m.zone)}</i> — {m.tokens:,} tokens ({m.sent_tokens:,} sent)</p>"
                + DETAIL_SPLIT
                + f"<p>{html.escape(m.reason)}</p>"
                + self._detail_extras(m)
                + (f'<p><a href="pin">{"Unpin" if f"#{m.index}" in self.vm.options.pins else "Pin"} this message</a> (Ctrl+K): '
                   "send it whatever the policy decides, and see what it pushes out</p>")
            )
            self._why_html = SEARCHING_HTML if searching else ""
            self._render_detail_head()
        self.vm.cancel_explanation()
        if not searching:
            self._why_timer.stop()
        elif replanned:
            self._why_timer.start()
        else:
            self._request_why()

    def _request_why(self) -> None:
        """Ask only about the plan on screen: the view-model's latest session, selection in range."""
        self._why_timer.stop()
        plan = self.vm.plan
        if (self.selected is not None and self.shown_session is self.vm.session and plan is self.shown_plan
                and plan is not None and self.selected < len(plan.messages)):
            self.vm.request_explanation(self.selected)

    def why_pending(self) -> bool:
        """The selected message's "why" answer is asked for (or about to be) and not in yet."""
        return self._why_timer.isActive() or self._why_html == SEARCHING_HTML

    def _render_detail_head(self) -> None:
        """The decision, then at once the "why" answer (on a 720-pixel screen it was below the
        fold, under the reason and the pin link), then the rest."""
        head, _, rest = self._detail_head_html.partition(DETAIL_SPLIT)
        self.detail_head.setText(head + self._why_html + rest + "<hr>")

    def detail_text(self) -> str:
        """The detail panel as plain text: decision, reason, the "why" answer, then the message."""
        document = QTextDocument()
        head, _, rest = self._detail_head_html.partition(DETAIL_SPLIT)
        document.setHtml(head + self._why_html + rest)
        return document.toPlainText() + "\n" + self.detail.toPlainText()

    def _show_explanation(self, explanation: Explanation) -> None:
        if self.selected != explanation.message.index or explanation.message != self._detail_record:
            return  # an answer about another message, or about a plan no longer on screen
        text = describe(explanation).split("\n", 1)
        answer = "<br>".join(html.escape(line) for line in text[1].split("\n")) if len(text) > 1 else ""
        self._why_html = f"<p style='color:#2ca02c'><b>What would keep it:</b> {answer}</p>" if answer else ""
        self._render_detail_head()

    def _busy(self, busy: bool, message: str) -> None:
        self.progress_bar.setVisible(busy)
        if busy:
            self.progress_bar.setRange(0, 0)
            self.status_label.setText(message)
        elif self.shown_plan is not None:
            self._update_status(self.shown_plan)

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

    def _tab_changed(self, index: int) -> None:
        if index == CONTEXT_TAB and self._context_stale:
            self._render_context()
        if index == TIMELINE_TAB and self.vm.timeline is None and self.vm.session is not None and len(self.vm.session.messages) <= AUTO_SIMULATE_MESSAGES:
            self.vm.request_timeline()
        if index == 0:
            self.vm.show_latest()
