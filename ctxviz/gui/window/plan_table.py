"""The Overview's message table: its filters (role, decision, reason, search), the table grouped
by reason, and moving the selection (find, go to, jump to the cut, the next dropped user message).

A mixin of `MainWindow` (gui/main_window.py); the detail panel shows what it selects.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QSizePolicy,
    QStackedWidget,
    QTableView,
    QToolButton,
    QWidget,
)

from ...engine.plan import Plan
from ...engine.policies import get_policy
from ...engine.reason_codes import code_of
from ...engine.reason_codes import label as reason_label
from ...engine.reasons import DETAILS, short
from ...engine.session import Session
from ...engine.voices import voices_of
from ...errors import CtxvizError
from ..models import MACHINE_USER_VOICES, MessageTableModel
from ..safe import plain_label
from ..theme import WARNING, category_label
from ..widgets.message_table import MessageTableView
from ..widgets.reason_groups import ReasonFilter, ReasonGroupView
from ..words import spelled

#: From this many messages a search waits for a pause in typing before it filters: a filter of a
#: 46,000-message plan takes about 0.2 s on the GUI thread, and each keystroke paid it.
SEARCH_PAUSE_ROWS = 5_000
#: The pause, in milliseconds (typing runs at about 150-250 ms a key).
SEARCH_PAUSE_MS = 250


class PlanTable:
    """The table of the plan's messages and its filters, for `MainWindow`."""

    vm: Any
    shown_plan: Plan | None
    shown_session: Session | None
    selected: int | None
    strip: Any
    tabs: Any

    def _build_table(self) -> QWidget:
        """The table (or its groups by reason); its filters are `filter_row`, which the Overview
        lays out above the table and the detail panel together (`_build_overview`)."""
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
        for col, width in enumerate((42, 58, 62, 112, 56, 56, 66, 72, 130)):  # (role, decision, zone, reason: `_fit_columns`)
            header.resizeSection(col, width)
        # The reason beside the decision, the zone last (it keeps the rest of the width): on a narrow
        # window the zone scrolls out of view, not the reason, which a stretched last column was
        # squeezed to ("since …", "sinc") at 1024 and 1280 pixels.
        header.moveSection(header.visualIndex(8), header.visualIndex(7))

        self.role_filter = QComboBox()
        # "user" lists the user's own turns; what the harness sent as user turns (reminders,
        # attachments, command output) and the observations of coding agents are listed apart.
        self.role_filter.addItems(["all roles", "system", "user", "harness", "observation", "assistant", "tool"])
        self.decision_filter = QComboBox()
        self.decision_filter.addItem("all decisions", "")
        for code in ("kept", "dropped", "summarized", "truncated", "replaced"):  # (shown as the app spells them, filtered by code)
            self.decision_filter.addItem(spelled(code), code)
        self.search = QLineEdit()
        self.search.setPlaceholderText('Search (Ctrl+F): words, "a phrase", role:user decision:dropped tokens>1000 -zone:system')
        self.search_help = ("Terms are ANDed. field:value for role, decision, category, zone, id, reason, spelled as the "
                               "table shows it or as its code (decision:summarised, category:\"Tool output\", zone:\"fresh tail\"); "
                               "tokens, sent and index compare with > >= < <= =; a word or \"quoted phrase\" must be in the "
                               "id, reason or text; a leading - negates a term.")
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
        # As wide as the session's own count needs (`_update_count`): "100,000 of 100,000" for every
        # session squeezed the search box to "S…" at 1024 px.
        self.count_label.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
        self._count_width_for = -1
        # The search box keeps room for its first words.
        self.search.setMinimumWidth(self.search.fontMetrics().horizontalAdvance("Search (Ctrl+F)") + 30)
        filters.addWidget(self.count_label)
        self.filter_row = QWidget()
        self.filter_row.setObjectName("table-filters")
        self.filter_row.setLayout(filters)
        filters.setContentsMargins(0, 0, 0, 0)
        self.table_stack = QStackedWidget()
        self.table_stack.addWidget(self.table)
        self.table_stack.addWidget(self.reason_groups)
        return self.table_stack

    def _search_typed(self, text: str) -> None:
        """The search box changed: filter now, or, in a long session, once typing pauses (the last
        text wins; a pending filter is replaced, never run for an outdated text)."""
        if self.model.total_count() < SEARCH_PAUSE_ROWS:
            self._filter(search=text)
            return
        timer = getattr(self, "_search_pause", None)
        if timer is None:
            timer = self._search_pause = QTimer(self)  # type: ignore[arg-type]
            timer.setSingleShot(True)
            timer.timeout.connect(lambda: self._filter(search=self.search.text()))
        timer.start(SEARCH_PAUSE_MS)

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

    def _fit_columns(self, plan: Plan, voices: tuple[str, ...] = ()) -> None:
        """Role, decision, reason and zone as wide as their longest word in this plan (at 66 and 72
        pixels "summarized" read "summa…" and "initial_context" "initial_co…" even at 1920 px,
        beside a stretched reason column of 500); the zone, last, keeps the rest. Only when the words
        change (a "missed by 1,234" reason is wider than its label: it elides, the tooltip has it)."""
        distinct = plan.distinct  # (read on the plan worker)
        decisions = frozenset(d.value for d in distinct.decisions)
        reasons = frozenset(reason_label(code, decision.value) for code, decision in distinct.codes)
        # A code whose text lifts a figure from the sentence ("over SYSTEM_OUTPUT 7,500") is wider
        # than its label: sized to a few of its messages, not elided to "over …" on every row.
        detailed = {code for code, decision in distinct.codes if code_of(code, decision.value).code in DETAILS}
        reasons |= {short(plan.messages[i]) for code in detailed for i in plan.rows_with(code)}
        categories = frozenset(category_label(str(c)) for c in plan.category_totals)
        words = ((self._machine_voices(voices) & MACHINE_USER_VOICES) | distinct.roles, decisions, distinct.zones, reasons, categories)
        if words == getattr(self, "_column_words", None):
            return
        self._column_words = words
        header, metrics = self.table.horizontalHeader(), self.table.fontMetrics()
        # The category's swatch takes an icon's width before its name: a fixed 112 pixels left the
        # decision beyond the edge of the table at 1024x700 ("summarisec"), beside the detail panel.
        swatch = self.table.iconSize().width() + 8 if self.table.iconSize().width() > 0 else 24
        for column, shown, least, most, extra in ((2, words[0], 62, 150, 0), (6, words[1], 66, 150, 0), (7, words[2], 72, 150, 0),
                                                  (8, words[3], 130, 240, 0), (3, words[4], 80, 150, swatch)):
            widest = max((metrics.horizontalAdvance(w) for w in shown), default=0) + 14 + extra  # the cell's padding
            header.resizeSection(column, max(least, min(widest, most)))

    def _machine_voices(self, voices: tuple[str, ...]) -> frozenset[str]:
        """The voices among the session's messages, once per session's voices."""
        if getattr(self, "_voices_seen", (None,))[0] is not voices:
            self._voices_seen = (voices, frozenset(voices))
        return self._voices_seen[1]

    def _update_count(self) -> None:
        total = self.model.total_count()
        if total != self._count_width_for:  # a new width only for a session of another size, never per re-plan
            self._count_width_for = total
            self.count_label.setFixedWidth(self.count_label.fontMetrics().horizontalAdvance(f"{total:,} of {total:,}") + 8)
        self.count_label.setText(f"{self.model.rowCount():,} of {total:,}")
        error = self.model.query.error if self.model.search else ""
        if error != self.search.property("query_error"):  # a malformed term is said, not silently ignored
            self.search.setProperty("query_error", error)
            self.search.setStyleSheet(f"QLineEdit {{ border: 1px solid {WARNING}; }}" if error else "")
            self.search.setToolTip(error or self.search_help)
            if error:
                self.statusBar().showMessage(f"search: {error}", 8000)
            elif self.statusBar().currentMessage().startswith("search: "):
                self.statusBar().clearMessage()  # the query parses now: the old error must not stay for its 8 s

    def _voices(self, session: Session) -> tuple[str, ...]:
        """Each message's voice (engine/voices.py: a user turn may be the harness's). A turn of the
        replay holds a prefix of the file's messages: its voices are the file's, not worked out again."""
        full = self.vm.session
        n = len(session.messages)
        if full is not None and session is not full and n <= len(full.messages) and (n == 0 or session.messages[-1] is full.messages[n - 1]):
            return voices_of(full)[:n]
        return voices_of(session)

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

    def show_message(self, index: int) -> None:
        """Select message `index` where it is seen: the Overview's table, scrolled to its row. A jump
        (Ctrl+J, Ctrl+D, Go to message) made from the Timeline or Context tab changed a selection
        nobody could see, and from the table grouped by reason a row nobody could see either."""
        self.tabs.setCurrentIndex(0)
        if self.group_button.isChecked():
            self.group_button.setChecked(False)
        self.select_message(index)

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

    def focus_search(self) -> None:
        self.tabs.setCurrentIndex(0)
        self.search.setFocus()
        self.search.selectAll()

    def go_to_dialog(self) -> None:
        if self.shown_plan is None or not self.shown_plan.messages:
            return
        last = len(self.shown_plan.messages) - 1
        number, ok = QInputDialog.getInt(self, "Go to message", f"Message number (0-{last:,}):", self.selected or 0, 0, last)
        if ok:
            self.show_message(number)

    def jump_to_cut(self) -> None:
        """Select the newest message the plan does not send: where the cut falls."""
        plan = self.shown_plan
        if plan is None:
            return
        cut = plan.last_unsent
        if cut is None:
            self.statusBar().showMessage("every message is sent: there is no cut", 4000)
        else:
            self.show_message(cut)

    def next_dropped_user(self) -> None:
        """Select the next user message the plan does not send, after the selected one (wrapping)."""
        plan = self.shown_plan
        if plan is None:
            return
        roles, sent = plan.columns.role, plan.sent_flags
        lost = [i for i, role in enumerate(roles) if role == "user" and not sent[i]]
        if not lost:
            self.statusBar().showMessage("every user message is sent", 4000)
            return
        current = self.selected if self.selected is not None else -1
        self.show_message(next((i for i in lost if i > current), lost[0]))
