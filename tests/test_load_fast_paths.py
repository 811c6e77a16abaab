"""The loaders' fast paths build exactly what the full paths build (speed lives in bench/, not here)."""

from __future__ import annotations

import dataclasses
import gc
import glob
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine.session import Category, Message, Session, TextPart, ToolCallPart, message_with
from ctxviz.errors import LoadError
from ctxviz.io import claude_code, codex, gemini_cli
from ctxviz.io.base import make_message
from ctxviz.io.exporters import original_blocks
from ctxviz.io.loaders import load_session, named

from .hypothesis_budget import examples


def test_message_with_is_dataclasses_replace():
    m = Message(id="m3", index=3, role="tool", parts=(TextPart("out"),), tool_call_id="c1", category=Category.SYSTEM_OUTPUT, raw={"x": 1})
    new = message_with(m, name="shell")
    assert new == dataclasses.replace(m, name="shell") and new.raw is m.raw and m.name == ""


def test_named_is_message_with_a_name():
    """`loaders.named` writes every field of a Message out by hand: a field added to Message
    without it would be lost when a tool result is named."""
    m = Message(id="m3", index=3, role="tool", parts=(TextPart("out"),), tool_call_id="c1", timestamp="t", category=Category.SYSTEM_OUTPUT,
                raw={"x": 1})
    new = named(m, "shell")
    assert new == message_with(m, name="shell") and new.raw is m.raw
    # (`raw` is kept as `_raw`: `Message.raw` reads it, unpacking a packed record; session.py)
    assert [name.removeprefix("_") for name in vars(new)] == [f.name for f in dataclasses.fields(Message)]


