"""A re-plan repaints what it changed (issue 22: a parameter change at 10,000 messages within a
frame): the strip and its overview the segments whose category, decision or sent share changed,
the donut its ring and the lines that changed, the lost card its text. What is on screen after
re-plans is what the window draws afresh."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from PySide6.QtCore import QPoint, QRect, QRectF  # noqa: E402

from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import get_policy  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

from .hypothesis_budget import examples  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = str(ROOT / "sample_sessions" / "support_chat.yaml")
POLICIES = ("missy", "strands-sliding-window", "categories", "llamaindex-chat-memory-buffer")


def _plan(session, policy: str, share: float):  # type: ignore[no-untyped-def]
    params = get_policy(policy).default_params()
    for name in ("total", "token_limit", "window_size", "max_tokens"):
        value = getattr(params, name, None)
        if isinstance(value, int) and value > 0:
            try:
                params = get_policy(policy).make_params({name: max(1, int(value * share))}, base=params)
            except Exception:  # noqa: BLE001 (a budget under the policy's reserves: keep its default)
                pass
            break
    return plan_session(session, policy, params, None, None, None, None)


@settings(max_examples=examples(40), deadline=None)
@given(policy=st.sampled_from(POLICIES), shares=st.lists(st.floats(0.02, 1.5), min_size=2, max_size=4))
def test_a_replan_repaints_every_strip_segment_it_changed(qapp, policy: str, shares: list[float]) -> None:  # type: ignore[no-untyped-def]
    """Every message whose segment a re-plan changed lies in what the strip (and its overview)
    repaint; a re-plan that changed none repaints none of the segments."""
    from ctxviz.gui.widgets.message_strip import MessageStrip
    from ctxviz.gui.widgets.strip_overview import StripOverview

    session = load_session(SAMPLE)
    strip = MessageStrip()
    overview = StripOverview(strip)
    strip.set_plan(session, _plan(session, policy, 1.0))
    for share in shares:
        item, band = strip.item, overview.item
        before = [(c, d, float(f)) for c, d, f in zip(item.categories, item.decisions, item.fractions, strict=True)]
        repainted: dict[str, list[QRectF | None]] = {"strip": [], "overview": []}
        item.update = lambda *a, seen=repainted["strip"]: seen.append(a[0] if a else None)  # type: ignore[method-assign]
        band.update = lambda *a, seen=repainted["overview"]: seen.append(a[0] if a else None)  # type: ignore[method-assign]
        strip.set_plan(session, _plan(session, policy, share))
        after = [(c, d, float(f)) for c, d, f in zip(item.categories, item.decisions, item.fractions, strict=True)]
        changed = [i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y]
        for name, areas in repainted.items():
            if None in areas:
                continue  # repainted whole
            for i in changed:
                left, right = float(item.starts[i]), float(item.starts[i] + item.widths[i])
                assert any(a.left() <= left and right <= a.right() and a.top() <= 0 and a.bottom() >= 1 for a in areas), (name, i)
            if not changed:
                assert areas == [] or name == "overview", name
        del item.update, band.update
    strip.close()
    overview.close()


def test_what_is_on_screen_after_replans_is_the_window_drawn_afresh(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    """Re-plans repaint parts of the strip, its overview, the donut and the lost card: the window's
    backing store (what the screen shows) then holds what a whole repaint of the window draws."""
    win = open_window(SAMPLE)
    total = win.vm.params.total
    for share in (0.9, 0.7, 0.72, 0.5, 0.51, 1.2, 0.6):
        with qtbot.waitSignal(win.vm.planReady, timeout=30000):
            win.params.editors["total"][1].setValue(int(total * share))
        qtbot.wait(30)
    win.vm.wait()
    qtbot.wait(100)
    shown = win.screen().grabWindow(win.winId()).toImage()
    whole = win.grab().toImage()
    for name in ("strip", "strip_overview", "pie", "lost_card", "bars"):
        widget = getattr(win, name)
        area = QRect(widget.mapTo(win, QPoint(0, 0)), widget.size())
        assert shown.copy(area) == whole.copy(area), name


def test_the_donut_is_repainted_whole_when_its_legend_moves(qapp) -> None:  # type: ignore[no-untyped-def]
    """A re-plan that adds a legend line (the real count) or widens the ring repaints the donut whole."""
    from ctxviz.gui.widgets.budget_pie import BudgetPie

    session = load_session(SAMPLE)
    plan = _plan(session, "missy", 1.0)
    pie = BudgetPie()
    pie.resize(643, 236)
    pie.set_plan(plan)
    updates: list[tuple[object, ...]] = []
    pie.update = lambda *a: updates.append(a)  # type: ignore[method-assign]
    pie.set_plan(dataclasses.replace(plan), unseen=18_500)  # one more line: "Unseen ≈ 18.5k ..."
    assert updates == [()]
