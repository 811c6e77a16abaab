"""The message table by reason: a filter offering the policy's vocabulary, and a grouped view.

Both read reason codes (engine/reason_codes.py), never the policy's sentences: a group or a filter
item is "sent" or "not sent" as its code is, with the code's meaning on hover.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QComboBox, QHeaderView, QTableView, QWidget

from ...engine.plan import Plan
from ...engine.reason_codes import ReasonCode
from ...engine.reason_groups import ReasonGroup, group_by_reason, vocabulary
from ..theme import DECISION_COLORS

ALL_REASONS = "all reasons"
GROUP_COLUMNS = ("reason", "sent?", "messages", "tokens", "sent tokens", "share", "which (first)")
GROUP_TIPS = (
    "The reason code's words; hover for what it means.",
    "Whether messages with this reason reach the model (whole, cut, or with a placeholder).",
    "How many messages have this reason.",
    "Their own tokens, by the policy's estimator, before any cut.",
    "What they cost as sent (0 for a reason that is not sent).",
    "Their tokens as a share of the tokens of every message grouped.",
    "The first messages with this reason (double-click a group to list them all in the table).",
)
Index = QModelIndex | QPersistentModelIndex


class ReasonFilter(QComboBox):
    """"all reasons", then the policy's vocabulary (sent first), each with its count in the plan on
    screen; hovering an item shows the code's meaning. `codeChanged` carries the code ("" for all)."""

    codeChanged = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setToolTip("Only the messages with this reason (the policy's vocabulary; hover an item for its meaning)")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(6)
        self._shown: tuple[tuple[str, int], ...] = ()
        self.addItem(ALL_REASONS, "")
        self.currentIndexChanged.connect(lambda _i: self.codeChanged.emit(self.code()))

    def code(self) -> str:
        return str(self.currentData() or "")

    def showPopup(self) -> None:  # noqa: N802 (Qt's name)
        """The list as wide as its longest item (the counts re-written in place may have widened one)."""
        self.view().setMinimumWidth(self.view().sizeHintForColumn(0) + 24)
        super().showPopup()

    def set_code(self, code: str) -> None:
        row = self.findData(code)
        self.setCurrentIndex(row if row >= 0 else 0)

    def set_plan(self, policy_codes: Sequence[str], plan: Plan | None, counts: Mapping[str, int] | None = None) -> None:
        """The vocabulary of the policy (and any other code the plan carries), with counts; the
        chosen code stays chosen while it is in the vocabulary. `counts`: each code's count in
        `plan` when the caller has them (the view-model counts on its worker), else counted here."""
        if counts is None:
            counts = plan.reason_counts() if plan is not None else {}  # (counted over the columns: 14,000 codes per re-plan of a followed log)
        # The codes the plan carries are the counted ones, in the order they first occur: the same
        # vocabulary as from the plan, without another pass over its messages.
        codes: list[ReasonCode] = vocabulary((*policy_codes, *counts))
        shown = tuple((c.code, counts.get(c.code, 0)) for c in codes)
        if shown == self._shown:
            return  # a re-plan that moved no message to another reason (most slider steps)
        if [code for code, _ in shown] == [code for code, _ in self._shown]:
            # The same codes, other counts (a re-plan that moved the cut): each item's words changed in
            # place. Emptying and refilling the box made it ask for a new size and repaint, and with it
            # the filter row and the containers under it, in every re-plan's frame.
            for row, ((_code, count), (_, before)) in enumerate(zip(shown, self._shown, strict=True), start=1):
                if count != before:
                    self.setItemText(row, f"{codes[row - 1].label} ({count:,})")
            self._shown = shown
            return
        self._shown = shown
        current = self.code()
        self.blockSignals(True)
        self.clear()
        self.addItem(ALL_REASONS, "")
        for c in codes:
            self.addItem(f"{c.label} ({counts.get(c.code, 0):,})", c.code)
            self.setItemData(self.count() - 1, f"{'sent' if c.sent else 'not sent'}: {c.meaning}", Qt.ItemDataRole.ToolTipRole)
        row = self.findData(current)
        self.setCurrentIndex(row if row >= 0 else 0)
        self.blockSignals(False)
        # The box stays narrow in the filter row; its list is as wide as its longest item.
        self.view().setMinimumWidth(self.view().sizeHintForColumn(0) + 24)
        if self.code() != current:  # the chosen reason left the vocabulary (another policy): all reasons again
            self.codeChanged.emit(self.code())


class ReasonGroupModel(QAbstractTableModel):
    """One row per reason code among the messages the table's other filters show."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.groups: list[ReasonGroup] = []
        self._total = 0

    def set_groups(self, plan: Plan | None, indices: Sequence[int] | None = None) -> None:
        self.beginResetModel()
        self.groups = group_by_reason(plan, indices) if plan is not None else []
        self._total = sum(g.tokens for g in self.groups)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.groups)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return len(GROUP_COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return GROUP_COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return GROUP_TIPS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.groups):
            return None
        g = self.groups[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return g.reason.label
            if col == 1:
                return "sent" if g.reason.sent else "not sent"
            if col == 5:
                return f"{g.tokens / self._total:.0%}" if self._total else "—"
            if col == 6:
                first = ", ".join(f"#{i}" for i in g.indices[:5])
                return first + (f", … ({g.count - 5:,} more)" if g.count > 5 else "")
            return f"{(g.count, g.tokens, g.sent_tokens)[col - 2]:,}"
        if role == Qt.ItemDataRole.ToolTipRole and col in (0, 1):
            return g.reason.meaning
        if role == Qt.ItemDataRole.ToolTipRole and col == 6:
            return ", ".join(f"#{i}" for i in g.indices[:60]) + (f", … ({g.count - 60:,} more)" if g.count > 60 else "")
        if role == Qt.ItemDataRole.TextAlignmentRole and 2 <= col <= 5:
            return int((Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value)
        if role == Qt.ItemDataRole.ForegroundRole and col == 1:
            return QBrush(QColor(DECISION_COLORS["kept" if g.reason.sent else "dropped"]).darker(115))
        return None


class ReasonGroupView(QTableView):
    """The grouped table. Double-click (or Enter) on a group: `groupOpened` with its code."""

    groupOpened = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.groups = ReasonGroupModel(self)
        self.setModel(self.groups)
        self.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(22)
        self.setAlternatingRowColors(True)
        header = self.horizontalHeader()
        for col, width in enumerate((128, 60, 70, 78, 82, 52)):
            header.resizeSection(col, width)
        header.setStretchLastSection(True)
        header.setSectionResizeMode(6, QHeaderView.ResizeMode.Stretch)
        self.setToolTip("The messages grouped by reason; double-click (or Enter) a group to list its messages")
        self.doubleClicked.connect(self._open)
        self.activated.connect(self._open)

    def _open(self, index: QModelIndex) -> None:
        if index.isValid() and index.row() < len(self.groups.groups):
            self.groupOpened.emit(self.groups.groups[index.row()].reason.code)