def test_openai_chat_fast_paths_build_what_the_full_path_builds(tmp_path):
    records = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\": \"ls\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
        {"role": "assistant", "content": "two files", "tool_calls": [{"id": "c2", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
        {"role": "assistant", "content": ""},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    s = load_session(path)
    expected = [
        make_message(0, "user", [TextPart("list the files")]),
        make_message(1, "assistant", [ToolCallPart("c1", "shell", "{\"cmd\": \"ls\"}")]),
        make_message(2, "tool", [TextPart("a.py\nb.py")], tool_call_id="c1", name="shell"),
        make_message(3, "assistant", [TextPart("two files"), ToolCallPart("c2", "read", "{}")]),
        make_message(4, "tool", [TextPart("")], tool_call_id="c2", name="read"),  # "" is an empty text, not no content (issue 21)
        make_message(5, "assistant", [TextPart("")]),
    ]
    assert list(s.messages) == expected
    assert [m.raw for m in s.messages] == records


def test_load_session_freezes_only_when_the_collector_is_on(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n', encoding="utf-8")
    gc.unfreeze()
    gc.disable()  # as the GUI's worker loads: its own collector holds gc off
    try:
        load_session(path)
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
    load_session(path)
    assert gc.get_freeze_count() > 0
    gc.unfreeze()


def test_claude_code_raw_keeps_what_the_exporter_and_readers_use():
    s = load_session("sample_sessions/claude_code_compaction.jsonl")
    lines = [r for m in s.messages for r in (m.raw if isinstance(m.raw, list) else [m.raw])]
    assert all("toolUseResult" not in r and "cwd" not in r for r in lines)
    assert all("uuid" in r and "message" in r for r in lines)
    assert any(original_blocks(m) for m in s.messages if m.role == "tool")


CLAUDE_CODE_LOGS = sorted(glob.glob("tests/data/real/claude_code/*.jsonl") + glob.glob("tests/data/heldout/claude_code/*.jsonl")
                          + glob.glob("sample_sessions/claude_code_*.jsonl"))


def _every_field(session: Session) -> tuple:
    """Everything a load gives, `raw` included (Message equality leaves it out)."""
    return (session, [m.raw for m in session.messages])


@pytest.mark.parametrize("path", CLAUDE_CODE_LOGS, ids=os.path.basename)
def test_claude_code_fast_path_loads_what_the_checked_path_loads(path, monkeypatch):
    """The Claude Code loader reads common lines straight from their dicts and leaves a sub-agent
    line's parts unread until it is needed; with every line read through `Fields` instead, each real
    log loads to the same messages, raw lines, notes, summaries and compactions."""
    fast = load_session(path)
    monkeypatch.setattr(claude_code.reader, "_parse_common", lambda src, lineno, record: None)  # (read in reader.py)
    checked = load_session(path)
    assert _every_field(fast) == _every_field(checked)
    assert fast.notes == checked.notes and fast.summaries == checked.summaries and fast.compactions == checked.compactions


def test_claude_code_fast_path_leaves_odd_lines_to_the_checked_path(tmp_path):
    """A field of an unexpected type is still reported by file, line and field, and a block ctxviz
    does not model still gets its counted note, on a main-session line and on a sub-agent's."""
    head = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    odd = {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
           "message": {"role": "assistant", "id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": ["shell"], "input": {}}]}}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(head) + "\n" + json.dumps(odd) + "\n", encoding="utf-8")
    with pytest.raises(LoadError) as error:
        load_session(path)
    assert error.value.line == 2 and "message.content[0].name" in str(error.value)
    for sidechain in (False, True):
        block = {**odd, "isSidechain": sidechain, "message": {**odd["message"], "content": [{"type": "web_fetch", "url": "u"}]}}
        path.write_text(json.dumps(head) + "\n" + json.dumps(block) + "\n", encoding="utf-8")
        assert any("`web_fetch` block" in note for note in load_session(path).notes)


def _claude_code_named_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """Load Claude Code logs as before: tool results unnamed by the loader, named by `with_tool_names`."""
    monkeypatch.setattr(claude_code.ClaudeCodeLoader, "names_tool_results", False)
    monkeypatch.setattr(claude_code.ClaudeCodeLoader, "load", lambda self, src: self.load_resumable(src, keep=False)[0])


@pytest.mark.parametrize("path", CLAUDE_CODE_LOGS, ids=os.path.basename)
def test_claude_code_names_tool_results_as_with_tool_names_does(path, monkeypatch):
    """The Claude Code loader names each tool result as it makes it; `with_tool_names` naming them
    after the load gives the same session."""
    fast = load_session(path)
    _claude_code_named_after(monkeypatch)
    assert _every_field(fast) == _every_field(load_session(path))


def line(uuid: str, parent: str | None, role: str, content: list, message_id: str = "") -> str:
    """One Claude Code JSONL line of a hand-made log."""
    message = {"role": role, "content": content, **({"id": message_id} if message_id else {})}
    return json.dumps({"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "message": message}) + "\n"


def test_claude_code_names_a_result_by_the_last_call_of_its_id(tmp_path, monkeypatch):
    """A call id used again later with another name (a hand-made or merged log): the result is
    named by the last call, as `with_tool_names` names it, not by the call read before it."""
    path = tmp_path / "s.jsonl"
    path.write_text(line("u1", None, "user", [{"type": "text", "text": "go"}])
                    + line("a1", "u1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}], "m1")
                    + line("u2", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}])
                    + line("a2", "u2", "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}], "m2"), encoding="utf-8")
    fast = load_session(path)
    assert [m.name for m in fast.messages if m.role == "tool"] == ["Bash"]
    _claude_code_named_after(monkeypatch)
    assert _every_field(fast) == _every_field(load_session(path))


def test_claude_code_names_a_result_read_before_its_call(tmp_path, monkeypatch):
    """A result whose call comes later in the conversation (a hand-made or reordered log) has no
    name when it is read: it is named after the load, by the call, as `with_tool_names` names it."""
    path = tmp_path / "s.jsonl"
    path.write_text(line("u1", None, "user", [{"type": "text", "text": "go"}])
                    + line("u2", "u1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}])
                    + line("a1", "u2", "assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}], "m1"), encoding="utf-8")
    fast = load_session(path)
    assert [m.name for m in fast.messages if m.role == "tool"] == ["Read"]
    _claude_code_named_after(monkeypatch)
    assert _every_field(fast) == _every_field(load_session(path))


@pytest.mark.parametrize("path", CLAUDE_CODE_LOGS, ids=os.path.basename)
def test_claude_code_load_kept_for_following_loads_what_a_plain_load_loads(path, monkeypatch):
    """A load kept to be carried on as the file grows (`io/follow.py`) keeps, for every line, what
    later lines may need; a plain load only looks at the lines off the chain for what hangs beside
    it, and names the results as it reads them. Each real log loads to the same session both ways."""
    plain = load_session(path)
    monkeypatch.setattr(claude_code.ClaudeCodeLoader, "names_tool_results", False)
    monkeypatch.setattr(claude_code.ClaudeCodeLoader, "load", lambda self, src: self.load_resumable(src, keep=True)[0])
    kept = load_session(path)
    assert _every_field(plain) == _every_field(kept)
    assert plain.notes == kept.notes and plain.summaries == kept.summaries and plain.compactions == kept.compactions


CODEX_LOGS = sorted(glob.glob("tests/data/real/codex/*.jsonl") + glob.glob("tests/data/heldout/codex/*.jsonl")
                    + glob.glob("sample_sessions/codex_*.jsonl"))


@pytest.mark.parametrize("path", CODEX_LOGS, ids=os.path.basename)
def test_codex_fast_path_loads_what_the_checked_path_loads(path, monkeypatch):
    """The Codex loader reads common lines (tool calls and outputs, messages, reasoning, usage
    reports, events) straight from their dicts; with every line read through `Fields` instead,
    each real rollout loads to the same messages, raw items, notes, summaries and compactions."""
    fast = load_session(path)
    monkeypatch.setattr(codex._Rollout, "_common", lambda self, record: False)
    checked = load_session(path)
    assert _every_field(fast) == _every_field(checked)
    assert fast.notes == checked.notes and fast.summaries == checked.summaries and fast.compactions == checked.compactions
    assert fast.context_window == checked.context_window


@pytest.mark.parametrize("path", CODEX_LOGS, ids=os.path.basename)
def test_codex_names_tool_results_as_with_tool_names_does(path, monkeypatch):
    """The Codex loader names each tool result as it makes it; `with_tool_names` naming them after
    the load gives the same session."""
    fast = load_session(path)
    assert any(m.role == "tool" and m.name for m in fast.messages) or not any(m.role == "tool" for m in fast.messages)
    monkeypatch.setattr(codex.CodexLoader, "names_tool_results", False)
    monkeypatch.setattr(codex.CodexLoader, "load", lambda self, src: codex._Rollout(src).read())
    assert _every_field(fast) == _every_field(load_session(path))


def _codex_lines(*payloads: dict) -> str:
    head = {"timestamp": "t0", "type": "session_meta", "payload": {"id": "s", "cli_version": "0.46.0"}}
    return "".join(json.dumps(r) + "\n" for r in (head, *({"timestamp": "t", "type": t, "payload": p} for t, p in payloads)))


_TOKENS = {"model_context_window": 1000, "total_token_usage": {"input_tokens": 9}, "last_token_usage": {"input_tokens": 9, "cached_input_tokens": 2}}
#: A report of a new call (its total differs from `_TOKENS`').
_NEW_CALL = {**_TOKENS, "total_token_usage": {"input_tokens": 15}}


@pytest.mark.parametrize("line", [
    ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": 3}]}),
    ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AA"}]}),
    ("response_item", {"type": "message", "role": "tool", "content": "x"}),
    ("response_item", {"type": "message", "role": "developer", "content": None}),
    ("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": ["x"]}]}),
    ("response_item", {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": 7}]}),
    ("response_item", {"type": "reasoning", "summary": []}),
    ("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "abc"}),
    ("response_item", {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": {"patch": "x"}}),
    ("response_item", {"type": "custom_tool_call", "call_id": "", "id": "i1", "name": "apply_patch"}),
    ("response_item", {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "ok"}]}),
    ("response_item", {"type": "custom_tool_call_output", "call_id": 5, "output": "ok"}),
    ("event_msg", {"type": "token_count", "info": {**_NEW_CALL, "last_token_usage": {"input_tokens": 9, "cached_input_tokens": True}}}),
    ("event_msg", {"type": "token_count", "info": {**_NEW_CALL, "model_context_window": 1000.0}}),
    ("event_msg", {"type": "token_count", "info": {**_NEW_CALL, "last_token_usage": None}}),
    ("event_msg", {"type": "token_count", "input_tokens": 5, "output_tokens": 1}),
    ("event_msg", {"type": "token_count", "info": {**_NEW_CALL, "last_token_usage": {"input_tokens": 4, "cached_input_tokens": 9}}}),
    ("event_msg", {"type": "token_count", "info": {**_TOKENS, "model_context_window": 2000}}),
    ("event_msg", {"type": "token_count", "info": None}),
    ("event_msg", {"type": "task_started", "model_context_window": "big"}),
    ("event_msg", {"type": "agent_message", "message": 4}),
])
def test_codex_fast_path_leaves_odd_lines_to_the_checked_path(tmp_path, monkeypatch, line):
    """A line whose fields the fast path does not take as they are loads (or fails, naming its
    line and field) exactly as the checked path reads it."""
    path = tmp_path / "rollout.jsonl"
    assistant = ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]})
    path.write_text(_codex_lines(assistant, ("event_msg", {"type": "token_count", "info": _TOKENS}), assistant, line,
                                 ("event_msg", {"type": "token_count", "info": {**_TOKENS, "total_token_usage": {"input_tokens": 20}}})),
                    encoding="utf-8")

    def load() -> tuple | str:
        try:
            session = load_session(path)
        except LoadError as exc:
            return str(exc)
        return _every_field(session), session.notes, session.context_window

    fast = load()
    monkeypatch.setattr(codex._Rollout, "_common", lambda self, record: False)
    assert fast == load()


GEMINI_CLI_LOGS = sorted(glob.glob("tests/data/real/gemini_cli/*.json*") + glob.glob("sample_sessions/gemini_cli_*.json*"))


@pytest.mark.parametrize("path", GEMINI_CLI_LOGS, ids=os.path.basename)
def test_gemini_cli_fast_path_loads_what_the_full_path_loads(path, monkeypatch):
    """The Gemini CLI loader reads common `gemini` records straight from their dicts; with every
    record read through `Fields` instead, each real session loads to the same messages, raw
    records and notes."""
    fast = load_session(path)
    monkeypatch.setattr(gemini_cli, "_gemini_common", lambda record: None)
    checked = load_session(path)
    assert _every_field(fast) == _every_field(checked) and fast.notes == checked.notes


_CALL = {"id": "c1", "name": "shell", "args": {"command": "ls"}, "status": "success", "timestamp": "t2",
         "result": [{"functionResponse": {"id": "c1", "name": "shell", "response": {"output": "a.py"}}}]}
_GEMINI = {"id": "g1", "timestamp": "t1", "type": "gemini", "content": "", "model": "gemini-2.5-pro",
           "thoughts": [{"subject": "Looking", "description": "at files", "timestamp": "t0"}], "toolCalls": [_CALL],
           "tokens": {"input": 10, "output": 2, "cached": 4, "thoughts": 1, "tool": 0, "total": 13}}


@pytest.mark.parametrize("record", [
    _GEMINI,
    {**_GEMINI, "content": [{"text": "hi"}]},
    {**_GEMINI, "content": 5},
    {**_GEMINI, "id": 7},
    {**_GEMINI, "model": None, "thoughts": None, "tokens": None},
    {**_GEMINI, "thoughts": [{"subject": ["x"]}]},
    {**_GEMINI, "thoughts": [[]]},
    {**_GEMINI, "toolCalls": [{**_CALL, "name": None}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "timestamp": 5}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "id": None, "status": None, "timestamp": None}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "args": None}, {**_CALL, "id": "", "args": "raw"}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "status": "error", "result": "boom"}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "status": 3, "result": []}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "result": [{"functionResponse": None}]}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "result": [{"functionResponse": {"response": {"error": "no"}}}]}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "result": ["text", {"text": "more"}]}]},
    {**_GEMINI, "toolCalls": [{**_CALL, "result": {"functionResponse": {"id": "c1", "response": {"output": "x"}}}}]},
    {**_GEMINI, "tokens": {"input": 0, "output": 0}},
    {**_GEMINI, "tokens": {"input": 1, "cached": 5}},
    {**_GEMINI, "tokens": {"input": False}},
    {**_GEMINI, "tokens": {"input": 3.0}},
    {**_GEMINI, "tokens": []},
    {**_GEMINI, "thoughts": [], "toolCalls": []},
    {**_GEMINI, "thoughts": [], "toolCalls": [], "content": ""},
])
def test_gemini_cli_fast_path_leaves_odd_records_to_the_full_path(tmp_path, monkeypatch, record):
    """A record whose fields the fast path does not take as they are loads (or fails, naming its
    line and field) exactly as the full path reads it."""
    path = _gemini_file(tmp_path, [record])
    fast = _gemini_load(path)
    monkeypatch.setattr(gemini_cli, "_gemini_common", lambda record: None)
    assert fast == _gemini_load(path)


