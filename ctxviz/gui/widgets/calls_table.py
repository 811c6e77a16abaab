"""The agent's calls in the Timeline tab: a row per model call (engine/calls.py), Qt model/view.

Input, cached and cost are the provider's figures where the log records them (greyed and marked
"est." where they are the cache model's estimate); "policy sends" is the replay's request at that
call, and "difference" the gap between the two. Clicking a row moves the turn slider to that call.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QHeaderView, QTableView, QWidget

from ...engine.calls import CallRow, agent_calls

CALL_COLUMNS = ("call", "request ends", "answer", "input", "cached", "cost", "policy sends", "difference")
CALL_TIPS = (
    "The call's number (the replay's step).",
    "The request's last message: the messages up to it are what the agent held.",
    "The assistant message that answered it.",
    "The request's input tokens (input + cache reads + cache writes) as the provider reported them; "
    "'est.': the cache model's estimate, where the log records no usage for this call.",
    "The part of the input read from the provider's cache.",
    "The input's cost at the model catalogue's prices (the provider's figures; 'est.' where estimated).",
    "What the policy would have sent at this call, by its own estimator.",
    "Policy sends minus the reported input: where the replay and the agent part ways (a compaction at another "
    "call, the system prompt and tools the log does not record).",
)
Index = QModelIndex | QPersistentModelIndex
_GREY = QBrush(QColor("#8a8a8a"))
_RIGHT = int((Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value)


class CallsModel(QAbstractTableModel):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[CallRow] = []
        self.no_price = ""

    def set_calls(self, timeline: Any, cache: Any = None) -> None:
        self.beginResetModel()
        self.rows = agent_calls(timeline, cache) if timeline is not None else []
        self.no_price = "" if cache is None or cache.known else "no price: the model is not in the catalogue"
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return len(CALL_COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return CALL_COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return CALL_TIPS[section]
        return None

    def text(self, row: CallRow, col: int) -> str:
        est = " est." if row.estimated else ""
        if col == 0:
            return f"{row.step + 1:,}"
        if col == 1:
            return f"#{row.index}"
        if col == 2:
            return f"#{row.reply}" if row.reply >= 0 else "—"
        if col in (3, 4):
            value = row.input if col == 3 else row.cached
            return "—" if value is None else f"{value:,}{est}"
        if col == 5:
            return "—" if row.cost is None else f"${row.cost:,.4f}{est}"
        if col == 6:
            return f"{row.sent:,}"
        diff = row.difference
        return "—" if diff is None else f"{diff:+,}"

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.rows):
            return None
        row, col = self.rows[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(row, col)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT
        if role == Qt.ItemDataRole.ForegroundRole and row.estimated and 3 <= col <= 5:
            return _GREY
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == 5 and row.cost is None:
                return self.no_price or "no price for this call"
            if 3 <= col <= 5 and row.estimated:
                return "The cache model's estimate: the log records no usage for this call."
            return CALL_TIPS[col]
        return None


class CallsView(QTableView):
    """The calls; a click (or Enter) on a row emits `stepChosen` with its step."""

    stepChosen = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.calls = CallsModel(self)
        self.setModel(self.calls)
        self.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(20)
        self.setAlternatingRowColors(True)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.clicked.connect(self._chosen)
        self.activated.connect(self._chosen)
        self.setToolTip("The agent's calls: click one to move the turn slider there")

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        """Keep the current call in sight (its row was chosen before the table was laid out)."""
        super().resizeEvent(event)
        if self.currentIndex().isValid():
            self.scrollTo(self.currentIndex())

    def _chosen(self, index: QModelIndex) -> None:
        if index.isValid() and index.row() < len(self.calls.rows):
            self.stepChosen.emit(self.calls.rows[index.row()].step)

    def show_step(self, step: int) -> None:
        """Select the row of `step` (the slider moved), without emitting `stepChosen`."""
        if 0 <= step < len(self.calls.rows) and self.calls.rows[step].step == step:
            index = self.calls.index(step, 0)
            selection = self.selectionModel()
            selection.blockSignals(True)
            self.setCurrentIndex(index)
            selection.blockSignals(False)
            self.scrollTo(index)
