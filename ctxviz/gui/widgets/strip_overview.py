"""The strip's overview: the whole session in a thin band, with the strip's view as a window to drag.

Zoomed into 40 messages of 100,000, a user still sees where they are, where the cut is, and can
drag the window (or click anywhere in the band) to go elsewhere. The band paints the strip's own
segments (it shares the strip's arrays, nothing is recomputed) at one rectangle per pixel column.
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt

from ..theme import plot_colors
from .message_strip import MessageStrip, move_line
from .strip_item import StripItem

#: The overview's height in pixels: enough to tell colours apart, little taken from the strip.
OVERVIEW_HEIGHT = 22


class StripOverview(pg.PlotWidget):
    """A band under the strip: every segment, the cut, and the strip's visible range as a region."""

    def __init__(self, strip: MessageStrip, parent: Any = None) -> None:
        background, foreground = plot_colors()
        super().__init__(parent, background=background)
        self.strip = strip
        self.hideAxis("left")
        self.hideAxis("bottom")
        self.setMouseEnabled(x=False, y=False)
        self.setMenuEnabled(False)
        self.hideButtons()
        self.getPlotItem().setContentsMargins(0, 0, 0, 0)
        self.setFixedHeight(OVERVIEW_HEIGHT)
        self.setYRange(0, 1, padding=0.08)
        self.item = StripItem()
        self.addItem(self.item)
        self.cut_line = pg.InfiniteLine(pos=0, angle=90, pen=pg.mkPen("#d62728", width=2))
        self.cut_line.setVisible(False)
        self.addItem(self.cut_line)
        shade = pg.mkColor(foreground)
        shade.setAlpha(45)
        edge = pg.mkColor(foreground)
        edge.setAlpha(200)
        self.window = pg.LinearRegionItem((0, 1), brush=pg.mkBrush(shade), pen=pg.mkPen(edge, width=2), swapMode="block")
        self.window.setZValue(10)
        self.addItem(self.window)
        self.setToolTip("The whole session: drag the window (or click) to move the strip's view; drag its edges to zoom.")
        self._syncing = False
        self._drawn: tuple[object, ...] = ()  # what the band mirrors now
        self._width = -1.0  # the extent the band and the window's bounds were set to
        self.window.sigRegionChanged.connect(self._window_moved)
        strip.getPlotItem().getViewBox().sigXRangeChanged.connect(self._strip_moved)
        strip.drawn.connect(self.refresh)
        self.scene().sigMouseClicked.connect(self._clicked)

    def refresh(self) -> None:
        """Mirror the strip's segments and cut (after each of its re-plans; one that moved no
        segment and no cut costs nothing here)."""
        source, cut = self.strip.item, self.strip.cut_line
        key = (id(source.starts), id(source.styles), source.decisions, cut.isVisible(), cut.value())
        if key == self._drawn:
            return
        self._drawn = key
        self.item.mirror(source)
        width = self.item._bounds.width()
        # A re-plan of the same session keeps the band's extent and the window's bounds (setting
        # them again moved both of the window's edges, each placed and repainted anew).
        if width != self._width:
            self._width = width
            self.setXRange(0, width, padding=0)
            self.window.setBounds((0, width))
        self.cut_line.setVisible(cut.isVisible())
        if cut.isVisible():
            move_line(self.cut_line, cut.value())
        self._strip_moved()

    def _strip_moved(self, *_: Any) -> None:
        if self._syncing:
            return
        x0, x1 = self.strip.getPlotItem().getViewBox().viewRange()[0]
        self._syncing = True
        try:
            self.window.setRegion((max(x0, 0.0), min(x1, self.item._bounds.width())))
        finally:
            self._syncing = False

    def _window_moved(self) -> None:
        if self._syncing:
            return
        x0, x1 = self.window.getRegion()
        if x1 <= x0:
            return
        self._syncing = True
        try:
            self.strip.setXRange(x0, x1, padding=0)
        finally:
            self._syncing = False

    def centre_on(self, x: float) -> None:
        """Move the strip's view (its width unchanged) to centre on `x`, within the session."""
        x0, x1 = self.window.getRegion()
        half = (x1 - x0) / 2
        end = self.item._bounds.width()
        centre = min(max(x, half), max(end - half, half))
        self.window.setRegion((centre - half, centre + half))

    def _clicked(self, event: Any) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        point = self.getPlotItem().getViewBox().mapSceneToView(event.scenePos())
        if isinstance(point, QPointF):
            self.centre_on(point.x())
