"""The category bars add up to what the plan sends, as the donut says it: what is sent that is no
message of the file (a recorded summary, the prompt the provider's usage holds that the log does not
record) is a bar of its own, "Outside the messages", as the Timeline's composition band names it.
On the Claude Code sample the bars came to 11,589 beside the donut's 38,616."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.composition import ADDED  # noqa: E402
from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.gui.theme import category_label  # noqa: E402
from ctxviz.gui.widgets.category_bars import CategoryBars  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


def _bars(qtbot, name: str, policy: str):  # type: ignore[no-untyped-def]
    plan = plan_session(load_session(SAMPLES / name), policy, store=CountStore())
    bars = CategoryBars()
    qtbot.addWidget(bars)
    bars.set_plan(plan)
    return bars, plan


def test_the_bars_add_up_to_what_the_plan_sends(qtbot) -> None:  # type: ignore[no-untyped-def]
    bars, plan = _bars(qtbot, "claude_code_compaction.jsonl", "claude-code")
    assert sum(used for _, used, _, _ in bars.rows) == plan.totals.used == 38_616
    outside = [row for row in bars.rows if row[0] == ADDED]
    assert outside and outside[0][1] > 18_500  # (the unseen prompt alone is about 18,500)
    ticks = [label for _, label in bars.getAxis("bottom")._tickLevels[0]]
    assert ticks[-1] == category_label(ADDED) == "Outside the messages"


def test_no_such_bar_when_only_messages_are_sent(qtbot) -> None:  # type: ignore[no-untyped-def]
    bars, plan = _bars(qtbot, "coding_agent.yaml", "langchain-trim")
    assert all(row[0] != ADDED for row in bars.rows)
    assert sum(used for _, used, _, _ in bars.rows) == plan.totals.used
