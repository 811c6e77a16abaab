"""The words the detail panel, the donut's legend and the lost card show, as a second review read
them on real logs: a dropped system prompt called "empty", "1 tokens", "summarised in summarised",
a pinned message's link offering to pin it, and a rank's "(#3)" nested in the card's parentheses."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.gui.widgets.budget_pie import BudgetPie  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "real"
CODEX = DATA / "codex" / "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"


def legend_of(qtbot, plan) -> list[str]:  # type: ignore[no-untyped-def]
    pie = BudgetPie()
    qtbot.addWidget(pie)
    pie.resize(700, 260)
    pie.set_plan(plan)
    return pie.legend_lines()


def test_a_system_prompt_the_plan_drops_is_not_sent_in_the_legend_not_empty(qtbot) -> None:  # type: ignore[no-untyped-def]
    session = load_session(str(CODEX))
    store = CountStore()
    dropped = plan_session(session, "langchain-trim", {"max_tokens": 60000}, store=store)
    assert session.messages[0].role == "system" and not dropped.messages[0].sent
    tokens = dropped.messages[0].tokens
    assert f"System  0 / 0  (not sent: {tokens:,} dropped)" in legend_of(qtbot, dropped)
    assert not any("(empty)" in line for line in legend_of(qtbot, dropped))
    kept = plan_session(session, "langchain-trim", {"max_tokens": 400000}, store=store)
    assert kept.messages[0].sent
    assert not any("not sent" in line for line in legend_of(qtbot, kept))
