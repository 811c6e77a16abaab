"""Gemini CLI chat sessions (`~/.gemini/tmp/<project>/chats/session-*.json` and `.jsonl`).

Read as Gemini CLI itself reads them (google-gemini/gemini-cli, `chatRecordingService.ts`
`loadConversationRecord` and `utils/sessionUtils.ts` `convertSessionToClientHistory`):

- The older JSON file is one `ConversationRecord`: `sessionId`, `projectHash`, `startTime`,
  `lastUpdated`, `summary`, `kind`, `messages`.
- The newer JSONL file starts with that record's metadata and appends one line per change: a
  message record (`id`, `timestamp`, `type`, `content`...; a message that changes is appended again
  whole, so the last copy of an id wins and its first appearance fixes its place), `{"$set": {...}}`
  metadata updates (a `messages` list there is a checkpoint that replaces every message) and
  `{"$rewindTo": id}`, which drops that message and every message after it (all of them when the id
  is unknown), as `/rewind` does. Each rewind is a note.

Messages: `user` and `gemini` are the conversation; `info`, `error` and `warning` are shown to the
user and never sent to the model, so they are skipped (counted in a note), as are slash commands
and `?` help prompts. A `gemini` message is one assistant message: its `thoughts` (as Gemini CLI
replays them, `**subject** description`), its content and its `toolCalls` as calls; each tool call's
`result` becomes a `tool` message right after it. Newer versions put the calls and thoughts in
`content` itself, which is then the whole message, and may record the function responses again as a
`user` message; a response already read from `toolCalls` is not read twice.

`tokens` is Gemini's `usageMetadata` for the call that produced the message: `input` is
`promptTokenCount`, which includes the `cached` tokens, and `tool` (`toolUsePromptTokenCount`) is
prompt the model's built-in tools added; `output` (`candidatesTokenCount`) leaves out `thoughts`.
So the reported usage is input = input - cached + tool, cache read = cached, output = output +
thoughts (thinking is billed as output). A `tokens` of all zeros (what non-interactive runs of
some versions write) is not usage and is ignored. The file has neither Gemini CLI's system prompt nor
its tool definitions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..engine.session import (
    Category,
    ImagePart,
    Message,
    OpaquePart,
    Part,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    text_part,
    thinking_part,
    tool_call_part,
    tool_result_part,
)
from ..engine.wording import noun
from .base import FieldPath, Fields, make_message, new_message, tool_names_settled, type_name
from .parts import data_uri, dumps_parsed
from .source import SourceFile

#: Message types Gemini CLI shows but never sends to the model.
DISPLAY_ONLY = ("info", "error", "warning")
#: The metadata keys the loader reads (the rest, such as `memoryScratchpad`, is bookkeeping).
TOP_LEVEL_FIELDS = frozenset(("sessionId", "projectHash", "startTime", "lastUpdated", "messages", "summary", "kind", "directories"))


def _is_metadata(record: Any) -> bool:
    return isinstance(record, dict) and isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)


def _ignored_prompt(text: str) -> bool:
    """Gemini CLI's `isIgnoredUserContent` minus the context blocks it re-injects on resume
    (`<session_context>`, `<hook_context>`): those were sent to the model, so they stay."""
    return not text or text.startswith(("/", "?"))


class _Entry:
    """One message record in file order, with where it came from (for error messages)."""

    __slots__ = ("record", "path", "line")

    def __init__(self, record: Any, path: FieldPath, line: int | None) -> None:
        self.record, self.path, self.line = record, tuple(path), line


class GeminiCliLoader:
    name = "gemini-cli"
    title = "Gemini CLI chat session (JSON/JSONL)"
    top_level_fields = TOP_LEVEL_FIELDS
    #: `load` gives each tool result its call's name (`load_source` then leaves `with_tool_names` out).
    names_tool_results = True

    def sniff(self, src: SourceFile) -> bool:
        first = src.first_record()
        if not _is_metadata(first):
            return False
        return src.kind == "jsonl" or isinstance(first.get("messages"), list)

    def load(self, src: SourceFile) -> Session:
        """A full load, each tool result named as `loaders.with_tool_names` names it."""
        return self._read(src).session(src, name_results=True)

    def load_resumable(self, src: SourceFile) -> tuple[Session, _Chat | None]:
        """A full load, and (for a JSONL file) what `load_more` needs to carry it on as it grows
        (its tool results unnamed: `io/follow.py` names them, and keeps the names of the messages
        it takes over)."""
        chat = self._read(src)
        return chat.session(src), chat if src.kind == "jsonl" else None

    def _read(self, src: SourceFile) -> _Chat:
        """The file's metadata and message records, in Gemini CLI's order."""
        chat = _Chat(self)
        if src.kind == "jsonl":
            chat.replay(src, src.records())
        else:
            top = Fields(src, src.document)
            chat.metadata.update(top.record)
            raw = top.list("messages", required=True)
            for i, record in enumerate(raw):
                self._upsert(src, chat.entries, record, ("messages", i), None)
        return chat

    def load_more(self, src: SourceFile, state: _Chat, records: Sequence[tuple[int, Any]]) -> tuple[Session, _Chat] | None:
        """The session of the file grown by `records` (complete lines appended since `state`),
        equal to a full load of it. Gemini CLI's appends are upserts, rewinds and checkpoints of
        whole records, so this is always sure: the messages of the records before the first one
        that changed are reused, the rest made again. `state` is used up."""
        state.replay(src, records)
        return state.session(src), state

    # -- reading the file -------------------------------------------------------------------

    def _upsert(self, src: SourceFile, entries: dict[str, _Entry], record: Any, path: FieldPath, line: int | None) -> None:
        f = Fields(src, record, path, line)
        message_id = f.str("id", required=True)
        entries[message_id] = _Entry(record, path, line)  # a known id keeps its first place, as a Map's key does

    def _replay_lines(self, src: SourceFile, metadata: dict[str, Any], entries: dict[str, _Entry], records: Any) -> None:
        for lineno, record in records:
            # Nearly every line is a message record: stored as `_upsert` stores it, without the two
            # `Fields` it would make to find its id.
            if type(record) is dict and "$rewindTo" not in record and "$set" not in record:
                message_id = record.get("id")
                if type(message_id) is str:
                    entries[message_id] = _Entry(record, (), lineno)
                    continue
            if not isinstance(record, dict):
                raise src.error(f"expected an object, got {type_name(record)}", lineno)
            f = Fields(src, record, (), lineno)
            if "$rewindTo" in record:
                target = f.str("$rewindTo", required=True)
                ids = list(entries)
                if target in entries:
                    dropped = ids[ids.index(target):]
                    src.notes.append(f"line {lineno}: rewound to message {target}: dropped {len(dropped):,} {noun(len(dropped), 'message')}, that one and "
                                     "every one after it, as Gemini CLI does")
                else:
                    dropped = ids
                    src.notes.append(f"line {lineno}: rewound to message {target}, which is not in the file: dropped all "
                                     f"{len(dropped):,} {noun(len(dropped), 'message')} before it, as Gemini CLI does")
                for message_id in dropped:
                    del entries[message_id]
            elif "$set" in record:
                updates = f.dict("$set")
                if "messages" in updates:
                    checkpoint = f.child("$set", updates).list("messages")
                    entries.clear()
                    for i, item in enumerate(checkpoint):
                        self._upsert(src, entries, item, ("$set", "messages", i), lineno)
                    src.tally("applied {n} `$set.messages` checkpoint(s) (each replaces the messages before it)")
                metadata.update({k: v for k, v in updates.items() if k != "messages"})
            elif isinstance(record.get("id"), str):
                self._upsert(src, entries, record, (), lineno)
            elif _is_metadata(record):
                metadata.update({k: v for k, v in record.items() if k != "messages"})
                for i, item in enumerate(f.list("messages")):
                    self._upsert(src, entries, item, ("messages", i), lineno)
            else:
                src.tally("skipped {n} line(s) of a kind Gemini CLI does not write (no `id`, `$set` or `$rewindTo`)")

    # -- building messages ------------------------------------------------------------------

    def _messages(self, src: SourceFile, entries: list[_Entry], out: list[Message] | None = None, model: str = "",
                  after: Any = None, name_results: bool = False) -> tuple[list[Message], str]:
        """The messages of `entries`, appended to `out` (the messages of the entries before them,
        which came to `model`); `after(entry, len(out), model)` is called after each entry. With
        `name_results`, a tool result read by the common path is made with the name of the call
        beside it (`base.tool_names_settled` then settles every name)."""
        out = [] if out is None else out
        answered: set[str] = {m.tool_call_id for m in out if m.role == "tool"}
        for entry in entries:
            if after is not None:
                after(entry, len(out), model)
            record = entry.record
            if type(record) is dict and record.get("type") == "gemini":
                common = _gemini_common(record)
                if common is not None:  # `gemini` below, read from the dicts
                    message_id, timestamp, model_name, model_parts, tokens, results = common
                    model = model_name or model
                    usage = _tokens_usage(src, *tokens) if tokens is not None else None
                    # (`make_message` with its defaults given: the roles' categories)
                    out.append(new_message(len(out), "assistant", tuple(model_parts), message_id, "", "", timestamp, Category.DIALOG,
                                           usage, record))
                    for result in results:
                        answered.add(result.tool_call_id)
                        out.append(new_message(len(out), "tool", tuple(result.parts), result.id, result.name if name_results else "",
                                               result.tool_call_id, result.timestamp, Category.SYSTEM_OUTPUT, None, record))
                    continue
            f = Fields(src, entry.record, entry.path, entry.line)
            kind = f.str("type", required=True)
            message_id = f.str("id")
            timestamp = f.str("timestamp")
            if kind in DISPLAY_ONLY:
                src.tally(f"skipped {{n}} `{kind}` message(s) (Gemini CLI shows them, never sends them to the model)")
                continue
            parts = content_parts(f, "content")
            if kind == "user":
                responses = [p for p in parts if isinstance(p, ToolResultPart)]
                rest = [p for p in parts if not isinstance(p, ToolResultPart)]
                for k, result in enumerate(responses):
                    if result.tool_call_id and result.tool_call_id in answered:
                        src.tally("skipped {n} function response(s) recorded twice (in a tool call's `result` and again as a user message)")
                        continue
                    answered.add(result.tool_call_id)
                    out.append(make_message(len(out), "tool", [result], id=f"{message_id}#{k}", tool_call_id=result.tool_call_id,
                                            timestamp=timestamp, raw=entry.record))
                if not rest and responses:
                    continue
                text = "\n".join(p.text for p in rest if isinstance(p, TextPart)).strip()
                if _ignored_prompt(text) and not any(not isinstance(p, TextPart) for p in rest):
                    src.tally("skipped {n} prompt(s) that {is a slash command, a `?` help prompt or empty|are slash commands, `?` help prompts or empty} (never sent to the model)")
                    continue
                out.append(make_message(len(out), "user", rest, id=message_id, timestamp=timestamp, raw=entry.record))
                continue
            if kind != "gemini":
                raise f.error(f"unknown message type {kind!r} (expected user, gemini, info, error or warning)", "type")
            model = f.str("model") or model
            calls = f.list("toolCalls")
            call_fields = [f.child("toolCalls", calls).child(i, c) for i, c in enumerate(calls)]
            model_parts = self._model_parts(f, parts, call_fields)
            usage = tokens_usage(src, f)
            results = [self._result(src, c, message_id, timestamp, entry.record) for c in call_fields]
            results = [r for r in results if r is not None]
            if not model_parts:
                if results:
                    raise f.error("has tool results but no tool calls", "toolCalls")
                src.tally("skipped {n} empty `gemini` message(s) (no text, thoughts or tool calls)")
                continue
            out.append(make_message(len(out), "assistant", model_parts, id=message_id, timestamp=timestamp, usage=usage,
                                    raw=entry.record))
            for result in results:
                answered.add(result.tool_call_id)
                out.append(make_message(len(out), "tool", result.parts, id=result.id, tool_call_id=result.tool_call_id,
                                        timestamp=result.timestamp, raw=entry.record))
        return out, model

    @staticmethod
    def _model_parts(f: Fields, content: list[Part], calls: list[Fields]) -> list[Part]:
        if any(isinstance(p, (ToolCallPart, ThinkingPart)) for p in content):
            parts = list(content)  # a modern record: its content is the whole model turn
        else:
            parts = []
            thoughts = f.list("thoughts")
            for i, item in enumerate(thoughts):
                t = f.child("thoughts", thoughts).child(i, item)
                subject, description = t.str("subject"), t.str("description")
                text = f"**{subject}** {description}" if subject else description
                if text:
                    parts.append(ThinkingPart(text))
            parts += content
        present = {p.id for p in parts if isinstance(p, ToolCallPart) and p.id}
        for c in calls:
            call_id = c.str("id")
            if call_id and call_id in present:
                continue
            args = c.get("args", {})
            parts.append(ToolCallPart(call_id, c.str("name", required=True), args if isinstance(args, str) else json.dumps(args)))
        return [p for p in parts if not isinstance(p, ToolResultPart)]

    @staticmethod
    def _result(src: SourceFile, c: Fields, message_id: str, timestamp: str, raw: Any) -> _Result | None:
        """A tool call's recorded `result` as one tool message (None when it has none yet)."""
        call_id = c.str("id")
        value = c.get("result")
        if value is None or value == [] or value == "":
            return None
        failed = c.str("status") == "error"
        if isinstance(value, str):
            parts: list[Part] = [ToolResultPart(call_id, value, is_error=failed)]
        else:
            parts = content_parts(c, "result")
            parts = [ToolResultPart(p.tool_call_id or call_id, p.text, is_error=p.is_error or failed) if isinstance(p, ToolResultPart) else p
                     for p in parts]
            if not any(isinstance(p, ToolResultPart) for p in parts):
                text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
                parts = [ToolResultPart(call_id, text, is_error=failed), *(p for p in parts if not isinstance(p, TextPart))]
        return _Result(f"{message_id}#{call_id}" if call_id else "", call_id, parts, c.str("timestamp") or timestamp)


