"""Gemini CLI sessions: the real files in tests/data/real/gemini_cli, detection, every field, the JSONL
form's upserts, checkpoints and rewinds, usage normalisation, tool pairs, and one clear line per bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.policies import policy_names
from ctxviz.engine.session import ImagePart, OpaquePart, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from ctxviz.errors import LoadError
from ctxviz.io.loaders import load_session

from .loader_checks import assert_plans_simulates_and_exports, assert_refused_in_one_line

REAL = Path(__file__).parent / "data" / "real" / "gemini_cli"
SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "gemini_cli_session.json"


def roles(session) -> dict[str, int]:
    return dict(Counter(m.role for m in session.messages))


def write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    if isinstance(content, list):  # JSONL records
        path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in content), encoding="utf-8")
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2), encoding="utf-8")
    return str(path)


META = {"sessionId": "5ec95d33-d405-4b82-9be5-8080824363b5", "projectHash": "abc123", "startTime": "2026-04-19T16:09:00.000Z",
        "lastUpdated": "2026-04-19T16:09:00.000Z", "kind": "main"}


def user(mid: str, text: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-04-19T16:09:01.000Z", "type": "user", "content": text}


def gemini(mid: str, text: Any = "", **extra: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-04-19T16:09:02.000Z", "type": "gemini", "content": text, "model": "gemini-2.5-pro", **extra}


def call(cid: str, name: str, args: dict[str, Any], output: Any = None, status: str = "success") -> dict[str, Any]:
    result = None if output is None else [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]
    return {"id": cid, "name": name, "args": args, "result": result, "status": status, "timestamp": "2026-04-19T16:09:03.000Z",
            "displayName": name, "description": "", "renderOutputAsMarkdown": True}


# -- the real files ---------------------------------------------------------------------------


def test_real_control_pro():
    s = load_session(str(REAL / "aim_control_pro.json"))
    assert s.format == "gemini-cli" and s.model == "gemini-3.1-pro-preview"
    assert roles(s) == {"user": 1, "assistant": 39, "tool": 38}
    assert len(s.tool_pairs) == 38 and not s.tool_call_problems
    assert s.messages[0].text == "hello"
    first = s.messages[1]
    assert first.tool_calls[0].name == "read_file" and json.loads(first.tool_calls[0].arguments) == {
        "file_path": "/home/kingb/aim_benchmarks/django_control_pro/TASK.md"}
    assert s.messages[2].role == "tool" and s.messages[2].tool_call_id == first.tool_calls[0].id
    assert s.messages[2].text.startswith("# SWE-Bench Target (Proxy)")
    # tokens {input 8756, output 30, cached 0, thoughts 177}: output carries the thoughts
    assert first.usage == Usage(input_tokens=8756, output_tokens=207, cache_read_input_tokens=0)
    # the last turn: input 45026 of which 44587 cached
    last = [m for m in s.messages if m.usage][-1]
    assert last.usage.cache_read_input_tokens == 44587 and last.usage.input_tokens == 439 and last.usage.window_fill == 45026
    assert not s.notes


def test_real_matrix_flash_skips_info_and_error_messages():
    s = load_session(str(REAL / "aim_matrix_flash.json"))
    assert s.model == "gemini-3-flash-preview"
    assert roles(s) == {"user": 2, "assistant": 79, "tool": 78}
    assert len(s.tool_pairs) == 78 and not s.tool_call_problems
    assert sum(m.usage is not None for m in s.messages) == 79
    assert any("skipped 4 `info` messages" in n for n in s.notes)
    assert any("skipped 2 `error` messages" in n for n in s.notes)


def test_real_pomodoro_thoughts_zero_tokens_and_five_prompts():
    s = load_session(str(REAL / "ai-sessions_pomodoro.json"))
    assert s.model == "gemini-2.5-pro"
    assert roles(s) == {"user": 5, "assistant": 14, "tool": 11}
    assert len(s.tool_pairs) == 11 and not s.tool_call_problems
    first = s.messages[1]
    assert isinstance(first.parts[0], ThinkingPart) and first.parts[0].text.startswith("**Beginning the Build**")
    assert first.usage is None  # its tokens are all zeros
    assert any("ignored 1 `tokens` record of all zeros" in n for n in s.notes)
    assert sum(m.usage is not None for m in s.messages) == 13


def test_real_migrated_jsonl_reads_as_its_json_original():
    s = load_session(str(REAL / "aim_matrix_pro.migrated.jsonl"))
    assert s.format == "gemini-cli" and s.model == "gemini-3.1-pro-preview"
    assert roles(s) == {"user": 2, "assistant": 35, "tool": 33}
    assert len(s.tool_pairs) == 33
    assert s.messages[1].usage == Usage(input_tokens=1119, output_tokens=40, cache_read_input_tokens=5490)


REAL_FILES = sorted(p.name for p in REAL.iterdir() if p.suffix in (".json", ".jsonl"))



@pytest.mark.parametrize("policy", policy_names())
@pytest.mark.parametrize("name", [*REAL_FILES, "sample"])
def test_plan_simulate_export_under_every_policy(name, policy, tmp_path):
    path = str(SAMPLE if name == "sample" else REAL / name)
    assert_plans_simulates_and_exports(path, policy, tmp_path)


# -- the sample ---------------------------------------------------------------------------------


def test_sample_session():
    s = load_session(str(SAMPLE))
    assert s.format == "gemini-cli" and len(s.messages) >= 60
    assert sum(len(m.tool_calls) for m in s.messages) >= 15 and not s.tool_call_problems
    assert all(m.usage is not None for m in s.messages if m.role == "assistant")
    assert s.title


# -- detection and fields -----------------------------------------------------------------------


def test_json_session_every_field(tmp_path):
    doc = {**META, "summary": "Fix the typo", "messages": [
        user("u1", "fix the typo in README"),
        gemini("g1", "Looking.", thoughts=[{"subject": "Planning", "description": "read it first", "timestamp": "t"}],
               tokens={"input": 1200, "output": 30, "cached": 1000, "thoughts": 12, "tool": 5, "total": 1247},
               toolCalls=[call("c1", "read_file", {"file_path": "README.md"}, "teh end"),
                          call("c2", "replace", {"old": "teh"}, None, status="error")]),
        {"id": "i1", "timestamp": "t", "type": "info", "content": "Switched model"},
        user("u2", [{"text": "and this image"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]),
        gemini("g2", [{"text": "secret plan", "thought": True}, {"text": "Done."},
                      {"functionCall": {"id": "c3", "name": "ls", "args": {"dir": "."}}}],
               toolCalls=[call("c3", "ls", {"dir": "."}, "README.md")]),
    ]}
    s = load_session(write(tmp_path, "session-2026-04-19T16-09-5ec95d33.json", doc))
    assert s.format == "gemini-cli" and s.title == "Fix the typo" and s.model == "gemini-2.5-pro"
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "user", "assistant", "tool"]
    g1 = s.messages[1]
    assert g1.id == "g1" and g1.timestamp == "2026-04-19T16:09:02.000Z"
    assert g1.parts[0] == ThinkingPart("**Planning** read it first") and g1.parts[1] == TextPart("Looking.")
    assert [c.name for c in g1.tool_calls] == ["read_file", "replace"]
    # input 1200 includes the 1000 cached; tool-use prompt tokens are input too; thoughts are output
    assert g1.usage == Usage(input_tokens=205, output_tokens=42, cache_read_input_tokens=1000)
    assert s.messages[2].parts == (ToolResultPart("c1", "teh end"),) and s.messages[2].name == "read_file"
    assert isinstance(s.messages[3].parts[1], ImagePart) and s.messages[3].parts[1].url == "data:image/png;base64,iVBORw0KGgo="
    # a modern record: content is the whole turn, and the call in toolCalls is not read twice
    g2 = s.messages[4]
    assert g2.parts == (ThinkingPart("secret plan"), TextPart("Done."), ToolCallPart("c3", "ls", '{"dir": "."}'))
    assert s.messages[5].tool_call_id == "c3"
    # c2 has no result: the plan flags the unanswered call
    assert [p[0] for p in s.tool_call_problems] == [1]
    assert any("skipped 1 `info` message" in n for n in s.notes)


def test_slash_commands_are_not_sent(tmp_path):
    doc = {**META, "messages": [user("u0", "/model"), user("u1", "?help"), user("u2", "<session_context>ctx</session_context>"),
                                user("u3", "real question"), gemini("g1", "answer")]}
    s = load_session(write(tmp_path, "s.json", doc))
    assert [m.text for m in s.messages] == ["<session_context>ctx</session_context>", "real question", "answer"]
    assert any("skipped 2 prompts that are slash commands, `?` help prompts or empty" in n for n in s.notes)


def test_function_responses_recorded_twice_are_read_once(tmp_path):
    doc = {**META, "messages": [user("u1", "list"), gemini("g1", "", toolCalls=[call("c1", "ls", {}, "a.py")]),
                                user("u2", [{"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a.py"}}}]),
                                gemini("g2", "one file")]}
    s = load_session(write(tmp_path, "s.json", doc))
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
    assert any("recorded twice" in n for n in s.notes)


def test_jsonl_upserts_checkpoints_and_metadata(tmp_path):
    lines = [
        META,
        user("u1", [{"text": "fix the typo"}]),
        {"$set": {"lastUpdated": "2026-04-19T16:10:00.000Z"}},
        gemini("g1", ""),
        # appended again once its tool call finished and its tokens arrived: the last copy wins, in place
        gemini("g1", "", toolCalls=[call("c1", "replace", {"old": "teh"}, "ok")], tokens={"input": 50, "output": 5, "cached": 0, "total": 55}),
        user("u2", "thanks"),
        {"$set": {"summary": "Typo fix"}},
    ]
    s = load_session(write(tmp_path, "session.jsonl", lines))
    assert s.format == "gemini-cli" and s.title == "Typo fix"
    assert [m.id for m in s.messages] == ["u1", "g1", "g1#c1", "u2"]
    assert s.messages[1].usage == Usage(input_tokens=50, output_tokens=5)
    checkpoint = [META, user("old", "gone"), {"$set": {"messages": [user("u9", "kept"), gemini("g9", "yes")]}}, user("u10", "next")]
    s2 = load_session(write(tmp_path, "cp.jsonl", checkpoint))
    assert [m.id for m in s2.messages] == ["u9", "g9", "u10"]
    assert any("checkpoint" in n for n in s2.notes)


def test_jsonl_rewind_drops_that_message_and_every_later_one(tmp_path):
    lines = [META, user("u1", "first"), gemini("g1", "one"), user("u2", "second, abandoned"), gemini("g2", "two"),
             {"$rewindTo": "u2"}, user("u3", "second, again"), gemini("g3", "three")]
    s = load_session(write(tmp_path, "r.jsonl", lines))
    assert [m.id for m in s.messages] == ["u1", "g1", "u3", "g3"]
    assert any(n.startswith("line 6: rewound to message u2: dropped 2 messages") for n in s.notes)
    # an unknown id drops everything before it, as Gemini CLI does
    s2 = load_session(write(tmp_path, "r2.jsonl", [META, user("u1", "a"), {"$rewindTo": "nope"}, user("u2", "b")]))
    assert [m.id for m in s2.messages] == ["u2"] and any("not in the file" in n for n in s2.notes)


def test_subagent_and_odd_parts(tmp_path):
    doc = {**META, "kind": "subagent", "messages": [
        user("u1", [{"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/a.pdf"}}, "plain string part"]),
        gemini("g1", [{"executableCode": {"language": "PYTHON", "code": "print(1)"}}, {"codeExecutionResult": {"outcome": "OK", "output": "1"}},
                      {"text": "done", "thoughtSignature": "abc"}]),
    ]}
    s = load_session(write(tmp_path, "s.json", doc))
    assert s.messages[0].parts == (OpaquePart("fileData", "[file: gs://b/a.pdf]"), TextPart("plain string part"))
    assert s.messages[1].parts == (OpaquePart("executableCode", "print(1)"), OpaquePart("codeExecutionResult", "1"), TextPart("done"))
    assert any("subagent" in n for n in s.notes)


def test_detection_leaves_other_formats_alone(tmp_path):
    openai = write(tmp_path, "chat.json", {"messages": [{"role": "user", "content": "hi"}]})
    assert load_session(openai).format == "openai"
    # a JSON object with sessionId but no projectHash is not a Gemini session
    with pytest.raises(LoadError):
        load_session(write(tmp_path, "x.json", {"sessionId": "a", "messages": [{"type": "user", "content": "x"}]}))


BAD = [
    ("type.json", {**META, "messages": [user("u1", "a"), {"id": "x", "type": "robot", "content": "?"}]},
     "type.json:16: messages[1].type: unknown message type 'robot'"),
    ("noid.json", {**META, "messages": [{"type": "user", "content": "a"}]}, "noid.json:8: messages[0].id: is required"),
    ("tokens.json", {**META, "messages": [gemini("g1", "a", tokens="many")]}, "tokens.json:14: messages[0].tokens: expected an object"),
    ("calls.json", {**META, "messages": [gemini("g1", "a", toolCalls=[{"id": "c1", "args": {}}])]},
     "calls.json:15: messages[0].toolCalls[0].name: is required"),
    ("content.json", {**META, "messages": [user("u1", 42)]}, "content.json:12: messages[0].content: expected a string, a part or a list of parts"),
]


@pytest.mark.parametrize(("name", "doc", "prefix"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_naming_file_line_field(tmp_path, name, doc, prefix):
    assert_refused_in_one_line(write(tmp_path, name, doc), prefix)


def test_bad_jsonl_line_names_its_line(tmp_path):
    path = write(tmp_path, "bad.jsonl", [META, user("u1", "a"), {"$rewindTo": ["u1"]}])
    with pytest.raises(LoadError) as err:
        load_session(path)
    assert str(err.value).startswith(path + ":3: $rewindTo: expected a string"), str(err.value)
    path = write(tmp_path, "bad2.jsonl", [META, "[1, 2]"])
    with pytest.raises(LoadError, match=r"bad2.jsonl:2: expected an object, got a list"):
        load_session(path)
