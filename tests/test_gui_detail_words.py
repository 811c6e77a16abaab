"""The words the detail panel, the donut's legend and the lost card show, as a second review read
them on real logs: a dropped system prompt called "empty", "1 tokens", "summarised in summarised",
a pinned message's link offering to pin it, and a rank's "(#3)" nested in the card's parentheses."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF  # noqa: E402

from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import get_policy  # noqa: E402
from ctxviz.gui.widgets.budget_pie import BudgetPie  # noqa: E402
from ctxviz.gui.widgets.diff_lane import lane_legend_html  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "real"
CODEX = DATA / "codex" / "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
LOCALPUSH = DATA / "codex" / "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
GEMINI = DATA / "gemini_cli" / "aim_matrix_pro.migrated.jsonl"
SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"


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


def test_the_pin_link_of_a_pinned_message_says_what_unpinning_does(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    win.select_message(1)
    assert "Pin this message (Ctrl+K): send it whatever the policy decides, and see what it pushes out" in win.detail_text()
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.detail_head.linkActivated.emit("pin")
    win.select_message(1)
    text = win.detail_text()
    assert "Unpin this message (Ctrl+K): let the policy decide it again" in text
    assert "send it whatever the policy decides" not in text


def test_one_token_is_one_token_not_1_tokens(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(GEMINI)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_params(get_policy("missy").make_params({"total": 15000}), "missy")
    win.select_message(37)
    assert win.vm.plan.messages[37].tokens == 1
    text = win.detail_text()
    assert "dropped in evictable — 1 token (0 sent)" in text and "1 tokens" not in text
    strip = win.strip
    x = strip._x_of(37) + float(strip.item.widths[37]) / 2
    strip._hovered(strip.getPlotItem().getViewBox().mapViewToScene(QPointF(x, 0.5)))
    assert "#37 assistant · dialog · 1 token · dropped" in strip.toolTip()


def test_the_compare_lane_counts_one_message_as_one() -> None:
    assert lane_legend_html(1).startswith("1 message decided differently: ")
    assert lane_legend_html(2).startswith("2 messages decided differently: ")


def test_a_zone_named_like_its_decision_is_said_once_and_spelled_one_way(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(LOCALPUSH)
    m = win.vm.plan.messages[10]
    assert m.decision.value == "summarized" and m.zone == "summarized"
    win.select_message(10)
    text = win.detail_text()
    assert "\nsummarised — 31 tokens (0 sent)\n" in text
    assert "summarised in summarised" not in text and "summarized" not in text.split("\n[")[0]


def test_the_lost_card_never_nests_a_ranks_parentheses(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(CODEX)
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_params(get_policy("langchain-trim").make_params({"max_tokens": 60000}), "langchain-trim")
    qtbot.waitUntil(lambda: win.lost_card.retention is not None and "Lost, most needed first" in win.lost_card.label.text(), timeout=60000)
    card = win.lost_card.label.text()
    assert "(your opening request, #2)" in card
    assert "(#2))" not in card and "request (#" not in card


def test_the_next_compaction_card_counts_one_token_and_never_nests_a_ranks_parentheses() -> None:
    from types import SimpleNamespace

    from ctxviz.engine.forecast import Drop
    from ctxviz.engine.ranking import Rank
    from ctxviz.gui.widgets.next_compaction import _drop_line, _items

    anchor = SimpleNamespace(id=7, first_index=3, label=lambda width: "show tools")
    # (the engine's wording, engine/ranking.py: a rank's reason writes no brackets of its own)
    drop = Drop(1, 1, (anchor,), {7: Rank(1, "your opening request, #3", (0, 3))}, "recorded")  # type: ignore[arg-type]
    assert _drop_line(drop).startswith("1 message, 1 token no longer sent; 1 fact no longer reaches the model")
    assert "your opening request, #3)" in _items(drop) and "(#3))" not in _items(drop)


def test_a_compare_group_of_one_message_is_one_message_and_summarised_as_everywhere(qtbot) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.explain import DifferenceGroup
    from ctxviz.gui.widgets.compare_view import CompareView

    group = DifferenceGroup("summarized", "kept", "summarized", "kept", (12,), 31, 31)
    item = CompareView._group_item(group)
    assert item.text(0) == "1 message: #12" and "1 message: #12" in item.toolTip(0) and "1 messages" not in item.toolTip(0)
    assert (item.text(1), item.text(2)) == ("summarised", "kept")


def test_the_follow_line_counts_one_message_as_one() -> None:
    """The followed log's line said "Following live.jsonl: 1 messages"."""
    from types import SimpleNamespace

    from ctxviz.gui.live import LiveController

    said: list[tuple[str, str]] = []
    controller = SimpleNamespace(path="/tmp/live.jsonl", _messages_before=0, _notes=[],
                                 followUpdated=SimpleNamespace(emit=lambda text, tip: said.append((text, tip))))
    one = SimpleNamespace(messages=(object(),))
    LiveController._say(controller, SimpleNamespace(session=one, first=True, notes=()))  # type: ignore[arg-type]
    assert said[-1][0] == "Following live.jsonl: 1 message"
