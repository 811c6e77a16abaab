"""One action registry: menus, the toolbar and the command palette are all built from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QStringListModel, Qt
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QDialog, QLineEdit, QListView, QVBoxLayout, QWidget


@dataclass(frozen=True)
class ActionSpec:
    id: str
    title: str
    menu: str
    callback: Callable[[], None]
    shortcut: QKeySequence.StandardKey | str | None = None


class ActionRegistry:
    def __init__(self, parent: QWidget) -> None:
        self.parent = parent
        self.specs: dict[str, ActionSpec] = {}
        self.actions: dict[str, QAction] = {}

    def add(self, spec: ActionSpec) -> QAction:
        action = QAction(spec.title, self.parent)
        if isinstance(spec.shortcut, QKeySequence.StandardKey):
            action.setShortcut(QKeySequence(spec.shortcut))
        elif spec.shortcut:
            action.setShortcut(QKeySequence(spec.shortcut))
        action.triggered.connect(lambda _checked=False, cb=spec.callback: cb())
        self.specs[spec.id] = spec
        self.actions[spec.id] = action
        self.parent.addAction(action)
        return action

    def in_menu(self, menu: str) -> list[QAction]:
        return [self.actions[i] for i, s in self.specs.items() if s.menu == menu]

    def trigger(self, action_id: str) -> None:
        self.actions[action_id].trigger()


@dataclass(frozen=True)
class PaletteEntry:
    label: str
    run: Callable[[], None]
    shortcut: str = ""


def fuzzy_score(query: str, label: str) -> int | None:
    """None when the query's characters do not all appear in the label in order (case-insensitive);
    otherwise a score that rewards consecutive characters and word starts, so "jc" finds
    "Jump to the Cut" and "swp" finds "Switch policy"."""
    query, text = query.lower().replace(" ", ""), label.lower()
    if not query:
        return 0
    score, position, previous = 0, 0, -2
    for char in query:
        found = text.find(char, position)
        if found < 0:
            return None
        if found == previous + 1:
            score += 5
        if found == 0 or not text[found - 1].isalnum():
            score += 8
        score -= min(found - position, 10)
        previous, position = found, found + 1
    return score


def rank(query: str, entries: list[PaletteEntry]) -> list[PaletteEntry]:
    scored = [(score, i, e) for i, e in enumerate(entries) if (score := fuzzy_score(query, e.label)) is not None]
    return [e for _score, _i, e in sorted(scored, key=lambda t: (-t[0], t[1]))]


class CommandPalette(QDialog):
    """Ctrl+Shift+P: every registered action plus the window's own entries (switch policy, go to a
    message by number); type to filter fuzzily, Up/Down to choose, Enter to run, Esc to close."""

    def __init__(self, registry: ActionRegistry, parent: QWidget | None = None,
                 extra: Callable[[str], list[PaletteEntry]] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Command palette")
        self.registry = registry
        self.extra = extra
        self.entries: list[PaletteEntry] = []
        for i, spec in registry.specs.items():
            if i == "palette":
                continue
            shortcut = registry.actions[i].shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            self.entries.append(PaletteEntry(f"{spec.menu}: {spec.title.replace('&', '').rstrip('…')}",
                                             lambda i=i: registry.trigger(i), shortcut))
        self.shown: list[PaletteEntry] = []
        self.model = QStringListModel()
        self.search = QLineEdit()
        self.search.setPlaceholderText("Type a command, a policy or a message number…")
        self.search.textChanged.connect(self.refilter)
        self.search.returnPressed.connect(self.run_current)
        self.search.installEventFilter(self)
        self.list = QListView()
        self.list.setModel(self.model)
        self.list.activated.connect(lambda _i: self.run_current())
        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.list)
        self.resize(560, 380)
        self.refilter("")

    def refilter(self, query: str) -> None:
        entries = (self.extra(query) if self.extra is not None else []) + self.entries
        self.shown = rank(query, entries) if query.strip() else entries
        self.model.setStringList([e.label + (f"   ({e.shortcut})" if e.shortcut else "") for e in self.shown])
        if self.shown:
            self.list.setCurrentIndex(self.model.index(0, 0))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        """Arrow and page keys typed in the search box move the selection in the list."""
        if watched is self.search and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            step = {Qt.Key.Key_Down: 1, Qt.Key.Key_Up: -1, Qt.Key.Key_PageDown: 8, Qt.Key.Key_PageUp: -8}.get(Qt.Key(event.key()))
            if step is not None and self.shown:
                row = self.list.currentIndex().row() if self.list.currentIndex().isValid() else 0
                row = max(0, min(len(self.shown) - 1, row + step))
                self.list.setCurrentIndex(self.model.index(row, 0))
                return True
        return super().eventFilter(watched, event)

    def run_current(self) -> None:
        index = self.list.currentIndex()
        row = index.row() if index.isValid() else 0
        if not self.shown or row >= len(self.shown):
            return
        entry = self.shown[row]
        self.accept()
        entry.run()