def _str_or_empty(value: Any) -> str | None:
    """A field `Fields.str` returns unchanged ("" for null); None for any other type."""
    if type(value) is str:
        return value
    return "" if value is None else None


def _gemini_common(record: dict[str, Any]) -> tuple[str, str, str, list[Part], tuple[int, ...] | None, list[_Result]] | None:
    """A `gemini` record as `GeminiCliLoader._messages` reads it, for the common shape: string (or
    no) content, thoughts and tool calls as objects of string fields, integer token counts, and
    results that are a string or a list of `functionResponse` parts. Returns (id, timestamp,
    model, the assistant's parts, the token counts, the results), or None for any other record
    (or an empty one), which the full path then reads and, if it must, reports. It changes
    nothing: the caller adds the tallies of the token counts (`_tokens_usage`).

    Written for a log's thousands of records: a field is taken as it stands when it is a str
    (`_str_or_empty` only for the rest), and the parts are made without their frozen dataclasses'
    constructors (engine/session.py's `thinking_part` and its kin: identical and equal)."""
    get = record.get
    message_id, timestamp, model = get("id"), get("timestamp"), get("model")
    if type(message_id) is not str or type(timestamp) is not str or type(model) is not str:
        message_id, timestamp, model = _str_or_empty(message_id), _str_or_empty(timestamp), _str_or_empty(model)
        if message_id is None or timestamp is None or model is None:
            return None
    content = get("content")
    if type(content) is not str and content is not None:
        return None
    thoughts, calls = get("thoughts"), get("toolCalls")
    if thoughts is None:
        thoughts = ()
    elif type(thoughts) is not list and type(thoughts) is not tuple:
        return None
    if calls is None:
        calls = ()
    elif type(calls) is not list and type(calls) is not tuple:
        return None
    parts: list[Part] = []
    add = parts.append
    for item in thoughts:
        if type(item) is not dict:
            return None
        subject, description = item.get("subject"), item.get("description")
        if type(subject) is not str or type(description) is not str:
            subject, description = _str_or_empty(subject), _str_or_empty(description)
            if subject is None or description is None:
                return None
        text = f"**{subject}** {description}" if subject else description
        if text:
            add(thinking_part(text))
    if content:
        add(text_part(content))
    results: list[_Result] = []
    for c in calls:
        if type(c) is not dict:
            return None
        cget = c.get
        call_id, name, status, when = cget("id"), cget("name"), cget("status"), cget("timestamp")
        if type(name) is not str:
            return None
        if type(call_id) is not str or type(status) is not str or type(when) is not str:
            call_id, status, when = _str_or_empty(call_id), _str_or_empty(status), _str_or_empty(when)
            if call_id is None or status is None or when is None:
                return None
        args = cget("args", {})
        add(tool_call_part(call_id, name, args if type(args) is str else dumps_parsed(args)))
        value = cget("result")
        if value is None or value == [] or value == "":
            continue
        failed = status == "error"
        if type(value) is str:
            outputs: list[Part] = [tool_result_part(call_id, value, failed)]
        elif type(value) is list:
            outputs = []
            for item in value:
                response = item.get("functionResponse") if type(item) is dict and "functionCall" not in item else None
                if type(response) is not dict:
                    return None
                response_id = response.get("id")
                if type(response_id) is not str:
                    response_id = _str_or_empty(response_id)
                    if response_id is None:
                        return None
                answer = response.get("response")
                outputs.append(tool_result_part(response_id or call_id, response_text(answer), _is_error(answer) or failed))
        else:
            return None
        results.append(_Result(f"{message_id}#{call_id}" if call_id else "", call_id, outputs, when or timestamp, name))
    if not parts:
        return None
    tokens = get("tokens")
    if tokens is None:
        counts = None
    elif type(tokens) is dict:
        tget = tokens.get
        counts = prompt, cached, tool, output, thinking, total = (tget("input"), tget("cached"), tget("tool"), tget("output"),
                                                                    tget("thoughts"), tget("total"))
        if not (type(prompt) is int and type(cached) is int and type(tool) is int and type(output) is int
                and type(thinking) is int and type(total) is int):  # (a count missing or null is 0)
            if any(type(n) is not int and n is not None for n in counts):
                return None
            counts = tuple(n or 0 for n in counts)
    else:
        return None
    return message_id, timestamp, model, parts, counts, results


