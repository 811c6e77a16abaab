"""A framed card of rich text that is as tall as its wrapped text, within the room the window
gives it, and scrolls only beyond that room.

The overview's lost card and next-compaction card are both this: a fixed cap (104 and 118 pixels)
made them scroll at 1920x1080 with half the window to spare, a "Minimum" label height took the
text's height at some narrower width, and a scroll area asked for the height of its scroll bar's
arrows and handle (68 pixels) even for two lines. One class keeps the three remedies in one place.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QTextDocument, QTextOption
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

#: The least room a card gets above the charts (more on a tall window: `set_room`).
CARD_MIN_ROOM = 104
#: Markup whose blocks are indented or framed: measured by QLabel itself (`MeasuredLabel._plain`).
INDENTED_TAGS = ("<ul", "<ol", "<li", "<table", "<blockquote", "<pre", "margin", "indent", "<dl")
QWIDGETSIZE_MAX = (1 << 24) - 1


class MeasuredLabel(QLabel):
    """A rich-text label that measures its wrapped height once per text, width and font. Its scroll
    area, the card's `sizeHint` and the layout each ask, and each answer laid the text out anew:
    3 ms of every re-plan at 10,000 messages for the lost card's few lines. (The detail panel's
    head, re-written on every re-plan while a message is selected, is one too.)

    A new text is laid out here in one document of its own, as QLabel lays it out (qlabel.cpp's
    `sizeForWidth`), for the sizes the scroll area asks first: QLabel found its least width by
    laying the text out at width 0 (a line per word, a third of a re-plan's frame) and laid its
    document out again after each measure; the widest word is known from any layout that wraps."""

    def __init__(self) -> None:
        super().__init__()
        self._heights: tuple[tuple[str, str], dict[int, int]] = (("", ""), {})
        #: The last text in a document of its own (`_document`), and what was measured of it.
        self._measures: tuple[tuple[str, str, int], QTextDocument, dict[object, QSize]] | None = None

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt's name)
        key = (self.text(), self.font().key())
        if key != self._heights[0]:
            self._heights = (key, {})
        known = self._heights[1]
        if width not in known:
            known[width] = self._size_at(width).height() if self._plain() else super().heightForWidth(width)
        return known[width]

    def sizeHint(self) -> QSize:  # noqa: N802
        if not self._plain():
            return super().sizeHint()
        doc, memo = self._document()
        if "hint" not in memo:
            doc.adjustSize()  # QLabel's size hint: the text at a pleasing width (QTextDocument's own rule)
            memo["hint"] = self._framed(doc.size().width(), doc.size().height())
        return QSize(memo["hint"])

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        """Its widest word wide, each paragraph on one line high (QLabel's least size), from a layout
        at the label's own width and one without wrapping, instead of one at width 0."""
        if not self._plain():
            return super().minimumSizeHint()
        doc, memo = self._document()
        if "least" not in memo:
            self._size_at(max(self.width(), 1))  # any wrapping layout finds each block's widest word
            widest_word = 0.0
            block = doc.begin()
            while block.isValid():
                widest_word = max(widest_word, block.layout().minimumWidth())
                block = block.next()
            doc.setTextWidth(QWIDGETSIZE_MAX)
            memo["least"] = self._framed(widest_word, doc.size().height())
        return QSize(memo["least"])

    def _plain(self) -> bool:
        """Wrapped rich text with no margin, indent, frame or least width, and no block that is
        indented (a list, a table): what `_document` measures as QLabel does."""
        text = self.text()
        return (self.wordWrap() and self.textFormat() == Qt.TextFormat.RichText and self.margin() == 0 and self.indent() < 0
                and self.frameWidth() == 0 and self.minimumWidth() == 0 and not any(tag in text for tag in INDENTED_TAGS))

    def _document(self) -> tuple[QTextDocument, dict[object, QSize]]:
        """The text in a document of its own, set up as QLabel sets up its own (qlabel.cpp's
        `ensureTextLayouted`), and what has been measured of it (by width, "hint", "least")."""
        key = (self.text(), self.font().key(), int(self.alignment().value))
        if self._measures is None or self._measures[0] != key:
            doc = QTextDocument()
            doc.setUndoRedoEnabled(False)
            doc.setDefaultFont(self.font())
            option = QTextOption(self.alignment())
            option.setWrapMode(QTextOption.WrapMode.WordWrap)
            doc.setDefaultTextOption(option)
            doc.setDocumentMargin(0)
            doc.setHtml(self.text())
            self._measures = (key, doc, {})
        return self._measures[1], self._measures[2]

    def _size_at(self, width: int) -> QSize:
        """QLabel's size at `width` (its `sizeForWidth`): the text wrapped within the contents margins."""
        doc, memo = self._document()
        if width not in memo:
            m = self.contentsMargins()
            doc.setTextWidth(max(width - m.left() - m.right(), 0))
            memo[width] = self._framed(doc.size().width(), doc.size().height())
        return QSize(memo[width])  # type: ignore[arg-type]

    def _framed(self, width: float, height: float) -> QSize:
        """A measured text's size with the contents margins, at least the label's least size."""
        m = self.contentsMargins()
        return QSize(math.ceil(width) + m.left() + m.right(), math.ceil(height) + m.top() + m.bottom()).expandedTo(self.minimumSize())


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
