"""Claude Code JSONL loader: golden load of a hand-written session, detection, one clear line per bad
input, the conversation Claude Code itself rebuilds (the parentUuid chain: rewinds, parallel tool
results, streamed lines, compactions), sub-agent transcripts, attachments, microcompaction,
bookkeeping notes, and a recorded compaction honoured by every policy."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.planner import plan_session
from ctxviz.engine.session import Category, Compaction, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
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
        ([GOOD, '{"type": "assistant", "message": {"role": "assist', GOOD], r"bad.jsonl:2: truncated JSON line: "),
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


# --- the conversation Claude Code rebuilds: the parentUuid chain from the last line -----------------
def linked(*lines: dict[str, Any]) -> list[dict[str, Any]]:
    """Lines whose `parentUuid` is the line before's uuid unless they say otherwise (None = a root)."""
    out, previous = [], None
    for x in lines:
        x = {"parentUuid": previous, **x}
        out.append(x)
        previous = x.get("uuid", previous)
    return out


def texts(session: Any) -> list[str]:
    return [m.text for m in session.messages]


def test_a_rewound_branch_is_left_out_and_counted(tmp_path):
    lines = linked(
        user("u1", "first question"),
        assistant("a1", "m1", [{"type": "text", "text": "first answer"}]),
        user("u2", "a question the user took back"),
        assistant("a2", "m2", [{"type": "text", "text": "an answer nobody kept"}]),
        {**user("u3", "the question asked instead"), "parentUuid": "a1"},  # the rewind: back to a1
        assistant("a3", "m3", [{"type": "text", "text": "the answer kept"}]),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert texts(s) == ["first question", "first answer", "the question asked instead", "the answer kept"]
    assert "left out 2 lines of abandoned branches (rewinds)" in s.notes


def test_parallel_tool_results_and_streamed_lines_stay_together(tmp_path):
    """Claude Code 2.x: one line per content block (same message.id), chained; each tool result is a
    child of its own tool_use line, so walking back from the last line passes through one of them."""
    call = {"type": "tool_use", "name": "Read"}
    lines = linked(
        user("u1", "read both files"),
        assistant("a1", "msg_1", [{"type": "text", "text": "Reading both."}]),
        assistant("a2", "msg_1", [{**call, "id": "t1", "input": {"file_path": "a.py"}}]),
        assistant("a3", "msg_1", [{**call, "id": "t2", "input": {"file_path": "b.py"}}]),
        {"type": "progress", "uuid": "p1", "data": {"type": "hook_progress"}},
        {**user("r1", [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]), "parentUuid": "a2"},
        {**user("r2", [{"type": "tool_result", "tool_use_id": "t2", "content": "B"}]), "parentUuid": "a3"},
        assistant("a4", "msg_2", [{"type": "text", "text": "Both read."}], usage={"input_tokens": 7, "output_tokens": 2}),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert s.messages[1].text == 'Reading both.\nRead({"file_path": "a.py"})\nRead({"file_path": "b.py"})'
    assert [r["uuid"] for r in s.messages[1].raw] == ["a1", "a2", "a3"]
    assert len(s.tool_pairs) == 2 and s.tool_call_problems == ()
    assert not any("left out" in n for n in s.notes)
    assert "skipped 1 `progress` line (bookkeeping, not context)" in s.notes


def test_a_compaction_is_crossed_through_its_logical_parent(tmp_path):
    """The boundary starts a new root (parentUuid null); logicalParentUuid leads back to the
    conversation it summarised, and compactMetadata is read whole."""
    lines = linked(
        user("u1", "step one"),
        assistant("a1", "m1", [{"type": "text", "text": "done one"}]),
        user("u2", "step two"),
        assistant("a2", "m2", [{"type": "text", "text": "done two"}]),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None, "logicalParentUuid": "a2",
         "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 155000, "postTokens": 9000,
                                                                  "preservedSegment": {"headUuid": "u2", "anchorUuid": "s1", "tailUuid": "a2"}}},
        user("s1", "This session is being continued from a previous conversation...", isCompactSummary=True),
        user("u3", "step three"),
        assistant("a3", "m3", [{"type": "text", "text": "done three"}]),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert [m.id for m in s.messages] == ["u1", "a1", "u2", "a2", "u3", "a3"]
    assert s.compactions == (Compaction(before_index=4, trigger="auto", pre_tokens=155000, post_tokens=9000, preserved=("u2", "a2")),)
    (summary,) = s.summaries
    assert summary.covers == ("u1", "a1") and summary.messages_covered == 2  # the preserved segment stays in context
    # written at the boundary, after the preserved messages: the call that a2 answered went out without it
    assert s.summary_start_turns == (4,)


def test_a_parent_missing_from_the_file_continues_with_the_line_before(tmp_path):
    """2.1.x boundaries can name a last message Claude Code never wrote; hand-trimmed files miss lines."""
    lines = linked(
        user("u1", "before"),
        assistant("a1", "m1", [{"type": "text", "text": "answer"}]),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None, "logicalParentUuid": "never-written",
         "compactMetadata": {"trigger": "manual", "preTokens": 1000}},
        user("s1", "summary", isCompactSummary=True),
        user("u2", "after"),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert [m.id for m in s.messages] == ["u1", "a1", "u2"] and s.summaries[0].covers == ("u1", "a1")
    assert any(n.startswith("the chain of lines breaks 1 time at a parent that is not in the file") for n in s.notes)


def test_a_replaced_compact_request_is_not_counted_as_a_rewind(tmp_path):
    lines = linked(
        user("u1", "hello"),
        assistant("a1", "m1", [{"type": "text", "text": "hi"}]),
        user("c1", "/compact"),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None, "logicalParentUuid": "a1",
         "compactMetadata": {"trigger": "manual", "preTokens": 500}},
        user("s1", "summary", isCompactSummary=True),
        user("u2", "go on"),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert [m.id for m in s.messages] == ["u1", "a1", "u2"]
    assert "left out 1 `/compact` request line a compaction took the place of" in s.notes
    assert not any("rewinds" in n for n in s.notes)


def test_lines_all_rooted_read_in_file_order(tmp_path):
    """Hand-made files that set every parentUuid to null still read as the conversation they are."""
    lines = [{**user("u1", "a"), "parentUuid": None}, {**assistant("a1", "m1", [{"type": "text", "text": "b"}]), "parentUuid": None},
             {**user("u2", "c"), "parentUuid": None}]
    assert texts(load_session(write_lines(tmp_path, lines))) == ["a", "b", "c"]


def test_whitespace_only_assistant_lines_are_left_out(tmp_path):
    lines = linked(
        user("u1", "go"),
        assistant("a1", "m1", [{"type": "text", "text": "\n\n"}]),
        assistant("a2", "m1", [{"type": "thinking", "thinking": "plan"}]),
        assistant("a3", "m1", [{"type": "text", "text": "Done."}]),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert s.messages[1].parts == (ThinkingPart("plan"), TextPart("Done."))
    assert "left out 1 whitespace-only assistant line, as Claude Code does before sending them" in s.notes


# --- sub-agent transcripts ---------------------------------------------------------------------------
def test_a_sub_agent_transcript_loads_as_that_sub_agents_session(tmp_path):
    lines = linked(
        {**user("s1", "Find the callers of tokens()."), "parentUuid": "toolu-in-the-main-session", "isSidechain": True, "agentId": "a1b2"},
        {**assistant("s2", "m1", [{"type": "text", "text": "Only the lexer test calls it."}]), "isSidechain": True, "agentId": "a1b2"},
    )
    s = load_session(write_lines(tmp_path, lines, name="9f1e.jsonl"))
    assert texts(s) == ["Find the callers of tokens().", "Only the lexer test calls it."]
    assert "sub-agent transcript (agentId a1b2)" in s.notes and s.title == "sub-agent a1b2"


def test_a_sub_agent_file_is_known_by_its_name(tmp_path):
    (tmp_path / "subagents").mkdir()
    lines = linked(user("s1", "task"), assistant("s2", "m1", [{"type": "text", "text": "result"}]))
    s = load_session(write_lines(tmp_path / "subagents", lines, name="agent-acompact-e1f845.jsonl"))
    assert "sub-agent transcript (agentId acompact-e1f845)" in s.notes and len(s.messages) == 2


# --- attachments, microcompaction, bookkeeping, unknown lines and blocks ------------------------------
def attachment(uuid: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "attachment", "uuid": uuid, "sessionId": "s1", "timestamp": "2025-10-14T09:00:02Z", "attachment": body}


def test_attachments_become_the_context_claude_code_renders(tmp_path):
    lines = linked(
        user("u1", "fix the parser"),
        attachment("n1", {"type": "nested_memory", "path": "/repo/src/CLAUDE.md",
                          "content": {"path": "/repo/src/CLAUDE.md", "type": "Project", "content": "Use tabs."}}),
        attachment("h1", {"type": "hook_additional_context", "hookName": "SessionStart", "content": ["branch: main", "clean tree"]}),
        attachment("f1", {"type": "file", "filename": "/repo/a.py", "content": {"type": "text", "file": {"content": "x = 1\ny = 2"}}}),
        attachment("t1", {"type": "todo_reminder", "content": [{"content": "write tests", "status": "pending"}], "itemCount": 1}),
        attachment("q1", {"type": "hook_success", "hookName": "PostToolUse:Edit", "hookEvent": "PostToolUse", "content": "ok"}),
        attachment("x1", {"type": "brand_new_attachment", "level": 3}),
        attachment("o1", {"type": "todo", "content": []}),
        assistant("a1", "m1", [{"type": "text", "text": "On it."}]),
    )
    s = load_session(write_lines(tmp_path, lines))
    context = [m for m in s.messages if m.category is Category.CONTEXT]
    assert [m.id for m in context] == ["n1", "h1", "f1", "t1", "x1"] and all(m.role == "user" for m in context)
    assert context[0].text == "<system-reminder>\nContents of /repo/src/CLAUDE.md:\n\nUse tabs.\n</system-reminder>"
    assert context[1].text == "<system-reminder>\nSessionStart hook additional context: branch: main\nclean tree\n</system-reminder>"
    assert 'Called the Read tool with the following input: {"file_path": "/repo/a.py"}' in context[2].text
    assert "     1\tx = 1\n     2\ty = 2" in context[2].text
    assert "The TodoWrite tool hasn't been used recently" in context[3].text and "1. [pending] write tests" in context[3].text
    assert context[4].text == '<system-reminder>\n{"level": 3}\n</system-reminder>'
    assert "skipped 1 `hook_success` attachment: Claude Code sends nothing for them" in s.notes
    assert "skipped 1 `todo` attachment: Claude Code sends nothing for them" in s.notes
    assert ("read 1 `brand_new_attachment` attachment from their fields (ctxviz does not know how Claude Code words them)"
            in s.notes)


def test_a_prompt_snapshot_gives_the_system_prompt_and_tools(tmp_path):
    snapshot = {"type": "prompt_snapshot", "systemPrompt": ["You are Claude Code.", "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__", "cwd: /repo"],
                "tools": [{"name": "Read", "description": "Read a file"}, {"name": "Bash", "description": "Run a command"}]}
    lines = linked(user("u1", "hi"), attachment("p1", snapshot),
                   assistant("a1", "m1", [{"type": "text", "text": "hello"}], usage={"input_tokens": 120, "output_tokens": 1}))
    s = load_session(write_lines(tmp_path, lines))
    assert s.system_prompt == "You are Claude Code.\n\ncwd: /repo" and [t.name for t in s.tools] == ["Read", "Bash"]
    assert texts(s) == ["hi", "hello"]
    reported = plan_session(s).reported
    assert reported.visible_before_first > 60  # the snapshot's prompt and tools count as shown...
    assert reported.unseen == 0  # ...so a first call of about their size leaves nothing unseen
    # A first call far beyond them: the snapshot is not all that was sent, and the note says so.
    lines[-1]["message"]["usage"]["input_tokens"] = 9000
    grown = plan_session(load_session(write_lines(tmp_path, lines)))
    assert grown.reported.unseen == 8900 and grown.reported.partial
    assert any("are not all that was sent" in n for n in grown.notes)


def test_microcompact_replaces_the_tool_results_it_lists(tmp_path):
    lines = linked(
        user("u1", "look"),
        assistant("a1", "m1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                               {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pwd"}}]),
        user("r1", [{"type": "tool_result", "tool_use_id": "t1", "content": "a long listing"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "/repo"}]),
        {"type": "system", "subtype": "microcompact_boundary", "uuid": "mc1", "content": "Context microcompacted",
         "microcompactMetadata": {"trigger": "auto", "preTokens": 60000, "tokensSaved": 20000, "compactedToolIds": ["t1"],
                                  "clearedAttachmentUUIDs": []}},
        assistant("a2", "m2", [{"type": "text", "text": "ok"}]),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert [m.text for m in s.messages if m.role == "tool"] == ["[Old tool result content cleared]", "/repo"]
    assert 'replaced 1 tool result a `microcompact_boundary` cleared with "[Old tool result content cleared]"' in s.notes


