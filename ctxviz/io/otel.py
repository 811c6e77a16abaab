"""OpenTelemetry GenAI and OpenInference spans: one LLM call's context as a session.

What is read (open-telemetry/semantic-conventions `docs/registry/attributes/gen-ai.md` and its
input/output messages JSON schemas; Arize-ai/openinference semantic conventions):

- Containers: an OTLP JSON export `{resourceSpans: [{scopeSpans: [{spans: [...]}]}]}` (older
  exports: `instrumentationLibrarySpans`), a JSONL file of such exports (what the Collector's file
  exporter writes) or of single spans, a JSON list of spans, one span (the Python SDK's
  `span.to_json()`: `context.trace_id`, `attributes` as an object), or one span's attribute map.
  OTLP attribute values (`stringValue`, `intValue` as a string or a number, `arrayValue`...) are
  decoded.
- Input: `gen_ai.system_instructions`, then `gen_ai.input.messages` (a JSON string of
  `[{role, parts: [{type: text, content}, {type: tool_call, id, name, arguments},
  {type: tool_call_response, id, response}, {type: reasoning, content}, blob/uri/file...]}]`);
  older instrumentations: the flattened `gen_ai.prompt.N.role/content/tool_calls.M.*` and
  `gen_ai.prompt` as a JSON string (also as the `gen_ai.content.prompt` span event); OpenInference:
  `llm.input_messages.N.message.role/content/contents.M.message_content.*/tool_calls.M.tool_call.*`.
- Output: `gen_ai.output.messages`, `gen_ai.completion.N.*`, `gen_ai.completion`,
  `llm.output_messages.N.message.*`: the first choice is the reply to the input.
- Usage: `gen_ai.usage.input_tokens` (or the older `gen_ai.usage.prompt_tokens`, or OpenInference's
  `llm.token_count.prompt`) includes cached tokens, so input = input - cache reads
  (`gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_read_input_tokens`,
  `llm.token_count.prompt_details.cache_read`) - cache writes (`...cache_creation...`,
  `...cache_write`). When the input is smaller than the cache figures, the instrumentation left
  them out, and input is read as it is (a note says so).
- Tools: `gen_ai.tool.definitions`, `llm.tools.N.tool.json_schema`, `llm.request.functions.N.*`.
- The Vercel AI SDK (`experimental_telemetry`, ai 4 to 6; ai-sdk.dev "Telemetry"): its provider-call
  spans (`ai.generateText.doGenerate`, `ai.streamText.doStream`, ...) hold what the model was sent in
  `ai.prompt.messages` (a JSON string of the SDK's own prompt: `{role, content}` with string content
  or parts `text`, `reasoning`, `image`, `file`, `tool-call` (`input`, ai 4: `args`), `tool-result`
  (`output: {type: text|json|error-text|error-json|content, value}`, ai 4: `result`)), the reply in
  `ai.response.text`, `ai.response.reasoning` and `ai.response.toolCalls`, the usage in
  `ai.usage.inputTokens` / `outputTokens` / `cachedInputTokens` (ai 4: `promptTokens` /
  `completionTokens`) and the tools in `ai.prompt.tools`. Its outer spans (`ai.generateText`) repeat
  the caller's `ai.prompt` and are not calls. Span lists as the JS SDK's `ReadableSpan` serialises
  them (`spanContext.traceId`, `endTime: [seconds, nanoseconds]`) are read too.

A trace is one conversation. A file with several traces is read for the largest one (the trace
whose largest LLM call has the most input messages), and a note gives the number of conversations.
Within the trace, the largest LLM call's input and its output message are the session: an agent's
last call holds the whole conversation the earlier calls built. The other calls' reported usage is
put on the assistant message each produced, when it is in the session (matched by its tool call
ids or its text), so the timeline shows what the provider reported for each call.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..engine.session import (
    ImagePart,
    Message,
    OpaquePart,
    Part,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
    Usage,
)
from ..engine.wording import noun
from .base import FieldPath, Fields, locate_line, make_message, type_name
from .parts import data_uri
from .source import SourceFile

ROLE_ALIASES = {"developer": "system", "human": "user", "ai": "assistant", "model": "assistant", "function": "tool"}
_INDEXED = re.compile(r"^(gen_ai\.prompt|gen_ai\.completion|llm\.input_messages|llm\.output_messages|llm\.tools|llm\.request\.functions)\.(\d+)\.(.+)$")
MESSAGE_PREFIXES = ("gen_ai.", "llm.", "openinference.")
#: The Vercel AI SDK's provider-call input (ai-sdk.dev, "Telemetry": call LLM span information).
VERCEL_INPUT = "ai.prompt.messages"
INPUT_KEYS = ("gen_ai.input.messages", "gen_ai.prompt", "gen_ai.system_instructions", VERCEL_INPUT)


@dataclass
class Span:
    """One span, its attributes decoded into a flat dict, with where each came from."""

    trace_id: str
    span_id: str
    name: str
    end: int
    attrs: dict[str, Any]
    #: attribute key -> (field path in the file, line), for error messages
    where: dict[str, tuple[FieldPath, int | None]]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    path: FieldPath = ()
    line: int | None = None


def _any_value(value: Any) -> Any:
    """An OTLP `AnyValue` (camelCase or snake_case) as a plain value; plain values pass through."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    (key, inner), = value.items()
    if key in ("stringValue", "string_value", "boolValue", "bool_value", "doubleValue", "double_value", "bytesValue", "bytes_value"):
        return inner
    if key in ("intValue", "int_value"):
        try:
            return int(inner)
        except (TypeError, ValueError, OverflowError):
            return inner
    if key in ("arrayValue", "array_value"):
        values = inner.get("values", []) if isinstance(inner, dict) else []
        return [_any_value(v) for v in values] if isinstance(values, list) else []
    if key in ("kvlistValue", "kvlist_value"):
        values = inner.get("values", []) if isinstance(inner, dict) else []
        return {kv["key"]: _any_value(kv.get("value")) for kv in values if isinstance(kv, dict) and isinstance(kv.get("key"), str)} if isinstance(values, list) else {}
    return value