def _gemini_file(folder, records: list[dict]):  # noqa: ANN001, ANN202
    """A Gemini CLI JSONL session: its metadata, a user's request, then `records`."""
    head = {"sessionId": "s", "projectHash": "p", "startTime": "t", "lastUpdated": "t", "kind": "main"}
    user = {"id": "u1", "timestamp": "t0", "type": "user", "content": [{"text": "list the files"}]}
    path = folder / "session.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (head, user, *records)), encoding="utf-8")
    return path


def _gemini_load(path) -> tuple | str:  # noqa: ANN001
    """Everything a load gives, with its notes, or its one-line error."""
    try:
        session = load_session(path)
    except LoadError as exc:
        return str(exc)
    return _every_field(session), session.notes


def _unnamed_then_with_tool_names(monkeypatch) -> None:
    """Make the Gemini CLI loader load as it did before it named its tool results: unnamed, and
    `load_source` naming them with `with_tool_names`."""
    monkeypatch.setattr(gemini_cli.GeminiCliLoader, "names_tool_results", False)
    monkeypatch.setattr(gemini_cli.GeminiCliLoader, "load", lambda self, src: self.load_resumable(src)[0])


@pytest.mark.parametrize("path", GEMINI_CLI_LOGS, ids=os.path.basename)
def test_gemini_cli_names_tool_results_as_with_tool_names_does(path, monkeypatch):
    """The Gemini CLI loader names each tool result as it makes it (the call beside it) and then
    settles the names by the last call of each id: every real session loads to the same messages,
    names included, as when `with_tool_names` named them afterwards."""
    named = load_session(path)
    assert any(m.role == "tool" and m.name for m in named.messages) or not any(m.role == "tool" for m in named.messages)
    _unnamed_then_with_tool_names(monkeypatch)
    after = load_session(path)
    assert _every_field(named) == _every_field(after) and named.notes == after.notes


