"""The message table's view: a QTableView that repaints only the rows of a re-plan it shows."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, QRect
from PySide6.QtWidgets import QTableView


class MessageTableView(QTableView):
    """Qt 6's item views repaint the whole viewport for any multi-cell dataChanged, even when the
    changed rows are scrolled far out of sight. A re-plan typically changes messages near the cut
    (and the reasons that quote the budget); this view tells its model which rows it shows, so only
    those are compared, and repaints just the changed cells' rectangle of the viewport."""

    def setModel(self, model: QAbstractItemModel | None) -> None:  # noqa: N802
        super().setModel(model)
        if model is not None and hasattr(model, "shown_rows"):
            model.shown_rows = self.shown_rows  # type: ignore[attr-defined]

    def shown_rows(self) -> tuple[int, int]:
        """The first and last row the viewport can show ((0, -1) when none)."""
        model = self.model()
        count = model.rowCount() if model is not None else 0
        first = self.rowAt(0)
        if first < 0:
            return (0, -1) if count == 0 or self.verticalHeader().length() > 0 else (0, count - 1)
        last = self.rowAt(max(0, self.viewport().height() - 1))
        return first, (count - 1 if last < 0 else last)

    def dataChanged(self, top_left: QModelIndex | QPersistentModelIndex, bottom_right: QModelIndex | QPersistentModelIndex,  # noqa: N802
                    roles: Sequence[int] = ()) -> None:
        if not (top_left.isValid() and bottom_right.isValid()) or top_left == bottom_right:
            super().dataChanged(top_left, bottom_right, list(roles))
            return
        first, last = self.shown_rows()
        top, bottom = max(top_left.row(), first), min(bottom_right.row(), last)
        if top > bottom:
            return
        y = self.rowViewportPosition(top)
        height = self.rowViewportPosition(bottom) + self.rowHeight(bottom) - y
        left, right = top_left.column(), bottom_right.column()
        x = self.columnViewportPosition(left) if left > 0 else 0
        last = self.model().columnCount() - 1
        width = (self.columnViewportPosition(right) + self.columnWidth(right) - x) if right < last else self.viewport().width() - x
        self.viewport().update(QRect(x, y, width, height))
