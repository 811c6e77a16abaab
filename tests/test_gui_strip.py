"""The strip at scale: a lane of the user's messages (red where not sent), hover details, zoom to the
cut and to what is sent, and readable token axes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")


from ctxviz.gui.widgets.axes import ThousandsAxis  # noqa: E402
from ctxviz.gui.widgets.message_strip import USER_LOST, USER_SENT  # noqa: E402

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml")


@pytest.fixture
def window(open_window):  # type: ignore[no-untyped-def]
    return open_window(SAMPLE)


def test_the_user_lane_marks_every_user_message_and_which_are_lost(window) -> None:  # type: ignore[no-untyped-def]
    plan, strip = window.vm.plan, window.strip
    users = [m for m in plan.messages if m.role == "user"]
    lost = [p.data() for p in strip.user_lane_lost.points()]
    sent = [p.data() for p in strip.user_lane.points()]
    assert lost == [m.index for m in users if not m.sent] and lost  # missy drops the opening request
    assert sent == [m.index for m in users if m.sent]
    assert strip.user_lane_lost.opts["brush"].color().name() == USER_LOST and strip.user_lane.opts["brush"].color().name() == USER_SENT


def test_zoom_to_the_cut_and_to_what_is_sent(window) -> None:  # type: ignore[no-untyped-def]
    strip, plan = window.strip, window.vm.plan
    window.registry.trigger("zoom-cut")
    (left, right), _ = strip.getViewBox().viewRange()
    assert left <= strip._x_of(145) <= right and right - left < strip.item._bounds.width() / 2
    window.registry.trigger("zoom-sent")
    (left, right), _ = strip.getViewBox().viewRange()
    # From the first message sent that is not a system message (issue 24: the system prompt at #0
    # and the system notes folded into it made "what is sent" the whole strip).
    first_sent = next(m.index for m in plan.messages if m.sent and m.role != "system")
    assert left <= strip._x_of(first_sent) and right >= strip._x_of(len(plan.messages) - 1)
    assert left > strip._x_of(1)


def test_hovering_a_segment_names_its_message(window) -> None:  # type: ignore[no-untyped-def]
    strip = window.strip
    x = strip._x_of(145) + float(strip.item.widths[145]) / 2
    scene = strip.getViewBox().mapViewToScene(__import__("PySide6.QtCore", fromlist=["QPointF"]).QPointF(x, 0.5))
    strip._hovered(scene)
    assert "#145 " in strip.toolTip() and "689 tokens did not fit" in strip.toolTip()


def test_token_axes_read_as_whole_numbers() -> None:
    axis = ThousandsAxis("bottom")
    assert axis.tickStrings([0, 7_842_000, 125_000.0], 1.0, 1000) == ["0", "7,842,000", "125,000"]


def test_the_overview_shows_the_whole_session_and_where_the_strip_looks(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    """Zoomed into the cut, the band under the strip still shows every message, the cut, and the
    strip's view as a window; dragging the window or clicking the band moves the strip."""
    strip, overview = window.strip, window.strip_overview
    whole = strip.item._bounds.width()
    assert overview.item.starts is strip.item.starts and overview.item.decisions == strip.item.decisions
    assert overview.getViewBox().viewRange()[0] == pytest.approx([0, whole])
    assert overview.cut_line.isVisible() and overview.cut_line.value() == pytest.approx(strip.cut_line.value())
    window.registry.trigger("zoom-cut")
    view = strip.getViewBox().viewRange()[0]
    assert overview.window.getRegion() == pytest.approx(view) and view[1] - view[0] < whole / 2
    width = view[1] - view[0]
    # drag the window to the start: the strip follows, at the same zoom
    overview.window.setRegion((0, width))
    assert strip.getViewBox().viewRange()[0] == pytest.approx([0, width], abs=whole * 1e-6)
    assert strip.item.index_at(1.0) == 0
    # a click in the band centres the strip's view there
    overview.centre_on(whole * 0.5)
    left, right = strip.getViewBox().viewRange()[0]
    assert (left + right) / 2 == pytest.approx(whole * 0.5, rel=1e-3) and right - left == pytest.approx(width, rel=1e-3)
    overview.centre_on(whole * 10)  # never past the end
    assert strip.getViewBox().viewRange()[0][1] == pytest.approx(whole, rel=1e-3)
    # a re-plan moves the cut in the band too
    window.vm.set_param("total", 20000)
    qtbot.waitUntil(lambda: overview.cut_line.value() == pytest.approx(strip.cut_line.value()) and overview.item.decisions == strip.item.decisions,
                    timeout=10000)


