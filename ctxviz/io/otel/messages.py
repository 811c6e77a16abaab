"""One LLM call's input and output messages, from whichever attributes the instrumentation wrote:
`gen_ai.input.messages` / `gen_ai.output.messages` (JSON), the flattened `gen_ai.prompt.N.*` and
`llm.input_messages.N.message.*`, `gen_ai.prompt` as an attribute or a span event, or the Vercel AI
SDK's `ai.prompt.messages`."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from ...engine.session import Message, Part, TextPart
from ..base import Fields, locate_line, make_message, type_name
from ..source import SourceFile
from .parts import ROLE_ALIASES, indexed_calls, indexed_contents, openai_like, parts_of, split_results
from .spans import VERCEL_INPUT, Span, json_attr
from .vercel import VERCEL_OUTPUT, vercel_messages, vercel_reply

INDEXED = re.compile(r"^(gen_ai\.prompt|gen_ai\.completion|llm\.input_messages|llm\.output_messages|llm\.tools|llm\.request\.functions)\.(\d+)\.(.+)$")
MESSAGE_PREFIXES = ("gen_ai.", "llm.", "openinference.")


def input_messages(src: SourceFile, span: Span) -> list[Message]:
    a = span.attrs
    out: list[Message] = []
    if "gen_ai.system_instructions" in a:
        value, holder = json_attr(src, span, "gen_ai.system_instructions")
        text = value if isinstance(value, str) else "\n".join(p.text for p in parts_of(src, holder, "gen_ai.system_instructions", value)
                                                               if isinstance(p, TextPart))
        if text:
            out.append(make_message(0, "system", [TextPart(text)]))
    if "gen_ai.input.messages" in a:
        return out + _json_messages(src, span, "gen_ai.input.messages")
    if VERCEL_INPUT in a:
        src.tally("read {n} Vercel AI SDK provider call(s) (`ai.prompt.messages`, `ai.response.*`, `ai.usage.*`)")
        return out + vercel_messages(src, span)
    if any(k.startswith("gen_ai.prompt.") for k in a):
        return out + _flat_messages(src, span, "gen_ai.prompt")
    if any(k.startswith("llm.input_messages.") for k in a):
        return out + _flat_messages(src, span, "llm.input_messages")
    if "gen_ai.prompt" in a:
        return out + _json_messages(src, span, "gen_ai.prompt")
    for name, attrs in span.events:
        if name == "gen_ai.content.prompt" and "gen_ai.prompt" in attrs:
            return out + _json_messages(src, span, "gen_ai.prompt", attrs["gen_ai.prompt"])
    return out


def output_message(src: SourceFile, span: Span, start: int) -> Message | None:
    a = span.attrs
    messages: list[Message] = []
    if "gen_ai.output.messages" in a:
        messages = _json_messages(src, span, "gen_ai.output.messages", default_role="assistant")
    elif any(k.startswith("gen_ai.completion.") for k in a):
        messages = _flat_messages(src, span, "gen_ai.completion", default_role="assistant")
    elif any(k.startswith("llm.output_messages.") for k in a):
        messages = _flat_messages(src, span, "llm.output_messages", default_role="assistant")
    elif "gen_ai.completion" in a:
        messages = _json_messages(src, span, "gen_ai.completion", default_role="assistant")
    elif any(k in a for k in VERCEL_OUTPUT):
        messages = [vercel_reply(src, span)]
    else:
        for name, attrs in span.events:
            if name == "gen_ai.content.completion" and "gen_ai.completion" in attrs:
                messages = _json_messages(src, span, "gen_ai.completion", attrs["gen_ai.completion"], default_role="assistant")
    messages = [m for m in messages if m.parts]
    if not messages:
        return None
    if len(messages) > 1 and all(m.role == "assistant" for m in messages):
        src.notes.append(f"the call returned {len(messages):,} choices; the first is read as its reply")
    return replace(messages[0], index=start)


def _json_messages(src: SourceFile, span: Span, key: str, value: Any = None, default_role: str = "user") -> list[Message]:
    value, holder = json_attr(src, span, key, value)
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
            parts = parts_of(src, m, "parts", m.list("parts"))
        else:  # an older OpenAI-style message: {role, content, tool_calls, tool_call_id}
            parts = openai_like(m)
        out += split_results(role, parts, m.str("tool_call_id"), m.str("name"), len(out))
    return out


def _flat_messages(src: SourceFile, span: Span, prefix: str, default_role: str = "user") -> list[Message]:
    """`prefix.N.field` attributes (OpenLLMetry's `gen_ai.prompt.N.*`, OpenInference's
    `llm.input_messages.N.message.*`) gathered into one message per N."""
    by_index: dict[int, dict[str, Any]] = {}
    first_key: dict[int, str] = {}
    for key, value in span.attrs.items():
        match = INDEXED.match(key)
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
        parts += indexed_contents(fields)
        parts += indexed_calls(f, fields)
        out += split_results(role, parts, f.str("tool_call_id"), f.str("name"), len(out))
    return out
