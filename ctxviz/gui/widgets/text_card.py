"""A framed card of rich text that is as tall as its wrapped text, within the room the window
gives it, and scrolls only beyond that room.

The overview's lost card and next-compaction card are both this: a fixed cap (104 and 118 pixels)
made them scroll at 1920x1080 with half the window to spare, a "Minimum" label height took the
text's height at some narrower width, and a scroll area asked for the height of its scroll bar's
arrows and handle (68 pixels) even for two lines. One class keeps the three remedies in one place.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

#: The least room a card gets above the charts (more on a tall window: `set_room`).
CARD_MIN_ROOM = 104


class MeasuredLabel(QLabel):
    """A rich-text label that measures its wrapped height once per text, width and font. Its scroll
    area, the card's `sizeHint` and the layout each ask, and each answer laid the text out anew:
    3 ms of every re-plan at 10,000 messages for the lost card's few lines. (The detail panel's
    head, re-written on every re-plan while a message is selected, is one too.)"""

    def __init__(self) -> None:
        super().__init__()
        self._heights: tuple[tuple[str, str], dict[int, int]] = (("", ""), {})

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt's name)
        key = (self.text(), self.font().key())
        if key != self._heights[0]:
            self._heights = (key, {})
        known = self._heights[1]
        if width not in known:
            known[width] = super().heightForWidth(width)
        return known[width]


class TextCard(QFrame):
    """`label` (rich text, links emit `messageClicked` with the message's index) in `scroll`;
    `set_room` says how tall the card may grow before it scrolls."""

    messageClicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = MeasuredLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse | Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
        self.label.linkActivated.connect(lambda href: self.messageClicked.emit(int(href.lstrip("#"))))
        # Its height is its wrapped text's at the width it has (a "Minimum" height made the text's
        # height at some narrower width the least it could take, and the card scrolled).
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.label.setSizePolicy(policy)
        self.label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # On a small screen the card scrolls rather than pushing the charts off the window.
        self.scroll = scroll = QScrollArea()
        scroll.setWidget(self.label)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # Not the height of a scroll bar's arrows and handle (68 pixels): a two-line card is two lines tall.
        scroll.setMinimumHeight(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(scroll)
        # Wraps to the overview's width instead of widening the window; its height is its text's.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(46)
        self.room = CARD_MIN_ROOM
        #: The most height the card's content asks for whatever its room (one grey line: a line).
        self.cap: int | None = None
        self.setMaximumHeight(self.room)

    def set_room(self, room: int) -> None:
        """The most height the card may take before it scrolls (the window's share, `fit_cards`)."""
        self.room = max(self.minimumHeight(), room)
        self._apply_room()

    def set_cap(self, cap: int | None) -> None:
        """A fixed most height whatever the room (None: the room alone)."""
        self.cap = cap
        self._apply_room()

    def _apply_room(self) -> None:
        self.setMaximumHeight(self.room if self.cap is None else min(self.room, self.cap))
        self.updateGeometry()

    def content_height(self) -> int:
        """The card's height with all of its text wrapped to the card's width (frame and margins included)."""
        margins = self.layout().contentsMargins()
        chrome = margins.top() + margins.bottom() + 2 * self.frameWidth()
        width = self.scroll.viewport().width() if self.scroll.viewport().width() > 50 else self.width() - margins.left() - margins.right()
        return chrome + self._text_height(max(50, width))

    def _text_height(self, width: int) -> int:
        """The label's text wrapped to `width` (measured once per text, width and font: `MeasuredLabel`)."""
        text = self.label.heightForWidth(width)
        return text if text >= 0 else self.label.sizeHint().height()

    def sizeHint(self) -> QSize:  # noqa: N802
        """As tall as the text, within the room it has (a two-line "Every message is sent" took 104 pixels)."""
        return QSize(super().sizeHint().width(), max(self.minimumHeight(), min(self.content_height(), self.maximumHeight())))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():  # a new width wraps the text anew
            self.updateGeometry()

    def _set_text(self, text: str) -> None:
        """Show `text`; the window lays the card out again only when its height changes (a re-plan
        changes the figures in the text, seldom its number of lines, and each layout pass of the
        overview measured the rich text again and repainted everything under the cards)."""
        if text == self.label.text():
            return
        before = self.sizeHint().height()
        self.label.setText(text)
        if self.sizeHint().height() != before:
            self.updateGeometry()
