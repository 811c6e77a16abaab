"""Above the overview's charts: what the provider's log says beside the plan, and the notes.

- Facts: the last call's real window fill beside the plan's figure, and the estimate of the system
  prompt and tools the log does not record, each a labelled line of its own (never added into the
  policy's figures).
- Notes: what the loader skipped, kept as opaque text or repaired, the unseen-prompt estimate, and
  the policy's remarks, one bullet each, folded behind a toggle that says how many there are.

Everything here quotes the session file (a note names a block type or a line kind from it), so it
is plain text, and it wraps: nothing is cut off at the right. The panel asks for the height of its
text up to `MAX_NOTE_LINES` whole lines of notes and scrolls beyond that; on a short window the layout may give it less
(down to its toggle), and it scrolls then too, so it never pushes the window taller than the screen.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QFrame, QScrollArea, QSizePolicy, QToolButton, QVBoxLayout, QWidget

from ...glossary import define
from ..safe import plain_label
from ..status import notes_count

#: The panel asks for the facts and at most this many lines of notes; more scroll.
MAX_NOTE_LINES = 5


class NotesPanel(QScrollArea):
    toggled = Signal(bool)
    #: New facts or notes (the window shares the cards' room anew).
    contentChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.facts = plain_label()
        self.facts.setObjectName("provider-facts")
        self.facts.setWordWrap(True)
        self.facts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.toggle = QToolButton()
        self.toggle.setObjectName("notes-toggle")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(False)  # folded: above the charts five lines of notes took the lost card's room
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.toggled.connect(self._toggled)
        self.notes = plain_label()
        self.notes.setObjectName("notes")
        self.notes.setWordWrap(True)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes.setContentsMargins(18, 0, 4, 2)
        self.body = QWidget()
        layout = QVBoxLayout(self.body)
        layout.setContentsMargins(6, 2, 6, 2)
        layout.setSpacing(0)
        layout.addWidget(self.facts)
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.notes)
        layout.addStretch(1)
        self.setWidget(self.body)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # Wraps to the overview's width instead of widening the window; its height is its text's.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.note_lines: tuple[str, ...] = ()
        self.set_content((), ())

    def set_content(self, facts: Sequence[str], notes: Sequence[str]) -> None:
        """Show these facts (one line each) and notes; the panel hides what it has nothing for.

        Unchanged content is left alone: new text re-lays out the overview (the panel's height is
        its text's), which repainted the whole window on every re-plan of a slider drag."""
        facts = [f for f in facts if f]
        content = (tuple(facts), tuple(notes))
        if content == getattr(self, "_content", None):
            return
        self._content = content
        self.facts.setText("\n".join(facts))
        self.facts.setVisible(bool(facts))
        # The words the glossary defines, defined on hover (the README's glossary, the same text).
        terms = [t for t in ("unseen",) if any(f.lower().startswith(f"{t}:") for f in facts)]
        self.facts.setToolTip("\n".join(f"{t.capitalize()}: {define(t)}" for t in terms))
        self.note_lines = tuple(notes)
        self.notes.setText("\n".join(f"• {n}" for n in notes))
        count = notes_count(notes)
        self.toggle.setText(f"{count} from reading the file and planning it" if count else "")
        self.toggle.setVisible(bool(notes))
        self._update_arrow()
        self.notes.setVisible(bool(notes) and self.toggle.isChecked())
        self.setVisible(bool(facts or notes))
        self.updateGeometry()
        self.contentChanged.emit()

    def expand(self, on: bool = True) -> None:
        self.toggle.setChecked(on)

    def _toggled(self, on: bool) -> None:
        self._update_arrow()
        self.notes.setVisible(on and bool(self.note_lines))
        self.updateGeometry()
        self.toggled.emit(on)
        self.contentChanged.emit()

    def _update_arrow(self) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if self.toggle.isChecked() else Qt.ArrowType.RightArrow)

    def _width(self) -> int:
        return self.viewport().width() if self.viewport().width() > 50 else max(50, self.width())

    def content_height(self) -> int:
        """The height the facts and notes take, wrapped to the panel's width."""
        height = self.body.heightForWidth(self._width())
        return height if height >= 0 else self.body.sizeHint().height()

    def sizeHint(self) -> QSize:  # noqa: N802
        """All of the text, or the facts and the first MAX_NOTE_LINES lines of notes (ending on a
        whole line: the rest scrolls, with no half line at the foot)."""
        content = self.content_height()
        margins = self.body.layout().contentsMargins()
        inner = self._width() - margins.left() - margins.right()
        top = margins.top()
        if self.facts.isVisibleTo(self):
            top += self.facts.heightForWidth(inner)
        if self.toggle.isVisibleTo(self):
            top += self.toggle.sizeHint().height()
        cap = top + self.notes.fontMetrics().lineSpacing() * MAX_NOTE_LINES + 1
        return QSize(super().sizeHint().width(), min(content, cap))

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        # One row (it scrolls): a short window keeps the charts' room, and the status bar's count is there.
        line = max(self.toggle.sizeHint().height(), self.fontMetrics().lineSpacing()) + 4
        return QSize(0, min(self.content_height(), line))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():  # a new width wraps the text anew
            self.updateGeometry()