def test_gemini_cli_tool_result_takes_the_last_call_of_its_id(tmp_path, monkeypatch):
    """Two calls with one id and different names (a log whose ids repeat): both results take the
    later call's name, as `with_tool_names` gives it, although the first was made beside the
    first call; a response read as a `user` message is named too."""
    first = {**_GEMINI, "id": "g1"}
    second = {**_GEMINI, "id": "g2", "toolCalls": [{**_CALL, "name": "grep"}]}
    answer = {"id": "u2", "timestamp": "t3", "type": "user",
              "content": [{"functionResponse": {"id": "c9", "name": "x", "response": {"output": "late"}}}]}
    third = {**_GEMINI, "id": "g3", "toolCalls": [{**_CALL, "id": "c9", "name": "late_call", "result": None}]}
    path = _gemini_file(tmp_path, [first, second, answer, third])
    session = load_session(path)
    names = {m.id: m.name for m in session.messages if m.role == "tool"}
    assert names == {"g1#c1": "grep", "g2#c1": "grep", "u2#0": "late_call"}
    _unnamed_then_with_tool_names(monkeypatch)
    assert _every_field(load_session(path)) == _every_field(session)


def test_gemini_parts_built_field_by_field_are_the_dataclasses():
    """The Gemini CLI fast path builds its parts and usage field by field: each is equal to the
    dataclass its constructor makes, with the same fields in the same order (a field added to
    one of them without it would be missing from every Gemini CLI message)."""
    from ctxviz.engine.session import (
        ThinkingPart,
        ToolResultPart,
        Usage,
        thinking_part,
        tool_call_part,
        tool_result_part,
    )

    built = [thinking_part("t"), tool_call_part("c1", "shell", '{"a": 1}'), tool_result_part("c1", "out", True)]
    made = [ThinkingPart("t"), ToolCallPart("c1", "shell", '{"a": 1}'), ToolResultPart("c1", "out", is_error=True)]
    src = type("Src", (), {"tally": lambda self, *a: None})()
    built.append(gemini_cli._tokens_usage(src, 10, 4, 1, 2, 3, 20))
    made.append(Usage(input_tokens=7, output_tokens=5, cache_read_input_tokens=4))
    for b, m in zip(built, made, strict=True):
        assert type(b) is type(m) and b == m and hash(b) == hash(m)
        assert list(vars(b)) == [f.name for f in dataclasses.fields(m)]


