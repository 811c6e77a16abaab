"""Compare says each side's verdict and keeps both strips honest about their scales.

"A (missy): 7,120 of 8,000 tokens, 17 sent" read as fitting while `ctxviz compare` said "A: does not
fit: history is over its 3,200 allotment by 2,701"; and two policies counting with different
estimators were drawn on one token axis, B's 30 messages ending at a fifth of A's."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QTextDocument  # noqa: E402

from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.gui.theme import WARNING  # noqa: E402
from ctxviz.gui.widgets.compare_view import CompareView  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

REAL = Path(__file__).resolve().parent / "data" / "real"
SW = REAL / "swe_agent" / "pydicom__pydicom-1458.traj"


def shown_text(label) -> str:  # type: ignore[no-untyped-def]
    """What a rich-text label shows, as plain text."""
    document = QTextDocument()
    document.setHtml(label.text())
    return document.toPlainText()


@pytest.fixture(scope="module")
def sw_plans():  # type: ignore[no-untyped-def]
    session = load_session(str(SW))
    return (plan_session(session, "missy", {"total": 8000}), plan_session(session, "langchain-trim", {"max_tokens": 6000}))


def test_each_sides_headline_carries_its_plans_verdict_in_the_warning_colour_when_it_does_not_fit(qtbot, sw_plans) -> None:  # type: ignore[no-untyped-def]
    a, b = sw_plans
    assert not a.totals.fits and b.totals.fits  # the case the review found
    view = CompareView(["missy", "langchain-trim"])
    qtbot.addWidget(view)
    view.show_result(a, b)
    text = shown_text(view.summary)
    first, second = text.split("|")[:2]
    assert "A (missy): 7,120 of 8,000 tokens, 17 sent, does not fit: history is over its 3,200 allotment by 2,701" in first
    assert first.strip().endswith(a.fit_verdict())
    assert "B (langchain-trim)" in second and second.strip().endswith(", fits")
    # A's headline, and only A's, is in the warning colour.
    coloured = view.summary.text().split(f"color:{WARNING}")
    assert len(coloured) == 2 and "does not fit" in coloured[1].split("</span>")[0] and "B (" not in coloured[1].split("</span>")[0]
    # Swapped, the colour follows the side that does not fit.
    view.show_result(b, a)
    coloured = view.summary.text().split(f"color:{WARNING}")
    assert len(coloured) == 2 and coloured[1].split("</span>")[0].lstrip("'\"> ").startswith("B (missy)")


def test_a_policy_name_is_shown_as_text_not_markup(qtbot, sw_plans) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    a, b = sw_plans
    evil = dataclasses.replace(a, policy="<img src=/dev/zero>")
    view = CompareView(["missy"])
    qtbot.addWidget(view)
    view.show_result(evil, b)
    assert "<img" not in view.summary.text() and "A (<img src=/dev/zero>)" in shown_text(view.summary)


GM = REAL / "gemini_cli" / "ai-sessions_pomodoro.json"


def test_two_estimators_step_both_strips_by_message_and_say_why(qtbot) -> None:  # type: ignore[no-untyped-def]
    session = load_session(str(GM))
    a = plan_session(session, "gemini-cli-compression", {"tokenLimit": 8000})
    b = plan_session(session, "missy", {"total": 5000})
    assert a.tokenizer != b.tokenizer
    view = CompareView(["missy"])
    qtbot.addWidget(view)
    view.resize(1024, 700)
    view.show()
    view.show_result(a, b)
    note = view.scale_note
    assert note.isVisible() and note.text().startswith(
        f"Tokens counted with {a.tokenizer} for A and {b.tokenizer} for B, so their token figures are not on one scale")
    # The same position is the same message in both strips and in the lane between them.
    starts_a, starts_b = list(view.strip_a.item.starts), list(view.strip_b.item.starts)
    assert starts_a == starts_b == list(range(len(session.messages)))
    assert list(view.lane._starts) == [float(starts_b[i]) for i, _ in view.lane.marks]
    (x0, x1), _ = view.strip_b.getViewBox().viewRange()
    assert x0 <= 0 and x1 >= len(session.messages)  # B's 30 messages span the axis as A's do
    for strip in (view.strip_a, view.strip_b):
        assert strip.getAxis("bottom").labelText.startswith("message index")
        assert "one step wide" in strip.help_text and "as wide as its tokens" not in strip.help_text
    # The same estimator on both sides: one token axis, nothing to say.
    c = plan_session(session, "missy", {"total": 8000})
    view.show_result(c, b)
    assert not view.scale_note.isVisible() and view.strip_a.by_tokens and view.strip_b.by_tokens
    assert view.strip_a.getAxis("bottom").labelText == "cumulative tokens" and "as wide as its tokens" in view.strip_b.help_text
    assert view.strip_b.full_width() == pytest.approx(sum(m.tokens for m in b.messages))


def test_a_summary_one_side_sends_and_the_other_drops_is_a_difference(qtbot) -> None:  # type: ignore[no-untyped-def]
    """tugtool-compact-native.jsonl: claude-code sends the log's 837-token compact summary and
    langchain-trim at max_tokens=1,500 cuts it; the tab said "0 messages decided differently" and
    "No message is decided differently"."""
    session = load_session(str(REAL / "claude_code" / "tugtool-compact-native.jsonl"))
    a, b = plan_session(session, "claude-code"), plan_session(session, "langchain-trim", {"max_tokens": 1500})
    view = CompareView(["claude-code", "langchain-trim"])
    qtbot.addWidget(view)
    view.show_result(a, b)
    assert "0 messages and 1 summary decided differently" in shown_text(view.summary)
    rows = [[item.text(c) for c in range(6)] for item in view.summary_items()]
    assert view.group_items() == []
    assert rows == [["summary #1", "kept", "dropped", "kept: the compact summary opens the context",
                     "dropped: trim_messages cut it like any message", f"{a.summaries[0].tokens:,} / {b.summaries[0].tokens:,}"]]
    assert not view.same.isVisible() or not view.same.text()
