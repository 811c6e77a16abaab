"""A `/compact` that keeps a preserved segment is in force from its boundary, not from its covers' end.

Claude Code 2.1's manual compaction keeps the newest messages verbatim (`preservedSegment`): its
summary covers what came before them, yet it was written after them. The call those messages
answered went out whole, and the logs say so: the provider's usage for that call grows on from the
call before, then drops at the first call after the boundary. A replay that put the summary in
force at its covers' end compacted one call early (12 % under the bill on tugtool-compact-native's
last call).
"""

from __future__ import annotations

import os

import pytest

from ctxviz.engine.session import Compaction, Message, Session, Summary
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

REAL = os.path.join(os.path.dirname(__file__), "data", "real", "claude_code")
PRESERVING = ["tugtool-compact-native.jsonl", "tugtool-rewind-branch.jsonl"]  # the real logs with preserved segments


@pytest.mark.parametrize("name", PRESERVING)
@pytest.mark.parametrize("incremental", [True, False], ids=["carried", "reference"])
def test_the_call_a_preserved_message_answered_went_out_without_the_summary(name: str, incremental: bool) -> None:
    session = load_session(os.path.join(REAL, name))
    timeline = simulate(session, "claude-code", incremental=incremental)
    by_reply = {t.reply: t for t in timeline.turns}
    checked = 0
    for compaction, summary, start in zip(session.compactions, session.summaries, session.summary_start_turns, strict=True):
        assert compaction.preserved and start == compaction.before_index
        covered = len(summary.covers)
        before = [t for t in timeline.turns if t.reply < compaction.before_index]
        after = [t for t in timeline.turns if t.reply >= compaction.before_index]
        # every call before the boundary sends what this summary covers (it was not written yet) ...
        assert before and all(t.summarized < covered for t in before)
        # ... and the call answered by the preserved message is one of them
        preserved_reply = max(session.messages[j].index for j in range(compaction.before_index) if session.messages[j].id in compaction.preserved)
        assert preserved_reply in by_reply and by_reply[preserved_reply].summarized < covered
        if after:  # the first call after the boundary sends the summary in place of its covers
            assert after[0].summarized == covered
            assert any(e.kind == "compaction" for e in after[0].events)
        assert not any(e.kind == "compaction" and f"#{covered - 1}," in e.message for t in before for e in t.events)
        checked += 1
    assert checked == len(session.compactions) >= 1


@pytest.mark.parametrize("incremental", [True, False], ids=["carried", "reference"])
def test_every_call_of_a_log_that_reports_them_all_is_replayed_within_one_percent(incremental: bool) -> None:
    """tugtool-compact-native reports usage on all 9 calls and compacts after the last: each step,
    the last one too, sends what the provider billed, within 1 %."""
    session = load_session(os.path.join(REAL, "tugtool-compact-native.jsonl"))
    turns = simulate(session, "claude-code", incremental=incremental).turns
    assert len(turns) == 9
    for t in turns[1:]:  # (the first call's unseen system prompt is estimated from that call itself)
        reported = session.messages[t.reply].usage.window_fill
        assert abs(t.tokens_sent - reported) <= 0.01 * reported, (t.reply, t.tokens_sent, reported)


def _session(ids: str, covers: str, before_index: int, preserved: str) -> Session:
    messages = tuple(Message(id=i, index=k, role="user" if k % 2 == 0 else "assistant") for k, i in enumerate(ids))
    return Session(messages=messages, summaries=(Summary(text="summary", covers=tuple(covers), messages_covered=len(covers)),),
                   compactions=(Compaction(before_index=before_index, trigger="manual", preserved=tuple(preserved)),))


def test_a_summary_starts_at_its_boundary_only_across_preserved_messages() -> None:
    # covers a, b; c and d preserved; boundary after d: written there
    assert _session("abcdef", "ab", 4, "cd").summary_start_turns == (4,)
    # nothing preserved between the covers and the boundary: the covers' end is the boundary
    assert _session("abcdef", "ab", 2, "").summary_start_turns == (2,)
    # c is preserved, d is neither covered nor preserved: not this compaction's summary as far as the
    # file shows, so it stays where its covers end
    assert _session("abcdef", "ab", 4, "c").summary_start_turns == (2,)
    # a preserved segment further on, with the covers' end at a boundary of its own
    two = _session("abcdef", "ab", 2, "")
    two = Session(messages=two.messages, summaries=two.summaries,
                  compactions=(*two.compactions, Compaction(before_index=4, trigger="manual", preserved=("c", "d"))))
    assert two.summary_start_turns == (2,)