class _Chat:
    """A Gemini CLI chat as it was read: the metadata and the message records in Gemini CLI's order
    (`entries`), and the messages made of them, with where each record's messages start (`marks`),
    so that after an append only the records from the first one that changed are made again."""

    def __init__(self, loader: GeminiCliLoader) -> None:
        self.loader = loader
        self.metadata: dict[str, Any] = {}
        self.entries: dict[str, _Entry] = {}
        self.replay_tallies: dict[str, int] = {}
        self.replay_notes: list[str] = []  # the rewinds, in file order
        #: Per record made into messages: the record, the number of messages before it, the model
        #: before it, and its tallies.
        self.marks: list[tuple[_Entry, int, str, dict[str, int]]] = []
        self.messages: list[Message] = []
        self.model = ""

    def replay(self, src: SourceFile, records: Any) -> None:
        """Apply JSONL lines (upserts, `$set`, `$rewindTo`) to the records."""
        saved_tallies, saved_notes = src.tallies, src.notes
        src.tallies, src.notes = self.replay_tallies, self.replay_notes
        try:
            self.loader._replay_lines(src, self.metadata, self.entries, records)
        finally:
            src.tallies, src.notes = saved_tallies, saved_notes

    def session(self, src: SourceFile, name_results: bool = False) -> Session:
        """The session of the records; with `name_results` (a load not carried on), each tool
        result named by its call, as `loaders.with_tool_names` names it."""
        entries = list(self.entries.values())
        k, n = 0, min(len(entries), len(self.marks))
        while k < n and entries[k] is self.marks[k][0]:
            k += 1
        start, model = (self.marks[k][1], self.marks[k][2]) if k < len(self.marks) else (len(self.messages), self.model)
        del self.marks[k:]
        del self.messages[start:]
        saved = src.tallies

        def mark(entry: _Entry, count: int, model_before: str) -> None:
            src.tallies = {}
            self.marks.append((entry, count, model_before, src.tallies))

        try:
            _, self.model = self.loader._messages(src, entries[k:], self.messages, model, mark, name_results)
        finally:
            src.tallies = saved
        src.notes.extend(self.replay_notes)
        for template, count in self.replay_tallies.items():
            src.tally(template, count)
        for *_, tallies in self.marks:
            for template, count in tallies.items():
                src.tally(template, count)
        if self.metadata.get("kind") == "subagent":
            src.notes.append("a subagent's session (kind: subagent): what the subagent saw, not the main conversation")
        summary = self.metadata.get("summary")
        session = Session(
            messages=tuple(self.messages),
            source=src.path,
            format=self.loader.name,
            model=self.model,
            title=summary if isinstance(summary, str) else "",
        )
        return tool_names_settled(session) if name_results else session


