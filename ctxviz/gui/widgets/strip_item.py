"""The strip's one graphics item: every message a segment sized by its tokens (or one per message)
and coloured by category, painted as batched rectangles per style (engine/plan.py's decision
numbers read as they are), only the visible range and at most one rectangle per pixel column, so
10,000 messages stay fluid under zoom and pan. widgets/message_strip.py's `MessageStrip` holds it.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt.internals import PrimitiveArray
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPen

from ...engine.plan import DECISIONS, Decision, Plan
from ..theme import CATEGORY_COLORS, plot_colors

ROW_TOP, ROW_HEIGHT = 0.0, 1.0

#: The positions of these decisions in `DECISIONS` (a plan's decision numbers).
TRUNCATED, SUMMARIZED = DECISIONS.index(Decision.TRUNCATED), DECISIONS.index(Decision.SUMMARIZED)


def _first_and_last(numbers: np.ndarray, number: int) -> tuple[int, int] | None:
    """The first and last message whose decision number is `number`, or None."""
    hits = np.flatnonzero(numbers == number)
    return (int(hits[0]), int(hits[-1])) if len(hits) else None


class StripItem(pg.GraphicsObject):
    """All segments in one item; x is cumulative tokens (or message index), y in [0, 1].

    Painting costs what the screen can show, not what the session holds: only the messages in the
    visible range are drawn, and when more of them are visible than there are pixels, each pixel
    column shows the message under it, with equal neighbours merged into one rectangle. A re-plan
    only re-reads decisions; the geometry is reused while the token counts stay the same.
    """

    def __init__(self) -> None:
        super().__init__()
        self.starts: np.ndarray = np.zeros(0)
        self.widths: np.ndarray = np.zeros(0)
        self.decisions: tuple[Decision, ...] = ()
        #: The first and last summarised message, or None (the summarised span's marker).
        self.summarised: tuple[int, int] | None = None
        self.categories: tuple[str, ...] = ()
        self.fractions: np.ndarray = np.zeros(0)
        self.styles: np.ndarray = np.zeros(0, dtype=np.int32)
        self.style_keys: list[tuple[str, Decision]] = []
        self.highlight: set[int] = set()
        #: Under a search: which messages match (the others are dimmed); None without a search.
        self.matched: np.ndarray | None = None
        self.selected: int | None = None
        self._tokens: tuple[int, ...] = ()
        self._counted: np.ndarray = np.zeros(0)
        self._category_ids: dict[str, int] = {}
        self._category_codes: np.ndarray = np.zeros(0, dtype=np.int32)
        self._by_tokens = True
        self._bounds = QRectF(0, 0, 1, 1)
        #: (the starts, (view's left, right, pixel width), the message under each pixel column) as last looked up.
        self._columns: tuple[np.ndarray | None, tuple[float, float, float], np.ndarray] = (None, (0.0, 0.0, 0.0), np.zeros(0, dtype=np.int64))
        #: The rectangles of one style as they are painted (reused paint to paint).
        self._rects = PrimitiveArray(QRectF, 4)
        #: Each message's (category, decision) code as last drawn, and the messages the last re-plan changed (`_changed_since`).
        self._combined: np.ndarray | None = None
        self.changed_span: tuple[int, int] | tuple[()] | None = None
        #: The hairlines between neighbours as they are painted.
        self._lines = PrimitiveArray(QLineF, 4)

    def set_data(self, plan: Plan, by_tokens: bool, highlight: set[int] | None = None) -> None:
        cols = plan.columns
        tokens, n = cols.tokens, len(cols.tokens)
        # (Which decisions the plan holds, read from its decision numbers: `Decision.X in` a tuple of
        # 10,000 compared them one by one, 60 microseconds each time.)
        truncated = n > 0 and bool((plan.decision_numbers == TRUNCATED).any())
        same_categories = cols.category is self.categories or cols.category == self.categories
        if (by_tokens == self._by_tokens and len(self.starts) == n and (highlight is None) == (self.matched is None)
                and (highlight or set()) == self.highlight
                and cols.decision == self.decisions and tokens == self._tokens and same_categories
                and (not truncated or cols.sent_tokens == getattr(self, "_sent", None))):
            return  # a re-plan that changed no segment (the cut stayed put): nothing to draw again
        self._sent = cols.sent_tokens
        before = (self.starts, self._combined, self.fractions, self.highlight, self.matched is None)
        self.summarised = None if n == 0 else _first_and_last(plan.decision_numbers, SUMMARIZED)
        if tokens != self._tokens or by_tokens != self._by_tokens or len(self.starts) != n or not same_categories:
            # A new session (or strip mode): geometry and category codes. A re-plan of the same
            # session keeps both; only decisions and sent tokens change.
            self._counted = np.asarray(tokens, dtype=np.float64)
            self.widths = np.maximum(self._counted, 1.0) if by_tokens else np.ones(n)
            self.starts = np.concatenate(([0.0], np.cumsum(self.widths)[:-1])) if n else np.zeros(0)
            self._tokens, self._by_tokens = tokens, by_tokens
            self.categories = cols.category
            self._category_ids = {c: i for i, c in enumerate(dict.fromkeys(self.categories))}
            self._category_codes = np.fromiter(map(self._category_ids.__getitem__, self.categories), dtype=np.int32, count=n)
        self.decisions = cols.decision
        if truncated:  # only truncated messages are drawn part-filled
            sent = np.asarray(cols.sent_tokens, dtype=np.float64)
            self.fractions = np.where(self._counted > 0, np.minimum(1.0, sent / np.maximum(self._counted, 1.0)), 1.0)
        else:
            self.fractions = np.ones(n)
        # A style per (category, decision) pair, coded with numpy: building 10,000 Python pairs on
        # every re-plan costs more than the plan itself.
        # The plan's decision numbers (positions in DECISIONS), read as they are: no pass over the
        # 10,000 decisions in Python.
        decisions = list(DECISIONS)
        width = len(self._category_ids) * len(decisions)
        combined = self._category_codes * len(decisions)
        combined += plan.decision_numbers.astype(np.int32)
        # Number the (category, decision) pairs present, without sorting 10,000 codes.
        present = np.flatnonzero(np.bincount(combined, minlength=width)) if n else np.zeros(0, dtype=np.int64)
        renumber = np.zeros(max(width, 1), dtype=np.int32)
        renumber[present] = np.arange(len(present), dtype=np.int32)
        self.styles = renumber[combined]
        self._combined = combined
        categories = list(self._category_ids)
        self.style_keys = [(str(categories[c // len(decisions)]), decisions[c % len(decisions)]) for c in present.tolist()]
        self.highlight = highlight or set()
        if highlight is None:
            self.matched = None
        else:
            self.matched = np.zeros(n, dtype=bool)
            hits = [i for i in highlight if 0 <= i < n]
            self.matched[hits] = True
        end = float(self.starts[-1] + self.widths[-1]) if len(self.starts) else 1.0
        bounds = QRectF(0, 0, max(end, 1.0), 1.0)
        self.changed_span = self._changed_since(*before, bounds)
        if self.changed_span is None:
            self.prepareGeometryChange()
            self._bounds = bounds
            self.update()
        else:
            self._update_span(self.changed_span)

    def _changed_since(self, starts: np.ndarray, combined: np.ndarray | None, fractions: np.ndarray, highlight: set[int],
                       unmatched: bool, bounds: QRectF) -> tuple[int, int] | tuple[()] | None:
        """(first, last) message whose segment a re-plan changed (its category and decision, or the
        share of it sent), () for none, or None when more than segments changed (the geometry, the
        search): then all is drawn again."""
        if (starts is not self.starts or combined is None or len(combined) != len(self._combined) or bounds != self._bounds
                or highlight != self.highlight or unmatched != (self.matched is None)):
            return None
        changed = np.flatnonzero((combined != self._combined) | (fractions != self.fractions))
        return (int(changed[0]), int(changed[-1])) if len(changed) else ()

    def _update_span(self, span: tuple[int, int] | tuple[()]) -> None:
        """Repaint the messages first..last only. A re-plan moves the cut a few messages: the strip
        and its overview repainted all of their width, every item over it (the user lane's ticks,
        the lines' labels) and every pixel of the segments, for a change a few pixels wide."""
        if span:
            first, last = span
            left, right = float(self.starts[first]), float(self.starts[last] + self.widths[last])
            self.update(QRectF(left, -0.2, right - left, 1.4))

    def mirror(self, other: StripItem) -> None:
        """Show `other`'s segments (its arrays shared, not copied), without its outlines: the overview.
        After a re-plan that changed only some segments (`changed_span`), only those are repainted."""
        partial = self.starts is other.starts and self._bounds == other._bounds and other.changed_span is not None
        for name in ("starts", "widths", "decisions", "categories", "fractions", "styles", "style_keys", "_sent"):
            setattr(self, name, getattr(other, name, None))
        self.highlight, self.selected, self.matched = set(), None, None
        if partial:
            self._update_span(other.changed_span)  # type: ignore[arg-type]
            return
        self.prepareGeometryChange()
        self._bounds = QRectF(other._bounds)
        self.update()

    def index_at(self, x: float) -> int | None:
        if not len(self.starts) or x < 0:
            return None
        i = int(np.searchsorted(self.starts, x, side="right")) - 1
        return i if 0 <= i < len(self.starts) and x <= self.starts[i] + self.widths[i] else None

    def set_selected(self, index: int | None) -> None:
        if index == self.selected:
            return  # a re-plan keeps the selection: no repaint for it
        self.selected = index
        self.update()

    def _visible_segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, range | None]:
        """(x, width, style, exact) of what to draw: the visible messages themselves (`exact` is
        their index range), or one run per merged pixel span (`exact` is None)."""
        n = len(self.starts)
        view = self.getViewBox()
        pixel = (self.pixelWidth() or 0.0) if view is not None else 0.0
        if view is None or n == 0 or pixel <= 0:
            return self.starts, self.widths, self.styles, range(n)
        x0, x1 = view.viewRange()[0]
        first = max(0, int(np.searchsorted(self.starts, x0, side="right")) - 1)
        last = min(n, int(np.searchsorted(self.starts, x1, side="right")))
        columns = int((x1 - x0) / pixel) + 1
        if last - first <= 2 * columns:
            return self.starts[first:last], self.widths[first:last], self.styles[first:last], range(first, last)
        lo, hi = max(x0, 0.0), min(x1, self._bounds.width())
        # The message under each pixel column depends on the geometry and the view, not on the
        # decisions: a re-plan (the strip and its overview both repaint) looks them up once.
        starts, key = self.starts, (lo, hi, pixel)
        if self._columns[0] is not starts or self._columns[1] != key:
            centres = lo + (np.arange(int((hi - lo) / pixel) + 1) + 0.5) * pixel
            self._columns = (starts, key, np.clip(np.searchsorted(starts, centres, side="right") - 1, 0, n - 1))
        index = self._columns[2]
        style = self.styles[index]
        breaks = np.flatnonzero(np.diff(style)) + 1
        run_starts = np.concatenate(([0], breaks))
        run_ends = np.concatenate((breaks, [len(style)]))
        xs = lo + run_starts * pixel
        return xs, (run_ends - run_starts) * pixel, style[run_starts], None

    def paint(self, painter: QPainter, *args) -> None:
        xs, ws, styles, exact = self._visible_segments()
        cosmetic = QPen(QColor(0, 0, 0, 0))
        if len(styles):
            # One batch of rectangles per style, in the order the styles first appear, written
            # into a QRectF array by numpy (a QRectF per segment built in Python cost 1.4 ms a paint,
            # and a re-plan paints the strip and its overview).
            present, first = np.unique(styles, return_index=True)
            for style in present[np.argsort(first, kind="stable")].tolist():
                category, decision = self.style_keys[style]
                chosen = styles == style
                self._rects.resize(int(np.count_nonzero(chosen)))
                rects = self._rects.ndarray()
                rects[:, 0] = xs[chosen]
                rects[:, 2] = ws[chosen]
                rects[:, 1], rects[:, 3] = (0.3, 0.4) if decision is Decision.DROPPED else (0.0, 1.0)
                self._fill(painter, self._rects.drawargs(), QColor(CATEGORY_COLORS.get(category, "#b0b0b0")), decision, cosmetic)
        if exact is not None:
            self._paint_truncated(painter, cosmetic, exact)
            self._paint_separators(painter, xs)
        if self.matched is not None:
            self._dim_unmatched(painter, cosmetic)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if self.selected is not None and 0 <= self.selected < len(self.starts):
            self._outline(painter, self.selected, "#ff2d95", 3, 0.12)

    def dim_runs(self) -> list[tuple[float, float]]:
        """(x, width) of the visible runs of messages the search does not match: drawn veiled, so
        the hits stand out without outlining hundreds of them in red (a red wall at 545 hits)."""
        if self.matched is None or not len(self.starts):
            return []
        n = len(self.starts)
        view = self.getViewBox()
        pixel = (self.pixelWidth() or 0.0) if view is not None else 0.0
        if view is None or pixel <= 0:
            x0, x1, pixel = 0.0, self._bounds.width(), 0.0
        else:
            x0, x1 = view.viewRange()[0]
        first = max(0, int(np.searchsorted(self.starts, x0, side="right")) - 1)
        last = min(n, int(np.searchsorted(self.starts, x1, side="right")))
        columns = int((x1 - x0) / pixel) + 1 if pixel > 0 else n
        if last - first <= 2 * columns:
            miss = ~self.matched[first:last]
            edges = np.flatnonzero(np.diff(np.concatenate(([False], miss, [False])).astype(np.int8)))
            runs = []
            for a, b in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
                start = float(self.starts[first + a])
                end = float(self.starts[first + b - 1] + self.widths[first + b - 1])
                runs.append((start, end - start))
            return runs
        lo, hi = max(x0, 0.0), min(x1, self._bounds.width())
        centres = lo + (np.arange(int((hi - lo) / pixel) + 1) + 0.5) * pixel
        index = np.clip(np.searchsorted(self.starts, centres, side="right") - 1, 0, n - 1)
        miss = ~self.matched[index]
        edges = np.flatnonzero(np.diff(np.concatenate(([False], miss, [False])).astype(np.int8)))
        return [(lo + a * pixel, (b - a) * pixel) for a, b in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True)]

    def _dim_unmatched(self, painter: QPainter, cosmetic: QPen) -> None:
        veil = QColor(plot_colors()[0])
        veil.setAlpha(185)
        painter.setPen(cosmetic)
        painter.setBrush(QBrush(veil))
        painter.drawRects([QRectF(x, -0.05, w, 1.1) for x, w in self.dim_runs()])

    @staticmethod
    def _fill(painter: QPainter, rects: tuple[object, ...], color: QColor, decision: Decision, cosmetic: QPen) -> None:
        """Fill `rects` (the arguments of `QPainter.drawRects`) in the style of `decision`."""
        painter.setPen(cosmetic)
        if decision is Decision.DROPPED:
            color.setAlpha(60)
        elif decision is Decision.SUMMARIZED:
            faint = QColor(color)
            faint.setAlpha(90)
            painter.setBrush(QBrush(faint))
            painter.drawRects(*rects)
            painter.setBrush(QBrush(color, Qt.BrushStyle.BDiagPattern))
            painter.drawRects(*rects)
            return
        elif decision is Decision.TRUNCATED:
            color.setAlpha(80)
        elif decision is Decision.REPLACED:
            pen = QPen(color.darker(140))
            pen.setCosmetic(True)
            pen.setWidth(2)
            painter.setPen(pen)
            color.setAlpha(110)
        painter.setBrush(QBrush(color))
        painter.drawRects(*rects)

    def _paint_truncated(self, painter: QPainter, cosmetic: QPen, visible: range) -> None:
        """A truncated message is filled up to the share of it that was sent."""
        painter.setPen(cosmetic)
        truncated = [i for i, (_, d) in enumerate(self.style_keys) if d is Decision.TRUNCATED]
        if not truncated:
            return  # (most plans: no pass over the visible messages in Python)
        shown = np.flatnonzero(np.isin(self.styles[visible.start:visible.stop], truncated)) + visible.start
        for i in shown.tolist():
            if self.decisions[i] is Decision.TRUNCATED:
                painter.setBrush(QBrush(QColor(CATEGORY_COLORS.get(str(self.categories[i]), "#b0b0b0"))))
                painter.drawRect(QRectF(float(self.starts[i]), 0.0, float(self.widths[i]) * self.fractions[i], 1.0))

    def _paint_separators(self, painter: QPainter, xs: np.ndarray) -> None:
        """Hairlines between neighbours once segments are wide enough to tell apart (>= 4 px)."""
        pixel = self.pixelWidth() or 0.0
        view = self.getViewBox()
        if view is None or pixel <= 0 or len(xs) < 2:
            return
        x0, x1 = view.viewRange()[0]
        if len(xs) * 4 > (x1 - x0) / pixel:
            return
        pen = QPen(QColor(plot_colors()[0]))
        pen.setCosmetic(True)
        pen.setWidth(1)
        painter.setPen(pen)
        self._lines.resize(len(xs) - 1)
        lines = self._lines.ndarray()  # x1, y1, x2, y2: a QLineF per boundary, written by numpy
        lines[:, 0] = lines[:, 2] = xs[1:]
        lines[:, 1], lines[:, 3] = 0.0, 1.0
        painter.drawLines(*self._lines.drawargs())

    def _outline(self, painter: QPainter, index: int, color: str, width: int, margin: float) -> None:
        pen = QPen(QColor(color))
        pen.setCosmetic(True)
        pen.setWidth(width)
        painter.setPen(pen)
        painter.drawRect(QRectF(float(self.starts[index]), -margin, float(self.widths[index]), 1 + 2 * margin))

    def boundingRect(self) -> QRectF:  # noqa: N802
        return QRectF(self._bounds.x(), -0.2, self._bounds.width(), 1.4)
