"""The app tells the truth at a glance, at any size, for any log (issue 24): one budget picture,
statements that do not mislead, and a window that stays legible at 10,000 messages and 1024x700.

Each test names the point of the issue it holds the app to."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QColor  # noqa: E402
from PySide6.QtWidgets import QComboBox  # noqa: E402

from ctxviz.engine.caching import NO_MODEL, CacheReport, TurnCache  # noqa: E402
from ctxviz.engine.checks import PlanOptions  # noqa: E402
from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.explain import Difference  # noqa: E402
from ctxviz.engine.plan import Decision, MessagePlan  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import get_policy, policy_names  # noqa: E402
from ctxviz.engine.simulate import simulate  # noqa: E402
from ctxviz.gui.main_window import TIMELINE_TAB  # noqa: E402
from ctxviz.gui.status import SEPARATOR, status_text  # noqa: E402
from ctxviz.gui.theme import CATEGORY_COLORS, CATEGORY_LABELS, PART_COLORS, WARNING  # noqa: E402
from ctxviz.gui.widgets.axes import ThousandsAxis  # noqa: E402
from ctxviz.gui.widgets.budget_pie import BudgetPie, segments  # noqa: E402
from ctxviz.gui.widgets.category_bars import CategoryBars  # noqa: E402
from ctxviz.gui.widgets.diff_lane import kind_of  # noqa: E402
from ctxviz.gui.widgets.event_slider import DENSE_MARKS  # noqa: E402
from ctxviz.gui.widgets.message_strip import MessageStrip, sent_span  # noqa: E402
from ctxviz.gui.widgets.param_form import field_choices  # noqa: E402
from ctxviz.gui.widgets.timeline import DENSE_EVENTS, IDLE_TEXT, REST_MS, TimelineView  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

from . import gui_windows  # noqa: E402
from .test_gui_scale import agent_session  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
SUPPORT = str(SAMPLES / "support_chat.yaml")
CLAUDE = str(SAMPLES / "claude_code_compaction.jsonl")
#: memory_fraction + learnings_fraction = 1.4: missy's history allotment is negative (-10,400).
OVERSUBSCRIBED = {"memory_fraction": 0.9, "learnings_fraction": 0.5}


def plan_of(policy: str, params: dict | None = None, path: str = SUPPORT):  # type: ignore[no-untyped-def]
    return plan_session(load_session(path), policy, get_policy(policy).make_params(params or {}), store=CountStore(),
                        options=PlanOptions())


def pie_of(qtbot, plan, size=(700, 260), **kwargs):  # type: ignore[no-untyped-def]
    pie = BudgetPie()
    qtbot.addWidget(pie)
    pie.resize(*size)
    pie.set_plan(plan, **kwargs)
    return pie


def count_colour(image, colour: str, tolerance: int = 40) -> int:  # type: ignore[no-untyped-def]
    target = QColor(colour)
    return sum(1 for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)
               if abs(image.pixelColor(x, y).red() - target.red()) + abs(image.pixelColor(x, y).green() - target.green())
               + abs(image.pixelColor(x, y).blue() - target.blue()) < tolerance)


# --- one honest budget picture -------------------------------------------------------------------
def test_a_category_has_one_name_and_one_colour_in_the_donut_the_bars_and_the_table(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    """Dialog was green in the donut and blue in the bars; tool output "System output" in mauve in one
    place and "Tool output" in orange in another."""
    win = open_window(SUPPORT)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_policy("categories")
    pie, plan = win.pie, win.vm.plan
    names = [name for name, _, _ in pie.parts]
    assert set(names) <= set(CATEGORY_COLORS)
    assert pie.colors == [CATEGORY_COLORS[n] for n in names]
    legend = pie.legend_lines()
    for name in names:
        assert any(line.startswith(CATEGORY_LABELS[name] + "  ") for line in legend), name
    assert not any("System output" in line for line in legend)
    ticks = [label for _, label in win.bars.getAxis("bottom")._tickLevels[0]]
    assert "Tool output" in ticks and all(t in CATEGORY_LABELS.values() for t in ticks)
    row = next(m.index for m in plan.messages if m.category == "system_output")
    assert win.model.data(win.model.index(win.model.view_row(row), 3)) == "Tool output"
    # Parts that are not categories never borrow a category's colour (missy's orange tool-definitions reserve
    # read as tool output); the one holding the system prompt takes the System colour.
    missy = plan_of("missy")
    pie.set_plan(missy)
    colours = dict(zip([n for n, _, _ in pie.parts], pie.colors, strict=True))
    assert colours["system_reserve"] == CATEGORY_COLORS["system"]
    assert all(c not in CATEGORY_COLORS.values() for n, c in colours.items() if n != "system_reserve")
    assert set(PART_COLORS).isdisjoint(CATEGORY_COLORS.values())


def test_the_ring_is_the_budget_with_a_free_space_slice(qtbot) -> None:  # type: ignore[no-untyped-def]
    for policy in ("missy", "categories", "claude-code", "langchain-trim"):
        plan = plan_of(policy)
        pie = pie_of(qtbot, plan)
        segs = segments(pie.parts, pie.total, pie.caps)
        assert sum(s.tokens for s in segs) == plan.totals.budget, policy  # it fits: the ring is exactly the budget
        assert sum(s.tokens for s in segs if s.kind in ("used", "over")) == plan.totals.used, policy
        free = plan.totals.budget - plan.totals.used
        assert f"Free space  {free:,} of {plan.totals.budget:,}  ({free / plan.totals.budget * 100:.0f} %)" in pie.legend_lines(), policy
    # Caps add up to 115 % of the budget: the ring shows use, and the rest of the budget as one free slice.
    caps = pie_of(qtbot, plan_of("categories"))
    free_slices = [s for s in segments(caps.parts, caps.total, caps.caps) if s.kind == "free"]
    assert len(free_slices) == 1 and free_slices[0].tokens == caps.total - caps.used


def test_use_of_a_negative_allotment_is_overflow_with_the_plans_allotment(qtbot) -> None:  # type: ignore[no-untyped-def]
    plan = plan_of("missy", OVERSUBSCRIBED)
    assert plan.allocation["history"] < 0
    pie = pie_of(qtbot, plan)
    history = plan.allocation["history"]
    used = plan.usage["history"]
    assert ("history", history, used) in pie.parts  # the same allotment `ctxviz plan` prints, not 0
    line = next(line for line in pie.legend_lines() if line.startswith("History"))
    assert line == f"History  {used:,} / {history:,}  (over by {used - history:,})"
    over = [s for s in segments(pie.parts, pie.total, pie.caps) if s.kind == "over"]
    assert [(pie.parts[s.part][0], s.tokens) for s in over] == [("history", used)]
    assert count_colour(pie.grab().toImage(), WARNING) > 50  # drawn in the warning colour
    assert "history is over its" in pie.verdict


def test_the_legend_reads_used_of_allotted_and_how_full(qtbot) -> None:  # type: ignore[no-untyped-def]
    plan = plan_of("missy")
    pie = pie_of(qtbot, plan)
    for (_name, allotted, used), line in zip(pie.parts, pie.legend_lines(), strict=False):
        assert line.endswith(f"{used:,} / {allotted:,}  ({used / allotted * 100:.0f} % full)"), line


def test_the_donut_never_says_fits_while_claude_code_is_over_its_trigger(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(CLAUDE)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_params(get_policy("claude-code").make_params({"context_window": 60000}), "claude-code")
    plan = win.vm.plan
    assert plan.totals.fits and plan.totals.used > 27_000  # fits the window, past the trigger (60,000 - 20,000 - 13,000)
    assert "fits the budget" not in win.pie.legend_lines()
    assert win.pie.alarming and win.pie.verdict == f"over the policy's trigger (27,000) by {plan.totals.used - 27_000:,}"
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_param("context_window", 200_000)
    assert "fits the budget" in win.pie.legend_lines()


def test_the_status_bar_labels_each_window(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    """"38,616 of 60,000" stood beside "est. 32,740 / 200,000 fits": two windows, neither named."""
    win = open_window(SUPPORT)
    qtbot.waitUntil(lambda: win.vm.plan is not None and win.vm.plan.real is not None, timeout=60000)
    plan = win.vm.plan
    parts = win.status_label.text().split(SEPARATOR)
    assert parts[0].startswith(f"missy budget: {plan.totals.used:,} of {plan.totals.budget:,} tokens")
    real = next(p for p in parts if "real count" in p)
    assert plan.real.window != plan.totals.budget
    assert f"{plan.real.tokens:,} of the model's {plan.real.window:,}-token window" in real
    # Every "N of M" or "N / M" on the bar is labelled: the budget, or the model's window.
    for part in parts:
        if re.search(r"[\d,]+ (of|/) [\d,]+", part):
            assert "budget" in part or "model's" in part, part
    # Where the two are the same window, it is said once.
    same = dataclasses.replace(plan_of("missy", {"total": plan.real.window}), real=plan.real)
    assert "window" not in status_text(same).split(SEPARATOR)[3]


# --- smaller statements that mislead --------------------------------------------------------------
def _mp(decision: Decision) -> MessagePlan:
    return MessagePlan(3, "m3", "user", "dialog", 10, decision, "z", "r", 10 if decision is Decision.KEPT else 0)


def test_a_message_dropped_by_one_side_and_summarised_by_the_other_is_not_sent_by_either() -> None:
    def diff(a: Decision, b: Decision) -> Difference:
        return Difference(3, "m3", "user", _mp(a), _mp(b))

    assert kind_of(diff(Decision.DROPPED, Decision.SUMMARIZED)) == "neither"  # was counted as "both send it"
    assert kind_of(diff(Decision.KEPT, Decision.TRUNCATED)) == "both"
    assert kind_of(diff(Decision.KEPT, Decision.DROPPED)) == "a"
    assert kind_of(diff(Decision.SUMMARIZED, Decision.KEPT)) == "b"


def test_compare_never_calls_a_stale_a_the_current_view(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    win.compare.policy.setCurrentText("supyagent")
    with qtbot.waitSignal(win.vm.compareReady, timeout=30000):
        win.compare.request()
    assert win.compare.label_a.text().endswith("(the current view)")
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_param("total", 12_000)
    assert not win.compare.stale.isHidden()
    assert "current view)" not in win.compare.label_a.text() and "earlier view" in win.compare.label_a.text()


def test_unset_optional_parameters_say_unset_not_zero(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_policy("strands-sliding-window")
    for name in ("pin_first", "proactive_compression"):
        assert getattr(win.vm.params, name) is None
        spin = win.params.editors[name][1]
        assert spin.lineEdit().text() == "unset", name
    spin = win.params.editors["proactive_compression"][1]
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_param("proactive_compression", 0.5)
    assert spin.lineEdit().text() == "0.500"
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.params.unsets["proactive_compression"].click()
    assert win.vm.params.proactive_compression is None and spin.lineEdit().text() == "unset"


def test_a_parameter_with_a_fixed_set_of_values_is_a_choice(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import dataclass, field, fields
    from enum import Enum
    from typing import Literal

    win = open_window(SUPPORT)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_policy("langchain-trim")
    combo = win.params.editors["strategy"][0]
    assert isinstance(combo, QComboBox) and [combo.itemText(i) for i in range(combo.count())] == ["last", "first"]
    assert isinstance(win.params.editors["token_counter"][0], QComboBox)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        combo.setCurrentText("first")
    assert win.vm.params.strategy == "first"

    class Side(Enum):
        LEFT = "left"
        RIGHT = "right"

    @dataclass
    class Params:
        mode: Literal["a", "b"] = "a"
        side: Side = Side.LEFT
        maybe: Literal["x", "y"] | None = None
        text: str = ""

    kinds = {f.name: (Params.__annotations__[f.name], dict(f.metadata)) for f in fields(Params)}
    ns = {"Literal": Literal, "Side": Side}
    resolved = {n: eval(k, ns) if isinstance(k, str) else k for n, (k, _) in kinds.items()}  # noqa: S307
    assert field_choices(resolved["mode"], {}) == ("a", "b")
    assert field_choices(resolved["side"], {}) == ("left", "right")
    assert field_choices(resolved["maybe"], {}) == ("x", "y")
    assert field_choices(resolved["text"], {}) == ()
    assert field_choices(str, {"choices": ("p", "q")}) == ("p", "q")
    del field


def test_an_unknown_model_says_it_has_no_cache_model(qtbot) -> None:  # type: ignore[no-untyped-def]
    session = load_session(SUPPORT)
    timeline = simulate(session, "missy", get_policy("missy").default_params())
    view = TimelineView()
    qtbot.addWidget(view)
    view.set_timeline(timeline)
    turns = tuple(TurnCache(t.index, t.tokens_sent, 0, 0, 0, t.tokens_sent, 0.0, False) for t in timeline.turns[:5])
    view.set_answers(timeline, None, CacheReport(NO_MODEL, turns), "")
    assert "no cache model for this model" in view.answers_label.text()
    assert "cached" not in view.answers_label.text().replace("cache model", "")
    names = [item.name() for item in view.answers_plot.listDataItems()]
    assert "request served from the cache" not in names


def test_the_context_tab_says_why_it_has_fewer_entries_than_messages_sent(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.io.exporters import export

    win = open_window(SUPPORT)
    win.tabs.setCurrentIndex(3)
    plan, session = win.shown_plan, win.shown_session
    sent = sum(1 for m in plan.messages if m.sent)
    for fmt in ("markdown", "anthropic"):
        win.context_format.setCurrentText(fmt)
        entries = export(plan, session, fmt).messages
        scope = win.context_scope.text()
        assert entries != sent and f"{sent:,} of {len(plan.messages):,} messages sent" in scope
        assert f"the request below has {entries:,} entries" in scope and "system messages folded into the system prompt" in scope
        shown = re.search(r"^# Context sent by \S+\n\n([\d,]+) messages", win.context_view.toPlainText())
        if shown is not None:  # the markdown header's count is the one the scope line explains
            assert int(shown[1].replace(",", "")) == entries


# --- at 10,000 messages and at 1024x700 -------------------------------------------------------------
def test_dense_events_are_counted_per_bin_not_marked_one_by_one(qtbot) -> None:  # type: ignore[no-untyped-def]
    timeline = simulate(agent_session(1400), "strands-sliding-window", {"window_size": 10})
    trims = [e for e in timeline.events if e.kind == "trim"]
    assert len(trims) > DENSE_EVENTS and len(trims) > DENSE_MARKS
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(500, 600)  # fewer pixels of groove than events
    view.show()
    view.set_timeline(timeline)
    assert not any(item.name() == "trim" for item in view.plot.listDataItems())  # no marker per event
    assert view.density_items
    heights = [h for bar in view.density_items for h in bar.opts["height"]]
    assert max(heights) <= 0.13  # a band along the bottom, not over the curve
    legend = [label.text for _, label in view.plot.getPlotItem().legend.items]
    assert any(f"trim: {len(trims):,} (count per bin" in text for text in legend)
    # The slider's groove: counts per pixel, and a hover sums them up.
    density = view.slider.density()
    assert sum(n for n, _ in density.values()) == len(trims) and len(density) < len(trims)
    busiest = max(density, key=lambda x: density[x][0])
    text = view.slider.tooltip_at(busiest)
    assert "events near here" in text or text.count("\n") <= 8
    # The cache broken at hundreds of turns: counts per bin under the answers, not a wall of markers.
    from ctxviz.engine.catalog import find_model

    broken = tuple(TurnCache(t.index, 100, 0, 0, 100, 0, 0.0, True) for t in timeline.turns)
    view.set_answers(timeline, None, CacheReport(find_model("gpt-4o"), broken), "")
    assert not any((item.name() or "").startswith("cache broken") for item in view.answers_plot.listDataItems())
    answers_legend = [label.text for _, label in view.answers_plot.getPlotItem().legend.items]
    assert f"cache broken ({len(broken):,} turns; count per bin)" in answers_legend


def test_search_dims_what_does_not_match_instead_of_outlining_hits(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    before = count_colour(win.strip.grab().toImage(), "#d62728", 30)
    win.search.setText("role:user")
    item = win.strip.item
    users = [m.index for m in win.vm.plan.messages if m.role == "user"]
    assert item.matched is not None and sorted(int(i) for i in item.matched.nonzero()[0]) == users
    assert item.dim_runs()  # the rest is veiled
    after = count_colour(win.strip.grab().toImage(), "#d62728", 30)
    assert after <= before + 20  # no red outline per hit (the cut line is red already)
    win.search.setText("")
    assert item.matched is None and item.dim_runs() == []


def test_the_strip_opens_on_what_is_sent_when_it_is_a_sliver(qtbot) -> None:  # type: ignore[no-untyped-def]
    session = agent_session(3000)
    plan = plan_session(session, "langchain-trim", {"max_tokens": 4000}, store=CountStore())
    strip = MessageStrip()
    qtbot.addWidget(strip)
    strip.resize(900, 120)
    strip.show()
    strip.set_plan(session, plan)
    width = strip.item._bounds.width()
    assert strip.sent_width() < 0.05 * width
    (left, right), _ = strip.getViewBox().viewRange()
    first, last = sent_span(plan)
    assert right - left < 0.1 * width and left <= strip._x_of(first) and right >= strip._x_of(last)
    # A plan that sends most of it opens on the whole session.
    roomy = plan_session(session, "langchain-trim", {"max_tokens": 10**9}, store=CountStore())
    strip2 = MessageStrip()
    qtbot.addWidget(strip2)
    strip2.set_plan(session, roomy)
    (left, right), _ = strip2.getViewBox().viewRange()
    assert right - left >= strip2.item._bounds.width()


#: Windows this sample does not fit in, for policies whose trigger `align` cannot set.
TIGHT = {"supyagent": {"context_limit": 8000}, "gemini-cli-compression": {"tokenLimit": 20000}}


@pytest.mark.parametrize("policy", policy_names())
def test_the_cut_line_shows_for_every_policy(qtbot, policy) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.vocabulary import align

    session = load_session(SUPPORT)
    chosen = get_policy(policy)
    params = chosen.default_params()
    plan = plan_session(session, policy, params, store=CountStore())
    if all(m.sent for m in plan.messages):  # a budget this sample fits in: tighten the policy's own trigger and keep
        params, _ = align(chosen, params, session, trigger_tokens=8000, keep_messages=10, keep_tokens=4000)
        params = chosen.make_params(TIGHT.get(policy, {}), base=params)
        plan = plan_session(session, policy, params, store=CountStore())
    if all(m.sent for m in plan.messages):
        pytest.skip(f"{policy} sends every message of the sample even at an 8,000-token trigger")
    strip = MessageStrip()
    qtbot.addWidget(strip)
    strip.set_plan(session, plan)
    assert strip.cut_line.isVisible()


def test_line_labels_are_never_clipped(qtbot) -> None:  # type: ignore[no-untyped-def]
    session = load_session(SUPPORT)
    strip = MessageStrip()
    qtbot.addWidget(strip)
    strip.resize(700, 130)
    strip.show()
    # A cut near the start and the fresh tail at the very end: the labels' worst places.
    for params in ({"total": 30_000}, {"total": 4_000}, {"total": 200_000}, OVERSUBSCRIBED):  # the last: cut and tail at one place
        plan = plan_session(session, "missy", get_policy("missy").make_params(params), store=CountStore())
        strip.set_plan(session, plan)
        for first, last in ((0, len(plan.messages) - 1), (0, 20), (len(plan.messages) - 25, len(plan.messages) - 1)):
            strip.zoom_to(first, last)
            qtbot.wait(10)
            box = strip.getViewBox().sceneBoundingRect()
            for line in (strip.cut_line, strip.tail_line):
                (x0, x1), _ = strip.getViewBox().viewRange()
                if not line.isVisible() or not x0 <= line.value() <= x1:
                    continue
                label = line.label.sceneBoundingRect()
                assert box.left() - 1 <= label.left() and label.right() <= box.right() + 1, (params, first, line.label.toPlainText())
            (x0, x1), _ = strip.getViewBox().viewRange()
            if all(line.isVisible() and x0 <= line.value() <= x1 for line in (strip.cut_line, strip.tail_line)):
                cut, tail = strip.cut_line.label.sceneBoundingRect(), strip.tail_line.label.sceneBoundingRect()
                assert not cut.adjusted(1, 1, -1, -1).intersects(tail.adjusted(1, 1, -1, -1)), (params, first)  # never "cuprotected tail"


def test_axes_have_thousands_separators_and_whole_ticks(qtbot) -> None:  # type: ignore[no-untyped-def]
    axis = ThousandsAxis("bottom")
    assert all(spacing >= 1 for spacing, _ in axis.tickSpacing(0, 3, 600))  # never 0.2, 0.4 ... shown as "0 0 1 1 1"
    assert axis.tickStrings([2_000_000, 10_063], 1.0, 1000) == ["2,000,000", "10,063"]
    bars = CategoryBars()
    qtbot.addWidget(bars)
    assert isinstance(bars.getAxis("left"), ThousandsAxis)
    timeline = simulate(agent_session(1200), "strands-sliding-window", {"window_size": 10})
    view = TimelineView()
    qtbot.addWidget(view)
    view.set_timeline(timeline)
    last = timeline.turns[-1]
    assert last.dropped >= 1000 and f"{last.dropped:,} dropped" in view.label.text()
    assert isinstance(view.answers_plot.getAxis("bottom"), ThousandsAxis)


def test_the_timeline_is_an_empty_state_before_a_replay(qtbot) -> None:  # type: ignore[no-untyped-def]
    view = TimelineView()
    qtbot.addWidget(view)
    view.show()
    assert view.plot.isHidden() and not view.empty.isHidden() and view.empty.text() == IDLE_TEXT
    view.set_timeline(simulate(load_session(SUPPORT), "missy", get_policy("missy").default_params()))
    assert not view.plot.isHidden() and view.empty.isHidden()
    view.set_timeline(None, "The inputs changed since the last replay: Simulate to replay this plan.")
    assert view.plot.isHidden() and "inputs changed" in view.empty.text()


def test_a_slider_drag_replans_only_the_turn_it_rests_on(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    with qtbot.waitSignal(win.vm.timelineReady, timeout=60000):
        win.tabs.setCurrentIndex(TIMELINE_TAB)
    slider, view = win.timeline.slider, win.timeline
    shown: list[int] = []
    win.vm.planReady.connect(lambda session, _plan: shown.append(len(session.messages) - 1))
    view.published.clear()
    slider.setSliderDown(True)
    for turn in range(10, 90, 4):  # twenty moves within one frame's time
        slider.setValue(turn)
    at = win.vm.timeline.turns[86].index  # the slider moves by steps (model calls); a step is named by its request's last message
    assert f"Step 87 of {len(win.vm.timeline.turns)}, Turn {at}:" in view.label.text()  # the label follows at once
    qtbot.wait(REST_MS + 150)
    slider.setSliderDown(False)
    qtbot.waitUntil(lambda: at in shown, timeout=5000)
    assert view.published == [86] and shown == [at]
    # Keys or a click (no drag): moves made in one go are published once, at the next frame.
    view.published.clear()
    slider.setValue(40)
    slider.setValue(41)
    qtbot.waitUntil(lambda: view.published == [41], timeout=5000)


def window_at(qtbot, tmp_path, size):  # type: ignore[no-untyped-def]
    return gui_windows.window_at(qtbot, tmp_path, size, SUPPORT, settled=False)


def test_at_1280x720_what_would_keep_it_is_in_view(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1280, 720))
    try:
        dropped = next(m.index for m in win.vm.plan.messages if not m.sent)
        win.select_message(dropped)
        qtbot.waitUntil(lambda: "What would keep it" in win.detail_text(), timeout=60000)
        qtbot.wait(50)
        head = win.detail_head
        viewport = head.parentWidget()
        document = head.text()
        assert "What would keep it" in document
        # The answer comes right after the decision line, above the reason: inside the visible head.
        from PySide6.QtGui import QTextDocument

        doc = QTextDocument()
        doc.setDefaultFont(head.font())
        doc.setHtml(document.split("What would keep it")[0])
        doc.setTextWidth(head.width())
        assert doc.size().height() + head.fontMetrics().height() <= viewport.height()
        assert win.width() == 1280 and win.height() == 720
    finally:
        win.vm.shutdown()


def test_at_1024x700_the_table_the_legend_and_the_status_bar_fit(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1024, 700))
    try:
        qtbot.wait(100)
        assert win.width() == 1024 and win.height() == 700  # nothing widened the window
        assert win.table.viewport().height() / win.table.verticalHeader().defaultSectionSize() > 4.5
        pie = win.pie
        fm = pie.fontMetrics()
        entries, _ = pie.legend_layout()
        rect, _ = pie._ring()
        for entry in entries:
            if entry.figures:  # the figures are drawn whole inside the widget
                assert rect.right() + 14 + 14 * len(entry.swatches) + 4 + fm.horizontalAdvance("M…  " + entry.figures) <= pie.width(), entry
        status = win.status_label
        shown = status.shown_text()
        assert fm.horizontalAdvance(shown) <= status.width()
        # The whole line, a shorter wording of it (issue 24: no segment cut at 1024 px), or whole segments and "…".
        assert shown in (status.text(), *status.shorter) or (shown.endswith("…") and shown.split(SEPARATOR)[0] == status.shorter[-1].split(SEPARATOR)[0])
        assert "of 30,000 tokens" in shown  # the head of the bar is never what is dropped
    finally:
        win.vm.shutdown()


def test_the_screenshot_waits_for_the_why_answer(qtbot, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A slow "why" search (as under load) must still be in the picture."""
    import time as clock

    from ctxviz.gui import app, viewmodel

    real_why = viewmodel.why

    def slow_why(*args, **kwargs):  # type: ignore[no-untyped-def]
        clock.sleep(1.5)
        return real_why(*args, **kwargs)

    monkeypatch.setattr(viewmodel, "why", slow_why)
    seen: list[str] = []

    def capture(window, path, inputs=()):  # type: ignore[no-untyped-def]
        seen.append(window.detail_text())

    monkeypatch.setattr(app, "render_window", capture)
    assert app.run(SUPPORT, screenshot=str(tmp_path / "x.png"), scheme="light", size=(1280, 720)) == 0
    assert seen and "What would keep it" in seen[0] and "Searching" not in seen[0]
