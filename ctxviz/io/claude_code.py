"""Claude Code session logs (`~/.claude/projects/<slug>/<session-uuid>.jsonl`, formats.md B4).

One JSONL line per event, linked by `parentUuid`. The conversation is what Claude Code itself
rebuilds when it resumes a session: the chain of lines from the file's last line back to the root,
crossing each compaction through the boundary's `logicalParentUuid`. Branches abandoned by a rewind
stay in the file but are not context (they are counted in a note). Two kinds of line hang beside
that chain and belong to it: the streamed lines of one assistant message (one content block each,
all with the same `message.id`) and the results of parallel tool calls, each a child of its own
`tool_use` line.

- `user` and `assistant` lines become messages; each `tool_result` block its own `tool` message.
- `attachment` lines (file mentions, nested CLAUDE.md, reminders, hook context, todo lists...) are
  what Claude Code renders into the next request: `context` messages with that rendered text.
- A `compact_boundary` becomes a `Compaction` (with its `compactMetadata`) and the summary after it
  (`isCompactSummary`) a `Summary` covering the messages before it (less a preserved segment).
- A `microcompact_boundary` replaces the tool results it lists with Claude Code's placeholder.
- Bookkeeping lines (progress, queue operations, file-history snapshots, titles, timings) are
  skipped with one counted note per kind; sub-agent (`isSidechain`) lines are skipped, unless the
  whole file is a sub-agent transcript, which then loads as that sub-agent's session.
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..engine.id_prefix import IdPrefix
from ..engine.packed_json import PackedLines, PackedRecord, PackedText, Packer
from ..engine.session import (
    Category,
    Compaction,
    Message,
    Part,
    Session,
    Summary,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
    Usage,
    message_with,
    part_text,
    stored_raw,
)
from .base import Fields, make_message, new_message, parse_usage, type_name
from .parts import anthropic_block, anthropic_blocks, dumps_parsed, split_tool_results, tool_result_content_text
from .source import SourceFile

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


#: Fields of a line nothing reads once the line is loaded: the tool's structured result (a second
#: copy of its output, often as large as the message itself) and per-line bookkeeping.
UNREAD_AFTER_LOAD = ("toolUseResult", "cwd", "gitBranch", "userType", "requestId")


def packed_record(packer: Packer, x: _Line) -> PackedRecord:
    """The line's record as its messages keep it (`Message.raw`, engine/packed_json.py), less what
    no reader uses after loading (`UNREAD_AFTER_LOAD`; the Anthropic export's original_blocks reads
    `message.content`, the cache replay `message.usage`; ids, type, time and usage stay). A
    `tool_use` block's `input` is kept as its call's `arguments` (the same JSON, which the message
    holds anyway): the two are one string, not a text and its parsed copy."""
    record, parts = x.record, x.parts
    if x.role == "assistant" and parts:  # (only an assistant line has tool calls)
        message = record["message"]
        content = message.get("content")
        if content.__class__ is list and len(parts) == len(content):
            blocks = []
            for block, part in zip(content, parts, strict=True):
                # A part per block (`_blocks_common`, `anthropic_blocks`), its arguments `dumps_parsed(block["input"])`.
                if part.__class__ is ToolCallPart and block.__class__ is dict and "input" in block and block.get("type") == "tool_use" \
                        and part.id == (block.get("id") or ""):
                    blocks.append(packer.object(block, {"input": PackedText((part.arguments,))}))
                else:
                    blocks.append(packer.value(block))
            return packer.record(record, {"message": packer.object(message, {"content": tuple(blocks)})}, UNREAD_AFTER_LOAD)
    return packer.record(record, drop=UNREAD_AFTER_LOAD)


class ClaudeCodeLoader:
    name = "claude-code"
    title = "Claude Code session (JSONL)"
    #: `load` gives each tool result its call's name (`load_source` then leaves `with_tool_names` out).
    names_tool_results = True

    def sniff(self, src: SourceFile) -> bool:
        if src.kind != "jsonl":
            return False
        first = src.first_record()
        return isinstance(first, dict) and isinstance(first.get("type"), str) and first.get("type") in LINE_TYPES and any(k in first for k in SIGNATURE_KEYS)

    def load(self, src: SourceFile) -> Session:
        return self.load_resumable(src, keep=False, name_results=True)[0]

    def load_resumable(self, src: SourceFile, keep: bool = True, name_results: bool = False) -> tuple[Session, _Reader | None]:
        """A full load, and (with `keep`) what `load_more` needs to carry it on as the file grows
        (None when this state cannot be carried on: see `_Reader.more`). With `name_results`
        (not with `keep`: `io/follow.py` names the results itself), each tool result has the name
        of its call, as `loaders.with_tool_names` gives it."""
        reader = _Reader(src, keep, name_results and not keep)
        reader.add_records(src.records())
        session = reader.session(self.name)
        return session, reader if keep and reader.resumable else None

    def load_more(self, src: SourceFile, state: _Reader, records: Sequence[tuple[int, Any]]) -> tuple[Session, _Reader] | None:
        """The session of the file grown by `records` (complete lines appended since `state`),
        equal to a full load of it, reusing the previous state's messages; None when it cannot be
        sure of that (the caller loads the file whole). `state` is used up either way."""
        session = state.more(src, records, self.name)
        return None if session is None else (session, state)

    @staticmethod
    def _parse(src: SourceFile, lineno: int, record: Any) -> _Line:
        line = _parse_common(src, lineno, record)
        return line if line is not None else ClaudeCodeLoader._parse_checked(src, lineno, record)

    @staticmethod
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


class _Reader:
    """The conversation a Claude Code file holds, from its parsed lines; kept (`keep`) so that the
    lines a growing file appends can be read on top of it (`more`).

    Tallies are kept per phase of the load (parsing, scope, chain, left-out lines, the messages,
    clearing, empty assistants) and written to the source in that order at the end, so that a
    load carried on over later lines names its notes in the order a full load does."""

    def __init__(self, src: SourceFile, keep: bool = False, name_results: bool = False) -> None:
        self.src = src
        self.keep = keep
        #: Tool call id -> name, of the calls read so far, when tool results are named as they are made.
        self.names: dict[str, str] | None = {} if name_results else None
        #: A result was named before its call was read, or a call id came again with another name:
        #: the names are checked against the whole session (`_names_checked`).
        self.names_unsure = False
        self.strings: dict[str, str] = {}  # the one copy of each line's version and session id (`add_records`)
        self.packer = Packer(self.strings)  # the records messages keep (`packed_record`), sharing those strings
        self.lines: list[_Line] = []
        self.written: dict[str, dict[str, Any]] = {}  # uuid -> (a copy of) its first line's record
        self.messages: list[Message] = []
        self.summaries: list[Summary] = []
        #: The ids of `messages`' first messages, as far as a summary's covers needed them, and the
        #: first position of each (`_summary`).
        self.message_ids: list[str] = []
        self.first_at: dict[str, int] = {}
        self.compactions: list[Compaction] = []
        self.produced: dict[str, list[str]] = {}  # line uuid -> ids of the messages it became
        self.system_prompt = ""
        self.tools: tuple[ToolDefinition, ...] = ()
        self.breaks = 0  # times the chain reached a parent the file does not have
        # Tallies by phase (see the class docstring).
        self.parse_tallies: dict[str, int] = {}
        self.loop_tallies: dict[str, int] = {}
        self.sidechain = 0
        self.continued = 0  # breaks after which the chain went on with the line before
        self.left_out = {"rewind": 0, "compact": 0, "unlinked": 0}
        self.cleared_counts = [0, 0]  # tool results, attachments
        # The messages as Claude Code sends them (`_sent`): `messages` without its whitespace-only
        # assistant messages, renumbered; the position in `messages` each came from; whether each
        # took the reported usage of such a message.
        self.sent: list[Message] = []
        self.sent_from: list[int] = []
        self.moved: list[bool] = []
        # What carrying the load on needs (set by a full load; see `more`).
        self.resumable = False
        self.why_full = ""  # why the last `more` could not carry the load on
        self.sub = False  # the whole file is a sub-agent's transcript
        self.agent_id = ""  # its `agentId`, from its first turn that has one
        self.agent_default = ""  # its id when no turn has one
        self.main_turns = 0  # turns not marked `isSidechain`
        self.scope: list[_Line] = []
        self.by_uuid: dict[str, int] = {}
        self.previous: str | None = None  # the line a line without `parentUuid` follows
        self.in_order = False  # no line says what it follows: the file's order is the conversation
        self.chained: list[int] = []
        self.chain: set[int] = set()
        self.included: set[int] = set()
        self.missing: set[str] = set()  # uuids lines refer to that the file does not have (yet)
        self.verdict: dict[int, str] = {}
        self.compacted_after: set[str] = set()
        self.included_ids: set[str] = set()  # message.id of included assistant lines
        self.off_ids: set[str] = set()  # message.id of assistant lines left out
        self.calls: set[str] = set()
        self.answered: set[str] = set()
        self.off_results: set[str] = set()  # tool_use ids answered by lines left out
        self.parallel_answers: set[str] = set()  # tool_use ids answered by parallel results taken in
        self.has_segments = False  # a compaction kept a segment (its lines hang beside the chain)
        self.loop = _Loop()
        self.last_by_uuid: tuple[list[_Line], int, dict[str, _Line]] | None = None  # see `_last_line_by_uuid`

    # --- reading lines --------------------------------------------------------------------------
    def add_records(self, records: Any) -> list[_Line]:
        """Parse records into lines (a line written twice is skipped); returns the lines added."""
        src, written, added = self.src, self.written, []
        saved, src.tallies = src.tallies, self.parse_tallies
        try:
            parse_checked, append, strings = ClaudeCodeLoader._parse_checked, added.append, self.strings
            for lineno, record in records:
                line = _parse_common(src, lineno, record) or parse_checked(src, lineno, record)  # ClaudeCodeLoader._parse, inlined
                get = record.get
                version = get("version")
                if version.__class__ is str:  # (the walk reads a version only if it is a string)
                    # One string for every line's version and session id (both the same on most lines):
                    # less memory, and the walk compares versions by identity.
                    line.version = shared = strings.setdefault(version, version)
                    if shared is not version:
                        record["version"] = shared
                role = line.role
                if role or line.kind == "attachment":  # a line whose record a message may keep
                    timestamp, session_id = get("timestamp"), get("sessionId")
                    if isinstance(timestamp, str):
                        line.timestamp = timestamp
                    if session_id.__class__ is str and (shared := strings.setdefault(session_id, session_id)) is not session_id:
                        record["sessionId"] = shared
                    if role == "user":
                        line.meta, line.compact_summary = get("isMeta") is True, get("isCompactSummary") is True
                        line.images = _result_images(record)
                uuid = line.uuid
                if uuid:
                    earlier = written.get(uuid)
                    if earlier is None:
                        written[uuid] = record
                    elif earlier == record:
                        # Claude Code sometimes appends the same line again: one message, not a rewind to it.
                        src.tally("skipped {n} line(s) written twice (the same uuid and content as an earlier line)")
                        continue
                append(line)
        finally:
            src.tallies = saved
        self.lines += added
        return added

    # --- which lines are the conversation -----------------------------------------------------
    def _scope(self) -> list[_Line]:
        """The lines of the conversation this file is about; sets `agent` when the file is a
        sub-agent's own transcript (then its `isSidechain` lines are the conversation)."""
        lines = self.lines
        scope = [x for x in lines if not x.sidechain]
        # _is_turn_line, inlined (one pass over a large file's lines costs what its checks cost)
        self.main_turns = sum(1 for x in scope if x.uuid and (x.kind in MESSAGE_TYPES or x.role))
        match = SUBAGENT_FILE.match(os.path.basename(self.src.path))
        if match or (not self.main_turns and any(_is_turn_line(x) for x in lines)):
            turns = [x for x in lines if _is_turn_line(x)]
            self.sub = True
            self.agent_id = next((str(x.record["agentId"]) for x in turns if isinstance(x.record.get("agentId"), (str, int))), "")
            self.agent_default = match.group("id") if match else "unknown"
            _build_parts(self.src, lines)
            return list(lines)
        self.sidechain = len(lines) - len(scope)
        return scope

    @property
    def agent(self) -> str:
        """A sub-agent transcript's id ("" for a main session)."""
        return (self.agent_id or self.agent_default) if self.sub else ""

    def _included(self, scope: list[_Line]) -> set[int]:
        """Positions (in `scope`) of the lines that make up the conversation."""
        is_turn = self._is_turn
        if not any(((x.parent is not _MISSING and x.parent is not None) or x.logical) and is_turn(x) for x in scope):
            self.in_order = True
            return {i for i, x in enumerate(scope) if is_turn(x)}  # no line says what it follows (hand-made or stream output): the file's order is the conversation
        by_uuid = self.by_uuid
        previous = None
        chained: list[int] = []
        segments: list[int] = []
        for i, x in enumerate(scope):  # one pass: each line's uuid, its parent, whether the chain runs through it
            if x.parent is _MISSING:
                x.parent = previous
            uuid = x.uuid
            if uuid:
                if uuid not in by_uuid:
                    by_uuid[uuid] = i
                kind = x.kind
                if kind != "progress":
                    previous = uuid
                    if kind in _CHAINED_TYPES or x.role:  # _chained, inlined
                        chained.append(i)
            if x.segment:
                segments.append(i)
        self.previous = previous
        self.chained = chained
        if not chained:
            return set()
        chain = self.chain
        at: int | None = chained[-1]
        find = by_uuid.get
        while at is not None and at not in chain:
            chain.add(at)
            # _parent_position, with the common case (a parent the file has) inlined
            x = scope[at]
            parent = x.parent if x.parent else (x.logical or None)
            found = find(parent) if parent is not None else None
            at = found if found is not None or parent is None else self._parent_position(scope, at)
        included = set(chain)
        # A compaction that kept a segment verbatim: the lines after it continue from that segment's
        # tail, so the boundary and its summary hang beside the chain (they lead to the segment's head).
        for i in segments:
            ends = scope[i].segment
            if i in included or not any(by_uuid.get(ends[k]) in chain for k in ("headUuid", "tailUuid")):
                continue
            at = by_uuid.get(ends["anchorUuid"])
            while at is not None and at not in included:
                included.add(at)
                if at == i:
                    break
                at = by_uuid.get(scope[at].parent) if scope[at].parent else None
            included.add(i)
        self._siblings(scope, range(len(scope)), included, chain)
        self._count_left_out(scope, range(len(scope)), included)
        return included

    def _parent_position(self, scope: list[_Line], at: int) -> int | None:
        """The next line up the chain from `at` (None at a root)."""
        x = scope[at]
        parent = x.parent if x.parent else (x.logical or None)  # a compaction starts a new root
        if parent is None:
            return None
        found = self.by_uuid.get(parent)
        if found is None:
            # A parent the file does not have: a compaction naming a last message Claude Code never
            # wrote (2.1.x), or a file trimmed by hand. The conversation goes on with the line before.
            before = bisect_left(self.chained, at)
            found = self.chained[before - 1] if before else None
            self.breaks += 1
            if found is not None:
                self.continued += 1
        return found

    def _siblings(self, scope: list[_Line], positions: range, included: set[int], chain: set[int], strict: bool = False) -> bool:
        """Add to `included` the lines at `positions` that hang beside the chain: the streamed lines
        of one assistant message, the results of parallel tool calls, and what a parallel branch
        brought with it (a hook's context after one of the parallel calls)."""
        # What a load that is carried on later needs (`more`) is kept for every line; a load that is
        # not (`keep` off) looks only at the lines off the chain, usually none or a few.
        track = self.keep
        off = [i for i in positions if i not in included]
        off_assistants = [i for i in off if scope[i].role == "assistant" and scope[i].message_id]
        if track or off_assistants:
            self.included_ids.update(x.message_id for i in positions if (x := scope[i]).role == "assistant" and x.message_id and i in included)
            ids = self.included_ids
            for i in off_assistants:
                if scope[i].message_id in ids:
                    included.add(i)
        off_users = [i for i in off if scope[i].role == "user" and scope[i].parts]
        if track or off_users:
            calls, answered = self.calls, self.answered
            new_calls: set[str] = set()
            new_answers: set[str] = set()
            for i in positions:
                x = scope[i]
                if x.parts and i in included:
                    for p in x.parts:
                        if isinstance(p, ToolCallPart) and p.id:
                            new_calls.add(p.id)
                        elif isinstance(p, ToolResultPart):
                            new_answers.add(p.tool_call_id)
            if strict and (any(c in self.off_results and c not in answered and c not in calls for c in new_calls)
                           or any(a in self.parallel_answers for a in new_answers)):
                # A call whose result was left out (it would now be taken in), or a call answered again
                # on the chain that a parallel result answered (that result would now be left out).
                return self._unsure("a call whose result was left out, or one answered again", False)
            calls |= new_calls
            answered |= new_answers
            for i in off_users:
                results = [p.tool_call_id for p in scope[i].parts if isinstance(p, ToolResultPart)]
                if results and all(r in calls and r not in answered for r in results):
                    included.add(i)
                    answered.update(results)
                    self.parallel_answers.update(results)
        attachments = [(i, x) for i in off if (x := scope[i]).kind == "attachment" and x.parent]
        grew = True
        while grew:
            grew = False
            for i, x in attachments:
                if i not in included and (at := self.by_uuid.get(x.parent)) in included and at not in chain:
                    included.add(i)
                    grew = True
        for i in off:  # what a later line could still bring in (carrying on is then not sure: see `more`)
            x = scope[i]
            if x.role and i not in included:
                if x.role == "assistant" and x.message_id:
                    self.off_ids.add(x.message_id)
                if x.role == "user":
                    self.off_results.update(p.tool_call_id for p in x.parts if isinstance(p, ToolResultPart))
        return True

    def _count_left_out(self, scope: list[_Line], positions: range, included: set[int]) -> None:
        """Conversation lines off the chain: a branch a rewind abandoned, the `/compact` request a
        compaction took the place of, or lines whose parent is not in the file."""
        by_uuid = self.by_uuid
        self.compacted_after.update(x.logical for i in positions if (x := scope[i]).subtype == "compact_boundary" and x.logical)
        compacted_after = self.compacted_after
        verdict = self.verdict  # position -> "rewind", "compact" or "unlinked"

        def classify(i: int) -> str:
            path: list[int] = []
            at: int | None = i
            result = "rewind"
            while at is not None:
                if at in verdict:
                    result = verdict[at]
                    break
                path.append(at)
                x = scope[at]
                parent = x.parent if x.parent else (x.logical or None)
                if parent is None:
                    break
                if parent not in by_uuid:
                    result = "unlinked"
                    break
                at = by_uuid[parent]
                if at in included:
                    # The branch leaves the conversation at `parent`: a `/compact` request hangs where the
                    # boundary's logical parent is (the boundary takes its place), anything else was rewound.
                    result = "compact" if parent in compacted_after and scope[path[-1]].role == "user" else "rewind"
                    break
                if at in path:
                    break
            for p in path:
                verdict[p] = result
            return result

        for i in positions:
            if i not in included:
                x = scope[i]
                if x.uuid and (x.kind in MESSAGE_TYPES or x.role):
                    self.left_out[classify(i)] += 1

    # --- carrying a load on ---------------------------------------------------------------------
    def more(self, src: SourceFile, records: Sequence[tuple[int, Any]], format_name: str) -> Session | None:
        """The session after `records` were appended, reusing the messages read so far; None when
        the appended lines could change what the lines before them mean. Then a full load is the
        only sure answer; in a live log that happens at a compaction, a rewind, a line naming a
        parent written after it (or one an earlier line named), a preserved segment, a
        microcompaction, a file that turns out to be a
        sub-agent's transcript (or stops being one), and in a file whose lines give no parents when
        one starts giving them. Otherwise the appended lines only extend the chain the last line
        hung from, and each earlier line keeps its place and its message.

        Why each is needed, briefly: a full load walks the chain back from the file's last line, so
        a new last line is read here only when its walk reaches the previous last line through new
        lines alone (a rewind reaches an older one); lines beside the chain (streamed parts of one
        message, parallel tool results, hook context) are taken in by what is on the chain, so new
        chain lines must not take in an earlier line that was left out; and a compaction changes how
        earlier left-out lines are counted."""
        self.src = src
        if not self.resumable:
            return self._unsure("not carried on (the last load could not be)")
        self.resumable = False  # until this carries on to the end (an error midway leaves it unusable)
        added = self.add_records(records)
        new_from = len(self.messages)
        if not added:
            self.resumable = True
            return self._finish(format_name, new_from, new_from)
        if any(x.subtype in ("compact_boundary", "microcompact_boundary") or x.segment for x in added):
            return self._unsure("a compaction, a microcompaction or a preserved segment")
        # The scope: which lines are the conversation.
        turns = [x for x in added if _is_turn_line(x)]
        main_turns = sum(1 for x in turns if not x.sidechain)
        by_name = SUBAGENT_FILE.match(os.path.basename(src.path)) is not None
        if self.sub:
            if main_turns and not by_name:
                return self._unsure("a main-session turn in a sub-agent's transcript")  # a main-session turn: no longer a sub-agent's transcript
            if not self.agent_id:
                self.agent_id = next((str(x.record["agentId"]) for x in turns if isinstance(x.record.get("agentId"), (str, int))), "")
            new = list(added)
            _build_parts(src, new)
        else:
            if not self.main_turns and turns and not main_turns:
                return self._unsure("the first turns are a sub-agent's")  # the first turns are a sub-agent's: the file becomes its transcript
            self.sidechain += sum(1 for x in added if x.sidechain)
            new = [x for x in added if not x.sidechain]
        self.main_turns += main_turns
        scope, start = self.scope, len(self.scope)
        scope += new
        positions = range(start, len(scope))
        if not self._grow_included(scope, positions):
            return None
        first_changed = self.loop.run(self, scope, positions)
        if first_changed < new_from and (self.loop.cleared_tools or self.loop.cleared_lines):
            return self._unsure("a message read before changed, and a microcompaction may have cleared it")
        self.resumable = True
        return self._finish(format_name, first_changed, new_from)

    def _unsure(self, why: str, value: Any = None) -> Any:
        """Not carried on: a full load is needed; `why` says which case (for tests and curiosity)."""
        self.why_full = why
        return value

    def _grow_included(self, scope: list[_Line], positions: range) -> bool:
        """`_included` for lines appended to `scope` at `positions`, when the lines before keep
        their places (False when that is not sure)."""
        included = self.included
        if self.in_order:
            if any((scope[i].parent is not _MISSING and scope[i].parent is not None) or scope[i].logical
                   for i in positions if self._is_turn(scope[i])):
                return self._unsure("a line gives its parent in a file whose lines gave none", False)
            included.update(i for i in positions if self._is_turn(scope[i]))
            return True
        by_uuid, missing = self.by_uuid, self.missing
        previous = self.previous
        for i in positions:
            x = scope[i]
            if x.parent is _MISSING:
                x.parent = previous
            if x.uuid:
                if x.uuid in missing:
                    return self._unsure("a line an earlier line named as its parent (or cleared) was written after it", False)  # an earlier line named it: what that line meant changes
                by_uuid.setdefault(x.uuid, i)
            if x.uuid and x.kind != "progress":
                previous = x.uuid
        self.previous = previous
        missing.update(u for i in positions for u in _references(scope[i]) if u not in by_uuid)
        new_chained = [i for i in positions if _chained(scope[i])]
        chain = self.chain
        if new_chained:
            old_tip = self.chained[-1] if self.chained else None
            if old_tip is None and any(x.role or x.kind == "attachment" for x in scope[: positions.start]):
                return self._unsure("the first chain of the file", False)  # the first chain: lines read before may hang beside it
            self.chained += new_chained
            path: set[int] = set()
            at: int | None = new_chained[-1]
            while at is not None and at != old_tip and at not in path:
                if at < positions.start and (at in chain or _chained(scope[at]) or at in self.verdict or self.has_segments):
                    # An earlier turn (a rewind to it), or an earlier line whose place on the chain
                    # changes how other lines were read.
                    return self._unsure("the new last line does not hang from the previous one (a rewind, a new root)", False)
                path.add(at)  # new lines, and earlier lines no turn hangs from (a progress line, a snapshot)
                at = self._parent_position(scope, at)
            if at != old_tip:
                return self._unsure("the new last line does not hang from the previous one (a rewind, a new root, a loop)", False)
            new_ids = {scope[i].message_id for i in path if scope[i].role == "assistant" and scope[i].message_id}
            if new_ids & self.off_ids:
                return self._unsure("a streamed part of a message left out before", False)  # it would take in a streamed part of a message left out before
            chain |= path
            included |= path
        elif not self.chained:
            return True  # still no chain: nothing is included (as a full load finds)
        if not self._siblings(scope, positions, included, chain, strict=True):
            return False
        self._count_left_out(scope, positions, included)
        return True

    # --- the session ---------------------------------------------------------------------------
    def session(self, format_name: str) -> Session:
        self.scope = scope = self._scope()
        self.included = self._included(scope)
        by_uuid = self.by_uuid
        # _references, with the common case (a line naming only its parent) inlined
        if self.keep:  # what carrying the load on needs (`more`)
            self.missing = {x.parent for x in scope if type(x.parent) is str and x.parent and x.parent not in by_uuid}
            self.missing.update(u for x in scope if x.logical or x.segment or x.cleared[1] for u in _references(x) if u not in by_uuid)
            self.has_segments = any(x.segment for x in scope)
        self.loop.run(self, scope, range(len(scope)))
        self.resumable = self.keep
        session = self._finish(format_name, 0, 0)
        if self.names is None or not (self.names_unsure or self.loop.cleared_lines):
            return session  # each result has the name of the last call of its id (a cleared line may have held a call)
        return _names_checked(session)

    def _finish(self, format_name: str, first_changed: int, new_from: int) -> Session:
        """The session from the messages read so far (those from `first_changed` on are new or
        changed since the last time, those from `new_from` on new), and the tallies in the order a
        full load makes them."""
        loop = self.loop
        if loop.cleared_tools or loop.cleared_lines:
            self._clear(loop.cleared_tools, loop.cleared_lines, new_from)
        self._sent(first_changed)
        src = self.src
        tallies: list[tuple[str, int]] = list(self.parse_tallies.items())
        if self.sidechain:
            tallies.append(("skipped {n} sub-agent (`isSidechain`) line(s): they were never in the main model's context", self.sidechain))
        if self.continued:
            tallies.append(("the chain of lines breaks {n} time(s) at a parent that is not in the file (a message Claude Code "
                            "did not write, or a trimmed file); each time it continues with the line just before", self.continued))
        for kind, template in (("rewind", "left out {n} lines of abandoned branches (rewinds)"),
                               ("compact", "left out {n} line(s) of the `/compact` request(s) a compaction took the place of"),
                               ("unlinked", "left out {n} line(s) whose parent is not in the file (not connected to the last line's chain)")):
            if self.left_out[kind]:
                tallies.append((template, self.left_out[kind]))
        tallies += self.loop_tallies.items()
        tools, attachments = self.cleared_counts
        if tools:
            tallies.append((f"replaced {{n}} tool result(s) a `microcompact_boundary` cleared with \"{CLEARED_TOOL_RESULT}\"", tools))
        if attachments:
            tallies.append((f"replaced {{n}} attachment(s) a `microcompact_boundary` cleared with \"{CLEARED_TOOL_RESULT}\"", attachments))
        moved = sum(self.moved)
        if moved:
            tallies.append(("kept the reported usage of {n} whitespace-only assistant message(s) Claude Code does not send "
                            "(on the message next to it)", moved))
        for template, n in tallies:
            src.tally(template, n)
        notes: list[str] = []
        if self.agent:
            notes.append(f"sub-agent transcript (agentId {self.agent})")
        versions = loop.versions
        if len(versions) > 1:
            notes.append(f"written by Claude Code {versions[0]} to {versions[-1]}")
        compactions = self.compactions
        if len(self.sent) != len(self.messages):  # a compaction's place among the messages sent
            compactions = [replace(c, before_index=bisect_left(self.sent_from, c.before_index)) for c in compactions]
        return Session(
            messages=tuple(self.sent),
            source=src.path,
            format=format_name,
            model=loop.model,
            system_prompt=self.system_prompt,
            tools=self.tools,
            summaries=tuple(self.summaries),
            compactions=tuple(compactions),
            title=loop.custom_title or loop.title or loop.ai_title or (f"sub-agent {self.agent}" if self.agent else ""),
            format_version=versions[-1] if versions else "",
            notes=tuple(notes),
        )

    @staticmethod
    def _is_turn(x: _Line) -> bool:
        """A line that is part of the conversation (as opposed to bookkeeping)."""
        if x.kind == "system":
            return x.subtype in _BOUNDARIES
        return x.kind == "attachment" or bool(x.role)

    def _tally_bookkeeping(self, x: _Line) -> None:
        key = (x.kind, x.subtype)
        template = _BOOKKEEPING_NOTES.get(key)
        if template is None:
            if x.kind == "system":
                template = f"skipped {{n}} `system` line(s) of subtype `{x.subtype or '(none)'}` (Claude Code's own bookkeeping, not sent)"
            elif x.kind in _KNOWN_TYPES:
                template = f"skipped {{n}} `{x.kind}` line(s) (bookkeeping, not context)"
            else:
                template = f"skipped {{n}} line(s) of the unknown type `{x.kind}` (no `message`)"
            if len(_BOOKKEEPING_NOTES) < 1000:  # a file may make up any number of types: only the first are kept
                _BOOKKEEPING_NOTES[key] = template
        self.src.tally(template)

    def _add_names(self, parts: Sequence[Part]) -> None:
        """Note the names of the tool calls among `parts` (for the results read after them)."""
        names = self.names
        assert names is not None
        for p in parts:
            if p.__class__ is ToolCallPart and p.id:
                if names.setdefault(p.id, p.name) != p.name:
                    names[p.id] = p.name
                    self.names_unsure = True  # an id called again with another name: a result read before may be misnamed

    def _add(self, x: _Line, message: Message) -> None:
        self.messages.append(message)
        self.produced.setdefault(x.uuid, []).append(message.id)

    def _user(self, x: _Line) -> bool:
        """A user line; each tool_result block becomes its own `tool` message, as in `messages_from_blocks`.
        Returns whether the line has anything besides tool results (a turn of the user's).

        Ids must stay unique, so when one line yields several messages the first keeps the line's
        uuid and the others get `uuid#1`, `uuid#2`... An internal line (`isMeta`: a skill's text, a
        command's caveat, a reminder) is context Claude Code adds, not the user's words.
        """
        record, uuid, names, messages, timestamp = packed_record(self.packer, x), x.uuid, self.names, self.messages, x.timestamp
        parts = x.parts
        if len(parts) == 1 and parts[0].__class__ is ToolResultPart:  # a tool's output alone: most user lines of an agent's log
            results, rest = parts, ()
        else:
            results, rest = split_tool_results(parts)
        if x.images:  # a screenshot the Read tool returned is sent as an image block inside the result
            self.src.tally("kept {n} image(s) inside tool results as an `[image]` placeholder (their tokens are not counted)", x.images)
        ids = self.produced.setdefault(uuid, [])
        k = 0
        for r in results:
            tool_call_id = r.tool_call_id
            name = ""
            if names is not None and tool_call_id:
                name = names.get(tool_call_id)
                if name is None:
                    name, self.names_unsure = "", True  # its call may come later
            message = new_message(len(messages), "tool", (r,), (f"{uuid}#{k}" if k else uuid) if uuid else "", name, tool_call_id, timestamp,
                               Category.SYSTEM_OUTPUT, None, record)
            messages.append(message)
            ids.append(message.id)
            k += 1
        if rest or not results:
            category = Category.CONTEXT if x.meta else Category.DIALOG
            message = new_message(len(messages), "user", tuple(rest), (f"{uuid}#{k}" if k else uuid) if uuid else "", "", "", timestamp,
                               category, None, record)
            messages.append(message)
            ids.append(message.id)
        return bool(rest)

    def _attachment(self, x: _Line) -> None:
        attachment = x.record.get("attachment")
        if not isinstance(attachment, dict):
            self.src.tally("skipped {n} `attachment` line(s) without an attachment object")
            return
        kind = str(attachment.get("type") or "")
        if kind == "prompt_snapshot":
            self._prompt_snapshot(attachment)
            return
        text, known = render_attachment(attachment)
        if text is None:
            self.src.tally(f"skipped {{n}} `{kind}` attachment(s): Claude Code sends nothing for them")
            return
        if not known:
            self.src.tally(f"read {{n}} `{kind}` attachment(s) from their fields (ctxviz does not know how Claude Code words them)")
        self.src.tally("read {n} attachment line(s) as context messages (what Claude Code renders into the next request)")
        self._add(x, make_message(len(self.messages), "user", [TextPart(wrap_reminder(text))], id=x.uuid, timestamp=_timestamp(x),
                                  category=Category.CONTEXT, raw=packed_record(self.packer, x)))

    def _prompt_snapshot(self, attachment: dict[str, Any]) -> None:
        """Newer versions record the system prompt and the tool list sent with a request."""
        prompt = attachment.get("systemPrompt")
        if isinstance(prompt, list):
            prompt = "\n\n".join(str(p) for p in prompt if isinstance(p, str) and p != "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__")
        if isinstance(prompt, str) and prompt:
            self.system_prompt = prompt
        tools = attachment.get("tools")
        if isinstance(tools, list):
            self.tools = tuple(ToolDefinition(str(t.get("name", "")), str(t.get("description", "")),
                                              t.get("input_schema") if isinstance(t.get("input_schema"), dict) else {})
                               for t in tools if isinstance(t, dict) and t.get("name"))
        self.src.tally("took the system prompt and tool list from the last of {n} `prompt_snapshot` attachment(s)")

    def _last_line_by_uuid(self, scope: list[_Line]) -> dict[str, _Line]:
        """uuid -> the last line in `scope` with it; made once per state of `scope` (a log with many
        compactions that kept a segment would otherwise build it once per compaction)."""
        cached = self.last_by_uuid
        if cached is None or cached[0] is not scope or cached[1] != len(scope):
            cached = self.last_by_uuid = (scope, len(scope), {y.uuid: y for y in scope if y.uuid})
        return cached[2]

    def _compaction(self, x: _Line, scope: list[_Line]) -> tuple[Compaction, frozenset[str]]:
        preserved: list[str] = []
        if x.segment:
            # The segment's lines, tail back to head, in file order.
            by_uuid = self._last_line_by_uuid(scope)
            uuids: list[str] = []
            at = by_uuid.get(x.segment["tailUuid"])
            while at is not None and at.uuid not in uuids:
                uuids.append(at.uuid)
                if at.uuid == x.segment["headUuid"]:
                    break
                at = by_uuid.get(at.parent) if isinstance(at.parent, str) else None
            preserved = list(dict.fromkeys(mid for u in reversed(uuids) for mid in self.produced.get(u, [])))
        assert x.compaction is not None
        compaction = replace(x.compaction, before_index=len(self.messages), preserved=tuple(preserved))
        return compaction, frozenset(preserved)

    def _summary(self, x: _Line, pending: tuple[Compaction, frozenset[str]] | None) -> None:
        """The summary Claude Code writes after a compaction: it covers every message before the
        boundary except a preserved segment (all messages so far when there is no boundary).
        Where the segment is the last messages before the boundary (or there is none), its covers
        are the first message ids: a view of `message_ids` (`IdPrefix`), not a copy, as each
        compaction of a long log covers every message before it."""
        end, keep = (pending[0].before_index, pending[1]) if pending is not None else (len(self.messages), frozenset())
        messages, ids, at = self.messages, self.message_ids, self.first_at
        for k in range(len(ids), end):  # (a message keeps its id and its place: only new ones are added)
            ids.append(messages[k].id)
            at.setdefault(ids[k], k)
        n = end
        while n and ids[n - 1] in keep:
            n -= 1
        if all(at.get(k, n) >= n for k in keep):  # the segment is the last messages before the boundary
            covers: Sequence[str] = IdPrefix(ids, n)
            first, last = (messages[0], messages[n - 1]) if n else (None, None)
        else:
            before = [m for m in messages[:end] if m.id not in keep]
            covers = tuple([m.id for m in before])
            first, last = (before[0], before[-1]) if before else (None, None)
        text = "\n".join(part_text(p) for p in x.parts if part_text(p))
        self.summaries.append(
            Summary(
                text=text,
                depth=1,
                messages_covered=len(covers),
                time_range_start=first.timestamp if first is not None else "",
                time_range_end=last.timestamp if last is not None else "",
                covers=covers,  # type: ignore[arg-type]
                created_at=_timestamp(x),
            )
        )

    def _clear(self, tool_ids: set[str], line_uuids: set[str], start: int) -> None:
        """What a microcompaction cleared, as Claude Code sends it from then on (in the messages
        from `start` on: those before were cleared when they were read)."""
        cleared_ids = {mid for u in line_uuids for mid in self.produced.get(u, [])}
        for k in range(start, len(self.messages)):
            m = self.messages[k]
            if m.role == "tool" and m.tool_call_id in tool_ids:
                parts = tuple(replace(p, text=CLEARED_TOOL_RESULT) if isinstance(p, ToolResultPart) else p for p in m.parts)
                self.messages[k] = message_with(m, parts=parts)
                self.cleared_counts[0] += 1
            elif m.id in cleared_ids:
                self.messages[k] = message_with(m, parts=(TextPart(CLEARED_TOOL_RESULT),))
                self.cleared_counts[1] += 1

    def _sent(self, first_changed: int) -> int:
        """Bring `sent` up to date with `messages`, of which those from `first_changed` on are new
        or changed; returns the first position in `sent` rebuilt (those before are the same objects).

        An assistant message all of whose lines were whitespace: Claude Code sends nothing of it.
        Its call still happened: the usage it reported moves to the next message (or, at the end of
        the file, to the message before it), the usage of a message being read as the call that
        produced it, made on the request just before it. So what is sent for a message depends on
        it and on the whitespace-only messages just before it (and, for the last one, just after
        it): from the last message sent before `first_changed`, with the whitespace-only ones
        before it, everything is rebuilt, and nothing earlier changes (a followed log that writes
        such lines is carried on, not read again whole)."""
        raw, sent, came_from, moved = self.messages, self.sent, self.sent_from, self.moved
        at = bisect_left(came_from, first_changed) - 1  # the last message sent from before first_changed
        if at < 0:
            at = start = 0
        else:
            start = came_from[at - 1] + 1 if at else 0
        del sent[at:], came_from[at:], moved[at:]
        tail = raw[start:]
        empty = [m.role == "assistant" and not m.parts for m in tail]
        usages = [m.usage for m in tail]
        took = [False] * len(tail)
        if any(empty):
            n = len(tail)
            for k, m in enumerate(tail):
                if not empty[k] or m.usage is None:
                    continue
                after = next((j for j in range(k + 1, n) if not empty[j]), None)
                before = next((j for j in range(k - 1, -1, -1) if not empty[j]), None)
                target = after if after is not None and usages[after] is None else (
                    before if after is None and before is not None and usages[before] is None else None)
                if target is not None:
                    usages[target] = m.usage
                    took[target] = True
        for k, m in enumerate(tail):
            if empty[k]:
                continue
            index = len(sent)
            sent.append(m if m.index == index and not took[k] else message_with(m, index=index, usage=usages[k]))
            came_from.append(start + k)
            moved.append(took[k])
        return at



