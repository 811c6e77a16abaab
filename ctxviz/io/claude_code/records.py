"""What a message keeps of the line it was read from (`Message.raw`): the record, packed."""

from __future__ import annotations

from typing import Any

from ...engine.packed_json import PLACES_LOCK, PackedRecord, Packer, place
from ...engine.session import ToolCallPart
from .lines import _Line

#: Fields of a line nothing reads once the line is loaded: the tool's structured result (a second
#: copy of its output, often as large as the message itself) and per-line bookkeeping.
UNREAD_AFTER_LOAD = ("toolUseResult", "cwd", "gitBranch", "userType", "requestId")

#: A `message.content` that is one string (the text part holds it).
_CONTENT = place(("message", "content"))
#: The key of the text a block's part holds (the very string, `_blocks_common`), by block type; a
#: `tool_use` block's `input` is its call's `arguments` (the same JSON).
_TEXT_KEYS = {"text": "text", "thinking": "thinking", "tool_result": "content", "tool_use": "input"}
#: The codes of the places `message.content[i][key]` (`_block_place`), by key, indexed by i.
_BLOCK_PLACES: dict[str, list[int]] = {key: [] for key in _TEXT_KEYS.values()}


def _block_place(key: str, i: int) -> int:
    """The code of `message.content[i][key]`, added with those before it (under the lock: the list
    only grows, so a reader that finds i within it reads the right code without it)."""
    codes = _BLOCK_PLACES[key]
    with PLACES_LOCK:
        while len(codes) <= i:
            codes.append(place(("message", "content", len(codes), key), key == "input"))
    return codes[i]


def packed_record(packer: Packer, x: _Line) -> PackedRecord:
    """The line's record as its messages keep it (`Message.raw`, engine/packed_json.py), less what
    no reader uses after loading (`UNREAD_AFTER_LOAD`; the Anthropic export's original_blocks reads
    `message.content`, the cache replay `message.usage`; ids, type, time and usage stay).

    The texts the message's parts hold are holes, kept as those strings, not copied into the bytes:
    a text or thinking block's text, a tool result's output (a string), a `tool_use` block's `input`
    as its call's `arguments`. The line's record is left as it was (a grown log compares a line
    written again with it): what changes is copied."""
    record = x.record
    skeleton = record.copy()
    for key in UNREAD_AFTER_LOAD:
        if key in skeleton:
            del skeleton[key]
    message = record.get("message")
    if message.__class__ is not dict:
        return packer.record(skeleton)
    content = message.get("content")
    if content.__class__ is str:
        if not content:
            return packer.record(skeleton)
        skeleton["message"] = message = message.copy()
        message["content"] = None
        return packer.record(skeleton, (_CONTENT,), (content,))
    if content.__class__ is not list:
        return packer.record(skeleton)
    parts = x.parts
    calls = x.role == "assistant" and parts is not None and len(parts) == len(content)  # a part per block (`_blocks_common`)
    places: list[int] = []
    values: list[Any] = []
    blocks = content.copy()
    i = -1
    for block in content:
        i += 1
        if block.__class__ is not dict:
            continue
        kind = block.get("type")
        key = _TEXT_KEYS.get(kind) if kind.__class__ is str else None
        if key is None:
            continue
        if key == "input":
            part = parts[i] if calls else None  # type: ignore[index]
            # Its arguments are `dumps_parsed(block["input"])`.
            if part.__class__ is not ToolCallPart or "input" not in block or part.id != (block.get("id") or ""):  # type: ignore[union-attr]
                continue
            value = part.arguments  # type: ignore[union-attr]
        else:
            value = block.get(key)
            if value.__class__ is not str or not value:
                continue
        blocks[i] = block = block.copy()
        block[key] = None
        codes = _BLOCK_PLACES[key]
        places.append(codes[i] if i < len(codes) else _block_place(key, i))
        values.append(value)
    if not places:
        return packer.record(skeleton)
    skeleton["message"] = message = message.copy()
    message["content"] = blocks
    return packer.record(skeleton, tuple(places), values)
