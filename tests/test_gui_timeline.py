"""The timeline answers: retention and cache hits per turn under the tokens, the replay's cost, every
event marked (overflows too), and a click on the chart moves to that turn."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF  # noqa: E402

from ctxviz.engine.caching import cache_costs  # noqa: E402
from ctxviz.engine.retention import timeline_retention  # noqa: E402
from ctxviz.engine.simulate import simulate  # noqa: E402
from ctxviz.gui.widgets.timeline import TimelineView  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml")


def test_the_window_shows_retention_and_cache_after_a_simulation(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    win.vm.set_policy("supyagent")
    with qtbot.waitSignal(win.vm.answersReady, timeout=60000) as got:
        win.tabs.setCurrentIndex(1)  # the Timeline tab simulates small sessions by itself
    timeline, retention, cache, _note = got.args
    assert timeline is win.vm.timeline and win.timeline.answers_plot.isVisible()
    names = [item.name() for item in win.timeline.answers_plot.listDataItems()]
    assert "anchors still sent (retention)" in names and "request served from the cache" in names
    # the same figures as the engine computes for the same replay
    assert [p.score for p in retention.points] == [p.score for p in timeline_retention(timeline).points]
    assert cache.cost == pytest.approx(cache_costs(timeline).cost)
    assert f"cache hits {cache.hit_share:.0%}" in win.timeline.answers_label.text()


def test_overflows_are_marked_and_a_click_moves_to_the_turn(qtbot) -> None:  # type: ignore[no-untyped-def]
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    timeline = simulate(load_session(SAMPLE), "missy", {"total": 11000})
    assert any(e.kind == "overflow" for e in timeline.events)
    view.set_timeline(timeline)
    assert "the context stops fitting" in [item.name() for item in view.plot.listDataItems()]
    target = timeline.turns[40].index
    scene = view.plot.getPlotItem().vb.mapViewToScene(QPointF(target + 0.2, 1000))

    class Click:
        def scenePos(self) -> QPointF:  # noqa: N802 (pyqtgraph's event API)
            return scene

    view._clicked(Click())
    assert view.slider.value() == 40


def test_where_did_it_go_shades_the_turns_and_says_what_removed_it(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.retention import where

    win = open_window(SAMPLE)
    win.vm.set_policy("supyagent")
    with qtbot.waitSignal(win.vm.timelineReady, timeout=60000):
        win.tabs.setCurrentIndex(1)
    win.timeline.find.setText("#412")
    with qtbot.waitSignal(win.vm.whereReady, timeout=60000) as got:
        win.timeline.find.returnPressed.emit()
    found = got.args[2]
    assert found.spans == where(win.vm.timeline, "#412").spans and found.spans
    assert [r.getRegion() for r in win.timeline.find_regions] == [(a - 0.5, b + 0.5) for a, b in found.spans]
    text = win.timeline.find_result.text()
    assert "in the context at turns" in text and "left at turn" in text
