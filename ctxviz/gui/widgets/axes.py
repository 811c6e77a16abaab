"""Axes that print token counts and turns as a person reads them."""

from __future__ import annotations

import pyqtgraph as pg


class ThousandsAxis(pg.AxisItem):
    """Tick labels as whole numbers with thousands separators (never 7.842e+06, never an SI
    prefix), and ticks only at whole numbers: tokens and turns have no fractions, and a zoomed axis
    printed 0.2, 0.4 ... rounded as "0 0 1 1 1"."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.enableAutoSIPrefix(False)
        # A tick label that would run past the axis' end is left out, not drawn cut ("40,0").
        self.setStyle(hideOverlappingLabels=True)

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:  # noqa: N802, N803
        levels = super().tickSpacing(minVal, maxVal, size)
        whole = [(spacing, offset) for spacing, offset in levels if spacing >= 1]
        return whole or [(1.0, 0.0)]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        return [f"{v * scale:,.0f}" if abs(v * scale) < 1e15 else f"{v * scale:.3g}" for v in values]
