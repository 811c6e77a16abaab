"""What may reach Qt from a session file: text as plain text, numbers within what Qt can hold.

A session file is untrusted input. Qt guesses whether a label, message box or tooltip is rich text
(`Qt::mightBeRichText`), and rich text loads the local files its `<img src=...>` names: a message
whose text is `<img src=/dev/zero>` made the app read /dev/zero until it died. So every widget that
can show session text (ids, roles, names, message text, reasons, file paths, error messages, which
quote file contents) shows it as plain text, and tooltips (which Qt always auto-detects) escape it
inside an explicit rich-text wrapper.

Qt's sliders and spin boxes hold 32-bit ints, and pyqtgraph hands numpy arrays to C++: a Python int
beyond 64 bits becomes an object array and crashes the process. Values pass through `qt_int` and
`plot_values` first.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetrics, QPainter
from PySide6.QtWidgets import QLabel, QMessageBox, QSizePolicy, QWidget

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
#: Plotted values are clipped to this (a float64 holds every integer up to 2**53 exactly; Qt's
#: geometry is comfortable far below where its int conversions overflow).
PLOT_LIMIT = 1e15
#: Where a long name may wrap (a zero-width space: never in the text copied out).
BREAK = "\u200b"


# --- text ------------------------------------------------------------------------------------------
def plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    """A QLabel that never interprets its text as HTML."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    return label


def idle_label(text: str, name: str) -> QLabel:
    """What a view will show, said where it will be before there is anything to show (a tab before
    its first replay or comparison): a sentence in the placeholder colour, not bare axes or an empty
    table under its headers."""
    label = plain_label(text)
    label.setObjectName(name)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)
    label.setStyleSheet("color: palette(placeholder-text); font-size: 13pt;")
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Expanding)
    return label


def tooltip_html(text: str) -> str:
    """A tooltip showing `text` literally: escaped, in a wrapper that is rich text by construction
    (a bare string would be auto-detected, and `<img src=...>` in it would be loaded)."""
    if not text:
        return ""
    return f"<p style='white-space:pre-wrap'>{html.escape(text)}</p>"


def set_plain_tooltip(widget: Any, text: str) -> None:
    """`setToolTip` for anything with one (widgets, actions, table items), showing `text` literally."""
    widget.setToolTip(tooltip_html(text))


def message_box(icon: QMessageBox.Icon, title: str, text: str, parent: QWidget | None = None) -> QMessageBox:
    """A message box whose text is shown as plain text."""
    box = QMessageBox(parent)
    box.setIcon(icon)
    box.setWindowTitle(title)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(text)
    box.setStandardButtons(QMessageBox.StandardButton.Ok)
    return box


# --- numbers ---------------------------------------------------------------------------------------
def qt_int(value: Any, lo: int = INT32_MIN, hi: int = INT32_MAX) -> int:
    """`value` as an int a Qt control can hold (clamped; NaN and None become `lo` or 0)."""
    try:
        number = float(value) if not isinstance(value, int) else value
    except (TypeError, ValueError, OverflowError):
        return max(lo, min(0, hi))
    if isinstance(number, float):
        if math.isnan(number):
            return max(lo, min(0, hi))
        if math.isinf(number):
            return hi if number > 0 else lo
        number = int(number)
    return max(lo, min(int(number), hi))


def finite(value: Any, limit: float = PLOT_LIMIT) -> float:
    """One number as a float within +-limit (NaN becomes 0)."""
    try:
        number = float(value)
    except OverflowError:  # an int beyond a float's range
        number = math.inf if value > 0 else -math.inf
    except (TypeError, ValueError):
        return 0.0
    if math.isnan(number):
        return 0.0
    return max(-limit, min(number, limit))


def rounded_tokens(value: int) -> str:
    """A token count in three figures or fewer, for a title with little room: 167k, 1.05M (exact
    below 10,000)."""
    if abs(value) < 10_000:
        return f"{value:,}"
    if abs(value) < 999_500:
        return f"{value / 1000:.0f}k"
    if abs(value) < 10**15:
        return f"{value / 1_000_000:.3g}M"
    return short_number(value)


