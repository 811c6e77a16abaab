"""OpenAI Chat Completions: a request `{model, messages, tools}` or a bare message list, JSON or JSONL."""

from __future__ import annotations

from typing import Any

from ..engine.session import (
    MESSAGE_DEFAULTS,
    Message,
    Part,
    Session,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    built_message,
    default_category,
    text_part,
)
from ..engine.wording import noun
from .base import Fields, make_message, parse_usage
from .native import tool_calls, tool_definitions
from .parts import openai_content, split_tool_results
from .source import SourceFile

ROLE_ALIASES = {"developer": "system", "function": "tool"}


def _looks_like_message(record: Any) -> bool:
    return isinstance(record, dict) and "role" in record and ("content" in record or "tool_calls" in record)


_PLAIN_CATEGORY = {role: default_category(role) for role in ("system", "user", "assistant")}


def _message_path(k: int) -> tuple[Any, ...]:
    return ("messages", k)


def _item_path(k: int) -> tuple[Any, ...]:
    return (k,)


def _no_path(k: int) -> tuple[Any, ...]:
    return ()


_TOOL_KEYS = frozenset(("role", "content", "tool_call_id"))
_ASSISTANT_KEYS = frozenset(("role", "content", "tool_calls"))
_TOOL_CATEGORY = default_category("tool")


def _tool_message(index: int, record: dict[str, Any]) -> Message | None:
    """Fast path for `{role: tool, tool_call_id, content: str}` (what the full path reads from it)."""
    if record.get("role") != "tool" or record.keys() != _TOOL_KEYS:
        return None
    content, call_id = record["content"], record["tool_call_id"]
    if type(content) is not str or type(call_id) is not str:
        return None
    return built_message(f"m{index}", index, "tool", (text_part(content),), _TOOL_CATEGORY, record, call_id)


def _assistant_calls(index: int, record: dict[str, Any]) -> Message | None:
    """Fast path for `{role: assistant, content: str | null, tool_calls: [{id, function: {name, arguments: str}}]}`."""
    if record.get("role") != "assistant" or record.keys() - _ASSISTANT_KEYS:
        return None
    content, calls = record.get("content"), record.get("tool_calls")
    if (content is not None and type(content) is not str) or type(calls) is not list:
        return None
    parts: list[Part] = [text_part(content)] if content is not None else []
    for call in calls:
        fn = call.get("function") if type(call) is dict else None
        if type(fn) is not dict:
            return None
        call_id, name, arguments = call.get("id", ""), fn.get("name"), fn.get("arguments", "{}")
        if type(call_id) is not str or type(name) is not str or type(arguments) is not str:
            return None
        parts.append(ToolCallPart(call_id, name, arguments))
    return built_message(f"m{index}", index, "assistant", tuple(parts), _PLAIN_CATEGORY["assistant"], record)


def pick_conversation(src: SourceFile, requests: list[tuple[int, Any]]) -> tuple[int, Any]:
    """One `{messages}` line of a JSONL. A log of requests grows line by line (each line's messages
    begin with the previous line's), so its last line is the whole conversation; lines that do not
    (the fine-tuning format) are independent conversations, and the user picks one."""
    growing = all(_extends(requests[k][1].get("messages"), requests[k + 1][1].get("messages")) for k in range(len(requests) - 1))
    count = len(requests)
    src.conversations = 1 if growing else count
    if src.conversation is None:
        if growing:
            return requests[-1]
        raise src.error(f"holds {count:,} independent conversations, one per line (the fine-tuning format); "
                        f"choose one with --conversation N (1 to {count:,})")
    if not 1 <= src.conversation <= count:
        raise src.error(f"--conversation {src.conversation}: the file holds {count:,} {noun(count, 'conversation')} (1 to {count:,})")
    if growing and count > 1:
        src.notes.append(f"conversation {src.conversation} of {count:,}: the lines are one conversation's growing requests")
    else:
        src.notes.append(f"conversation {src.conversation} of {count:,} (line {requests[src.conversation - 1][0]})")
    return requests[src.conversation - 1]