def _looks_like_attributes(d: dict[str, Any]) -> bool:
    return any(isinstance(k, str) and (k.startswith(INPUT_KEYS) or k.startswith(("llm.input_messages.", "gen_ai.prompt."))) for k in d)


def _is_span(d: Any) -> bool:
    return isinstance(d, dict) and "attributes" in d and ("spanId" in d or "span_id" in d or "context" in d or "traceId" in d or "name" in d)


def _has_genai(attrs: Any) -> bool:
    if isinstance(attrs, dict):
        return _looks_like_attributes(attrs)
    if isinstance(attrs, list):
        return any(isinstance(kv, dict) and isinstance(kv.get("key"), str) and _looks_like_attributes({kv["key"]: 1}) for kv in attrs)
    return False


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _otlp_spans(doc: Any) -> Iterator[Any]:
    for rs in _list(doc.get("resourceSpans") or doc.get("resource_spans")):
        if not isinstance(rs, dict):
            continue
        for ss in _list(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or rs.get("scope_spans")):
            if isinstance(ss, dict):
                yield from (s for s in _list(ss.get("spans")) if isinstance(s, dict))


class OtelLoader:
    name = "otel"
    title = "OpenTelemetry GenAI / OpenInference spans (OTLP JSON, JSONL)"

    def sniff(self, src: SourceFile) -> bool:
        first = src.first_record()
        if isinstance(first, dict):
            if isinstance(first.get("resourceSpans") or first.get("resource_spans"), list):
                return any(_has_genai(s.get("attributes")) for s in _otlp_spans(first)) or src.kind == "jsonl"
            if _is_span(first):
                return _has_genai(first.get("attributes"))
            return src.kind != "jsonl" and _looks_like_attributes(first)
        if isinstance(first, list) and src.kind == "json":
            return any(_is_span(s) and _has_genai(s.get("attributes")) for s in first[:50])
        return False

    def load(self, src: SourceFile) -> Session:
        spans = list(self._spans(src))
        calls = [(s, self._input(src, s)) for s in spans]
        calls = [(s, msgs) for s, msgs in calls if msgs]
        if not calls:
            raise src.error(f"no LLM call with input messages among the file's {len(spans):,} {noun(len(spans), 'span')}", 1 if src.kind == "json" else None)
        traces: dict[str, list[tuple[Span, list[Message]]]] = {}
        for s, msgs in calls:
            traces.setdefault(s.trace_id, []).append((s, msgs))

        def weight(item: tuple[Span, list[Message]]) -> tuple[int, int, int]:
            s, msgs = item
            return len(msgs), sum(len(m.text) for m in msgs), s.end

        order = list(traces)  # traces in the order the file first mentions them: conversation 1, 2...
        largest = max(order, key=lambda t: max(weight(c) for c in traces[t]))
        src.conversations = len(order)
        chosen = getattr(src, "conversation", None)
        if chosen is not None:
            if not 1 <= chosen <= len(order):
                raise src.error(f"--conversation {chosen}: the file holds {len(order):,} {noun(len(order), 'conversation')} (traces; 1 to {len(order):,})")
            trace_id = order[chosen - 1]
            if len(order) > 1:
                src.notes.append(f"conversation {chosen} of {len(order):,} (trace {trace_id or '(no id)'})")
        else:
            trace_id = largest
            if len(order) > 1:
                src.notes.append(f"{len(order):,} conversations (traces) in the file; read conversation {order.index(trace_id) + 1} "
                                 f"(trace {trace_id or '(no id)'}), the largest; choose another with --conversation N")
        trace_calls = traces[trace_id]
        span, inputs = max(trace_calls, key=weight)
        if len(trace_calls) > 1:
            src.notes.append(f"read the largest of the trace's {len(trace_calls):,} LLM calls ({span.name or span.span_id or 'unnamed'}, "
                             f"{len(inputs):,} input messages) and its output")
        messages = list(inputs)
        usage = self._usage(src, span)
        output = self._output(src, span, len(messages))
        if output is not None:
            messages.append(replace(output, usage=usage))
        elif usage is not None:
            src.notes.append("the call's reported usage has no output message to go with, so it is not shown")
        messages = self._earlier_usage(src, messages, [c for c in trace_calls if c[0] is not span])
        messages = [replace(m, index=i, id=f"m{i}") for i, m in enumerate(messages)]
        model = next((str(span.attrs[k]) for k in ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "ai.response.model", "ai.model.id")
                      if isinstance(span.attrs.get(k), str)), "")
        return Session(messages=tuple(messages), source=src.path, format=self.name, model=model, tools=self._tools(span))

    # -- spans -------------------------------------------------------------------------------

    def _spans(self, src: SourceFile) -> Iterator[Span]:
        if src.kind == "jsonl":
            for lineno, record in src.records():
                yield from self._from_document(src, record, (), lineno)
        else:
            yield from self._from_document(src, src.document, (), None)

    def _from_document(self, src: SourceFile, doc: Any, path: FieldPath, line: int | None) -> Iterator[Span]:
        if isinstance(doc, dict) and ("resourceSpans" in doc or "resource_spans" in doc):
            top = Fields(src, doc, path, line)
            key = "resourceSpans" if "resourceSpans" in doc else "resource_spans"
            for i, rs in enumerate(top.list(key)):
                r = top.child(key, top.list(key)).child(i, rs)
                skey = next((k for k in ("scopeSpans", "instrumentationLibrarySpans", "scope_spans") if k in r.record), "scopeSpans")
                for j, ss in enumerate(r.list(skey)):
                    sc = r.child(skey, r.list(skey)).child(j, ss)
                    for k, span in enumerate(sc.list("spans")):
                        yield self._span(src, span, tuple(path) + (key, i, skey, j, "spans", k), line)
        elif isinstance(doc, list):
            for i, item in enumerate(doc):
                yield self._span(src, item, tuple(path) + (i,), line)
        elif isinstance(doc, dict) and _is_span(doc):
            yield self._span(src, doc, path, line)
        elif isinstance(doc, dict) and _looks_like_attributes(doc):
            yield Span("", "", "", 0, dict(doc), {k: (tuple(path) + (k,), line) for k in doc}, path=path, line=line)
        else:
            src.tally("skipped {n} record(s) that {is|are} neither spans nor OTLP exports")

    def _span(self, src: SourceFile, record: Any, path: FieldPath, line: int | None) -> Span:
        s = Fields(src, record, path, line)
        context = s.dict("context") or s.dict("spanContext")  # the Python SDK's to_json(); the JS SDK's ReadableSpan
        trace_id = s.str("traceId") or s.str("trace_id") or str(context.get("trace_id", "") or context.get("traceId", "") or "")
        span_id = s.str("spanId") or s.str("span_id") or str(context.get("span_id", "") or context.get("spanId", "") or "")
        end = s.get("endTimeUnixNano") or s.get("end_time") or s.get("endTime") or 0
        if isinstance(end, list) and len(end) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in end):
            end = end[0] * 1_000_000_000 + end[1]  # the JS SDK's HrTime: [seconds, nanoseconds]
        try:
            end_key = int(end)
        except (TypeError, ValueError, OverflowError):
            end_key = 0 if not isinstance(end, str) else sum(ord(c) for c in end)  # ISO times still sort within one file
        attrs: dict[str, Any] = {}
        where: dict[str, tuple[FieldPath, int | None]] = {}
        raw = s.get("attributes")
        if isinstance(raw, dict):
            for key, value in raw.items():
                attrs[key] = value
                where[key] = (tuple(path) + ("attributes", key), line)
        elif isinstance(raw, list):
            for i, kv in enumerate(raw):
                if isinstance(kv, dict) and isinstance(kv.get("key"), str):
                    attrs[kv["key"]] = _any_value(kv.get("value"))
                    where[kv["key"]] = (tuple(path) + ("attributes", i, "value"), line)
        elif raw is not None:
            raise s.error(f"expected a list or an object, got {type_name(raw)}", "attributes")
        events = []
        for event in s.list("events"):
            if isinstance(event, dict):
                ev_attrs = event.get("attributes")
                decoded = ({kv["key"]: _any_value(kv.get("value")) for kv in ev_attrs if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
                           if isinstance(ev_attrs, list) else dict(ev_attrs) if isinstance(ev_attrs, dict) else {})
                events.append((str(event.get("name", "")), decoded))
        return Span(trace_id, span_id, s.str("name"), end_key, attrs, where, events, path, line)

    # -- messages ----------------------------------------------------------------------------

    def _json_attr(self, src: SourceFile, span: Span, key: str, value: Any = None) -> tuple[Any, Fields | None]:
        """An attribute holding JSON (a string, or already decoded), and a Fields to report errors at it."""
        value = span.attrs.get(key) if value is None else value
        path, line = span.where.get(key, (tuple(span.path) + (key,), span.line))
        if line is None and src.kind != "jsonl":
            line = locate_line(src.text, path)
        holder = Fields(src, {key: value}, tuple(path)[:-1] if path and path[-1] == key else tuple(path), line)
        if isinstance(value, str):
            stripped = value.strip()
            if not stripped.startswith(("[", "{")):
                return value, holder
            try:
                return json.loads(stripped), holder
            except ValueError as exc:
                raise holder.error(f"invalid JSON in the attribute ({exc})") from None
        return value, holder

    def _input(self, src: SourceFile, span: Span) -> list[Message]:
        a = span.attrs
        out: list[Message] = []
        if "gen_ai.system_instructions" in a:
            value, holder = self._json_attr(src, span, "gen_ai.system_instructions")
            text = value if isinstance(value, str) else "\n".join(p.text for p in self._parts(src, holder, "gen_ai.system_instructions", value)
                                                                   if isinstance(p, TextPart))
            if text:
                out.append(make_message(0, "system", [TextPart(text)]))
        if "gen_ai.input.messages" in a:
            return out + self._json_messages(src, span, "gen_ai.input.messages")
        if VERCEL_INPUT in a:
            src.tally("read {n} Vercel AI SDK provider call(s) (`ai.prompt.messages`, `ai.response.*`, `ai.usage.*`)")
            return out + self._vercel_messages(src, span)
        if any(k.startswith("gen_ai.prompt.") for k in a):
            return out + self._flat_messages(src, span, "gen_ai.prompt")
        if any(k.startswith("llm.input_messages.") for k in a):
            return out + self._flat_messages(src, span, "llm.input_messages")
        if "gen_ai.prompt" in a:
            return out + self._json_messages(src, span, "gen_ai.prompt")
        for name, attrs in span.events:
            if name == "gen_ai.content.prompt" and "gen_ai.prompt" in attrs:
                return out + self._json_messages(src, span, "gen_ai.prompt", attrs["gen_ai.prompt"])
        return out

    def _output(self, src: SourceFile, span: Span, start: int) -> Message | None:
        a = span.attrs
        messages: list[Message] = []
        if "gen_ai.output.messages" in a:
            messages = self._json_messages(src, span, "gen_ai.output.messages", default_role="assistant")
        elif any(k.startswith("gen_ai.completion.") for k in a):
            messages = self._flat_messages(src, span, "gen_ai.completion", default_role="assistant")
        elif any(k.startswith("llm.output_messages.") for k in a):
            messages = self._flat_messages(src, span, "llm.output_messages", default_role="assistant")
        elif "gen_ai.completion" in a:
            messages = self._json_messages(src, span, "gen_ai.completion", default_role="assistant")
        elif any(k in a for k in VERCEL_OUTPUT):
            messages = [self._vercel_reply(src, span)]
        else:
            for name, attrs in span.events:
                if name == "gen_ai.content.completion" and "gen_ai.completion" in attrs:
                    messages = self._json_messages(src, span, "gen_ai.completion", attrs["gen_ai.completion"], default_role="assistant")
        messages = [m for m in messages if m.parts]
        if not messages:
            return None
        if len(messages) > 1 and all(m.role == "assistant" for m in messages):
            src.notes.append(f"the call returned {len(messages):,} choices; the first is read as its reply")
        return replace(messages[0], index=start)

    def _json_messages(self, src: SourceFile, span: Span, key: str, value: Any = None, default_role: str = "user") -> list[Message]:
        value, holder = self._json_attr(src, span, key, value)
        assert holder is not None
        if isinstance(value, str):
            return [make_message(0, default_role, [TextPart(value)])] if value else []
        if isinstance(value, dict):  # `{"text": ..., "finish_reason": ...}` or one message
            if "role" in value or "parts" in value:
                value = [value]
            else:
                text = value.get("text", value.get("content"))
                return [make_message(0, default_role, [TextPart(text)])] if isinstance(text, str) and text else []
        if not isinstance(value, list):
            raise holder.error(f"expected a list of messages, got {type_name(value)}", key)
        out: list[Message] = []
        for i, item in enumerate(value):
            m = holder.child(key, value).child(i, item)
            role = m.role(aliases=ROLE_ALIASES) if m.has("role") or default_role != "assistant" else "assistant"
            if m.has("parts"):
                parts = self._parts(src, m, "parts", m.list("parts"))
            else:  # an older OpenAI-style message: {role, content, tool_calls, tool_call_id}
                parts = self._openai_like(m)
            out += _split_results(role, parts, m.str("tool_call_id"), m.str("name"), len(out))
        return out

    # -- the Vercel AI SDK ----------------------------------------------------------------------

    def _vercel_messages(self, src: SourceFile, span: Span) -> list[Message]:
        """`ai.prompt.messages`: the SDK's prompt as the provider was sent it (system text first)."""
        value, holder = self._json_attr(src, span, VERCEL_INPUT)
        assert holder is not None
        if not isinstance(value, list):
            raise holder.error(f"expected a list of messages, got {type_name(value)}", VERCEL_INPUT)
        out: list[Message] = []
        for i, item in enumerate(value):
            m = holder.child(VERCEL_INPUT, value).child(i, item)
            role = m.role(aliases=ROLE_ALIASES)
            content = m.get("content")
            if isinstance(content, str):
                parts: list[Part] = [TextPart(content)] if content else []
            elif isinstance(content, list):
                parts = [_vercel_part(m.child("content", content).child(j, block)) for j, block in enumerate(content)]
            elif content is None:
                parts = []
            else:
                raise m.error(f"expected a string or a list of parts, got {type_name(content)}", "content")
            out += _split_results(role, parts, "", "", len(out))
        return out

    def _vercel_reply(self, src: SourceFile, span: Span) -> Message:
        """`ai.response.reasoning`, `ai.response.text` and `ai.response.toolCalls` as one assistant turn."""
        a = span.attrs
        parts: list[Part] = []
        reasoning = a.get("ai.response.reasoning")
        if isinstance(reasoning, str) and reasoning:
            parts.append(ThinkingPart(reasoning))
        text = a.get("ai.response.text")
        if isinstance(text, str) and text:
            parts.append(TextPart(text))
        if "ai.response.toolCalls" in a:
            calls, holder = self._json_attr(src, span, "ai.response.toolCalls")
            assert holder is not None
            if not isinstance(calls, list):
                raise holder.error(f"expected a list of tool calls, got {type_name(calls)}", "ai.response.toolCalls")
            for i, call in enumerate(calls):
                parts.append(_vercel_call(holder.child("ai.response.toolCalls", calls).child(i, call)))
        return make_message(0, "assistant", parts)

    def _openai_like(self, m: Fields) -> list[Part]:
        content = m.get("content")
        parts: list[Part] = []
        if isinstance(content, str):
            if content:
                parts.append(TextPart(content))
        elif isinstance(content, list):
            parts += self._parts(m.src, m, "content", content)
        elif content is not None:
            parts.append(TextPart(json.dumps(content, ensure_ascii=False)))
        calls = m.list("tool_calls")
        for i, call in enumerate(calls):
            c = m.child("tool_calls", calls).child(i, call)
            fn = c.child("function", c.dict("function")) if c.has("function") else c
            args = fn.get("arguments", {})
            parts.append(ToolCallPart(c.str("id"), fn.str("name", required=True), args if isinstance(args, str) else json.dumps(args)))
        return parts

    def _parts(self, src: SourceFile, holder: Fields, key: str, value: Any) -> list[Part]:
        if not isinstance(value, list):
            raise holder.error(f"expected a list of parts, got {type_name(value)}", key)
        parts: list[Part] = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                parts.append(TextPart(item))
                continue
            p = holder.child(key, value).child(i, item)
            kind = p.str("type", required=True)
            if kind == "text":
                text = p.str("content") or p.str("text")
                if text:
                    parts.append(TextPart(text))
            elif kind == "tool_call":
                args = p.get("arguments", {})
                parts.append(ToolCallPart(p.str("id"), p.str("name", required=True), args if isinstance(args, str) else json.dumps(args)))
            elif kind == "tool_call_response":
                response = p.get("response", p.get("result"))
                text = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)
                parts.append(ToolResultPart(p.str("id").strip(), text))
            elif kind in ("reasoning", "thinking"):
                parts.append(ThinkingPart(p.str("content") or p.str("text")))
            elif kind in ("blob", "uri", "file", "image", "image_url"):
                parts.append(_media(p, kind))
            else:
                text = p.get("content")
                parts.append(OpaquePart(kind, text if isinstance(text, str) else json.dumps(item, ensure_ascii=False)))
        return parts

    def _flat_messages(self, src: SourceFile, span: Span, prefix: str, default_role: str = "user") -> list[Message]:
        """`prefix.N.field` attributes (OpenLLMetry's `gen_ai.prompt.N.*`, OpenInference's
        `llm.input_messages.N.message.*`) gathered into one message per N."""
        by_index: dict[int, dict[str, Any]] = {}
        first_key: dict[int, str] = {}
        for key, value in span.attrs.items():
            match = _INDEXED.match(key)
            if not match or match.group(1) != prefix:
                continue
            n, rest = int(match.group(2)), match.group(3)
            if rest.startswith("message."):
                rest = rest[len("message."):]
            by_index.setdefault(n, {})[rest] = value
            first_key.setdefault(n, key)
        out: list[Message] = []
        for n in sorted(by_index):
            fields = by_index[n]
            path, line = span.where.get(first_key[n], (span.path, span.line))
            if line is None and src.kind != "jsonl":
                line = locate_line(src.text, path)
            f = Fields(src, fields, (f"{prefix}.{n}",), line)
            role = f.role(aliases=ROLE_ALIASES) if f.has("role") else default_role
            parts: list[Part] = []
            content = fields.get("content")
            if isinstance(content, str) and content:
                parts.append(TextPart(content))
            elif content is not None and not isinstance(content, str):
                parts.append(TextPart(json.dumps(content, ensure_ascii=False)))
            parts += _indexed_contents(fields)
            parts += _indexed_calls(f, fields)
            out += _split_results(role, parts, f.str("tool_call_id"), f.str("name"), len(out))
        return out

    # -- usage and tools ---------------------------------------------------------------------

    def _usage(self, src: SourceFile, span: Span) -> Usage | None:
        a = span.attrs

        def number(*keys: str) -> int | None:
            for key in keys:
                value = a.get(key)
                if isinstance(value, bool):
                    continue
                if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
                    return int(value)
                if isinstance(value, str) and value.strip().isdigit():
                    return int(value)
            return None

        prompt = number("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "llm.usage.prompt_tokens",
                        "ai.usage.inputTokens", "ai.usage.promptTokens")
        output = number("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion", "llm.usage.completion_tokens",
                        "ai.usage.outputTokens", "ai.usage.completionTokens")
        # The AI SDK's inputTokens include the cached ones, as OpenTelemetry's input_tokens do.
        read = number("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
                      "llm.token_count.prompt_details.cache_read", "ai.usage.inputTokenDetails.cacheReadTokens",
                      "ai.usage.cachedInputTokens") or 0
        write = number("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens",
                       "llm.token_count.prompt_details.cache_write", "ai.usage.inputTokenDetails.cacheWriteTokens") or 0
        if prompt is None and output is None:
            return None
        prompt = prompt or 0
        if prompt >= read + write:
            prompt -= read + write
        else:
            src.tally("{n} call(s) {reports|report} fewer input tokens than cached ones: their input is read as excluding the cache")
        return Usage(input_tokens=prompt, output_tokens=output or 0, cache_read_input_tokens=read, cache_creation_input_tokens=write)

    def _earlier_usage(self, src: SourceFile, messages: list[Message], others: list[tuple[Span, list[Message]]]) -> list[Message]:
        """Put each earlier call's usage on the assistant message it produced, when the session has it."""
        placed = 0
        for span, _inputs in sorted(others, key=lambda c: c[0].end):
            usage = self._usage(src, span)
            reply = self._output(src, span, 0) if usage is not None else None
            if reply is None:
                continue
            ids = {c.id for c in reply.tool_calls if c.id}
            for i, m in enumerate(messages):
                if m.role != "assistant" or m.usage is not None:
                    continue
                if (ids and ids & {c.id for c in m.tool_calls}) or (not ids and reply.text and m.text == reply.text):
                    messages[i] = replace(m, usage=usage)
                    placed += 1
                    break
        if placed:
            src.notes.append(f"reported usage of {placed:,} earlier {noun(placed, 'call')} in the trace put on the assistant message each produced")
        return messages

    def _tools(self, span: Span) -> tuple[ToolDefinition, ...]:
        a = span.attrs
        out: list[ToolDefinition] = []
        raw = a.get("gen_ai.tool.definitions")
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                raw = None
        for item in raw if isinstance(raw, list) else []:
            out += _tool(item)
        for item in _list(a.get("ai.prompt.tools")):  # the Vercel AI SDK: one JSON string per tool
            try:
                out += _tool(json.loads(item) if isinstance(item, str) else item)
            except ValueError:
                continue
        indexed: dict[tuple[str, int], dict[str, Any]] = {}
        for key, value in a.items():
            match = _INDEXED.match(key)
            if match and match.group(1) in ("llm.tools", "llm.request.functions"):
                indexed.setdefault((match.group(1), int(match.group(2))), {})[match.group(3)] = value
        for (_prefix, _n), fields in sorted(indexed.items()):
            schema = fields.get("tool.json_schema")
            if isinstance(schema, str):
                try:
                    out += _tool(json.loads(schema))
                except ValueError:
                    continue
            elif isinstance(fields.get("name"), str):
                params = fields.get("parameters")
                if isinstance(params, str):
                    try:
                        params = json.loads(params)
                    except ValueError:
                        params = {}
                out.append(ToolDefinition(fields["name"], str(fields.get("description") or ""), params if isinstance(params, dict) else {}))
        return tuple(out)


