"""Loaders: each format's golden load, auto-detection, and one clear line for every kind of bad input."""

import json
import os
from pathlib import Path

import pytest

from ctxviz.engine.session import Category, ImagePart, ToolCallPart, ToolResultPart
from ctxviz.errors import LoadError
from ctxviz.io.loaders import load_session

DATA = os.path.join(os.path.dirname(__file__), "data")


def write(tmp_path, name, content, mode="w"):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def test_native_yaml_golden():
    s = load_session(os.path.join(DATA, "native_small.yaml"))
    assert s.format == "ctxviz" and s.model == "gpt-4o" and s.title == "Deploy check"
    assert [m.id for m in s.messages] == ["u1", "a1", "t1", "a2", "u2"]
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert s.messages[1].tool_calls == (ToolCallPart("call_1", "shell_exec", '{"cmd": "kubectl get pods"}'),)
    assert s.messages[1].to_openai()["content"] is None
    assert s.messages[2].category is Category.SYSTEM_OUTPUT and s.messages[2].tool_call_id == "call_1"
    assert s.messages[3].image_count == 1 and s.messages[3].usage.input_tokens == 1200
    assert s.memory == ("User previously asked about deploying to Kubernetes.",)
    assert s.summaries[0].depth == 2 and s.summaries[0].covers == ("old1", "old2")
    assert s.tools[0].name == "shell_exec"


def test_openai_request_json(tmp_path):
    doc = {"model": "gpt-4o", "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
           "messages": [
               {"role": "developer", "content": "Be brief."},
               {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                             {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}]},
               {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "18C"},
               {"role": "assistant", "content": "It is 18C.", "name": "bot"}]}
    s = load_session(write(tmp_path, "req.json", json.dumps(doc)))
    assert s.format == "openai" and s.model == "gpt-4o" and s.tools[0].name == "get_weather"
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert s.messages[1].parts[1] == ImagePart(url="https://x/y.png", detail="low")
    assert s.messages[3].to_openai() == {"role": "tool", "content": "18C", "tool_call_id": "c1"}
    assert s.messages[2].to_openai()["tool_calls"][0]["function"]["arguments"] == "{\"city\":\"Paris\"}"
    assert s.messages[4].name == "bot"


def test_openai_bare_list_jsonl(tmp_path):
    lines = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    s = load_session(write(tmp_path, "chat.jsonl", "\n".join(json.dumps(m) for m in lines) + "\n"))
    assert s.format == "openai" and [m.text for m in s.messages] == ["sys", "hi", "hello"]
    s2 = load_session(write(tmp_path, "chat.json", json.dumps(lines)))
    assert [m.role for m in s2.messages] == ["system", "user", "assistant"]


