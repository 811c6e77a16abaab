"""The lines of a Codex rollout, told apart: envelopes, the flat header, state markers, and the
vocabulary each holds (the rest of the package reads them; `__init__` says the format)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...engine.session import Part, TextPart
from ..source import SourceFile

#: The format's name (`CodexLoader.name`, `Session.format`).
FORMAT = "codex"
ENVELOPE_TYPES = frozenset(("session_meta", "response_item", "event_msg", "turn_context", "compacted"))
#: event_msg types that repeat a response_item message (or reasoning) for the UI.
MESSAGE_EVENTS = frozenset(("user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
                            "agent_reasoning_section_break"))
#: Response items Codex records but never sends to the model.
#: Which response_item kind each message event repeats; an event is read only when the file has none of its kind.
EVENT_ITEM = {"user_message": "message:user", "agent_message": "message:assistant", "agent_reasoning": "reasoning"}
EVENT_ALIASES = {"agent_reasoning_raw_content": "agent_reasoning", "agent_reasoning_section_break": "agent_reasoning"}
EVENT_WHAT = {"user_message": "user messages", "agent_message": "assistant messages", "agent_reasoning": "reasoning"}
#: Versions that write a call's `token_count` before the response's items (turn_context, token_count,
#: then the items); later versions write it after them.
USAGE_BEFORE_ITEMS = ("0.39.",)
NOT_SENT_ITEMS = {"ghost_snapshot": "undo snapshots Codex keeps out of the model's context"}
#: The events that open and close a task (a user turn, a `/compact`, a review).
TASK_EVENTS = frozenset(("task_started", "task_complete", "turn_aborted"))
#: How the user messages Codex writes itself begin (the environment, AGENTS.md): context, not dialog.
INJECTED_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")


def is_envelope(record: Any) -> bool:
    kind = record.get("type") if isinstance(record, dict) else None
    return isinstance(kind, str) and kind in ENVELOPE_TYPES and "payload" in record


def is_flat_header(record: Any) -> bool:
    """The first line of a pre-envelope rollout: `{id, timestamp, instructions, git}`."""
    return (isinstance(record, dict) and isinstance(record.get("id"), str) and "timestamp" in record
            and ("instructions" in record or "git" in record) and not any(k in record for k in ("type", "role", "payload", "messages")))


def is_state(record: Any) -> bool:
    return isinstance(record, dict) and record.get("record_type") == "state"


def looks_like_codex(record: Any) -> bool:
    return is_envelope(record) or is_flat_header(record) or is_state(record)


def rollout_records(src: SourceFile) -> list[tuple[int, Any]]:
    """The file's records (a last line cut off mid-record is skipped with a note, as in every JSONL log)."""
    return src.jsonl_records


#: Content part types `content_part` reads as text (from the field of the same name for `refusal`).
_TEXT_PART_TYPES = frozenset(("input_text", "output_text", "text", "summary_text", "reasoning_text"))


def content_common(content: Any) -> list[Part] | None:
    """`item_content` of a message whose content is a string, null, or text parts with string
    texts, read from the dicts; None for anything else (which `item_content` then reads)."""
    if type(content) is str:
        return [TextPart(content)]
    if content is None:
        return []
    if type(content) is not list:
        return None
    parts: list[Part] = []
    for part in content:
        if type(part) is not dict:
            return None
        kind = part.get("type")
        if kind == "refusal":
            text = part.get("refusal")
        elif type(kind) is str and kind in _TEXT_PART_TYPES:
            text = part.get("text")
        else:
            return None
        if type(text) is not str:
            if text is not None:
                return None
            text = ""
        parts.append(TextPart(text))
    return parts


def texts_common(value: Any) -> list[str] | None:
    """`responses._texts` of a list whose parts' texts are strings; None for anything else."""
    if type(value) is not list:
        return []
    out: list[str] = []
    for item in value:
        if type(item) is dict:
            text = item.get("text")
            if type(text) is str:
                if text:
                    out.append(text)
            elif text is not None:
                return None
        elif type(item) is str and item:
            out.append(item)
    return out


def item_kinds(records: Sequence[tuple[int, Any]]) -> set[str]:
    """`item_kind` of every record, as a set; the envelope lines that are not
    `response_item`s (most of a rollout) are passed over with two lookups."""
    kinds: set[str] = set()
    for _, record in records:
        if type(record) is dict:
            kind = record.get("type")
            if kind == "response_item":
                if "payload" in record:  # an envelope: its item (`item_kind`, inlined)
                    item = record["payload"]
                    if type(item) is dict:
                        kind = item.get("type")
                        if kind == "message" or (kind is None and "role" in item):
                            kinds.add(f"message:{item.get('role')}")
                        elif kind == "reasoning":
                            kinds.add("reasoning")
                    continue
            elif type(kind) is str and kind in ENVELOPE_TYPES and "payload" in record:
                continue
        kind = item_kind(record)
        if kind:
            kinds.add(kind)
    return kinds



def item_kind(record: Any) -> str:
    """What a line holds, for choosing the vocabulary: `message:<role>`, `reasoning`, or ""."""
    if is_envelope(record):
        if record.get("type") != "response_item":
            return ""
        record = record.get("payload")
    if not isinstance(record, dict):
        return ""
    kind = record.get("type")
    if kind == "message" or (kind is None and "role" in record):
        return f"message:{record.get('role')}"
    return "reasoning" if kind == "reasoning" else ""