def test_bookkeeping_is_counted_and_unknown_lines_with_a_message_are_read(tmp_path):
    lines = linked(
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1"},
        user("u1", "hi"),
        {"type": "system", "subtype": "turn_duration", "uuid": "d1", "durationMs": 10},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
        {"type": "future-line", "uuid": "f1", "message": {"role": "assistant", "content": [{"type": "text", "text": "from the future"}]}},
        {"type": "another-line", "uuid": "f2", "payload": 1},
        {"type": "custom-title", "customTitle": "Renamed", "sessionId": "s1"},
        {"type": "summary", "summary": "Auto title", "leafUuid": "f1"},
    )
    s = load_session(write_lines(tmp_path, lines))
    assert texts(s) == ["hi", "from the future"] and s.messages[1].role == "assistant"
    assert s.title == "Renamed"  # a title the user gave beats the generated one
    for note in ("skipped 1 `queue-operation` line (bookkeeping, not context)",
                 "skipped 1 `system` line of subtype `turn_duration` (Claude Code's own bookkeeping, not sent)",
                 "skipped 1 `file-history-snapshot` line (bookkeeping, not context)",
                 "read 1 line of the unknown type `future-line` as messages",
                 "skipped 1 line of the unknown type `another-line` (no `message`)"):
        assert note in s.notes


