"""Compare's difference lane: a thin band between the two strips marking the messages decided differently.

Outlining every differing segment in both strips buried them under red walls once a few hundred
messages differed; the lane says the same at a glance, in four kinds (only A sends it, only B
sends it, both send it but differently, neither sends it but they differ: dropped against summarised), on the strips' own token axis, and a click on a mark opens
the message.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Signal

from ...engine.explain import Difference
from ...engine.wording import counted
from ..safe import set_plain_tooltip
from ..theme import plot_colors
from .message_strip import MessageStrip

#: (kind, colour, legend words). Okabe and Ito's orange and sky blue, a neutral grey, and a pale one
#: for a message neither side sends (dropped by one, summarised by the other): it is not "sent".
KINDS = (("a", "#e69f00", "only A sends it"), ("b", "#56b4e9", "only B sends it"), ("both", "#8a919e", "both send it, differently"),
         ("neither", "#8a919e", "neither sends it, differently (short mark)"))
LANE_HEIGHT = 18


def kind_of(d: Difference) -> str:
    if d.a.sent and not d.b.sent:
        return "a"
    if d.b.sent and not d.a.sent:
        return "b"
    return "both" if d.a.sent else "neither"  # kept against truncated; dropped against summarised


class DiffLane(pg.PlotWidget):
    """One mark per differing message, as wide as the message on the strip's axis (x-linked to it)."""

    messageClicked = Signal(int)

    def __init__(self, strip: MessageStrip, parent: Any = None) -> None:
        background, _ = plot_colors()
        super().__init__(parent, background=background)
        self.strip = strip
        self.hideAxis("left")
        self.hideAxis("bottom")
        self.setMouseEnabled(x=True, y=False)
        self.setMenuEnabled(False)
        self.hideButtons()
        # The strip's side margins, so that the same x is the same pixel in both.
        left, _, right, _ = strip.getPlotItem().layout.getContentsMargins()
        self.getPlotItem().setContentsMargins(left, 0, right, 0)
        self.setFixedHeight(LANE_HEIGHT)
        self.setYRange(0, 1, padding=0)
        self.setXLink(strip)
        self.bars: dict[str, pg.BarGraphItem] = {}
        #: (index, kind) per differing message, in index order: what a click or hover finds.
        self.marks: list[tuple[int, str]] = []
        self.kinds: dict[int, str] = {}
        self._starts = np.zeros(0)
        self._ends = np.zeros(0)
        self.help_text = "Messages decided differently: " + "; ".join(f"{words} ({colour_name})" for (_, _, words), colour_name
                                                                        in zip(KINDS, ("orange", "blue", "grey", "grey, short"), strict=True))
        self.setToolTip(self.help_text)
        self.scene().sigMouseClicked.connect(self._clicked)
        self.scene().sigMouseMoved.connect(self._hovered)

    def set_differences(self, diffs: list[Difference]) -> None:
        for bar in self.bars.values():
            self.removeItem(bar)
        self.bars = {}
        item = self.strip.item
        ordered = sorted(diffs, key=lambda d: d.index)
        self.marks = [(d.index, kind_of(d)) for d in ordered if d.index < len(item.starts)]
        self.kinds = dict(self.marks)
        indices = np.asarray([i for i, _ in self.marks], dtype=np.int64)
        self._starts = item.starts[indices] if len(indices) else np.zeros(0)
        self._ends = self._starts + item.widths[indices] if len(indices) else np.zeros(0)
        for kind, colour, _ in KINDS:
            chosen = [k for k, (_, mark) in enumerate(self.marks) if mark == kind]
            if not chosen:
                continue
            x0 = self._starts[chosen]
            width = self._ends[chosen] - x0
            # A message too narrow to see at this zoom still gets a mark: a pen a pixel wide.
            # Neither side sends it: a short mark, as the strip draws a message not sent.
            y0, height = (0.3, 0.4) if kind == "neither" else (0.1, 0.8)
            bar = pg.BarGraphItem(x0=x0, width=width, y0=y0, height=height, brush=pg.mkBrush(colour), pen=pg.mkPen(colour, width=1))
            self.addItem(bar)
            self.bars[kind] = bar

    def index_at(self, x: float) -> int | None:
        """The differing message under `x`, or the nearest within a few pixels."""
        if not len(self._starts):
            return None
        k = int(np.searchsorted(self._starts, x, side="right")) - 1
        candidates = [j for j in (k, k + 1) if 0 <= j < len(self._starts)]
        pixel = self.getPlotItem().getViewBox().viewPixelSize()[0]

        def distance(j: int) -> float:
            return 0.0 if self._starts[j] <= x <= self._ends[j] else min(abs(x - self._starts[j]), abs(x - self._ends[j]))

        best = min(candidates, key=distance)
        return self.marks[best][0] if distance(best) <= 4 * pixel else None

    def _at(self, position: QPointF) -> int | None:
        point = self.getPlotItem().getViewBox().mapSceneToView(position)
        return self.index_at(point.x()) if isinstance(point, QPointF) else None

    def _clicked(self, event: Any) -> None:
        index = self._at(event.scenePos())
        if index is not None:
            self.messageClicked.emit(index)

    def _hovered(self, position: QPointF) -> None:
        index = self._at(position)
        if index is None:
            self.setToolTip(self.help_text)
            return
        kind = self.kinds[index]
        words = next(w for k, _, w in KINDS if k == kind)
        set_plain_tooltip(self, f"#{index}: {words} (click to open it)")


def lane_legend_html(count: int) -> str:
    """The line above the lane: how many differ, and the three colours (no session text in it)."""
    swatches = " ".join(f"<span style='color:{colour}'>{'▪' if kind == 'neither' else '■'}</span> {words}" for kind, colour, words in KINDS)
    return f"{counted(count, 'message')} decided differently: {swatches}"