def test_the_detail_panel_shows_a_messages_tool_calls_once(open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(str(Path(SAMPLE).parent / "coding_agent.yaml"))
    message = next(m for m in win.vm.session.messages if m.tool_calls and any(p.kind == "text" for p in m.parts))
    win.select_message(message.index)
    shown = win.detail.toPlainText()
    call = message.tool_calls[0]
    assert shown.count(f"{call.name}(") == 1 and "Tool calls" in shown
    words = next(p.text for p in message.parts if p.kind == "text")
    assert words.splitlines()[0] in shown


def test_the_cut_and_tail_labels_never_overlap(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    """A cut a few pixels before the protected tail wrote "cuprotected tail ▸"."""
    strip = window.strip

    def overlap() -> bool:
        a = strip.cut_line.label.sceneBoundingRect()
        b = strip.tail_line.label.sceneBoundingRect()
        return a.intersects(b)

    window.vm.set_param("fresh_tail_count", 60)
    qtbot.waitUntil(lambda: window.vm.plan.params["fresh_tail_count"] == 60, timeout=10000)
    assert strip.cut_line.isVisible() and strip.tail_line.isVisible()
    assert strip.tail_line.label.anchors == strip.RIGHT_OF_LINE and not overlap()
    strip.zoom_to(0, len(window.vm.plan.messages) - 1)
    assert not overlap()
    # far apart again: the tail's label ends at its line, as before
    window.vm.set_param("fresh_tail_count", 16)
    qtbot.waitUntil(lambda: window.vm.plan.params["fresh_tail_count"] == 16, timeout=10000)
    assert strip.tail_line.label.anchors == strip.LEFT_OF_LINE and not overlap()


def test_a_lanes_ticks_set_at_once_are_the_points_pyqtgraph_makes(qapp) -> None:  # type: ignore[no-untyped-def]
    """`UniformScatter.set_points` builds the record array `setData(x, y, data=...)` builds (the
    lanes are redrawn from it, and the tests and the hover read it), only faster."""
    import numpy as np
    import pyqtgraph as pg

    from ctxviz.gui.widgets.message_strip import UniformScatter

    made = [UniformScatter(symbol="s", size=6, pen=None, pxMode=True, brush=pg.mkBrush(USER_SENT)) for _ in range(2)]
    theirs, ours = made
    rng = np.random.default_rng(7)
    for n in (0, 1, 5, 1400, 3):
        xs, members = (rng.random(n) * 1e5).tolist(), sorted(rng.choice(10_000, n, replace=False).tolist())
        theirs.setData(xs, [1.12] * n, data=members)
        ours.set_points(xs, [1.12] * n, members)
        assert theirs.data.dtype == ours.data.dtype
        for name in theirs.data.dtype.names:
            if theirs.data.dtype[name].hasobject:
                assert list(ours.data[name]) == list(theirs.data[name]), name
            else:
                assert np.array_equal(ours.data[name], theirs.data[name]), name
        assert [int(p.data()) for p in ours.points()] == members
        assert (ours.dataBounds(0), ours.dataBounds(1)) == (theirs.dataBounds(0), theirs.dataBounds(1))
        assert (ours._maxSpotWidth, ours._maxSpotPxWidth) == (theirs._maxSpotWidth, theirs._maxSpotPxWidth)


@pytest.mark.parametrize("zoom", ["zoom-all", "zoom-cut", "zoom-sent"])
def test_the_strip_paints_what_a_rectangle_per_segment_paints(window, zoom) -> None:  # type: ignore[no-untyped-def]
    """The segments are painted in batches per style from numpy arrays: the same pixels as each
    visible segment (or merged pixel run) drawn as a rectangle of its own, in message order."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QColor, QImage, QPainter, QPen

    from ctxviz.engine.plan import Decision
    from ctxviz.gui.theme import CATEGORY_COLORS

    strip = window.strip
    window.registry.trigger(zoom)
    item = strip.item

    def one_by_one(painter: QPainter) -> None:
        xs, ws, styles, exact = item._visible_segments()
        cosmetic = QPen(QColor(0, 0, 0, 0))
        for x, w, s in zip(xs.tolist(), ws.tolist(), styles.tolist(), strict=True):
            category, decision = item.style_keys[s]
            rect = QRectF(x, 0.3, w, 0.4) if decision is Decision.DROPPED else QRectF(x, 0.0, w, 1.0)
            item._fill(painter, ([rect],), QColor(CATEGORY_COLORS.get(category, "#b0b0b0")), decision, cosmetic)

    def segments_only(painter: QPainter) -> None:
        kept = item._paint_truncated, item._paint_separators, item._outline
        item._paint_truncated = item._paint_separators = item._outline = lambda *_: None  # type: ignore[method-assign]
        try:
            item.paint(painter)
        finally:
            item._paint_truncated, item._paint_separators, item._outline = kept

    def shot(paint) -> QImage:  # type: ignore[no-untyped-def]
        image = QImage(strip.size(), QImage.Format.Format_ARGB32)
        image.fill(0)
        painter = QPainter(image)
        painter.setTransform(item.deviceTransform(strip.viewportTransform()))
        paint(painter)
        painter.end()
        return image

    assert len(item._visible_segments()[0]) > 1
    assert shot(segments_only) == shot(one_by_one)