def _is_turn_line(x: _Line) -> bool:
    """A turn, for telling a sub-agent's transcript from a main session."""
    return bool(x.uuid) and (x.kind in MESSAGE_TYPES or bool(x.role))


def _chained(x: _Line) -> bool:
    """A line the chain of `parentUuid`s runs through."""
    return bool(x.uuid) and x.kind != "progress" and (x.kind in MESSAGE_TYPES or bool(x.role) or x.kind == "system")


def _references(x: _Line) -> list[str]:
    """The uuids a line names: its parent, its logical parent, its preserved segment's ends, the
    attachments a microcompaction cleared."""
    refs = [x.parent] if isinstance(x.parent, str) and x.parent else []
    if x.logical:
        refs.append(x.logical)
    if x.segment:
        refs += [u for u in x.segment.values() if u]
    refs += x.cleared[1]
    return refs


class _Loop:
    """The walk over the conversation's lines that makes the messages, with what it carries from
    one line to the next (so that lines appended later continue it)."""

    def __init__(self) -> None:
        self.title = self.custom_title = self.ai_title = ""
        self.versions: list[str] = []
        self.model = ""
        self.open_assistant: int | None = None  # messages[] index of the assistant message later lines may extend
        self.open_id = ""  # its message.id
        self.open_seen: set[tuple[str, str]] | None = None  # its content blocks (None: not made yet, see `_run`)
        self.pending_compaction: tuple[Compaction, frozenset[str]] | None = None
        self.cleared_tools: set[str] = set()
        self.cleared_lines: set[str] = set()

    def run(self, reader: _Reader, scope: list[_Line], positions: range) -> int:
        """Read the lines at `positions`; returns the first message index they changed."""
        src = reader.src
        saved, src.tallies = src.tallies, reader.loop_tallies
        try:
            first_changed = self._run(reader, scope, positions)
        finally:
            src.tallies = saved
        return first_changed

    def _run(self, reader: _Reader, scope: list[_Line], positions: range) -> int:
        src, messages, included, versions, names = reader.src, reader.messages, reader.included, self.versions, reader.names
        produced, packer = reader.produced, reader.packer
        first_changed = len(messages)
        last_version = versions[-1] if versions else None  # (a line's version is one shared string: see `add_records`)
        for i in positions:
            x = scope[i]
            record = x.record
            version = x.version
            if version is not last_version and version.__class__ is str and version and (not versions or versions[-1] != version):
                versions.append(version)
                last_version = version
            kind, role = x.kind, x.role
            if kind in _TITLE_TYPES:
                if kind == "summary":
                    summary = record.get("summary")
                    self.title = summary if isinstance(summary, str) and summary else self.title
                elif kind == "custom-title":
                    name = record.get("customTitle")
                    self.custom_title = name if isinstance(name, str) and name else self.custom_title
                else:
                    name = record.get("aiTitle")
                    self.ai_title = name if isinstance(name, str) and name else self.ai_title
            if not (role or kind == "attachment" or (kind == "system" and x.subtype in _BOUNDARIES)):  # _is_turn, inlined
                reader._tally_bookkeeping(x)
                continue
            if i not in included:
                continue
            if not role:  # a system line (a boundary) or an attachment: neither has a role
                self.open_assistant = None if kind == "system" else self.open_assistant
                if kind == "attachment":
                    reader._attachment(x)
                elif x.subtype == "compact_boundary":
                    self.pending_compaction = reader._compaction(x, scope)
                    reader.compactions.append(self.pending_compaction[0])
                else:  # microcompact_boundary
                    self.cleared_tools.update(x.cleared[0])
                    self.cleared_lines.update(x.cleared[1])
                continue
            if kind != "user" and kind != "assistant":
                src.tally(f"read {{n}} line(s) of the unknown type `{kind}` as messages", 1)
            if role == "assistant":
                model = x.model
                if model and model != SYNTHETIC_MODEL:
                    self.model = model
                parts = x.parts
                first = parts[0] if parts else None
                # Claude Code drops whitespace-only assistant lines before it sends the history (not .strip(): no copy).
                if first.__class__ is TextPart and all(isinstance(p, TextPart) and (not p.text or p.text.isspace()) for p in parts):
                    src.tally("left out {n} whitespace-only assistant line(s), as Claude Code does before sending them")
                    parts = []
                target = self.open_assistant
                if target is not None and x.message_id and x.message_id == self.open_id:
                    prev = messages[target]
                    seen = self.open_seen
                    if seen is None:  # made at the message's first continuation: most messages have none
                        seen = self.open_seen = {_block_key(p) for p in prev.parts}
                    new = [p for p in parts if _block_key(p) not in seen]
                    seen.update(_block_key(p) for p in new)
                    if names is not None:
                        reader._add_names(new)
                    messages[target] = message_with(prev, parts=prev.parts + tuple(new), usage=x.usage or prev.usage,
                                                    raw=PackedLines((*stored_raw(prev), packed_record(packer, x))))
                    produced[x.uuid] = [prev.id]
                    first_changed = min(first_changed, target)
                    continue
                self.open_assistant, self.open_id = len(messages), x.message_id
                self.open_seen = None  # the keys of the open message's parts, once a continuation needs them
                if names is not None:
                    reader._add_names(parts)
                message = new_message(len(messages), "assistant", tuple(parts), x.uuid, "", "", x.timestamp, Category.DIALOG, x.usage,
                                      PackedLines((packed_record(packer, x),)))
                messages.append(message)
                produced.setdefault(x.uuid, []).append(message.id)
                continue
            # A user line.
            if x.compact_summary:
                self.open_assistant = None
                reader._summary(x, self.pending_compaction)
                self.pending_compaction = None
                continue
            if reader._user(x):
                self.open_assistant = None  # a turn of the user's: the assistant message is over
        return first_changed


