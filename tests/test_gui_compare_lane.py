"""Compare's difference lane: one mark per message decided differently, of the right kind, on the
strips' own token axis; a click opens the message."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF  # noqa: E402

from ctxviz.gui.widgets.diff_lane import KINDS  # noqa: E402

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml")


def compared(qtbot, win, policy: str, overrides: str):  # type: ignore[no-untyped-def]
    win.compare.policy.setCurrentText(policy)
    win.compare.overrides.setText(overrides)
    with qtbot.waitSignal(win.vm.compareReady, timeout=30000):
        win.compare.request()
    return win.compare.shown


def test_the_lane_marks_who_sends_each_differing_message(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    a, b = compared(qtbot, win, "missy", "total=40000 fresh_tail_count=40")
    lane = win.compare.lane
    expected = []
    for x, y in zip(a.messages, b.messages, strict=True):
        if x.decision != y.decision:
            expected.append((x.index, "a" if x.sent and not y.sent else "b" if y.sent and not x.sent else "both"))
    assert lane.marks == expected and {k for _, k in expected} == {"b"}  # a bigger budget only adds
    bar = lane.bars["b"]
    starts = [float(win.compare.strip_a.item.starts[i]) for i, _ in expected]
    assert list(bar.opts["x0"]) == pytest.approx(starts)
    assert f"{len(expected):,} messages decided differently" in win.compare.lane_label.text()
    # the lane and the strips share one axis: the same tokens are the same pixel column on screen
    win.compare.strip_a.setXRange(1000, 5000, padding=0)

    def screen_x(plot, x: float) -> int:  # type: ignore[no-untyped-def]
        scene = plot.getViewBox().mapViewToScene(QPointF(x, 0.5))
        return plot.mapToGlobal(plot.mapFromScene(scene)).x()

    for x in (1500.0, 3000.0, 4500.0):
        assert abs(screen_x(lane, x) - screen_x(win.compare.strip_a, x)) <= 1
        assert abs(screen_x(win.compare.strip_b, x) - screen_x(win.compare.strip_a, x)) <= 1
    # a click on a mark opens that message
    index = expected[len(expected) // 2][0]
    x = float(win.compare.strip_a.item.starts[index] + win.compare.strip_a.item.widths[index] / 2)
    win.compare.strip_a.setXRange(x - 2000, x + 2000, padding=0)
    assert lane.index_at(x) == index
    with qtbot.waitSignal(win.compare.messageRequested, timeout=2000) as got:
        lane.messageClicked.emit(lane.index_at(x))
    assert got.args == [index]


def test_each_kind_has_its_own_colour_and_a_policy_against_another_shows_what_each_sends(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    assert len({colour for _, colour, _ in KINDS}) == 3
    win = open_window(SAMPLE)
    a, b = compared(qtbot, win, "supyagent", "")
    kinds = {k for _, k in win.compare.lane.marks}
    sent_only_by_a = [x.index for x, y in zip(a.messages, b.messages, strict=True) if x.sent and not y.sent]
    sent_only_by_b = [x.index for x, y in zip(a.messages, b.messages, strict=True) if y.sent and not x.sent]
    assert ("a" in kinds) == bool(sent_only_by_a) and ("b" in kinds) == bool(sent_only_by_b) and kinds
