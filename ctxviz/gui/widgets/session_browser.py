"""The session browser: the agent sessions on this machine, newest first, grouped by project.

A Qt model/view pair, never a widget per row: `SessionListModel` holds one row per project heading,
session and sub-agent (sub-agents under their parent), `SessionFilterProxy` filters them by the
search box's words as `ctxviz sessions QUERY` does (`io.discovery.matches`), keeping a heading while
any of its sessions shows and a parent while any of its sub-agents does. One click, or Enter, opens
a session. The listing itself is made on a worker (gui/live.py); this view only shows it.

"Folders…" opens `FoldersDialog`: the folders ctxviz looks in by itself (each agent's, with where that
comes from) and the extra folders the user adds or removes (`--root DIR` in the terminal). The
browser only says which folders were chosen (`foldersChanged`); the window keeps them in its settings.
"""

from __future__ import annotations

import html
import os
import time
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QFont, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ...engine.wording import noun
from ...io.discovery import Listing, SessionInfo, locations, matches

COLUMNS = ("Session", "Agent", "Last written", "Size", "Model", "Last fill", "Compactions")
#: The Session column's least width: a session's title needs more than its header.
SESSION_LEAST = 180
_Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class Row:
    """A heading (`session` None), a session, or a sub-agent (`parent` set)."""

    group: int
    heading: str = ""
    session: SessionInfo | None = None
    parent: SessionInfo | None = None


def when_text(modified: float, now: float | None = None) -> str:
    """"2 min ago" for today's recent writes, else the date and time."""
    ago = (time.time() if now is None else now) - modified
    if 0 <= ago < 60:
        return "just now"
    if 0 <= ago < 3600:
        return f"{int(ago // 60)} min ago"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(modified))


def size_text(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size / 1e3:,.0f} kB"


def fill_text(s: SessionInfo) -> str:
    if s.fill is None:
        return "–"
    if not s.window:
        return f"{s.fill:,}"
    return f"{s.fill:,} of {s.window:,} ({s.fill / s.window:.0%})"


def session_name(s: SessionInfo) -> str:
    return s.title or os.path.basename(s.path)


class SessionListModel(QAbstractTableModel):
    """The listing as rows: each (agent, project) group's heading, its sessions newest first, each
    session's sub-agents after it."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[Row] = []
        self.listing: Listing | None = None

    def set_listing(self, listing: Listing) -> None:
        self.beginResetModel()
        self.listing = listing
        rows: list[Row] = []
        for g, ((agent, project), sessions) in enumerate(listing.by_project()):
            rows.append(Row(g, heading=f"{project}  ·  {agent}  ·  {len(sessions):,} session{'s' if len(sessions) != 1 else ''}"))
            for s in sessions:
                rows.append(Row(g, session=s))
                rows += [Row(g, session=c, parent=s) for c in s.subagents]
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def path_at(self, row: int) -> str | None:
        s = self.rows[row].session if 0 <= row < len(self.rows) else None
        return s.path if s is not None else None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        s, col = row.session, index.column()
        if s is None:  # a project heading
            if role == Qt.ItemDataRole.DisplayRole and col == 0:
                return row.heading
            if role == Qt.ItemDataRole.FontRole:
                font = QFont()
                font.setBold(True)
                return font
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return ("    ↳ sub-agent " if row.parent is not None else "  ") + session_name(s)
            return (s.agent, when_text(s.modified), size_text(s.size), s.model or "–", fill_text(s), f"{s.compactions:,}")[col - 1]
        if role == Qt.ItemDataRole.ToolTipRole:
            return s.path + (f"\n{s.title}" if s.title else "") + (f"\nsub-agent of {s.parent}" if s.parent else "")
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (3, 5, 6):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        if self.rows[index.row()].session is None:
            return Qt.ItemFlag.ItemIsEnabled
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


class SessionFilterProxy(QSortFilterProxyModel):
    """The rows a search finds: a session that matches (or whose sub-agent does), a sub-agent that
    matches (or whose parent does), and the heading of any group with a row shown. Never sorts: the
    listing's order (newest first, by project) is the order."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.query = ""
        self._shown: set[int] = set()

    def set_query(self, query: str) -> None:
        self.beginFilterChange()
        self.query = query.strip()
        self._recompute()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def setSourceModel(self, model: Any) -> None:  # noqa: N802
        super().setSourceModel(model)
        self._recompute()

    def _recompute(self) -> None:
        model = self.sourceModel()
        rows: list[Row] = model.rows if model is not None else []
        shown: set[int] = set()
        groups: set[int] = set()
        for i, row in enumerate(rows):
            s = row.session
            if s is None:
                continue
            hit = (matches(s, self.query) or (row.parent is not None and matches(row.parent, self.query))
                   or (row.parent is None and any(matches(c, self.query) for c in s.subagents)))
            if hit:
                shown.add(i)
                groups.add(row.group)
        shown |= {i for i, row in enumerate(rows) if row.session is None and row.group in groups}
        self._shown = shown

    def filterAcceptsRow(self, source_row: int, source_parent: _Index) -> bool:  # noqa: N802
        return source_row in self._shown