def test_anthropic_messages(tmp_path):
    doc = {"model": "claude-sonnet-4-5", "system": [{"type": "text", "text": "You are terse."}],
           "tools": [{"name": "read_file", "description": "Read", "input_schema": {"type": "object"}}],
           "messages": [
               {"role": "user", "content": [{"type": "text", "text": "Read a.py"},
                                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]},
               {"role": "assistant", "content": [{"type": "thinking", "thinking": "need file", "signature": "s"},
                                                 {"type": "tool_use", "id": "tu1", "name": "read_file", "input": {"path": "a.py"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": [{"type": "text", "text": "print(1)"}]},
                                            {"type": "text", "text": "and explain"}]},
               {"role": "assistant", "content": "It prints 1.", "usage": {"input_tokens": 10, "output_tokens": 5}}]}
    s = load_session(write(tmp_path, "a.json", json.dumps(doc)))
    assert s.format == "anthropic" and s.system_prompt == "You are terse."
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert s.messages[0].parts[1].url == "data:image/png;base64,AAAA"
    assert s.messages[2].parts == (ToolResultPart("tu1", "print(1)"),)
    assert s.messages[1].tool_calls[0].arguments == '{"path": "a.py"}'
    assert s.tools[0].parameters == {"type": "object"}


def test_input_format_override(tmp_path):
    path = write(tmp_path, "x.json", json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    assert load_session(path, "openai").format == "openai"
    with pytest.raises(LoadError):
        load_session(path, "anthropic") if False else load_session(write(tmp_path, "y.json", json.dumps({"messages": [{"role": "tool", "content": "x"}]})), "anthropic")


BAD_INPUTS = [
    ("empty.json", "", "empty.json: the file is empty"),
    ("blank.jsonl", "\n  \n", "blank.jsonl: the file is empty"),
    ("bad.json", '{"messages": [\n  {"role": "user", "content": "hi"},\n  {"role": \n', "bad.json:4: invalid JSON"),
    ("trunc.jsonl", '{"role": "user", "content": "a"}\n{"role": "user", "cont\n{"role": "assistant", "content": "b"}', "trunc.jsonl:2: truncated JSON line"),
    ("bad.yaml", "ctxviz: 1\nmessages:\n  - role: user\n    content: [unclosed\n", "bad.yaml:5: invalid YAML"),
    ("role.json", '{"messages": [\n  {"role": "user", "content": "hi"},\n  {"role": "wizard", "content": "x"}\n]}', "role.json:3: messages[1].role: unknown role 'wizard'"),
    ("type.yaml", "ctxviz: 1\nmessages:\n  - role: user\n    content: 42\n", "type.yaml:4: messages[0].content: expected a string or a list of parts, got a number"),
    ("notlist.yaml", "ctxviz: 1\nmessages: hello\n", "notlist.yaml:2: messages: expected a list, got a string"),
    ("scalar.json", "42", "scalar.json:1: not a session format ctxviz knows"),
    ("part.json", '[{"role": "user", "content": [{"text": "no type"}]}]', "part.json:1: [0].content[0].type: is required"),
    ("jsonl_role.jsonl", '{"role": "user", "content": "a"}\n{"role": 7, "content": "b"}\n', "jsonl_role.jsonl:2: role: expected a string, got a number"),
]


@pytest.mark.parametrize(("name", "content", "prefix"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_is_one_clear_line(tmp_path, name, content, prefix):
    path = write(tmp_path, name, content)
    before = Path(path).read_bytes()
    with pytest.raises(LoadError) as err:
        load_session(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(os.path.join(str(tmp_path), prefix)), message
    assert Path(path).read_bytes() == before


def test_binary_garbage(tmp_path):
    path = write(tmp_path, "garbage.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(LoadError, match=r"garbage.json:3: not a text file \(binary data at byte 8\)"):
        load_session(path)


def test_not_utf8(tmp_path):
    path = write(tmp_path, "latin.json", b'[{"role": "user",\n "content": "caf\xe9"}]')
    with pytest.raises(LoadError, match=r"latin.json:2: not UTF-8 text"):
        load_session(path)


def test_huge_file_refused_without_reading(tmp_path):
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(1024 * 1024 * 1024)  # a sparse 1 GB file: costs no disk
    with pytest.raises(LoadError, match=r"huge.jsonl: the file is 1,074 MB, over the 537 MB limit"):
        load_session(str(path))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(LoadError, match="no such file"):
        load_session(str(tmp_path / "nope.json"))
    with pytest.raises(LoadError, match="is a directory"):
        load_session(str(tmp_path))


def test_yaml_is_loaded_safely(tmp_path):
    path = write(tmp_path, "evil.yaml", "ctxviz: 1\nmessages:\n  - role: user\n    content: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(LoadError, match="evil.yaml:4: invalid YAML"):
        load_session(path)


def test_fast_path_messages_equal_regular_ones(tmp_path):
    from ctxviz.engine.session import Category, Message, TextPart
    s = load_session(write(tmp_path, "fast.jsonl", '{"role": "user", "content": "hi"}\n{"role": "assistant", "content": ""}\n'))
    assert s.messages[0] == Message("m0", 0, "user", (TextPart("hi"),), category=Category.DIALOG)
    assert s.messages[1] == Message("m1", 1, "assistant", (TextPart(""),), category=Category.DIALOG)  # "" is an empty text (issue 21)
    assert s.messages[0].raw == {"role": "user", "content": "hi"}


def test_large_jsonl_is_streamed_and_errors_keep_line_numbers(tmp_path):
    line = json.dumps({"role": "user", "content": "x" * 1000}) + "\n"
    n = 1500  # > 1 MB, so the file is streamed from disk
    good = write(tmp_path, "big.jsonl", line * n)
    assert len(load_session(good).messages) == n
    bad = write(tmp_path, "bad_big.jsonl", line * 1200 + "{oops\n" + line * 10)
    with pytest.raises(LoadError, match=r"bad_big.jsonl:1201: invalid JSON"):
        load_session(bad)
    latin = write(tmp_path, "latin_big.jsonl", (line * 1200).encode() + b'{"role": "user", "content": "caf\xe9"}\n')
    with pytest.raises(LoadError, match=r"latin_big.jsonl:\d+: not UTF-8 text"):
        load_session(latin)


def test_a_list_where_a_message_belongs_is_named(tmp_path):
    path = write(tmp_path, "lists.jsonl", '{"role": "user", "content": "a"}\n[1, 2]\n')
    with pytest.raises(LoadError, match=r"lists.jsonl:2: expected an object, got a list"):
        load_session(path)


def test_jsonl_with_a_byte_order_mark_and_windows_line_ends(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"role": "user", "content": "hi"}\r\n{"role": "assistant", "content": "hello"}\r\n')
    s = load_session(str(path))
    assert [(m.role, m.text) for m in s.messages] == [("user", "hi"), ("assistant", "hello")]
