"""supyagent JSONL loader: golden load, the `_summary.json` sidecar, detection, and one clear line per bad input."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.session import ImagePart, TextPart, ToolCallPart
from ctxviz.errors import LoadError
from ctxviz.io.loaders import load_session, loader_names, register_loader
from ctxviz.io.source import SourceFile
from ctxviz.io.supyagent import SupyagentLoader, sidecar_path

if "supyagent" not in loader_names():
    register_loader(SupyagentLoader())

DATA = os.path.join(os.path.dirname(__file__), "data", "supyagent")
FIXTURE = os.path.join(DATA, "3fa9c1d2.jsonl")
META = {
    "session_id": "ab12cd34",
    "agent": "coder",
    "created_at": "2025-11-03T10:00:00+00:00",
    "updated_at": "2025-11-03T10:01:00+00:00",
    "model": "gpt-4o",
    "title": None,
    "type": "meta",
}


def write_session(tmp_path: Path, lines: list[Any], name: str = "ab12cd34.jsonl", summary: Any = None) -> str:
    """A session file (dicts dumped, strings verbatim) and, when given, its summary sidecar."""
    path = tmp_path / name
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    if summary is not None:
        side = tmp_path / (name.rsplit(".", 1)[0] + "_summary.json")
        side.write_text(summary if isinstance(summary, str) else json.dumps(summary), encoding="utf-8")
    return str(path)


def msg(kind: str, content: Any = None, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "content": content,
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "ts": "2025-11-03T10:00:30Z",
        **extra,
    }


def test_golden_session():
    s = load_session(FIXTURE)
    assert s.format == "supyagent" and s.source == FIXTURE
    assert s.model == "anthropic/claude-sonnet-4-5-20250929" and s.title == "Why is the staging deploy stuck?"
    assert [m.id for m in s.messages] == [f"m{i}" for i in range(7)]
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert s.messages[1].parts == (TextPart("Why is the staging deploy stuck?"),)
    assert s.messages[1].timestamp == "2025-11-03T14:02:15.118402Z"
    call = s.messages[2]
    assert call.tool_calls == (
        ToolCallPart("toolu_01DkQ3mVx7", "shell__run_command", '{"command": "kubectl -n staging get pods"}'),
    )
    assert call.to_openai()["content"] is None
    tool = s.messages[3]
    assert tool.tool_call_id == "toolu_01DkQ3mVx7" and tool.name == "shell__run_command"
    assert tool.to_openai() == {"role": "tool", "tool_call_id": "toolu_01DkQ3mVx7", "content": tool.text}
    assert tool.text.startswith('{"ok": true, "data": "NAME')
    assert s.messages[0].raw["type"] == "system" and s.messages[0].usage is None


def test_media_urls_are_kept_verbatim():
    s = load_session(FIXTURE)
    assert s.messages[5].parts == (
        TextPart("Here is the CI page, which tag did it push?"),
        ImagePart(url="media://a41c9e07d2b3.png"),
    )
    assert s.messages[5].to_openai()["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "media://a41c9e07d2b3.png"},
    }


def test_summary_sidecar():
    assert sidecar_path(FIXTURE) == os.path.join(DATA, "3fa9c1d2_summary.json")
    (summary,) = load_session(FIXTURE).summaries
    assert summary.text.startswith("## Current State\nstaging api pod is in ImagePullBackOff")
    assert summary.depth == 1 and summary.messages_covered == 5
    assert summary.covers == ("m0", "m1", "m2", "m3", "m4")  # first_message_idx 0 .. last_message_idx 4
    assert summary.created_at == "2025-11-03T14:05:02.338190+00:00"
    assert (summary.time_range_start, summary.time_range_end) == (
        "2025-11-03T14:02:11.506310Z",
        "2025-11-03T14:02:24.650218Z",
    )


def test_no_sidecar_and_nothing_written(tmp_path):
    copy = tmp_path / "3fa9c1d2.jsonl"
    shutil.copy(FIXTURE, copy)
    before = sorted(os.listdir(tmp_path))
    s = load_session(str(copy))
    assert s.summaries == () and len(s.messages) == 7
    assert sorted(os.listdir(tmp_path)) == before


def test_detection():
    assert SupyagentLoader().sniff(SourceFile(FIXTURE))
    assert not SupyagentLoader().sniff(SourceFile("x.json", json.dumps(META)))
    assert not SupyagentLoader().sniff(SourceFile("x.jsonl", json.dumps({"type": "meta", "session_id": "ab"}) + "\n"))
    assert not SupyagentLoader().sniff(
        SourceFile("x.jsonl", json.dumps({"type": "user", "uuid": "u", "message": {}}) + "\n")
    )


def test_null_content_null_title_and_part_lists(tmp_path):
    lines = [
        META,
        msg("user", [{"type": "text", "text": "hi"}]),
        msg("assistant", None),
        msg(
            "assistant",
            "done",
            tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}],
        ),
    ]
    s = load_session(write_session(tmp_path, lines))
    assert s.title == "" and s.model == "gpt-4o"
    assert s.messages[0].parts == (TextPart("hi"),) and s.messages[1].parts == ()
    assert s.messages[2].parts == (TextPart("done"), ToolCallPart("c1", "f", '{"x": 1}'))


SUMMARY = {
    "content": "S",
    "messages_summarized": 2,
    "first_message_idx": 0,
    "last_message_idx": 1,
    "created_at": "2025-11-03T10:00:40+00:00",
    "token_count": 1,
}
TWO = [META, msg("user", "a"), msg("assistant", "b")]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([META, msg("user", "a"), '{"type": "assistant", "content": "cut', msg("user", "b")], "ab12cd34.jsonl:3: truncated JSON line: "),
        (
            [META, msg("user", "a"), msg("human", "b")],
            "ab12cd34.jsonl:3: type: unknown message type 'human' "
            "(expected one of meta, user, assistant, tool_result, system)",
        ),
        ([META, {"content": "a"}], "ab12cd34.jsonl:2: type: is required"),
        ([META, "42"], "ab12cd34.jsonl:2: expected an object, got a number"),
        (
            [META, msg("user", {"text": "a"})],
            "ab12cd34.jsonl:2: content: expected a string or a list of parts, got an object",
        ),
        (
            [META, msg("user", [{"type": "image_url"}])],
            "ab12cd34.jsonl:2: content[0].image_url: expected an object, got null",
        ),
        (
            [META, msg("assistant", None, tool_calls={"id": "c"})],
            "ab12cd34.jsonl:2: tool_calls: expected a list, got an object",
        ),
        (
            [META, msg("assistant", None, tool_calls=[{"id": "c", "function": {"arguments": "{}"}}])],
            "ab12cd34.jsonl:2: tool_calls[0].function.name: is required",
        ),
        ([META, msg("user", "a", ts=["2025"])], "ab12cd34.jsonl:2: ts: expected a string, got a list"),
        (
            [META, msg("tool_result", "x", tool_call_id=7.5, name={"n": 1})],
            "ab12cd34.jsonl:2: name: expected a string, got an object",
        ),
    ],
)
def test_bad_session_is_one_clear_line(tmp_path, lines, expected):
    # No newline after the last line, so a cut-off last record reads as truncated.
    path = tmp_path / "ab12cd34.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines), encoding="utf-8")
    with pytest.raises(LoadError) as err:
        load_session(str(path))
    assert str(err.value).startswith(f"{tmp_path}{os.sep}{expected}")


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ("{not json", "ab12cd34_summary.json:1: invalid JSON"),
        ("", "ab12cd34_summary.json: the file is empty"),
        ("[1]", "ab12cd34_summary.json:1: expected an object, got a list"),
        ({**SUMMARY, "content": None}, "ab12cd34_summary.json:2: content: is required"),
        (
            {**SUMMARY, "messages_summarized": "2"},
            "ab12cd34_summary.json:3: messages_summarized: expected an integer, got a string",
        ),
        (
            {k: v for k, v in SUMMARY.items() if k != "last_message_idx"},
            "ab12cd34_summary.json:1: last_message_idx: is required",
        ),
        (
            {**SUMMARY, "first_message_idx": -1},
            "ab12cd34_summary.json:4: first_message_idx: must not be negative, got -1",
        ),
        (
            {**SUMMARY, "first_message_idx": 1, "last_message_idx": 0},
            "ab12cd34_summary.json:5: last_message_idx: 0 is before first_message_idx 1",
        ),
        (
            {**SUMMARY, "last_message_idx": 5},
            "ab12cd34_summary.json:5: last_message_idx: 5 is past the session's last message (index 1)",
        ),
    ],
)
def test_bad_sidecar_names_the_sidecar(tmp_path, summary, expected):
    text = summary if isinstance(summary, str) else json.dumps(summary, indent=1)
    path = write_session(tmp_path, TWO, summary=text)
    with pytest.raises(LoadError) as err:
        load_session(path)
    assert str(err.value).startswith(f"{tmp_path}{os.sep}{expected}")


def test_good_sidecar_in_tmp(tmp_path):
    s = load_session(write_session(tmp_path, TWO, summary=SUMMARY))
    assert s.summaries[0].covers == ("m0", "m1") and s.summaries[0].messages_covered == 2
