"""A pinned message's detail says what unpinning would do, not that more room would send it: the
panel read "kept … (689 sent)" then "missed by 4 tokens: that much more room and it would be sent"."""

from __future__ import annotations

from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"
MISSED = 145  # missy drops it by 4 tokens


def test_a_pinned_message_is_not_said_to_need_more_room(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    win.select_message(MISSED)
    assert not win.vm.plan.messages[MISSED].sent
    assert "missed by 4 tokens: that much more room and it would be sent" in win.detail_text()
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.detail_head.linkActivated.emit("pin")
    qtbot.waitUntil(lambda: win.vm.plan.messages[MISSED].sent and "(689 sent)" in win.detail_text(), timeout=30000)
    text = win.detail_text()
    assert "that much more room and it would be sent" not in text
    assert "pinned: unpinned, it would miss by 4 tokens and not be sent" in text
