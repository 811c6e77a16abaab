"""What was not sent, as the overview card says it: checked against the plan message by message."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine.lost import lost
from ctxviz.engine.planner import plan_session
from ctxviz.io.loaders import load_session

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


def test_the_support_chat_under_missy_loses_the_users_opening_request() -> None:
    session = load_session(str(SAMPLES / "support_chat.yaml"))
    plan = plan_session(session, "missy")
    found = lost(plan, session)
    unsent = [m for m in plan.messages if not m.sent]
    assert found.messages == len(unsent) and found.tokens == sum(m.tokens for m in unsent)
    assert found.by_role == {"user": 40, "assistant": 68, "tool": 31}
    assert found.headline() == "139 messages / 28,958 tokens not sent: 40 user, 68 assistant, 31 tool results; cut at #145, missed by 4 tokens"
    # missy's reason for the cut message says the same: 689 tokens did not fit in the 685 left
    assert plan.messages[145].reason == "dropped: 689 tokens did not fit in the 685 left of the 20,800-token history budget"
    assert found.user_requests[0].index == 1 and found.user_requests[0].first_line.startswith("Hi. I have a few things going on")
    assert [m.index for m in found.largest] == sorted((m.index for m in unsent), key=lambda i: -plan.messages[i].tokens)[:5]


def test_nothing_lost_and_no_cut_for_room() -> None:
    session = load_session(str(SAMPLES / "multimodal_review.yaml"))
    found = lost(plan_session(session, "missy"), session)
    assert found.messages == 0 and found.headline() == "Every message is sent."


def test_the_card_links_every_message_and_escapes_session_text(qtbot) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("PySide6")
    from ctxviz.engine.session import Message, Session, TextPart, default_category
    from ctxviz.gui.widgets.lost_card import LostCard

    hostile = "<img src=x onerror=alert(1)> & <b>bold</b>"
    messages = tuple(Message(id=f"m{i}", index=i, role=r, parts=(TextPart(hostile if i == 0 else "x" * 400),), category=default_category(r))
                     for i, r in enumerate(["user", "assistant"] * 10))
    session = Session(messages=messages, source="<t>", format="test")
    plan = plan_session(session, "missy", {"total": 500, "fresh_tail_count": 2, "system_reserve": 0, "tool_definitions_reserve": 0})
    card = LostCard()
    qtbot.addWidget(card)
    card.set_plan(session, plan)
    text = card.label.text()
    assert plan.messages[0].decision.value == "dropped"
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text and 'href="#0"' in text
    with qtbot.waitSignal(card.messageClicked) as clicked:
        card.label.linkActivated.emit("#0")
    assert clicked.args == [0]


def test_the_card_adds_retention_and_the_instructions_lost(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("PySide6")
    from PySide6.QtCore import QSettings

    from ctxviz.engine.retention import plan_retention
    from ctxviz.gui.main_window import MainWindow

    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.vm.retentionReady, timeout=60000) as got:
        win.open_path(str(SAMPLES / "support_chat.yaml"))
    plan, retention = got.args
    expected = plan_retention(plan, win.vm.session)
    assert (retention.kept, retention.anchors, retention.instructions_kept) == (expected.kept, expected.anchors, expected.instructions_kept)
    text = win.lost_card.label.text()
    assert f"{retention.kept:,} of {retention.anchors:,} anchors still sent" in text
    first_lost = next(a for a in retention.lost if a.kind == "instruction")
    assert f'href="#{first_lost.first_index}"' in text.split("Instructions lost:", 1)[1]
    win.vm.shutdown()