class _Result:
    __slots__ = ("id", "tool_call_id", "parts", "timestamp", "name")

    def __init__(self, id: str, tool_call_id: str, parts: list[Part], timestamp: str, name: str = "") -> None:
        self.id, self.tool_call_id, self.parts, self.timestamp = id, tool_call_id, parts, timestamp
        self.name = name  # the call's, where the common path read it


def tokens_usage(src: SourceFile, f: Fields) -> Usage | None:
    """A `gemini` record's `tokens` as reported usage (see the module docstring)."""
    raw = f.get("tokens")
    if raw is None:
        return None
    t = f.child("tokens", raw)
    prompt, cached, tool = t.int("input"), t.int("cached"), t.int("tool")
    output, thoughts = t.int("output"), t.int("thoughts")
    return _tokens_usage(src, prompt, cached, tool, output, thoughts, t.int("total"))


def _tokens_usage(src: SourceFile, prompt: int, cached: int, tool: int, output: int, thoughts: int, total: int) -> Usage | None:
    if not any((prompt, cached, tool, output, thoughts, total)):
        src.tally("ignored {n} `tokens` record(s) of all zeros (not usage)")
        return None
    if cached > prompt:
        src.tally("{n} `tokens` record(s) {reports|report} more cached than input tokens; input read as 0")
    # `Usage(input_tokens=..., output_tokens=..., cache_read_input_tokens=...)` field by field, as its
    # frozen constructor sets them (one per `gemini` record of a long log; engine/session.py's part
    # builders say why not `__dict__.update`)
    usage = object.__new__(Usage)
    for name, value in (("input_tokens", max(prompt - cached, 0) + tool), ("output_tokens", output + thoughts),
                        ("cache_read_input_tokens", cached), ("cache_creation_input_tokens", 0)):
        object.__setattr__(usage, name, value)
    return usage


