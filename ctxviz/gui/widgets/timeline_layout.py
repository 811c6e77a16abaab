"""How the Timeline tab shares its height and width: each chart's legend under it in as many
columns as fit, or beside it on a short tab; the splitter's shares until the user drags it; the
sentences under the charts at most a fifth of the tab; the x axis's words; the height the tokens
not sent peak at (`TimelineLayout` and `not_sent_height`, for widgets/timeline.py's `TimelineView`,
whose charts and labels they arrange).
"""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt

#: The legend's entries per row, and the room above the highest value (see `_room`).
LEGEND_COLUMNS = 4
#: Space around a legend entry (pyqtgraph's spacing between a sample, its text and the next column).
LEGEND_GAP = 12
#: A legend sample's width (pyqtgraph draws them 20 pixels wide).
LEGEND_SAMPLE = 20
LEGEND_ROOM = 1.1
#: The row of a PlotItem's grid under its bottom axis (pyqtgraph: title 0, top axis 1, view 2, bottom axis 3).
LEGEND_ROW = 4
#: Beside the chart (a short tab): from the title's row down, right of the right axis. From the
#: view's row (2) down, a legend of eleven entries was taller than the view and the bottom axis
#: together and pushed the x axis's words below the chart's edge at 1280x720.
LEGEND_BESIDE_ROW, LEGEND_BESIDE_COLUMN = 0, 3
#: The rows the legend beside the chart reaches over: the title, the top axis, the view, the bottom axis.
LEGEND_BESIDE_ROWS = 4
QWIDGETSIZE_MAX = (1 << 24) - 1
#: Beside a chart the legend's lines are this much closer (pixels; pyqtgraph's rows have room to spare).
LEGEND_BESIDE_SPACING = -6
#: A Timeline tab less tall than this (a 720-pixel window) puts the legends beside the charts.
SHORT_TAB = 760


def legend_columns(legend: pg.LegendItem, width: float) -> int:
    """The most columns (up to 6) whose entries fit side by side in `width` pixels. The legend fills
    its grid row by row, each column as wide as its widest entry (sample and text)."""
    if width <= 0:
        return LEGEND_COLUMNS
    # The text's own width (a LabelItem's rectangle is its cell's, as wide as the column it sits in).
    entries = [LEGEND_SAMPLE + label.item.boundingRect().width() + 2 * LEGEND_GAP for _sample, label in legend.items]
    for columns in range(min(6, max(1, len(entries))), 1, -1):
        if sum(max(entries[c::columns]) for c in range(columns)) <= width:
            return columns
    return 1


def legend_width(legend: pg.LegendItem, columns: int) -> float:
    """The pixels `legend`'s entries take in `columns` columns (each as wide as its widest entry)."""
    entries = [LEGEND_SAMPLE + label.item.boundingRect().width() + 2 * LEGEND_GAP for _sample, label in legend.items]
    return float(sum(max(entries[c::columns]) for c in range(min(columns, len(entries))))) if entries else 0.0


def legend_below(item: pg.PlotItem, columns: int, **style: Any) -> pg.LegendItem:
    """The plot's legend in a row of its own under the chart, never over it: a legend floating in
    the view covered the curves of a short chart (at 1280x720, and the lower chart at any size).
    Items plotted with a name join it as with `addLegend`."""
    legend = pg.LegendItem(offset=None, colCount=columns, **style)
    item.legend = legend
    item.layout.addItem(legend, LEGEND_ROW, 1)
    item.layout.setRowStretchFactor(LEGEND_ROW, 1)
    return legend


#: The heights (shares of the chart's) the not-sent line's peak may sit at, highest first, and
#: how far from a level line (the budget, the trigger) it must stay.
NOT_SENT_HEIGHTS = (0.8, 0.7, 0.6, 0.5)
NOT_SENT_GAP = 0.05


def not_sent_height(lines: list[float], first: float) -> float:
    """Where the tokens not sent peak on their own axis, as a share of the chart's height: `first`
    (the headroom every curve gets), else the highest of NOT_SENT_HEIGHTS clear of every level
    line. Both axes with the same headroom put the not-sent line's plateau after a compaction
    exactly on the budget line (Claude Code's sample: one dashed line over the other)."""
    for height in (first, *NOT_SENT_HEIGHTS):
        if all(abs(height - line) >= NOT_SENT_GAP for line in lines):
            return height
    return first