def test_server_tool_and_unknown_blocks_stay_inside_the_assistant_turn(tmp_path):
    lines = linked(
        user("u1", "search the web"),
        assistant("a1", "m1", [{"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "ctxviz"}},
                               {"type": "web_search_tool_result", "tool_use_id": "srv_1",
                                "content": [{"type": "web_search_result", "title": "ctxviz", "url": "https://example.org"}]},
                               {"type": "brand_new_block", "payload": {"x": 1}},
                               {"type": "text", "text": "Found it."}]),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert [m.role for m in s.messages] == ["user", "assistant"]
    kinds = [p.kind for p in s.messages[1].parts]
    assert kinds == ["opaque", "opaque", "opaque", "text"]
    assert [p.type for p in s.messages[1].parts[:3]] == ["server_tool_use", "web_search_tool_result", "brand_new_block"]
    assert s.tool_pairs == () and s.tool_call_problems == ()


def test_version_usage_and_the_hidden_prompt(tmp_path):
    lines = linked(
        {**user("u1", "hello there"), "version": "2.0.14"},
        {**assistant("a1", "m1", [{"type": "text", "text": "hi"}],
                     usage={"input_tokens": 3, "cache_read_input_tokens": 15000, "cache_creation_input_tokens": 2000, "output_tokens": 5}),
         "version": "2.0.20"},
    )
    s = load_session(write_lines(tmp_path, lines))
    assert s.format_version == "2.0.20" and "written by Claude Code 2.0.14 to 2.0.20" in s.notes
    assert s.messages[1].usage.window_fill == 17003
    # the hidden prompt is estimated once, by the engine, for every format with usage (engine/reported.py)
    notes = plan_session(s).notes
    assert sum("which suggests about" in n for n in notes) == 1 and not any("suggests" in n for n in s.notes)
    assert "the first call (#1) reported 17,003 input tokens" in next(n for n in notes if "suggests" in n)


# --- a compaction recorded in the file is honoured by every policy ----------------------------------
SAMPLE = os.path.join(os.path.dirname(__file__), "..", "sample_sessions", "claude_code_compaction.jsonl")


def assert_compaction_honoured(session: Any, policy: str, params: dict[str, Any] | None = None) -> Any:
    """Every message a recorded summary covers is summarized (never sent beside it), with a reason,
    and the summary that covers the most recent of them is what the policy sends."""
    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.plan import Decision
    from ctxviz.engine.planner import plan_session

    plan = plan_session(session, policy, params or {}, store=CountStore())
    ids = {m.id for m in session.messages}
    covered = {c for s in session.summaries for c in s.covers if c in ids}
    assert covered, "the session must have a summary that covers messages of the file"
    for m in plan.messages:
        if m.id in covered:
            assert m.decision is Decision.SUMMARIZED and m.sent_tokens == 0 and m.reason.startswith("summarized"), (policy, m)
    sent = {i for i in plan.context_index if i is not None}
    assert not sent & {m.index for m in session.messages if m.id in covered}, policy
    latest = max(range(len(session.summaries)), key=lambda k: len(session.summaries[k].covers))
    kept = [sp for sp in plan.summaries if sp.decision is Decision.KEPT]
    assert [sp.index for sp in kept][-1:] == [latest], (policy, plan.summaries)
    assert any(session.summaries[latest].text in str(c.get("content")) for c in plan.context), policy
    return plan


@pytest.mark.parametrize("policy", ["missy", "categories", "supyagent", "mnesis", "missy-consolidator"])
def test_the_sample_compaction_is_honoured_by_every_policy(policy):
    s = load_session(SAMPLE)
    plan = assert_compaction_honoured(s, policy)
    if policy in ("missy", "categories"):
        first = plan.messages[0]
        assert first.reason.startswith("summarized: recorded summary #1 covers it and is sent in its place"), first.reason
        assert "summarized" in plan.zones if policy == "missy" else True


def test_two_compactions_the_later_supersedes_the_earlier(tmp_path):
    """A second compaction summarises the first summary's span again: the policies that send every
    summary send only the later one."""
    def boundary(uuid: str, logical: str) -> dict[str, Any]:
        return {"type": "system", "subtype": "compact_boundary", "uuid": uuid, "parentUuid": None, "logicalParentUuid": logical,
                "compactMetadata": {"trigger": "auto", "preTokens": 150000}}

    lines = linked(
        user("u1", "one " * 50), assistant("a1", "m1", [{"type": "text", "text": "answer one " * 50}]),
        boundary("b1", "a1"), user("s1", "Summary one.", isCompactSummary=True),
        user("u2", "two " * 50), assistant("a2", "m2", [{"type": "text", "text": "answer two " * 50}]),
        boundary("b2", "a2"), user("s2", "Summary two.", isCompactSummary=True),
        user("u3", "three"), assistant("a3", "m3", [{"type": "text", "text": "answer three"}]),
    )
    s = load_session(write_lines(tmp_path, lines))
    assert [sm.covers for sm in s.summaries] == [("u1", "a1"), ("u1", "a1", "u2", "a2")]
    for policy in ("missy", "categories"):
        plan = assert_compaction_honoured(s, policy)
        assert plan.summaries[0].decision.value == "dropped" and "superseded" in plan.summaries[0].reason
        assert plan.messages[0].reason.startswith("summarized: recorded summary #2 covers it")


def test_a_summary_of_what_came_before_the_file_changes_no_decision():
    """covers naming no message of the file: no message is summarized and the category manager
    decides exactly as without it (missy still sends such a summary through its budget, as before)."""
    from dataclasses import replace

    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.planner import plan_session
    from ctxviz.engine.session import Summary

    s = load_session(SAMPLE)
    bare = replace(s, summaries=())
    older = replace(s, summaries=(Summary(text="Earlier work.", covers=("not-in-this-file",)),))
    for policy in ("missy", "categories"):
        a = plan_session(bare, policy, store=CountStore())
        b = plan_session(older, policy, store=CountStore())
        assert a.zones == b.zones and not any(m.decision.value == "summarized" for m in b.messages)
        if policy == "categories":
            assert [(m.decision, m.reason) for m in a.messages] == [(m.decision, m.reason) for m in b.messages]
            # The summary is listed, not sent, with why (it vanished from the plan before).
            assert [(sp.decision.value, sp.reason) for sp in b.summaries] == [
                ("dropped", "dropped: the ContextWindowManager sends only the summaries that cover messages of this file")]
        else:
            assert [m.decision for m in a.messages] == [m.decision for m in b.messages] and b.summaries[0].decision.value == "kept"


@pytest.mark.parametrize("policy", ["missy", "categories"])
def test_simulate_says_what_the_replay_does_at_the_compaction(policy):
    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.simulate import simulate

    s = load_session(SAMPLE)
    boundary = s.compactions[0].before_index
    tl = simulate(s, policy, store=CountStore())
    (event,) = [e for e in tl.events if e.kind == "compaction"]
    # Claude Code compacted between #boundary-1 and the answer #boundary: the call that answer came
    # from (the request of messages 0..boundary-1) is the first to send the summary.
    (after,) = [k for k, t in enumerate(tl.turns) if t.reply == boundary]
    assert event.turn == tl.turns[after].index == boundary - 1 and tl.turns[after].events == (event,)
    assert event.message.startswith(f"the session's recorded summary #1 takes over messages #0-#{boundary - 1}, as the agent compacted here: "
                                    "they are no longer sent; the summary is sent (kept: ")
    assert tl.turns[after - 1].summarized == 0 and tl.turns[after].summarized == boundary
    assert tl.turns[after].tokens_sent < tl.turns[after - 1].tokens_sent


# --- real Claude Code logs (tests/data/real/claude_code/SOURCES.md) ---------------------------------
REAL = Path(__file__).parent / "data" / "real" / "claude_code"
POLICIES = ("missy", "categories", "supyagent", "mnesis", "missy-consolidator")

#: What a careful reader of each file sees: messages by role and category, tool pairs (and calls
#: left unanswered), the Claude Code version, model and title, the first call's reported input, and
#: notes that must be there (left-out lines, sub-agent, skipped bookkeeping).
REAL_LOGS: dict[str, dict[str, Any]] = {
    "tugtool-compact-native.jsonl": dict(
        roles={"user": 17, "assistant": 9}, categories={"dialog": 20, "context": 6}, pairs=0, problems=0,
        version="2.1.207", model="claude-haiku-4-5-20251001", title="Generate fun fact about number one", first_usage=(4, 24017),
        notes=["read 5 attachment lines as context messages", "skipped 20 `queue-operation` lines", "skipped 9 `file-history-snapshot`"]),
    "tugtool-rewind-branch.jsonl": dict(
        roles={"user": 30, "assistant": 11}, categories={"dialog": 28, "context": 13}, pairs=0, problems=0,
        version="2.1.220", model="claude-haiku-4-5-20251001", title="Generate response with specific word", first_usage=(4, 25382),
        notes=["written by Claude Code 2.1.219 to 2.1.220", "left out 6 lines of abandoned branches (rewinds)",
               "left out 3 `/compact` request lines a compaction took the place of",
               "read 10 attachment lines as context messages", "skipped 13 `system` lines of subtype `turn_duration`"]),
    "tugtool-subagent-main.jsonl": dict(
        roles={"user": 4, "assistant": 2, "tool": 1}, categories={"dialog": 3, "context": 3, "system_output": 1}, pairs=1, problems=0,
        version="2.1.198", model="claude-opus-4-8", title="Analyze block renderer dependencies", first_usage=(4, 26519),
        notes=["read 3 attachment lines as context messages"]),
    "agent-a0b12ac0cae20818c.jsonl": dict(
        roles={"assistant": 2, "tool": 2}, categories={"dialog": 2, "system_output": 2}, pairs=2, problems=0,
        version="2.1.198", model="claude-opus-4-8", title="sub-agent a0b12ac0cae20818c", first_usage=(0, 8156),
        notes=["sub-agent transcript (agentId a0b12ac0cae20818c)", "the chain of lines breaks 1 time at a parent that is not in the file"]),
    "spotter-4d5611e5.jsonl": dict(
        roles={"user": 1, "assistant": 18, "tool": 22}, categories={"dialog": 19, "system_output": 22}, pairs=22, problems=0,
        version="2.1.39", model="claude-opus-4-6", title="", first_usage=(1, 26450),
        notes=["skipped 208 `progress` lines", "left out 1 whitespace-only assistant line",
               "skipped 1 `system` line of subtype `stop_hook_summary`"]),
    "agent-acompact-e1f845.jsonl": dict(
        roles={"user": 4, "assistant": 1}, categories={"context": 3, "dialog": 2}, pairs=0, problems=0,
        version="2.1.39", model="claude-opus-4-6", title="sub-agent acompact-e1f845", first_usage=(4, 173514),
        notes=["sub-agent transcript (agentId acompact-e1f845)", "the chain of lines breaks 2 times"]),
    "agentcmd-full-session-two.jsonl": dict(
        roles={"user": 9, "assistant": 11, "tool": 10}, categories={"context": 1, "dialog": 19, "system_output": 10}, pairs=10, problems=0,
        version="2.0.26", model="claude-sonnet-4-5-20250929", title="", first_usage=(4, 23964),
        notes=["kept 1 image inside tool results as an `[image]` placeholder", "skipped 6 `file-history-snapshot` lines"]),
    "claude-code-viewer-fe5e1c67.jsonl": dict(
        roles={"user": 3, "assistant": 9, "tool": 11}, categories={"dialog": 11, "context": 1, "system_output": 11}, pairs=11, problems=0,
        version="1.0.98", model="claude-sonnet-4-20250514", title="Empty Repo Setup: CLAUDE.md Foundation Created", first_usage=(2, 16208),
        notes=["skipped 405 sub-agent (`isSidechain`) lines", "skipped 1 `summary` line"]),
}


def test_every_real_log_is_listed_in_sources():
    files = sorted(p.name for p in REAL.glob("*.jsonl"))
    assert files == sorted(REAL_LOGS) and len(files) >= 8
    sources = (REAL / "SOURCES.md").read_text(encoding="utf-8")
    for name in files:
        assert f"`{name}`" in sources
        assert (REAL / name).stat().st_size < 1_000_000


@pytest.mark.parametrize("name", sorted(REAL_LOGS))
def test_a_real_log_loads_as_a_reader_sees_it(name):
    from collections import Counter

    want = REAL_LOGS[name]
    s = load_session(REAL / name)
    assert s.format == "claude-code"
    assert dict(Counter(m.role for m in s.messages)) == want["roles"]
    assert dict(Counter(m.category.value for m in s.messages)) == want["categories"]
    assert len(s.tool_pairs) == want["pairs"] and len(s.tool_call_problems) == want["problems"]
    assert (s.format_version, s.model, s.title) == (want["version"], want["model"], want["title"])
    for note in want["notes"]:
        assert any(n.startswith(note) for n in s.notes), (note, s.notes)
    # Reported usage: each assistant message carries its call's input + cache reads + cache writes.
    index, fill = want["first_usage"]
    reported = plan_session(s).reported
    assert (reported.first_index, reported.first_window_fill) == (index, fill)
    assert next(m for m in s.messages if m.usage is not None).index == index and s.messages[index].usage.window_fill == fill
    for m in s.messages:
        assert (m.usage is not None) == (m.role == "assistant"), m
        if m.usage is not None:
            u = m.raw[-1]["message"]["usage"]
            assert m.usage.window_fill == u["input_tokens"] + u.get("cache_read_input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
    # Ids are unique and every tool message answers a call of the assistant message before it.
    assert len({m.id for m in s.messages}) == len(s.messages)
    for call, result in s.tool_pairs:
        assert s.messages[call].role == "assistant" and s.messages[result].role == "tool" and call < result
    # A sub-agent file says so; a main session does not.
    assert any(n.startswith("sub-agent transcript") for n in s.notes) == name.startswith("agent-")


@pytest.mark.parametrize("name", sorted(REAL_LOGS))
def test_every_real_log_plans_with_every_policy(name):
    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.planner import plan_session

    s = load_session(REAL / name)
    for policy in POLICIES:
        plan = plan_session(s, policy, store=CountStore())
        assert len(plan.messages) == len(s.messages), policy


def test_real_rewind_abandoned_turns_are_not_context():
    """The user rewound past DELTA and ECHO and asked for FOXTROT instead: only FOXTROT is context."""
    s = load_session(REAL / "tugtool-rewind-branch.jsonl")
    texts = "\n".join(m.text for m in s.messages)
    assert "DELTA" not in texts and "ECHO" not in texts
    asked = [m.text for m in s.messages if m.role == "user" and m.text.startswith("Reply with exactly the word")]
    assert [t.split()[5] for t in asked] == ["ALPHA", "BRAVO", "CHARLIE", "FOXTROT", "GOLF"]
    answers = [m.text for m in s.messages if m.role == "assistant"][:5]
    assert answers == ["ALPHA", "BRAVO", "CHARLIE", "FOXTROT", "GOLF"]
    # Each thinking line and its text line (one message.id) are one assistant message.
    assert all([type(p).__name__ for p in m.parts] == ["ThinkingPart", "TextPart"] for m in s.messages if m.role == "assistant")


def test_real_compactions_are_read_with_their_metadata():
    native = load_session(REAL / "tugtool-compact-native.jsonl")
    (c,) = native.compactions
    assert (c.trigger, c.pre_tokens, c.post_tokens) == ("manual", 26239, 1442)
    # The preserved segment is the last answer (about the number 9), kept verbatim after the summary.
    (kept,) = c.preserved
    preserved = next(m for m in native.messages if m.id == kept)
    assert preserved.role == "assistant" and preserved.text.startswith("The number 9") and preserved.index == c.before_index - 1
    (summary,) = native.summaries
    assert summary.text.startswith("This session is being continued from a previous conversation")
    assert len(summary.covers) == 20 and kept not in summary.covers
    assert set(summary.covers) == {m.id for m in native.messages[:20]}
    rewind = load_session(REAL / "tugtool-rewind-branch.jsonl")
    assert [(c.before_index, c.trigger, c.pre_tokens, c.post_tokens, len(c.preserved)) for c in rewind.compactions] == [
        (9, "manual", 25546, 757, 1), (19, "manual", 25809, 1435, 1), (36, "manual", 27792, 1547, 1)]
    # Each compaction summarises everything before it again (the earlier summary's span too).
    spans = [set(sm.covers) for sm in rewind.summaries]
    assert [len(x) for x in spans] == [8, 18, 35] and spans[0] < spans[1] < spans[2]
    # The first call after the first compaction reports far less than the call before it: the
    # replay agrees that the summary took over.
    before, after = (m.usage.window_fill for m in rewind.messages if m.index in (8, 15))
    assert after < before


@pytest.mark.parametrize("policy", POLICIES)
def test_real_compactions_are_honoured_by_every_policy(policy):
    from ctxviz.engine.plan import Decision

    native = load_session(REAL / "tugtool-compact-native.jsonl")
    plan = assert_compaction_honoured(native, policy)
    assert plan.messages[20].decision is not Decision.SUMMARIZED  # the preserved answer is not covered
    rewind = load_session(REAL / "tugtool-rewind-branch.jsonl")
    plan = assert_compaction_honoured(rewind, policy)
    if policy in ("missy", "categories", "supyagent"):  # they send one summary: the latest
        assert [sp.decision for sp in plan.summaries] == [Decision.DROPPED, Decision.DROPPED, Decision.KEPT]


def test_a_real_sub_agent_file_is_the_agent_tool_call_of_its_session():
    """The main session's Agent call is answered by the sub-agent's final report, which is the last
    message of the sub-agent's own transcript."""
    main = load_session(REAL / "tugtool-subagent-main.jsonl")
    sub = load_session(REAL / "agent-a0b12ac0cae20818c.jsonl")
    ((call, result),) = main.tool_pairs
    assert [p.name for p in main.messages[call].parts if isinstance(p, ToolCallPart)] == ["Agent"]
    report, answer = sub.messages[-1].text.strip(), main.messages[result].text
    # The copy in the main file is the report's first 800 characters (the fixture was shortened).
    assert sub.messages[-1].role == "assistant" and len(answer) == 800 and report.startswith(answer)
    assert "agent-a0b12ac0cae20818c" not in main.title and sub.title == "sub-agent a0b12ac0cae20818c"