def _names_checked(session: Session) -> Session:
    """The session with each tool result named as `loaders.with_tool_names` names it: by the last
    call of its id among the messages. The names given as the results were read are those of the
    calls read before them, which is that name unless a later line repeats a call id (or a
    microcompaction cleared a call): those few are named again."""
    final = {p.id: p.name for m in session.messages for p in m.parts if isinstance(p, ToolCallPart) and p.id}
    wrong = [k for k, m in enumerate(session.messages) if m.role == "tool" and m.name != final.get(m.tool_call_id, "")]
    if not wrong:
        return session
    messages = list(session.messages)
    for k in wrong:
        messages[k] = message_with(messages[k], name=final.get(messages[k].tool_call_id, ""))
    return replace(session, messages=tuple(messages))


def _timestamp(x: _Line) -> str:
    return x.timestamp


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


def _block_key(part: Part) -> tuple[str, str]:
    """Identifies a content block within one assistant message (a streamed line repeated). A pair,
    not one string: the text is not copied (a part's kind has no colon, so pairs tell apart exactly
    what "kind:text" strings would)."""
    if isinstance(part, ToolCallPart) and part.id:
        return ("tool_use", part.id)
    return (part.kind, part_text(part))


def wrap_reminder(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


# --- attachments ------------------------------------------------------------------------------------
#: Attachment types Claude Code sends nothing for (its `normalizeAttachmentForAPI` returns no
#: message), including the legacy ones it ignores.
SILENT_ATTACHMENTS = frozenset(
    ("already_read_file", "command_permissions", "edited_image_file", "hook_cancelled", "hook_error_during_execution",
     "hook_non_blocking_error", "hook_system_message", "structured_output", "hook_permission_decision", "dynamic_skill",
     "autocheckpointing", "background_task_status", "todo", "task_progress", "ultramemory", "context_efficiency")
)


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value, ensure_ascii=False, default=str))


