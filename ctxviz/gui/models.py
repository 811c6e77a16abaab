"""Qt model/view for the message table: one model of the plan, a proxy for sorting, filters and text search."""

from __future__ import annotations

from functools import cache
from typing import Any

from PySide6.QtCore import QAbstractProxyModel, QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
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
        self._texts_of: Session | None = None

    def set_plan(self, session: Session | None, plan: Plan | None) -> None:
        self.beginResetModel()
        self.plan = plan
        if session is None or plan is None:
            self.texts, self._texts_of = [], None
        elif session is not self._texts_of:  # the text search needs them; a re-plan keeps them
            self.texts, self._texts_of = [m.text for m in session.messages], session
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
        return self.cell(index.row(), index.column(), role)

    def sort_keys(self, col: int) -> list[Any]:
        """One sort key per row, so sorting is a single `list.sort` instead of a call per comparison."""
        if self.plan is None:
            return []
        attribute = ("index", "id", "role", "category", "tokens", "sent_tokens", "decision", "zone", "reason")[col]
        values = [getattr(m, attribute) for m in self.plan.messages]
        if col in (3, 6):
            values = [str(v) if col == 3 else v.value for v in values]
        return values

    def cell(self, row: int, col: int, role: int) -> Any:
        """One cell; the view asks about eight roles per visible cell on every repaint, so the
        common "nothing for this role" answer comes first and colours are built once."""
        if self.plan is None or role not in _ROLES:
            return None
        m = self.plan.messages[row]
        if role == _DISPLAY:
            return (m.index, m.id, m.role, str(m.category), f"{m.tokens:,}", f"{m.sent_tokens:,}", m.decision.value, m.zone, m.reason)[col]
        if role == _ALIGN:
            return _RIGHT if col in NUMERIC else None
        if role == _FOREGROUND:
            return _decision_brush(m.decision.value) if col == 6 else None
        if role == _DECORATION:
            return _category_color(str(m.category)) if col == 3 else None
        return m.reason if col == 8 else self.texts[m.index][:600]  # tooltip


_DISPLAY = int(Qt.ItemDataRole.DisplayRole.value)
_ALIGN = int(Qt.ItemDataRole.TextAlignmentRole.value)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole.value)
_DECORATION = int(Qt.ItemDataRole.DecorationRole.value)
_ROLES = frozenset({_DISPLAY, _ALIGN, _FOREGROUND, _DECORATION, int(Qt.ItemDataRole.ToolTipRole.value)})
_RIGHT = int((Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value)


@cache
def _decision_brush(decision: str) -> QBrush:
    return QBrush(QColor(DECISION_COLORS.get(decision, "#888888")).darker(115))


@cache
def _category_color(category: str) -> QColor:
    return QColor(CATEGORY_COLORS.get(category, "#b0b0b0"))


class MessageFilterProxy(QAbstractProxyModel):
    """Sort, filter by role and decision, and search the id, reason and text, in Python lists.

    QSortFilterProxyModel sorts and filters through `data()` once per comparison: on a 10,000-message
    plan that is over a million Python calls per re-plan (about a second). Here a re-plan costs one
    `sorted()` with a key list and one pass of the filter, and the view asks `data()` only for the
    rows it paints.
    """

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.role = ""
        self.decision = ""
        self.search = ""
        self.sort_column = 0
        self.sort_order = Qt.SortOrder.AscendingOrder
        self.rows: list[int] = []  # source rows in view order
        self.position: dict[int, int] = {}  # source row -> view row

    def setSourceModel(self, model: MessageTableModel) -> None:  # noqa: N802
        super().setSourceModel(model)
        model.modelReset.connect(self._rebuild)
        self._rebuild()

    def set_filters(self, role: str | None = None, decision: str | None = None, search: str | None = None) -> None:
        if role is not None:
            self.role = role
        if decision is not None:
            self.decision = decision
        if search is not None:
            self.search = search.lower()
        self._rebuild()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.sort_column, self.sort_order = column, order
        self._rebuild()

    def _accepted(self, model: MessageTableModel) -> list[int]:
        plan = model.plan
        if plan is None:
            return []
        rows = range(len(plan.messages))
        if self.role:
            rows = [r for r in rows if plan.messages[r].role == self.role]
        if self.decision:
            rows = [r for r in rows if plan.messages[r].decision.value == self.decision]
        if self.search:
            needle, texts = self.search, model.texts
            rows = [r for r in rows if needle in f"{plan.messages[r].id}\n{plan.messages[r].reason}\n{texts[r]}".lower()]
        return list(rows)

    def _rebuild(self) -> None:
        model: MessageTableModel = self.sourceModel()  # type: ignore[assignment]
        self.beginResetModel()
        rows = self._accepted(model) if model is not None else []
        if rows and not (self.sort_column == 0 and self.sort_order == Qt.SortOrder.AscendingOrder):
            keys = model.sort_keys(self.sort_column)
            rows.sort(key=keys.__getitem__, reverse=self.sort_order == Qt.SortOrder.DescendingOrder)
        self.rows = rows
        self.position = {source: view for view, source in enumerate(rows)}
        self.endResetModel()

    # --- QAbstractProxyModel ------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return len(COLUMNS)

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if parent.isValid() or not (0 <= row < len(self.rows) and 0 <= column < len(COLUMNS)):
            return QModelIndex()
        return self.createIndex(row, column)

    def parent(self, child: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        return QModelIndex()

    def mapToSource(self, proxy: Index) -> QModelIndex:  # noqa: N802
        if not proxy.isValid() or proxy.row() >= len(self.rows):
            return QModelIndex()
        return self.sourceModel().index(self.rows[proxy.row()], proxy.column())

    def mapFromSource(self, source: Index) -> QModelIndex:  # noqa: N802
        if not source.isValid() or source.row() not in self.position:
            return QModelIndex()
        return self.createIndex(self.position[source.row()], source.column())

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.rows):
            return None
        model: MessageTableModel = self.sourceModel()  # type: ignore[assignment]
        return model.cell(self.rows[index.row()], index.column(), role)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        return self.sourceModel().headerData(section, orientation, role)