def _extends(earlier: Any, later: Any) -> bool:
    return isinstance(earlier, list) and isinstance(later, list) and len(later) >= len(earlier) and later[: len(earlier)] == earlier


class OpenAIChatLoader:
    name = "openai"
    title = "OpenAI Chat Completions (JSON/JSONL)"
    top_level_fields = frozenset(("messages", "model", "tools"))

    def sniff(self, src: SourceFile) -> bool:
        first = src.first_record()
        if src.kind == "jsonl":
            return _looks_like_message(first) or (isinstance(first, dict) and isinstance(first.get("messages"), list))
        if isinstance(first, dict):
            return isinstance(first.get("messages"), list)
        return isinstance(first, list) and (not first or _looks_like_message(first[0]))

    def load(self, src: SourceFile) -> Session:
        model = ""
        tools: tuple = ()
        # (line, record) pairs, and each record's field path from its position (made only for
        # records off the fast path, as are Fields objects).
        pairs: list[tuple[int | None, Any]]
        path_of: Any = _message_path
        if src.kind == "jsonl":
            pairs = src.jsonl_records
            requests = [(lineno, record) for lineno, record in pairs if isinstance(record, dict) and "messages" in record]
            if requests:
                lineno, record = pick_conversation(src, requests)
                f = Fields(src, record, (), lineno)
                pairs = [(lineno, m) for m in f.list("messages")]
                model = f.str("model")
                tools = tool_definitions(f)
            else:
                path_of = _no_path
        else:
            doc = src.document
            if isinstance(doc, dict):
                top = Fields(src, doc)
                raw = top.list("messages", required=True)
                model = top.str("model")
                tools = tool_definitions(top)
                pairs = [(None, m) for m in raw]
            else:
                pairs = [(None, m) for m in doc]
                path_of = _item_path
        messages: list[Message] = []
        append, new = messages.append, object.__new__
        for k, (line, record) in enumerate(pairs):
            index = len(messages)
            if type(record) is dict:
                size = len(record)
                if size == 2:  # the bulk of a chat log: {role, content: str}, built inline (as plain_text_message)
                    role, content = record.get("role"), record.get("content")
                    if type(content) is str and type(role) is str and role in _PLAIN_CATEGORY:
                        message = new(Message)
                        part = new(TextPart)  # "" too: an empty text is not a message without content
                        part.__dict__.update(text=content, kind="text")
                        message.__dict__.update(MESSAGE_DEFAULTS, id=f"m{index}", index=index, role=role, parts=(part,),
                                                category=_PLAIN_CATEGORY[role], _raw=record)  # (where `Message.raw` keeps it)
                        append(message)
                        continue
                elif size == 3:
                    plain = _tool_message(index, record) or _assistant_calls(index, record)
                    if plain is not None:
                        append(plain)
                        continue
            path = path_of(k)
            f = Fields(src, record, path, line)
            role = f.role(aliases=ROLE_ALIASES)
            parts = openai_content(f) + tool_calls(f)
            if f.has("function_call") and isinstance(f.get("function_call"), dict):
                fc = f.child("function_call", f.get("function_call"))
                parts.append(ToolCallPart("", fc.str("name", required=True), fc.str("arguments", "{}")))
            if role == "user" and any(isinstance(p, ToolResultPart) for p in parts):
                # Anthropic-style tool_result blocks in a {role, content} list (Cline, LiteLLM logs):
                # each result becomes the tool message it answers, as the Anthropic loader does.
                results, parts = split_tool_results(parts)
                for r in results:
                    messages.append(make_message(len(messages), "tool", [r], tool_call_id=r.tool_call_id, raw=record))
                if not parts:
                    continue
            messages.append(
                make_message(len(messages), role, parts, name=f.str("name"), tool_call_id=f.str("tool_call_id"),
                             timestamp=f.str("timestamp"), usage=parse_usage(f), raw=record)
            )
        return Session(messages=tuple(messages), source=src.path, format=self.name, model=model, tools=tools)
