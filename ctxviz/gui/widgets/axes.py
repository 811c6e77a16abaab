"""Axes that print token counts as a person reads them."""

from __future__ import annotations

import pyqtgraph as pg


class ThousandsAxis(pg.AxisItem):
    """Tick labels as whole numbers with thousands separators (never 7.842e+06, never an SI prefix)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        return [f"{v * scale:,.0f}" if abs(v * scale) < 1e15 else f"{v * scale:.3g}" for v in values]
