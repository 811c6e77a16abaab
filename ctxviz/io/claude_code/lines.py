"""The lines of a Claude Code log, each parsed once into a `_Line`: its links (uuid, parent, logical
parent), its kind, and for a turn its parts, usage and model. `_parse_common` reads the lines a log
is made of straight from their dicts; anything else goes through `_parse_checked`, whose errors name
the file, line and field."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...engine.packed_json import PackedRecord
from ...engine.session import Compaction, Part, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from ..base import Fields, parse_usage, type_name
from ..parts import anthropic_block, anthropic_blocks, dumps_parsed, tool_result_content_text
from ..source import SourceFile

#: Line types a Claude Code file may start with (B8, plus the title and prompt lines newer versions
#: write first). Detection also needs one of SIGNATURE_KEYS, so a type name alone never matches.
LINE_TYPES = frozenset(
    ("user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress", "attachment",
     "custom-title", "last-prompt", "atis-latch")
)
#: Keys that tell a Claude Code line from other typed JSONL. `messageId`/`snapshot` are added to B8's
#: list because current versions start a file with a `file-history-snapshot` line carrying only those.
SIGNATURE_KEYS = ("uuid", "parentUuid", "sessionId", "message", "leafUuid", "messageId", "snapshot")
#: The model name Claude Code gives to messages it makes up itself (API errors, interruptions).
SYNTHETIC_MODEL = "<synthetic>"
#: What Claude Code puts in place of a tool result a microcompaction cleared.
CLEARED_TOOL_RESULT = "[Old tool result content cleared]"
#: Lines that hold a turn of the conversation.
MESSAGE_TYPES = frozenset(("user", "assistant", "attachment"))
#: A sub-agent's own transcript: `<session>/subagents/agent-<id>.jsonl`, or `agent-<id>.jsonl` /
#: `agent_<id>.jsonl` beside the sessions (older layouts).
SUBAGENT_FILE = re.compile(r"^agent[-_](?P<id>.+)\.jsonl$", re.IGNORECASE)

_MISSING = object()  # a line without a `parentUuid` key (hand-made or very old logs): it follows the line before


def line_fields(src: SourceFile, record: Any, lineno: int) -> Fields:
    """Fields for one whole record; `Fields` alone would take a list as an empty object."""
    if not isinstance(record, dict):
        raise src.error(f"expected an object, got {type_name(record)}", lineno)
    return Fields(src, record, (), lineno)


def _message_fields(f: Fields) -> Fields:
    """The line's `message` object; user and assistant lines cannot be read without it."""
    value = f.get("message")
    if value is None:
        raise f.error("is required", "message")
    if not isinstance(value, dict):
        raise f.error(f"expected an object, got {type_name(value)}", "message")
    return f.child("message", value)


def _metadata(f: Fields, camel: str, snake: str) -> Fields | None:
    """`compactMetadata` (or the snake_case spelling stream-json output uses), checked."""
    for key in (camel, snake):
        if f.has(key) and f.get(key) is not None:
            return f.child(key, f.dict(key))
    return None


def _meta_int(meta: Fields | None, camel: str, snake: str) -> int:
    if meta is None:
        return 0
    return meta.int(camel) if meta.has(camel) else meta.int(snake)


def _meta_optional_int(meta: Fields | None, camel: str, snake: str) -> int | None:
    """A count the record may not have: None (unknown) when it is absent, not 0."""
    if meta is None or not any(meta.get(key) is not None for key in (camel, snake)):
        return None
    return _meta_int(meta, camel, snake)


@dataclass(slots=True)
class _Line:
    """One line of the file, parsed once (so a bad field anywhere is reported, chain or not)."""

    lineno: int
    record: dict[str, Any]
    kind: str
    uuid: str
    parent: Any  # a uuid, None for a root, or _MISSING
    logical: str
    sidechain: bool
    subtype: str = ""
    message_id: str = ""
    role: str = ""
    parts: Sequence[Part] | None = ()  # None: a sub-agent line's, not read yet (`_build_parts`)
    usage: Usage | None = None
    model: str = ""
    compaction: Compaction | None = None  # a compact_boundary's metadata (before_index is set when it is read)
    segment: dict[str, str] | None = None  # its preservedSegment (None: none; not a dict per line)
    cleared: tuple[list[str], list[str]] = ([], [])  # a microcompact_boundary's tool ids and attachment uuids
    # What the walk over the conversation reads of the record, read with the rest of the line (the
    # record is then fresh in memory; read again later, after the whole file, it no longer is).
    version: str | None = None  # its `version` (None: not a string)
    timestamp: str = ""  # a message line's (user, assistant, attachment)
    meta: bool = False  # a user line's `isMeta`
    compact_summary: bool = False  # a user line's `isCompactSummary`
    images: int = 0  # images inside the tool results of a user line
    #: The record as a message keeps it (`records.packed_record`), packed while the line is read: the
    #: record is then fresh in memory (packed during the walk, after the whole file, it no longer is).
    packed: PackedRecord | None = None


