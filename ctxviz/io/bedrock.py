"""Amazon Bedrock Converse: a `converse` request `{messages, system, toolConfig, inferenceConfig}` or
its response `{output: {message}, usage, stopReason}` (JSON).

Close to Anthropic's Messages, but a content block is keyed by its kind instead of `type`:
`{"text": ...}`, `{"image": {format, source: {bytes}}}`, `{"document": ...}`, `{"toolUse": {toolUseId,
name, input}}`, `{"toolResult": {toolUseId, content: [{text} | {json} | ...], status}}`,
`{"reasoningContent": {reasoningText: {text, signature}} | {redactedContent}}`, `{"cachePoint": ...}`
(a cache marker, no content), `{"guardContent": ...}`. `system` is a list of `{text}` blocks;
`toolConfig.tools` holds `{toolSpec: {name, description, inputSchema: {json}}}`. Usage is
`{inputTokens, outputTokens, cacheReadInputTokens, cacheWriteInputTokens}`, where `inputTokens`
does not include the cached tokens.
"""

from __future__ import annotations

import json
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
from .base import Fields, make_message
from .parts import split_tool_results
from .source import SourceFile

#: The keys a Converse content block may have (one per block).
BLOCK_KEYS = frozenset(("text", "image", "document", "video", "toolUse", "toolResult", "reasoningContent", "cachePoint",
                        "guardContent", "citationsContent"))
#: Keys only a Converse request or response has.
TOP_KEYS = frozenset(("toolConfig", "inferenceConfig", "additionalModelRequestFields", "guardrailConfig", "promptVariables",
                      "additionalModelResponseFieldPaths", "performanceConfig"))


def _is_block(block: Any) -> bool:
    return isinstance(block, dict) and "type" not in block and len(block) >= 1 and next(iter(block)) in BLOCK_KEYS


def _converse_messages(messages: Any) -> bool:
    """A message list in Converse form: its first content block is keyed by kind, not `type`."""
    if not isinstance(messages, list):
        return False
    for m in messages[:20]:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list) and content:
            return _is_block(content[0])
    return False


def looks_like_converse(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    output = doc.get("output")
    if isinstance(output, dict) and isinstance(output.get("message"), dict):
        return _converse_messages([output["message"]])
    return _converse_messages(doc.get("messages")) or (isinstance(doc.get("messages"), list) and bool(TOP_KEYS & doc.keys()))


class BedrockConverseLoader:
    name = "bedrock"
    title = "Amazon Bedrock Converse (JSON)"
    top_level_fields = frozenset(("messages", "system", "toolConfig", "modelId", "output", "usage"))

    def sniff(self, src: SourceFile) -> bool:
        return src.kind != "jsonl" and looks_like_converse(src.document)

    def load(self, src: SourceFile) -> Session:
        top = Fields(src, src.document)
        messages: list[Message] = []
        if top.has("output"):  # a response: the model's one message
            output = top.child("output", top.dict("output"))
            records: list[tuple[Fields, Any]] = [(output.child("message", output.dict("message")), output.get("message"))]
            usage = _usage(top)
        else:
            raw = top.list("messages", required=True)
            records = [(top.child("messages", raw).child(i, m), m) for i, m in enumerate(raw)]
            usage = None
        for f, record in records:
            role = f.role(allowed=("user", "assistant"))
            parts = blocks(src, f)
            results, rest = split_tool_results(parts)
            for r in results:
                messages.append(make_message(len(messages), "tool", [r], tool_call_id=r.tool_call_id, raw=record))
            if rest or not results:
                messages.append(make_message(len(messages), role, rest, usage=usage if role == "assistant" else None, raw=record))
        system = top.list("system")
        prompt = "\n\n".join(str(b["text"]) for b in system if isinstance(b, dict) and isinstance(b.get("text"), str))
        return Session(messages=tuple(messages), source=src.path, format=self.name, model=top.str("modelId"), system_prompt=prompt,
                       tools=_tools(top))


def blocks(src: SourceFile, f: Fields) -> list[Part]:
    raw = f.list("content")
    parts: list[Part] = []
    for i, item in enumerate(raw):
        b = f.child("content", raw).child(i, item)
        if not b.record:
            raise b.error("expected a content block, got an empty object")
        kind = next(iter(b.record))
        part = block(src, b, kind)
        if part is not None:
            parts.append(part)
    return parts


def block(src: SourceFile, b: Fields, kind: str) -> Part | None:
    if kind == "text":
        return TextPart(b.str("text"))
    if kind == "toolUse":
        use = b.child("toolUse", b.dict("toolUse"))
        args = use.get("input", {})
        return ToolCallPart(use.str("toolUseId"), use.str("name", required=True), args if isinstance(args, str) else json.dumps(args))
    if kind == "toolResult":
        result = b.child("toolResult", b.dict("toolResult"))
        return ToolResultPart(result.str("toolUseId"), _result_text(result), is_error=result.str("status") == "error")
    if kind == "reasoningContent":
        reasoning = b.dict("reasoningContent")
        text = reasoning.get("reasoningText")
        if isinstance(text, dict) and isinstance(text.get("text"), str):
            return ThinkingPart(text["text"])
        return ThinkingPart("[redacted thinking]")
    if kind == "image":
        image = b.dict("image")
        fmt = image.get("format") if isinstance(image.get("format"), str) else "png"
        source = image.get("source") if isinstance(image.get("source"), dict) else {}
        data = source.get("bytes")
        if isinstance(data, str):
            return ImagePart(url=f"data:image/{fmt};base64,{data}", media_type=f"image/{fmt}")
        src.tally("read {n} Bedrock image(s) without inline bytes (an S3 location) as a placeholder")
        return OpaquePart("image", "[image]")
    if kind == "cachePoint":
        src.tally("skipped {n} `cachePoint` marker(s) (a cache breakpoint, no content)")
        return None
    value = b.get(kind)
    return OpaquePart(kind, json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value)


def _result_text(result: Fields) -> str:
    pieces: list[str] = []
    for item in result.list("content"):
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            pieces.append(item["text"])
        elif isinstance(item, dict) and "json" in item:
            pieces.append(json.dumps(item["json"], ensure_ascii=False))
        elif isinstance(item, dict) and item:
            pieces.append(f"[{next(iter(item))}]")
    return "\n".join(pieces)


def _usage(top: Fields) -> Usage | None:
    if not isinstance(top.get("usage"), dict):
        return None
    u = top.child("usage", top.get("usage"))
    if not any(u.get(k) is not None for k in ("inputTokens", "outputTokens")):
        return None
    return Usage(input_tokens=u.int("inputTokens"), output_tokens=u.int("outputTokens"), cache_read_input_tokens=u.int("cacheReadInputTokens"),
                 cache_creation_input_tokens=u.int("cacheWriteInputTokens"))


def _tools(top: Fields) -> tuple[ToolDefinition, ...]:
    config = top.child("toolConfig", top.dict("toolConfig"))
    raw = config.list("tools")
    out: list[ToolDefinition] = []
    for i, item in enumerate(raw):
        t = config.child("tools", raw).child(i, item)
        if not t.has("toolSpec"):
            continue  # a cachePoint
        spec = t.child("toolSpec", t.dict("toolSpec"))
        schema = spec.dict("inputSchema").get("json", {})
        out.append(ToolDefinition(spec.str("name", required=True), spec.str("description"), schema if isinstance(schema, dict) else {}))
    return tuple(out)
