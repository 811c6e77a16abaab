"""The Timeline tab (issue 24): a list of the agent's calls that moves the turn slider, the
composition of each request in bands per category (computed on a worker, sampled on long replays),
and legends that never cover the data."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.caching import cache_costs  # noqa: E402
from ctxviz.engine.calls import agent_calls  # noqa: E402
from ctxviz.engine.composition import ADDED, composition, sample_steps  # noqa: E402
from ctxviz.engine.simulate import simulate  # noqa: E402
from ctxviz.gui.main_window import TIMELINE_TAB  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
CLAUDE = SAMPLES / "claude_code_compaction.jsonl"


def test_each_call_has_the_providers_figures_beside_what_the_policy_sends() -> None:
    session = load_session(CLAUDE)
    timeline = simulate(session, "claude-code")
    cache = cache_costs(timeline)
    rows = agent_calls(timeline, cache)
    assert [r.step for r in rows] == list(range(len(timeline.turns)))
    for r, t in zip(rows, timeline.turns, strict=True):
        assert r.sent == t.tokens_sent and r.index == t.index
        usage = session.messages[t.reply].usage if t.reply >= 0 else None
        if usage is not None and usage.window_fill:
            assert not r.estimated and (r.input, r.cached) == (usage.window_fill, usage.cache_read_input_tokens)
            assert r.difference == t.tokens_sent - usage.window_fill
            assert r.cost == pytest.approx(cache.cache.price(usage.cache_read_input_tokens, usage.cache_creation_input_tokens, usage.input_tokens))


def test_a_log_without_usage_shows_the_cache_models_estimate_and_no_difference() -> None:
    timeline = simulate(load_session(SAMPLES / "support_chat.yaml"), "missy")
    rows = agent_calls(timeline, cache_costs(timeline))
    assert rows and all(r.estimated and r.difference is None and r.input is not None for r in rows)


def test_the_calls_list_moves_the_slider_and_follows_it(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(CLAUDE)
    with qtbot.waitSignal(win.vm.answersReady, timeout=120000):
        win.tabs.setCurrentIndex(TIMELINE_TAB)
    view = win.timeline.calls
    model = view.calls
    assert model.rowCount() == len(win.vm.timeline.turns) and win.timeline.calls_box.isVisible()
    row = 10
    assert model.index(row, 3).data() == f"{model.rows[row].input:,}" and model.index(row, 5).data().startswith("$")
    with qtbot.waitSignal(win.vm.planReady, timeout=10000):
        view.clicked.emit(model.index(row, 0))
    assert win.timeline.slider.value() == model.rows[row].step
    assert len(win.shown_session.messages) == model.rows[row].index + 1  # the overview shows that call's context
    win.timeline.slider.setValue(20)
    assert view.currentIndex().row() == 20


def test_composition_bands_add_up_to_each_steps_tokens_and_say_when_sampled() -> None:
    timeline = simulate(load_session(SAMPLES / "support_chat.yaml"), "missy")
    found = composition(timeline)
    assert found is not None and not found.sampled and found.steps == tuple(range(len(timeline.turns)))
    for j, k in enumerate(found.steps):
        assert sum(band[j] for band in found.bands.values()) == timeline.turns[k].tokens_sent
    assert "tool output" not in found.bands and "system_output" in found.bands  # categories by their engine names
    sampled = composition(timeline, limit=10)
    assert sampled is not None and sampled.sampled and len(sampled.steps) == 10 and sampled.steps[-1] == len(timeline.turns) - 1
    assert "sampled at 10 of" in sampled.describe()
    assert sample_steps(5, 10) == [0, 1, 2, 3, 4]
    assert composition(timeline, should_stop=lambda: True) is None
    assert ADDED in found.bands  # missy's system prompt and summaries are outside the messages


def test_the_timeline_draws_the_bands_from_a_worker(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLES / "support_chat.yaml")
    with qtbot.waitSignal(win.vm.compositionReady, timeout=120000) as got:
        win.tabs.setCurrentIndex(TIMELINE_TAB)
    timeline, found = got.args
    assert timeline is win.vm.timeline and found.bands
    legend = [label.text for _, label in win.timeline.plot.getPlotItem().legend.items]
    assert "Tool output (sent)" in legend and "Dialog (sent)" in legend
    assert len(win.timeline.band_items) == 1 + 2 * len(found.bands)


@pytest.mark.parametrize("size", [(1280, 720), (1024, 700)])
def test_no_legend_covers_a_chart(qtbot, open_window, size) -> None:  # type: ignore[no-untyped-def]
    win = open_window(CLAUDE)
    win.resize(*size)
    with qtbot.waitSignal(win.vm.answersReady, timeout=120000):
        win.tabs.setCurrentIndex(TIMELINE_TAB)
    def clear() -> bool:
        items = [plot.getPlotItem() for plot in (win.timeline.plot, win.timeline.answers_plot)]
        return all(i.legend is not None and i.legend.items and not i.legend.sceneBoundingRect().intersects(i.vb.sceneBoundingRect())
                   for i in items)

    # The legends are laid out in columns measured after the charts get their size: wait for the
    # layout to settle (a loaded machine takes longer than 100 ms), then hold it to the rule.
    qtbot.waitUntil(clear, timeout=10000)
    for plot in (win.timeline.plot, win.timeline.answers_plot):
        item = plot.getPlotItem()
        assert item.legend is not None and item.legend.items
        assert not item.legend.sceneBoundingRect().intersects(item.vb.sceneBoundingRect())
