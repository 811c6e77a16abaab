"""OpenAI Responses API (formats.md B2): a request `{model, instructions, input, tools}`, a response
`{object: "response", output, usage}`, or a bare list of items; JSON, or JSONL of any of these.

Items become messages the way the API's own history reads: consecutive model-side items (assistant
text, reasoning, tool calls, hosted-tool items) are one assistant turn, as one response's `output`
is; each tool output is a `tool` message paired by `call_id`; user, system and developer messages
stand alone (developer is a system message). Items ctxviz does not model (hosted tools, `compaction`,
`item_reference`, types newer than this file) are kept as opaque parts, never refused.

`usage.input_tokens` counts the cached tokens too; ctxviz's `Usage` keeps them apart, so input is
`input_tokens - input_tokens_details.cached_tokens` and cache_read is the cached tokens.

The item reader is shared with Codex rollouts (`codex.py`), whose `response_item` lines are these items.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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
from .base import Fields, make_message, type_name
from .parts import opaque_text, openai_content
from .source import SourceFile

ROLE_ALIASES = {"developer": "system"}
MESSAGE_ROLES = ("system", "user", "assistant")
#: Item types the Responses API documents (B2), for detection; any other type still loads (opaque).
ITEM_TYPES = frozenset((
    "message", "function_call", "function_call_output", "reasoning", "custom_tool_call", "custom_tool_call_output",
    "web_search_call", "file_search_call", "computer_call", "computer_call_output", "local_shell_call",
    "local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output",
    "mcp_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "image_generation_call",
    "code_interpreter_call", "compaction", "item_reference",
))
#: Content part types only the Responses API uses (Chat Completions says `text`, `image_url`).
RESPONSES_PART_TYPES = frozenset(("input_text", "output_text", "input_image", "input_file"))
RESPONSE_OBJECTS = ("response", "response.compaction")
#: Request keys that mark a top-level `input` as a Responses request (an embeddings request has `input` too).
REQUEST_KEYS = ("instructions", "tools", "previous_response_id", "reasoning", "conversation")


@dataclass
class Draft:
    """A message being assembled from items (items of one assistant turn are added one by one)."""

    role: str
    parts: list[Part]
    id: str = ""
    timestamp: str = ""
    tool_call_id: str = ""
    raw: list[Any] = field(default_factory=list)
    usage: Usage | None = None


def item_type(f: Fields) -> str:
    """An item's `type`; an item with a `role` and no type is a message (the API's short form)."""
    if f.get("type") is None and f.has("role"):
        return "message"
    return f.str("type", required=True)


class ItemReader:
    """Responses items, in order, into messages (see the module docstring for the grouping)."""

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        self.drafts: list[Draft] = []
        #: The assistant turn later model-side items extend; closed by any other message.
        self.open: Draft | None = None
        #: The assistant turn most recently created or extended (what a usage report belongs to).
        self.latest_model: Draft | None = None
        self._ids: set[str] = set()

    def close(self) -> None:
        self.open = None

    def new(self, role: str, parts: list[Part], id: str = "", timestamp: str = "", raw: Any = None, tool_call_id: str = "") -> Draft:
        if id in self._ids:
            id = ""
        if id:
            self._ids.add(id)
        draft = Draft(role, parts, id, timestamp, tool_call_id, [raw] if raw is not None else [])
        self.drafts.append(draft)
        return draft

    def model_side(self, parts: list[Part], id: str = "", timestamp: str = "", raw: Any = None) -> Draft:
        if self.open is None:
            self.open = self.new("assistant", parts, id, timestamp, raw)
        else:
            self.open.parts.extend(parts)
            if raw is not None:
                self.open.raw.append(raw)
        self.latest_model = self.open
        return self.open

    def add(self, f: Fields, id: str = "", timestamp: str = "") -> Draft | None:
        """One item; returns the message it went into, or None when it carries nothing to send."""
        kind = item_type(f)
        raw = f.record
        id = id or (f.get("id") if isinstance(f.get("id"), str) else "")
        if kind == "message":
            role = f.role(aliases=ROLE_ALIASES, allowed=MESSAGE_ROLES)
            parts = item_content(f)
            if role == "assistant":
                return self.model_side(parts, id, timestamp, raw)
            self.close()
            return self.new(role, parts, id, timestamp, raw)
        if kind in ("function_call", "custom_tool_call") or (kind.endswith("_call") and isinstance(f.get("call_id"), str)):
            return self.model_side([tool_call(f, kind)], id, timestamp, raw)
        if kind.endswith("_call_output") and (f.has("call_id") or kind in ("function_call_output", "custom_tool_call_output")):
            call_id = f.str("call_id", required=True)
            text, is_error = output_text(f)
            self.close()
            return self.new("tool", [ToolResultPart(call_id, text, is_error)], id, timestamp, raw, tool_call_id=call_id)
        if kind == "reasoning":
            part = reasoning_part(f)
            if part is None:
                self.src.tally("skipped {n} `reasoning` item(s) with neither summary text nor encrypted content")
                return None
            return self.model_side([part], id, timestamp, raw)
        if kind in ("compaction", "compaction_summary"):
            return self.model_side([compaction_part(f)], id, timestamp, raw)
        if kind == "item_reference":
            self.src.tally("kept {n} `item_reference` item(s) as a placeholder: the item they name is stored by the API, not in the file")
            return self.model_side([OpaquePart(kind, f"[item_reference: {f.str('id') or 'no id'}]")], "", timestamp, raw)
        self.src.tally(f"kept {{n}} `{kind}` item(s) ctxviz does not model as opaque text (counted and shown as-is)")
        return self.model_side([OpaquePart(kind, opaque_text(raw))], id, timestamp, raw)

    def messages(self) -> list[Message]:
        return [
            make_message(i, d.role, d.parts, id=d.id, tool_call_id=d.tool_call_id, timestamp=d.timestamp, usage=d.usage,
                         raw=d.raw[0] if len(d.raw) == 1 else d.raw)
            for i, d in enumerate(self.drafts)
        ]


def item_content(f: Fields, key: str = "content") -> list[Part]:
    """A message's content: a string, or input_text/output_text/input_image/input_file/refusal parts."""
    return openai_content(f, key, content_part)