_ODD = st.sampled_from([None, "", "x", "error", 0, 3, True, 2.5, [], {}, ["x"], [{}], {"a": 1}])
_STR = st.sampled_from(["", "c1", "c2", "id-3"])
_RESPONSE = st.fixed_dictionaries({"functionResponse": st.fixed_dictionaries(
    {"id": _STR, "name": _STR, "response": st.sampled_from([{"output": "ok"}, {"error": "no"}, {"a": 1, "b": 2}, "plain"])})})
_CALL_RECORD = st.fixed_dictionaries(
    {"id": _STR, "name": st.sampled_from(["shell", "read_file"]), "status": st.sampled_from(["success", "error", ""]), "timestamp": _STR},
    optional={"args": st.sampled_from([{"path": "a.py"}, "raw args", {}]),
              "result": st.one_of(st.sampled_from(["out", "", None]), st.lists(_RESPONSE, max_size=2))})
_THOUGHT = st.fixed_dictionaries({"subject": st.sampled_from(["", "Plan"]), "description": st.sampled_from(["", "look"])})
_TOKEN_COUNTS = st.fixed_dictionaries({}, optional={k: st.one_of(st.integers(0, 50), st.none())
                                              for k in ("input", "cached", "tool", "output", "thoughts", "total")})
#: A `gemini` record of the shape the fast path reads (any field may be missing or null).
_COMMON_GEMINI = st.fixed_dictionaries({}, optional={
    "timestamp": _STR, "model": st.sampled_from(["", "gemini-2.5-pro", None]), "content": st.sampled_from(["", "hello", None]),
    "thoughts": st.lists(_THOUGHT, max_size=3), "toolCalls": st.lists(_CALL_RECORD, max_size=3), "tokens": _TOKEN_COUNTS})
