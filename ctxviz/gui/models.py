"""Qt model/view for the message table: one model, a proxy for sorting, filters and text search."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QBrush, QColor

from ..engine.plan import Plan
from ..engine.session import Session
from .theme import CATEGORY_COLORS, DECISION_COLORS

COLUMNS = ("#", "id", "role", "category", "tokens", "sent", "decision", "zone", "reason")
NUMERIC = {0, 4, 5}
Index = QModelIndex | QPersistentModelIndex


class MessageTableModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.plan: Plan | None = None
        self.texts: list[str] = []

    def set_plan(self, session: Session | None, plan: Plan | None) -> None:
        self.beginResetModel()
        self.plan = plan
        self.texts = [m.text for m in session.messages] if session is not None and plan is not None else []
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() or self.plan is None else len(self.plan.messages)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if self.plan is None or not index.isValid():
            return None
        m = self.plan.messages[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return (m.index, m.id, m.role, str(m.category), f"{m.tokens:,}", f"{m.sent_tokens:,}", m.decision.value, m.zone, m.reason)[col]
        if role == Qt.ItemDataRole.UserRole:  # sort key
            return (m.index, m.id, m.role, str(m.category), m.tokens, m.sent_tokens, m.decision.value, m.zone, m.reason)[col]
        if role == Qt.ItemDataRole.TextAlignmentRole and col in NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and col == 6:
            return QBrush(QColor(DECISION_COLORS.get(m.decision.value, "#888888")).darker(115))
        if role == Qt.ItemDataRole.DecorationRole and col == 3:
            return QColor(CATEGORY_COLORS.get(str(m.category), "#b0b0b0"))
        if role == Qt.ItemDataRole.ToolTipRole:
            return m.reason if col == 8 else self.texts[m.index][:600]
        return None


class MessageFilterProxy(QSortFilterProxyModel):
    """Filter by role and decision, and search the id, reason and the message's own text."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.role = ""
        self.decision = ""
        self.search = ""
        self.setSortRole(Qt.ItemDataRole.UserRole)

    def set_filters(self, role: str | None = None, decision: str | None = None, search: str | None = None) -> None:
        if role is not None:
            self.role = role
        if decision is not None:
            self.decision = decision
        if search is not None:
            self.search = search.lower()
        self.invalidate()

    def filterAcceptsRow(self, row: int, parent: Index) -> bool:  # noqa: N802
        model: MessageTableModel = self.sourceModel()  # type: ignore[assignment]
        if model.plan is None:
            return False
        m = model.plan.messages[row]
        if self.role and m.role != self.role:
            return False
        if self.decision and m.decision.value != self.decision:
            return False
        if self.search:
            haystack = f"{m.id}\n{m.reason}\n{model.texts[row] if row < len(model.texts) else ''}".lower()
            return self.search in haystack
        return True
