"""Content-part parsing shared by the loaders: OpenAI parts, Anthropic blocks and ctxviz's own."""

from __future__ import annotations

import json
from collections.abc import Callable

from ..engine.session import (
    FileRefPart,
    ImagePart,
    OpaquePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from .base import Fields, type_name


def openai_content(f: Fields, key: str = "content", read_part: Callable[[Fields], Part] | None = None) -> list[Part]:
    """A string, null, or a list of Chat Completions parts (text, image_url, input_audio, file, refusal);
    `read_part` reads the parts of a format with a vocabulary of its own (the Responses API)."""
    read = read_part or openai_part
    value = f.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        # "" stays an empty text, not no content: LlamaIndex counts it as 0 tokens where a message
        # without content counts as the text 'None'.
        return [TextPart(value)]
    if not isinstance(value, list):
        raise f.error(f"expected a string or a list of parts, got {type_name(value)}", key)
    parts: list[Part] = []
    for i, item in enumerate(value):
        parts.append(read(f.child(key, value).child(i, item)))
    return parts


def openai_part(p: Fields) -> Part:
    kind = p.str("type", required=True)
    if kind in ("text", "input_text", "output_text"):
        return TextPart(p.str("text"))
    if kind == "refusal":
        return TextPart(p.str("refusal"))
    if kind == "image_url":
        image = p.get("image_url")
        if isinstance(image, str):
            return ImagePart(url=image)
        img = p.child("image_url", image)
        return ImagePart(url=img.str("url"), detail=img.str("detail"))
    if kind == "input_image":
        return ImagePart(url=p.str("image_url") or p.str("file_id"), detail=p.str("detail"))
    if kind == "input_audio":
        audio = p.dict("input_audio")
        return TextPart(f"[audio: {audio.get('format', 'unknown format')}]")
    if kind == "file":
        file = p.dict("file")
        return TextPart(f"[file: {file.get('filename') or file.get('file_id') or 'attached'}]")
    if kind in ANTHROPIC_IN_OPENAI_LISTS or kind.endswith("_tool_result") or (kind == "tool_result" and p.has("tool_use_id")):
        return anthropic_block(p)  # Anthropic blocks in a {role, content} list (Cline, LiteLLM and proxy logs)
    return native_part(p, kind)


#: Anthropic block types a {role, content} list may hold; ctxviz's own part types keep their meaning.
ANTHROPIC_IN_OPENAI_LISTS = frozenset(("tool_use", "redacted_thinking", "document", "server_tool_use", "mcp_tool_use"))


def native_part(p: Fields, kind: str) -> Part:
    """ctxviz's own part types, also accepted inside OpenAI-style lists."""
    if kind == "image":
        if p.has("source"):
            return anthropic_image(p)
        url, media, data = p.str("url"), p.str("media_type"), p.str("data")
        if not url and data:  # bare base64: kept as a data: URI so its size can be read
            url = data if data.startswith("data:") else data_uri(media or "image/png", data)
        return ImagePart(url=url, media_type=media, detail=p.str("detail"))
    if kind == "tool_call":
        args = p.get("arguments", {})
        return ToolCallPart(id=p.str("id"), name=p.str("name", required=True), arguments=args if isinstance(args, str) else json.dumps(args))
    if kind == "tool_result":
        return ToolResultPart(tool_call_id=p.str("tool_call_id"), text=p.str("text") or p.str("content"), is_error=p.bool("is_error"),
                              compacted_at=p.int("compacted_at"))
    if kind == "file_ref":
        return FileRefPart(
            path=p.str("path", required=True),
            content_id=p.str("content_id"),
            file_type=p.str("file_type"),
            token_count=p.int("token_count"),
            exploration_summary=p.str("exploration_summary"),
        )
    if kind == "thinking":
        return ThinkingPart(p.str("thinking") or p.str("text"))
    return opaque_part(p, kind)


#: Fields whose strings are what a block says (for a block ctxviz does not model).
_TEXT_FIELDS = ("text", "content", "thinking", "title", "url", "snippet", "stdout", "stderr", "output", "result", "summary",
                "query", "input", "data", "source", "message", "error", "error_code")


def opaque_part(p: Fields, kind: str) -> OpaquePart:
    """A block of a type ctxviz does not model, kept whole instead of refusing the file: its text
    fields where it has them, else its JSON; one counted note per type says so."""
    p.src.tally("kept {n} `" + kind + "` block(s) ctxviz does not model as opaque text (counted and shown as-is)")
    return OpaquePart(kind, opaque_text(p.record))


def opaque_text(block: dict) -> str:
    texts: list[str] = []
    stack: list[object] = [block]
    while stack and len(texts) < 10_000:
        node = stack.pop()
        if isinstance(node, str):
            texts.append(node)
        elif isinstance(node, dict):
            stack.extend(v for key in reversed(_TEXT_FIELDS) if isinstance(v := node.get(key), (str, dict, list)))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    if texts:
        return "\n".join(texts)
    rest = {k: v for k, v in block.items() if k not in ("type", "cache_control")}
    return json.dumps(rest, ensure_ascii=False, default=str) if rest else f"[{block.get('type', 'block')}]"


def _reusable_encoder() -> Callable[[object], str]:
    """`json.dumps` (its default settings) with one C encoder made once: `json.dumps` builds an encoder
    per call, which costs more than encoding a tool call's small input. Parsed JSON holds no cycles,
    so the encoder does not look for them; without the C encoder, `json.dumps` itself."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.dumps
    encode = make(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)
    return lambda value: "".join(encode(value, 0))


#: `json.dumps(value)` for values parsed from JSON (no cycles), without an encoder built per call.
dumps_parsed = _reusable_encoder()


def data_uri(media_type: str, base64_data: str) -> str:
    return f"data:{media_type};base64,{base64_data}"


def anthropic_image(p: Fields) -> ImagePart:
    source = p.child("source", p.get("source"))
    if source.str("type") == "base64":
        media = source.str("media_type")
        return ImagePart(url=data_uri(media, source.str("data")), media_type=media)
    return ImagePart(url=source.str("url") or source.str("file_id"), media_type=source.str("media_type"))


def anthropic_blocks(f: Fields, key: str = "content") -> list[Part]:
    """Anthropic Messages content: a string or blocks (text, image, tool_use, tool_result, thinking...)."""
    value = f.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [TextPart(value)] if value else []
    if not isinstance(value, list):
        raise f.error(f"expected a string or a list of content blocks, got {type_name(value)}", key)
    parts: list[Part] = []
    for i, item in enumerate(value):
        parts.append(anthropic_block(f.child(key, value).child(i, item)))
    return parts


#: Blocks of a tool the provider runs itself; their results arrive in the same assistant turn.
SERVER_TOOL_CALLS = frozenset(("server_tool_use", "mcp_tool_use"))


def anthropic_block(b: Fields) -> Part:
    kind = b.str("type", required=True)
    if kind == "text":
        return TextPart(b.str("text"))
    if kind == "image":
        return anthropic_image(b)
    if kind == "document":
        source = b.dict("source")
        return TextPart(b.str("title") or f"[document: {source.get('media_type') or source.get('type') or 'attached'}]")
    if kind == "tool_use":
        return ToolCallPart(id=b.str("id"), name=b.str("name", required=True), arguments=dumps_parsed(b.get("input", {})))
    if kind == "tool_result":
        return ToolResultPart(tool_call_id=b.str("tool_use_id"), text=tool_result_text(b), is_error=b.bool("is_error"))
    if kind in SERVER_TOOL_CALLS:
        # Anthropic runs these tools itself, inside the assistant turn: they are part of that turn,
        # never a client tool call that needs a result message.
        return OpaquePart(kind, f"{b.str('name')}({json.dumps(b.get('input', {}), ensure_ascii=False)})")
    if kind.endswith("_tool_result"):  # web_search_tool_result, code_execution_tool_result, mcp_tool_result...
        return OpaquePart(kind, opaque_text(b.record))
    if kind == "thinking":
        return ThinkingPart(b.str("thinking"))
    if kind == "redacted_thinking":
        return ThinkingPart("[redacted thinking]")
    return native_part(b, kind)


def tool_result_text(b: Fields) -> str:
    """A tool_result's content as text: a string, or its text blocks joined (images noted)."""
    return tool_result_content_text(b.get("content"))


def tool_result_content_text(content: object) -> str:
    """`tool_result_text` of a block whose `content` is `content` (for loaders that read the block's
    dict directly)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                texts.append(str(item.get("text", "")))
            elif isinstance(item, dict) and item.get("type") == "image":
                texts.append("[image]")
            else:
                texts.append(json.dumps(item) if not isinstance(item, str) else item)
        return "\n".join(texts)
    return json.dumps(content)


def split_tool_results(parts: list[Part]) -> tuple[list[ToolResultPart], list[Part]]:
    """Anthropic carries tool results in user messages; ctxviz gives each its own `tool` message."""
    results = [p for p in parts if isinstance(p, ToolResultPart)]
    rest = [p for p in parts if not isinstance(p, ToolResultPart)]
    return results, rest
