"""Reasons in a few words for the table, the policy's full sentence on hover."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine.planner import plan_session
from ctxviz.engine.reasons import short, short_reason
from ctxviz.io.loaders import load_session

SUPPORT = load_session(str(Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"))


def test_the_codes_carry_the_numbers_of_the_sentence() -> None:
    plan = plan_session(SUPPORT, "missy")
    # "dropped: 689 tokens did not fit in the 685 left of the 20,800-token history budget"
    assert short(plan.messages[145]) == "missed by 4"
    assert short(plan.messages[1]) == "after cut #145"
    assert short(plan.messages[-2]) == "fresh tail"
    categories = plan_session(SUPPORT, "categories")
    over = next(m for m in categories.messages if m.decision.value == "dropped")
    assert short(over) == "over SYSTEM_OUTPUT 7,500" and "over its 7,500 maximum" in over.reason
    assert short_reason("dropped: 12,000 tokens did not fit in the 1,500 left of the usable") == "missed by 10,500"
    # The words come from the reason code, not the sentence: a pin says "pinned", and a phrasing no
    # code knows is said by the decision (it used to be the sentence's first words, which could
    # contradict the decision).
    from ctxviz.engine.checks import PlanOptions

    pinned = plan_session(SUPPORT, "missy", options=PlanOptions(pins=("#1",)))
    assert short(pinned.messages[1]) == "pinned"
    unknown = plan.messages[1]._replace(code="", reason="dropped: a rule nobody phrased like this before, with many words")
    assert short(unknown) == "dropped"


def test_the_table_shows_the_code_and_the_sentence_on_hover(qtbot) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("PySide6")
    from PySide6.QtCore import Qt

    from ctxviz.gui.models import COLUMNS, MessageTableModel

    plan = plan_session(SUPPORT, "missy")
    model = MessageTableModel()
    model.set_plan(SUPPORT, plan)
    cell = model.index(145, 8)
    assert model.data(cell) == "missed by 4"
    assert "689 tokens did not fit in the 685 left" in model.data(cell, Qt.ItemDataRole.ToolTipRole)
    tips = [model.headerData(c, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) for c in range(len(COLUMNS))]
    assert all(tips) and "more when the policy charges extra" in tips[5]


def test_the_app_defines_the_glossarys_words_on_hover(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The README's glossary and the app's hover help are one text (ctxviz/glossary.py)."""
    pytest.importorskip("PySide6")
    from PySide6.QtCore import Qt

    from ctxviz.glossary import define
    from ctxviz.gui.models import COLUMNS, MessageTableModel
    from ctxviz.gui.widgets.message_strip import MessageStrip
    from ctxviz.gui.widgets.notes import NotesPanel

    model = MessageTableModel()
    zone_tip = model.headerData(COLUMNS.index("zone"), Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    decision_tip = model.headerData(COLUMNS.index("decision"), Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert define("zone") in zone_tip and define("fresh tail") in zone_tip and define("evictable prefix") in zone_tip
    assert define("summarised") in decision_tip and define("replaced") in decision_tip
    strip = MessageStrip()
    qtbot.addWidget(strip)
    assert strip.cut_line.label.toolTip() == define("cut") and strip.tail_line.label.toolTip() == define("fresh tail")
    notes = NotesPanel()
    qtbot.addWidget(notes)
    notes.set_content(["Unseen: about 18,500 tokens of system prompt and tools the log does not record"], [])
    assert define("unseen") in notes.facts.toolTip()