def _parse_checked(src: SourceFile, lineno: int, record: Any) -> _Line:
    """Any line, every field checked through `Fields` (the errors name the line and field)."""
    f = line_fields(src, record, lineno)
    kind = f.str("type", required=True)
    parent: Any = _MISSING
    if "parentUuid" in record:
        parent = f.str("parentUuid") or None
    line = _Line(lineno, record, kind, f.str("uuid"), parent, f.str("logicalParentUuid"), f.bool("isSidechain"))
    if kind == "assistant" or kind == "user" or (kind not in _KNOWN_TYPES and f.get("message") is not None):
        m = _message_fields(f)
        line.parts = anthropic_blocks(m)
        if kind == "assistant" or (kind != "user" and m.str("role") == "assistant"):
            line.role = "assistant"
            line.usage = parse_usage(m)
            line.message_id = m.str("id")
            line.model = m.str("model")
        else:
            line.role = "user"
    elif kind == "system":
        line.subtype = f.str("subtype")
        if line.subtype == "compact_boundary":
            meta = _metadata(f, "compactMetadata", "compact_metadata")
            line.compaction = Compaction(0, trigger="" if meta is None else meta.str("trigger"), pre_tokens=_meta_int(meta, "preTokens", "pre_tokens"),
                                         post_tokens=_meta_optional_int(meta, "postTokens", "post_tokens"))
            segment = meta.get("preservedSegment") or meta.get("preserved_segment") if meta is not None else None
            if isinstance(segment, dict):
                line.segment = {key: str(segment.get(key) or segment.get(snake) or "")
                                for key, snake in (("headUuid", "head_uuid"), ("anchorUuid", "anchor_uuid"), ("tailUuid", "tail_uuid"))}
        elif line.subtype == "microcompact_boundary":
            meta = _metadata(f, "microcompactMetadata", "microcompact_metadata")
            if meta is not None:
                tools = meta.get("compactedToolIds") or meta.get("compacted_tool_ids") or []
                lines = meta.get("clearedAttachmentUUIDs") or meta.get("cleared_attachment_uuids") or []
                line.cleared = ([str(t) for t in tools] if isinstance(tools, list) else [], [str(u) for u in lines] if isinstance(lines, list) else [])
    return line


#: The note for a kind of bookkeeping line, by (type, subtype): made once, not once per line.
_BOOKKEEPING_NOTES: dict[tuple[str, str], str] = {}
#: `system` lines that are part of the conversation.
_BOUNDARIES = ("compact_boundary", "microcompact_boundary")
#: Lines whose fields name the session.
_TITLE_TYPES = frozenset(("summary", "custom-title", "ai-title"))
#: Line types the chain of `parentUuid`s runs through (besides those with a message of an unknown type).
_CHAINED_TYPES = MESSAGE_TYPES | {"system"}
#: Line types ctxviz knows; any other type that carries a `message` is read as a message.
_KNOWN_TYPES = frozenset(("user", "assistant", "system", "attachment", "summary", "custom-title", "progress", "queue-operation",
                          "file-history-snapshot", "file-history-delta", "last-prompt", "atis-latch", "agent-name", "tag", "mode",
                          "permission-mode", "ai-title", "pr-link"))


def _parse_common(src: SourceFile, lineno: int, record: Any) -> _Line | None:
    """`_parse_checked` for the lines a log is made of, reading the record's dicts directly; None
    for anything else (a field of an unexpected type, a compaction, a line of an unknown type with
    a `message`, a block with a number for its text...), which the checked path then reads and, if
    it must, reports. It gives exactly what the checked path gives: it accepts a field only where
    `Fields` would return it unchanged (a string, None for "", a bool, an int)."""
    if type(record) is not dict:
        return None
    get = record.get
    kind, uuid, logical, sidechain = get("type"), get("uuid"), get("logicalParentUuid"), get("isSidechain")
    if type(kind) is not str:
        return None
    if type(uuid) is not str:
        if uuid is not None:
            return None
        uuid = ""
    if type(logical) is not str:
        if logical is not None:
            return None
        logical = ""
    if sidechain is None:
        sidechain = False
    elif type(sidechain) is not bool:
        return None
    parent: Any = _MISSING
    if "parentUuid" in record:
        parent = get("parentUuid")
        if type(parent) is str:
            parent = parent or None
        elif parent is not None:
            return None
    if kind == "assistant" or kind == "user":
        message = get("message")
        if type(message) is not dict:
            return None
        content = message.get("content")
        if sidechain and type(content) is list and _plain_blocks(content):
            parts = None  # a sub-agent's line: built only if the file turns out to be its transcript (`_build_parts`)
        else:
            parts = _blocks_common(src, lineno, message)
            if parts is None:
                return None
        if kind == "user":
            return _Line(lineno, record, kind, uuid, parent, logical, sidechain, "", "", "user", parts)
        message_id, model, usage = message.get("id"), message.get("model"), message.get("usage")
        if type(message_id) is not str:
            if message_id is not None:
                return None
            message_id = ""
        if type(model) is not str:
            if model is not None:
                return None
            model = ""
        if usage is not None:
            usage = _usage_common(usage)
            if usage is False:
                return None
        return _Line(lineno, record, kind, uuid, parent, logical, sidechain, "", message_id, "assistant", parts, usage, model)
    if kind == "system":
        subtype = get("subtype")
        if type(subtype) is not str:
            if subtype is not None:
                return None
            subtype = ""
        if subtype == "compact_boundary" or subtype == "microcompact_boundary":
            return None
        return _Line(lineno, record, kind, uuid, parent, logical, sidechain, subtype)
    if kind not in _KNOWN_TYPES and get("message") is not None:
        return None
    return _Line(lineno, record, kind, uuid, parent, logical, sidechain)