def content_part(p: Fields) -> Part:
    kind = p.str("type", required=True)
    if kind in ("input_text", "output_text", "text", "summary_text", "reasoning_text"):
        return TextPart(p.str("text"))
    if kind == "refusal":
        return TextPart(p.str("refusal"))
    if kind == "input_image":
        url = p.get("image_url")
        if isinstance(url, dict):  # a Chat-style {url, detail} some clients send
            return ImagePart(url=p.child("image_url", url).str("url"), detail=p.str("detail"))
        return ImagePart(url=p.str("image_url") or p.str("file_id"), detail=p.str("detail"))
    if kind == "input_file":
        name = p.str("filename") or p.str("file_id") or p.str("file_url") or "attached"
        data = p.str("file_data")
        return TextPart(f"[file: {name}, {len(data):,} characters inline]" if data else f"[file: {name}]")
    if kind == "input_audio":
        return TextPart("[audio]")
    p.src.tally(f"kept {{n}} `{kind}` content part(s) ctxviz does not model as opaque text (counted and shown as-is)")
    return OpaquePart(kind, opaque_text(p.record))


def tool_call(f: Fields, kind: str) -> ToolCallPart:
    """function_call (JSON arguments), custom_tool_call (free-form `input`) or another `*_call` with a call_id."""
    call_id = f.str("call_id") or f.str("id")
    if kind == "function_call":
        args = f.get("arguments")
        return ToolCallPart(call_id, f.str("name", required=True), args if isinstance(args, str) else json.dumps(args if args is not None else {}))
    if kind == "custom_tool_call":
        return ToolCallPart(call_id, f.str("name", required=True), f.str("input"))
    # local_shell_call, computer_call, shell_call, apply_patch_call: the action is what the model sent.
    payload = next((f.get(k) for k in ("action", "arguments", "input", "operation") if f.get(k) is not None), None)
    if payload is None:
        payload = {k: v for k, v in f.record.items() if k not in ("type", "id", "call_id", "status")}
    return ToolCallPart(call_id, f.str("name") or kind.removesuffix("_call"), payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False))


def output_text(f: Fields, key: str = "output") -> tuple[str, bool]:
    """A tool output as (text, is_error): a string, content parts (text joined, an image as
    `[image]`), or Codex's older `{content, success}` object."""
    value = f.get(key)
    if value is None:
        return "", False
    if isinstance(value, str):
        return value, False
    if isinstance(value, list):
        texts = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                texts.append(item["text"])
            elif isinstance(item, dict) and item.get("type") in ("input_image", "computer_screenshot", "image"):
                f.src.tally("kept {n} image(s) inside tool outputs as an `[image]` placeholder")
                texts.append("[image]")
            else:
                texts.append(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False))
        return "\n".join(texts), False
    if isinstance(value, dict):
        o = f.child(key, value)
        if o.has("content") and isinstance(value.get("content"), str):
            return o.str("content"), value.get("success") is False
        if value.get("type") in ("input_image", "computer_screenshot"):
            f.src.tally("kept {n} image(s) inside tool outputs as an `[image]` placeholder")
            return "[image]", False
        return json.dumps(value, ensure_ascii=False), False
    return json.dumps(value), False


