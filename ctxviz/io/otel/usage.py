"""What a span reports beside its messages: the call's usage (input without the cached tokens),
the earlier calls' usage put on the messages they produced, and the tool definitions sent."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

from ...engine.session import Message, ToolDefinition, Usage
from ...engine.wording import noun
from ..source import SourceFile
from .messages import INDEXED, output_message
from .spans import Span, list_of


def usage_of(src: SourceFile, span: Span) -> Usage | None:
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


def earlier_usage(src: SourceFile, messages: list[Message], others: list[tuple[Span, list[Message]]]) -> list[Message]:
    """Put each earlier call's usage on the assistant message it produced, when the session has it."""
    placed = 0
    for span, _inputs in sorted(others, key=lambda c: c[0].end):
        usage = usage_of(src, span)
        reply = output_message(src, span, 0) if usage is not None else None
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


def tools_of(span: Span) -> tuple[ToolDefinition, ...]:
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
    for item in list_of(a.get("ai.prompt.tools")):  # the Vercel AI SDK: one JSON string per tool
        try:
            out += _tool(json.loads(item) if isinstance(item, str) else item)
        except ValueError:
            continue
    indexed: dict[tuple[str, int], dict[str, Any]] = {}
    for key, value in a.items():
        match = INDEXED.match(key)
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

