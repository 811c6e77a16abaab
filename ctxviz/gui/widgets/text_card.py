"""A framed card of rich text that is as tall as its wrapped text, within the room the window
gives it, and scrolls only beyond that room.

The overview's lost card and next-compaction card are both this: a fixed cap (104 and 118 pixels)
made them scroll at 1920x1080 with half the window to spare, a "Minimum" label height took the
text's height at some narrower width, and a scroll area asked for the height of its scroll bar's
arrows and handle (68 pixels) even for two lines. One class keeps the three remedies in one place.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

#: The least room a card gets above the charts (more on a tall window: `set_room`).
CARD_MIN_ROOM = 104


class MeasuredLabel(QLabel):
    """A rich-text label, the resizable widget of a scroll area, that measures its wrapped height
    once per text, width and font. Its scroll area, the card's `sizeHint` and the layout each ask,
    and each answer laid the text out anew: 3 ms of every re-plan at 10,000 messages for the lost
    card's few lines. (The detail panel's head, re-written on every re-plan while a message is
    selected, is one too.)

    A new text that the scroll area would lay out exactly as the one before is not laid out
    again (`setText`): QLabel asks its scroll area to, and the scroll area asks the label's size
    hints, which QLabel works out by laying the text out three more times, once a word per line
    (1.5-2 ms of every re-plan for the lost card). The scroll area gives the label the viewport's
    width and the text's height at the widths it asked, unless the minimum width asks for more,
    which it cannot while no unbreakable piece of the text is wider than the viewport. So when
    the new text has the old one's height at every width asked, and fits, nothing would move."""

    def __init__(self) -> None:
        super().__init__()
        self._heights: tuple[tuple[str, str], dict[int, int]] = (("", ""), {})
        self._document: QTextDocument | None = None
        #: The viewport whose layout requests `_LayoutFilter` watches (the label's parent once in its scroll area).
        self._watched: QWidget | None = None
        self._filter = _LayoutFilter(self)
        #: A layout request for the text shown is on its way to the viewport (QLabel posts one with each text).
        self._layout_due = False
        #: (viewport size, own size, font, text) of a text the scroll area would lay out as the one before.
        self._unchanged: tuple[object, ...] | None = None

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt's name)
        key = (self.text(), self.font().key())
        if key != self._heights[0]:
            self._heights = (key, {})
        known = self._heights[1]
        if width not in known:
            known[width] = super().heightForWidth(width)
        return known[width]

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        if text == self.text():
            return  # (QLabel keeps it and asks for no layout: nor is one awaited here)
        settled = self._settled()
        super().setText(text)
        viewport = self.parentWidget()
        # QLabel asks for a layout when it and its viewport are shown (the same condition as Qt's).
        self._layout_due = viewport is not None and viewport is self._watched and not self.isHidden() and viewport.isVisible()
        self._unchanged = None
        if settled is not None and self._layout_due and self._lays_out_as(*settled):
            self._unchanged = self._state()

    def _state(self) -> tuple[object, ...]:
        viewport = self.parentWidget()
        return (viewport.size() if viewport is not None else None, self.size(), self.font().key(), self.text())

    def _settled(self) -> tuple[int, dict[int, int]] | None:
        """(the viewport's width, the heights asked of the text shown) when the scroll area has laid
        that text out at the viewport's width (no layout awaited, and the label as wide as the
        viewport and as tall as the text or the viewport), else None."""
        viewport = self.parentWidget()
        if viewport is None:
            return None
        if self._watched is not viewport:
            if self._watched is not None:
                self._watched.removeEventFilter(self._filter)
            viewport.installEventFilter(self._filter)
            self._watched, self._layout_due = viewport, False
            return None  # (the requests before were not watched)
        if self._layout_due or self.width() != viewport.width() or self._heights[0] != (self.text(), self.font().key()):
            return None
        if self.height() != max(viewport.height(), self.heightForWidth(viewport.width())):
            return None
        return viewport.width(), dict(self._heights[1])

    def _lays_out_as(self, width: int, heights: dict[int, int]) -> bool:
        """The text shown has `heights` at their widths, and no piece of it wider than the viewport."""
        if not heights or any(self.heightForWidth(w) != h for w, h in heights.items()):
            return False
        if (not self.wordWrap() or self.textFormat() != Qt.TextFormat.RichText or self.margin() or self.indent() > 0
                or self.frameWidth() or self.minimumWidth()):
            return False
        # QLabel's own document (the one it lays out and paints), measured at the width the viewport
        # leaves the text: with word wrap a piece is never broken, so a piece wider than that width
        # makes a line wider than it (the layout's ideal width), and none does otherwise.
        document = self._document if self._document is not None else self.findChild(QTextDocument)
        if document is None:
            return False
        self._document = document
        margins = self.contentsMargins()
        text_width = width - margins.left() - margins.right()
        before = document.textWidth()
        document.setTextWidth(text_width)
        fits = text_width > 0 and document.idealWidth() <= text_width
        if before != text_width:
            document.setTextWidth(before)  # as QLabel's own measuring leaves it
        # (else as it was, and laid out: setting the same width again laid the text out once
        # more, and QLabel's paint then laid it out again at that width)
        return fits

    def _layout_requested(self) -> bool:
        """The viewport's layout request arrived: True to drop it, when it would move nothing."""
        unchanged, self._unchanged, self._layout_due = self._unchanged, None, False
        return unchanged is not None and unchanged == self._state()


class _LayoutFilter(QObject):
    """Hands the viewport's layout requests to its `MeasuredLabel` first."""

    def __init__(self, label: MeasuredLabel) -> None:
        super().__init__(label)
        self.label = label

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.LayoutRequest and watched is self.label._watched:
            return self.label._layout_requested()
        return False


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