def _lines(value: Any) -> list[str]:
    return [_s(v) for v in value] if isinstance(value, list) else ([_s(value)] if value else [])


def _numbered(content: str) -> str:
    """A file as the Read tool returns it: `cat -n` style line numbers."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(content.split("\n"), start=1))


def _file(a: dict[str, Any]) -> str:
    content = a.get("content") if isinstance(a.get("content"), dict) else {}
    name = _s(a.get("filename") or a.get("path") or content.get("filePath"))
    call = f"Called the Read tool with the following input: {json.dumps({'file_path': name})}"
    inner = content.get("file") if isinstance(content.get("file"), dict) else content
    if content.get("type") in (None, "text"):
        result = _numbered(_s(inner.get("content")))
    else:
        result = f"[{content.get('type')}: {name}]"
    text = f"{call}\n\nResult of calling the Read tool:\n{result}"
    if a.get("truncated"):
        text += f"\n\nNote: The file {name} was too large and has been truncated. Use Read to read more of the file if you need."
    return text


def _directory(a: dict[str, Any]) -> str:
    path = _s(a.get("path"))
    call = json.dumps({"command": f"ls {path}", "description": f"Lists files in {path}"})
    return f"Called the Bash tool with the following input: {call}\n\nResult of calling the Bash tool:\n{_s(a.get('content'))}"


def _nested_memory(a: dict[str, Any]) -> str:
    content = a.get("content")
    if isinstance(content, dict):
        return f"Contents of {_s(content.get('path') or a.get('path'))}:\n\n{_s(content.get('content'))}"
    return f"Contents of {_s(a.get('path'))}:\n\n{_s(content)}"


def _todo_reminder(a: dict[str, Any]) -> str:
    items = a.get("content") if isinstance(a.get("content"), list) else []
    text = ("The TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit from tracking progress, "
            "consider using the TodoWrite tool to track progress. Also consider cleaning up the todo list if has become stale and no "
            "longer matches what you are working on. Only use it if it's relevant to the current work. This is just a gentle reminder "
            "- ignore if not applicable. Make sure that you NEVER mention this reminder to the user\n")
    todos = "\n".join(f"{k}. [{_s(t.get('status'))}] {_s(t.get('content'))}" for k, t in enumerate(items, start=1) if isinstance(t, dict))
    return text + (f"\n\nHere are the existing contents of your todo list:\n\n[{todos}]" if todos else "")


def _task_reminder(a: dict[str, Any]) -> str:
    items = a.get("content") if isinstance(a.get("content"), list) else []
    text = ("The task tools haven't been used recently. If you're working on tasks that would benefit from tracking progress, consider "
            "using the task tools to add new tasks and update task status. Only use these if relevant to the current work. This is just a "
            "gentle reminder - ignore if not applicable. Make sure that you NEVER mention this reminder to the user\n")
    tasks = "\n".join(f"#{_s(t.get('id'))}. [{_s(t.get('status'))}] {_s(t.get('subject'))}" for t in items if isinstance(t, dict))
    return text + (f"\n\nHere are the existing tasks:\n\n{tasks}" if tasks else "")


def _hook(a: dict[str, Any], what: str, body: str) -> str:
    return f"{_s(a.get('hookName'))} hook {what}: {body}"


def _hook_success(a: dict[str, Any]) -> str | None:
    if a.get("hookEvent") not in ("SessionStart", "UserPromptSubmit") or not _s(a.get("content")):
        return None
    return _hook(a, "success", _s(a.get("content")))


def _blocking(a: dict[str, Any]) -> str:
    error = a.get("blockingError") if isinstance(a.get("blockingError"), dict) else {}
    return _hook(a, "blocking error from command", f"\"{_s(error.get('command'))}\": {_s(error.get('blockingError'))}")


def _delta(a: dict[str, Any], added: str, removed: str, added_key: str = "addedLines", removed_key: str = "removedNames") -> str | None:
    parts = []
    if _lines(a.get(added_key)):
        parts.append(added + "\n" + "\n".join(_lines(a.get(added_key))))
    if _lines(a.get(removed_key)):
        parts.append(removed + "\n" + "\n".join(_lines(a.get(removed_key))))
    return "\n\n".join(parts) or None


def _mcp_resource(a: dict[str, Any]) -> str:
    content = a.get("content") if isinstance(a.get("content"), dict) else {}
    texts = [_s(c.get("text")) for c in content.get("contents") or [] if isinstance(c, dict) and "text" in c]
    if not texts:
        return f"<mcp-resource server=\"{_s(a.get('server'))}\" uri=\"{_s(a.get('uri'))}\">(No content)</mcp-resource>"
    return "\n".join(f"Full contents of resource:\n{t}\nDo NOT read this resource again unless you think it may have changed, since you "
                     "already have the full contents." for t in texts)


def _async_hook(a: dict[str, Any]) -> str | None:
    response = a.get("response") if isinstance(a.get("response"), dict) else {}
    specific = response.get("hookSpecificOutput") if isinstance(response.get("hookSpecificOutput"), dict) else {}
    texts = [t for t in (_s(response.get("systemMessage")), _s(specific.get("additionalContext"))) if t]
    return "\n".join(texts) or None


_RENDERERS: dict[str, Any] = {
    "file": _file,
    "directory": _directory,
    "nested_memory": _nested_memory,
    "edited_text_file": lambda a: (f"Note: {_s(a.get('filename'))} was modified, either by the user or by a linter. This change was "
                                   "intentional, so make sure to take it into account as you proceed (ie. don't revert it unless the user "
                                   "asks you to). Don't tell the user this, since they are already aware. Here are the relevant changes "
                                   f"(shown with line numbers):\n{_s(a.get('snippet'))}"),
    "compact_file_reference": lambda a: (f"Note: {_s(a.get('filename'))} was read before the last conversation was summarized, but the "
                                         "contents are too large to include. Use Read tool if you need to access it."),
    "selected_lines_in_ide": lambda a: (f"The user selected the lines {_s(a.get('lineStart'))} to {_s(a.get('lineEnd'))} from "
                                        f"{_s(a.get('filename'))}:\n{_s(a.get('content'))[:2000]}\n\nThis may or may not be related to "
                                        "the current task."),
    "opened_file_in_ide": lambda a: (f"The user opened the file {_s(a.get('filename'))} in the IDE. This may or may not be related to "
                                     "the current task."),
    "plan_file_reference": lambda a: (f"A plan file exists from plan mode at: {_s(a.get('planFilePath'))}\n\nPlan contents:\n\n"
                                      f"{_s(a.get('planContent'))}\n\nIf this plan is relevant to the current work and not already "
                                      "complete, continue working on it."),
    "invoked_skills": lambda a: ("The following skills were invoked in this session. Continue to follow these guidelines:\n\n"
                                 + "\n\n---\n\n".join(f"### Skill: {_s(s.get('name'))}\nPath: {_s(s.get('path'))}\n\n{_s(s.get('content'))}"
                                                      for s in a.get("skills") or [] if isinstance(s, dict))) if a.get("skills") else None,
    "todo_reminder": _todo_reminder,
    "task_reminder": _task_reminder,
    "queued_command": lambda a: (f"The user sent the following message:\n{_s(a.get('prompt'))}\n\nPlease address this message and "
                                 "continue with your tasks.") if isinstance(a.get("prompt"), str) else "\n".join(
                                     _s(b.get("text")) for b in a.get("prompt") or [] if isinstance(b, dict) and b.get("type") == "text"),
    "hook_success": _hook_success,
    "hook_additional_context": lambda a: _hook(a, "additional context", "\n".join(_lines(a.get("content")))) if a.get("content") else None,
    "hook_blocking_error": _blocking,
    "hook_stopped_continuation": lambda a: _hook(a, "stopped continuation", _s(a.get("message"))),
    "critical_system_reminder": lambda a: _s(a.get("content")),
    "diagnostics": lambda a: ("<new-diagnostics>The following new diagnostic issues were detected:\n\n"
                              + _s(a.get("files")) + "</new-diagnostics>") if a.get("files") else None,
    "date_change": lambda a: (f"The date has changed. Today's date is now {_s(a.get('newDate'))}. DO NOT mention this to the user "
                              "explicitly because they are already aware."),
    "skill_listing": lambda a: f"The following skills are available for use with the Skill tool:\n\n{_s(a.get('content'))}" if a.get("content") else None,
    "deferred_tools_delta": lambda a: _delta(a, "The following deferred tools are now available via ToolSearch:",
                                             "The following deferred tools are no longer available (their MCP server disconnected). Do not "
                                             "search for them \u2014 ToolSearch will return no match:"),
    "agent_listing_delta": lambda a: _delta(a, "Available agent types for the Agent tool:" if a.get("isInitial")
                                            else "New agent types are now available for the Agent tool:",
                                            "The following agent types are no longer available:", removed_key="removedTypes"),
    "mcp_instructions_delta": lambda a: _delta(a, "# MCP Server Instructions\n\nThe following MCP servers have provided instructions for "
                                                  "how to use their tools and resources:\n",
                                               "The following MCP servers have disconnected. Their instructions above no longer apply:",
                                               added_key="addedBlocks"),
    "token_usage": lambda a: f"Token usage: {_s(a.get('used'))}/{_s(a.get('total'))}; {_s(a.get('remaining'))} remaining",
    "budget_usd": lambda a: f"USD budget: ${_s(a.get('used'))}/${_s(a.get('total'))}; ${_s(a.get('remaining'))} remaining",
    "mcp_resource": _mcp_resource,
    "agent_mention": lambda a: (f"The user has expressed a desire to invoke the agent \"{_s(a.get('agentType'))}\". Please invoke the agent "
                                "appropriately, passing in the required context to it. "),
    "async_hook_response": _async_hook,
    "plan_mode_exit": lambda a: ("## Exited Plan Mode\n\nYou have exited plan mode. You can now make edits, run tools, and take actions."
                                 + (f" The plan file is located at {_s(a.get('planFilePath'))} if you need to reference it."
                                    if a.get("planExists") else "")),
}


def render_attachment(attachment: dict[str, Any]) -> tuple[str | None, bool]:
    """(the text Claude Code renders an attachment into, or None when it sends nothing; whether
    ctxviz knows the type's wording). An unknown type is read from its own fields: its text, or
    its JSON."""
    kind = str(attachment.get("type") or "")
    if kind in SILENT_ATTACHMENTS:
        return None, True
    render = _RENDERERS.get(kind)
    if render is not None:
        text = render(attachment)
        return (text or None), True
    for key in ("content", "text", "prompt", "message"):
        if isinstance(attachment.get(key), str) and attachment[key]:
            return attachment[key], False
    rest = {k: v for k, v in attachment.items() if k != "type"}
    return (json.dumps(rest, ensure_ascii=False, default=str) if rest else None), False
