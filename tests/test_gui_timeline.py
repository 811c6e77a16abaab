"""The timeline answers: retention and cache hits per turn under the tokens, the replay's cost, every
event marked (overflows too), and a click on the chart moves to that turn."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF  # noqa: E402

from ctxviz.engine.caching import cache_costs  # noqa: E402
from ctxviz.engine.retention_timeline import timeline_retention  # noqa: E402
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
    from ctxviz.engine.where import where

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


def test_the_tokens_not_sent_have_their_own_axis_and_follow_the_replay(qtbot) -> None:  # type: ignore[no-untyped-def]
    """What each turn leaves out of the conversation, drawn on the right so the sawtooth keeps its height."""
    from ctxviz.gui.widgets.timeline import NOT_SENT_NAME

    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    timeline = simulate(load_session(SAMPLE), "supyagent")
    view.set_timeline(timeline)
    assert view.not_sent_curve is not None
    _, ys = view.not_sent_curve.getData()
    assert list(ys) == [t.not_sent for t in timeline.turns] and max(ys) > max(t.tokens_sent for t in timeline.turns) / 10
    assert view.plot.getPlotItem().getAxis("right").labelText == "tokens not sent"
    legend = [label.text for _, label in view.plot.getPlotItem().legend.items]
    assert legend.count(NOT_SENT_NAME) == 1
    view.set_timeline(timeline)  # drawn again: one entry, not two
    assert [label.text for _, label in view.plot.getPlotItem().legend.items].count(NOT_SENT_NAME) == 1
    view.slider.setValue(len(timeline.turns) - 1)
    assert f"{timeline.turns[-1].not_sent:,} tokens of the conversation not sent" in view.label.text()


def test_a_replay_that_sent_everything_has_no_scale_for_what_it_did_not_send(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The Gemini CLI sample sends every message at every call: the right axis says "none" instead
    of a lone "1", and the trigger, half of a million-token limit, is named above the chart with
    the budget (it was drawn off the chart without a word). A replay that drops gets its scale back."""
    from ctxviz.gui.widgets.timeline import NOT_SENT_NAME, NOT_SENT_NONE

    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(1100, 600)
    view.show()
    gemini = simulate(load_session(str(Path(SAMPLE).with_name("gemini_cli_session.json"))), "gemini-cli-compression")
    assert not any(t.not_sent for t in gemini.turns)
    view.set_timeline(gemini)
    right = view.plot.getPlotItem().getAxis("right")
    assert right.labelText == NOT_SENT_NONE and not right.style["showValues"]
    assert NOT_SENT_NONE in [label.text for _, label in view.plot.getPlotItem().legend.items]
    assert view.plot.getPlotItem().titleLabel.text == "trigger 524k, budget 1.05M: above the chart"
    dropping = simulate(load_session(SAMPLE), "supyagent")
    view.set_timeline(dropping)
    assert right.labelText == "tokens not sent" and right.style["showValues"]
    legend = [label.text for _, label in view.plot.getPlotItem().legend.items]
    assert NOT_SENT_NAME in legend and NOT_SENT_NONE not in legend
    near = simulate(load_session(str(Path(SAMPLE).with_name("gemini_cli_session.json"))), "gemini-cli-compression", {"tokenLimit": 40000})
    view.set_timeline(near)  # the trigger (20,000) near the curve (15,043 reported): in view, not in the title
    top = view.plot.getPlotItem().vb.viewRange()[1][1]
    assert top >= 20_000 and "trigger" not in view.plot.getPlotItem().titleLabel.text


def test_every_event_is_ticked_on_the_turn_slider_and_named_on_hover(qtbot) -> None:  # type: ignore[no-untyped-def]
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    timeline = simulate(load_session(SAMPLE), "supyagent", {"max_messages_before_summary": 12})
    events = [(k, e) for k, t in enumerate(timeline.turns) for e in t.events]
    assert len(events) >= 3
    view.set_timeline(timeline)
    assert [m[0] for m in view.slider.marks] == [k for k, _ in events]
    k, event = events[1]
    x = view.slider.mark_x(k)
    # the tick sits where the handle stands at that turn
    view.slider.setValue(k)
    handle_centre = view.slider.mark_x(view.slider.value())
    assert x == handle_centre
    assert event.message in view.slider.tooltip_at(x) and f"turn {timeline.turns[k].index}" in view.slider.tooltip_at(x)
    far = next(px for px in range(view.slider.width()) if all(abs(px - view.slider.mark_x(m[0])) > 10 for m in view.slider.marks))
    assert view.slider.tooltip_at(far) == ""
    view.set_timeline(None)
    assert view.slider.marks == []


