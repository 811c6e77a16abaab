"""Anthropic Messages: top-level `system`, content blocks, `tools` with `input_schema`."""

from __future__ import annotations

from typing import Any

from ..engine.session import Message, Session
from .base import Fields, make_message, parse_usage
from .native import tool_definitions
from .parts import anthropic_blocks, split_tool_results
from .source import SourceFile

_ANTHROPIC_ONLY_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking", "document"}


def _has_anthropic_blocks(messages: list[Any]) -> bool:
    for m in messages[:50]:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and isinstance(block.get("type"), str) and (block.get("type") in _ANTHROPIC_ONLY_BLOCKS or (block.get("type") == "image" and "source" in block)):
                    return True
    return False


def system_text(top: Fields) -> str:
    value = top.get("system")
    if value is None or isinstance(value, str):
        return value or ""
    blocks = top.list("system")
    return "\n\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))


def messages_from_blocks(f: Fields, role: str, start: int, record: Any, **extra: Any) -> list[Message]:
    """One Anthropic message; tool_result blocks become `tool` messages of their own, in order."""
    parts = anthropic_blocks(f)
    results, rest = split_tool_results(parts)
    out: list[Message] = []
    for r in results:
        out.append(make_message(start + len(out), "tool", [r], tool_call_id=r.tool_call_id, raw=record, **extra))
    if rest or not results:
        out.append(make_message(start + len(out), role, rest, raw=record, **extra))
    return out


class AnthropicLoader:
    name = "anthropic"
    title = "Anthropic Messages (JSON)"
    top_level_fields = frozenset(("messages", "model", "system", "tools"))

    def sniff(self, src: SourceFile) -> bool:
        if src.kind == "jsonl":
            return False
        doc = src.document
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            return False
        if "system" in doc:
            return True
        roles = {m.get("role") for m in doc["messages"] if isinstance(m, dict) and isinstance(m.get("role"), str)}
        return roles <= {"user", "assistant", "system"} and _has_anthropic_blocks(doc["messages"])

    def load(self, src: SourceFile) -> Session:
        top = Fields(src, src.document)
        raw = top.list("messages", required=True)
        messages: list[Message] = []
        for i, record in enumerate(raw):
            f = top.child("messages", raw).child(i, record)
            role = f.role(allowed=("user", "assistant", "system"))  # a system turn mid-conversation is read as such
            messages += messages_from_blocks(f, role, len(messages), record, usage=parse_usage(f))
        return Session(messages=tuple(messages), source=src.path, format=self.name, model=top.str("model"),
                       system_prompt=system_text(top), tools=tool_definitions(top))
