"""The turn slider with the replay's events ticked along its groove.

A summary at turn 900 of 4,000 is a tick where the handle would be at turn 900, in the event's
colour, so a user drags straight to it; hovering a tick names the events there.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QRect, Qt
from PySide6.QtGui import QColor, QHelpEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSlider, QStyle, QStyleOptionSlider, QToolTip, QWidget

from ..safe import tooltip_html

#: How far (pixels) from a tick the pointer may be for its tooltip.
HOVER_PIXELS = 4
#: Past this many events the groove shows how many fall at each pixel (a density strip), not a
#: tick each: 9,762 ticks merged into one bar.
DENSE_MARKS = 300


class EventSlider(QSlider):
    """A horizontal QSlider whose values are turn positions; `set_marks` ticks the events."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        #: (slider value, colour, text) per event, in value order.
        self.marks: list[tuple[int, str, str]] = []
        self.setMinimumHeight(max(self.minimumHeight(), 24))
        self.setMouseTracking(True)

    def set_marks(self, marks: list[tuple[int, str, str]]) -> None:
        self.marks = sorted(marks, key=lambda m: m[0])
        self.update()

    def _scale(self) -> tuple[int, int, bool]:
        """(x of the handle's centre at the minimum, pixels of travel, upside down), as the style lays
        the slider out: asked once per paint or hover, not once per mark."""
        option = QStyleOptionSlider()
        self.initStyleOption(option)
        style = self.style()
        groove = style.subControlRect(QStyle.ComplexControl.CC_Slider, option, QStyle.SubControl.SC_SliderGroove, self)
        handle = style.subControlRect(QStyle.ComplexControl.CC_Slider, option, QStyle.SubControl.SC_SliderHandle, self)
        return groove.x() + handle.width() // 2, max(1, groove.width() - handle.width()), option.upsideDown

    def mark_x(self, value: int, scale: tuple[int, int, bool] | None = None) -> int:
        """The x (pixels) of the handle's centre at `value`."""
        start, span, upside_down = scale or self._scale()
        return start + QStyle.sliderPositionFromValue(self.minimum(), self.maximum(), value, span, upside_down)

    def density(self) -> dict[int, tuple[int, str]]:
        """Per pixel column: (events there, the colour of the most frequent kind)."""
        scale = self._scale()
        per_x: dict[int, dict[str, int]] = {}
        for value, color, _ in self.marks:
            colors = per_x.setdefault(self.mark_x(value, scale), {})
            colors[color] = colors.get(color, 0) + 1
        return {x: (sum(c.values()), max(c, key=c.__getitem__)) for x, c in per_x.items()}

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        super().paintEvent(event)
        if not self.marks or self.maximum() <= self.minimum():
            return
        if len(self.marks) > DENSE_MARKS:
            self._paint_density()
            return
        painter = QPainter(self)
        drawn: set[tuple[int, str]] = set()  # thousands of trims at one pixel are one tick
        height = self.height()
        scale = self._scale()
        for value, color, _ in self.marks:
            x = self.mark_x(value, scale)
            if (x, color) in drawn:
                continue
            drawn.add((x, color))
            painter.setPen(QPen(QColor(color), 2))
            painter.drawLine(x, 1, x, height // 4 + 1)
            painter.drawLine(x, height - height // 4 - 2, x, height - 2)
        painter.end()

    def _paint_density(self) -> None:
        """A tick per pixel column whose height grows with the events there (square root: one
        summary still shows beside a column of hundreds)."""
        density = self.density()
        peak = max(n for n, _ in density.values())
        quarter = self.height() // 4
        painter = QPainter(self)
        for x, (n, color) in density.items():
            tall = max(2, round(quarter * (n / peak) ** 0.5))
            painter.setPen(QPen(QColor(color), 1))
            painter.drawLine(x, quarter + 1 - tall, x, quarter + 1)
            painter.drawLine(x, self.height() - quarter - 2, x, self.height() - quarter - 2 + tall)
        painter.end()

    def tooltip_at(self, x: int) -> str:
        """What the tooltip at `x` says (the events ticked there), or ""."""
        near = self.marks_near(x)
        if len(self.marks) > DENSE_MARKS and len(near) > 8:
            return f"{len(near):,} events near here; the first:\n" + "\n".join(text for _, _, text in near[:5])
        lines = [text for _, _, text in near[:8]] + ([f"… and {len(near) - 8:,} more"] if len(near) > 8 else [])
        return "\n".join(lines)

    def marks_near(self, x: int) -> list[tuple[int, str, str]]:
        scale = self._scale()
        return [m for m in self.marks if abs(self.mark_x(m[0], scale) - x) <= HOVER_PIXELS]

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            text = self.tooltip_at(event.pos().x())
            if text:
                QToolTip.showText(event.globalPos(), tooltip_html(text), self, QRect(QPoint(event.pos().x() - HOVER_PIXELS, 0),
                                                                                 QPoint(event.pos().x() + HOVER_PIXELS, self.height())))
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)
