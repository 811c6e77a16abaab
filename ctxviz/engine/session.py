"""The session model every loader produces and every policy reads.

Plain frozen dataclasses: a loaded session never changes, so a plan can be recomputed from it at
any time and the GUI can share it between threads without locks.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any, Literal, TypeVar, Union

from .growth import carried
from .id_prefix import IdPrefix
from .packed_json import PACKED, unpack
from .tool_links import tool_links

_T = TypeVar("_T")

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


class Category(StrEnum):
    """The ContextWindowManager's message categories, used by every view for colour and grouping."""

    SYSTEM = "system"
    CONTEXT = "context"
    DIALOG = "dialog"
    SYSTEM_OUTPUT = "system_output"
    ERROR = "error"
    INTERNAL = "internal"
    UNKNOWN = "unknown"


#: The documented default mapping from a role to a category; a file may override it per message.
DEFAULT_CATEGORY_BY_ROLE: Mapping[str, Category] = {
    "system": Category.SYSTEM,
    "user": Category.DIALOG,
    "assistant": Category.DIALOG,
    "tool": Category.SYSTEM_OUTPUT,
}


def default_category(role: str) -> Category:
    return DEFAULT_CATEGORY_BY_ROLE.get(role, Category.UNKNOWN)


@dataclass(frozen=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class ImagePart:
    """An image; `url` is a URL or a data: URI, kept verbatim so exports round-trip."""

    url: str = ""
    media_type: str = ""
    detail: str = ""
    kind: Literal["image"] = "image"


@dataclass(frozen=True)
class ToolCallPart:
    """A tool call; `arguments` is the JSON text the model produced (OpenAI keeps it a string)."""

    id: str
    name: str
    arguments: str = "{}"
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ToolResultPart:
    """A tool's output. `compacted_at` (Unix ms) marks an output mnesis' pruner has compacted."""

    tool_call_id: str
    text: str
    is_error: bool = False
    compacted_at: int = 0
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class FileRefPart:
    """mnesis' FileRefPart: a file the agent explored, sent as a `[FILE: ...]` block."""

    path: str
    content_id: str = ""
    file_type: str = ""
    token_count: int = 0
    exploration_summary: str = ""
    kind: Literal["file_ref"] = "file_ref"


@dataclass(frozen=True)
class ThinkingPart:
    text: str
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class OpaquePart:
    """A content block ctxviz does not model (a provider's new block type, a hosted tool's call or
    result): kept, not refused, so it is counted, shown and sent like text. `type` is the block's
    own type name; `text` is its text fields, or its JSON when it has none."""

    type: str
    text: str
    kind: Literal["opaque"] = "opaque"


Part = Union[TextPart, ImagePart, ToolCallPart, ToolResultPart, FileRefPart, ThinkingPart, OpaquePart]
#: Parts sent to a model as text in OpenAI chat form.
TEXT_PARTS = (TextPart, ToolResultPart, FileRefPart, OpaquePart)


@dataclass(frozen=True)
class Usage:
    """Token usage the provider reported for the call that produced a message."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def window_fill(self) -> int:
        """What was really in the window for that call (Claude Code's ground truth)."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


@dataclass(frozen=True)
class Message:
    id: str
    index: int
    role: str
    parts: tuple[Part, ...] = ()
    name: str = ""
    tool_call_id: str = ""
    timestamp: str = ""
    category: Category = Category.DIALOG
    usage: Usage | None = None
    raw: Any = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        """All readable text of the message, parts joined by newlines (for display and search).
        A message of one part is that part's text, asked once (most messages: each read of a
        long session's texts, as building its anchor index does, paid a generator and two calls)."""
        parts = self.parts
        if len(parts) == 1:
            return part_text(parts[0])
        return "\n".join([t for t in map(part_text, parts) if t])

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def image_count(self) -> int:
        return sum(isinstance(p, ImagePart) for p in self.parts)

    def openai_content(self) -> str | list[dict[str, Any]] | None:
        """The `content` value this message has in OpenAI chat form.

        A message made only of text is a plain string (as frameworks store it); anything with
        images becomes a part list; a tool-call-only assistant message has None.
        """
        texts = [p for p in self.parts if isinstance(p, TEXT_PARTS)]
        images = [p for p in self.parts if isinstance(p, ImagePart)]
        if not images:
            if not texts:
                return None if self.tool_calls else ""
            return "\n".join(part_text(p) for p in texts)
        out: list[dict[str, Any]] = []
        for p in self.parts:
            if isinstance(p, ImagePart):
                image_url: dict[str, Any] = {"url": p.url}
                if p.detail:
                    image_url["detail"] = p.detail
                out.append({"type": "image_url", "image_url": image_url})
            elif isinstance(p, TEXT_PARTS):
                out.append({"type": "text", "text": part_text(p)})
        return out

    def to_openai(self) -> dict[str, Any]:
        """This message as one OpenAI Chat Completions message dict."""
        role = self.role if self.role in ROLES else "user"
        msg: dict[str, Any] = {"role": role, "content": self.openai_content()}
        if self.name and role != "tool":
            msg["name"] = self.name
        calls = self.tool_calls
        if calls and role == "assistant":
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls
            ]
        if role == "tool":
            msg["tool_call_id"] = self.tool_call_id or next(
                (p.tool_call_id for p in self.parts if isinstance(p, ToolResultPart)), ""
            )
        return msg

    @cached_property
    def sent_form(self) -> Mapping[str, Any]:
        """`to_openai()`, built once per message object: a followed log's grown session holds the
        same message objects, so each plan's real count converts only the new ones (the message is
        frozen, so the form never goes stale). Read-only: a caller that changes it wants
        `to_openai()`, which builds a fresh one."""
        return self.to_openai()


class _Raw:
    """`Message.raw`: the record the message was read from, as the loader gave it. A loader may keep
    it packed (`engine/packed_json.py`: a Claude Code line costs a fraction of its parsed dict); it is
    unpacked when first read and kept so from then on, as the policies that read `raw` read it at
    every turn of a replay (`record_of` reads it without keeping it: a one-pass reader's).
    Kept in the message as `_raw`."""

    def __get__(self, message: Message | None, owner: type | None = None) -> Any:
        if message is None:
            return None  # the field's default, as the dataclass reads it
        value = stored_raw(message)
        if value.__class__ in PACKED:
            value = unpack(value)
            # One store, atomic: a thread that read the packed form meanwhile unpacked an equal record.
            object.__setattr__(message, "_raw", value)
        return value

    def __set__(self, message: Message, value: Any) -> None:
        object.__setattr__(message, "_raw", value)


Message.raw = _Raw()  # type: ignore[assignment,misc]  # after @dataclass, which takes `raw`'s default (None) from the class body


def stored_raw(message: Message) -> Any:
    """`message.raw` as the message keeps it (packed or not): what a copy of the message takes."""
    # (every way a message is built sets it; None: given no raw). Read as an attribute, never
    # through `message.__dict__`: on CPython 3.11 asking a message for its `__dict__` gives it a
    # dict of its own in place of the values kept in the object, and every later attribute read
    # of that message is slower (a plan of 4,000 messages 4.2 -> 5.2 ms once each had been asked).
    return getattr(message, "_raw", None)


def record_of(message: Message) -> Any:
    """`message.raw`, unpacked afresh where it is packed and left packed in the message: for readers
    that read each message once (an export, the cache lifetime a log recorded), so that a loaded
    session stays small."""
    value = stored_raw(message)
    return unpack(value) if value.__class__ in PACKED else value


def same_raw(a: Message, b: Message) -> bool:
    """`a.raw == b.raw`, without keeping either unpacked: equal packed records unpack to equal
    records, and packed records that differ are unpacked afresh to be compared (equal records may
    pack to different bytes: `packed_json.MARSHAL_VERSION`)."""
    x, y = stored_raw(a), stored_raw(b)
    if x.__class__ not in PACKED and y.__class__ not in PACKED:
        return bool(x == y)
    return x == y or bool(record_of(a) == record_of(b))


MESSAGE_DEFAULTS = {"name": "", "tool_call_id": "", "timestamp": "", "usage": None}


def plain_text_message(id: str, index: int, role: str, text: str, category: Category, raw: Any = None, tool_call_id: str = "") -> Message:
    """A text-only Message built without the frozen dataclass' per-field `object.__setattr__`.

    Loaders call this for the bulk of a 100 MB log; the result is identical (and equal) to
    `Message(id, index, role, (TextPart(text),), tool_call_id=tool_call_id, category=category, raw=raw)`.
    """
    return built_message(id, index, role, (text_part(text),) if text else (), category, raw, tool_call_id)


def text_part(text: str) -> TextPart:
    """`TextPart(text)`, without the frozen dataclass' constructor (identical and equal)."""
    part = object.__new__(TextPart)
    part.__dict__.update(text=text, kind="text")
    return part


# The builders below set each field as the frozen constructor does, one `object.__setattr__` each,
# so the values stay inline in the object: a `__dict__.update` (as `text_part`) makes the instance
# dict, about 5 % more memory for an 8 MB Gemini CLI log (1.29x against 1.24x `json.loads`).
_new = object.__new__
_set = object.__setattr__


def thinking_part(text: str) -> ThinkingPart:
    """`ThinkingPart(text)`, without the frozen dataclass' constructor (identical and equal)."""
    part = _new(ThinkingPart)
    _set(part, "text", text)
    _set(part, "kind", "thinking")
    return part


def tool_call_part(id: str, name: str, arguments: str) -> ToolCallPart:
    """`ToolCallPart(id, name, arguments)`, without the frozen dataclass' constructor."""
    part = _new(ToolCallPart)
    _set(part, "id", id)
    _set(part, "name", name)
    _set(part, "arguments", arguments)
    _set(part, "kind", "tool_call")
    return part


def tool_result_part(tool_call_id: str, text: str, is_error: bool) -> ToolResultPart:
    """`ToolResultPart(tool_call_id, text, is_error)`, without the frozen dataclass' constructor."""
    part = _new(ToolResultPart)
    _set(part, "tool_call_id", tool_call_id)
    _set(part, "text", text)
    _set(part, "is_error", is_error)
    _set(part, "compacted_at", 0)
    _set(part, "kind", "tool_result")
    return part


def built_message(id: str, index: int, role: str, parts: tuple[Part, ...], category: Category, raw: Any = None, tool_call_id: str = "") -> Message:
    """`Message(id, index, role, parts, tool_call_id=..., category=..., raw=...)` built directly (identical
    and equal): loaders' fast paths for the common records of a 100 MB log."""
    message = object.__new__(Message)
    message.__dict__.update(MESSAGE_DEFAULTS, id=id, index=index, role=role, parts=parts, category=category, _raw=raw)
    if tool_call_id:
        message.__dict__["tool_call_id"] = tool_call_id
    return message


_MESSAGE_FIELDS = ("id", "index", "role", "parts", "name", "tool_call_id", "timestamp", "category", "usage")  # and raw, below


def message_with(message: Message, **changes: Any) -> Message:
    """`dataclasses.replace(message, **changes)` without re-running the constructor (no field
    validation happens there): loaders call it for thousands of messages of a 100 MB log."""
    new = object.__new__(Message)
    # Field by field, in the constructor's order: the values stay inline in the object (a dict
    # built with __dict__.update costs 170 bytes more per message).
    for name in _MESSAGE_FIELDS:
        object.__setattr__(new, name, changes[name] if name in changes else getattr(message, name))
    object.__setattr__(new, "_raw", changes["raw"] if "raw" in changes else stored_raw(message))  # (kept as it is kept: `_Raw`)
    return new


def part_text(part: Part) -> str:
    """The text a part contributes when a message is shown or sent as plain text."""
    if isinstance(part, (TextPart, ThinkingPart)):
        return part.text
    if isinstance(part, ToolResultPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return f"{part.name}({part.arguments})"
    if isinstance(part, FileRefPart):
        return render_file_ref(part)
    if isinstance(part, OpaquePart):
        return part.text
    return ""


def render_file_ref(part: FileRefPart) -> str:
    """mnesis' `[FILE: ...]` block, as its ContextBuilder renders it (thousands separator included)."""
    return "\n".join(
        [
            f"[FILE: {part.path}]",
            f"Content-ID: {part.content_id}",
            f"Type: {part.file_type}",
            f"Tokens: {part.token_count:,}",
            "Exploration Summary:",
            part.exploration_summary,
            "[/FILE]",
        ]
    )


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    #: A provider's hosted (server) tool as the file defines it (Anthropic `{"type": "web_search_20250305",
    #: "name": ..., "max_uses": ...}`): it has no schema, and an export to that provider sends it as it is.
    hosted: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_openai())


@dataclass(frozen=True)
class Summary:
    """An earlier summary of part of the conversation, as missy's summary store keeps it."""

    text: str
    depth: int = 1
    messages_covered: int = 0
    time_range_start: str = ""
    time_range_end: str = ""
    covers: tuple[str, ...] = ()
    created_at: str = ""
    #: The id of the newest message the agent held when it wrote the summary, where that matters
    #: (Gemini CLI truncates the tool outputs it keeps at that moment, and only then).
    held_until: str = ""
    #: A replay's summaries: the ids of the messages after which this one and those it absorbed
    #: were written (OpenHands' Condensation events sit there in its log and end tool loops).
    written_after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Compaction:
    """A point where the agent compacted its context (Claude Code's compact_boundary)."""

    before_index: int
    trigger: str = ""
    pre_tokens: int = 0
    #: The context's size right after the compaction, where the log says it (`postTokens`), else None (unknown).
    post_tokens: int | None = None
    #: Ids of the messages kept verbatim after the summary (`preservedSegment`), oldest first.
    preserved: tuple[str, ...] = ()


Columns = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def _agreeing(base: list[str], ids: tuple[str, ...]) -> int:
    """How many of the first ids of `base` and `ids` are the same (compared at C speed when all are)."""
    m = min(len(base), len(ids))
    if tuple(base[:m]) == ids[:m]:
        return m
    return next(j for j, (a, b) in enumerate(zip(base, ids, strict=False)) if a != b)


def _written_at(start: int, boundaries: list[Compaction], befores: list[int], ids: tuple[str, ...]) -> int:
    """Where a summary whose covers end just before `start` was written: at the first compaction
    whose boundary is at `start` or later (`boundaries` in the order of `befores`, their
    before_index), when that boundary is `start` itself or every message from `start` up to it is
    one the compaction preserved; else at `start` (a summary covering nothing of the file, at 0, was
    there from the start). Found by bisection: a long log has a compaction per summary."""
    if start <= 0:
        return start
    k = bisect_left(befores, start)
    boundary = boundaries[k] if k < len(boundaries) else None
    if boundary is None or boundary.before_index == start or boundary.before_index > len(ids):
        return start
    preserved = set(boundary.preserved)
    return boundary.before_index if all(x in preserved for x in ids[start: boundary.before_index]) else start


def _columns(messages: tuple[Message, ...]) -> Columns:
    if not messages:
        return (), (), ()
    return tuple(zip(*((m.id, m.role, m.category) for m in messages), strict=True))  # type: ignore[return-value]


def _grown_columns(session: Session, before: Columns, shared: int) -> Columns:
    new = _columns(session.messages[shared:])
    if not new:
        return tuple(c[:shared] for c in before)  # type: ignore[return-value]
    return tuple(c[:shared] + d for c, d in zip(before, new, strict=True))  # type: ignore[return-value]


@dataclass(frozen=True)
class Session:
    messages: tuple[Message, ...] = ()
    source: str = ""
    format: str = ""
    model: str = ""
    system_prompt: str = ""
    tools: tuple[ToolDefinition, ...] = ()
    memory: tuple[str, ...] = ()
    learnings: tuple[str, ...] = ()
    summaries: tuple[Summary, ...] = ()
    compactions: tuple[Compaction, ...] = ()
    title: str = ""
    #: The producer's version where the file says it (Claude Code `version`, Codex `cli_version`...).
    format_version: str = ""
    #: The model's context window as the log reports it (Codex `model_context_window`), else 0.
    context_window: int = 0
    #: What the loader changed, guessed or left out while reading the file, one line each.
    notes: tuple[str, ...] = ()

    @cached_property
    def system_and_history(self) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
        """(system-role messages, all the others), split once: every re-plan needs both."""
        return tuple(m for m in self.messages if m.role == "system"), tuple(m for m in self.messages if m.role != "system")

    @cached_property
    def derived(self) -> dict[tuple[Any, ...], Any]:
        """What a policy derives from this session alone and reuses on every re-plan (which
        messages a recorded summary covers, where the last reported usage is...), keyed by the
        computing module's own key. The session is immutable, so nothing here goes stale."""
        return {}

    def derive(self, key: tuple[Any, ...], make: Callable[[Session], _T]) -> _T:
        """`make(self)`, made once per session and kept in `derived` under `key`."""
        found = self.derived.get(key)
        if found is None:
            found = self.derived[key] = make(self)
        return found  # type: ignore[no-any-return]

    @cached_property
    def message_columns(self) -> Columns:
        """(ids, roles, categories) of every message: a plan's rows read them from here, so a
        re-plan builds no per-message record. Carried over from the session this one grew from
        (engine/growth.py): a followed log's new messages only."""
        return carried(self, ("session", "message-columns"), lambda s: _columns(s.messages), _grown_columns)

    @cached_property
    def history_columns(self) -> tuple[tuple[int, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """(indices, ids, roles, categories) of the non-system messages, for policies that build
        thousands of records at C speed."""
        history = self.system_and_history[1]
        if not history:
            return (), (), (), ()
        return tuple(zip(*((m.index, m.id, m.role, m.category) for m in history), strict=True))  # type: ignore[return-value]

    @cached_property
    def summaries_cover_first(self) -> tuple[bool, ...]:
        """For each recorded summary, whether its covers are the file's first messages, in order
        (a log's compactions), for every reader. A long log with many compactions has covers whose
        total length grows as the square of the log's: covers that are a view of the first ids of
        a list (`IdPrefix`, as the Claude Code loader writes a compaction's) are answered from how
        far that list agrees with the session's ids, compared once per list; other covers are
        compared at C speed."""
        ids = self.message_columns[0]
        agree: dict[int, int] = {}  # id(list) -> how many of its first ids are the session's
        first = []
        for s in self.summaries:
            covers = s.covers
            n = len(covers)
            if n > len(ids):
                first.append(False)
            elif isinstance(covers, IdPrefix):
                base = covers.base
                k = agree.get(id(base))
                if k is None:
                    k = agree[id(base)] = _agreeing(base, ids)
                first.append(n <= k)
            else:
                first.append(tuple(covers) == ids[:n])
        return tuple(first)

    @cached_property
    def covered_ids(self) -> frozenset[str]:
        """The ids the recorded summaries cover, all of them together: for readers that ask
        whether a message is covered. Covers that are the file's first messages are read as the
        longest of them, once, not summary by summary (a long log's total as the square of its length)."""
        if not self.summaries:
            return frozenset()
        first = self.summaries_cover_first
        longest = max((len(s.covers) for s, f in zip(self.summaries, first, strict=True) if f), default=0)
        covered = set(self.message_columns[0][:longest])
        for s, f in zip(self.summaries, first, strict=True):
            if not f:
                covered.update(s.covers)
        return frozenset(covered)

    @cached_property
    def summary_start_turns(self) -> tuple[int, ...]:
        """For each recorded summary, the first message index at which it existed.

        A summary that covers messages of this session (a Claude Code compaction covers
        everything before its boundary) only exists once they are all past; one that covers
        older messages not in the file was there from the start (0). A turn-by-turn replay must
        not hand the agent a summary of messages it has not seen yet.

        A compaction that keeps a preserved segment (Claude Code's `/compact` keeps the newest
        messages verbatim) writes a summary that does not cover them, yet it was written after
        them, at its boundary: the call those messages answered was sent without it (the log's
        reported usage shows that call's context whole). `_written_at` moves such a summary's
        start to its boundary.
        """
        if not self.summaries:  # (every replay asks: a session without any reads no message)
            return ()
        position = {m.id: m.index for m in self.messages}
        ids = self.message_columns[0]
        unique = len(position) == len(ids)
        starts = []
        first = self.summaries_cover_first
        for k, summary in enumerate(self.summaries):
            covers = summary.covers
            if unique and covers and first[k]:
                starts.append(len(covers))  # the file's first messages, in order: compared at C speed
                continue
            covered = [position[c] for c in covers if c in position]
            starts.append(max(covered) + 1 if covered else 0)
        if any(c.preserved for c in self.compactions):
            boundaries = sorted(self.compactions, key=lambda c: c.before_index)
            befores = [c.before_index for c in boundaries]
            return tuple(_written_at(start, boundaries, befores, ids) for start in starts)
        return tuple(starts)

    @cached_property
    def tool_pairs(self) -> tuple[tuple[int, int], ...]:
        """(tool call message index, tool result message index) for every call an assistant
        message makes and a tool message answers.

        Cached on the immutable session, so checking a plan for broken pairs costs one pass over
        the pairs, not over every message and part, on each re-plan.
        """
        return self._tool_links[0]

    @cached_property
    def tool_call_problems(self) -> tuple[tuple[int, int | None, str], ...]:
        """(message index, partner index or None, what is wrong) for every tool call or result
        whose partner is not in the file as the APIs need it: a call no tool message answers, a
        result no message calls, and a call on a message other than an assistant's (only an
        assistant message sends tool calls, so its result has no call, whatever is sent)."""
        return self._tool_links[1]

    @cached_property
    def _tool_links(self) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int | None, str], ...]]:
        # Carried over from the session this one grew from (a followed log): engine/tool_links.py.
        return tool_links(self)

    def message_by_id(self, message_id: str) -> Message | None:
        for m in self.messages:
            if m.id == message_id:
                return m
        return None
