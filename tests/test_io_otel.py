"""OTel GenAI and OpenInference spans: the real fixtures in tests/data/real/otel, OTLP containers (JSON,
JSONL, SDK span dumps), several traces and --conversation, the largest call, usage normalisation,
earlier calls' usage, tool pairs, and one clear line per bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.policies import policy_names
from ctxviz.engine.session import ImagePart, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from ctxviz.errors import LoadError
from ctxviz.io.loaders import load_session

from .loader_checks import assert_plans_simulates_and_exports, assert_refused_in_one_line

REAL = Path(__file__).parent / "data" / "real" / "otel"


def roles(session) -> dict[str, int]:
    return dict(Counter(m.role for m in session.messages))


def write(tmp_path: Path, name: str, doc: Any) -> str:
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(x) + "\n" for x in doc), encoding="utf-8")
    else:
        path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return str(path)


def kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        v: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, (list, dict)):
        v = {"stringValue": json.dumps(value)}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def span(trace: str, span_id: str, end: int, attrs: dict[str, Any], name: str = "chat gpt-4o") -> dict[str, Any]:
    return {"traceId": trace, "spanId": span_id, "name": name, "kind": 3, "startTimeUnixNano": str(end - 1000),
            "endTimeUnixNano": str(end), "attributes": [kv(k, v) for k, v in attrs.items()]}


def otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [kv("service.name", "agent")]},
                               "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"}, "spans": list(spans)}]}]}


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


SYSTEM = [{"type": "text", "content": "You are a weather assistant."}]
Q = text("user", "Weather in Paris?")
CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"location": "Paris"}}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1", "response": "rainy, 57F"}]}


def first_call() -> dict[str, Any]:
    return span("t1", "s1", 2_000, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06",
                                     "gen_ai.system_instructions": SYSTEM, "gen_ai.input.messages": [Q],
                                     "gen_ai.output.messages": [{**CALL, "finish_reason": "tool_call"}],
                                     "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 18})


def second_call() -> dict[str, Any]:
    return span("t1", "s2", 5_000, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06",
                                     "gen_ai.system_instructions": SYSTEM, "gen_ai.input.messages": [Q, CALL, RESULT],
                                     "gen_ai.output.messages": [{**text("assistant", "It is rainy, 57F."), "finish_reason": "stop"}],
                                     "gen_ai.usage.input_tokens": 1200, "gen_ai.usage.cache_read.input_tokens": 1024,
                                     "gen_ai.usage.output_tokens": 9})


# -- the real fixtures ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["otel_genai_client_span_tool_calls.json", "otel_genai_deprecated_client_span_tool_calls.json",
                                  "openinference_client_span_tool_calls.json"])
def test_real_fixtures_read_the_same_conversation(name):
    s = load_session(str(REAL / name))
    assert s.format == "otel" and s.model == "gpt-4-0613"
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
    assert s.messages[0].text == "Weather in Paris?"
    assert s.messages[1].tool_calls == (ToolCallPart("1234", "get_weather", '{"location": "Paris"}') if "openinference" not in name
                                        else ToolCallPart("1234", "get_weather", '{"location":"Paris"}'),)
    assert s.messages[1].text.startswith("Absolutely! Let me check the weather for you.")
    assert s.messages[2].tool_call_id == "1234" and s.messages[2].text == "rainy, 57°F"
    assert s.tool_pairs == ((1, 2),)
    reply = s.messages[3]
    assert reply.text == "The weather in Paris is currently rainy with a temperature of 57°F."
    assert reply.usage == Usage(input_tokens=97, output_tokens=52)



# -- the Vercel AI SDK: `ai.prompt.messages`, `ai.response.*`, `ai.usage.*` ----------------------------------
# Real captures of AI SDK 6.0.68 against OpenAI (openinference-vercel's fixtures, SOURCES.md) and the
# SDK's own spans for a tool-using agent (tests/golden/vercel_ai, recorded by running the SDK).

VERCEL_AGENT = Path(__file__).parent / "golden" / "vercel_ai" / "agent_tool_calls.spans.json"


@pytest.mark.parametrize("name", ["vercel-ai-v6-ai-generateText-doGenerate.json", "vercel-ai-v6-all-spans.json"])
def test_vercel_ai_sdk_prompt_messages_reply_and_usage(name):
    """The file holds several calls, each its own trace: the multi-turn one (4 prompt messages) is read."""
    s = load_session(str(REAL / name))
    assert s.format == "otel" and s.model == "gpt-4o-mini-2024-07-18"
    assert [(m.role, m.text) for m in s.messages] == [
        ("system", "You are a helpful assistant."), ("user", "What is 2 + 2?"), ("assistant", "2 + 2 equals 4."),
        ("user", "And what is 3 + 3?"), ("assistant", "3 + 3 equals 6.")]
    assert s.messages[-1].usage == Usage(input_tokens=50, output_tokens=9)
    assert [m.usage for m in s.messages[:-1]] == [None] * 4
    assert any("Vercel AI SDK" in n for n in s.notes)
    traces = 2 if "doGenerate" in name else 4  # all-spans: generateText (2), generateObject and streamText calls
    assert any(n.startswith(f"{traces} conversations (traces)") for n in s.notes)


def test_vercel_ai_sdk_streamed_call_with_v6_usage_names():
    s = load_session(str(REAL / "vercel-ai-v6-ai-streamText-doStream.json"))
    assert [m.role for m in s.messages] == ["user", "assistant"]
    assert s.messages[0].text == "Write a short poem about TypeScript."
    assert s.messages[1].text.startswith("In code’s embrace, where types align,") and s.messages[1].text.endswith("bright, safe strings.  ")
    # ai.usage.inputTokens 15 (of which ai.usage.cachedInputTokens 0), ai.usage.outputTokens 112
    assert s.messages[1].usage == Usage(input_tokens=15, output_tokens=112)


def test_vercel_ai_sdk_agent_tool_calls_results_reasoning_and_errors():
    """The SDK's own spans of a two-step agent: the second call's prompt holds the whole conversation,
    the first call's reported usage goes on the turn it produced, the tool definition comes from
    `ai.prompt.tools`, and a failed tool (`output.type` "error-text") is an error result."""
    s = load_session(str(VERCEL_AGENT))
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "user", "assistant", "tool", "tool", "assistant"]
    first = s.messages[4]
    assert [type(p) for p in first.parts][:2] == [ThinkingPart, TextPart]
    assert first.parts[0].text == "I need the order's status before I can answer." and first.parts[1].text == "Let me look up both orders."
    assert first.tool_calls == (ToolCallPart("call_A1187", "lookup_order", '{"order_id": "A-1187"}'),
                                ToolCallPart("call_B2204", "lookup_order", '{"order_id": "B-2204"}'))
    assert first.usage == Usage(input_tokens=182, output_tokens=61)
    ok, failed = s.messages[5], s.messages[6]
    assert ok.tool_call_id == "call_A1187" and json.loads(ok.text) == {"status": "in_transit", "eta": "2026-06-15"}
    assert failed.tool_call_id == "call_B2204" and failed.text == "no order B-2204"
    assert isinstance(failed.parts[0], ToolResultPart) and failed.parts[0].is_error
    assert s.tool_pairs == ((4, 5), (4, 6))
    assert s.messages[7].text == "A-1187 is in transit and arrives on 15 June; B-2204 could not be found."
    assert s.messages[7].usage == Usage(input_tokens=297, output_tokens=24)
    assert [t.name for t in s.tools] == ["lookup_order"] and s.tools[0].parameters["required"] == ["order_id"]
    assert any(n.startswith("read the largest of the trace's 2 LLM calls") for n in s.notes)


@pytest.mark.parametrize("policy", ["missy", "langchain-trim", "claude-code", "openhands-llm-summarizing"])
def test_vercel_agent_plans_simulates_and_exports(policy, tmp_path):
    assert_plans_simulates_and_exports(str(VERCEL_AGENT), policy, tmp_path)


def test_vercel_ai_sdk_older_spellings(tmp_path):
    """ai 4: tool calls with `args`, results with `result` and `isError`, usage as promptTokens, an image part."""
    messages = [{"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image", "image": "https://x.test/a.png"}]},
                {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "read", "args": {"p": 1}}]},
                {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "read", "result": "boom", "isError": True}]}]
    attrs = {"ai.prompt.messages": json.dumps(messages), "ai.response.text": "done", "ai.usage.promptTokens": 40, "ai.usage.completionTokens": 2}
    s = load_session(write(tmp_path, "v4.json", otlp(span("t", "s", 10, attrs))))
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
    assert isinstance(s.messages[0].parts[1], ImagePart) and s.messages[0].parts[1].url == "https://x.test/a.png"
    assert s.messages[1].tool_calls == (ToolCallPart("c1", "read", '{"p": 1}'),)
    assert s.messages[2].parts[0] == ToolResultPart("c1", "boom", is_error=True)
    assert s.messages[3].usage == Usage(input_tokens=40, output_tokens=2)


def test_vercel_ai_sdk_bad_prompt_is_one_line(tmp_path):
    path = write(tmp_path, "bad.json", otlp(span("t", "s", 10, {"ai.prompt.messages": json.dumps([{"role": "user", "content": [{"text": "x"}]}])})))
    assert_refused_in_one_line(path, "bad.json:30: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.ai.prompt.messages[0].content[0].type: is required")


@pytest.mark.parametrize("policy", policy_names())
@pytest.mark.parametrize("name", sorted(p.name for p in REAL.iterdir() if p.suffix == ".json"))
def test_plan_simulate_export_under_every_policy(name, policy, tmp_path):
    path = str(REAL / name)
    assert_plans_simulates_and_exports(path, policy, tmp_path)


# -- OTLP containers, the largest call, usage ------------------------------------------------------


def test_otlp_export_reads_the_largest_call_and_normalises_usage(tmp_path):
    s = load_session(write(tmp_path, "trace.json", otlp(first_call(), second_call())))
    assert s.format == "otel" and s.model == "gpt-4o-2024-08-06"
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert s.messages[0].text == "You are a weather assistant."
    assert s.tool_pairs == ((2, 3),)
    # input_tokens includes the cached tokens: 1200 - 1024
    assert s.messages[4].usage == Usage(input_tokens=176, output_tokens=9, cache_read_input_tokens=1024)
    # the first call's usage belongs to the assistant message it produced (matched by its call id)
    assert s.messages[2].usage == Usage(input_tokens=120, output_tokens=18)
    assert any("largest of the trace's 2 LLM calls" in n for n in s.notes)
    assert any("reported usage of 1 earlier call" in n for n in s.notes)


def test_several_traces_pick_the_largest_and_conversation_n(tmp_path):
    other = span("t0", "x1", 9_000, {"gen_ai.input.messages": [text("user", "hi")], "gen_ai.output.messages": [text("assistant", "hello")]})
    path = write(tmp_path, "two.json", otlp(other, first_call(), second_call()))
    s = load_session(path)
    assert len(s.messages) == 5
    assert any(n.startswith("2 conversations (traces) in the file; read conversation 2 (trace t1), the largest") for n in s.notes)
    s1 = load_session(path, conversation=1)
    assert [m.text for m in s1.messages] == ["hi", "hello"] and any("conversation 1 of 2 (trace t0)" in n for n in s1.notes)
    with pytest.raises(LoadError, match=r"--conversation 3: the file holds 2 conversations"):
        load_session(path, conversation=3)


def test_collector_jsonl_and_sdk_span_dumps(tmp_path):
    s = load_session(write(tmp_path, "traces.jsonl", [otlp(first_call()), otlp(second_call())]))
    assert len(s.messages) == 5 and s.messages[4].usage.cache_read_input_tokens == 1024
    sdk = {"name": "ollama.chat", "context": {"trace_id": "0xefa3", "span_id": "0x3738"}, "kind": "SpanKind.CLIENT",
           "parent_id": "0x5899", "start_time": "2026-07-28T04:01:04.831316Z", "end_time": "2026-07-28T04:01:05.231962Z",
           "attributes": {"gen_ai.request.model": "llama3.2", "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You are the support bot.",
                          "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Best-selling drink?",
                          "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "The Depot Latte.",
                          "llm.usage.total_tokens": 123, "gen_ai.usage.input_tokens": 87, "gen_ai.usage.output_tokens": 36}}
    s2 = load_session(write(tmp_path, "spans.json", [sdk]))
    assert [m.role for m in s2.messages] == ["system", "user", "assistant"] and s2.model == "llama3.2"
    assert s2.messages[2].usage == Usage(input_tokens=87, output_tokens=36)


def test_openllmetry_flattened_tool_calls_and_cache_spelling(tmp_path):
    attrs = {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "weather in Oslo?",
             "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.tool_calls.0.id": "c9", "gen_ai.prompt.1.tool_calls.0.name": "get_weather",
             "gen_ai.prompt.1.tool_calls.0.arguments": "{\"city\": \"Oslo\"}",
             "gen_ai.prompt.2.role": "tool", "gen_ai.prompt.2.content": "-3C", "gen_ai.prompt.2.tool_call_id": "c9",
             "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "It is -3C.",
             "gen_ai.usage.prompt_tokens": 300, "gen_ai.usage.completion_tokens": 7, "gen_ai.usage.cache_read_input_tokens": 256,
             "gen_ai.usage.cache_creation_input_tokens": 40,
             "llm.request.functions.0.name": "get_weather", "llm.request.functions.0.parameters": "{\"type\": \"object\"}"}
    s = load_session(write(tmp_path, "span.json", otlp(span("t", "s", 10, attrs))))
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
    assert s.messages[1].tool_calls == (ToolCallPart("c9", "get_weather", "{\"city\": \"Oslo\"}"),) and s.tool_pairs == ((1, 2),)
    assert s.messages[3].usage == Usage(input_tokens=4, output_tokens=7, cache_read_input_tokens=256, cache_creation_input_tokens=40)
    assert s.tools[0].name == "get_weather"


def test_openinference_contents_images_and_cache(tmp_path):
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": "claude-sonnet-4-5",
             "llm.input_messages.0.message.role": "user",
             "llm.input_messages.0.message.contents.0.message_content.type": "text",
             "llm.input_messages.0.message.contents.0.message_content.text": "What is in this picture?",
             "llm.input_messages.0.message.contents.1.message_content.type": "image",
             "llm.input_messages.0.message.contents.1.message_content.image.image.url": "https://example.com/cat.png",
             "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "A cat.",
             "llm.token_count.prompt": 1800, "llm.token_count.prompt_details.cache_read": 1500, "llm.token_count.completion": 4,
             "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {"name": "zoom", "parameters": {"type": "object"}}})}
    s = load_session(write(tmp_path, "oi.json", otlp(span("t", "s", 10, attrs))))
    assert s.messages[0].parts == (TextPart("What is in this picture?"), ImagePart(url="https://example.com/cat.png"))
    assert s.messages[1].usage == Usage(input_tokens=300, output_tokens=4, cache_read_input_tokens=1500)
    assert s.tools[0].name == "zoom" and s.model == "claude-sonnet-4-5"


def test_reasoning_parts_and_cache_larger_than_input(tmp_path):
    attrs = {"gen_ai.input.messages": [text("user", "think")],
             "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"}, {"type": "text", "content": "ok"}]}],
             "gen_ai.usage.input_tokens": 10, "gen_ai.usage.cache_read.input_tokens": 500}
    s = load_session(write(tmp_path, "r.json", otlp(span("t", "s", 10, attrs))))
    assert s.messages[1].parts == (ThinkingPart("hmm"), TextPart("ok"))
    assert s.messages[1].usage == Usage(input_tokens=10, cache_read_input_tokens=500)
    assert any("fewer input tokens than cached ones" in n for n in s.notes)


def test_detection_leaves_other_formats_alone(tmp_path):
    assert load_session(write(tmp_path, "chat.json", [{"role": "user", "content": "hi"}])).format == "openai"
    with pytest.raises(LoadError, match="not a session format"):
        load_session(write(tmp_path, "http.json", otlp(span("t", "s", 10, {"http.method": "GET"}))))


BAD = [
    ("badjson.json", otlp(span("t", "s", 10, {"gen_ai.input.messages": "[{\"role\": \"user\", "})),
     "badjson.json:30: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value: invalid JSON in the attribute"),
    ("role.json", otlp(span("t", "s", 10, {"gen_ai.input.messages": [{"role": 3, "parts": []}]})),
     "role.json:30: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.gen_ai.input.messages[0].role: expected a string"),
    ("part.json", otlp(span("t", "s", 10, {"gen_ai.input.messages": [{"role": "user", "parts": [{"type": "tool_call", "id": "x"}]}]})),
     "part.json:30: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.gen_ai.input.messages[0].parts[0].name: is required"),
    ("flat.json", otlp(span("t", "s", 10, {"gen_ai.prompt.0.role": "wizard", "gen_ai.prompt.0.content": "x"})),
     "flat.json:30: gen_ai.prompt.0.role: unknown role 'wizard'"),
]


@pytest.mark.parametrize(("name", "doc", "prefix"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_naming_file_line_field(tmp_path, name, doc, prefix):
    assert_refused_in_one_line(write(tmp_path, name, doc), prefix)


def test_spans_without_llm_input_are_one_line(tmp_path):
    path = write(tmp_path, "tool.json", otlp(span("t", "s", 10, {"gen_ai.operation.name": "execute_tool", "gen_ai.prompt": ""})))
    with pytest.raises(LoadError) as err:
        load_session(path)
    assert "no LLM call with input messages among the file's 1 span" in str(err.value)


def test_infinite_numbers_in_spans_are_not_usage(tmp_path):
    """Found by fuzzing: `1e999` (JSON for infinity) in a span's end time or usage crashed the plan."""
    from ctxviz.io.loaders import load_session

    spans = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "spanId": "s", "name": "chat", "endTimeUnixNano": 1e999, "attributes": [
        {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])}},
        {"key": "gen_ai.usage.input_tokens", "value": {"doubleValue": 1e999}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 1e999}}]}]}]}]}
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(spans))
    session = load_session(path)
    assert [m.text for m in session.messages] == ["hi"]
    assert all(m.usage is None or m.usage.input_tokens < 10**15 for m in session.messages)
