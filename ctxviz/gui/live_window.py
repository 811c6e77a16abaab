"""The main window's live side: File › Browse sessions, File › Follow, the session browser on the
welcome page, the "Next compaction" card and the follow indicator on the status bar.

A mixin of `MainWindow` (kept apart so that the window's module does not grow further); it uses the
window's `live` controller (gui/live.py), `vm`, `settings`, `browser`, `next_card`, `follow_label`
and `registry`.
"""

from __future__ import annotations

import os
from typing import Any

from ..engine.session import Session
from ..engine.verify import AGENT_POLICIES
from .live import ForecastResult, recently_written
from .widgets.session_browser import BrowseDialog, SessionBrowser

#: How long a note about the followed file (replaced, truncated, deleted) stays on the status bar.
NOTE_MS = 10_000


class LiveWindow:
    """Browse, follow and forecast, for `MainWindow`."""

    live: Any
    vm: Any
    settings: Any
    browser: SessionBrowser
    next_card: Any
    follow_label: Any
    registry: Any

    def session_roots(self) -> list[str]:
        """Extra folders to list sessions from (the settings' `sessions/roots`)."""
        value = self.settings.value("sessions/roots", [])
        if isinstance(value, str):
            value = [value]
        return [v for v in (value or []) if isinstance(v, str)]

    def set_session_roots(self, folders: list[str]) -> None:
        """The browser's "Folders…" chose these: kept in the settings, every browser told, and listed again."""
        self.settings.setValue("sessions/roots", list(folders))
        self.settings.sync()
        for browser in self._browsers():
            browser.set_folders(folders)
        self.live.refresh_listing()

    def _browsers(self) -> list[SessionBrowser]:
        dialog = getattr(self, "browse_dialog", None)
        return [self.browser] + ([dialog.browser] if dialog is not None else [])

    def _connect_live(self) -> None:
        live = self.live
        live.listingReady.connect(self.browser.set_listing)
        self.browser.refreshRequested.connect(live.refresh_listing)
        self.browser.openRequested.connect(self.open_listed)
        self.browser.set_folders(self.session_roots())
        self.browser.foldersChanged.connect(self.set_session_roots)
        live.forecastReady.connect(self._forecast_ready)
        live.followChanged.connect(self._follow_changed)
        live.followUpdated.connect(self._follow_updated)
        live.followNote.connect(self._follow_note)
        live.busy.connect(self._busy)  # type: ignore[attr-defined]
        live.errorOccurred.connect(self.show_error)  # type: ignore[attr-defined]
        self.vm.sessionLoaded.connect(self._live_session_loaded)
        self._policy_from_log = False

    # --- browsing ------------------------------------------------------------------------------
    def browse_sessions(self) -> None:
        """File › Browse sessions (Ctrl+Shift+O): the listing in a dialog, refreshed."""
        browser = SessionBrowser()
        self.live.listingReady.connect(browser.set_listing)
        browser.refreshRequested.connect(self.live.refresh_listing)
        browser.openRequested.connect(self.open_listed)
        browser.set_folders(self.session_roots())
        browser.foldersChanged.connect(self.set_session_roots)
        if self.live.listing is not None:
            browser.set_listing(self.live.listing)
        self.browse_dialog = BrowseDialog(browser, self)  # type: ignore[arg-type]
        self.browse_dialog.open()
        browser.refresh()
        browser.search.setFocus()

    def open_listed(self, path: str) -> None:
        """A session chosen in the browser: opened under its agent's own policy, followed when it was written in the last few minutes."""
        listing = self.live.listing
        agent = next((s.agent for s in _every(listing) if s.path == path), None) if listing is not None else None
        self.open_live(path, agent=agent, follow=recently_written(path))

    def open_live(self, path: str, agent: str | None = None, follow: bool | None = None, keep_policy: bool = False) -> None:
        """Open an agent's log (the browser, `gui --latest`, `gui --follow`): under the agent's own
        policy unless one was chosen (`keep_policy`), followed when `follow` (None: by the
        default rule, `LiveController.should_follow`)."""
        if not keep_policy:
            policy = AGENT_POLICIES.get(agent or "")
            if policy is not None:
                self.vm.set_policy(policy)
            self._policy_from_log = policy is None  # the format says it once the file is read
        self.status_label.setText(f"Loading {path}…")  # type: ignore[attr-defined]
        self._pending_path = path
        if follow if follow is not None else self.live.should_follow(path):
            self.live.follow(path)
        else:
            self.live.stop()
            self.vm.open(path)

    def _live_session_loaded(self, session: Session) -> None:
        self.next_card.clear()
        if self._policy_from_log:
            self._policy_from_log = False
            policy = AGENT_POLICIES.get(session.format)
            if policy is not None and policy != self.vm.policy:
                self.vm.set_policy(policy)

    # --- following -----------------------------------------------------------------------------
    def toggle_follow(self) -> None:
        """File › Follow: follow the open file as it grows, or stop."""
        action = self.registry.actions["follow"]
        session = self.vm.session
        if action.isChecked():
            if session is None or not session.source or not os.path.isfile(session.source):
                action.setChecked(False)
                self.statusBar().showMessage("Open a session file to follow it", 4000)  # type: ignore[attr-defined]
                return
            self.live.follow(session.source)
        else:
            self.live.stop()

    def _follow_changed(self, following: bool, path: str) -> None:
        action = self.registry.actions["follow"]
        action.blockSignals(True)
        action.setChecked(following)
        action.blockSignals(False)
        if following:
            self.follow_label.setText(f"Following {os.path.basename(path)}…")
            self.follow_label.setToolTip(path)
            self.follow_label.show()
        elif self.live.follower is None:
            self.follow_label.hide()

    def _follow_updated(self, text: str, tooltip: str) -> None:
        self.follow_label.setText(text if len(text) <= 110 else text[:109] + "…")
        self.follow_label.setToolTip(tooltip)
        self.follow_label.show()

    def _follow_note(self, note: str) -> None:
        self.statusBar().showMessage(note, NOTE_MS)  # type: ignore[attr-defined]

    # --- the forecast --------------------------------------------------------------------------
    def _forecast_ready(self, result: ForecastResult) -> None:
        self.next_card.set_result(result)


def _every(listing: Any) -> list[Any]:
    out = []
    for s in listing.sessions:
        out.append(s)
        out.extend(s.subagents)
    return out
