"""OpenAI Chat Completions: a request `{model, messages, tools}` or a bare message list, JSON or JSONL."""

from __future__ import annotations

from typing import Any

from ..engine.session import Session
from .base import Fields, make_message, parse_usage
from .native import tool_calls, tool_definitions
from .parts import openai_content
from .source import SourceFile

ROLE_ALIASES = {"developer": "system", "function": "tool"}


def _looks_like_message(record: Any) -> bool:
    return isinstance(record, dict) and "role" in record and ("content" in record or "tool_calls" in record)


class OpenAIChatLoader:
    name = "openai"
    title = "OpenAI Chat Completions (JSON/JSONL)"

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
        entries: list[tuple[Fields, Any]] = []
        if src.kind == "jsonl":
            for lineno, record in src.records():
                f = Fields(src, record, (), lineno)
                if f.has("messages"):  # a JSONL of request objects: the last one is the fullest
                    raw = f.list("messages")
                    entries = [(f.child("messages", raw).child(i, m), m) for i, m in enumerate(raw)]
                    model = f.str("model") or model
                    tools = tool_definitions(f) or tools
                else:
                    entries.append((f, record))
        else:
            doc = src.document
            if isinstance(doc, dict):
                top = Fields(src, doc)
                raw = top.list("messages", required=True)
                model = top.str("model")
                tools = tool_definitions(top)
                entries = [(top.child("messages", raw).child(i, m), m) for i, m in enumerate(raw)]
            else:
                entries = [(Fields(src, m, (i,)), m) for i, m in enumerate(doc)]
        messages = []
        for index, (f, record) in enumerate(entries):
            role = f.role(aliases=ROLE_ALIASES)
            parts = openai_content(f) + tool_calls(f)
            if f.has("function_call") and isinstance(f.get("function_call"), dict):
                fc = f.child("function_call", f.get("function_call"))
                from ..engine.session import ToolCallPart

                parts.append(ToolCallPart("", fc.str("name", required=True), fc.str("arguments", "{}")))
            messages.append(
                make_message(index, role, parts, name=f.str("name"), tool_call_id=f.str("tool_call_id"),
                             timestamp=f.str("timestamp"), usage=parse_usage(f), raw=record)
            )
        return Session(messages=tuple(messages), source=src.path, format=self.name, model=model, tools=tools)
