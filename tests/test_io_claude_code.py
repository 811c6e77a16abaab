"""Claude Code JSONL loader: golden load of a hand-written session, detection, and one clear line per bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.session import Compaction, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from ctxviz.errors import LoadError
from ctxviz.io.claude_code import ClaudeCodeLoader
from ctxviz.io.loaders import load_session, loader_names, register_loader
from ctxviz.io.source import SourceFile

if "claude-code" not in loader_names():
    register_loader(ClaudeCodeLoader())

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "claude_code", "parser_fix.jsonl")

U1 = "5a1c9e3d-2b4f-4a6e-8c0d-7e9f1a2b3c4d"
A1 = "c2d3e4f5-0a1b-4c2d-8e3f-4a5b6c7d8e9f"
T1 = "f5a6b7c8-3d4e-4f5a-9b6c-7d8e9f0a1b2c"
A2 = "3f4a5b6c-7d8e-4f9a-9b0c-2d3e4f5a6b7c"
U2 = "7d8e9f0a-1b2c-4d3e-9f4a-6b7c8d9e0f1a"
A3 = "8e9f0a1b-2c3d-4e4f-8a5b-7c8d9e0f1a2b"
T2 = "9f0a1b2c-3d4e-4f5a-9b6c-8d9e0f1a2b3c"
A4 = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def write_lines(tmp_path: Path, lines: list[Any], name: str = "session.jsonl") -> str:
    """A JSONL file from records (dicts are dumped, strings written verbatim)."""
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return str(path)


def user(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "sessionId": "s1",
        "timestamp": "2025-10-14T09:00:00Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def assistant(
    uuid: str,
    msg_id: str,
    content: list[Any],
    model: str = "claude-sonnet-4-5-20250929",
    usage: dict[str, int] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    message = {
        "model": model,
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "content": content,
        "usage": usage or {"input_tokens": 1, "output_tokens": 1},
    }
    return {
        "type": "assistant",
        "uuid": uuid,
        "sessionId": "s1",
        "timestamp": "2025-10-14T09:00:01Z",
        "message": message,
        **extra,
    }


def test_golden_session():
    s = load_session(FIXTURE)
    assert s.format == "claude-code" and s.source == FIXTURE
    assert s.title == "Fix flaky parser test"  # the last summary line wins
    assert s.model == "claude-sonnet-4-5-20250929"  # the latest assistant line's model
    assert [m.id for m in s.messages] == [U1, A1, T1, A2, U2, A3, T2, A4]
    assert [m.index for m in s.messages] == list(range(8))
    assert [m.role for m in s.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert s.messages[0].parts == (
        TextPart("tests/test_lexer.py::test_tokens fails about one run in five. Can you find out why?"),
    )
    assert s.messages[0].timestamp == "2025-10-14T09:12:03.102Z"
    assert s.messages[4].text == "Sort it in the test and run the suite."


def test_streamed_assistant_lines_are_merged():
    s = load_session(FIXTURE)
    a1 = s.messages[1]
    assert a1.parts == (
        ThinkingPart("An intermittent failure smells like ordering or randomness. Read the test first."),
        TextPart("Let me read the failing test."),
        ToolCallPart("toolu_01Rg5wLk9", "Read", '{"file_path": "/home/dev/tinyparse/tests/test_lexer.py"}'),
    )
    # The first line's id and time, the last line's usage, and every line kept as raw.
    assert a1.timestamp == "2025-10-14T09:12:06.441Z"
    assert a1.usage == Usage(
        input_tokens=4, output_tokens=112, cache_read_input_tokens=15480, cache_creation_input_tokens=2113
    )
    assert a1.usage.window_fill == 4 + 15480 + 2113
    assert isinstance(a1.raw, list) and [r["uuid"] for r in a1.raw] == [
        A1,
        "d3e4f5a6-1b2c-4d3e-9f4a-5b6c7d8e9f0a",
        "e4f5a6b7-2c3d-4e4f-8a5b-6c7d8e9f0a1b",
    ]
    assert s.messages[3].raw[0]["uuid"] == A2 and len(s.messages[3].raw) == 1
    assert s.messages[0].raw["uuid"] == U1


def test_tool_results_become_tool_messages():
    s = load_session(FIXTURE)
    t1, t2 = s.messages[2], s.messages[6]
    assert t1.tool_call_id == "toolu_01Rg5wLk9" and t1.usage is None
    assert t1.parts[0].text.startswith("     1\tfrom tinyparse.lexer import tokens")
    assert t2.parts == (ToolResultPart("toolu_01Bq7nRs2", "112 passed in 0.84s"),)
    assert t2.to_openai() == {"role": "tool", "content": "112 passed in 0.84s", "tool_call_id": "toolu_01Bq7nRs2"}
    assert s.messages[5].tool_calls == (
        ToolCallPart(
            "toolu_01Bq7nRs2", "Bash", '{"command": "python -m pytest -q", "description": "Run the test suite"}'
        ),
    )


def test_sidechain_progress_and_bookkeeping_lines_are_skipped():
    s = load_session(FIXTURE)
    texts = " ".join(m.text for m in s.messages)
    assert "callers of tokens()" not in texts and "Only tests/test_lexer.py" not in texts
    assert "claude-haiku" not in s.model


def test_compaction_and_summary():
    s = load_session(FIXTURE)
    assert s.compactions == (Compaction(before_index=4, trigger="manual", pre_tokens=18022),)
    (summary,) = s.summaries
    assert summary.text.startswith("This session is being continued from a previous conversation")
    assert summary.depth == 1 and summary.messages_covered == 4
    assert summary.covers == (U1, A1, T1, A2)
    assert summary.created_at == "2025-10-14T09:13:40.010Z"
    assert (summary.time_range_start, summary.time_range_end) == (
        "2025-10-14T09:12:03.102Z",
        "2025-10-14T09:12:14.876Z",
    )
    assert all("This session is being continued" not in m.text for m in s.messages)


def test_detection():
    src = SourceFile(FIXTURE)
    assert ClaudeCodeLoader().sniff(src)
    assert not ClaudeCodeLoader().sniff(SourceFile("x.json", '{"type": "user", "uuid": "u"}'))
    assert not ClaudeCodeLoader().sniff(SourceFile("x.jsonl", '{"type": "meta", "session_id": "ab", "agent": "a"}\n'))
    assert not ClaudeCodeLoader().sniff(SourceFile("x.jsonl", '{"type": "user", "content": "hi"}\n'))
    snapshot = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False}
    assert ClaudeCodeLoader().sniff(SourceFile("x.jsonl", json.dumps(snapshot) + "\n"))
    assert load_session(FIXTURE, input_format="claude-code").messages == load_session(FIXTURE).messages


def test_interleaved_lines_and_edge_cases(tmp_path):
    lines = [
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1", "timestamp": "2025-10-14T09:00:00Z"},
        user("u1", "go"),
        assistant("a1", "msg_1", [{"type": "text", "text": "one"}]),
        {"type": "attachment", "uuid": "x", "sessionId": "s1"},
        {"type": "brand-new-line-type", "uuid": "y"},
        assistant("a2", "msg_1", [{"type": "text", "text": "two"}], usage={"input_tokens": 9, "output_tokens": 3}),
        # One user line with two results and some text: ids stay unique.
        user(
            "u2",
            [
                {"type": "tool_result", "tool_use_id": "t1", "content": "r1"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "r2", "is_error": True},
                {"type": "text", "text": "and then?"},
            ],
        ),
        assistant("a3", "msg_1", [{"type": "text", "text": "not merged across a user line"}]),
        assistant(
            "a4",
            "msg_x",
            [{"type": "text", "text": "API Error: overloaded"}],
            model="<synthetic>",
            isApiErrorMessage=True,
        ),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "compact_metadata": {"trigger": "auto", "pre_tokens": 155000},
        },
        {"type": "system", "subtype": "informational", "content": "hi", "uuid": "i1"},
    ]
    s = load_session(write_lines(tmp_path, lines))
    assert [m.id for m in s.messages] == ["u1", "a1", "u2", "u2#1", "u2#2", "a3", "a4"]
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "tool", "user", "assistant", "assistant"]
    assert s.messages[1].text == "one\ntwo" and s.messages[1].usage == Usage(input_tokens=9, output_tokens=3)
    assert [m.tool_call_id for m in s.messages[2:4]] == ["t1", "t2"] and s.messages[3].parts[0].is_error
    assert s.messages[4].parts == (TextPart("and then?"),)
    assert s.model == "claude-sonnet-4-5-20250929"  # the synthetic error message is not a model
    assert s.compactions == (Compaction(before_index=7, trigger="auto", pre_tokens=155000),)
    assert s.summaries == () and s.title == ""


def test_compact_summary_without_boundary_covers_everything_before(tmp_path):
    lines = [
        user("u1", "a"),
        assistant("a1", "m1", [{"type": "text", "text": "b"}]),
        user("s", [{"type": "text", "text": "Summary so far"}], isCompactSummary=True),
        user("u2", "c"),
    ]
    s = load_session(write_lines(tmp_path, lines))
    assert [m.id for m in s.messages] == ["u1", "a1", "u2"]
    assert s.summaries[0].text == "Summary so far" and s.summaries[0].covers == ("u1", "a1")
    assert s.compactions == ()


GOOD = user("u1", "hello")


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([GOOD, '{"type": "assistant", "message": {"role": "assist'], r"bad.jsonl:2: truncated JSON line: "),
        ([GOOD, "[1, 2]"], "bad.jsonl:2: expected an object, got a list"),
        ([GOOD, {"type": "assistant", "uuid": "a"}], "bad.jsonl:2: message: is required"),
        (
            [GOOD, GOOD, {"type": "user", "uuid": "u", "message": "hello"}],
            "bad.jsonl:3: message: expected an object, got a string",
        ),
        (
            [GOOD, {"type": "user", "uuid": "u", "message": ["hello"]}],
            "bad.jsonl:2: message: expected an object, got a list",
        ),
        (
            [GOOD, {"type": "user", "message": {"content": 7}}],
            "bad.jsonl:2: message.content: expected a string or a list of content blocks, got a number",
        ),
        (
            [GOOD, {"type": "user", "message": {"content": [{"text": "x"}]}}],
            "bad.jsonl:2: message.content[0].type: is required",
        ),
        (
            [GOOD, assistant("a", "m", [], usage={"input_tokens": "12"})],
            "bad.jsonl:2: message.usage.input_tokens: expected an integer, got a string",
        ),
        ([GOOD, {"uuid": "a", "message": {}}], "bad.jsonl:2: type: is required"),
        ([GOOD, {**GOOD, "isSidechain": "yes"}], "bad.jsonl:2: isSidechain: expected true or false, got a string"),
        (
            [GOOD, {"type": "system", "subtype": "compact_boundary", "compactMetadata": {"preTokens": "lots"}}],
            "bad.jsonl:2: compactMetadata.preTokens: expected an integer, got a string",
        ),
        (
            [GOOD, {"type": "system", "subtype": "compact_boundary", "compactMetadata": 5}],
            "bad.jsonl:2: compactMetadata: expected an object, got a number",
        ),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, lines, expected):
    # No newline after the last line, so a cut-off last record reads as truncated.
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines), encoding="utf-8")
    with pytest.raises(LoadError) as err:
        load_session(str(path))
    assert str(err.value).startswith(f"{path.parent}{os.sep}{expected}")
