"""LangChain message dumps: `messages_to_dict` and `dumpd` (formats.md B6).

From langchain-core (`messages/base.py`, `messages/utils.py`, `load/serializable.py`):

- `messages_to_dict(messages)` writes `[{"type": <msg.type>, "data": msg.model_dump()}]`, which
  `FileChatMessageHistory` and most chat-history stores keep (a JSON list, or one such object per
  line). `type` is `human`, `ai`, `system`, `tool`, `function`, `chat` or `remove`, or a chunk's
  class name (`AIMessageChunk`).
- `dumpd(message)` writes `{"lc": 1, "type": "constructor", "id": [..., "HumanMessage"],
  "kwargs": {...}}`: the class is the last element of `id`. A list of them, a `ChatPromptValue`
  (`kwargs.messages`) and an object whose `messages` holds either form are read too.

`data` / `kwargs`: `content` (a string or a list of strings and blocks: text, image_url, image,
tool_use, tool_result, thinking, reasoning...), `name`, `id`, and on an AI message `tool_calls`
(`[{name, args, id}]`; older messages only have OpenAI's in `additional_kwargs.tool_calls`),
`invalid_tool_calls` (read as calls: providers are sent them back) and `usage_metadata`
(`input_tokens` is the whole prompt, `input_token_details.cache_read` and `cache_creation` included,
so input = input_tokens - cache_read - cache_creation); without it, `response_metadata.token_usage`
(OpenAI spelling) or `response_metadata.usage` (Anthropic spelling). A tool message has
`tool_call_id` and `status` (`error`). Anthropic AI messages carry their calls twice (a `tool_use`
block and `tool_calls`); they are read once.
"""

from __future__ import annotations

import json
from typing import Any

from ..engine.policies.langchain.counting import TYPES, _class, _dict_type
from ..engine.session import (
    ImagePart,
    Message,
    OpaquePart,
    Part,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from .base import FieldPath, Fields, make_message, parse_usage, type_name
from .parts import anthropic_image, data_uri, tool_result_text
from .source import SourceFile

CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "system": "system",
              "developer": "system", "tool": "tool", "function": "tool"}
PROMPT_VALUES = ("ChatPromptValue", "ChatPromptValueConcrete")


def _is_message(record: Any) -> bool:
    return bool(_class(record) or _dict_type(record))


def _is_prompt_value(record: Any) -> bool:
    ids = record.get("id") if isinstance(record, dict) else None
    return (isinstance(record, dict) and record.get("lc") == 1 and isinstance(ids, list) and bool(ids)
            and ids[-1] in PROMPT_VALUES and isinstance(record.get("kwargs"), dict))


class LangChainLoader:
    name = "langchain"
    title = "LangChain messages (messages_to_dict / dumpd)"

    def sniff(self, src: SourceFile) -> bool:
        first = src.first_record()
        if src.kind == "jsonl":
            return _is_message(first)
        if isinstance(first, list):
            return bool(first) and _is_message(first[0])
        if isinstance(first, dict):
            if _is_prompt_value(first):
                return True
            messages = first.get("messages")
            return isinstance(messages, list) and bool(messages) and _is_message(messages[0])
        return False

    def load(self, src: SourceFile) -> Session:
        entries: list[tuple[FieldPath, int | None, Any]] = []
        if src.kind == "jsonl":
            entries = [((), lineno, record) for lineno, record in src.records()]
        else:
            doc = src.document
            if isinstance(doc, list):
                entries = [((i,), None, m) for i, m in enumerate(doc)]
            else:
                top = Fields(src, doc)
                path: tuple[Any, ...] = ()
                if _is_prompt_value(doc):
                    top, path = top.child("kwargs", top.dict("kwargs")), ("kwargs",)
                raw = top.list("messages", required=True)
                entries = [(path + ("messages", i), None, m) for i, m in enumerate(raw)]
        messages: list[Message] = []
        seen_ids: set[str] = set()
        model = ""
        for path, line, record in entries:
            message, record_model = self._message(src, record, path, line, len(messages), seen_ids)
            model = record_model or model
            if message is not None:
                messages.append(message)
        return Session(messages=tuple(messages), source=src.path, format=self.name, model=model)

    def _message(self, src: SourceFile, record: Any, path: FieldPath, line: int | None, index: int,
                 seen_ids: set[str]) -> tuple[Message | None, str]:
        f = Fields(src, record, path, line)
        kind = _class(record)
        if kind:
            data = f.child("kwargs", f.dict("kwargs"))
        else:
            kind = _dict_type(record)
            if not kind:
                if f.get("lc") == 1:
                    ids = f.get("id")
                    what = ids[-1] if isinstance(ids, list) and ids else "?"
                    raise f.error(f"a serialized {what!s}, not a message", "id")
                raise f.error("expected a LangChain message (`{type, data}` or a `dumpd` constructor)" if "type" not in f.record
                              else f"unknown message type {f.get('type')!r} (expected one of {', '.join(TYPES)})", "type" if "type" in f.record else None)
            data = f.child("data", f.dict("data"))
        if kind == "remove":
            src.tally("skipped {n} `RemoveMessage` marker(s) (a graph-state edit, not a message)")
            return None, ""
        role = TYPES[kind]
        if kind == "chat":
            raw_role = data.str("role", required=True)
            role = CHAT_ROLES.get(raw_role.lower(), "")
            if not role:  # LangChain accepts any role (a critic, a named agent): kept, and sent as a user turn
                role = "user"
                src.tally(f"read {{n}} `ChatMessage`(s) with the custom role {raw_role[:40]!r} as user message(s) "
                          "(LangChain counts them under that role)")
        calls = tool_calls(src, data) if role == "assistant" else []
        call_ids = {c.id for c in calls if c.id}
        parts = content_blocks(data, call_ids) + calls
        tool_call_id = data.str("tool_call_id")
        if role == "tool" and data.str("status") == "error":
            text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
            parts = [ToolResultPart(tool_call_id, text, is_error=True), *(p for p in parts if not isinstance(p, TextPart))]
        message_id = data.str("id")
        if not message_id or message_id in seen_ids:
            message_id = ""
        else:
            seen_ids.add(message_id)
        meta = data.dict("response_metadata")
        model = meta.get("model_name") or meta.get("model") or ""
        return make_message(index, role, parts, id=message_id, name=data.str("name") if role != "tool" else "",
                            tool_call_id=tool_call_id, usage=usage(data) if role == "assistant" else None, raw=record), (
            model if isinstance(model, str) else "")


