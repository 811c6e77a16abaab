"""The message table's view: a QTableView that ignores changes to rows it does not show."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QModelIndex, QPersistentModelIndex
from PySide6.QtWidgets import QTableView


class MessageTableView(QTableView):
    """Qt 6's item views repaint the whole viewport for any multi-cell dataChanged, even when the
    changed rows are scrolled far out of sight. A re-plan typically changes a few dozen messages
    near the cut; skipping those the view cannot show keeps a slider drag from repainting the
    table at all when the visible rows did not change."""

    def dataChanged(self, top_left: QModelIndex | QPersistentModelIndex, bottom_right: QModelIndex | QPersistentModelIndex,  # noqa: N802
                    roles: Sequence[int] = ()) -> None:
        first = self.rowAt(0)
        if first >= 0 and top_left.isValid() and bottom_right.isValid():
            last = self.rowAt(max(0, self.viewport().height() - 1))
            if last < 0:
                last = self.model().rowCount() - 1
            if bottom_right.row() < first or top_left.row() > last:
                return
        super().dataChanged(top_left, bottom_right, list(roles))
