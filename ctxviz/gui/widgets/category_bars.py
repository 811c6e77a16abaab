"""Used versus budget per category (system, context, dialog, tool output), over-budget in warning colour."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFontMetrics

from ...engine.composition import ADDED
from ...engine.plan import Plan
from ..safe import finite, plot_values
from ..theme import CATEGORY_COLORS, WARNING, category_label, plot_colors
from .axes import ThousandsAxis

MAIN = ("system", "context", "dialog", "system_output")
#: The bottom axis's height besides its tick labels' lines (the ticks and the gap under them).
TICK_ROOM = 12


class CategoryBars(pg.PlotWidget):
    def __init__(self, parent=None) -> None:
        background, foreground = plot_colors()
        super().__init__(parent, background=background)
        self.foreground = foreground
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.setAxisItems({"left": ThousandsAxis("left")})
        self.getAxis("left").setWidth(64)
        for axis in ("left", "bottom"):
            self.getAxis(axis).setPen(foreground)
            self.getAxis(axis).setTextPen(foreground)
        self.setMinimumHeight(150)
        self.rows: list[tuple[str, int, int | None, int]] = []
        self.title_text = ""
        self._layout: tuple = ()
        #: (x, heights) the outline shows (`set_plan` leaves it alone while they stay).
        self._outline: tuple[list[int], np.ndarray] = ([], np.zeros(0))
        # Two items for the whole life of the widget; a re-plan only changes their data.
        self.outline = pg.BarGraphItem(x=[], height=[], width=0.7, brush=pg.mkBrush(0, 0, 0, 0),
                                       pen=pg.mkPen(foreground, width=1, style=pg.QtCore.Qt.PenStyle.DashLine))
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.5, pen=pg.mkPen(None))
        self.addItem(self.outline)
        self.addItem(self.bars)

    def set_plan(self, plan: Plan | None) -> None:
        if plan is None:
            self.rows = []
            self._outline = ([], np.zeros(0))
            self.outline.setOpts(x=[], height=[])
            self.bars.setOpts(x=[], height=[], brushes=[])
            return
        by_category = plan.category_totals
        sent = {str(c): s for c, (s, _) in by_category.items()}
        total = {str(c): t for c, (_, t) in by_category.items()}
        # Category budgets exist for the category policy; other policies show sent against all of it.
        caps = plan.totals.allocation_kind == "caps"
        budgets = dict(plan.allocation) if caps or plan.policy == "categories" else {}
        names = [c for c in MAIN if c in total or c in budgets] + [c for c in total if c not in MAIN]
        rows = [(c, sent.get(c, 0), budgets.get(c), total.get(c, 0)) for c in names]
        # What the plan sends that is no message of the file (summaries, the system prompt it builds,
        # and where it counts from the provider's usage, the prompt the log does not record): the
        # bars added up to less than the donut's figure without it (the Timeline's band, too).
        outside = plan.totals.used - sum(sent.values())
        if outside > 0:
            rows.append((ADDED, outside, None, outside))
            names.append(ADDED)
        title = self.title_for(plan, caps, bool(budgets))
        if rows == self.rows and title == self.title_text:  # a re-plan that moved nothing here: no repaint
            return
        self.rows = rows
        xs = list(range(len(names)))
        reference = [b if b is not None else t for _, _, b, t in self.rows]
        heights = plot_values(reference)  # finite and bounded (safe.py)
        # All of each category's tokens (or its budget): the same for every re-plan of a session.
        if xs != self._outline[0] or not np.array_equal(heights, self._outline[1]):
            self._outline = (xs, heights)
            self.outline.setOpts(x=xs, height=heights)
        brushes = []
        for c, used, budget, _ in self.rows:
            over = budget is not None and used > budget
            brushes.append(pg.mkBrush(WARNING if over else CATEGORY_COLORS.get(c, "#b0b0b0")))
        self.bars.setOpts(x=xs, height=plot_values(used for _, used, _, _ in self.rows), brushes=brushes)
        top = finite(max(reference + [u for _, u, _, _ in self.rows] + [1]))
        self.title_text = title
        layout = (tuple(names), bool(budgets), top, self.title_text)
        if layout == self._layout:  # a re-plan usually moves the bars only
            return
        self._layout = layout
        self._fit_ticks()
        self.setXRange(-0.6, len(names) - 0.4, padding=0)
        self.setYRange(0, top * 1.12, padding=0)
        # Wide enough for the largest tick whole ("2,000,000" was dropped from a 64-pixel axis).
        self.getAxis("left").setWidth(max(48, self.fontMetrics().horizontalAdvance(f"{int(top * 1.12):,}") + 14))
        self._show_title()

    def _title_width(self, text: str) -> float:
        """The width pyqtgraph draws `text` at as the title (its own HTML font, not the widget's)."""
        label = self.getPlotItem().titleLabel
        label.setText(text, color=self.foreground, size="9pt")  # our words only: pyqtgraph draws titles as HTML
        return float(label.item.boundingRect().width())

    def shown_title(self) -> str:
        """The title as drawn: whole when it fits the width, else its head (the whole in the
        tooltip). A title wider than the widget widened the plot past its edge, clipping the last
        bar's label ("Tool o")."""
        room = self.width() - 16
        head = self.title_text.split(" (", 1)[0]
        for text in (self.title_text, head):
            if self._title_width(text) <= room:
                return text
        return ""

    def _show_title(self) -> None:
        shown = self.shown_title()
        self._title_shown = shown
        self.setTitle(shown or None, color=self.foreground, size="9pt")
        self.setToolTip(self.title_text)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if getattr(self, "title_text", ""):
            self._show_title()
        self._fit_ticks()

    def _fit_ticks(self) -> None:
        """Each bar's name on as many lines as its slot needs: pyqtgraph drops a tick label wider
        than its room, and a real Codex log's fifth bar, "Outside the messages", had no name at
        1440x900 (nor "Tool output" on a narrow window)."""
        layout = getattr(self, "_layout", ())  # (resized once before __init__ sets it)
        names = layout[0] if layout else ()
        if not names:
            return
        axis = self.getAxis("bottom")
        metrics = QFontMetrics(axis.style["tickFont"] or self.font())
        slot = max(1.0, self.getPlotItem().vb.width()) / (len(names) + 0.2)  # (the x range is n + 0.2 slots wide)
        ticks = [(i, wrapped(category_label(c), slot - 6, metrics)) for i, c in enumerate(names)]
        if ticks != getattr(self, "_ticks", None):
            self._ticks = ticks
            axis.setTicks([ticks])
            lines = max(text.count("\n") + 1 for _, text in ticks)
            axis.setHeight(lines * metrics.lineSpacing() + TICK_ROOM)  # (pyqtgraph kept one line's height: "messages" was cut)

    @staticmethod
    def title_for(plan: Plan, caps: bool, budgets: bool) -> str:
        """Caps are maxima of their own, not a division of the budget: the title says how far past
        the budget they add up."""
        if caps:
            allotted = sum(plan.allocation.values())
            share = f"{allotted / plan.totals.budget * 100:.0f} %" if plan.totals.budget else "more than all"
            return f"sent / cap per category (the caps add up to {share} of the budget)"
        return "sent / budget per category" if budgets else "sent / all tokens per category"


def wrapped(text: str, room: float, metrics: QFontMetrics) -> str:
    """`text` broken between words into lines no wider than `room` pixels where it can (a word
    wider than that keeps its own line)."""
    lines: list[str] = []
    for word in text.split():
        if lines and metrics.horizontalAdvance(f"{lines[-1]} {word}") <= room:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return "\n".join(lines)
