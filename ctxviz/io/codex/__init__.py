"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`, formats.md B5).

Every line is an envelope `{timestamp, type, payload}` (since September 2025), or, in older flat
files, a header line `{id, timestamp, instructions, git}` followed by bare Responses items and
`{"record_type": "state"}` markers. There is no schema version, so the vocabulary is told from the
content and a note says which was found:

- `response_item` lines are Responses items, what the model saw; they are read with the Responses
  item reader (`responses.py`): developer messages are system messages, reasoning is thinking (or an
  opaque block when only encrypted), function and custom tool calls pair with their outputs by
  `call_id`, anything else (web_search_call...) is an opaque part of the assistant turn.
  `ghost_snapshot` items (undo snapshots) never reach the model and are skipped.
- `event_msg` `user_message` / `agent_message` / `agent_reasoning` repeat those messages for the UI.
  They are read only when the file has no `response_item` messages at all (a file written without
  them); otherwise they are skipped, so no message counts twice.
- `event_msg` `token_count` reports each model call's usage: it is attached to the assistant turn of
  that call (input without the cached tokens, cache_read the cached tokens; repeated reports are
  skipped), and its `model_context_window` becomes the session's context window. Codex writes it
  after the response's items, except 0.39, which writes it before them (`USAGE_BEFORE_ITEMS`).
- `compacted` is a compaction Codex made: what came before it is replaced by its
  `replacement_history` (or, in older files, by its `message` summary). The messages before it
  become covered by a `Summary` of that history and a `Compaction` marks the spot, so every policy
  sends the summary instead of them, as Codex did.
- `session_meta` gives the system prompt (`base_instructions.text`, older `instructions`),
  `cli_version` (the format version) and the tools a Codex client declared (`dynamic_tools`, sent to
  the model as function tools: the session's tool definitions, `dynamic_tools.py`); `turn_context`
  the model.

A last line cut off mid-record (a rollout still being written) is skipped with a note (source.py); any other
line that is not JSON is an error naming its line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...engine.session import Session
from ..source import SourceFile
from .records import FORMAT, looks_like_codex, rollout_records
from .rollout import _Rollout

__all__ = ["CodexLoader", "looks_like_codex", "rollout_records"]


class CodexLoader:
    name = FORMAT
    title = "Codex CLI rollout (JSONL)"
    #: `load` gives each tool result its call's name (`load_source` then leaves `with_tool_names` out).
    names_tool_results = True

    def sniff(self, src: SourceFile) -> bool:
        if src.kind != "jsonl":
            return False
        return looks_like_codex(rollout_records(src)[0][1])

    def load(self, src: SourceFile) -> Session:
        return _Rollout(src).read(name_results=True)

    def load_resumable(self, src: SourceFile) -> tuple[Session, _Rollout]:
        """A full load, and what `load_more` needs to carry it on as the rollout grows."""
        rollout = _Rollout(src)
        return rollout.read(), rollout

    def load_more(self, src: SourceFile, state: _Rollout, records: Sequence[tuple[int, Any]]) -> tuple[Session, _Rollout] | None:
        """The session of the rollout grown by `records` (complete lines appended since `state`),
        equal to a full load of it and reusing the messages that did not change; None when it
        cannot be sure of that (the caller loads the file whole). `state` is used up either way."""
        session = state.more(src, records)
        return None if session is None else (session, state)

