"""The budget donut: each part of the allocation as a slice, used versus allotted inside it.

pyqtgraph has no pie item and QtCharts is not in PySide6-Essentials, so it is painted with QPainter.
Reserves (parts the policy sets aside, not fills) are hatched; usage is the solid arc inside each
slice; a part used beyond its allotment shows its overflow in the warning colour.

When the plan's allocation is `caps` (the category policy's maxima, which add up to more than the
budget), the slices are each cap's share of their sum, and the legend says so: its head names them
caps and how far past the budget they add up, and each part gives its cap as a share of the budget.
What the provider's log suggests is missing (`plan.reported.unseen`, a system prompt and tools it
does not record) is a line of its own under the legend, never added into the policy's figures.
"""

from __future__ import annotations

import html
import math

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from ...engine.plan import Plan
from ..safe import short_number
from ..theme import PART_COLORS, WARNING

RESERVE_WORDS = ("reserve", "buffer", "headroom")


def pretty(name: str) -> str:
    return name.replace("_", " ").capitalize()


class BudgetPie(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        # It paints its own background, so an update repaints the pie alone, not the window under it.
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.setMinimumSize(QSize(360, 170))
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.parts: list[tuple[str, int, int]] = []  # (name, allotted, used)
        self.total = 0
        self.used = 0
        self.fits = True
        self.title = ""
        self.caps = False
        self.unseen = 0
        self.real: tuple[str, int, str] | None = None  # ("real" or "est.", tokens, encoding): the real count beside the policy's

    def set_plan(self, plan: Plan | None, unseen: int | None = None) -> None:
        """Show `plan`; `unseen` is the provider's estimate of what its log does not record (by
        default the plan's own, `plan.reported.unseen`)."""
        before = (self.parts, self.total, self.used, self.fits, self.title, self.caps, self.unseen, self.real)
        if plan is None:
            self.parts, self.total, self.caps, self.unseen, self.real = [], 0, False, 0, None
        else:
            self.parts = [(k, max(0, v), plan.usage.get(k, 0)) for k, v in plan.allocation.items()]
            self.total = plan.totals.budget
            self.used = plan.totals.used
            self.fits = plan.totals.fits
            self.title = plan.policy
            self.caps = plan.totals.allocation_kind == "caps"
            if unseen is None:
                unseen = plan.reported.unseen if plan.reported is not None else 0
            self.unseen = max(0, unseen)
            r = plan.real
            self.real = None if r is None else ("real" if r.exact else "est.", r.tokens, r.encoding)
        if (self.parts, self.total, self.used, self.fits, self.title, self.caps, self.unseen, self.real) != before:
            self.update()  # a re-plan that changed nothing here paints nothing

    def caps_heading(self) -> str:
        """For caps: what they are, and how far past the budget they add up."""
        allotted = sum(a for _, a, _ in self.parts)
        share = f"{allotted / self.total * 100:.0f} %" if self.total else "more than all"
        return f"Category caps, % of the budget (they add up to {share})"

    def legend_lines(self) -> list[str]:
        """The legend's text, top to bottom (a cap's share is of the budget, a division's of the whole)."""
        lines = [self.caps_heading()] if self.caps else []
        allotted_total = sum(a for _, a, _ in self.parts) or 1
        for name, allotted, used in self.parts:
            if self.caps:
                share = f"{allotted / self.total * 100:.1f}%" if self.total else "no budget"
                lines.append(f"{pretty(name)}  {short_number(used)} / cap {short_number(allotted)}  ({share})")
            else:
                lines.append(f"{pretty(name)}  {short_number(used)} / {short_number(allotted)}  ({allotted / allotted_total * 100:.1f}%)")
        lines.append("fits the budget" if self.fits else "does NOT fit the budget")
        if self.real is not None:
            kind, tokens, encoding = self.real
            lines.append(f"{kind} count: {short_number(tokens)} ({encoding})")
        if self.unseen:
            lines.append(f"Unseen ≈ {short_number(self.unseen)} (not in the log, not counted above)")
        return lines

    # geometry shared by painting and hit-testing
    def _ring(self) -> tuple[QRectF, float]:
        side = min(self.height() - 16, self.width() * 0.46)
        rect = QRectF(12, (self.height() - side) / 2, side, side)
        return rect, side * 0.22

    def _spans(self) -> list[tuple[float, float]]:
        allotted = sum(a for _, a, _ in self.parts) or 1
        start = 90.0
        spans = []
        for _, a, _ in self.parts:
            span = -360.0 * a / allotted
            spans.append((start, span))
            start += span
        return spans

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt naming)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        painter.fillRect(self.rect(), pal.color(pal.ColorRole.Window))
        text = pal.color(pal.ColorRole.WindowText)
        if not self.parts:
            painter.setPen(text)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "Open a session to see its budget")
            return
        rect, thickness = self._ring()
        inner = rect.adjusted(thickness, thickness, -thickness, -thickness)
        for i, ((name, allotted, used), (start, span)) in enumerate(zip(self.parts, self._spans(), strict=True)):
            color = QColor(PART_COLORS[i % len(PART_COLORS)])
            reserve = any(w in name for w in RESERVE_WORDS)
            faint = QColor(color)
            faint.setAlpha(70)
            painter.setPen(QPen(pal.color(pal.ColorRole.Window), 1.5))
            painter.setBrush(QBrush(faint))
            painter.drawPath(_slice(rect, inner, start, span))
            if reserve:
                painter.setBrush(QBrush(color, Qt.BrushStyle.BDiagPattern))
                painter.drawPath(_slice(rect, inner, start, span))
            if allotted > 0 and used > 0:
                fill = min(1.0, used / allotted)
                painter.setBrush(QBrush(color))
                band = thickness * 0.55
                used_outer = rect.adjusted(thickness - band, thickness - band, band - thickness, band - thickness)
                painter.drawPath(_slice(used_outer, inner, start, span * fill))
                if used > allotted:
                    painter.setBrush(QBrush(QColor(WARNING)))
                    painter.drawPath(_slice(rect, rect.adjusted(thickness * 0.3, thickness * 0.3, -thickness * 0.3, -thickness * 0.3), start, span))
        # centre: used / budget, red when the plan does not fit
        painter.setPen(text if self.fits else QColor(WARNING))
        font = QFont(self.font())
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        painter.setFont(font)
        pct = self.used / self.total * 100 if self.total else 0
        painter.drawText(inner, Qt.AlignmentFlag.AlignCenter, f"{short_number(self.used)}\nof {short_number(self.total)}\n{pct:.0f}%")
        self._paint_legend(painter, rect.right() + 18)

    def _paint_legend(self, painter: QPainter, x: float) -> None:
        pal = self.palette()
        painter.setFont(self.font())
        fm = painter.fontMetrics()
        line = fm.height() + 6
        lines = self.legend_lines()
        y = max(8.0, (self.height() - line * len(lines)) / 2)
        width = int(self.width() - x - 24)
        text = pal.color(pal.ColorRole.WindowText)
        muted = pal.color(pal.ColorRole.PlaceholderText)
        offset = 1 if self.caps else 0
        for k, label in enumerate(lines):
            i = k - offset
            if 0 <= i < len(self.parts):
                name, allotted, used = self.parts[i]
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QColor(PART_COLORS[i % len(PART_COLORS)]))
                painter.drawRoundedRect(QRectF(x, y + 3, 12, 12), 2, 2)
                painter.setPen(QColor(WARNING) if used > allotted else text)
                painter.drawText(QPointF(x + 18, y + fm.ascent() + 2), fm.elidedText(label, Qt.TextElideMode.ElideRight, width - 18))
            else:
                verdict = i == len(self.parts)
                painter.setPen(QColor(WARNING) if verdict and not self.fits else (muted if verdict or i > 0 else text))
                painter.drawText(QPointF(x, y + fm.ascent() + 2), fm.elidedText(label, Qt.TextElideMode.ElideRight, width))
            y += line

    def part_at(self, pos: QPointF) -> int | None:
        rect, thickness = self._ring()
        c = rect.center()
        dx, dy = pos.x() - c.x(), c.y() - pos.y()
        r = math.hypot(dx, dy)
        if not (rect.width() / 2 - thickness <= r <= rect.width() / 2):
            return None
        angle = math.degrees(math.atan2(dy, dx))
        for i, (start, span) in enumerate(self._spans()):
            # spans run clockwise (negative) from `start`
            delta = (start - angle) % 360
            if 0 <= delta <= -span:
                return i
        return None

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        i = self.part_at(event.position())
        if i is None:
            QToolTip.hideText()
            return
        QToolTip.showText(event.globalPosition().toPoint(), self.tooltip_html(i), self)

    def tooltip_html(self, index: int) -> str:
        name, allotted, used = self.parts[index]
        pct = used / allotted * 100 if allotted else 0
        if self.caps:
            share = allotted / self.total * 100 if self.total else 0
            what = f"a cap of {allotted:,} tokens ({share:.1f}% of the budget; the caps add up to more than the budget)"
        else:
            share = allotted / (sum(a for _, a, _ in self.parts) or 1) * 100
            what = f"allotted {allotted:,} tokens ({share:.1f}% of the budget)"
        return f"<b>{html.escape(pretty(name))}</b><br>{what}<br>used {used:,} ({pct:.0f}%)"

    def tooltip_for(self, index: int) -> str:
        name, allotted, used = self.parts[index]
        return f"{pretty(name)}: {used:,} / {'cap ' if self.caps else ''}{allotted:,}"


def _slice(outer: QRectF, inner: QRectF, start: float, span: float) -> QPainterPath:
    path = QPainterPath()
    path.arcMoveTo(outer, start)
    path.arcTo(outer, start, span)
    path.arcTo(inner, start + span, -span)
    path.closeSubpath()
    return path