def _tool(item: Any) -> list[ToolDefinition]:
    if not isinstance(item, dict):
        return []
    fn = item.get("function") if isinstance(item.get("function"), dict) else item
    name = fn.get("name")
    if not isinstance(name, str):
        return []
    params = fn.get("parameters", fn.get("input_schema", fn.get("inputSchema", {})))
    return [ToolDefinition(name, str(fn.get("description") or ""), params if isinstance(params, dict) else {})]


def _media(p: Fields, kind: str) -> Part:
    mime = p.str("mime_type") or p.str("media_type")
    modality = p.str("modality")
    if kind == "blob":
        data = p.str("content")
        if modality == "image" or mime.startswith("image/"):
            return ImagePart(url=data_uri(mime or "image/png", data), media_type=mime)
        return OpaquePart("blob", f"[{mime or modality or 'binary'} data, {len(data) * 3 // 4:,} bytes]")
    if kind == "uri" or kind in ("image", "image_url"):
        url = p.str("uri") or p.str("url")
        if not url and isinstance(p.get("image_url"), dict):
            url = str(p.get("image_url").get("url", ""))
        if modality in ("", "image") or mime.startswith("image/"):
            return ImagePart(url=url, media_type=mime)
        return OpaquePart(kind, f"[{modality}: {url}]")
    return OpaquePart("file", f"[file: {p.str('file_id')}]")


