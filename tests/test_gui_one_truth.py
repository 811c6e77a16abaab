"""One truth on every tab: the scrubbed turn is what the context tab shows, copies and exports, and
a comparison made before a change says it is of an earlier view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QGuiApplication  # noqa: E402

from ctxviz.gui.main_window import CONTEXT_TAB  # noqa: E402

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml")


@pytest.fixture
def window(open_window):  # type: ignore[no-untyped-def]
    return open_window(SAMPLE)


def test_copy_and_export_give_the_scrubbed_turn(qtbot, window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(window.vm.timelineReady, timeout=60000):
        window.tabs.setCurrentIndex(1)
    step = window.vm.timeline.step_of(60)  # the first model call whose request holds #60
    turn = window.vm.timeline.turns[step].index
    assert 0 < step < len(window.vm.timeline.turns) - 1
    with qtbot.waitSignal(window.vm.planReady, timeout=10000):
        window.timeline.slider.setValue(step)
    window.context_format.setCurrentText("openai")
    window.tabs.setCurrentIndex(CONTEXT_TAB)
    assert f"the replay at turn {turn}" in window.context_scope.text()
    window.copy_context()
    copied = json.loads(QGuiApplication.clipboard().text())
    target = tmp_path / "context.json"
    window.write_export(str(target), "openai")
    exported = json.loads(target.read_text())
    assert exported == copied
    sent_there = sum(1 for m in window.vm.timeline.plan_at(step).messages if m.sent)
    whole_file = sum(1 for m in window.vm.plan.messages if m.sent)
    # (followed by why the request has another number of entries, when it has: issue 24)
    assert sent_there != whole_file and f"({sent_there:,} of {turn + 1:,} messages sent" in window.context_scope.text()


def test_a_comparison_says_when_it_is_of_an_earlier_view_and_a_row_opens_the_message(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.tabs.setCurrentIndex(2)
    window.compare.policy.setCurrentText("supyagent")
    with qtbot.waitSignal(window.vm.compareReady, timeout=30000):
        window.compare.request()
    assert not window.compare.stale.isVisible()
    assert window.compare.label_a.text() == "A: missy (defaults) (the current view)"
    assert window.compare.label_b.text() == "B: supyagent (context_limit=128000)"  # its limit for gpt-4o, resolved
    # Grouped by both sides' decisions and reasons (issue 24): a group opens to its messages.
    group = window.compare.group_items()[0]
    group.setExpanded(True)
    first = group.child(0).text(0).lstrip("#")
    with qtbot.waitSignal(window.vm.planReady, timeout=30000):
        window.vm.set_param("total", 12_000)
    assert window.compare.stale.isVisible() and "an earlier A (missy (defaults))" in window.compare.stale_label.text()
    assert "missy (total=12000)" in window.compare.stale_label.text()
    window.compare._open_item(group.child(0))
    assert window.tabs.currentIndex() == 0 and window.selected == int(first)


def test_compare_prices_both_sides_with_prompt_caching(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.caching import cache_costs
    from ctxviz.engine.simulate import simulate

    window.compare.policy.setCurrentText("supyagent")
    with qtbot.waitSignal(window.vm.compareCosted, timeout=120000) as got:
        window.compare.request()
    _a, _b, cost_a, cost_b = got.args
    session = window.vm.session
    assert cost_a.cost == pytest.approx(cache_costs(simulate(session, "missy")).cost)
    assert cost_b.cost == pytest.approx(cache_costs(simulate(session, "supyagent")).cost)
    text = window.compare.costs.text()
    assert f"A replayed: input ${cost_a.cost:,.4f}" in text and f"cache hits {cost_b.hit_share:.0%}" in text
