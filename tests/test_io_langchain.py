"""LangChain dumps: the fixtures in tests/data/real/langchain, messages_to_dict and dumpd (lists, JSONL,
prompt values, `messages` objects), tool calls read once, usage normalisation, and bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.policies import policy_names
from ctxviz.engine.session import ImagePart, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from ctxviz.io.loaders import load_session

from .loader_checks import assert_plans_simulates_and_exports, assert_refused_in_one_line

REAL = Path(__file__).parent / "data" / "real" / "langchain"


def roles(session) -> dict[str, int]:
    return dict(Counter(m.role for m in session.messages))


def write(tmp_path: Path, name: str, doc: Any) -> str:
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(x) + "\n" for x in doc), encoding="utf-8")
    else:
        path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return str(path)


def lc(cls: str, **kwargs: Any) -> dict[str, Any]:
    return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", cls], "kwargs": kwargs}


def md(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": {"additional_kwargs": {}, "response_metadata": {}, "type": kind, "name": None, "id": None, **data}}


def test_real_convert_to_messages_dump():
    s = load_session(str(REAL / "convert_to_messages.messages_to_dict.json"))
    assert s.format == "langchain"
    assert roles(s) == {"system": 6, "user": 4, "assistant": 5, "tool": 2}
    assert [m.text for m in s.messages if m.role == "system"] == ["1", "1.1", "6", "6.1", "11.1", "11.2"]
    assert s.messages[2].parts == (ImagePart(url="2.1"),) and s.messages[2].name == "2.2"
    # "4.2" is both a tool_use block and a tool call: read once
    assert [c.id for c in s.messages[4].tool_calls] == ["4.2"]
    assert s.messages[3].tool_calls == (ToolCallPart("3.2", "3.3", '{"3.4": "3.5"}'),)
    assert s.messages[9].tool_calls == (ToolCallPart("8.5", "8.4", '{"8.2": "8.3"}'),) and s.messages[9].name == "8.6"
    assert s.messages[5].tool_call_id == "5.2" and s.messages[5].text == "5.1"
    # the test's ids pair nothing up: every call and result is reported as missing its partner
    assert not s.tool_pairs and len(s.tool_call_problems) == 7


def test_real_dumpd_with_usage():
    s = load_session(str(REAL / "messages_to_trim.dumpd.json"))
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert [m.id for m in s.messages] == ["m0", "first", "second", "third", "fourth"]
    assert s.messages[2].parts == (TextPart("This is the FIRST 4 token block."), TextPart("This is the SECOND 4 token block."))
    # input_tokens 100 includes the 50 cache reads
    assert s.messages[4].usage == Usage(input_tokens=50, output_tokens=50, cache_read_input_tokens=50)



@pytest.mark.parametrize("policy", policy_names())
@pytest.mark.parametrize("name", sorted(p.name for p in REAL.iterdir() if p.suffix == ".json"))
def test_plan_simulate_export_under_every_policy(name, policy, tmp_path):
    path = str(REAL / name)
    assert_plans_simulates_and_exports(path, policy, tmp_path)


CONVERSATION = [
    md("system", content="You are terse."),
    md("human", content="weather in Oslo?", example=False),
    md("ai", content=[{"type": "thinking", "thinking": "use the tool"}, {"type": "text", "text": "Checking."},
                      {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
       response_metadata={"model_name": "claude-sonnet-4-5"}, id="run-1",
       tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "toolu_1", "type": "tool_call"}], invalid_tool_calls=[],
       usage_metadata={"input_tokens": 1200, "output_tokens": 30, "total_tokens": 1230,
                       "input_token_details": {"cache_read": 1000, "cache_creation": 100}}),
    md("tool", content="-3C, snow", tool_call_id="toolu_1", status="success"),
    md("ai", content="", additional_kwargs={"tool_calls": [{"id": "call_2", "type": "function",
                                                             "function": {"name": "get_forecast", "arguments": "{\"city\": \"Oslo\"}"}}]},
       response_metadata={"token_usage": {"prompt_tokens": 1400, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 1280}},
                          "model_name": "gpt-4o"}),
    md("tool", content="snow all week", tool_call_id="call_2", status="error"),
    md("chat", content="Noted.", role="assistant"),
    {"type": "remove", "data": {"id": "x", "content": ""}},
]


def test_messages_to_dict_every_field(tmp_path):
    s = load_session(write(tmp_path, "history.json", CONVERSATION))
    assert s.format == "langchain" and s.model == "gpt-4o"
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    ai = s.messages[2]
    assert ai.id == "run-1" and ai.parts == (ThinkingPart("use the tool"), TextPart("Checking."), ToolCallPart("toolu_1", "get_weather", '{"city": "Oslo"}'))
    assert ai.usage == Usage(input_tokens=100, output_tokens=30, cache_read_input_tokens=1000, cache_creation_input_tokens=100)
    assert ai.usage.window_fill == 1200
    # an older AI message: calls only in additional_kwargs, usage only in response_metadata (OpenAI spelling)
    assert s.messages[4].tool_calls == (ToolCallPart("call_2", "get_forecast", '{"city": "Oslo"}'),)
    assert s.messages[4].usage == Usage(input_tokens=120, output_tokens=12, cache_read_input_tokens=1280)
    assert s.messages[5].parts == (ToolResultPart("call_2", "snow all week", is_error=True),)
    assert s.tool_pairs == ((2, 3), (4, 5)) and s.messages[3].name == "get_weather"
    assert any("skipped 1 `RemoveMessage`" in n for n in s.notes)


def test_jsonl_prompt_value_and_messages_object(tmp_path):
    assert [m.role for m in load_session(write(tmp_path, "h.jsonl", CONVERSATION[:4])).messages] == ["system", "user", "assistant", "tool"]
    value = {"lc": 1, "type": "constructor", "id": ["langchain", "prompts", "chat", "ChatPromptValue"],
             "kwargs": {"messages": [lc("SystemMessage", content="be brief", type="system"), lc("HumanMessage", content="hi", type="human")]}}
    assert [m.text for m in load_session(write(tmp_path, "pv.json", value)).messages] == ["be brief", "hi"]
    state = {"messages": [lc("HumanMessage", content="hi", type="human"),
                          lc("AIMessageChunk", content="hello", type="AIMessageChunk", tool_calls=[],
                             invalid_tool_calls=[{"name": "broken", "args": "{oops", "id": "c1", "error": "bad JSON"}])]}
    s = load_session(write(tmp_path, "state.json", state))
    assert s.format == "langchain" and s.messages[1].tool_calls == (ToolCallPart("c1", "broken", "{oops"),)
    assert any("`invalid_tool_calls`" in n for n in s.notes)


def test_detection_leaves_other_formats_alone(tmp_path):
    assert load_session(write(tmp_path, "chat.json", {"messages": [{"role": "user", "content": "hi"}]})).format == "openai"


BAD = [
    ("type.json", [md("human", content="a"), {"type": "robot", "data": {"content": "x"}}], "type.json:14: [1].type: unknown message type 'robot'"),
    ("content.json", [md("human", content=5)], "content.json:10: [0].data.content: expected a string or a list of content blocks"),
    ("call.json", [md("ai", content="", tool_calls=[{"args": {}, "id": "c"}])], "call.json:12: [0].data.tool_calls[0].name: is required"),
    ("notmsg.json", [lc("HumanMessage", content="a"), {"lc": 1, "type": "constructor", "id": ["langchain", "prompts", "PromptTemplate"], "kwargs": {}}],
     "notmsg.json:18: [1].id: a serialized PromptTemplate, not a message"),
]


@pytest.mark.parametrize(("name", "doc", "prefix"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_naming_file_line_field(tmp_path, name, doc, prefix):
    assert_refused_in_one_line(write(tmp_path, name, doc), prefix)
