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

from dataclasses import replace

from ...engine.session import Message, Session
from ...engine.wording import noun
from ..source import SourceFile
from .messages import input_messages, output_message
from .spans import Span, has_genai, is_span, looks_like_attributes, otlp_spans, spans_of
from .usage import earlier_usage, tools_of, usage_of

__all__ = ["OtelLoader"]


class OtelLoader:
    name = "otel"
    title = "OpenTelemetry GenAI / OpenInference spans (OTLP JSON, JSONL)"

    def sniff(self, src: SourceFile) -> bool:
        first = src.first_record()
        if isinstance(first, dict):
            if isinstance(first.get("resourceSpans") or first.get("resource_spans"), list):
                return any(has_genai(s.get("attributes")) for s in otlp_spans(first)) or src.kind == "jsonl"
            if is_span(first):
                return has_genai(first.get("attributes"))
            return src.kind != "jsonl" and looks_like_attributes(first)
        if isinstance(first, list) and src.kind == "json":
            return any(is_span(s) and has_genai(s.get("attributes")) for s in first[:50])
        return False

    def load(self, src: SourceFile) -> Session:
        spans = list(spans_of(src))
        calls = [(s, input_messages(src, s)) for s in spans]
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
        usage = usage_of(src, span)
        output = output_message(src, span, len(messages))
        if output is not None:
            messages.append(replace(output, usage=usage))
        elif usage is not None:
            src.notes.append("the call's reported usage has no output message to go with, so it is not shown")
        messages = earlier_usage(src, messages, [c for c in trace_calls if c[0] is not span])
        messages = [replace(m, index=i, id=f"m{i}") for i, m in enumerate(messages)]
        model = next((str(span.attrs[k]) for k in ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "ai.response.model", "ai.model.id")
                      if isinstance(span.attrs.get(k), str)), "")
        return Session(messages=tuple(messages), source=src.path, format=self.name, model=model, tools=tools_of(span))
