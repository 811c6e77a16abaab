"""The colour defects a review of the app found: one meaning, one colour across the app (Context
was purple in the donut and pink as a category); in the dark theme the Timeline's System and
Dialog bands were both dark blue, and the × buttons read as disabled."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import get_policy, policy_names  # noqa: E402
from ctxviz.engine.session import Category  # noqa: E402
from ctxviz.gui.theme import CATEGORY_COLORS, CATEGORY_LABELS  # noqa: E402
from ctxviz.gui.widgets.budget_pie import BudgetPie, pretty  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

from .colorvision import closest_pair  # noqa: E402

SAMPLES = Path(__file__).parent.parent / "sample_sessions"
#: A Claude Code log (its policy's part "context" is its window below the trigger) and a Codex
#: rollout (its part "initial_context" holds the Context category's messages).
LOGS = [SAMPLES / "claude_code_compaction.jsonl", SAMPLES / "codex_rollout.jsonl", SAMPLES / "support_chat.yaml"]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_donut_part_named_as_a_category_is_drawn_in_that_categorys_colour(qtbot, path) -> None:  # type: ignore[no-untyped-def]
    """Claude Code's "Context 38,616 / 167,000" and Codex's "Initial context" were the donut's
    purple, while the strip, the bars and the Timeline's bands draw the Context category pink."""
    session = load_session(str(path))
    pie = BudgetPie()
    qtbot.addWidget(pie)
    pie.resize(700, 260)
    names = {label.lower(): category for category, label in CATEGORY_LABELS.items()}
    for policy in policy_names():
        plan = plan_session(session, policy, get_policy(policy).make_params({}))
        pie.set_plan(plan)
        for (name, _allotted, _used), colour in zip(pie.parts, pie.colors, strict=True):
            label = pretty(name, pie.categories)
            last = label.split()[-1].lower()
            if last in names and names[last] != "system":  # ("Retained user" is no category's; "System" parts are drawn as System)
                assert colour == CATEGORY_COLORS[names[last]], (policy, label, colour)
            elif colour in CATEGORY_COLORS.values():  # a category's colour only for what that category holds
                category = next(c for c, v in CATEGORY_COLORS.items() if v == colour)
                assert category == "system" or label == CATEGORY_LABELS[category], (policy, label, colour)


def test_codexs_initial_context_part_holds_the_context_categorys_messages() -> None:
    """Why the part takes the Context colour: the messages it counts are that category's."""
    session = load_session(str(SAMPLES / "codex_rollout.jsonl"))
    plan = plan_session(session, "codex-compaction", get_policy("codex-compaction").make_params({}))
    initial = [m for m in plan.messages if m.zone == "initial_context"]
    context = [m for m in session.messages if m.category == Category.CONTEXT]
    assert context and all(session.messages[m.index].category == Category.CONTEXT for m in initial)


def test_the_instructions_retention_line_takes_no_categorys_colour(qtbot) -> None:  # type: ignore[no-untyped-def]
    """It was the Context category's pink, on the tab whose bands draw "Context (sent)" pink."""
    from ctxviz.engine.retention_timeline import timeline_retention
    from ctxviz.engine.simulate import simulate
    from ctxviz.gui.widgets.timeline import TimelineView

    view = TimelineView()
    qtbot.addWidget(view)
    timeline = simulate(load_session(str(SAMPLES / "codex_rollout.jsonl")), "codex-compaction")
    view.set_timeline(timeline)
    view.set_answers(timeline, timeline_retention(timeline), None)
    pens = {item.name(): item.opts["pen"].color().name() for item in view.answers_plot.listDataItems()}
    colour = pens["user instructions still sent"]
    assert colour not in CATEGORY_COLORS.values()
    for vision in ("normal", "deuteranopia", "protanopia"):
        distance, a, b = closest_pair({**CATEGORY_COLORS, "instructions": colour}, vision)
        assert "instructions" not in (a, b) or distance >= 15, (vision, a, b, distance)
