"""ctxviz's own session format (YAML or JSON): everything the policies use, in one readable file.

    ctxviz: 1
    model: gpt-4o
    system_prompt: You are a support agent...
    tools: [{name, description, parameters}]
    memory: [str]            # missy's memory snippets
    learnings: [str]         # missy's past learnings
    summaries: [{text, depth, messages_covered, time_range_start, time_range_end, covers: [ids]}]
    messages:
      - id: m0               # optional, default m{index}
        role: user           # system | user | assistant | tool (developer is read as system)
        content: "text"      # or a list of parts (text, image, image_url, tool_call, tool_result, file_ref, thinking)
        name, tool_call_id, timestamp (ISO), category (system|context|dialog|system_output|...)
        tool_calls: [{id, name, arguments}]   # or OpenAI form {id, type, function: {name, arguments}}
        usage: {input_tokens, output_tokens, ...}

The README documents it with a complete example.
"""

from __future__ import annotations

import json

from ..engine.session import Part, Session, Summary, ToolCallPart, ToolDefinition, ToolResultPart, part_text
from .base import Fields, make_message, parse_usage
from .parts import openai_content
from .source import SourceFile

ROLE_ALIASES = {"developer": "system", "human": "user", "ai": "assistant"}


def tool_calls(f: Fields) -> list[Part]:
    calls: list[Part] = []
    raw = f.list("tool_calls")
    for i, item in enumerate(raw):
        c = f.child("tool_calls", raw).child(i, item)
        if c.has("function"):
            fn = c.child("function", c.get("function"))
            args = fn.get("arguments", "{}")
            calls.append(ToolCallPart(c.str("id"), fn.str("name", required=True), args if isinstance(args, str) else json.dumps(args)))
        else:
            args = c.get("arguments", {})
            calls.append(ToolCallPart(c.str("id"), c.str("name", required=True), args if isinstance(args, str) else json.dumps(args)))
    return calls


def tool_definitions(f: Fields) -> tuple[ToolDefinition, ...]:
    out = []
    raw = f.list("tools")
    for i, item in enumerate(raw):
        t = f.child("tools", raw).child(i, item)
        kind = t.get("type")
        if isinstance(kind, str) and kind not in ("function", "custom") and not (t.has("input_schema") or t.has("parameters") or t.has("function")):
            # A hosted tool (Anthropic's web_search_20250305, code_execution...): the provider runs it, no schema.
            out.append(ToolDefinition(t.str("name") or kind, t.str("description"), {}, hosted=dict(t.record)))
            continue
        if t.has("function"):  # OpenAI {type: function, function: {...}}
            t = t.child("function", t.get("function"))
        params = t.get("parameters", t.get("input_schema", {}))
        if not isinstance(params, dict):
            raise t.error("expected an object", "parameters")
        out.append(ToolDefinition(t.str("name", required=True), t.str("description"), params))
    return tuple(out)


def strings(f: Fields, key: str) -> tuple[str, ...]:
    items = f.list(key)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise f.child(key, items).error("expected a string", i)
    return tuple(items)


class NativeLoader:
    name = "ctxviz"
    title = "ctxviz session (YAML/JSON)"
    top_level_fields = frozenset(("ctxviz", "messages", "model", "system_prompt", "tools", "memory", "learnings", "summaries", "title"))

    def sniff(self, src: SourceFile) -> bool:
        if src.kind == "jsonl":
            return False
        doc = src.document
        return isinstance(doc, dict) and ("ctxviz" in doc or (src.kind == "yaml" and "messages" in doc))

    def load(self, src: SourceFile) -> Session:
        top = Fields(src, src.document)
        raw_messages = top.list("messages", required=True)
        messages = []
        for index, record in enumerate(raw_messages):
            f = top.child("messages", raw_messages).child(index, record)
            role = f.role(aliases=ROLE_ALIASES)
            parts = openai_content(f) + tool_calls(f)
            if role == "tool" and f.has("compacted_at"):  # mnesis: this output was compacted to a tombstone
                parts = [ToolResultPart(f.str("tool_call_id"), "\n".join(part_text(p) for p in parts), compacted_at=f.int("compacted_at"))]
            messages.append(
                make_message(
                    index,
                    role,
                    parts,
                    id=f.str("id"),
                    name=f.str("name"),
                    tool_call_id=f.str("tool_call_id"),
                    timestamp=f.str("timestamp"),
                    category=f.category("category", role),
                    usage=parse_usage(f),
                    raw=record,
                )
            )
        summaries = []
        raw_summaries = top.list("summaries")
        for i, item in enumerate(raw_summaries):
            s = top.child("summaries", raw_summaries).child(i, item)
            summaries.append(
                Summary(
                    text=s.str("text", required=True),
                    depth=s.int("depth", 1),
                    messages_covered=s.int("messages_covered"),
                    time_range_start=s.str("time_range_start"),
                    time_range_end=s.str("time_range_end"),
                    covers=strings(s, "covers"),
                    created_at=s.str("created_at"),
                )
            )
        return Session(
            messages=tuple(messages),
            source=src.path,
            format=self.name,
            model=top.str("model"),
            system_prompt=top.str("system_prompt"),
            tools=tool_definitions(top),
            memory=strings(top, "memory"),
            learnings=strings(top, "learnings"),
            summaries=tuple(summaries),
            title=top.str("title"),
        )