def _indexed_contents(fields: dict[str, Any]) -> list[Part]:
    """OpenInference `contents.M.message_content.type/text/image.image.url`."""
    items: dict[int, dict[str, Any]] = {}
    for key, value in fields.items():
        m = re.match(r"^contents\.(\d+)\.message_content\.(.+)$", key)
        if m:
            items.setdefault(int(m.group(1)), {})[m.group(2)] = value
    parts: list[Part] = []
    for n in sorted(items):
        c = items[n]
        if c.get("type") == "image" or "image.image.url" in c:
            parts.append(ImagePart(url=str(c.get("image.image.url", ""))))
        elif isinstance(c.get("text"), str) and c["text"]:
            parts.append(TextPart(c["text"]))
    return parts


def _indexed_calls(f: Fields, fields: dict[str, Any]) -> list[Part]:
    """`tool_calls.M.id/name/arguments` (OpenLLMetry) or `tool_calls.M.tool_call.id/function.name/
    function.arguments` (OpenInference)."""
    calls: dict[int, dict[str, Any]] = {}
    for key, value in fields.items():
        m = re.match(r"^tool_calls\.(\d+)\.(?:tool_call\.)?(.+)$", key)
        if m:
            calls.setdefault(int(m.group(1)), {})[m.group(2).removeprefix("function.")] = value
    parts: list[Part] = []
    for n in sorted(calls):
        c = calls[n]
        name = c.get("name")
        if not isinstance(name, str) or not name:
            raise f.error("is required", f"tool_calls.{n}.name")
        args = c.get("arguments", "{}")
        parts.append(ToolCallPart(str(c.get("id") or ""), name, args if isinstance(args, str) else json.dumps(args)))
    return parts


