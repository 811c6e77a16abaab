"""What a newly opened file clears: its predecessor's pins (said in the status bar), the selected
message and its explanation, and, when the new file's first plan fails, the previous file's views;
and a turn the Timeline scrubs to that is older than the selected message does not explain it.

Every view then shows one session: a pin or a selection is a message number of the file it was
made on, and the previous file's donut, table and detail panel under the new file's title were
taken for the new file's. A mixin of `MainWindow` (gui/main_window.py).
"""

from __future__ import annotations

from typing import Any

from ...engine.plan import Plan
from ...engine.session import Session
from .detail import DETAIL_HINT

#: How long the status bar says which pins a newly opened file cleared.
PINS_CLEARED_MS = 10000


def pins_cleared_text(pins: tuple[str, ...]) -> str:
    """Which pins were cleared, and why (they numbered the previous file's messages)."""
    n = len(pins)
    return (f"{n} pin{'s' if n != 1 else ''} cleared ({', '.join(pins)}): "
            "pins are message numbers of the file they were made on")


class SessionChange:
    """A newly opened file starts with nothing of the previous one's, for `MainWindow`."""

    vm: Any
    strip: Any
    table: Any
    model: Any
    detail: Any
    detail_head: Any
    overview_stack: Any
    compare: Any
    shown_plan: Plan | None
    shown_session: Session | None
    selected: int | None
    _why_timer: Any

    def _pins_cleared(self, pins: tuple[str, ...]) -> None:
        self.statusBar().showMessage(pins_cleared_text(pins), PINS_CLEARED_MS)  # type: ignore[attr-defined]

    def clear_selection(self) -> None:
        """No message selected: the panel says what it will show, no "why" search runs."""
        self.selected = None
        self._why_timer.stop()
        self.vm.cancel_explanation()
        self._blank_detail(DETAIL_HINT)
        self.strip.select(None)
        self.table.clearSelection()

    def _blank_detail(self, head_html: str) -> None:
        """The detail panel without a message: `head_html` in its head, the body hidden (the next
        message shown is laid out from scratch, not taken for the one shown before)."""
        self._detail_session, self._detail_index, self._detail_record = None, -1, None
        self._detail_head_html, self._why_html = head_html, ""  # (what `detail_text` reads)
        self.detail_head.setText(head_html)
        self.detail.clear()
        self.detail.hide()

    def _selection_not_in(self, session: Session) -> None:
        """The selected message is past the end of `session` (a turn the Timeline scrubbed to):
        the panel says so, rather than explain it from the whole file's plan."""
        self._why_timer.stop()
        self.vm.cancel_explanation()
        self.strip.select(None)
        last = len(session.messages) - 1
        self._blank_detail(f"<p><b>#{self.selected}</b> is not in the replay at turn {last:,} (messages #0-#{last:,}): "
                           "it was not written yet. Back to latest on the Timeline shows it again.</p>")

    def _plan_failed(self, session: Session, _message: str) -> None:
        """The first plan of a newly opened session failed (the error is already said): nothing
        of the previous session stays on screen under the new one's title."""
        if session is not self.vm.session or self.shown_session is session:
            return
        self.shown_session = self.shown_plan = None
        self.clear_selection()
        self.model.set_plan(None, None)
        self.strip.set_plan(None, None)
        self.overview_stack.setCurrentIndex(0)  # the welcome page: open another file, or change the policy
        self.compare.mark_stale("This comparison is of another session: the open one has no plan yet.")
        self._render_context()  # type: ignore[attr-defined]