#: Where one odd value may go: a field of the record, of its first thought or call, of that call's
#: first response, or of its token counts.
_ODD_PLACES = ("timestamp", "model", "content", "thoughts", "toolCalls", "tokens", "thoughts.0", "thoughts.0.subject",
               "thoughts.0.description", "toolCalls.0", "toolCalls.0.id", "toolCalls.0.name", "toolCalls.0.status",
               "toolCalls.0.timestamp", "toolCalls.0.args", "toolCalls.0.result", "toolCalls.0.result.0",
               "toolCalls.0.result.0.functionResponse", "toolCalls.0.result.0.functionResponse.id", "tokens.input", "tokens.total")


@st.composite
def _gemini_records(draw: st.DrawFn) -> dict:
    """A common `gemini` record, or one with an odd value in one place (where the place exists)."""
    record = draw(_COMMON_GEMINI)
    if draw(st.booleans()):
        *path, last = draw(st.sampled_from(_ODD_PLACES)).split(".")
        node: object = record
        for key in path:
            node = node.get(key) if isinstance(node, dict) else (node[int(key)] if isinstance(node, list) and len(node) > int(key) else None)
        if isinstance(node, dict):
            node[last] = draw(_ODD)
        elif isinstance(node, list) and node:
            node[int(last)] = draw(_ODD)
    return record


@settings(max_examples=examples(800), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(records=st.lists(_gemini_records(), min_size=1, max_size=3))
def test_gemini_cli_fast_path_is_the_full_path_on_drawn_records(tmp_path_factory, records):
    """Drawn `gemini` records, each field as the common shape has it, odd or missing: the fast
    path loads them (tool names included) exactly as the full path reads them, or fails with the
    same one-line error."""
    body = [{**r, "type": "gemini", "id": f"g{k}"} for k, r in enumerate(records)]  # (a record without a str id is no message)
    path = _gemini_file(tmp_path_factory.mktemp("gemini"), body)
    fast = _gemini_load(path)
    saved = gemini_cli._gemini_common
    gemini_cli._gemini_common = lambda record: None
    try:
        assert fast == _gemini_load(path)
    finally:
        gemini_cli._gemini_common = saved
