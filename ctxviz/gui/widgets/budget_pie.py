"""The budget donut: the whole ring is the budget; each part's use is a slice, the rest is free space.

pyqtgraph has no pie item and QtCharts is not in PySide6-Essentials, so it is painted with QPainter.

- The ring is drawn to the budget's scale. Each allocation part takes, in order, what it uses
  (solid) and, for a division of the budget, what it is allotted but does not use (faint: free
  space inside that part; reserves hatched). What no part is allotted, or for category caps
  whatever the parts do not use, is one grey **free space** slice.
- Use beyond a part's allotment, including any use of a zero or negative allotment, is overflow in
  the warning colour. The allotment is the plan's own (a missy history of -10,400 tokens is
  -10,400 here as in `ctxviz plan`). When what is drawn adds up to more than the budget, the ring
  grows to hold it and a tick marks where the budget ends.
- A part that is a category (the category policy's) has the category's one colour and name, the
  same as the bars, the strip and the legends (theme.py).
- The legend reads `used / allotted (x % full)` per part; its names are shortened before its
  numbers are. What the provider's log suggests is missing (`plan.reported.unseen`) is a line of its
  own, never added into the policy's figures. The verdict is the plan's own, and says so when the
  context is past the policy's trigger even though it fits the window.
"""

from __future__ import annotations

import html
import math
from typing import NamedTuple

from PySide6.QtCore import QPointF, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from ...engine.checks import counts_unseen, unseen_of
from ...engine.plan import Plan
from ...engine.policies import get_policy
from ...engine.retention import system_prompt_sent
from ...engine.vocabulary import trigger_count
from ..safe import short_number
from ..theme import WARNING, part_colors, part_label, parts_are_categories

RESERVE_WORDS = ("reserve", "buffer", "headroom")
FREE_SPACE = "Free space"


def pretty(name: str, categories: bool = True) -> str:
    return part_label(name, categories)


class Segment(NamedTuple):
    """One arc of the ring: `part` (index into the parts, None for free space), its tokens, and
    what it is: "used", "over" (use beyond the allotment), "unused" (allotted, not used) or "free"."""

    part: int | None
    tokens: int
    kind: str


def segments(parts: list[tuple[str, int, int]], budget: int, caps: bool) -> list[Segment]:
    """The ring's arcs, in drawing order. For a division each part is max(allotted, used) wide; for
    caps (maxima that add up past the budget) each part is its use; the free space is the budget
    not drawn otherwise."""
    out: list[Segment] = []
    for i, (_, allotted, used) in enumerate(parts):
        room = max(allotted, 0)
        within = min(max(used, 0), room)
        if within:
            out.append(Segment(i, within, "used"))
        if used > room:
            out.append(Segment(i, used - room, "over"))
        if not caps and room > used:
            out.append(Segment(i, room - max(used, 0), "unused"))
    drawn = sum(s.tokens for s in out)
    if budget > drawn:
        out.append(Segment(None, budget - drawn, "free"))
    return out


#: Where the legend's unseen tokens are counted: in none of its figures, in the real count only, or
#: in the policy's own figures too (Claude Code counts from the provider's usage, which holds them).
UNSEEN_APART = "not in the log, not counted above"
UNSEEN_IN_REAL = "not in the log; in the count above, not the parts"
UNSEEN_IN_ALL = "not in the log; in the figures above"


def unseen_where(plan: Plan) -> str:
    """Which of the legend's figures hold the unseen tokens (it said "not counted above" under a
    real count that held them, and under Claude Code's parts, which hold them too)."""
    if counts_unseen(plan):
        return UNSEEN_IN_ALL
    return UNSEEN_IN_REAL if plan.real is not None and plan.real.unseen else UNSEEN_APART


def system_not_sent(plan: Plan) -> int | None:
    """The tokens of system messages the plan does not send when it leaves the system prompt out
    (None when it sends it or the log has none): the legend's System part read "0 / 0 (empty)"
    beside a lost card saying "The system prompt is not sent" (langchain-trim without include_system)."""
    if not plan.system_prompt or system_prompt_sent(plan):
        return None
    roles = plan.columns.role
    tokens, sent = plan.token_arrays
    return int(sum(int(tokens[i]) for i, role in enumerate(roles) if role == "system" and not sent[i]))


