"""The message strip: every message a segment sized by its tokens and coloured by category.

One graphics item paints all segments (batched rectangles per style, only the visible range), so
10,000 messages stay fluid under zoom and pan. Dropped messages are faint and short, summarised ones
hatched, truncated ones partly filled to what was sent, replaced ones outlined.
"""

from __future__ import annotations

import bisect

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QPainter, QPen, QPicture

from ...engine.plan import Decision, Plan
from ...engine.session import Session
from ..theme import CATEGORY_COLORS, plot_colors

ROW_TOP, ROW_HEIGHT = 0.0, 1.0


class StripItem(pg.GraphicsObject):
    """All segments in one item; x is cumulative tokens (or message index), y in [0, 1]."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[float] = []
        self.widths: list[float] = []
        self.decisions: list[Decision] = []
        self.categories: list[str] = []
        self.fractions: list[float] = []
        self.highlight: set[int] = set()
        self.selected: int | None = None
        self._picture: QPicture | None = None
        self._bounds = QRectF(0, 0, 1, 1)

    def set_data(self, plan: Plan, by_tokens: bool, highlight: set[int] | None = None) -> None:
        self.starts, self.widths, self.decisions, self.categories, self.fractions = [], [], [], [], []
        x = 0.0
        for m in plan.messages:
            width = float(max(m.tokens, 1)) if by_tokens else 1.0
            self.starts.append(x)
            self.widths.append(width)
            self.decisions.append(m.decision)
            self.categories.append(str(m.category))
            self.fractions.append(min(1.0, m.sent_tokens / m.tokens) if m.tokens else 1.0)
            x += width
        self.highlight = highlight or set()
        self.prepareGeometryChange()
        self._bounds = QRectF(0, 0, max(x, 1.0), 1.0)
        self._picture = None
        self.update()

    def index_at(self, x: float) -> int | None:
        if not self.starts or x < 0:
            return None
        i = bisect.bisect_right(self.starts, x) - 1
        return i if 0 <= i < len(self.starts) and x <= self.starts[i] + self.widths[i] else None

    def set_selected(self, index: int | None) -> None:
        self.selected = index
        self._picture = None
        self.update()

    def _render(self) -> QPicture:
        picture = QPicture()
        painter = QPainter(picture)
        groups: dict[tuple[str, Decision], list[QRectF]] = {}
        partial: list[tuple[str, QRectF]] = []
        for x, w, d, c, f in zip(self.starts, self.widths, self.decisions, self.categories, self.fractions, strict=True):
            if d is Decision.DROPPED:
                rect = QRectF(x, 0.3, w, 0.4)
            else:
                rect = QRectF(x, 0.0, w, 1.0)
            groups.setdefault((c, d), []).append(rect)
            if d is Decision.TRUNCATED:
                partial.append((c, QRectF(x, 0.0, w * f, 1.0)))
        cosmetic = QPen(QColor(0, 0, 0, 0))
        for (category, decision), rects in groups.items():
            color = QColor(CATEGORY_COLORS.get(category, "#b0b0b0"))
            if decision is Decision.DROPPED:
                color.setAlpha(60)
                painter.setPen(cosmetic)
                painter.setBrush(QBrush(color))
            elif decision is Decision.SUMMARIZED:
                faint = QColor(color)
                faint.setAlpha(90)
                painter.setPen(cosmetic)
                painter.setBrush(QBrush(faint))
                painter.drawRects(rects)
                painter.setBrush(QBrush(color, Qt.BrushStyle.BDiagPattern))
            elif decision is Decision.TRUNCATED:
                faint = QColor(color)
                faint.setAlpha(80)
                painter.setPen(cosmetic)
                painter.setBrush(QBrush(faint))
            elif decision is Decision.REPLACED:
                faint = QColor(color)
                faint.setAlpha(110)
                pen = QPen(color.darker(140))
                pen.setCosmetic(True)
                pen.setWidth(2)
                painter.setPen(pen)
                painter.setBrush(QBrush(faint))
            else:
                painter.setPen(cosmetic)
                painter.setBrush(QBrush(color))
            painter.drawRects(rects)
        for category, rect in partial:
            painter.setPen(cosmetic)
            painter.setBrush(QBrush(QColor(CATEGORY_COLORS.get(category, "#b0b0b0"))))
            painter.drawRect(rect)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for i in sorted(self.highlight):
            outline = QPen(QColor("#d62728"))
            outline.setCosmetic(True)
            outline.setWidth(2)
            painter.setPen(outline)
            painter.drawRect(QRectF(self.starts[i], -0.08, self.widths[i], 1.16))
        if self.selected is not None and 0 <= self.selected < len(self.starts):
            sel = QPen(QColor("#ff2d95"))
            sel.setCosmetic(True)
            sel.setWidth(3)
            painter.setPen(sel)
            painter.drawRect(QRectF(self.starts[self.selected], -0.12, self.widths[self.selected], 1.24))
        painter.end()
        return picture

    def paint(self, painter: QPainter, *args) -> None:
        if self._picture is None:
            self._picture = self._render()
        self._picture.play(painter)

    def boundingRect(self) -> QRectF:  # noqa: N802
        return QRectF(self._bounds.x(), -0.2, self._bounds.width(), 1.4)


class MessageStrip(pg.PlotWidget):
    """The strip with its markers: fresh-tail boundary, the cut, the summarised span."""

    messageClicked = Signal(int)

    def __init__(self, parent=None) -> None:
        background, foreground = plot_colors()
        super().__init__(parent, background=background)
        self.by_tokens = True
        self.item = StripItem()
        self.addItem(self.item)
        self.setMouseEnabled(x=True, y=False)
        self.hideAxis("left")
        self.getAxis("bottom").setLabel("cumulative tokens")
        self.getAxis("bottom").setPen(foreground)
        self.getAxis("bottom").setTextPen(foreground)
        self.setYRange(-0.25, 1.6, padding=0)
        self.setMinimumHeight(120)
        self.getPlotItem().getViewBox().setLimits(yMin=-0.3, yMax=1.7)
        self.markers: list[pg.GraphicsObject] = []
        self.plan: Plan | None = None
        self.scene().sigMouseClicked.connect(self._clicked)
        self.setToolTip("Each segment is one message, as wide as its tokens. Scroll to zoom, drag to pan, click to select.")

    def set_plan(self, session: Session | None, plan: Plan | None, highlight: set[int] | None = None) -> None:
        self.plan = plan
        for marker in self.markers:
            self.removeItem(marker)
        self.markers = []
        if plan is None:
            return
        self.item.set_data(plan, self.by_tokens, highlight)
        self._add_markers(plan)
        width = self.item._bounds.width()
        self.setXRange(0, width, padding=0.01)
        self.getPlotItem().getViewBox().setLimits(xMin=-width * 0.05, xMax=width * 1.05)
        self.getAxis("bottom").setLabel("cumulative tokens" if self.by_tokens else "message index")

    def _x_of(self, index: int) -> float:
        return self.item.starts[index] if index < len(self.item.starts) else self.item._bounds.width()

    def _add_markers(self, plan: Plan) -> None:
        _, foreground = plot_colors()
        zones = [m.zone for m in plan.messages]
        protected = next((i for i, z in enumerate(zones) if z in ("fresh_tail", "recent")), None)
        if protected is not None:
            self._line(self._x_of(protected), "protected tail ▸", foreground, 0.78)
        cut = plan.extra.get("cut_index")
        if cut is not None and cut < len(plan.messages):
            self._line(self._x_of(cut) + self.item.widths[cut], "cut ▸", "#d62728", 0.95)
        summarized = [m.index for m in plan.messages if m.decision is Decision.SUMMARIZED]
        if summarized:
            region = pg.LinearRegionItem((self._x_of(summarized[0]), self._x_of(summarized[-1]) + self.item.widths[summarized[-1]]),
                                         movable=False, brush=pg.mkBrush(23, 190, 207, 40), pen=pg.mkPen("#17becf"))
            region.setZValue(-10)
            self.addItem(region)
            label = pg.TextItem("summarised", color="#17becf", anchor=(0, 0))
            label.setPos(self._x_of(summarized[0]), 1.55)
            self.addItem(label)
            self.markers += [region, label]

    def _line(self, x: float, text: str, color: str, position: float) -> None:
        # The label ends at the line (anchored on its right), so it is never clipped at the far end.
        line = pg.InfiniteLine(pos=x, angle=90, pen=pg.mkPen(color, width=2, style=Qt.PenStyle.DashLine),
                               label=text, labelOpts={"position": position, "color": color, "anchors": [(1, 0.5), (1, 0.5)]})
        self.addItem(line)
        self.markers.append(line)

    def select(self, index: int | None) -> None:
        self.item.set_selected(index)

    def set_by_tokens(self, by_tokens: bool) -> None:
        self.by_tokens = by_tokens
        if self.plan is not None:
            self.set_plan(None, self.plan, self.item.highlight)

    def _clicked(self, event) -> None:
        if self.plan is None:
            return
        point = self.getPlotItem().getViewBox().mapSceneToView(event.scenePos())
        if not isinstance(point, QPointF):
            return
        index = self.item.index_at(point.x())
        if index is not None:
            self.messageClicked.emit(index)
