"""One action registry: menus, the toolbar and the command palette are all built from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QSortFilterProxyModel, QStringListModel, Qt
from PySide6.QtGui import QAction, QKeySequence
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


class CommandPalette(QDialog):
    """Ctrl+Shift+P: type to filter every registered action, Enter to run it."""

    def __init__(self, registry: ActionRegistry, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Command palette")
        self.registry = registry
        self.ids = list(registry.specs)
        labels = []
        for i in self.ids:
            shortcut = registry.actions[i].shortcut().toString(QKeySequence.SequenceFormat.NativeText)
            labels.append(f"{registry.specs[i].menu}: {registry.specs[i].title.replace('&', '')}" + (f"   ({shortcut})" if shortcut else ""))
        self.model = QStringListModel(labels)
        self.proxy = QSortFilterProxyModel()
        self.proxy.setSourceModel(self.model)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Type a command…")
        self.search.textChanged.connect(self.proxy.setFilterFixedString)
        self.search.returnPressed.connect(self.run_current)
        self.list = QListView()
        self.list.setModel(self.proxy)
        self.list.activated.connect(lambda _i: self.run_current())
        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.list)
        self.resize(520, 360)

    def run_current(self) -> None:
        index = self.list.currentIndex()
        if not index.isValid():
            index = self.proxy.index(0, 0)
        if not index.isValid():
            return
        action_id = self.ids[self.proxy.mapToSource(index).row()]
        self.accept()
        self.registry.trigger(action_id)