def wrap_words(fm: QFontMetrics, text: str, width: int) -> list[str]:
    """`text` in lines no wider than `width`, broken between words, first before a parenthesis
    (a figure and its explanation: "Unseen ≈ 18,500" / "(not in the log, not counted above)")."""
    if fm.horizontalAdvance(text) <= width or width <= 0:
        return [text]
    head, paren, rest = text.partition(" (")
    if paren and fm.horizontalAdvance(head) <= width:
        return [head, *wrap_words(fm, "(" + rest, width)]
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        trial = f"{line} {word}" if line else word
        if line and fm.horizontalAdvance(trial) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return [*lines, line]


class LegendEntry(NamedTuple):
    """One legend line: a name (shortened first), its figures (never shortened), the swatches
    before it ("free" for free space) and its tone: "part", "over", "alarm" or "muted"."""

    name: str
    figures: str
    swatches: tuple[str, ...]
    tone: str


class BudgetPie(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        # It paints its own background, so an update repaints the pie alone, not the window under it.
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.setMinimumSize(QSize(320, 150))
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.parts: list[tuple[str, int, int]] = []  # (name, allotted as the plan reports it, used)
        self.total = 0
        self.used = 0
        self.fits = True
        self.verdict = ""
        self.title = ""
        self.caps = False
        self.unseen = 0
        self.trigger: int | None = None
        self.real: tuple[str, int, str] | None = None  # ("real" or "est.", tokens, encoding): the real count beside the policy's
        self.unseen_where = UNSEEN_APART  # where the unseen tokens are counted (`unseen_where`)
        self.system_dropped: int | None = None  # system tokens not sent when the plan leaves the prompt out (`system_not_sent`)
        #: The legend's entries, width and rows as last worked out, and what they were worked out for (`_measured`).
        self._memo_key: tuple[object, ...] = ()
        self._memo: dict[object, object] = {}

    def set_plan(self, plan: Plan | None, unseen: int | None = None, trigger: int | None = None) -> None:
        """Show `plan`; `unseen` is the provider's estimate of what its log does not record (by
        default the plan's own, `plan.reported.unseen`); `trigger` is the token count at which the
        policy acts (engine.vocabulary.trigger_level), when it has one below the budget."""
        before = self._state()
        drawn = self._drawn_parts() if self._memo_key and self._memo_key[0] == before else None
        if plan is None:
            self.parts, self.total, self.caps, self.unseen, self.real, self.trigger, self.verdict = [], 0, False, 0, None, None, ""
            self.system_dropped = None
        else:
            self.parts = [(k, v, plan.usage.get(k, 0)) for k, v in plan.allocation.items()]
            self.total = plan.totals.budget
            self.used = plan.totals.used
            self.fits = plan.totals.fits
            self.title = plan.policy
            self.caps = plan.totals.allocation_kind == "caps"
            self.trigger = trigger if trigger is not None and 0 < trigger < self.total else None
            self.verdict = self._verdict(plan)
            if unseen is None:
                unseen = unseen_of(plan)
            self.unseen = max(0, unseen)
            r = plan.real
            # The reference, as the status bar says it: the provider's reported usage plus what follows
            # where the log has it (an o200k estimate of a Claude request read 12 % under it).
            self.real = (None if r is None else ("real", r.reference, "from usage") if r.from_usage is not None
                         else ("real" if r.exact else "est.", r.tokens, r.encoding))
            self.unseen_where = unseen_where(plan)
            self.system_dropped = system_not_sent(plan)
        if self._state() != before:
            self._update_changed(drawn)  # a re-plan that changed nothing here paints nothing

    def _drawn_parts(self) -> tuple[QRectF, int, list[tuple[LegendEntry, str, bool]]]:
        """(the ring's rectangle, the legend's line height, its rows) as painted for the state shown."""
        rows, line = self.legend_rows()
        return self._ring()[0], line, rows

    def _update_changed(self, before: tuple[QRectF, int, list[tuple[LegendEntry, str, bool]]] | None) -> None:
        """Repaint what a new state changes: the ring and the legend lines whose words changed, when
        the legend keeps its lines and the ring its place (a re-plan moves History's and the free
        space's figures; the reserves' lines, most of the legend, stay as they were), else all."""
        if before is None or self.width() <= 0:
            self.update()
            return
        ring, line, rows = self._drawn_parts()
        old_ring, old_line, old_rows = before
        if ring != old_ring or line != old_line or len(rows) != len(old_rows):
            self.update()
            return
        self.update(self._ring_area(ring))
        top = self._legend_top(line, len(rows))
        x = int(ring.right() + 14)
        for i, (row, old) in enumerate(zip(rows, old_rows, strict=True)):
            if row != old:
                self.update(x, int(top + i * line), self.width() - x, line + 1)

    @staticmethod
    def _ring_area(rect: QRectF) -> QRect:
        """The pixels the ring, its ticks and its centre's figures may cover."""
        return rect.adjusted(-8, -8, 8, 8).toAlignedRect()

    def _legend_top(self, line: int, rows: int) -> float:
        return max(4.0, (self.height() - line * rows) / 2)

    def _state(self) -> tuple[object, ...]:
        return (self.parts, self.total, self.used, self.fits, self.title, self.caps, self.unseen, self.unseen_where, self.real, self.trigger,
                self.verdict, self.system_dropped)

    def _verdict(self, plan: Plan) -> str:
        """The plan's own verdict (`ctxviz plan`'s total row), and, when the context fits but is past
        the policy's trigger, that it is: "fits the budget" never stands beside a context the agent
        is about to compact."""
        if not plan.totals.fits or plan.parts_over():
            return plan.fit_verdict()
        count = _trigger_count(plan) if self.trigger is not None else 0
        if self.trigger is not None and count > self.trigger:
            return f"over the policy's trigger ({self.trigger:,}) by {count - self.trigger:,}"
        return "fits the budget"

    @property
    def alarming(self) -> bool:
        """The verdict is bad news: drawn in the warning colour."""
        return self.verdict != "fits the budget"

    @property
    def categories(self) -> bool:
        """The parts are categories: named and coloured as the strip and the bars name and colour them."""
        return parts_are_categories([name for name, _, _ in self.parts])

    @property
    def colors(self) -> list[str]:
        return part_colors([name for name, _, _ in self.parts])

    def caps_heading(self) -> str:
        """For caps: what they are, and how far past the budget they add up."""
        allotted = sum(a for _, a, _ in self.parts)
        share = f"{allotted / self.total * 100:.0f} %" if self.total else "more than all"
        return f"Category caps (they add up to {share} of the budget)"

    @staticmethod
    def fullness(allotted: int, used: int) -> str:
        """How full a part is: "97 % full", or its overflow when it has no room at all."""
        if allotted <= 0:
            return f"over by {used - allotted:,}" if used > allotted else "empty"
        return f"{used / allotted * 100:.0f} % full"

    def _measured(self, what: object, make):  # type: ignore[no-untyped-def]
        """`make()`, worked out once for what the pie shows at its size, font and palette: a paint asked for
        the legend's entries five times and its rows twice (a third of the pie's painting time)."""
        key = (self._state(), self.width(), self.height(), self.font().key(), self.palette().cacheKey())
        if key != self._memo_key:
            self._memo_key, self._memo = key, {}
        if what not in self._memo:
            self._memo[what] = make()
        return self._memo[what]

    def legend_entries(self, merge_empty: bool = False) -> list[LegendEntry]:
        """The legend, top to bottom; the figures are never shortened. `merge_empty` (a legend
        short of room) folds the parts that use nothing under one allotment into one line."""
        return list(self._measured(("entries", merge_empty), lambda: self._legend_entries(merge_empty)))

    def _legend_entries(self, merge_empty: bool) -> list[LegendEntry]:
        entries: list[LegendEntry] = [LegendEntry(self.caps_heading(), "", (), "muted")] if self.caps else []
        colors = self.colors
        cap = "cap " if self.caps else ""
        empty: dict[int, list[int]] = {}
        if merge_empty:
            for i, (_, allotted, used) in enumerate(self.parts):
                if used == 0 and allotted > 0:
                    empty.setdefault(allotted, []).append(i)
        merged = {i for group in empty.values() if len(group) > 1 for i in group}
        for i, (name, allotted, used) in enumerate(self.parts):
            if i in merged:
                group = empty[allotted]
                if i == group[0]:
                    entries.append(LegendEntry(", ".join(pretty(self.parts[j][0], self.categories) for j in group),
                                               f"0 / {cap}{short_number(allotted)} each", tuple(colors[j] for j in group), "part"))
                continue
            how = self.fullness(allotted, used)
            if name.lower() == "system" and used == 0 and self.system_dropped is not None:
                how = f"not sent: {short_number(self.system_dropped)} dropped" if self.system_dropped else "not sent"
            entries.append(LegendEntry(pretty(name, self.categories), f"{short_number(used)} / {cap}{short_number(allotted)}  ({how})",
                                       (colors[i],), "over" if used > allotted else "part"))
        # A division whose allotments add up past the budget (fractions raised past 1) leaves no free
        # space, and a part allotted below zero: said, or "Free space 73 %" stood beside "does not fit".
        allotted = 0 if self.caps else sum(max(a, 0) for _, a, _ in self.parts)
        if self.total and allotted > self.total:
            free = max(self.total - self.used, 0)
            entries.append(LegendEntry("Not used", f"{short_number(free)} of {short_number(self.total)}  ({free / self.total * 100:.0f} %)",
                                       ("faint",), "part"))
            entries.append(LegendEntry(f"the allotments add up to {short_number(allotted)}, over the budget by {short_number(allotted - self.total)}",
                                       "", (), "alarm"))
        elif self.total:
            free = max(self.total - self.used, 0)
            grey = any(s.kind == "free" for s in segments(self.parts, self.total, self.caps))
            entries.append(LegendEntry(FREE_SPACE,
                                       f"{short_number(free)} of {short_number(self.total)}  ({free / self.total * 100:.0f} %)",
                                       ("free",) if grey else ("faint",), "part"))
        entries.append(LegendEntry(self.verdict, "", (), "alarm" if self.alarming else "muted"))
        if self.real is not None:
            kind, tokens, encoding = self.real
            entries.append(LegendEntry(f"{kind} count: {short_number(tokens)} ({encoding})", "", (), "muted"))
        if self.unseen:
            entries.append(LegendEntry(f"Unseen ≈ {short_number(self.unseen)} ({self.unseen_where})", "", (), "muted"))
        return entries

    def legend_lines(self, merge_empty: bool = False) -> list[str]:
        """The legend's text, top to bottom."""
        return [f"{e.name}  {e.figures}" if e.figures else e.name for e in self.legend_entries(merge_empty)]

    # geometry shared by painting and hit-testing
    def legend_width(self) -> int:
        """The pixels the legend needs for its parts' names and figures whole."""
        return int(self._measured("width", self._legend_width))

    def _legend_width(self) -> int:
        fm = self.fontMetrics()
        widest = 0
        for e in self.legend_entries():
            if e.figures:
                widest = max(widest, 14 * len(e.swatches) + 4 + fm.horizontalAdvance(f"{e.name}  {e.figures}"))
        return widest + 8

    def _ring(self) -> tuple[QRectF, float]:
        # The ring gives way to the legend's figures (at 1024 px the legend lost them), down to 90 px.
        side = max(40.0, min(self.height() - 16, self.width() * 0.45, max(90.0, self.width() - self.legend_width() - 30)))
        rect = QRectF(10, (self.height() - side) / 2, side, side)
        return rect, side * 0.22

    def _arcs(self) -> list[tuple[Segment, float, float]]:
        """(segment, start angle, span) clockwise from the top, the ring holding max(budget, drawn)."""
        segs = segments(self.parts, self.total, self.caps)
        whole = max(self.total, sum(s.tokens for s in segs), 1)
        start, out = 90.0, []
        for s in segs:
            span = -360.0 * s.tokens / whole
            out.append((s, start, span))
            start += span
        return out

    def _scale(self) -> float:
        return float(max(self.total, sum(s.tokens for s in segments(self.parts, self.total, self.caps)), 1))

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt naming)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        painter.fillRect(self.rect(), pal.color(pal.ColorRole.Window))
        text = pal.color(pal.ColorRole.WindowText)
        if not self.parts:
            painter.setPen(text)
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "Open a session to see its budget")
            return
        rect, thickness = self._ring()
        if not event.rect().intersects(self._ring_area(rect)):  # only legend lines changed
            self._paint_legend(painter, rect.right() + 14, event.rect())
            return
        inner = rect.adjusted(thickness, thickness, -thickness, -thickness)
        colors = self.colors
        free = QColor(pal.color(pal.ColorRole.Mid))
        for seg, start, span in self._arcs():
            name = self.parts[seg.part][0] if seg.part is not None else ""
            color = QColor(colors[seg.part]) if seg.part is not None else free
            painter.setPen(QPen(pal.color(pal.ColorRole.Window), 1.0))
            if seg.kind == "used":
                painter.setBrush(QBrush(color))
            elif seg.kind == "over":
                painter.setBrush(QBrush(QColor(WARNING)))
            else:
                faint = QColor(color)
                faint.setAlpha(70 if seg.kind == "unused" else 110)
                painter.setBrush(QBrush(faint))
            painter.drawPath(_slice(rect, inner, start, span))
            if seg.kind == "unused" and any(w in name for w in RESERVE_WORDS):
                painter.setBrush(QBrush(color, Qt.BrushStyle.BDiagPattern))
                painter.drawPath(_slice(rect, inner, start, span))
            elif seg.kind == "over":
                painter.setBrush(QBrush(QColor(text), Qt.BrushStyle.BDiagPattern))
                painter.drawPath(_slice(rect, inner, start, span))
        scale = self._scale()
        if scale > self.total > 0:  # the ring holds more than the budget: where the budget ends
            self._tick(painter, rect, thickness, self.total / scale, QColor(text), "budget")
        if self.trigger is not None:
            self._tick(painter, rect, thickness, self.trigger / scale, QColor(WARNING), "trigger")
        # centre: used / budget, red when the plan does not fit; the font shrinks to the hole
        painter.setPen(text if self.fits else QColor(WARNING))
        pct = self.used / self.total * 100 if self.total else 0
        figures = f"{short_number(self.used)}\nof {short_number(self.total)}\n{pct:.0f}%"
        font, figures = self._centre_font(figures, pct, inner)
        painter.setFont(font)
        painter.drawText(inner, Qt.AlignmentFlag.AlignCenter, figures)
        self._paint_legend(painter, rect.right() + 14, event.rect())

    def _centre_font(self, figures: str, pct: float, inner: QRectF) -> tuple[QFont, str]:
        """The largest bold font (of six sizes) the centre's figures fit the hole in, and the figures
        drawn: the share alone when none fits."""
        font = QFont(self.font())
        font.setBold(True)
        base = font.pointSizeF()
        for factor in (1.25, 1.1, 1.0, 0.9, 0.8, 0.7):
            font.setPointSizeF(base * factor)
            fm = QFontMetrics(font)
            if max(fm.horizontalAdvance(line) for line in figures.split("\n")) <= inner.width() * 0.85 and 3 * fm.height() <= inner.height():
                return font, figures
        return font, f"{pct:.0f}%"  # a tiny ring keeps the share; the legend and the status bar have the figures

    def _tick(self, painter: QPainter, rect: QRectF, thickness: float, share: float, color: QColor, _what: str) -> None:
        """A radial line across the ring at `share` of the way round (clockwise from the top)."""
        angle = math.radians(90.0 - 360.0 * share)
        c, r = rect.center(), rect.width() / 2
        outer = QPointF(c.x() + (r + 4) * math.cos(angle), c.y() - (r + 4) * math.sin(angle))
        inner = QPointF(c.x() + (r - thickness - 4) * math.cos(angle), c.y() - (r - thickness - 4) * math.sin(angle))
        painter.setPen(QPen(color, 2.5))
        painter.drawLine(outer, inner)

    def legend_layout(self) -> tuple[list[LegendEntry], int]:
        """The entries drawn and the pixels per line (`legend_rows`)."""
        rows, line = self.legend_rows()
        return [entry for entry, _text, first in rows if first], line

    def legend_rows(self) -> tuple[list[tuple[LegendEntry, str, bool]], int]:
        """What the legend draws, line by line (`_legend_rows`)."""
        rows, line = self._measured("rows", self._legend_rows)
        return list(rows), line

    def _legend_rows(self) -> tuple[list[tuple[LegendEntry, str, bool]], int]:
        """What the legend draws, line by line: (entry, the text of an explanation's line, whether
        it is the entry's first line), and the pixels per line. An explanation wider than its room
        wraps (at 1024 px "Unseen ≈ 18,500 (not in the log, not counted above)" was cut to "… not
        count…"); lines are roomy when they fit, tight when not, and the parts that use nothing
        are folded together when even tight lines would not fit."""
        fm = self.fontMetrics()
        room = self.height() - 4
        width = int(self.width() - (self._ring()[0].right() + 14) - 8)
        rows: list[tuple[LegendEntry, str, bool]] = []
        for merge_empty in (False, True):
            entries = self.legend_entries(merge_empty)
            rows = [(e, text, i == 0) for e in entries
                    for i, text in enumerate([""] if e.figures else wrap_words(fm, e.name, width))]
            for spacing in (6, 2, 0):
                if (fm.height() + spacing) * len(rows) <= room:
                    return rows, fm.height() + spacing
        return rows, fm.height()

    def _paint_legend(self, painter: QPainter, x: float, exposed: QRect | None = None) -> None:
        pal = self.palette()
        painter.setFont(self.font())
        fm = painter.fontMetrics()
        rows, line = self.legend_rows()
        y = self._legend_top(line, len(rows))
        width = int(self.width() - x - 8)
        tones = {"part": pal.color(pal.ColorRole.WindowText), "over": QColor(WARNING), "alarm": QColor(WARNING),
                 "muted": pal.color(pal.ColorRole.PlaceholderText)}
        for entry, text, first in rows:
            if exposed is not None and not (exposed.top() < y + line + 1 and y < exposed.bottom() + 1):
                y += line  # a line the repaint does not reach (a re-plan repaints the lines it changed)
                continue
            baseline = y + fm.ascent() + 2
            indent = 0.0
            for color in entry.swatches if first else ():
                swatch = QColor(pal.color(pal.ColorRole.Mid)) if color in ("free", "faint") else QColor(color)
                if color == "faint":
                    swatch.setAlpha(110)
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(swatch)
                painter.drawRoundedRect(QRectF(x + indent, y + 3, 12, 12), 2, 2)
                indent += 14
            indent += 4 if entry.swatches and first else 0
            painter.setPen(tones[entry.tone])
            if entry.figures:
                self._name_and_figures(painter, x + indent, baseline, int(width - indent), entry.name, entry.figures)
            else:  # an explanation's line, wrapped to the room (a word wider than the room alone is cut)
                painter.drawText(QPointF(x + indent, baseline), fm.elidedText(text, Qt.TextElideMode.ElideRight, int(width - indent)))
            y += line

    @staticmethod
    def _name_and_figures(painter: QPainter, x: float, baseline: float, width: int, name: str, figures: str) -> None:
        """The figures whole, right after the name; the name alone is shortened when room runs out."""
        fm = painter.fontMetrics()
        room = width - fm.horizontalAdvance("  " + figures)
        shown = fm.elidedText(name, Qt.TextElideMode.ElideRight, max(room, fm.horizontalAdvance("M…")))
        painter.drawText(QPointF(x, baseline), f"{shown}  {figures}")

    def part_at(self, pos: QPointF) -> int | None:
        """The part under `pos` on the ring (-1 for free space), or None off the ring."""
        rect, thickness = self._ring()
        c = rect.center()
        dx, dy = pos.x() - c.x(), c.y() - pos.y()
        r = math.hypot(dx, dy)
        if not (rect.width() / 2 - thickness <= r <= rect.width() / 2):
            return None
        angle = math.degrees(math.atan2(dy, dx))
        for seg, start, span in self._arcs():
            delta = (start - angle) % 360  # spans run clockwise (negative) from `start`
            if 0 <= delta <= -span:
                return -1 if seg.part is None else seg.part
        return None

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        i = self.part_at(event.position())
        if i is None:
            QToolTip.hideText()
            return
        QToolTip.showText(event.globalPosition().toPoint(), self.tooltip_html(i), self)

    def tooltip_html(self, index: int) -> str:
        if index < 0:
            free = max(self.total - self.used, 0)
            return f"<b>{FREE_SPACE}</b><br>{free:,} of the budget's {self.total:,} tokens not used"
        name, allotted, used = self.parts[index]
        if self.caps:
            share = allotted / self.total * 100 if self.total else 0
            what = f"a cap of {allotted:,} tokens ({share:.1f}% of the budget; the caps add up to more than the budget)"
        else:
            share = allotted / self.total * 100 if self.total else 0
            what = f"allotted {allotted:,} tokens ({share:.1f}% of the budget)"
        over = f"<br><b>over its allotment by {used - allotted:,}</b>" if used > allotted else ""
        return f"<b>{html.escape(pretty(name, self.categories))}</b><br>{what}<br>used {used:,} ({html.escape(self.fullness(allotted, used))}){over}"

    def tooltip_for(self, index: int) -> str:
        name, allotted, used = self.parts[index]
        return f"{pretty(name, self.categories)}: {used:,} / {'cap ' if self.caps else ''}{allotted:,}"


def _slice(outer: QRectF, inner: QRectF, start: float, span: float) -> QPainterPath:
    path = QPainterPath()
    path.arcMoveTo(outer, start)
    path.arcTo(outer, start, span)
    path.arcTo(inner, start + span, -span)
    path.closeSubpath()
    return path


def _trigger_count(plan: Plan) -> int:
    """What the plan's policy compares with its trigger (engine.vocabulary.trigger_count: Codex
    its last reported tokens, not the estimate of what it sends); a plugin that cannot say, what
    the plan sends."""
    try:
        return trigger_count(get_policy(plan.policy), plan)
    except Exception:  # (a plugin policy no longer registered)
        return plan.totals.used