def test_the_chart_fills_turn_by_turn_while_the_replay_runs(qtbot, open_window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A replay draws its turns so far, on the session's whole turn axis, before it ends (every
    report is drawn here; the app draws at most four a second)."""
    from ctxviz.gui import viewmodel
    from tests.builders import session

    monkeypatch.setattr(viewmodel, "PARTIAL_INTERVAL_S", 0.0)
    big = session(*[("user" if i % 2 == 0 else "assistant", f"step {i}: edit src/module_{i}.py " + "word " * 80) for i in range(600)])
    win = open_window(SAMPLE)
    win.vm.set_session(big)
    seen: list[tuple[int, int, str, bool, int, float]] = []

    def drawn(timeline, total) -> None:  # type: ignore[no-untyped-def]
        # connected after the window's own slot: what the window shows for this partial replay
        view = win.timeline
        seen.append((len(timeline.turns), total, view.label.text(), view.slider.isEnabled(), view.slider.value(),
                     view.plot.getPlotItem().vb.viewRange()[0][1]))

    win.vm.timelinePartial.connect(drawn)
    with qtbot.waitSignal(win.vm.timelineReady, timeout=120000):
        win.simulate()
    assert len(seen) >= 5
    sizes = [done for done, *_ in seen]
    assert sizes == sorted(sizes) and sizes[-1] < 300
    for done, total, label, enabled, value, right in seen:
        assert total == 300 and f"{done:,} of 300 turns replayed" in label  # a step per request: before each of the 300 replies
        assert not enabled and value == done - 1 and right >= 590  # the whole turn axis, filling left to right
    assert len(win.timeline.timeline.turns) == 300 and win.timeline.slider.isEnabled()
    assert "turns replayed" not in win.timeline.label.text()


@pytest.mark.parametrize("size", [(1000, 420), (1600, 900)])
def test_the_legend_never_covers_the_curves_and_the_budget_at_any_height(qtbot, size) -> None:  # type: ignore[no-untyped-def]
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    timeline = simulate(load_session(str(Path(SAMPLE).parent / "claude_code_compaction.jsonl")), "mnesis")
    view.set_timeline(timeline)
    qtbot.wait(50)
    item = view.plot.getPlotItem()
    # (issue 24: the legend has a row of its own under the chart, so no curve can run under it)
    legend = item.legend.sceneBoundingRect()
    assert legend.height() > 0 and not legend.intersects(item.vb.sceneBoundingRect())
    assert not legend.intersects(view.not_sent_box.sceneBoundingRect())
    highest = max(max(t.tokens_sent for t in timeline.turns), max(t.budget for t in timeline.turns),
                  max((v for _, v in view.reported_usage(timeline)), default=0))
    top = item.vb.sceneBoundingRect().top()
    assert item.vb.mapViewToScene(QPointF(0, highest)).y() >= top  # every curve inside the chart
    peak_not_sent = max(t.not_sent for t in timeline.turns)
    assert view.not_sent_box.mapViewToScene(QPointF(0, peak_not_sent)).y() >= top


def test_a_legend_beside_a_tall_chart_keeps_each_label_level_with_its_sample(qtbot) -> None:  # type: ignore[no-untyped-def]
    """On a tab shorter than SHORT_TAB the legends go beside the charts; where the chart is still
    tall (the exported report: 1400 wide, the tab 700 tall) its cell is taller than the entries.
    Stretched over it, each label sat a row's height above its sample line (the report showed
    "tokens sent" with its line under the next entry's text); the entries keep their own height,
    at the top of the cell."""
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(1400, 700)
    view.show()
    view.set_timeline(simulate(load_session(SAMPLE), "missy"))
    qtbot.wait(50)
    assert view.legends_beside()
    for plot in (view.plot, view.answers_plot):
        legend = plot.getPlotItem().legend
        if legend is None or not legend.items or not plot.isVisible():
            continue
        for sample, label in legend.items:
            sample_middle = sample.sceneBoundingRect().center().y()
            label_middle = label.item.sceneBoundingRect().center().y()  # (the text itself: a LabelItem is as tall as its row)
            assert abs(sample_middle - label_middle) <= 4, (label.text, sample_middle, label_middle)
        # the entries at the top of the cell, not spread over it
        assert legend.sceneBoundingRect().top() <= plot.getPlotItem().vb.sceneBoundingRect().top() + 2


def test_a_session_without_user_instructions_claims_no_share_of_them(qtbot) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.session import Message, Session, TextPart

    texts = ["What does src/app/main.py do?", "It starts the server on port 8080.", "And src/app/db.py?", "It opens the database."]
    session = Session(messages=tuple(Message(id=f"m{i}", index=i, role=("user", "assistant")[i % 2], parts=(TextPart(t),))
                                     for i, t in enumerate(texts)), source="<test>", format="test")
    view = TimelineView()
    qtbot.addWidget(view)
    timeline = simulate(session, "missy", {})
    view.set_timeline(timeline)
    retention = timeline_retention(timeline)
    assert retention.points and all(p.instructions == 0 for p in retention.points)
    view.set_answers(timeline, retention, None)
    assert "no user instruction in the session so far" in view.answers_label.text()
    assert "%" not in view.answers_label.text().split("anchors,")[1].split(".")[0]
    names = [item.name() for item in view.answers_plot.listDataItems()]
    assert "anchors still sent (retention)" in names and "user instructions still sent" not in names
