"""The message strip: every message a segment sized by its tokens and coloured by category, with
the cut and the protected tail marked, the user's turns in a lane of their own, hover, selection,
zoom and a dragged range.

One graphics item paints all segments (widgets/strip_item.py: batched rectangles per style, only
the visible range, at most one rectangle per pixel column), so 10,000 messages stay fluid under
zoom and pan. Dropped messages are faint and short, summarised ones hatched, truncated ones partly
filled to what was sent, replaced ones outlined.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal

from ...engine.plan import SENT_DECISIONS, Plan, Rows
from ...engine.session import Session
from ...engine.wording import counted
from ...glossary import define
from ..safe import set_plain_tooltip
from ..theme import plot_colors
from ..words import spelled
from .axes import ThousandsAxis
from .strip_item import StripItem

#: The lines' labels; shorter ones where the cut and the tail are too close for both whole.
TAIL_LABEL, TAIL_SHORT, CUT_LABEL, CUT_AND_TAIL = "protected tail ▸", "tail ▸", "cut ▸", "cut, tail ▸"


def sent_span(plan: Plan) -> tuple[int, int] | None:
    """(first, last) index of the messages sent, system messages left out: they are folded into
    the system prompt, which is always sent, and zooming to "what is sent" from #0 (or from a
    system note in the middle of the session) showed everything. The system messages themselves
    when nothing else is sent."""
    cols = plan.columns
    sent = [i for i, d in enumerate(cols.decision) if d in SENT_DECISIONS]
    if not sent:
        return None
    rest = [i for i in sent if cols.role[i] != "system"]
    return (rest[0], rest[-1]) if rest else (sent[0], sent[-1])


#: The zones of the protected tail: its line is drawn before the first message in one.
PROTECTED_ZONES = ("fresh_tail", "recent")


def first_in_zones(plan: Plan, zones: tuple[str, ...]) -> int | None:
    """The first message in one of `zones`, or None. The tail is at the end of the session, so
    `tuple.index` walked nearly every message's zone (0.2 ms of each re-plan at 10,000 messages):
    a plan decided in columns is searched in its zone codes by numpy instead."""
    present = plan.distinct.zones  # (read on the plan worker: a zone not in the plan is not searched for)
    wanted = [z for z in zones if z in present]
    if not wanted:
        return None
    if isinstance(plan.messages, Rows):
        c = plan.messages.columns
        codes = [k for k, name in enumerate(c.zone_names) if name in wanted]
        hits = np.flatnonzero(np.isin(c.zone, codes))
        return int(hits[0]) if len(hits) else None
    column = plan.columns.zone
    return min(column.index(z) for z in wanted)


def cut_index(plan: Plan) -> int | None:
    """Where the cut falls: the policy's own (missy's and mnesis' first misfit) or, for every other
    policy, the newest message not sent (as the lost card and Jump to the cut name it)."""
    cut = plan.extra.get("cut_index")
    if cut is not None:
        return int(cut)
    unsent = np.flatnonzero(~plan.sent_mask)
    return int(unsent[-1]) if len(unsent) else None


class UniformScatter(pg.ScatterPlotItem):
    """A scatter whose points all have the item's own symbol, size, pen and brush (none per point).

    pyqtgraph looks each new point's style up in its symbol atlas one point at a time, in Python:
    4-5 ms for the 1,400 ticks of a 10,000-message session's user lane, on every re-plan that moves
    the cut. With one style for all, the first point's atlas place is every point's.
    """

    def updateSpots(self, dataSet=None) -> None:  # type: ignore[no-untyped-def]  # noqa: N802, N803 (pyqtgraph's names)
        data = self.data if dataSet is None else dataSet
        if not (self.opts["pxMode"] and self.opts["useCache"]) or not len(data) or (data["size"] != -1).any():
            super().updateSpots(dataSet)
            return
        blank = data["sourceRect"]["w"] == 0
        if blank.any():
            first = np.flatnonzero(blank)[:1]
            coords = self.fragmentAtlas[list(zip(*self._style(["symbol", "size", "pen", "brush"], data=data, idx=first), strict=True))]
            data["sourceRect"][blank] = coords[0]
            self._maybeRebuildAtlas()
            self.invalidate()
        self._updateMaxSpotSizes(data=data)

    def set_points(self, x: list[float], y: list[float], data: list[int]) -> None:
        """`setData(x, y, data=data)`, the same record array built faster.

        pyqtgraph allocates the points with `np.empty`, which numpy fills an element at a time
        because the record holds Python objects: 0.4 ms for the 1,400 ticks of a 10,000-message
        session, twice on every re-plan that moves the cut (both lanes). `np.zeros` with the
        object fields then set to None is the same array (np.empty's objects are None and the rest
        zeroed), ten times faster."""
        records = np.zeros(len(x), dtype=self.data.dtype)
        for name in self._object_fields():
            records[name] = None
        records["x"], records["y"], records["data"] = x, y, data
        records["size"] = -1  # the item's own size (as addPoints marks new points)
        records["visible"] = True
        # What setData does around the records: clear(), then addPoints' bookkeeping.
        self._maxSpotWidth = 0
        self._maxSpotPxWidth = 0
        self.data = records
        self.prepareGeometryChange()
        self.informViewBoundsChanged()
        self.bounds = [None, None]
        self.invalidate()
        self.updateSpots(records)
        self.sigPlotChanged.emit(self)

    def _object_fields(self) -> tuple[str, ...]:
        dtype = self.data.dtype
        return tuple(name for name in dtype.names or () if dtype[name].hasobject)


#: The voices of user turns that are not the user's own words (engine/voices.py): no tick in the user lane.
HARNESS_VOICES = frozenset({"harness", "observation"})

#: The lane of user messages above the segments: where the user's own words are, and which are lost.
USER_SENT, USER_LOST = "#8a919e", "#d55e00"


class MessageStrip(pg.PlotWidget):
    """The strip with its markers: fresh-tail boundary, the cut, the summarised span, and a lane of
    ticks for the user's messages (red where they are not sent)."""

    messageClicked = Signal(int)
    #: A plan (or none) was drawn: the overview mirrors it.
    drawn = Signal()
    #: (first, last) messages of the span selected with Shift+drag (or `select_range`); (-1, -1): none.
    rangeChanged = Signal(int, int)

    def __init__(self, parent=None) -> None:
        background, foreground = plot_colors()
        super().__init__(parent, background=background, axisItems={"bottom": ThousandsAxis("bottom")})
        self.by_tokens = True
        self.item = StripItem()
        self.addItem(self.item)
        self.setMouseEnabled(x=True, y=False)
        self.hideAxis("left")
        self.getAxis("bottom").setLabel("cumulative tokens")
        self.getAxis("bottom").setPen(foreground)
        self.getAxis("bottom").setTextPen(foreground)
        self.setYRange(-0.25, 1.6, padding=0)  # segments in 0-1, the user lane at 1.12, labels above
        self.setMinimumHeight(90)  # segments, the user lane, labels and the tick numbers
        self.getPlotItem().getViewBox().setLimits(yMin=-0.3, yMax=1.7)
        self.plan: Plan | None = None
        self.voices: tuple[str, ...] = ()
        self._extent = 0.0
        self._session: Session | None = None
        # The markers live as long as the widget; a re-plan moves them or hides them.
        self.tail_line = self._line(TAIL_LABEL, foreground, 0.93)
        self.cut_line = self._line(CUT_LABEL, "#d62728", 0.93)
        self.summary_region = pg.LinearRegionItem((0, 0), movable=False, brush=pg.mkBrush(23, 190, 207, 40), pen=pg.mkPen("#17becf"))
        self.summary_region.setZValue(-10)
        self.summary_label = pg.TextItem("summarised", color="#17becf", anchor=(0, 0))
        for item in (self.summary_region, self.summary_label):
            item.setVisible(False)
            self.addItem(item)
        # Two items of one brush each (a brush per point made pyqtgraph render every point's symbol
        # again on each re-plan: 120 ms at 10,000 messages); redrawn only when the lost set changes.
        self.user_lane = UniformScatter(symbol="s", size=6, pen=None, pxMode=True, brush=pg.mkBrush(USER_SENT))
        self.user_lane_lost = UniformScatter(symbol="s", size=6, pen=None, pxMode=True, brush=pg.mkBrush(USER_LOST))
        for lane in (self.user_lane, self.user_lane_lost):
            lane.setZValue(5)
            self.addItem(lane)
        self._lane_key: tuple[object, ...] = ()
        self._ticks_of: tuple[object, object, np.ndarray] | None = None  # (roles, voices, the user's turns)
        # A span selected with Shift+drag, summarised beside the strip ("12,300 tokens, 5 user, 3 tool pairs").
        self.range_region = pg.LinearRegionItem((0, 0), movable=True, brush=pg.mkBrush(255, 45, 149, 45),
                                                pen=pg.mkPen("#ff2d95", width=2))
        self.range_region.setZValue(8)
        self.range_region.setVisible(False)
        self.range_region.sigRegionChanged.connect(self._range_moved)
        self.addItem(self.range_region)
        self.selected_range: tuple[int, int] | None = None
        self._range_anchor: float | None = None
        view = self.getViewBox()
        self._pan = view.mouseDragEvent
        view.mouseDragEvent = self._drag  # Shift+drag selects a span; a plain drag pans as before
        self.scene().sigMouseClicked.connect(self._clicked)
        self.scene().sigMouseMoved.connect(self._hovered)
        self.getViewBox().sigXRangeChanged.connect(self._separate_labels)
        self.help_text = ("Each segment is one message, as wide as its tokens; the ticks above are the user's messages, red where "
                          "they are not sent. Scroll to zoom, drag to pan, click to select, Shift+drag to sum up a span (Esc clears it).")
        self.setToolTip(self.help_text)

    @property
    def markers(self) -> list[pg.GraphicsObject]:
        """The markers currently shown (tail boundary, cut, summarised span)."""
        return [m for m in (self.tail_line, self.cut_line, self.summary_region, self.summary_label) if m.isVisible()]

    def set_plan(self, session: Session | None, plan: Plan | None, highlight: set[int] | None = None,
                 voices: tuple[str, ...] = ()) -> None:
        """Draw `plan`. `voices` (engine/voices.py, one per message): the user lane ticks only the
        user's own turns, not the reminders and attachments the harness sends as user turns."""
        self.plan = plan
        self.voices = voices if plan is not None and len(voices) == len(plan.messages) else ()
        if plan is None:
            for marker in self.markers:
                marker.setVisible(False)
            self.drawn.emit()
            return
        self.item.set_data(plan, self.by_tokens, highlight)
        self._place_markers(plan)
        self._place_user_lane(plan)
        self._separate_labels()
        width = self.item._bounds.width()
        grown = session is not None and session is not self._session and _grew(self._session, session)
        new_session = session is not None and session is not self._session and not grown
        if grown:
            self._session = session
        if new_session:
            self.clear_range()
        elif self.selected_range is not None:  # the same messages, wherever the new geometry puts them
            self.select_range(*self.selected_range)
        if grown and width != self._extent:
            # A followed log grew: the user's zoom and span stay; a view of the whole strip (or of its
            # end) takes in what was appended.
            x0, x1 = self.getViewBox().viewRange()[0]
            old = self._extent
            self._extent = width
            self.getPlotItem().getViewBox().setLimits(xMin=-width * 0.05, xMax=width * 1.05)
            if x1 >= old * 0.999:
                self.setXRange(x0 if x0 > old * 0.01 else 0, width, padding=0.01 if x0 <= old * 0.01 else 0)
        elif width != self._extent or new_session:  # show it all; a re-plan of the same session keeps the user's zoom
            self._extent = width
            self._session = session or self._session
            self.getPlotItem().getViewBox().setLimits(xMin=-width * 0.05, xMax=width * 1.05)
            self.setXRange(0, width, padding=0.01)
            self.getAxis("bottom").setLabel("cumulative tokens" if self.by_tokens else "message index")
            if new_session:
                self.fit_to_sent_if_small()
        self.drawn.emit()

    def full_width(self) -> float:
        """The strip's whole width (tokens or messages)."""
        return float(self.item._bounds.width())

    def show_width(self, width: float) -> None:
        """Show 0 to `width` (Compare: two strips on one axis show the wider one whole)."""
        self.getPlotItem().getViewBox().setLimits(xMin=-width * 0.05, xMax=width * 1.05)
        self.setXRange(0, width, padding=0.01)

    #: A session opens zoomed to what is sent when that is under this share of the strip.
    FIT_SHARE = 0.05

    def sent_width(self) -> float:
        """The strip's width from the first to the last message sent (the leading system message left out)."""
        span = sent_span(self.plan) if self.plan is not None else None
        if span is None:
            return 0.0
        first, last = span
        return self._x_of(last) + float(self.item.widths[last]) - self._x_of(first)

    def fit_to_sent_if_small(self) -> bool:
        """Zoom to what is sent when it is under FIT_SHARE of the strip: 91 messages sent of 10,000
        were a sliver at the right edge. True when it zoomed."""
        width = self.item._bounds.width()
        span = sent_span(self.plan) if self.plan is not None else None
        if span is None or not width or self.sent_width() >= self.FIT_SHARE * width:
            return False
        self.zoom_to(*span)
        return True

    def _x_of(self, index: int) -> float:
        return float(self.item.starts[index]) if index < len(self.item.starts) else self.item._bounds.width()

    def _place_markers(self, plan: Plan) -> None:
        protected = first_in_zones(plan, PROTECTED_ZONES)
        self.tail_line.setVisible(protected is not None)
        if protected is not None:
            move_line(self.tail_line, self._x_of(protected))
        cut = cut_index(plan)
        has_cut = cut is not None and cut < len(plan.messages)
        self.cut_line.setVisible(has_cut)
        if has_cut:
            move_line(self.cut_line, self._x_of(cut) + float(self.item.widths[cut]))
        summarised = self.item.summarised
        has_summary = summarised is not None
        for item in (self.summary_region, self.summary_label):
            item.setVisible(has_summary)
        if summarised is not None:
            first, last = summarised
            self.summary_region.setRegion((self._x_of(first), self._x_of(last) + float(self.item.widths[last])))
            self.summary_label.setPos(self._x_of(first), 1.6)  # the top: clear of the user lane at 1.12

    #: Below this height the axis' title ("cumulative tokens") gives its room to the segments.
    AXIS_TITLE_MIN_HEIGHT = 120

    def resizeEvent(self, event: object) -> None:  # noqa: N802
        super().resizeEvent(event)  # type: ignore[arg-type]
        # Not while pyqtgraph is still building the plot, nor once `close` has let its plot item go.
        if getattr(self, "item", None) is not None and getattr(self, "plotItem", None) is not None:
            self.getAxis("bottom").showLabel(self.height() >= self.AXIS_TITLE_MIN_HEIGHT)

    #: Label anchors: ending at the line (left of it), or starting at it (right of it).
    LEFT_OF_LINE, RIGHT_OF_LINE = [(1, 0.5), (1, 0.5)], [(0, 0.5), (0, 0.5)]

    def _separate_labels(self, *_: object) -> None:
        """Each line's label sits where it is whole: left of its line, or right of it when the
        view's left edge would clip it (a cut near the start read "▸"). With both lines shown, the
        first placement (left/right of each) that clips neither label and runs neither into the
        other wins: "cuprotected tail" ran them together, and "pro" was all the right edge left."""
        view = self.getViewBox()
        pixel = view.viewPixelSize()[0] or 1.0
        x0, x1 = view.viewRange()[0]
        L, R = self.LEFT_OF_LINE, self.RIGHT_OF_LINE

        def fits(line: pg.InfiniteLine, anchors: list[tuple[int, float]]) -> bool:
            width = line.label.boundingRect().width() + 6
            room = (line.value() - x0) / pixel if anchors is L else (x1 - line.value()) / pixel
            return room >= width

        shown = sorted((line for line in (self.cut_line, self.tail_line) if line.isVisible()), key=lambda line: line.value())
        chosen: dict[pg.InfiniteLine, list[tuple[int, float]]] = {}
        # Shorter words when the full ones cannot be placed apart; one label for both at last.
        for cut_text, tail_text in ((CUT_LABEL, TAIL_LABEL), (CUT_LABEL, TAIL_SHORT), (CUT_AND_TAIL, "")):
            self._label_text(self.cut_line, cut_text)
            self._label_text(self.tail_line, tail_text)
            chosen = self._place_labels(shown if tail_text else [line for line in shown if line is self.cut_line] or shown, fits)
            if chosen or len(shown) < 2:
                break
        if not chosen and shown:
            chosen = {line: L if fits(line, L) else R for line in shown}
        for line, anchors in chosen.items():
            label = line.label
            if label.anchors != anchors:
                label.anchors = anchors
                label.updatePosition()

    @staticmethod
    def _label_text(line: pg.InfiniteLine, text: str) -> None:
        if line.label.format != text:
            line.label.setFormat(text)

    def _place_labels(self, shown: list[pg.InfiniteLine], fits) -> dict[pg.InfiniteLine, list[tuple[int, float]]]:  # type: ignore[no-untyped-def]
        """Left/right of each line for labels that are whole and apart, or {} when there is none."""
        L, R = self.LEFT_OF_LINE, self.RIGHT_OF_LINE
        if len(shown) == 1:
            return {shown[0]: L if fits(shown[0], L) or not fits(shown[0], R) else R}
        if len(shown) != 2:
            return {}
        pixel = self.getViewBox().viewPixelSize()[0] or 1.0
        a, b = shown
        gap = (b.value() - a.value()) / pixel
        wa, wb = a.label.boundingRect().width() + 6, b.label.boundingRect().width() + 6
        clear = {(0, 0): gap >= wb, (0, 1): True, (1, 1): gap >= wa, (1, 0): gap >= wa + wb}
        for sa, sb in ((0, 0), (0, 1), (1, 1), (1, 0)):
            pa, pb = (L, R)[sa], (L, R)[sb]
            if clear[(sa, sb)] and fits(a, pa) and fits(b, pb):
                return {a: pa, b: pb}
        return {}

    def _place_user_lane(self, plan: Plan) -> None:
        # At C speed: the lane is placed anew for every state of a followed log of 14,000 messages.
        users = self._user_ticks(plan)
        lost = ~plan.sent_mask[users]
        key = (id(self.item.starts), len(self.item.starts), self.by_tokens, users.tobytes(), lost.tobytes())
        if key == self._lane_key:
            return
        self._lane_key = key
        for lane, members in ((self.user_lane, users[~lost]), (self.user_lane_lost, users[lost])):
            xs = (self.item.starts[members] + self.item.widths[members] / 2).tolist()
            lane.set_points(xs, [1.12] * len(xs), members.tolist())

    def _user_ticks(self, plan: Plan) -> np.ndarray:
        """The messages the user lane ticks: the user's own turns. They depend on the session's roles
        and voices only, so a re-plan of the same session reuses them."""
        roles = plan.columns.role
        if self._ticks_of is not None and self._ticks_of[0] is roles and self._ticks_of[1] is self.voices:
            return self._ticks_of[2]
        n = len(roles)
        user = np.fromiter(map("user".__eq__, roles), dtype=bool, count=n)
        if self.voices:
            user &= ~np.fromiter(map(HARNESS_VOICES.__contains__, self.voices), dtype=bool, count=n)
        users = np.flatnonzero(user)
        self._ticks_of = (roles, self.voices, users)
        return users

    def zoom_to(self, first: int, last: int) -> None:
        """Show messages first..last (and a little around them)."""
        if self.plan is None or not len(self.item.starts):
            return
        left, right = self._x_of(first), self._x_of(last) + float(self.item.widths[last])
        margin = max((right - left) * 0.05, 1.0)
        self.setXRange(left - margin, right + margin, padding=0)

    def _hovered(self, position: QPointF) -> None:
        """A segment's message, decision and reason in the tooltip as the pointer moves over it."""
        if self.plan is None:
            return
        point = self.getPlotItem().getViewBox().mapSceneToView(position)
        index = self.item.index_at(point.x()) if -0.3 <= point.y() <= 1.5 else None
        if index is None:
            self.setToolTip(self.help_text)
            return
        m = self.plan.messages[index]
        voice = self.voices[index] if self.voices else ""
        who = f"{voice} (a user turn the user did not write)" if m.role == "user" and voice in ("harness", "observation") else m.role
        # Plain text (the message's role and the plan's own words), escaped for Qt's rich-text detection.
        set_plain_tooltip(self, f"#{m.index} {who} · {m.category} · {counted(m.tokens, 'token')} · {spelled(m.decision.value)}\n{spelled(m.reason)}")

    def _line(self, text: str, color: str, position: float) -> pg.InfiniteLine:
        # The label ends at the line (anchored on its right), so it is never clipped at the far end.
        line = pg.InfiniteLine(pos=0, angle=90, pen=pg.mkPen(color, width=2, style=Qt.PenStyle.DashLine),
                               label=text, labelOpts={"position": position, "color": color, "anchors": [(1, 0.5), (1, 0.5)]})
        line.setVisible(False)
        line.label.setToolTip(define("cut") if text == CUT_LABEL else define("fresh tail"))  # the README glossary's words
        self.addItem(line)
        return line

    def select(self, index: int | None) -> None:
        self.item.set_selected(index)

    # --- a span of messages ---------------------------------------------------------------------
    def select_range(self, first: int, last: int) -> None:
        """Select messages first..last (in either order) as one span."""
        n = len(self.item.starts)
        if self.plan is None or not n:
            return
        first, last = sorted((max(0, min(first, n - 1)), max(0, min(last, n - 1))))
        self.range_region.setVisible(True)
        self.range_region.setRegion((self._x_of(first), self._x_of(last) + float(self.item.widths[last])))

    def clear_range(self) -> None:
        self._range_anchor = None
        if self.selected_range is not None or self.range_region.isVisible():
            self.range_region.setVisible(False)
            self.selected_range = None
            self.rangeChanged.emit(-1, -1)

    def _range_moved(self) -> None:
        """The span's messages: those the region overlaps, at least one."""
        if not self.range_region.isVisible() or not len(self.item.starts):
            return
        lo, hi = self.range_region.getRegion()
        n = len(self.item.starts)
        first = max(0, int(np.searchsorted(self.item.starts, lo, side="right")) - 1)
        ends = self.item.starts + self.item.widths
        first = min(first + int(ends[first] <= lo), n - 1)  # a region starting at a segment's end is not in it
        last = max(first, min(n - 1, int(np.searchsorted(self.item.starts, hi, side="left")) - 1))
        if (first, last) != self.selected_range:
            self.selected_range = (first, last)
            self.rangeChanged.emit(first, last)

    def _drag(self, event, axis=None) -> None:  # type: ignore[no-untyped-def]
        """Shift+drag draws the span; any other drag pans (the view box's own handling)."""
        if not (event.modifiers() & Qt.KeyboardModifier.ShiftModifier) or event.button() != Qt.MouseButton.LeftButton or self.plan is None:
            self._pan(event, axis) if axis is not None else self._pan(event)
            return
        event.accept()
        view = self.getViewBox()
        x = view.mapSceneToView(event.scenePos()).x()
        if event.isStart() or self._range_anchor is None:
            self._range_anchor = view.mapSceneToView(event.buttonDownScenePos()).x()
        self.range_region.setVisible(True)
        self.range_region.setRegion(tuple(sorted((self._range_anchor, x))))
        if event.isFinish():
            self._range_anchor = None

    def keyPressEvent(self, event) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Escape and self.selected_range is not None:
            self.clear_range()
            event.accept()
            return
        super().keyPressEvent(event)

    def set_by_tokens(self, by_tokens: bool) -> None:
        self.by_tokens = by_tokens
        self._extent = 0.0
        if self.plan is not None:
            self.set_plan(None, self.plan, self.item.highlight if self.item.matched is not None else None)

    def _clicked(self, event) -> None:
        if self.plan is None:
            return
        point = self.getPlotItem().getViewBox().mapSceneToView(event.scenePos())
        if not isinstance(point, QPointF):
            return
        index = self.item.index_at(point.x())
        if index is not None:
            self.messageClicked.emit(index)


def move_line(line: pg.InfiniteLine, x: float) -> None:
    """`line` to `x`, untouched when it is there already: pyqtgraph places a line's label and
    repaints it on every `setPos` (a re-plan usually moves the cut alone, not the tail)."""
    if line.value() != x:
        line.setPos(x)


def _grew(before: Session | None, after: Session) -> bool:
    """`after` is a later state of the log `before` was read from (a followed log that grew): the same
    file, and the messages before it had are still its first ones (checked at both ends, not read)."""
    if before is None or not before.source or before.source != after.source:
        return False
    old, new = before.messages, after.messages
    if not old or len(new) < len(old):
        return False
    return new[0].id == old[0].id and new[len(old) - 1].id == old[-1].id
