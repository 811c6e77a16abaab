"""Claude Code session logs (`~/.claude/projects/<slug>/<session-uuid>.jsonl`, formats.md B4).

One JSONL line per event. Only the main conversation becomes messages: subagent (`isSidechain`)
lines, bookkeeping lines and unknown line types are skipped, because they were never in the main
model's context. A `compact_boundary` becomes a `Compaction` and the summary Claude Code injects
after it (`isCompactSummary`) a `Summary`, so policies can see where the real agent compacted.

The file is read in file order. Claude Code links lines by `parentUuid` and can leave abandoned
branches (rewinds) in the same file; those are not resolved here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..engine.session import Compaction, Message, Part, Session, Summary, part_text
from .base import Fields, make_message, parse_usage, type_name
from .parts import anthropic_blocks, split_tool_results
from .source import SourceFile

#: Line types a Claude Code file may start with (B8); `progress`/`attachment` appear in some versions.
LINE_TYPES = frozenset(
    ("user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress", "attachment")
)
#: Keys that tell a Claude Code line from other typed JSONL. `messageId`/`snapshot` are added to B8's
#: list because current versions start a file with a `file-history-snapshot` line carrying only those.
SIGNATURE_KEYS = ("uuid", "parentUuid", "sessionId", "message", "leafUuid", "messageId", "snapshot")
#: The model name Claude Code gives to messages it makes up itself (API errors, interruptions).
SYNTHETIC_MODEL = "<synthetic>"


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


def _pre_tokens(f: Fields) -> int:
    """`compactMetadata.preTokens`, or the snake_case spelling stream-json output uses."""
    if f.has("compactMetadata"):
        return f.child("compactMetadata", f.dict("compactMetadata")).int("preTokens")
    if f.has("compact_metadata"):
        return f.child("compact_metadata", f.dict("compact_metadata")).int("pre_tokens")
    return 0


def _trigger(f: Fields) -> str:
    for key in ("compactMetadata", "compact_metadata"):
        if f.has(key):
            return f.child(key, f.dict(key)).str("trigger")
    return ""


class ClaudeCodeLoader:
    name = "claude-code"
    title = "Claude Code session (JSONL)"

    def sniff(self, src: SourceFile) -> bool:
        if src.kind != "jsonl":
            return False
        first = src.first_record()
        return isinstance(first, dict) and isinstance(first.get("type"), str) and first.get("type") in LINE_TYPES and any(k in first for k in SIGNATURE_KEYS)

    def load(self, src: SourceFile) -> Session:
        messages: list[Message] = []
        summaries: list[Summary] = []
        compactions: list[Compaction] = []
        model = ""
        title = ""
        # message.id of the assistant message that ends `messages`, while later lines may extend it.
        open_assistant = ""
        for lineno, record in src.records():
            f = line_fields(src, record, lineno)
            kind = f.str("type", required=True)
            if f.bool("isSidechain"):
                continue
            if kind == "assistant":
                m = _message_fields(f)
                parts = anthropic_blocks(m)
                usage = parse_usage(m)
                message_id = m.str("id")
                line_model = m.str("model")
                if line_model and line_model != SYNTHETIC_MODEL:
                    model = line_model
                if message_id and message_id == open_assistant:
                    # Claude Code streams one line per content block, all with the same message.id.
                    prev = messages[-1]
                    messages[-1] = replace(
                        prev, parts=prev.parts + tuple(parts), usage=usage or prev.usage, raw=[*prev.raw, record]
                    )
                    continue
                messages.append(
                    make_message(
                        len(messages),
                        "assistant",
                        parts,
                        id=f.str("uuid"),
                        timestamp=f.str("timestamp"),
                        usage=usage,
                        raw=[record],
                    )
                )
                open_assistant = message_id
                continue
            if kind == "user":
                m = _message_fields(f)
                open_assistant = ""
                if f.bool("isCompactSummary"):
                    covered = compactions[-1].before_index if compactions else len(messages)
                    text = "\n".join(part_text(p) for p in anthropic_blocks(m) if part_text(p))
                    before = messages[:covered]
                    summaries.append(
                        Summary(
                            text=text,
                            depth=1,
                            messages_covered=covered,
                            time_range_start=before[0].timestamp if before else "",
                            time_range_end=before[-1].timestamp if before else "",
                            covers=tuple(msg.id for msg in before),
                            created_at=f.str("timestamp"),
                        )
                    )
                    continue
                messages += self._user_messages(m, len(messages), record, f.str("uuid"), f.str("timestamp"))
                continue
            if kind == "system":
                if f.str("subtype") == "compact_boundary":
                    open_assistant = ""
                    compactions.append(
                        Compaction(before_index=len(messages), trigger=_trigger(f), pre_tokens=_pre_tokens(f))
                    )
                continue
            if kind == "summary":
                title = f.str("summary") or title
            # file-history-snapshot, queue-operation, progress, attachment and newer types: not context.
        return Session(
            messages=tuple(messages),
            source=src.path,
            format=self.name,
            model=model,
            summaries=tuple(summaries),
            compactions=tuple(compactions),
            title=title,
        )

    @staticmethod
    def _user_messages(m: Fields, start: int, record: Any, uuid: str, timestamp: str) -> list[Message]:
        """A user line; each tool_result block becomes its own `tool` message, as in `messages_from_blocks`.

        Ids must stay unique, so when one line yields several messages the first keeps the line's
        uuid and the others get `uuid#1`, `uuid#2`...
        """
        results, rest = split_tool_results(anthropic_blocks(m))
        groups: list[tuple[str, list[Part], str]] = [("tool", [r], r.tool_call_id) for r in results]
        if rest or not results:
            groups.append(("user", rest, ""))
        out: list[Message] = []
        for k, (role, parts, tool_call_id) in enumerate(groups):
            message_id = (f"{uuid}#{k}" if k else uuid) if uuid else ""
            out.append(
                make_message(
                    start + k, role, parts, id=message_id, tool_call_id=tool_call_id, timestamp=timestamp, raw=record
                )
            )
        return out
