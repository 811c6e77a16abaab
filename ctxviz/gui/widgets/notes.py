"""Above the overview's charts: what the provider's log says beside the plan, and the notes.

- Facts: the last call's real window fill beside the plan's figure, and the estimate of the system
  prompt and tools the log does not record, each a labelled line of its own (never added into the
  policy's figures).
- Notes: what the loader skipped, kept as opaque text or repaired, the unseen-prompt estimate, and
  the policy's remarks, one bullet each, behind a toggle that says how many there are.

Everything here quotes the session file (a note names a block type or a line kind from it), so it
is plain text, and it wraps: nothing is cut off at the right. The notes take at most
`MAX_NOTE_LINES` lines of the overview and scroll beyond that.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QScrollArea, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from ..safe import plain_label
from ..status import notes_count

#: The notes show this many lines of text at most; more scroll.
MAX_NOTE_LINES = 5


class NotesPanel(QWidget):
    toggled = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.facts = plain_label()
        self.facts.setObjectName("provider-facts")
        self.facts.setWordWrap(True)
        self.facts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # However long a line, it wraps to the overview's width instead of widening the window.
        self.facts.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self.toggle = QToolButton()
        self.toggle.setObjectName("notes-toggle")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.toggled.connect(self._toggled)
        self.notes = plain_label()
        self.notes.setObjectName("notes")
        self.notes.setWordWrap(True)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.notes.setContentsMargins(18, 0, 4, 2)
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.notes)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 2, 6, 2)
        layout.setSpacing(0)
        layout.addWidget(self.facts)
        layout.addWidget(self.toggle)
        layout.addWidget(self.scroll)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Maximum)
        self.note_lines: tuple[str, ...] = ()
        self.set_content((), ())

    def set_content(self, facts: Sequence[str], notes: Sequence[str]) -> None:
        """Show these facts (one line each) and notes; the panel hides what it has nothing for."""
        facts = [f for f in facts if f]
        self.facts.setText("\n".join(facts))
        self.facts.setVisible(bool(facts))
        self.note_lines = tuple(notes)
        self.notes.setText("\n".join(f"• {n}" for n in notes))
        count = notes_count(notes)
        self.toggle.setText(f"{count} from reading the file and planning it" if count else "")
        self.toggle.setVisible(bool(notes))
        self._update_arrow()
        self.scroll.setVisible(bool(notes) and self.toggle.isChecked())
        self.setVisible(bool(facts or notes))
        self._fit()

    def expand(self, on: bool = True) -> None:
        self.toggle.setChecked(on)

    def _toggled(self, on: bool) -> None:
        self._update_arrow()
        self.scroll.setVisible(on and bool(self.note_lines))
        self._fit()
        self.toggled.emit(on)

    def _update_arrow(self) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if self.toggle.isChecked() else Qt.ArrowType.RightArrow)

    def _fit(self) -> None:
        """The notes area as tall as its wrapped text, up to MAX_NOTE_LINES lines (then it scrolls)."""
        width = max(50, self.scroll.viewport().width() if self.scroll.isVisible() else self.width() - 12)
        needed = self.notes.heightForWidth(width)
        if needed < 0:
            needed = self.notes.sizeHint().height()
        # Whole lines only: a scrolled list shows no half line at its foot.
        cap = self.notes.fontMetrics().lineSpacing() * MAX_NOTE_LINES
        self.scroll.setFixedHeight(max(0, needed if needed <= cap + self.notes.contentsMargins().bottom() else cap))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit()