class SessionTable(QTableView):
    """Enter opens the current session (the search box hands Down and Enter over to it)."""

    openRequested = Signal(str)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.open_current()
            return
        super().keyPressEvent(event)

    def open_current(self) -> bool:
        return self.open_index(self.currentIndex())

    def open_index(self, index: QModelIndex) -> bool:
        """Open the session at a (proxy) index; a heading opens nothing."""
        if not index.isValid():
            return False
        proxy = self.model()
        path = proxy.sourceModel().path_at(proxy.mapToSource(index).row())
        if path:
            self.openRequested.emit(path)
            return True
        return False


def choose_folder(parent: QWidget | None) -> str:
    """Ask for a folder ("" when none is chosen); tests put their own in its place."""
    return QFileDialog.getExistingDirectory(parent, "A folder with agent sessions", os.path.expanduser("~"))


class FoldersDialog(QDialog):
    """Where the browser looks: each agent's own folders (read-only, with where each comes from), and
    the extra folders the user adds and removes. OK keeps the extra folders (`folders()`)."""

    def __init__(self, folders: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Session folders")
        builtin = QLabel("ctxviz looks in each agent's own folders:<br>" + "<br>".join(
            f"<code>{html.escape(loc.folder)}</code> <small>({html.escape(loc.why)})</small>" for loc in locations()))
        builtin.setTextFormat(Qt.TextFormat.RichText)
        builtin.setWordWrap(True)
        builtin.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        extra = QLabel("and in these folders (any log ctxviz reads, found by its content; <code>--root DIR</code> in the terminal):")
        extra.setWordWrap(True)
        self.list = QListWidget()
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.list.addItems(folders)
        self.add_button = QPushButton("Add folder…")
        self.add_button.clicked.connect(self.add_folder)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected)
        self.list.itemSelectionChanged.connect(self._enable)
        self.note = QLabel("")
        self.note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        side = QVBoxLayout()
        side.addWidget(self.add_button)
        side.addWidget(self.remove_button)
        side.addStretch(1)
        row = QHBoxLayout()
        row.addWidget(self.list, 1)
        row.addLayout(side)
        layout = QVBoxLayout(self)
        layout.addWidget(builtin)
        layout.addWidget(extra)
        layout.addLayout(row, 1)
        layout.addWidget(self.note)
        layout.addWidget(buttons)
        self._enable()
        self.resize(680, 420)

    def folders(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def add_folder(self, folder: str | None = None) -> bool:
        """Add a folder (asked for when not given); one already listed, or no folder, is not added."""
        chosen = folder if isinstance(folder, str) else choose_folder(self)
        if not chosen:
            return False
        path = os.path.abspath(os.path.expanduser(chosen))
        if not os.path.isdir(path):
            self.note.setText(f"{path} is not a folder.")
            return False
        if path in self.folders():
            self.note.setText(f"{path} is already listed.")
            return False
        self.list.addItem(path)
        self.note.setText("")
        return True

    def remove_selected(self) -> None:
        for item in self.list.selectedItems():
            self.list.takeItem(self.list.row(item))
        self._enable()

    def _enable(self) -> None:
        self.remove_button.setEnabled(bool(self.list.selectedItems()))


class SessionBrowser(QWidget):
    """A search box over the listing's table, what was skipped, Refresh, and the folders it looks in."""

    openRequested = Signal(str)  # a session's path
    refreshRequested = Signal()
    #: The extra folders chosen in "Folders…" (the window keeps them and lists again).
    foldersChanged = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = SessionListModel(self)
        self.proxy = SessionFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search sessions: a project, a model, a file name, an agent…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._filter)
        self.search.returnPressed.connect(self._open_first)
        self.search.installEventFilter(self)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("List the sessions again (F5)")
        self.refresh_button.setShortcut("F5")
        self.refresh_button.clicked.connect(self.refresh)
        self.folders: list[str] = []
        self.folders_button = QPushButton("Folders…")
        self.folders_button.setToolTip("Where to look for sessions: add or remove folders")
        self.folders_button.clicked.connect(self.edit_folders)
        self.folders_dialog: FoldersDialog | None = None
        self.table = SessionTable()
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col, width in zip(range(1, len(COLUMNS)), (92, 124, 72, 150, 170, 92), strict=True):
            header.resizeSection(col, width)
        self.table.clicked.connect(self.table.open_index)
        self.table.openRequested.connect(self.openRequested.emit)
        self.summary = QLabel("Looking for sessions…")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.folders_button)
        top.addWidget(self.refresh_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.summary)
        self.listing: Listing | None = None
        self._asked = False

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        """The Session column takes the width the others leave, but never less than SESSION_LEAST
        pixels (it scrolls then): stretched into 16 spare pixels at 1024x700 it showed "essi"."""
        super().resizeEvent(event)
        header = self.table.horizontalHeader()
        others = sum(header.sectionSize(c) for c in range(1, header.count()))
        room = self.table.viewport().width() - others
        mode = QHeaderView.ResizeMode.Stretch if room >= SESSION_LEAST else QHeaderView.ResizeMode.Interactive
        if header.sectionResizeMode(0) != mode:
            header.setSectionResizeMode(0, mode)
        if mode == QHeaderView.ResizeMode.Interactive and header.sectionSize(0) < SESSION_LEAST:
            header.resizeSection(0, SESSION_LEAST)

    def showEvent(self, event: Any) -> None:  # noqa: N802
        """The first time it is shown, ask for a listing (a window that opens a file at once never lists)."""
        super().showEvent(event)
        if not self._asked:
            self.refresh()

    def refresh(self) -> None:
        self._asked = True
        self.summary.setText("Looking for sessions…")
        self.refreshRequested.emit()

    def set_folders(self, folders: list[str]) -> None:
        """The extra folders the window keeps (shown on the button and in the dialog)."""
        self.folders = list(folders)
        self.folders_button.setText(f"Folders ({len(self.folders)} added)…" if self.folders else "Folders…")

    def edit_folders(self) -> FoldersDialog:
        """Folders…: the dialog, open (window-modal); OK with a change says `foldersChanged`."""
        dialog = FoldersDialog(self.folders, self)
        self.folders_dialog = dialog

        def done(result: int) -> None:
            chosen = dialog.folders()
            if result == QDialog.DialogCode.Accepted and chosen != self.folders:
                self.set_folders(chosen)
                self.foldersChanged.emit(chosen)

        dialog.finished.connect(done)
        dialog.open()
        return dialog

    def set_listing(self, listing: Listing) -> None:
        self.listing = listing
        self._asked = True
        self.model.set_listing(listing)
        self._filter(self.search.text())

    def _filter(self, text: str) -> None:
        self.proxy.set_query(text)
        self.table.clearSpans()
        for r in range(self.proxy.rowCount()):
            if self.model.rows[self.proxy.mapToSource(self.proxy.index(r, 0)).row()].session is None:
                self.table.setSpan(r, 0, 1, len(COLUMNS))
        self._say()

    def shown_paths(self) -> list[str]:
        """The sessions the table shows now, top to bottom (tests; Enter in the search box opens the first)."""
        out = []
        for r in range(self.proxy.rowCount()):
            path = self.model.path_at(self.proxy.mapToSource(self.proxy.index(r, 0)).row())
            if path:
                out.append(path)
        return out

    def _say(self) -> None:
        listing = self.listing
        if listing is None:
            return
        total = sum(1 for row in self.model.rows if row.session is not None)
        shown = len(self.shown_paths())
        if not total:
            looked = ", ".join(html.escape(loc.folder) for loc in listing.locations)
            text = f"No agent sessions found on this machine (looked in {looked})."
        elif shown == total:
            text = f"{total:,} session{'s' if total != 1 else ''}, newest first. One click or Enter opens one."
        else:
            text = f"{shown:,} of {total:,} sessions match. One click or Enter opens one."
        if listing.notes:
            skipped = "<br>".join(html.escape(n) for n in listing.notes[:3])
            more = f" (and {len(listing.notes) - 3:,} more)" if len(listing.notes) > 3 else ""
            text += f"<br><small>{len(listing.notes):,} {noun(len(listing.notes), 'file')} skipped{more}:<br>{skipped}</small>"
        self.summary.setText(text)

    def _open_first(self) -> None:
        paths = self.shown_paths()
        if paths:
            self.openRequested.emit(paths[0])

    def eventFilter(self, watched: Any, event: Any) -> bool:  # noqa: N802
        """Down in the search box moves to the table's first session."""
        if watched is self.search and isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress and event.key() == Qt.Key.Key_Down:
            for r in range(self.proxy.rowCount()):
                if self.model.path_at(self.proxy.mapToSource(self.proxy.index(r, 0)).row()):
                    self.table.setFocus()
                    self.table.setCurrentIndex(self.proxy.index(r, 0))
                    return True
        return super().eventFilter(watched, event)


class BrowseDialog(QDialog):
    """File › Browse sessions: the browser in a window of its own; opening a session closes it."""

    def __init__(self, browser: SessionBrowser, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Agent sessions on this machine")
        self.browser = browser
        layout = QVBoxLayout(self)
        layout.addWidget(browser)
        browser.openRequested.connect(lambda _p: self.accept())
        self.resize(980, 560)