def _split_results(role: str, parts: list[Part], tool_call_id: str, name: str, start: int) -> list[Message]:
    """A message as ctxviz's messages: each tool call response becomes its own `tool` message."""
    results = [p for p in parts if isinstance(p, ToolResultPart)]
    rest = [p for p in parts if not isinstance(p, ToolResultPart)]
    if role == "tool" and not results:
        text = "\n".join(p.text for p in rest if isinstance(p, TextPart))
        return [make_message(start, "tool", [TextPart(text)] if text else [], tool_call_id=tool_call_id, name=name)]
    out = [make_message(start + k, "tool", [ToolResultPart(r.tool_call_id or tool_call_id, r.text, is_error=True)] if r.is_error
                        else [TextPart(r.text)] if r.text else [], tool_call_id=r.tool_call_id or tool_call_id)
           for k, r in enumerate(results)]
    if rest or not results:
        out.append(make_message(start + len(out), role if role != "tool" else "user", rest, name=name if role != "tool" else ""))
    return out


#: The attributes of a Vercel AI SDK call's reply.
VERCEL_OUTPUT = ("ai.response.text", "ai.response.toolCalls", "ai.response.reasoning")


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _vercel_call(c: Fields) -> ToolCallPart:
    """A tool call: `{toolCallId, toolName, input}` (ai 5 and 6; a JSON string or an object), ai 4's `args`."""
    args = c.get("input", c.get("args", {}))
    return ToolCallPart(c.str("toolCallId"), c.str("toolName", required=True), _json_text(args if args is not None else {}))


