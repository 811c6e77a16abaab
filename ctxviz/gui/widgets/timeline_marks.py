"""The compactions the log records, on the Timeline tab's tokens chart: a dashed line at the turn
each is first in force at, its label on the side with room and clear of the others, and a tick at
the tokens it had before (`CompactionMarks`, mixed into widgets/timeline.py's `TimelineView`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor

from ...engine.session import Compaction
from ...engine.simulate import Timeline
from ..safe import finite, plot_values, set_plain_tooltip, short_number

#: The compactions the log records (the real agent's), apart from the replay's own events.
RECORDED_COMPACTION_COLOR = "#8c564b"
RECORDED_COMPACTION_NAME = "compaction in the log (tokens before)"
#: The width in pixels of that tick, centred on the compaction's line.
TICK_SIZE = 26
#: Where a compaction's label hangs on its line (0: the chart's bottom, 1: its top).
LABEL_POSITION = 0.9
#: A compaction's line and label are drawn above the curves (pyqtgraph stacks a plot's items from 0 up).
LABEL_Z = 50
#: A trigger quoted from the file is cut to this many characters in the chart (the tooltip has it whole).
TRIGGER_CHARS = 24


def label_anchors(x: float, timeline: Timeline) -> list[tuple[float, float]]:
    """Where a compaction's label sits: right of its line, or left of it when the line is in the
    right half of the turns (a label right of a line at the last turn ran off the chart:
    "compacted (manua")."""
    first, last = min(timeline.turns[0].index, x), max(timeline.turns[-1].index, x)
    # Hanging from its point (its top there), not centred on it: on a short chart a centred label's
    # first line ran above the chart.
    side = (1.0, 0.0) if last > first and x > (first + last) / 2 else (0.0, 0.0)
    return [side, side]


class CompactionMarks:
    """The compaction half of `TimelineView` (its `plot`, `background`, `foreground` and
    `compaction_marks`)."""

    plot: pg.PlotWidget
    background: str
    foreground: str
    compaction_marks: list[tuple[Compaction, pg.InfiniteLine, pg.PlotDataItem]]
    #: The chart's data (view coordinates: x values, y values), which a label keeps off where it can.
    curves: list[tuple[np.ndarray, np.ndarray]] = []

    def _place_compaction_labels(self) -> None:
        """Each compaction's label on the side of its line with room for it, in pixels (by the turn
        alone, a label right of a line in the left half still ran off a chart narrowed by its
        legend: "compacted (manu")."""
        vb = self.plot.getPlotItem().vb
        box = vb.sceneBoundingRect()
        left, right = box.left(), box.right()
        # Every tick is in place before any label: a label right of its line ran over the next
        # compaction's tick on a narrow chart. And the budget's and the trigger's lines: the
        # trigger ran through "209,950 tokens" on a real Codex log.
        placed = [self._tick_rect(c, line.value()) for c, line, _tick in self.compaction_marks if c.pre_tokens]
        for y in self.flat_lines():
            at = vb.mapViewToScene(QPointF(0, y)).y()
            if box.top() <= at <= box.bottom():
                placed.append(QRectF(left, at - 1.5, right - left, 3))
        lines = self.scene_lines()
        for _c, line, _tick in sorted(self.compaction_marks, key=lambda mark: mark[1].value()):
            label = getattr(line, "label", None)
            if label is None:
                continue
            x = vb.mapViewToScene(QPointF(line.value(), 0)).x()
            # Clear of the tick at the tokens before (it is centred on the line, and near the top it
            # hid the label's first letter: "ompacted (manual)"), so shifted by half of it.
            text_width = max(1.0, label.boundingRect().width())
            shift = (TICK_SIZE / 2 + 3) / text_width
            width = text_width + TICK_SIZE / 2 + 7
            room_right, room_left = right - x, x - left
            side = (-shift, 0.0) if room_right >= width or room_right >= room_left else (1.0 + shift, 0.0)
            if label.anchors[0] != side:
                label.anchors = [side, side]
                label.updatePosition()
            self._clear_of(label, placed, box.height(), lines)

    def scene_lines(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The chart's lines (`curves`, in the tokens chart's view) in scene coordinates: each
        view's mapping is affine, so two points give it, for any number of turns."""
        return [scene_line(self.plot.getPlotItem().vb, xs, ys) for xs, ys in self.curves]

    def flat_lines(self) -> list[float]:
        """The heights (tokens) of the chart's level lines a label must stay clear of (`TimelineView`'s)."""
        return []

    def _tick_rect(self, c: Compaction, x: float) -> QRectF:
        """Where a compaction's tick at its tokens before is drawn, in the scene."""
        at = self.plot.getPlotItem().vb.mapViewToScene(QPointF(x, c.pre_tokens))
        return QRectF(at.x() - TICK_SIZE / 2, at.y() - 2, TICK_SIZE, 4)

    @staticmethod
    def _clear_of(label: pg.InfLineLabel, placed: list[QRectF], height: float,
                  lines: Sequence[tuple[np.ndarray, np.ndarray]] = ()) -> None:
        """Lower a compaction's label down its line until it covers none placed before it (two
        compactions a few calls apart wrote their sizes over each other) and none of the chart's
        lines (at the top of a chart zoomed to its data, "26,239 → 1,442 tokens" hid the last
        calls the provider reported; elsewhere the tokens not sent), then count it placed. Where
        no place is clear of both, the highest clear of the others (over the data, on its fill),
        else the lowest."""
        def covers(rect: QRectF) -> bool:
            return any(line_crosses(xs, ys, rect.adjusted(-2, -2, 2, 2)) for xs, ys in lines)

        position = LABEL_POSITION
        if label.orthoPos != position:
            label.setPosition(position)
        rect = label.sceneBoundingRect()
        step = (rect.height() + 2) / max(1.0, height)
        first_clear = None  # the highest place clear of the others (where it went before points counted)
        while True:
            if not any(rect.intersects(other) for other in placed):
                if not covers(rect):
                    break
                first_clear = position if first_clear is None else first_clear
            if position - step < step:  # (it hangs from its point) out of room
                if first_clear is not None and first_clear != position:
                    label.setPosition(first_clear)
                    rect = label.sceneBoundingRect()
                break
            position -= step
            label.setPosition(position)
            rect = label.sceneBoundingRect()
        placed.append(rect)

    @staticmethod
    def compaction_text(c: Compaction) -> str:
        """The whole description of a compaction the log records (the trigger quoted from the file)."""
        sizes = f"{c.pre_tokens:,} -> {c.post_tokens:,} tokens" if c.post_tokens else (f"{c.pre_tokens:,} tokens before" if c.pre_tokens else "")
        trigger = f" ({c.trigger})" if c.trigger else ""
        return f"the agent compacted its context before #{c.before_index}{trigger}" + (f": {sizes}" if sizes else "")

    @staticmethod
    def compaction_step(timeline: Timeline, c: Compaction) -> int | None:
        """The step a compaction the log records is first in force at (None: after the last step):
        the first request made after it, which is the answer #before_index's when that is a reply."""
        k = timeline.step_after(c.before_index)
        return k if k < len(timeline.turns) else None

    @classmethod
    def compaction_x(cls, timeline: Timeline, c: Compaction) -> int:
        """Where a compaction's line is drawn: the turn it is first in force at, else where it was recorded."""
        step = cls.compaction_step(timeline, c)
        return timeline.turns[step].index if step is not None else c.before_index

    def _mark_compactions(self, timeline: Timeline) -> None:
        """Each compaction the log records: a dashed line at the turn it is first in force at (the
        first request made after it), labelled with its trigger and sizes, and a short tick at the
        tokens it had before, against the replay."""
        color = RECORDED_COMPACTION_COLOR
        named = False
        for c in timeline.session.compactions:
            x = self.compaction_x(timeline, c)
            trigger = c.trigger if len(c.trigger) <= TRIGGER_CHARS else c.trigger[: TRIGGER_CHARS - 1] + "…"
            sizes = f"{short_number(c.pre_tokens)} → {short_number(c.post_tokens)}" if c.post_tokens else short_number(c.pre_tokens) if c.pre_tokens else ""
            label = "compacted" + (f" ({trigger})" if trigger else "") + (f"\n{sizes} tokens" if sizes else "")
            # InfLineLabel formats its text with str.format: braces from the file must stay literal.
            label = label.replace("{", "{{").replace("}", "}}")
            line = pg.InfiniteLine(pos=finite(x), angle=90, pen=pg.mkPen(color, width=1, style=Qt.PenStyle.DashLine),
                                   label=label, labelOpts={"position": LABEL_POSITION, "color": self.foreground, "anchors": label_anchors(x, timeline),
                                                         "fill": pg.mkBrush(self._label_fill())})
            set_plain_tooltip(line, self.compaction_text(c))
            self.plot.addItem(line)
            # Above the curves and the level lines: where a label cannot move clear of one, its fill hides the line.
            line.setZValue(LABEL_Z)
            tick = pg.PlotDataItem()
            if c.pre_tokens:
                tick = self.plot.plot(plot_values([x]), plot_values([c.pre_tokens]), pen=None, symbol="_", symbolSize=TICK_SIZE,
                                      symbolPen=pg.mkPen(color, width=3), symbolBrush=color, name=None if named else RECORDED_COMPACTION_NAME)
                set_plain_tooltip(tick, self.compaction_text(c))
                named = True
            self.compaction_marks.append((c, line, tick))

    def _label_fill(self) -> QColor:
        """The plot's background, nearly opaque: a label stays legible over the budget line or a curve."""
        fill = QColor(self.background)
        fill.setAlpha(220)
        return fill


def scene_line(vb: pg.ViewBox, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A line's points mapped from `vb`'s view to the scene (an affine map: two points give it)."""
    origin, unit = vb.mapViewToScene(QPointF(0, 0)), vb.mapViewToScene(QPointF(1, 1))
    return origin.x() + xs * (unit.x() - origin.x()), origin.y() + ys * (unit.y() - origin.y())


def line_crosses(xs: np.ndarray, ys: np.ndarray, rect: QRectF) -> bool:
    """Whether the line through the points (x increasing) passes through `rect`: over the rect's
    width the line takes every height between its lowest and highest there (it is continuous)."""
    if len(xs) == 0:
        return False
    left, right = max(rect.left(), float(xs[0])), min(rect.right(), float(xs[-1]))
    if left > right:
        return False
    inside = (xs > left) & (xs < right)
    heights = [float(np.interp(left, xs, ys)), float(np.interp(right, xs, ys)), *ys[inside].tolist()]
    return max(heights) >= rect.top() and min(heights) <= rect.bottom()