def _texts(f: Fields, key: str) -> list[str]:
    value = f.get(key)
    if not isinstance(value, list):
        return []
    out = []
    for i, item in enumerate(value):
        if isinstance(item, dict):
            text = f.child(key, value).child(i, item).str("text")
            if text:
                out.append(text)
        elif isinstance(item, str) and item:
            out.append(item)
    return out


def reasoning_part(f: Fields) -> Part | None:
    """The summary text (or raw reasoning text, from open models) as thinking; encrypted reasoning
    as an opaque block saying how large it is."""
    text = "\n\n".join(_texts(f, "summary") or _texts(f, "content"))
    if text:
        return ThinkingPart(text)
    encrypted = f.str("encrypted_content")
    if encrypted:
        return OpaquePart("reasoning", f"[encrypted reasoning: {len(encrypted):,} characters]")
    return None


def compaction_part(f: Fields) -> OpaquePart:
    encrypted = f.str("encrypted_content")
    return OpaquePart("compaction", f"[compaction: encrypted, {len(encrypted):,} characters]")


def responses_usage(u: Fields, input_key: str = "input_tokens", cached: int | None = None) -> Usage:
    """OpenAI usage (input counts the cached tokens too) as ctxviz's Usage (input without them)."""
    if cached is None:
        details = u.dict("input_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details.get("cached_tokens"), int) else 0
    total_input = u.int(input_key)
    cached = max(0, min(cached or 0, total_input))
    return Usage(input_tokens=total_input - cached, output_tokens=u.int("output_tokens"), cache_read_input_tokens=cached)


def tool_definitions(f: Fields) -> tuple[ToolDefinition, ...]:
    """`tools`: flat function tools `{type: function, name, description, parameters}` (Chat's nested
    form too), custom tools by name, hosted tools (web_search, mcp, ...) by their type."""
    raw = f.list("tools")
    out = []
    for i, item in enumerate(raw):
        t = f.child("tools", raw).child(i, item)
        if isinstance(t.get("function"), dict):
            t = t.child("function", t.get("function"))
        kind = t.str("type")
        if kind in ("", "function") or t.has("name"):
            params = t.get("parameters")
            if params is None:
                params = {"format": t.get("format")} if t.get("format") is not None else {}
            if not isinstance(params, dict):
                raise t.error(f"expected an object, got {type_name(params)}", "parameters")
            out.append(ToolDefinition(t.str("name", required=True), t.str("description"), params))
        else:
            f.src.tally("read {n} hosted tool definition(s) (web search, MCP, ...) by their type and settings; the API's own text for them is not published")
            out.append(ToolDefinition(kind, "", {k: v for k, v in t.record.items() if k != "type"}))
    return tuple(out)


def instructions_text(f: Fields) -> str:
    """`instructions`: a string, or (echoed in a response when a prompt template was used) input items."""
    value = f.get("instructions")
    if value is None or isinstance(value, str):
        return value or ""
    if not isinstance(value, list):
        raise f.error(f"expected a string or a list of items, got {type_name(value)}", "instructions")
    texts = []
    for i, item in enumerate(value):
        item_f = f.child("instructions", value).child(i, item)
        texts.extend(p.text for p in item_content(item_f) if isinstance(p, TextPart) and p.text)
    return "\n\n".join(texts)


def _is_item(record: Any) -> bool:
    if not isinstance(record, dict) or not isinstance(record.get("type"), str):
        return False
    kind = record["type"]
    if kind == "message":
        return record.get("role") in ("user", "assistant", "system", "developer") and "content" in record
    if kind in ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"):
        return isinstance(record.get("call_id"), str)
    return kind in ITEM_TYPES and kind != "message"


def _has_responses_parts(record: Any) -> bool:
    content = record.get("content") if isinstance(record, dict) else None
    return isinstance(content, list) and any(isinstance(p, dict) and isinstance(p.get("type"), str) and p["type"] in RESPONSES_PART_TYPES
                                             for p in content[:20])


def looks_like_items(items: list[Any]) -> bool:
    """A list whose items are Responses items (typed, or `{role, content}` with Responses parts)."""
    return any(_is_item(x) or _has_responses_parts(x) for x in items[:50])


def _is_response(record: Any) -> bool:
    return isinstance(record, dict) and record.get("object") in RESPONSE_OBJECTS and "output" in record


def _is_response_like(record: dict[str, Any]) -> bool:
    """A response object, or at least something with an `output` list that is no item."""
    return record.get("object") in RESPONSE_OBJECTS or ("output" in record and "type" not in record and "input" not in record)


def _is_request(record: Any) -> bool:
    if not isinstance(record, dict) or "messages" in record:
        return False
    value = record.get("input")
    if isinstance(value, list):
        return not value or looks_like_items(value) or any(k in record for k in REQUEST_KEYS)
    return isinstance(value, str) and any(k in record for k in REQUEST_KEYS)


def compaction_start(items: list[Any]) -> int:
    """Where the context of an input list starts: at its last `compaction` item (0 when it has none)."""
    for i in range(len(items) - 1, -1, -1):
        if isinstance(items[i], dict) and items[i].get("type") == "compaction":
            return i
    return 0


class ResponsesLoader:
    name = "openai-responses"
    title = "OpenAI Responses API (JSON/JSONL)"
    top_level_fields = frozenset(("model", "instructions", "input", "tools", "output", "usage", "object", "id", "previous_response_id"))

    def sniff(self, src: SourceFile) -> bool:
        first = src.first_record()
        if _is_response(first) or _is_request(first):
            return True
        if src.kind == "jsonl":
            return _is_item(first) or _has_responses_parts(first)
        return isinstance(first, list) and looks_like_items(first)

    def load(self, src: SourceFile) -> Session:
        state = _Responses(src)
        if src.kind == "jsonl":
            for lineno, record in src.records():
                state.record(record, (), lineno)
        else:
            doc = src.document
            if isinstance(doc, list):
                state.items(Fields(src, doc, (), step=True), None, doc, input_list=True)
            else:
                top = Fields(src, doc)
                if not (_is_response_like(doc) or top.has("input")):
                    raise top.error("expected a Responses request (`input`) or response (`output`)")
                state.record(doc, (), None)
        return Session(messages=tuple(state.reader.messages()), source=src.path, format=self.name, model=state.model,
                       system_prompt=state.instructions, tools=state.tools)


class _Responses:
    """The state of one file: requests replace the conversation with their `input` (each carries the
    whole history, unless it continues an earlier response of the file by `previous_response_id`),
    responses append their `output`."""

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        self.reader = ItemReader(src)
        self.model = ""
        self.instructions = ""
        self.tools: tuple[ToolDefinition, ...] = ()
        self.response_ids: set[str] = set()

    def record(self, record: Any, path: tuple[Any, ...], line: int | None) -> None:
        if not isinstance(record, dict):
            raise self.src.error(f"expected an object, got {type_name(record)}", line)
        f = Fields(self.src, record, path, line)
        if _is_response_like(record):
            self.response(f)
        elif "input" in record and "type" not in record:
            self.request(f)
        else:  # one item per JSONL line
            self.reader.add(f)

    def items(self, f: Fields, key: str | None, value: list[Any], input_list: bool = False) -> None:
        base = f.child(key, value) if key else f
        start = compaction_start(value) if input_list else 0
        if start:
            # The API drops what comes before a compaction item: the compaction stands for it.
            self.src.notes.append(f"left out the {start:,} input {noun(start, 'item')} before the `compaction` item: the API does not send them "
                                  "(the compaction stands for them)")
        for i, item in enumerate(value[start:], start=start):
            self.reader.add(base.child(i, item))

    def settings(self, f: Fields) -> None:
        self.model = f.str("model") or self.model
        instructions = instructions_text(f)
        self.instructions = instructions or self.instructions
        tools = tool_definitions(f)
        self.tools = tools or self.tools

    def request(self, f: Fields) -> None:
        previous = f.str("previous_response_id")
        if previous and previous in self.response_ids:
            self.reader.close()  # continues a response of this file: its input is only the new items
        else:
            if previous:
                self.src.notes.append(f"the request continues response {previous} (`previous_response_id`), whose history is not in the file")
            if self.reader.drafts:
                self.src.tally("read {n} request(s) as the whole conversation so far, replacing what came before {it|them} (each request carries its history)")
            self.reader = ItemReader(self.src)
        self.settings(f)
        value = f.get("input")
        if isinstance(value, str):
            self.reader.new("user", [TextPart(value)] if value else [])
            self.reader.close()
        else:
            self.items(f, "input", f.list("input", required=True), input_list=True)

    def response(self, f: Fields) -> None:
        self.settings(f)
        if f.str("id"):
            self.response_ids.add(f.str("id"))
        self.reader.close()
        start = len(self.reader.drafts)
        self.reader.latest_model = None
        self.items(f, "output", f.list("output", required=True))
        status = f.str("status")
        if status and status not in ("completed", "in_progress"):
            details = f.dict("incomplete_details").get("reason") or ""
            self.src.notes.append(f"response {f.str('id') or '(no id)'} is `{status}`" + (f" ({details})" if details else ""))
        if f.get("usage") is not None:
            usage = responses_usage(f.child("usage", f.get("usage")))
            latest = self.reader.latest_model
            target = latest if any(d is latest for d in self.reader.drafts[start:]) else None
            if target is None:
                self.src.notes.append("a response's `usage` was not attached: its output has no assistant item")
            else:
                target.usage = usage
        self.reader.close()