def _vercel_result(p: Fields) -> ToolResultPart:
    """A tool result: ai 5 and 6 `output: {type, value}` (text, json, error-text, error-json, content,
    execution-denied), ai 4 `result` (any value) with `isError`."""
    output = p.get("output")
    if isinstance(output, dict) and isinstance(output.get("type"), str):
        kind, value = output["type"], output.get("value")
        if kind == "content" and isinstance(value, list):
            text = "\n".join(str(v.get("text", "")) if isinstance(v, dict) and v.get("type") == "text" else _json_text(v) for v in value)
        elif kind == "execution-denied":
            text = "execution denied" + (f": {output['reason']}" if isinstance(output.get("reason"), str) else "")
        else:
            text = _json_text(value if value is not None else "")
        return ToolResultPart(p.str("toolCallId"), text, is_error=kind.startswith("error") or kind == "execution-denied")
    result = p.get("result", output)
    return ToolResultPart(p.str("toolCallId"), _json_text(result if result is not None else ""), is_error=p.get("isError") is True)


def _vercel_part(p: Fields) -> Part:
    """One part of a message in `ai.prompt.messages`."""
    kind = p.str("type", required=True)
    if kind == "text":
        return TextPart(p.str("text"))
    if kind == "reasoning":
        return ThinkingPart(p.str("text"))
    if kind == "tool-call":
        return _vercel_call(p)
    if kind == "tool-result":
        return _vercel_result(p)
    if kind in ("image", "file"):
        data = p.get("image", p.get("data"))
        mime = p.str("mediaType") or p.str("mimeType")
        if isinstance(data, str) and (kind == "image" or mime.startswith("image/")):
            url = data if data.startswith(("http://", "https://", "data:")) else data_uri(mime or "image/png", data)
            return ImagePart(url=url, media_type=mime)
        return OpaquePart(kind, f"[{mime or kind}: {p.str('filename') or (data if isinstance(data, str) and data.startswith('http') else 'inline data')}]")
    return OpaquePart(kind, json.dumps(p.record, ensure_ascii=False))