def _blocks_common(src: SourceFile, lineno: int, message: dict[str, Any]) -> list[Part] | None:
    """`anthropic_blocks` of a line's `message`, the common blocks (text, tool_use, tool_result,
    thinking) read from their dicts and any other block through `anthropic_block`; None when
    `content` is neither a string, a list nor null."""
    content = message.get("content")
    if type(content) is str:
        return [TextPart(content)] if content else []
    if content is None:
        return []
    if type(content) is not list:
        return None
    parts: list[Part] = []
    append = parts.append
    for block in content:
        if type(block) is dict:
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if type(text) is str:
                    append(TextPart(text))
                    continue
                if text is None:
                    append(TextPart(""))
                    continue
            elif kind == "tool_use":
                call_id, name = block.get("id"), block.get("name")
                if type(name) is str and (type(call_id) is str or call_id is None):
                    append(ToolCallPart(call_id or "", name, dumps_parsed(block.get("input", {}))))
                    continue
            elif kind == "tool_result":
                call_id, error = block.get("tool_use_id"), block.get("is_error")
                if (type(call_id) is str or call_id is None) and (error is None or type(error) is bool):
                    append(ToolResultPart(call_id or "", tool_result_content_text(block.get("content")), error or False))
                    continue
            elif kind == "thinking":
                text = block.get("thinking")
                if type(text) is str:
                    append(ThinkingPart(text))
                    continue
        append(anthropic_block(Fields(src, message, ("message",), lineno).child("content", content).child(len(parts), block)))  # a part per block so far
    return parts


def _plain_blocks(content: list[Any]) -> bool:
    """Whether `_blocks_common` reads every block of `content` from its dict (so building them can
    neither fail nor add a note, and may wait)."""
    for block in content:
        if type(block) is not dict:
            return False
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if type(text) is not str and text is not None:
                return False
        elif kind == "tool_use":
            call_id = block.get("id")
            if type(block.get("name")) is not str or (type(call_id) is not str and call_id is not None):
                return False
        elif kind == "tool_result":
            call_id, error = block.get("tool_use_id"), block.get("is_error")
            if (type(call_id) is not str and call_id is not None) or (error is not None and type(error) is not bool):
                return False
        elif kind == "thinking":
            if type(block.get("thinking")) is not str:
                return False
        else:
            return False
    return True


def _build_parts(src: SourceFile, lines: Sequence[_Line]) -> None:
    """The parts of sub-agent lines whose reading `_parse_common` left for later (they are in
    the conversation after all: the file is that sub-agent's transcript)."""
    for x in lines:
        if x.parts is None:
            x.parts = _blocks_common(src, x.lineno, x.record["message"]) or []


def _usage_common(usage: Any) -> Usage | None | bool:
    """`parse_usage` of an Anthropic usage object whose counts are integers; False for anything
    else (OpenAI's spelling, a count of another type), which `parse_usage` then reads."""
    if type(usage) is not dict or "prompt_tokens" in usage or "completion_tokens" in usage or "prompt_tokens_details" in usage:
        return False
    get = usage.get
    read, written = get("input_tokens"), get("output_tokens")
    cache_read, cache_written = get("cache_read_input_tokens"), get("cache_creation_input_tokens")
    if read is None and written is None and cache_read is None and cache_written is None:
        return None  # `usage: {}` reports nothing, not a call of 0 tokens
    if ((type(read) is not int and read is not None) or (type(written) is not int and written is not None)
            or (type(cache_read) is not int and cache_read is not None) or (type(cache_written) is not int and cache_written is not None)):
        return False
    key = (read or 0, written or 0, cache_read or 0, cache_written or 0)
    found = _USAGES.get(key)
    if found is None:
        if len(_USAGES) >= 4096:
            _USAGES.clear()
        found = _USAGES[key] = Usage(*key)
    return found


#: Usage objects by their counts: the streamed lines of one call repeat its usage, and a frozen
#: Usage can be shared (equal either way; a long log holds one per call, not one per line).
_USAGES: dict[tuple[int, int, int, int], Usage] = {}


def _result_images(record: dict[str, Any]) -> int:
    """How many images the tool results of a user line hold (each is read as "[image]")."""
    message = record.get("message")
    blocks = message.get("content") if isinstance(message, dict) else None
    n = 0
    for b in blocks if isinstance(blocks, list) else ():
        inner = b.get("content") if isinstance(b, dict) and b.get("type") == "tool_result" else None
        for item in inner if isinstance(inner, list) else ():
            if isinstance(item, dict) and item.get("type") == "image":
                n += 1
    return n
