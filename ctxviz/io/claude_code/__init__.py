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

The package: `lines.py` parses each line once, `chain.py` finds the conversation among them,
`reader.py` makes its messages and the session (`loop.py` is its walk over the conversation's
lines), `attachments.py` renders attachments as Claude Code does, and `records.py` packs what a
message keeps of its line (`raw`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...engine.session import Session
from ..source import SourceFile
from .attachments import SILENT_ATTACHMENTS, render_attachment, wrap_reminder
from .lines import (
    CLEARED_TOOL_RESULT,
    LINE_TYPES,
    MESSAGE_TYPES,
    SIGNATURE_KEYS,
    SUBAGENT_FILE,
    SYNTHETIC_MODEL,
    line_fields,
)
from .reader import _Reader
from .records import UNREAD_AFTER_LOAD, packed_record

__all__ = ["CLEARED_TOOL_RESULT", "LINE_TYPES", "MESSAGE_TYPES", "SIGNATURE_KEYS", "SILENT_ATTACHMENTS", "SUBAGENT_FILE", "SYNTHETIC_MODEL",
           "UNREAD_AFTER_LOAD", "ClaudeCodeLoader", "line_fields", "packed_record", "render_attachment", "wrap_reminder"]


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
