"""The sweep's trade-off, drawn: input cost against retention (or overflows), one point per setting,
the Pareto front joined, the cheapest setting that meets the user's floors ringed. The same widget
shows it in the app and renders `ctxviz sweep --png` offscreen."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import pyqtgraph as pg
from PySide6.QtWidgets import QApplication, QVBoxLayout, QWidget

from ..io.output import check_output_path, write_output
from .report import render_png
from .safe import plot_values
from .theme import plot_colors


class SweepChart(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.background, self.foreground = plot_colors()
        layout = QVBoxLayout(self)
        self.plot = pg.PlotWidget(background=self.background)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.addLegend(offset=(-10, 10))
        layout.addWidget(self.plot)

    def set_rows(self, rows: Sequence[Any], best: Any = None, title: str = "") -> None:
        self.plot.clear()
        quality = "retention_worst" if rows and all("retention_worst" in r.metrics for r in rows) else "overflows"
        label = "worst retention (% of anchors kept)" if quality == "retention_worst" else "turns that overflow"
        # pyqtgraph scales small numbers with an SI prefix ("(x0.001)", ticks 200-500 for a 0-1 share):
        # a share is drawn in percent, and neither axis gets a prefix.
        scale = 100.0 if quality == "retention_worst" else 1.0
        for side in ("left", "bottom"):
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        self.plot.setLabel("bottom", "input cost with prompt caching (USD)")
        self.plot.setLabel("left", label)
        self.plot.setTitle(html.escape(title))
        if not rows:
            return
        if scale == 100.0:
            self.plot.setYRange(0, 100, padding=0.05)
        xs = plot_values(r.metrics["cost"] for r in rows)
        ys = plot_values(r.metrics[quality] * scale for r in rows)
        self.plot.plot(xs, ys, pen=None, symbol="o", symbolSize=7, symbolBrush="#7f7f7f", symbolPen=None, name="a setting")
        front = sorted((r for r in rows if r.pareto), key=lambda r: r.metrics["cost"])
        self.plot.plot(plot_values(r.metrics["cost"] for r in front), plot_values(r.metrics[quality] * scale for r in front),
                       pen=pg.mkPen("#0072b2", width=2), symbol="o", symbolSize=9, symbolBrush="#0072b2", symbolPen=None,
                       name="Pareto front")
        if best is not None:
            self.plot.plot(plot_values([best.metrics["cost"]]), plot_values([best.metrics[quality] * scale]), pen=None, symbol="o", symbolSize=18,
                           symbolBrush=None, symbolPen=pg.mkPen("#d55e00", width=3),
                           name=html.escape("cheapest meeting the floors: " + " ".join(f"{k}={v}" for k, v in best.params.items())))


def write_chart(rows: Sequence[Any], best: Any, path: str, title: str, inputs: Sequence[str] = ()) -> None:
    """Draw and write the chart; `inputs` (the sessions swept) are never written over."""
    check_output_path(path, inputs)
    widget = SweepChart()
    widget.resize(1000, 640)
    widget.set_rows(rows, best, title)
    widget.show()
    for _ in range(3):
        QApplication.processEvents()
    try:
        write_output(path, render_png(widget), inputs)
    finally:
        widget.close()
        widget.deleteLater()
