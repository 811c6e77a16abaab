"""The Vercel AI SDK's provider-call spans (`experimental_telemetry`, ai 4 to 6): the prompt in
`ai.prompt.messages` as the SDK writes it, and the reply from `ai.response.*`."""

from __future__ import annotations

import json
from typing import Any

from ...engine.session import ImagePart, Message, OpaquePart, Part, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from ..base import Fields, make_message, type_name
from ..parts import data_uri
from ..source import SourceFile
from .parts import ROLE_ALIASES, split_results
from .spans import VERCEL_INPUT, Span, json_attr

#: The attributes of a Vercel AI SDK call's reply.
VERCEL_OUTPUT = ("ai.response.text", "ai.response.toolCalls", "ai.response.reasoning")


def vercel_messages(src: SourceFile, span: Span) -> list[Message]:
    """`ai.prompt.messages`: the SDK's prompt as the provider was sent it (system text first)."""
    value, holder = json_attr(src, span, VERCEL_INPUT)
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
        out += split_results(role, parts, "", "", len(out))
    return out


def vercel_reply(src: SourceFile, span: Span) -> Message:
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
        calls, holder = json_attr(src, span, "ai.response.toolCalls")
        assert holder is not None
        if not isinstance(calls, list):
            raise holder.error(f"expected a list of tool calls, got {type_name(calls)}", "ai.response.toolCalls")
        for i, call in enumerate(calls):
            parts.append(_vercel_call(holder.child("ai.response.toolCalls", calls).child(i, call)))
    return make_message(0, "assistant", parts)


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
