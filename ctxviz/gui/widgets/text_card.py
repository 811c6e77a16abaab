"""A framed card of rich text that is as tall as its wrapped text, within the room the window
gives it, and scrolls only beyond that room.

The overview's lost card and next-compaction card are both this: a fixed cap (104 and 118 pixels)
made them scroll at 1920x1080 with half the window to spare, a "Minimum" label height took the
text's height at some narrower width, and a scroll area asked for the height of its scroll bar's
arrows and handle (68 pixels) even for two lines. One class keeps the three remedies in one place.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QKeyEvent,
    QPainter,
    QPalette,
    QTextCursor,
    QTextDocument,
    QTextOption,
)
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


class CardText(QWidget):
    """A card's rich text, drawn from one document of its own that is parsed once and laid out
    once per text and width: what QLabel shows, at a third of its cost.

    A re-plan at 10,000 messages re-writes the lost card's figures, and QLabel took 1.6-2 ms to
    take the new text (its text control parses it and lays it out three times before it can say
    the text's height, once more for each other width asked) and 0.8 ms more to paint it (the
    new text's document laid out again at the label's width). Here the document is parsed once
    and laid out at the width it is shown at, and the same layout answers `heightForWidth` at
    that width and paints; another width asked (the scroll area's, beside its scroll bar) lays it
    out once more, and the paint lays it out again at the width shown only then.

    A new text the scroll area would place as the one before (the same height at the width the
    text has, nothing wider than that width, the label as the scroll area left it) asks for no
    layout at all: it is only painted (`setText`). What it keeps of QLabel: the same measures
    (`heightForWidth`, no document margin, word wrap), links opened by `linkActivated` with the
    pointing hand over them, Tab and Shift+Tab between links and Enter to open one, the palette's
    text and link colours, `text()` and the accessible name. Rich text only, no selection."""

    linkActivated = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = ""
        self._document = QTextDocument(self)
        self._document.setUndoRedoEnabled(False)
        self._document.setDocumentMargin(0)
        self._alignment = Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft
        self._wrap_options()
        self._document.setDefaultFont(self.font())
        #: ((text, font key), {width: height}) of the text shown.
        self._heights: tuple[tuple[str, str], dict[int, int]] = (("", ""), {})
        #: The least width the text needs (its widest piece), per (text, font key): asked only when the scroll area lays the label out.
        self._least: tuple[tuple[str, str], int] = (("", ""), 0)
        self._links: list[tuple[int, int, str]] | None = []
        self._focused_link = -1
        self._pressed: str = ""
        #: The last new text asked for no layout: the scroll area would have placed it as the one before.
        self.placed_as_before = False
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, False)

    # --- what QLabel offers that the cards use ---------------------------------------------------
    def text(self) -> str:
        return self._text

    def textFormat(self) -> Qt.TextFormat:  # noqa: N802 (Qt's name)
        return Qt.TextFormat.RichText

    def setTextFormat(self, _format: Qt.TextFormat) -> None:  # noqa: N802 (Qt's name)
        """Rich text always (the cards' own words and escaped session text)."""

    def setWordWrap(self, _on: bool) -> None:  # noqa: N802 (Qt's name)
        """Wrapped always (a card is as wide as the overview)."""

    def wordWrap(self) -> bool:  # noqa: N802 (Qt's name)
        return True

    def setAlignment(self, alignment: Qt.AlignmentFlag) -> None:  # noqa: N802 (Qt's name)
        self._alignment = alignment
        self._wrap_options()
        self._measured_anew()

    def setTextInteractionFlags(self, flags: Qt.TextInteractionFlag) -> None:  # noqa: N802 (Qt's name)
        """Links by mouse (always) and, with `LinksAccessibleByKeyboard`, by Tab and Enter, as QLabel."""
        keyboard = bool(flags & Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus if keyboard else Qt.FocusPolicy.NoFocus)

    def _wrap_options(self) -> None:
        option = QTextOption(self._alignment)
        option.setWrapMode(QTextOption.WrapMode.WordWrap)
        self._document.setDefaultTextOption(option)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        if text == self._text:
            return
        width = self.width()
        parent = self.parentWidget()
        # As the scroll area left it: as wide as its viewport, as tall as the text or the viewport.
        settled = (parent is not None and width == parent.width() and self._heights[0] == self._key()
                   and width in self._heights[1] and self.height() == max(parent.height(), self._heights[1][width]))
        before = self._heights[1].get(width) if settled else None
        self._text = text
        self._document.setHtml(text)
        self._links = None
        self._focused_link = -1
        self.setAccessibleName(self._document.toPlainText())
        margins = self.contentsMargins()
        self.placed_as_before = (before is not None and self.heightForWidth(width) == before
                                 and self._document.idealWidth() <= width - margins.left() - margins.right())
        if self.placed_as_before:
            self.update()  # the same place in the card: drawn anew, nothing laid out
            return
        self.updateGeometry()
        self.update()

    # --- measures ---------------------------------------------------------------------------------
    def _key(self) -> tuple[str, str]:
        return (self._text, self.font().key())

    def _laid_out_at(self, width: int) -> None:
        """The document laid out at `width` (nothing done when it is already)."""
        if self._document.textWidth() != width:
            self._document.setTextWidth(width)

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt's name)
        key = self._key()
        if key != self._heights[0]:
            self._heights = (key, {})
        known = self._heights[1]
        if width not in known:
            margins = self.contentsMargins()
            self._laid_out_at(max(0, width - margins.left() - margins.right()))
            known[width] = math.ceil(self._document.size().height()) + margins.top() + margins.bottom()
        return known[width]

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        return True

    def _least_width(self) -> int:
        """The widest piece of the text that wrapping cannot break (QLabel's least width), once per text."""
        key = self._key()
        if self._least[0] != key:
            scratch = self._document.clone()
            scratch.setTextWidth(0)
            self._least = (key, math.ceil(scratch.idealWidth()))
        return self._least[1]

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        margins = self.contentsMargins()
        line = self.fontMetrics().lineSpacing()
        return QSize(self._least_width() + margins.left() + margins.right(), min(line, self.sizeHint().height()))

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        width = self.width() if self.width() > 50 else 400
        return QSize(width, self.heightForWidth(width))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.FontChange:
            self._document.setDefaultFont(self.font())
            self._measured_anew()
        super().changeEvent(event)

    def _measured_anew(self) -> None:
        self._heights = (("", ""), {})
        self._least = (("", ""), 0)
        self._document.setTextWidth(-1)  # laid out again at the next width asked
        self.updateGeometry()
        self.update()

    # --- painting ---------------------------------------------------------------------------------
    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        area = self.contentsRect()
        self._laid_out_at(area.width())
        painter = QPainter(self)
        painter.translate(area.topLeft())
        painter.setClipRect(QRectF(0, 0, area.width(), area.height()))
        context = QAbstractTextDocumentLayout.PaintContext()
        palette = QPalette(self.palette())
        palette.setColor(QPalette.ColorRole.Text, palette.color(self.foregroundRole()))
        context.palette = palette
        context.clip = QRectF(event.rect().translated(-area.topLeft()))
        link = self._link(self._focused_link) if self.hasFocus() else None
        if link is not None:  # the focused link shown as QLabel shows it: selected
            cursor = QTextCursor(self._document)
            cursor.setPosition(link[0])
            cursor.setPosition(link[1], QTextCursor.MoveMode.KeepAnchor)
            selection = QAbstractTextDocumentLayout.Selection()
            selection.cursor = cursor
            selection.format.setBackground(palette.brush(QPalette.ColorRole.Highlight))
            selection.format.setForeground(palette.brush(QPalette.ColorRole.HighlightedText))
            context.selections = [selection]
        self._document.documentLayout().draw(painter, context)

    # --- links ------------------------------------------------------------------------------------
    def _anchor_at(self, position: QPointF) -> str:
        area = self.contentsRect()
        self._laid_out_at(area.width())
        return self._document.documentLayout().anchorAt(position - QPointF(area.topLeft()))

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if self._anchor_at(event.position()):
            self.setCursor(Qt.CursorShape.PointingHandCursor)
        else:
            self.unsetCursor()
        super().mouseMoveEvent(event)

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self._pressed = self._anchor_at(event.position()) if event.button() == Qt.MouseButton.LeftButton else ""
        if not self._pressed:
            super().mousePressEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        pressed, self._pressed = self._pressed, ""
        if pressed and event.button() == Qt.MouseButton.LeftButton and self._anchor_at(event.position()) == pressed:
            self.linkActivated.emit(pressed)
            return
        super().mouseReleaseEvent(event)

    def leaveEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self.unsetCursor()
        super().leaveEvent(event)

    def links(self) -> list[tuple[int, int, str]]:
        """(first position, end position, href) of each link, in reading order."""
        if self._links is None:
            found: list[tuple[int, int, str]] = []
            block = self._document.begin()
            while block.isValid():
                it = block.begin()
                while not it.atEnd():
                    fragment = it.fragment()
                    char = fragment.charFormat()
                    if fragment.isValid() and char.isAnchor() and char.anchorHref():
                        start, end, href = fragment.position(), fragment.position() + fragment.length(), char.anchorHref()
                        if found and found[-1][2] == href and found[-1][1] == start:
                            found[-1] = (found[-1][0], end, href)  # one link in several fragments
                        else:
                            found.append((start, end, href))
                    it += 1
                block = block.next()
            self._links = found
        return self._links

    def _link(self, index: int) -> tuple[int, int, str] | None:
        links = self.links()
        return links[index] if 0 <= index < len(links) else None

    def focusInEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        links = self.links()
        if event.reason() == Qt.FocusReason.TabFocusReason:
            self._focused_link = 0 if links else -1
        elif event.reason() == Qt.FocusReason.BacktabFocusReason:
            self._focused_link = len(links) - 1
        super().focusInEvent(event)
        self.update()

    def focusOutEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().focusOutEvent(event)
        self.update()

    def focusNextPrevChild(self, next: bool) -> bool:  # noqa: N802, A002 (Qt's names)
        """Tab moves to the next link while there is one, then on to the next widget (as QLabel)."""
        step = self._focused_link + (1 if next else -1)
        if self.hasFocus() and 0 <= step < len(self.links()):
            self._focused_link = step
            self.update()
            return True
        return super().focusNextPrevChild(next)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        link = self._link(self._focused_link)
        if link is not None and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.linkActivated.emit(link[2])
            return
        super().keyPressEvent(event)


class TextCard(QFrame):
    """`label` (rich text, links emit `messageClicked` with the message's index) in `scroll`;
    `set_room` says how tall the card may grow before it scrolls."""

    messageClicked = Signal(int)
    #: New text: the height it asks for may be more than its room (the window shares the room anew).
    textChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = CardText()
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
        """A new most height asks the window for a layout (QWidget does, when it changes); the same
        one asks for nothing. Asking anyway laid the whole window out again each time a forecast
        came in (`NextCompactionCard.set_result` sets its cap), in the middle of a slider drag."""
        self.setMaximumHeight(self.room if self.cap is None else min(self.room, self.cap))

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
        self.textChanged.emit()