#: The x axis of the replay, per step rule (`engine.steps`): a point per request, placed at its last message.
STEP_AXIS = {"calls": "message index: a point per model call the log records (the request's last message)",
             "replies": "message index: a point per request before an assistant reply (its last message)",
             "messages": "turn (message index)"}
#: The same, in fewer words, under a chart narrowed by the legend beside it (the long one was cut to "essage index").
STEP_AXIS_SHORT = {"calls": "message index (a point per model call)", "replies": "message index (a point per reply)",
                   "messages": "turn (message index)"}


class TimelineLayout:
    """The layout half of `TimelineView` (its `plot`, `answers_plot`, `calls_box`, `split`, `words`
    and `timeline`)."""

    plot: pg.PlotWidget
    answers_plot: pg.PlotWidget
    calls_box: Any
    split: Any
    words: Any
    timeline: Any
    _split_moved: bool
    #: Drawn as a picture (a report), not used: the sentences under the charts take the height they need.
    still: bool

    def _split_dragged(self, *_: object) -> None:
        self._split_moved = True

    def _fit_words(self) -> None:
        """Every line of the sentences in the scroll area (wrapped labels asked their height for the
        width they get), the area itself at most a fifth of the tab (four lines on a short tab)."""
        inner = self.words.widget()
        width = self.words.viewport().width() if self.words.viewport().width() > 50 else max(50, self.width() - 20)
        needed = inner.layout().heightForWidth(width)
        needed = needed if needed > 0 else inner.sizeHint().height()
        inner.setMinimumHeight(needed)
        line = self.fontMetrics().lineSpacing()
        if self.still:  # a picture cannot scroll: every line shown
            self.words.setMinimumHeight(needed + 4)
            self.words.setMaximumHeight(needed + 4)
            return
        # On a short tab four lines, the rest scrolls: the charts need the height more.
        room = 4 * line + 8 if self.height() < SHORT_TAB else max(4 * line + 8, int(self.height() * 0.2))
        self.words.setMaximumHeight(min(needed + 4, room))
        self.words.setMinimumHeight(min(needed + 4, 4 * line + 8))

    def _lay_out_legend(self) -> None:
        """The legend under the chart, in as many columns as the width holds (fewer rows: more chart):
        as many of its widest entry as fit under the chart (a fixed 240 pixels a column ran Codex's
        "trigger (model_auto_compact_token_limit, model_context_window)" and the entries after it
        off the chart's right edge). On a short tab (720 pixels) the legend's rows under the chart
        left it 0-40 pixels of data: there both legends go beside their charts, as wide as each
        other, so a turn stays at the same x in both."""
        beside = self.legends_beside()
        plots = [plot for plot in (self.plot, self.answers_plot) if plot.getPlotItem().legend is not None and plot.getPlotItem().legend.items]
        width = 0.0
        for plot in plots:
            item = plot.getPlotItem()
            legend = item.legend
            cell = (LEGEND_BESIDE_ROW, LEGEND_BESIDE_COLUMN) if beside else (LEGEND_ROW, 1)
            if getattr(legend, "cell", None) != cell:
                item.layout.removeItem(legend)
                # Beside, it reaches from the title's row down to the bottom axis's: more room for the data.
                item.layout.addItem(legend, *cell, *((LEGEND_BESIDE_ROWS, 1) if beside else (1, 1)))
                item.layout.setRowStretchFactor(LEGEND_ROW, 0 if beside else 1)
                legend.cell = cell
            legend.layout.setVerticalSpacing(LEGEND_BESIDE_SPACING if beside else 0)
            columns = 1 if beside else legend_columns(legend, self._chart_width(plot))
            if legend.columnCount != columns:
                legend.setColumnCount(columns)
        self._label_x_axis()
        if beside:  # as wide as each other: a turn at the same x in both charts
            width = max(legend_width(plot.getPlotItem().legend, plot.getPlotItem().legend.columnCount) for plot in plots)
        for plot in plots:
            item = plot.getPlotItem()
            item.legend.setMinimumWidth(width)
            item.legend.setMaximumWidth(width if beside else QWIDGETSIZE_MAX)
            # Beside a tall chart its cell is taller than the entries: they stay as tall as their
            # lines, at the top (stretched over the cell, each label sat a row's height above its sample).
            item.legend.setMaximumHeight(item.legend.layout.preferredHeight() + 2 if beside else QWIDGETSIZE_MAX)
            item.layout.setAlignment(item.legend, Qt.AlignmentFlag.AlignTop if beside else Qt.AlignmentFlag(0))
            # The chart as wide as its widget again: a legend laid out wider a moment before (four
            # columns under the chart) raised the chart's least width, and it kept that width
            # (951 pixels in a 748-pixel widget, its legend off the right edge) until the next resize.
            whole = QRectF(0, 0, plot.width(), plot.height())
            if item.geometry() != whole:
                item.setGeometry(whole)
        # The shares of the height once the legends are where they go: beside, the tokens chart is
        # at least as tall as its legend (measured, not estimated from its entries).
        self._fit_split()

    def _fit_split(self) -> None:
        """The charts' and the calls' shares of the height, until the user drags the splitter: the
        tokens chart the most, the answers and the calls at least a usable few rows each (sized by
        their hints, the tokens chart got 174 of 440 pixels at 1024x700, less than its legend)."""
        if self._split_moved or not all(w.isVisible() for w in (self.plot, self.answers_plot, self.calls_box)):
            return
        total = sum(self.split.sizes())
        if total <= 0:
            return
        beside = self.legends_beside()
        answers = max(self.answers_plot.minimumHeight(), int(total * 0.22), self._legend_height(self.answers_plot) if beside else 0)
        chart = self._legend_height(self.plot) if beside else 0
        # The calls their quarter, less what the tokens chart's legend needs beside it (down to their least).
        calls = max(self.calls_box.minimumHeight(), min(int(total * 0.25), total - answers - chart))
        sizes = [max(1, total - answers - calls), answers, calls]
        if sizes != self.split.sizes():
            self.split.setSizes(sizes)

    def legends_beside(self) -> bool:
        """Whether the legends go beside the charts: on a tab shorter than `SHORT_TAB` pixels (a
        720-pixel window), where their rows under the charts left the tokens chart 0-40 pixels of
        data. (The tab's height decides, never where the legend is: it does not flip back and forth.)"""
        legend = self.plot.getPlotItem().legend
        return legend is not None and bool(legend.items) and 0 < self.height() < SHORT_TAB

    def _legend_height(self, plot: pg.PlotWidget) -> int:
        """The height a chart needs for its legend beside it, in one column from the title's row
        down: the legend's own height once it is there (an estimate from its entries was 30 pixels
        short of Codex's eleven, and the x axis's words went below the chart's edge)."""
        item = plot.getPlotItem()
        legend = item.legend
        if legend is None or not legend.items:
            return 0
        if getattr(legend, "cell", None) == (LEGEND_BESIDE_ROW, LEGEND_BESIDE_COLUMN):
            return int(legend.layout.preferredHeight()) + 4
        line = max(label.item.boundingRect().height() for _sample, label in legend.items) + LEGEND_BESIDE_SPACING
        return int(len(legend.items) * line + 20)

    def _chart_width(self, plot: pg.PlotWidget) -> float:
        """The width the legend has under a chart: the chart's, else the widget's less the axes'."""
        view = plot.getPlotItem().vb.width()
        return view if view > 100 else max(0.0, self.width() - 140.0)

    def _room(self) -> float:
        """How far above the highest value the y range reaches. The legend sits under the chart, in
        a row of its own (`legend_below`): at any height it covers no curve, so a little headroom
        for the compactions' labels is all the range needs."""
        return LEGEND_ROOM

    def _label_x_axis(self) -> None:
        """The x axis says what a point is, in fewer words when the legend sits beside the chart."""
        if self.timeline is None:
            return
        words = STEP_AXIS_SHORT if self.legends_beside() else STEP_AXIS
        label = words.get(self.timeline.step_rule, words["messages"])
        if self.plot.getAxis("bottom").labelText != label:
            self.plot.setLabel("bottom", label)
