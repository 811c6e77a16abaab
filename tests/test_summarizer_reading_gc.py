"""The offline summariser reads a run of messages with the cycle collector paused.

A first compaction of a long session reads tens of thousands of messages, each into tuples and a
weak reference; with the collector running, its full passes over the heap took about a third of a
100,000-message Codex re-plan (626 -> 400 ms, bench/bench_engine.py). Pausing changes when cyclic
garbage is freed, never what is read: these tests hold both.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

from ctxviz.engine import summarizers
from ctxviz.engine.session import Message, TextPart, ToolCallPart, ToolResultPart


def _messages() -> list[Message]:
    return [
        Message(index=0, id="m0", role="user", parts=(TextPart(text="Fix the failing test in src/app.py, see https://example.com/issue/4"),)),
        Message(index=1, id="m1", role="assistant", parts=(TextPart(text="We'll use pytest -x.\nDecided: keep the API."),
                                                        ToolCallPart(id="c1", name="edit_file", arguments='{"path": "src/app.py"}'))),
        Message(index=2, id="m2", role="tool", name="edit_file", parts=(ToolResultPart(text="Traceback ...\nValueError: boom\nerror: exit 1", tool_call_id="c1"),)),
    ]


def _watched(messages: list[Message], seen: list[bool]) -> Iterator[Message]:
    for m in messages:
        seen.append(gc.isenabled())
        yield m


def test_features_of_reads_with_the_collector_paused_and_gives_it_back() -> None:
    messages = _messages()
    seen: list[bool] = []
    summarizers._features.cache_clear()  # type: ignore[attr-defined]
    assert gc.isenabled()
    found = summarizers.features_of(_watched(messages, seen))
    assert seen == [False, False, False]
    assert gc.isenabled()
    assert found == [summarizers._extract(m) for m in messages]  # what is read is unchanged


def test_the_snapshot_reads_with_the_collector_paused_and_gives_it_back() -> None:
    messages = _messages()
    summarizers._features.cache_clear()  # type: ignore[attr-defined]
    with_collector = summarizers.supyagent_snapshot.__wrapped__(messages)  # type: ignore[attr-defined]
    summarizers._features.cache_clear()  # type: ignore[attr-defined]
    paused: list[bool] = []
    real = summarizers._extract

    def spy(m: Message) -> summarizers.Features:
        paused.append(not gc.isenabled())
        return real(m)

    summarizers._extract = spy  # type: ignore[assignment]
    try:
        text = summarizers.supyagent_snapshot(messages)
    finally:
        summarizers._extract = real  # type: ignore[assignment]
    assert paused == [True, True, True]
    assert gc.isenabled()
    assert text == with_collector
    assert "src/app.py" in text and "ValueError: boom" in text