def content_parts(f: Fields, key: str) -> list[Part]:
    """A `PartListUnion`: a string, one part, or a list of strings and parts."""
    value = f.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [TextPart(value)] if value else []
    if not isinstance(value, (list, dict)):
        raise f.error(f"expected a string, a part or a list of parts, got {type_name(value)}", key)
    items = value if isinstance(value, list) else [value]
    parts: list[Part] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            if item:
                parts.append(TextPart(item))
            continue
        p = f.child(key, value).child(i, item) if isinstance(value, list) else f.child(key, value)
        part = gemini_part(p)
        if part is not None:
            parts.append(part)
    return parts


def gemini_part(p: Fields) -> Part | None:
    """One `@google/genai` Part. Keys that only annotate a part (`thoughtSignature`,
    `videoMetadata`) are ignored; a part ctxviz does not model is kept as an OpaquePart."""
    r = p.record
    if "functionCall" in r:
        call = p.child("functionCall", p.dict("functionCall"))
        args = call.get("args", {})
        return ToolCallPart(call.str("id"), call.str("name", required=True), args if isinstance(args, str) else json.dumps(args))
    if "functionResponse" in r:
        resp = p.child("functionResponse", p.dict("functionResponse"))
        return ToolResultPart(resp.str("id"), response_text(resp.get("response")), is_error=_is_error(resp.get("response")))
    if "text" in r:
        text = p.str("text")
        if not text:
            return None
        return ThinkingPart(text) if p.bool("thought") else TextPart(text)
    if "inlineData" in r:
        blob = p.child("inlineData", p.dict("inlineData"))
        mime, data = blob.str("mimeType"), blob.str("data")
        if mime.startswith("image/"):
            return ImagePart(url=data_uri(mime, data), media_type=mime)
        return OpaquePart("inlineData", f"[{mime or 'binary'} data, {len(data) * 3 // 4:,} bytes]")
    if "fileData" in r:
        ref = p.child("fileData", p.dict("fileData"))
        mime, uri = ref.str("mimeType"), ref.str("fileUri")
        if mime.startswith("image/"):
            return ImagePart(url=uri, media_type=mime)
        return OpaquePart("fileData", f"[file: {uri}]")
    if "executableCode" in r:
        return OpaquePart("executableCode", str(p.dict("executableCode").get("code", "")))
    if "codeExecutionResult" in r:
        return OpaquePart("codeExecutionResult", str(p.dict("codeExecutionResult").get("output", "")))
    meaningful = [k for k in r if k not in ("thought", "thoughtSignature", "videoMetadata")]
    if not meaningful:
        return None
    return OpaquePart(meaningful[0], json.dumps(r, ensure_ascii=False))


def _is_error(response: Any) -> bool:
    return isinstance(response, dict) and "error" in response and "output" not in response


def response_text(response: Any) -> str:
    """A function response as the text a reader wants: `output` (or `error`) when that is all it
    holds, the JSON the model was sent otherwise."""
    if isinstance(response, dict) and len(response) == 1:
        (key, value), = response.items()
        if key in ("output", "error") and isinstance(value, str):
            return value
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False)
