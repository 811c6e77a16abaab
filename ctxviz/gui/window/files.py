"""Opening files: File › Open, Open Recent (kept in the settings, files deleted since dropped),
drag and drop, and a file an agent is writing now followed as it grows.

A mixin of `MainWindow` (gui/main_window.py).
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtWidgets import QFileDialog

from ..safe import set_plain_tooltip

MAX_RECENT = 10
SESSION_FILTER = "Sessions (*.yaml *.yml *.json *.jsonl *.ndjson);;All files (*)"


class FileOpening:
    """Open, Open Recent and drop, for `MainWindow`."""

    vm: Any
    live: Any
    settings: Any
    status_label: Any
    recent_menu: Any

    def recent_files(self) -> list[str]:
        """The recent files that still exist (the others are dropped from the settings too)."""
        value = self.settings.value("recent/files", [])
        if isinstance(value, str):
            value = [value]
        stored = [v for v in (value or []) if isinstance(v, str)]
        files = [f for f in stored if os.path.isfile(f)]
        if files != stored:
            self.settings.setValue("recent/files", files)
        return files

    def _remember(self, path: str) -> None:
        files = [os.path.abspath(path)] + [f for f in self.recent_files() if f != os.path.abspath(path)]
        self.settings.setValue("recent/files", files[:MAX_RECENT])
        self._refresh_recent()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        for path in files:
            action = self.recent_menu.addAction(os.path.basename(path).replace("&", "&&"))  # a name, not a mnemonic
            set_plain_tooltip(action, path)
            action.triggered.connect(lambda _c=False, p=path: self.open_recent(p))
        self.recent_menu.setEnabled(bool(files))
        if hasattr(self, "welcome"):
            self.welcome.set_recent(files)

    def open_recent(self, path: str) -> None:
        """Open a file from Open Recent; one deleted since the menu was built is dropped, and said so."""
        if os.path.isfile(path):
            self.open_path(path)
            return
        self._refresh_recent()  # recent_files() forgets it
        self.status_label.setText(f"{path} no longer exists; removed from Open Recent")

    def open_path(self, path: str) -> None:
        """Open a file; one an agent is writing now (in its own folder, written in the last few
        minutes) is followed as it grows."""
        self.status_label.setText(f"Loading {path}…")
        self._pending_path = path
        if self.live.should_follow(path):
            self.live.follow(path)
        else:
            self.live.stop()
            self.vm.open(path)

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open session", "", SESSION_FILTER)
        if path:
            self.open_path(path)

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        urls = [u for u in event.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.open_path(urls[0].toLocalFile())
            event.acceptProposedAction()
