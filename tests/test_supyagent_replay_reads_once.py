"""supyagent's replay reads each message's features once, however many summaries it writes.

supyagent re-summarises the history from message 0 at every trigger, and once the history passes
max_tokens_before_summary every turn triggers (on a long log, every turn from that point on). The
carried snapshot (`policies/carried._Snapshot`) is handed only the readings of the messages that a
summary covers and the one before did not (each message's reading made once and kept on what the
summariser is shown of it, `summary_input.Shown`). If it were handed the whole covered prefix at every trigger, the replay
would grow with the square of the session's length even with each message's features cached.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies import carried
from ctxviz.engine.policies.supyagent import summary_input
from ctxviz.engine.session import Message, Session
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


@pytest.mark.parametrize("pair_safe", [False, True])
@pytest.mark.parametrize(("sample", "params"), [
    ("coding_agent.yaml", {"max_messages_before_summary": 1, "min_recent_messages": 2}),
    # the token trigger fires at every turn: the recorded compactions stop being read when it does
    ("claude_code_compaction.jsonl", {"max_tokens_before_summary": 1, "min_recent_messages": 2}),
])
def test_each_message_is_read_once_for_all_the_summaries(monkeypatch: pytest.MonkeyPatch, sample: str, params: dict[str, int],
                                                         pair_safe: bool) -> None:
    session: Session = load_session(str(SAMPLES / sample))
    read: list[Message] = []
    features_of = carried.features_of

    def counted(messages):  # noqa: ANN001, ANN202
        messages = list(messages)
        read.extend(messages)
        return features_of(messages)

    readings = summary_input.SummaryInput.readings

    def handed(shown, start=0):  # noqa: ANN001, ANN202  # the messages whose readings the snapshot is handed
        read.extend(m for m, _ in shown.items[start:])
        return readings(shown, start)

    monkeypatch.setattr(carried, "features_of", counted)
    monkeypatch.setattr(summary_input.SummaryInput, "readings", handed)
    timeline = simulate(session, "supyagent", params, options=PlanOptions(pair_safe=pair_safe))
    history = [m for m in session.messages if m.role != "system"]
    assert len(timeline.summaries) >= len(timeline.turns) // 2  # a summary on most turns: the case this guards
    assert len({id(m) for m in read}) == len(read)  # none read twice
    assert len(read) <= len(history)
    # the last summary covers what was read: the history from 0 up to its newest covered message
    assert [m.id for m in read] == list(timeline.summaries[-1].covers)
