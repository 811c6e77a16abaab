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