def short_number(value: int) -> str:
    """`value` with group separators, or in scientific notation past 15 digits (a chart's title has
    room for a number, not for 300 digits; labels that must be exact show the whole number)."""
    if abs(value) < 10**15:
        return f"{value:,}"
    digits = str(abs(value))
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:4]}e{len(digits) - 1}"


def plot_values(values: Iterable[Any], limit: float = PLOT_LIMIT) -> np.ndarray:
    """Values as a float64 array pyqtgraph can draw: finite and within +-limit."""
    return np.fromiter((finite(v, limit) for v in values), dtype=np.float64)


def clipped(values: Iterable[Any], limit: float = PLOT_LIMIT) -> bool:
    """Whether any of `values` lies beyond what `plot_values` draws as is."""
    for v in values:
        try:
            number = float(v)
        except OverflowError:
            return True
        except (TypeError, ValueError):
            continue
        if not math.isfinite(number) or abs(number) > limit:
            return True
    return False


class FittingLabel(QLabel):
    """A plain-text label of " • "-separated parts that, when narrower than its text, shows the
    first of its shorter wordings that fits (`set_texts`) and, when even the shortest is too wide,
    the leading parts that fit and " • …" (whole parts dropped from the end, never a part cut in
    the middle), with the whole text in its tooltip. `text()` is always the whole text.

    It is the status line, re-written on every re-plan. QLabel asks its parent for a new layout
    with every text, and a status bar answers that by relaying out and repainting all of itself
    (the notes' count, the size grip) in a paint pass of its own after the window's. A one-line
    text replacing a one-line text changes no size hint this label's layout reads (its width is
    `Ignored`, its height one line's), so such a text is only drawn anew (`_show`)."""

    def __init__(self, text: str = "", separator: str = "  •  ", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.separator = separator
        self.shorter: tuple[str, ...] = ()
        #: The whole text (QLabel's own is the last text its layout was told of: a line of the same height).
        self._text = ""
        self._wordings: tuple[str, ...] = ()
        #: What `shown_text` worked out last, and for what (text, wordings, room, font).
        self._shown: tuple[tuple[object, ...], str] = ((), "")
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setText(text)

    def text(self) -> str:
        return self._text

    def set_texts(self, text: str, *shorter: str) -> None:
        """The whole text, and shorter wordings (longest first) to show when the whole would be cut."""
        self.shorter = shorter
        self._show(text)

    def setText(self, text: str) -> None:  # noqa: N802
        self.shorter = ()
        self._show(text)

    def _show(self, text: str) -> None:
        previous, self._text = self._wordings, text
        self._wordings = (text, *self.shorter)
        laid_out = QLabel.text(self)
        if (laid_out and text and "\n" not in text and "\n" not in laid_out
                and self.sizePolicy().horizontalPolicy() == QSizePolicy.Policy.Ignored):
            if self._wordings != previous:
                self.setAccessibleName(text)  # (what a screen reader reads: QLabel's own text is the layout's)
                self.update(self.contentsRect())
        else:
            super().setText(text)
            self.setAccessibleName("")
        self._update_tip()

    def shown_text(self) -> str:
        """What is drawn at the current width."""
        fm = self.fontMetrics()
        room = self.contentsRect().width() - 4
        wordings = self._wordings
        key = (wordings, room, self.font().key())
        if key == self._shown[0]:
            return self._shown[1]
        shown = self._fitting(fm, wordings, room)
        self._shown = (key, shown)
        return shown

    def _fitting(self, fm: QFontMetrics, wordings: tuple[str, ...], room: int) -> str:
        for wording in wordings:
            if fm.horizontalAdvance(wording) <= room:
                return wording
        text = wordings[-1]
        parts = text.split(self.separator)
        more = self.separator + "…"
        for n in range(len(parts) - 1, 0, -1):
            head = self.separator.join(parts[:n]) + more
            if fm.horizontalAdvance(head) <= room:
                return head
        return fm.elidedText(text, Qt.TextElideMode.ElideRight, room)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._update_tip()

    def _update_tip(self) -> None:
        tip = tooltip_html(self._text) if self.shown_text() != self._text else ""
        if tip != self.toolTip():
            self.setToolTip(tip)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(40, super().minimumSizeHint().height())

    def paintEvent(self, event: Any) -> None:  # noqa: N802
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment() | Qt.AlignmentFlag.AlignVCenter), self.shown_text())
        painter.end()
