"""What a message keeps of the line it was read from (`Message.raw`): the record, packed."""

from __future__ import annotations

from ...engine.packed_json import PackedRecord, PackedText, Packer
from ...engine.session import ToolCallPart
from .lines import _Line

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
