"""The parts of one message in a span, in each convention's spelling: OpenTelemetry's `parts`
(text, tool_call, tool_call_response, reasoning, blob/uri/file), the older OpenAI-style
`{role, content, tool_calls}`, OpenInference's indexed `contents.M.*` and `tool_calls.M.*`, and each
tool call response made a `tool` message of its own, as ctxviz's messages are."""

from __future__ import annotations

import json
import re
from typing import Any

from ...engine.session import ImagePart, Message, OpaquePart, Part, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from ..base import Fields, make_message, type_name
from ..parts import data_uri
from ..source import SourceFile

ROLE_ALIASES = {"developer": "system", "human": "user", "ai": "assistant", "model": "assistant", "function": "tool"}


def openai_like(m: Fields) -> list[Part]:
    content = m.get("content")
    parts: list[Part] = []
    if isinstance(content, str):
        if content:
            parts.append(TextPart(content))
    elif isinstance(content, list):
        parts += parts_of(m.src, m, "content", content)
    elif content is not None:
        parts.append(TextPart(json.dumps(content, ensure_ascii=False)))
    calls = m.list("tool_calls")
    for i, call in enumerate(calls):
        c = m.child("tool_calls", calls).child(i, call)
        fn = c.child("function", c.dict("function")) if c.has("function") else c
        args = fn.get("arguments", {})
        parts.append(ToolCallPart(c.str("id"), fn.str("name", required=True), args if isinstance(args, str) else json.dumps(args)))
    return parts


def parts_of(src: SourceFile, holder: Fields, key: str, value: Any) -> list[Part]:
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


def indexed_contents(fields: dict[str, Any]) -> list[Part]:
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


def indexed_calls(f: Fields, fields: dict[str, Any]) -> list[Part]:
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


def split_results(role: str, parts: list[Part], tool_call_id: str, name: str, start: int) -> list[Message]:
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

