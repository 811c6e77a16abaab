"""The walk over the conversation's lines that makes the messages (`_Loop`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...engine.packed_json import PackedLines, Packer
from ...engine.session import (
    Category,
    Compaction,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    message_with,
    part_text,
    stored_raw,
)
from ..base import new_message
from ..source import SourceFile
from .lines import _BOUNDARIES, _TITLE_TYPES, SYNTHETIC_MODEL, _Line
from .records import packed_record


class _Turns(Protocol):
    """What the walk reads and calls of the reader that owns it (`reader._Reader`; a protocol, so
    that this module need not import that one)."""

    src: SourceFile
    messages: list[Message]
    included: set[int]
    names: dict[str, str] | None
    produced: dict[str, list[str]]
    packer: Packer
    loop_tallies: dict[str, int]
    compactions: list[Compaction]

    def _tally_bookkeeping(self, x: _Line) -> None: ...
    def _add_names(self, parts: Sequence[Part]) -> None: ...
    def _user(self, x: _Line) -> bool: ...
    def _attachment(self, x: _Line) -> None: ...
    def _compaction(self, x: _Line, scope: list[_Line]) -> tuple[Compaction, frozenset[str]]: ...
    def _summary(self, x: _Line, pending: tuple[Compaction, frozenset[str]] | None) -> None: ...


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

    def run(self, reader: _Turns, scope: list[_Line], positions: range) -> int:
        """Read the lines at `positions`; returns the first message index they changed."""
        src = reader.src
        saved, src.tallies = src.tallies, reader.loop_tallies
        try:
            first_changed = self._run(reader, scope, positions)
        finally:
            src.tallies = saved
        return first_changed

    def _run(self, reader: _Turns, scope: list[_Line], positions: range) -> int:
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
                                                    raw=PackedLines((*stored_raw(prev), x.packed or packed_record(packer, x))))
                    produced[x.uuid] = [prev.id]
                    first_changed = min(first_changed, target)
                    continue
                self.open_assistant, self.open_id = len(messages), x.message_id
                self.open_seen = None  # the keys of the open message's parts, once a continuation needs them
                if names is not None:
                    reader._add_names(parts)
                message = new_message(len(messages), "assistant", tuple(parts), x.uuid, "", "", x.timestamp, Category.DIALOG, x.usage,
                                      PackedLines((x.packed or packed_record(packer, x),)))
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


def _block_key(part: Part) -> tuple[str, str]:
    """Identifies a content block within one assistant message (a streamed line repeated). A pair,
    not one string: the text is not copied (a part's kind has no colon, so pairs tell apart exactly
    what "kind:text" strings would)."""
    if isinstance(part, ToolCallPart) and part.id:
        return ("tool_use", part.id)
    return (part.kind, part_text(part))
