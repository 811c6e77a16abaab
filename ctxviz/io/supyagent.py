"""supyagent session logs (`.supyagent/sessions/<agent>/<session_id>.jsonl`, formats.md B7, policies.md 2.6).

The first line is the session meta (`type: "meta"`); every later line is one message in OpenAI
form with a `type` instead of a `role`. supyagent keeps its context summary in a sidecar,
`<session_id>_summary.json`, next to the log; it is read (never written) so the supyagent policy
sees the same summary the real agent would inject.
"""

from __future__ import annotations

import os

from ..engine.session import Message, Session, Summary
from .base import Fields, make_message, type_name
from .claude_code import line_fields
from .native import tool_calls
from .parts import openai_content
from .source import SourceFile, read_source

#: supyagent's message `type` -> ctxviz role (`tool_result` is sent as `role: tool`).
ROLES = {"user": "user", "assistant": "assistant", "tool_result": "tool", "system": "system"}


def sidecar_path(path: str) -> str:
    """`<session_id>_summary.json` beside the log; supyagent names the log by its session id."""
    folder, name = os.path.split(path)
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return os.path.join(folder, f"{stem}_summary.json")


def load_sidecar(path: str, messages: list[Message]) -> Summary | None:
    """The ContextSummary sidecar as a Summary, or None when there is none.

    `covers` holds the ids of messages `first_message_idx..last_message_idx`, which is all the
    supyagent policy needs (its last id gives `last_message_idx`). Errors name the sidecar file.
    """
    if not os.path.isfile(path):
        return None
    side = read_source(path)
    doc = side.json_document
    if not isinstance(doc, dict):
        raise side.error(f"expected an object, got {type_name(doc)}", 1)
    s = Fields(side, doc)  # no line given: errors locate the key's own line in the sidecar
    text = s.str("content", required=True)
    for key in ("messages_summarized", "first_message_idx", "last_message_idx"):
        if s.get(key) is None:  # supyagent's ContextSummary.from_dict requires all three
            raise s.error("is required", key)
    covered, first, last = s.int("messages_summarized"), s.int("first_message_idx"), s.int("last_message_idx")
    if first < 0:
        raise s.error(f"must not be negative, got {first}", "first_message_idx")
    if last < first:
        raise s.error(f"{last} is before first_message_idx {first}", "last_message_idx")
    if last >= len(messages):  # a stale or foreign sidecar: its indices would point at the wrong messages
        raise s.error(f"{last} is past the session's last message (index {len(messages) - 1})", "last_message_idx")
    span = messages[first : last + 1]
    return Summary(
        text=text,
        depth=1,
        messages_covered=covered,
        time_range_start=span[0].timestamp,
        time_range_end=span[-1].timestamp,
        covers=tuple(m.id for m in span),
        created_at=s.str("created_at"),
    )


class SupyagentLoader:
    name = "supyagent"
    title = "supyagent session (JSONL)"

    def sniff(self, src: SourceFile) -> bool:
        if src.kind != "jsonl":
            return False
        first = src.first_record()
        return isinstance(first, dict) and first.get("type") == "meta" and "session_id" in first and "agent" in first

    def load(self, src: SourceFile) -> Session:
        messages: list[Message] = []
        model = title = ""
        for lineno, record in src.records():
            f = line_fields(src, record, lineno)
            kind = f.str("type", required=True)
            if kind == "meta":
                model, title = f.str("model") or model, f.str("title") or title
                continue
            role = ROLES.get(kind)
            if role is None:
                allowed = ", ".join(["meta", *ROLES])
                raise f.error(f"unknown message type {kind!r} (expected one of {allowed})", "type")
            parts = openai_content(f) + tool_calls(f)
            messages.append(
                make_message(
                    len(messages),
                    role,
                    parts,
                    name=f.str("name"),
                    tool_call_id=f.str("tool_call_id"),
                    timestamp=f.str("ts"),
                    raw=record,
                )
            )
        summary = load_sidecar(sidecar_path(src.path), messages) if messages else None
        return Session(
            messages=tuple(messages),
            source=src.path,
            format=self.name,
            model=model,
            title=title,
            summaries=(summary,) if summary else (),
        )
