"""The timeline: context tokens per turn (the summarisation sawtooth) with events, and a turn slider.

Every plotted number goes through `safe.plot_values` (finite, within +-1e15): a provider's usage or
a budget of 10**20 tokens, turned into a numpy object array, crashed pyqtgraph. The turn label
states the exact figures whatever the chart can draw.
"""

from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QSizePolicy, QSlider, QVBoxLayout, QWidget

from ...engine.simulate import Timeline
from ..safe import PLOT_LIMIT, clipped, finite, plain_label, plot_values, qt_int, short_number
from ..theme import plot_colors

EVENT_COLORS = {"summary": "#17becf", "consolidation": "#9467bd", "compaction": "#2ca02c", "hard_threshold": "#d62728",
                "emergency_truncation": "#ff7f0e", "trim": "#bcbd22", "overflow": "#d62728"}


class TimelineView(QWidget):
    turnChanged = Signal(int)
    simulateRequested = Signal()
    latestRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        background, self.foreground = plot_colors()
        self.plot = pg.PlotWidget(background=background)
        self.plot.setLabel("left", "tokens sent")
        self.plot.setLabel("bottom", "turn (message index)")
        self.plot.getAxis("left").setWidth(70)
        for axis in ("left", "bottom"):
            self.plot.getAxis(axis).setPen(self.foreground)
            self.plot.getAxis(axis).setTextPen(self.foreground)
        # Opaque, so the budget line or the curve never runs through the legend's text.
        legend_pen = QColor(self.foreground)
        legend_pen.setAlpha(90)
        self.plot.addLegend(offset=(10, 10), labelTextColor=self.foreground, brush=pg.mkBrush(background), pen=pg.mkPen(legend_pen))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setEnabled(False)
        self.slider.valueChanged.connect(self._moved)
        self.label = plain_label("Simulate to replay the session turn by turn.")  # event messages quote the session
        self.label.setWordWrap(True)
        # However long a turn's description (events, a 300-digit budget), it never widens the window.
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.run = QPushButton("Simulate")
        self.run.clicked.connect(self.simulateRequested)
        self.latest = QPushButton("Back to latest")
        self.latest.clicked.connect(self.latestRequested)
        row = QHBoxLayout()
        row.addWidget(self.run)
        row.addWidget(self.slider, 1)
        row.addWidget(self.latest)
        layout = QVBoxLayout(self)
        layout.addWidget(self.plot, 1)
        layout.addLayout(row)
        layout.addWidget(self.label)
        self.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen(self.foreground, width=1))
        self.timeline: Timeline | None = None

    def set_timeline(self, timeline: Timeline | None) -> None:
        self.plot.clear()
        self.timeline = timeline
        if timeline is None or not timeline.turns:
            self.slider.setEnabled(False)
            self.label.setText("Simulate to replay the session turn by turn.")
            return
        xs = plot_values(t.index for t in timeline.turns)
        self.plot.plot(xs, plot_values(t.tokens_sent for t in timeline.turns), pen=pg.mkPen("#1f77b4", width=2), name="tokens sent")
        self.plot.plot(xs, plot_values(t.budget for t in timeline.turns), pen=pg.mkPen("#888888", width=1, style=Qt.PenStyle.DashLine), name="budget")
        reported = self.reported_usage(timeline)
        if reported:
            # What the provider billed for each call (Claude Code's ground truth), against the replay.
            # A single point gets no line (an empty path is invalid SVG in the report).
            line = pg.mkPen("#ff7f0e", width=1, style=Qt.PenStyle.DotLine) if len(reported) > 1 else None
            self.plot.plot(plot_values(i for i, _ in reported), plot_values(v for _, v in reported), pen=line,
                           symbol="o", symbolSize=4, symbolPen=None, symbolBrush="#ff7f0e", name="reported by the provider")
        by_kind: dict[str, tuple[list[int], list[int]]] = {}
        for t in timeline.turns:
            for e in t.events:
                if e.kind == "overflow":
                    continue
                by_kind.setdefault(e.kind, ([], []))
                by_kind[e.kind][0].append(t.index)
                by_kind[e.kind][1].append(t.tokens_sent)
        for kind, (ex, ey) in by_kind.items():
            # Legend names are drawn as HTML by pyqtgraph.
            self.plot.plot(plot_values(ex), plot_values(ey), pen=None, symbol="t", symbolSize=11,
                           symbolBrush=EVENT_COLORS.get(kind, "#ff7f0e"), name=html.escape(kind.replace("_", " ")))
        self.plot.addItem(self.cursor)
        self._fit_range(timeline, reported)
        self.slider.setEnabled(True)
        self.slider.blockSignals(True)
        self.slider.setRange(0, qt_int(len(timeline.turns) - 1, 0))
        self.slider.setValue(qt_int(len(timeline.turns) - 1, 0))
        self.slider.blockSignals(False)
        self._describe(len(timeline.turns) - 1)

    @staticmethod
    def reported_usage(timeline: Timeline) -> list[tuple[int, int]]:
        """(message index, input + cache tokens) for every message whose log carries the provider's usage."""
        return [(m.index, m.usage.window_fill) for m in timeline.session.messages if m.usage is not None and m.usage.window_fill]

    def _fit_range(self, timeline: Timeline, reported: list[tuple[int, int]]) -> None:
        """Scale to the sawtooth (and what the provider reported); a budget far above it would
        flatten the teeth, so it is then noted in the title instead (pan or zoom out to see it)."""
        values = [t.tokens_sent for t in timeline.turns] + [v for _, v in reported]
        exact_peak = max(values)
        exact_budget = max(t.budget for t in timeline.turns)
        peak, budget = finite(exact_peak), finite(exact_budget)
        notes = []
        if budget > 2.5 * peak > 0:
            top = peak * 1.15
            notes.append(f"budget {short_number(exact_budget)} tokens, above the chart")
        else:
            top = max(peak, budget, 1.0) * 1.08
        if clipped(values + [exact_budget]):
            notes.append(f"values beyond {short_number(int(PLOT_LIMIT))} tokens drawn at that height")
        self.plot.setYRange(0, top, padding=0)
        self.plot.setTitle(html.escape("; ".join(notes)) if notes else None, color=self.foreground, size="9pt")
        self.plot.setXRange(finite(timeline.turns[0].index), finite(timeline.turns[-1].index), padding=0.02)

    def _describe(self, turn: int) -> None:
        if self.timeline is None:
            return
        t = self.timeline.turns[turn]
        self.cursor.setPos(finite(t.index))
        events = "; ".join(f"{e.kind}: {e.message}" for e in t.events) or "no event"
        usage = self.timeline.session.messages[t.index].usage
        reported = f" (the provider reported {usage.window_fill:,} for this call)" if usage is not None and usage.window_fill else ""
        self.label.setText(f"Turn {t.index}: {t.tokens_sent:,} of {t.budget:,} tokens sent{reported}, {t.kept} kept, {t.dropped} dropped, "
                           f"{t.summarized} summarised, {t.truncated} cut — {events}")

    def _moved(self, turn: int) -> None:
        self._describe(turn)
        self.turnChanged.emit(turn)