def tool_calls(src: SourceFile, data: Fields) -> list[Part]:
    calls: list[Part] = []
    raw = data.list("tool_calls")
    for i, item in enumerate(raw):
        c = data.child("tool_calls", raw).child(i, item)
        args = c.get("args", {})
        calls.append(ToolCallPart(c.str("id"), c.str("name", required=True), args if isinstance(args, str) else json.dumps(args)))
    invalid = data.list("invalid_tool_calls")
    for i, item in enumerate(invalid):
        c = data.child("invalid_tool_calls", invalid).child(i, item)
        args = c.get("args")
        calls.append(ToolCallPart(c.str("id"), c.str("name") or "(unnamed)", args if isinstance(args, str) else json.dumps(args or {})))
        src.tally("read {n} `invalid_tool_calls` entr(y/ies) as tool calls (providers are sent them back as calls)")
    if calls:
        return calls
    extra = data.dict("additional_kwargs")
    if isinstance(extra.get("tool_calls"), list):  # older messages: OpenAI's own form only
        kw = data.child("additional_kwargs", extra)
        for i, item in enumerate(extra["tool_calls"]):
            c = kw.child("tool_calls", extra["tool_calls"]).child(i, item)
            fn = c.child("function", c.dict("function"))
            args = fn.get("arguments", "{}")
            calls.append(ToolCallPart(c.str("id"), fn.str("name", required=True), args if isinstance(args, str) else json.dumps(args)))
    elif isinstance(extra.get("function_call"), dict):
        fn = data.child("additional_kwargs", extra).child("function_call", extra["function_call"])
        calls.append(ToolCallPart("", fn.str("name", required=True), fn.str("arguments", "{}")))
    return calls


def content_blocks(data: Fields, call_ids: set[str]) -> list[Part]:
    value = data.get("content")
    if value is None:
        return []
    if isinstance(value, str):
        return [TextPart(value)] if value else []
    if not isinstance(value, list):
        raise data.error(f"expected a string or a list of content blocks, got {type_name(value)}", "content")
    parts: list[Part] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            if item:
                parts.append(TextPart(item))
            continue
        b = data.child("content", value).child(i, item)
        part = block(b, call_ids)
        if part is not None:
            parts.append(part)
    return parts


def block(b: Fields, call_ids: set[str]) -> Part | None:
    kind = b.str("type")
    if kind in ("text", "text-plain"):
        text = b.str("text")
        return TextPart(text) if text else None
    if kind == "image_url":
        image = b.get("image_url")
        if isinstance(image, str):
            return ImagePart(url=image)
        ref = b.child("image_url", b.dict("image_url"))
        return ImagePart(url=ref.str("url"), detail=ref.str("detail"))
    if kind == "image":
        if b.has("source"):
            return anthropic_image(b)
        mime = b.str("mime_type")
        if b.str("url"):
            return ImagePart(url=b.str("url"), media_type=mime)
        data = b.str("base64") or b.str("data")
        if data:
            return ImagePart(url=data if data.startswith("data:") else data_uri(mime or "image/png", data), media_type=mime)
        return OpaquePart("image", f"[image {b.str('file_id') or b.str('id')}]")
    if kind in ("tool_use", "tool_call"):
        if b.str("id") and b.str("id") in call_ids:
            return None  # the same call is in `tool_calls`
        args = b.get("input", b.get("args", {}))
        return ToolCallPart(b.str("id"), b.str("name", required=True), args if isinstance(args, str) else json.dumps(args))
    if kind == "tool_result":
        return ToolResultPart(b.str("tool_use_id"), tool_result_text(b), is_error=b.bool("is_error"))
    if kind == "thinking":
        return ThinkingPart(b.str("thinking"))
    if kind == "reasoning":
        text = b.str("reasoning")
        if not text and isinstance(b.get("summary"), list):
            text = "\n".join(str(s.get("text", "")) for s in b.get("summary") if isinstance(s, dict))
        return ThinkingPart(text) if text else None
    if kind == "redacted_thinking":
        return ThinkingPart("[redacted thinking]")
    text = b.get("text")
    return OpaquePart(kind or "block", text if isinstance(text, str) else json.dumps(b.record, ensure_ascii=False))


def usage(data: Fields) -> Usage | None:
    if isinstance(data.get("usage_metadata"), dict):
        u = data.child("usage_metadata", data.get("usage_metadata"))
        details = u.child("input_token_details", u.dict("input_token_details"))
        read, created = details.int("cache_read"), details.int("cache_creation")
        prompt = u.int("input_tokens")
        return Usage(input_tokens=max(prompt - read - created, 0), output_tokens=u.int("output_tokens"),
                     cache_read_input_tokens=read, cache_creation_input_tokens=created)
    meta = data.dict("response_metadata")
    if not meta:
        return None
    m = data.child("response_metadata", meta)
    for key in ("token_usage", "usage"):
        if isinstance(meta.get(key), dict):
            return parse_usage(m, key)
    return None
