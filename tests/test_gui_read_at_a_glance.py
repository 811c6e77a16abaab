"""What the app shows is what it is (issue 24): harness turns are not the user's, the context as
sent shows its gaps and where each section comes from, and a span of the strip sums itself up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QFontInfo, QGuiApplication  # noqa: E402

from ctxviz.engine.ranges import range_summary  # noqa: E402
from ctxviz.engine.voices import voices_of  # noqa: E402
from ctxviz.gui.main_window import CONTEXT_TAB  # noqa: E402
from ctxviz.io.exporters import export_text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "sample_sessions" / "support_chat.yaml"
#: A real Claude Code log whose user turns are mostly system reminders and attachments.
REMINDERS = ROOT / "tests" / "data" / "real" / "claude_code" / "tugtool-rewind-branch.jsonl"


def test_harness_turns_show_as_harness_in_the_table_strip_and_detail(open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(REMINDERS)
    session, plan = win.vm.session, win.vm.plan
    voices = voices_of(session)
    harness = [i for i, v in enumerate(voices) if v == "harness"]
    own = [i for i, m in enumerate(session.messages) if m.role == "user" and voices[i] == "user"]
    assert harness and own and all(session.messages[i].role == "user" for i in harness)
    model = win.model
    for i in harness:
        assert model.index(model.view_row(i), 2).data() == "harness"
        assert "not the user&#x27;s words" in model.index(model.view_row(i), 2).data(Qt.ItemDataRole.ToolTipRole)  # (escaped for Qt)
    assert all(model.index(model.view_row(i), 2).data() == "user" for i in own)
    # The role filter: "user" lists the user's own turns only; "harness" the rest.
    win.role_filter.setCurrentText("user")
    assert [model.message_index(r) for r in range(model.rowCount())] == own
    win.role_filter.setCurrentText("harness")
    assert [model.message_index(r) for r in range(model.rowCount())] == harness
    win.role_filter.setCurrentText("all roles")
    # The strip's user lane ticks the user's own turns, sent or not, and no harness turn.
    ticked = sorted([*win.strip.user_lane.data["data"], *win.strip.user_lane_lost.data["data"]])
    assert ticked == own
    win.select_message(harness[0])
    assert f"#{harness[0]} · harness ·" in win.detail_text() and "not the user's words" in win.detail_text()
    assert plan.messages[harness[0]].role == "user"  # (the plan itself is unchanged: a user turn as sent)


def test_the_context_tab_marks_its_gaps_and_each_sections_index(open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    win.tabs.setCurrentIndex(CONTEXT_TAB)
    plan, session = win.shown_plan, win.shown_session
    text = win.context_view.toPlainText()
    gaps = [line for line in text.splitlines() if line.startswith("⋯ ")]
    not_sent = [m for m in plan.messages if not m.sent]
    # Every message not sent is in exactly one gap line, with its tokens.
    counted = [(int(n.replace(",", "")), int(t.replace(",", ""))) for n, t in
               (re.match(r"⋯ ([\d,]+) messages? \(([\d,]+) tokens\) not sent here", g).groups() for g in gaps)]  # type: ignore[union-attr]
    assert sum(n for n, _ in counted) == len(not_sent) and sum(t for _, t in counted) == sum(m.tokens for m in not_sent)
    assert f"⋯ {len(not_sent):,} messages ({sum(m.tokens for m in not_sent):,} tokens) not sent here" in text  # one run here
    # Each section names the session message it comes from, in the order sent.
    headers = re.findall(r"^## (\d+)\. \w+ · (#(\d+)|system prompt: .+|the log's recorded summary #.+|ctxviz's offline stand-in summary.+"
                         r"|inserted by the policy: .+)$", text, re.M)
    assert len(headers) == len(plan.context)
    assert [int(h[2]) if h[2] else None for h in headers] == list(plan.context_index)
    assert QFontInfo(win.context_view.font()).fixedPitch()
    # Copying gives the request itself, headed as the view is, without the lines between sent runs.
    win.copy_context()
    copied = QGuiApplication.clipboard().text()
    assert copied == export_text(plan, session, "markdown") and "⋯ " not in copied
    assert re.findall(r"^## \d+\. .*$", copied, re.M) == re.findall(r"^## \d+\. .*$", text, re.M)


def test_a_span_of_the_strip_sums_itself_up(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SUPPORT)
    plan, session = win.shown_plan, win.shown_session
    with qtbot.waitSignal(win.strip.rangeChanged) as changed:
        win.strip.select_range(175, 140)  # either way round
    assert changed.args == [140, 175] and win.strip.selected_range == (140, 175)
    summary = range_summary(plan, session, 140, 175)
    span = plan.messages[140:176]
    assert summary.tokens == sum(m.tokens for m in span) and summary.messages == 36
    assert dict(summary.roles)["user"] == sum(1 for m in span if m.role == "user")
    assert summary.tool_pairs > 0 and summary.not_sent == sum(1 for m in span if not m.sent)
    assert win.range_label.isVisible() and summary.sentence() in win.range_label.text()
    assert f"{summary.tokens:,} tokens" in win.range_label.text() and f"{summary.tool_pairs:,} tool pairs" in win.range_label.text()
    # Clearing the span (Esc on the strip) hides its line.
    win.strip.clear_range()
    assert win.strip.selected_range is None and not win.range_label.isVisible()
