"""OpenAI Responses API: requests, responses and item lists; every item type; usage without the
cached tokens; tools; one clear line per bad input; and real requests and responses others recorded."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxviz.cli import main
from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import policy_names
from ctxviz.engine.session import (
    ImagePart,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
    Usage,
)
from ctxviz.errors import LoadError
from ctxviz.io.loaders import detect, load_session
from ctxviz.io.responses import ResponsesLoader
from ctxviz.io.source import read_source

DATA = Path(__file__).parent / "data"
REAL = DATA / "real" / "responses"
REAL_FILES = sorted(p.name for p in REAL.glob("*.json"))


def write(tmp_path: Path, doc: Any, name: str = "doc.json", indent: int | None = 2) -> str:
    path = tmp_path / name
    if isinstance(doc, str):
        path.write_text(doc, encoding="utf-8")
    else:
        path.write_text(json.dumps(doc, indent=indent), encoding="utf-8")
    return str(path)


def jsonl(tmp_path: Path, records: list[Any], name: str = "log.jsonl") -> str:
    return write(tmp_path, "".join(json.dumps(r) + "\n" for r in records), name)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def assistant(text: str, id: str = "") -> dict[str, Any]:
    out = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return {**out, "id": id} if id else out


def fcall(call_id: str, name: str = "get_weather", arguments: str = '{"city":"Paris"}') -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": name, "arguments": arguments}


def fout(call_id: str, output: Any = "18C") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Weather for a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def response(output: list[Any], usage: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5-2025-08-07", "output": output,
            "usage": usage or {"input_tokens": 2087, "input_tokens_details": {"cached_tokens": 2048}, "output_tokens": 124,
                               "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2211}, **extra}


# -- detection --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", [
    {"model": "gpt-5", "instructions": "Be brief.", "input": [user("hi")]},
    {"model": "gpt-5", "input": [{"role": "user", "content": "hi"}], "tools": [WEATHER_TOOL]},
    {"model": "gpt-5", "instructions": "Be brief.", "input": "hi"},
    {"model": "gpt-5", "input": []},
    response([assistant("hello")]),
    {"object": "response.compaction", "output": [user("hi"), {"type": "compaction", "encrypted_content": "gAAA"}]},
    [user("hi"), assistant("hello")],
    [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    [{"role": "user", "content": "hi"}, fcall("c1"), fout("c1")],
])
def test_detected_as_responses(tmp_path, doc):
    assert detect(read_source(write(tmp_path, doc))).name == "openai-responses"


def test_jsonl_of_items_or_of_requests_and_responses(tmp_path):
    assert detect(read_source(jsonl(tmp_path, [user("hi"), assistant("yo")]))).name == "openai-responses"
    log = jsonl(tmp_path, [{"model": "gpt-5", "instructions": "x", "input": [user("hi")]}, response([assistant("yo")])], "log2.jsonl")
    assert detect(read_source(log)).name == "openai-responses"


@pytest.mark.parametrize(("doc", "name"), [
    ({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, "openai"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "openai"),
    ([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "openai"),
    ({"model": "claude", "system": "x", "messages": [{"role": "user", "content": "hi"}]}, "anthropic"),
])
def test_other_formats_are_not_taken_for_responses(tmp_path, doc, name):
    src = read_source(write(tmp_path, doc))
    assert ResponsesLoader().sniff(src) is False and detect(src).name == name


def test_an_embeddings_request_is_not_a_session(tmp_path):
    src = read_source(write(tmp_path, {"model": "text-embedding-3-small", "input": "some text"}))
    assert ResponsesLoader().sniff(src) is False


# -- what is read --------------------------------------------------------------------------------------------


def test_request_with_every_common_item(tmp_path):
    s = load_session(write(tmp_path, {
        "model": "gpt-5", "instructions": "You are a weather bot.", "tools": [WEATHER_TOOL],
        "input": [
            {"type": "message", "role": "developer", "content": "Answer in Celsius."},
            {"role": "system", "content": [{"type": "input_text", "text": "Today is Monday."}]},
            {"role": "user", "content": [{"type": "input_text", "text": "Weather here?"},
                                         {"type": "input_image", "image_url": "https://x/y.png", "detail": "low"},
                                         {"type": "input_file", "filename": "itinerary.pdf", "file_data": "data:application/pdf;base64,JVBER"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "**Need the city**"},
                                                           {"type": "summary_text", "text": "Ask the tool."}], "encrypted_content": "gAAA"},
            fcall("c1"),
            fout("c1"),
            {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "g" * 2000},
            assistant("It is 18C in Paris.", id="msg_1"),
            {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't book flights."}]},
            user("Thanks"),
        ],
    }))
    assert s.format == "openai-responses" and s.model == "gpt-5" and s.system_prompt == "You are a weather bot."
    assert s.tools == (ToolDefinition("get_weather", "Weather for a city", WEATHER_TOOL["parameters"]),)
    assert [m.role for m in s.messages] == ["system", "system", "user", "assistant", "tool", "assistant", "user"]
    assert s.messages[2].parts == (TextPart("Weather here?"), ImagePart(url="https://x/y.png", detail="low"),
                                   TextPart("[file: itinerary.pdf, 33 characters inline]"))
    assert s.messages[3].parts == (ThinkingPart("**Need the city**\n\nAsk the tool."), ToolCallPart("c1", "get_weather", '{"city":"Paris"}'))
    assert s.messages[3].id == "rs_1" and s.messages[4].tool_call_id == "c1" and s.messages[4].name == "get_weather"
    assert s.messages[5].parts == (OpaquePart("reasoning", "[encrypted reasoning: 2,000 characters]"), TextPart("It is 18C in Paris."),
                                   TextPart("I can't book flights."))
    assert s.tool_pairs == ((3, 4),) and s.tool_call_problems == ()


def test_hosted_tools_compaction_references_and_unknown_items(tmp_path):
    s = load_session(write(tmp_path, {"model": "o4-mini", "input": [
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "e" * 1234},  # first: what came before one is not sent (issue 21)
        user("Search and ask the wiki"),
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "weather Paris"}},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "deepwiki", "name": "ask_question", "arguments": "{}", "output": "Paris is sunny."},
        {"type": "item_reference", "id": "msg_earlier"},
        {"type": "computer_call", "id": "cu_1", "call_id": "cc1", "action": {"type": "screenshot"}, "status": "completed"},
        {"type": "computer_call_output", "call_id": "cc1", "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"}},
        {"type": "hologram_call_v9", "id": "h1", "payload": {"x": 1}},
    ]}))
    assert [m.role for m in s.messages] == ["assistant", "user", "assistant", "tool", "assistant"]
    assert s.messages[0].parts[0].text == "[compaction: encrypted, 1,234 characters]"
    hosted = s.messages[2].parts
    assert [p.type for p in hosted[:3]] == ["web_search_call", "mcp_call", "item_reference"]
    assert "weather Paris" in hosted[0].text and "Paris is sunny." in hosted[1].text
    assert hosted[2].text == "[item_reference: msg_earlier]"
    assert hosted[3] == ToolCallPart("cc1", "computer", '{"type": "screenshot"}')
    assert s.messages[3].parts == (ToolResultPart("cc1", "[image]"),)
    assert s.messages[4].parts[0].type == "hologram_call_v9"
    notes = "\n".join(s.notes)
    assert "kept 1 `web_search_call` item" in notes and "kept 1 `hologram_call_v9` item" in notes
    assert "kept 1 `item_reference` item as a placeholder" in notes


def test_response_usage_is_normalised_and_instructions_tools_read(tmp_path):
    s = load_session(write(tmp_path, response(
        [{"type": "reasoning", "id": "rs_1", "summary": []}, fcall("c9")],
        instructions="Use the tools.", tools=[{"type": "function", "name": "get_weather", "description": None, "parameters": None, "strict": True},
                                              {"type": "web_search", "search_context_size": "medium"},
                                              {"type": "custom", "name": "apply_patch", "description": "Edit files", "format": {"type": "text"}},
                                              {"type": "function", "function": {"name": "nested", "parameters": {"type": "object"}}}])))
    (m,) = s.messages
    assert m.role == "assistant" and m.tool_calls == (ToolCallPart("c9", "get_weather", '{"city":"Paris"}'),)
    assert m.usage == Usage(input_tokens=39, output_tokens=124, cache_read_input_tokens=2048) and m.usage.window_fill == 2087
    assert s.system_prompt == "Use the tools." and s.model == "gpt-5-2025-08-07"
    assert s.tools == (ToolDefinition("get_weather", "", {}), ToolDefinition("web_search", "", {"search_context_size": "medium"}),
                       ToolDefinition("apply_patch", "Edit files", {"format": {"type": "text"}}), ToolDefinition("nested", "", {"type": "object"}))
    assert any("hosted tool definition" in n for n in s.notes)
    assert "skipped 1 `reasoning` item with neither summary text nor encrypted content" in s.notes


def test_incomplete_response_is_noted(tmp_path):
    s = load_session(write(tmp_path, response([assistant("Partial")], status="incomplete", incomplete_details={"reason": "max_output_tokens"})))
    assert "response resp_1 is `incomplete` (max_output_tokens)" in s.notes


def test_string_input_and_instructions_as_items(tmp_path):
    s = load_session(write(tmp_path, {"model": "gpt-5", "input": "What is 2+2?",
                                      "instructions": [{"role": "developer", "content": [{"type": "input_text", "text": "Be terse."}]}]}))
    assert [(m.role, m.text) for m in s.messages] == [("user", "What is 2+2?")] and s.system_prompt == "Be terse."


def test_a_log_of_requests_and_responses(tmp_path):
    first = {"model": "gpt-5", "instructions": "Be brief.", "tools": [WEATHER_TOOL], "input": [user("Weather in Paris?")]}
    r1 = response([fcall("c1")], {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20}, id="resp_a")
    # The next request carries the whole history again; its response is appended.
    second = {**first, "input": [user("Weather in Paris?"), fcall("c1"), fout("c1")]}
    r2 = response([assistant("18C.")], {"input_tokens": 150, "input_tokens_details": {"cached_tokens": 100}, "output_tokens": 5}, id="resp_b")
    # Then one that continues resp_b by id: only the new items.
    third = {"model": "gpt-5", "previous_response_id": "resp_b", "input": [user("And tomorrow?")]}
    s = load_session(jsonl(tmp_path, [first, r1, second, r2, third]))
    assert [(m.role, m.text) for m in s.messages] == [("user", "Weather in Paris?"), ("assistant", 'get_weather({"city":"Paris"})'),
                                                      ("tool", "18C"), ("assistant", "18C."), ("user", "And tomorrow?")]
    assert s.messages[3].usage == Usage(50, 5, 100) and s.messages[1].usage is None  # r1 belonged to the replaced history
    assert s.system_prompt == "Be brief." and s.tools[0].name == "get_weather"
    assert any("read 1 request as the whole conversation so far, replacing what came before it" in n for n in s.notes)


def test_a_request_continuing_a_response_not_in_the_file_is_noted(tmp_path):
    s = load_session(write(tmp_path, {"model": "gpt-5", "previous_response_id": "resp_gone", "input": [user("And then?")]}))
    assert "the request continues response resp_gone (`previous_response_id`), whose history is not in the file" in s.notes


def test_jsonl_of_bare_items(tmp_path):
    s = load_session(jsonl(tmp_path, [user("hi"), fcall("c1"), fout("c1", [{"type": "input_text", "text": "18"}, {"type": "input_text", "text": "C"}])]))
    assert [m.role for m in s.messages] == ["user", "assistant", "tool"] and s.messages[2].text == "18\nC"


# -- bad input --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("doc", "expected"), [
    ({"model": "gpt-5", "instructions": "x", "input": [user("hi"), {"type": "function_call", "call_id": "c1", "arguments": "{}"}]},
     ":15: input[1].name: is required"),
    ({"object": "response", "output": "nope"}, ":3: output: expected a list, got a string"),
    ({"model": "gpt-5", "tools": [], "input": [{"role": "robot", "content": "x"}]}, ":6: input[0].role: unknown role 'robot'"),
    ({"model": "gpt-5", "tools": [], "input": [{"role": "user", "content": 7}]}, ":7: input[0].content: expected a string or a list"),
    ({"model": "gpt-5", "tools": [], "input": [{"role": "user", "content": [{"type": "input_text", "text": ["x"]}]}]},
     ":10: input[0].content[0].text: expected a string, got a list"),
    ({"model": "gpt-5", "tools": [{"type": "function", "name": "f", "parameters": "no"}], "input": [user("x")]},
     ":7: tools[0].parameters: expected an object, got a string"),
    ({"model": "gpt-5", "tools": [], "input": [{"type": "function_call_output", "output": "x"}]}, ":5: input[0].call_id: is required"),
    ({"object": "response", "output": [], "usage": {"input_tokens": "lots"}}, ":5: usage.input_tokens: expected an integer"),
    ([user("x"), {"type": "reasoning", "summary": [{"type": "summary_text", "text": {"a": 1}}]}],
     ":17: [1].summary[0].text: expected a string, got an object"),
])
def test_bad_input_is_one_line_naming_line_and_field(tmp_path, doc, expected):
    path = write(tmp_path, doc, "bad.json")
    with pytest.raises(LoadError) as info:
        load_session(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(path) and expected in message, message


def test_a_document_that_is_neither_request_nor_response(tmp_path):
    with pytest.raises(LoadError, match="expected a Responses request"):
        load_session(write(tmp_path, {"model": "gpt-5", "instructions": "x"}), input_format="openai-responses")


def test_a_bad_jsonl_line_names_its_line(tmp_path):
    path = write(tmp_path, json.dumps(user("hi")) + "\n" + json.dumps(fcall("c1")) + "\n{oops\n", "log.jsonl")
    with pytest.raises(LoadError, match=r"log\.jsonl:3: invalid JSON"):
        load_session(path)


# -- real requests and responses ---------------------------------------------------------------------------------

#: file: (messages by role, tool calls answered, tool calls unanswered, messages with usage, system prompt, model, opaque types)
EXPECTED: dict[str, tuple[dict[str, int], int, int, int, str, str, dict[str, int]]] = {
    "pydantic-ai-compact-messages.compaction.json": ({"user": 2, "assistant": 1}, 0, 0, 1, "", "", {"compaction": 1}),
    "pydantic-ai-compact-messages.request.json":
        ({"assistant": 1, "user": 1}, 0, 0, 0, "You are a helpful math assistant. Give short answers.", "gpt-4o-mini", {"compaction": 1}),
    "pydantic-ai-image-url-input.request.json": ({"user": 1}, 0, 0, 0, "", "gpt-4o", {}),
    "pydantic-ai-mcp-server-tool.response.json":
        ({"assistant": 1}, 0, 0, 1, "You are a helpful assistant.", "o4-mini-2025-04-16", {"mcp_list_tools": 1, "reasoning": 2, "mcp_call": 1}),
    "pydantic-ai-simple-tool-call.request.json": ({"user": 1, "assistant": 1, "tool": 1}, 1, 0, 0, "", "gpt-4o", {}),
    "pydantic-ai-thinking-with-tool-calls.request.json": ({"user": 1, "assistant": 1, "tool": 1}, 1, 0, 0, "You are a helpful assistant that uses "
                                                           "planning. You MUST use the update_plan tool and continually update it as you make "
                                                           "progress against the user's prompt", "gpt-5", {}),
    "pydantic-ai-thinking-with-tool-calls.response.json": ({"assistant": 1}, 0, 1, 1, "You are a helpful assistant that uses planning. You "
                                                            "MUST use the update_plan tool and continually update it as you make progress "
                                                            "against the user's prompt", "gpt-5-2025-08-07", {}),
    "pydantic-ai-web-search-tool.request.json":
        ({"user": 2, "assistant": 1}, 0, 0, 0, "You are a helpful assistant.", "gpt-5", {"reasoning": 2, "web_search_call": 1}),
    "pydantic-ai-web-search-tool.response.json":
        ({"assistant": 1}, 0, 0, 1, "You are a helpful assistant.", "gpt-5-2025-08-07", {"reasoning": 2, "web_search_call": 1}),
}


def test_every_real_file_is_listed_with_its_source():
    sources = (REAL / "SOURCES.md").read_text(encoding="utf-8")
    assert set(REAL_FILES) == set(EXPECTED) and all(f"`{name}`" in sources for name in REAL_FILES)


def reported(doc: dict[str, Any]) -> Usage | None:
    u = doc.get("usage")
    if not u:
        return None
    cached = u["input_tokens_details"]["cached_tokens"]
    return Usage(u["input_tokens"] - cached, u["output_tokens"], cached)


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_file_reads_as_a_reader_sees_it(name):
    s = load_session(str(REAL / name))
    doc = json.loads((REAL / name).read_text(encoding="utf-8"))
    roles, answered, unanswered, with_usage, system, model, opaque = EXPECTED[name]
    assert s.format == "openai-responses" and s.model == model and s.system_prompt == system
    assert Counter(m.role for m in s.messages) == roles
    assert len(s.tool_pairs) == answered and len(s.tool_call_problems) == unanswered
    assert Counter(p.type for m in s.messages for p in m.parts if isinstance(p, OpaquePart)) == opaque
    usages = [m.usage for m in s.messages if m.usage is not None]
    assert len(usages) == with_usage and (not usages or usages[-1] == reported(doc))
    # Every input or output item is in the session: items become parts, except message items, which are whole messages.
    items = doc.get("input") or doc.get("output") or []
    parts = sum(len(m.parts) for m in s.messages)
    content_parts = sum(len(i["content"]) if isinstance(i.get("content"), list) else 1 for i in items if i.get("role"))
    assert parts == content_parts + sum(1 for i in items if not i.get("role"))
    tools = doc.get("tools") or []
    assert [t.name for t in s.tools] == [t.get("name") or t["type"] for t in tools]


def test_real_reasoning_summaries_and_tool_definitions():
    s = load_session(str(REAL / "pydantic-ai-thinking-with-tool-calls.response.json"))
    thinking = s.messages[0].parts[0]
    assert isinstance(thinking, ThinkingPart) and thinking.text.startswith("**Creating a structured poem**") and thinking.text.count("**") == 10
    assert s.messages[0].tool_calls[0].name == "update_plan"
    assert s.tools[0].parameters["required"] == ["plan"]
    usage = s.messages[0].usage
    assert usage == Usage(input_tokens=124, output_tokens=1926, cache_read_input_tokens=0)


def test_real_compaction_is_an_opaque_block_with_its_size():
    s = load_session(str(REAL / "pydantic-ai-compact-messages.request.json"))
    doc = json.loads((REAL / "pydantic-ai-compact-messages.request.json").read_text(encoding="utf-8"))
    size = len(doc["input"][0]["encrypted_content"])
    assert s.messages[0].parts == (OpaquePart("compaction", f"[compaction: encrypted, {size:,} characters]"),)
    assert s.messages[1].text == doc["input"][1]["content"]


def test_real_cached_tokens_leave_the_input():
    s = load_session(str(REAL / "pydantic-ai-web-search-tool.response.json"))
    assert s.messages[0].usage == Usage(input_tokens=930, output_tokens=439, cache_read_input_tokens=8576)


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_files_plan_under_every_policy_and_export(name, tmp_path, capsys):
    s = load_session(str(REAL / name))
    for policy in policy_names():
        plan = plan_session(s, policy, store=CountStore())
        assert len(plan.messages) == len(s.messages)
        assert main(["plan", str(REAL / name), "--policy", policy]) == 0
        assert main(["simulate", str(REAL / name), "--policy", policy]) == 0
    for to in ("openai", "anthropic"):
        assert main(["export", str(REAL / name), "--to", to, "-o", str(tmp_path / f"{to}.json")]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("doc", [
    [{"role": "user", "content": [{"type": ["input_text"], "text": "x"}]}],
    [{"type": ["message"], "role": "user", "content": "x"}],
    [{"type": "message", "role": ["user"], "content": "x"}],
    {"object": ["response"], "output": []},
    {"model": "gpt-5", "input": [{"type": {"k": 1}}], "tools": []},
    {"object": "response", "output": [{"type": "message", "role": {"r": 1}, "content": "x"}]},
])
def test_unhashable_values_where_names_are_expected_are_one_line(tmp_path, doc):
    path = write(tmp_path, doc, "u.json")
    try:
        load_session(path)
    except LoadError as exc:
        assert "\n" not in str(exc)
