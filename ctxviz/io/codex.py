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
- `session_meta` gives the system prompt (`base_instructions.text`, older `instructions`) and
  `cli_version` (the format version); `turn_context` the model.

A last line cut off mid-record (a rollout still being written) is skipped with a note (source.py); any other
line that is not JSON is an error naming its line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..engine.session import (
    Category,
    Compaction,
    ImagePart,
    Message,
    OpaquePart,
    Part,
    Session,
    Summary,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    part_text,
)
from ..engine.wording import noun
from .base import Fields, make_message, type_name
from .responses import Draft, ItemReader, item_type, responses_usage
from .source import SourceFile

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


def _is_envelope(record: Any) -> bool:
    kind = record.get("type") if isinstance(record, dict) else None
    return isinstance(kind, str) and kind in ENVELOPE_TYPES and "payload" in record


def _is_flat_header(record: Any) -> bool:
    """The first line of a pre-envelope rollout: `{id, timestamp, instructions, git}`."""
    return (isinstance(record, dict) and isinstance(record.get("id"), str) and "timestamp" in record
            and ("instructions" in record or "git" in record) and not any(k in record for k in ("type", "role", "payload", "messages")))


def _is_state(record: Any) -> bool:
    return isinstance(record, dict) and record.get("record_type") == "state"


def looks_like_codex(record: Any) -> bool:
    return _is_envelope(record) or _is_flat_header(record) or _is_state(record)


def rollout_records(src: SourceFile) -> list[tuple[int, Any]]:
    """The file's records (a last line cut off mid-record is skipped with a note, as in every JSONL log)."""
    return src.jsonl_records


#: Content part types `content_part` reads as text (from the field of the same name for `refusal`).
_TEXT_PART_TYPES = frozenset(("input_text", "output_text", "text", "summary_text", "reasoning_text"))


def _content_common(content: Any) -> list[Part] | None:
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


def _texts_common(value: Any) -> list[str] | None:
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


def _item_kinds(records: Sequence[tuple[int, Any]]) -> set[str]:
    """`_Rollout._item_kind` of every record, as a set; the envelope lines that are not
    `response_item`s (most of a rollout) are passed over with two lookups."""
    kinds: set[str] = set()
    item_kind = _Rollout._item_kind
    for _, record in records:
        if type(record) is dict:
            kind = record.get("type")
            if kind == "response_item":
                if "payload" in record:  # an envelope: its item (`_item_kind`, inlined)
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


class CodexLoader:
    name = "codex"
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


class _Rollout:
    def __init__(self, src: SourceFile) -> None:
        self.src = src
        self.reader = ItemReader(src)
        self.models: list[str] = []
        self.system_prompt = ""
        self.version = ""
        self.context_window = 0
        #: A usage report waiting for the response it belongs to (Codex 0.39 writes it first).
        self.pending: Usage | None = None
        self.summaries: list[Summary] = []
        self.compactions: list[Compaction] = []
        self.metas = 0
        self.last_total: Any = None
        self.last_fill = 0
        self.skipped_events: Counter[str] = Counter()
        #: event_msg types read as messages because the file has no response_item of their kind.
        self.from_events: set[str] = set()
        self.events_read: set[str] = set()
        self.flat = False
        self.kinds: set[str] = set()  # what the lines hold, for choosing the vocabulary (`_item_kind`)
        #: Tallies of reading the lines, kept apart so that the notes come in the order of a full load.
        self.line_tallies: dict[str, int] = {}
        self.messages: list[Message] = []
        self.injected_at: list[bool] = []  # per message: a user message Codex wrote itself (context)
        self.injected = 0
        self.resumable = True  # False once carrying on failed midway
        self._lineno = 0  # the line being read
        #: Inside a task (`task_started` .. `task_complete`), and how many items it has recorded: a
        #: `/compact` runs as a task of its own, with no item; an automatic compaction sits in a turn.
        self.in_task = False
        self.task_items = 0
        #: The compaction (its index) of a task without an item so far: manual if the task ends so.
        self.quiet: int | None = None

    def read(self, name_results: bool = False) -> Session:
        """The session of the whole file; with `name_results`, each tool result already has the name
        of its call, as `loaders.with_tool_names` gives it (not for a load carried on later:
        `io/follow.py` names the results of the messages it takes over itself)."""
        records = rollout_records(self.src)
        self.flat = not _is_envelope(records[0][1])
        self.kinds = _item_kinds(records)
        self.from_events = {event for event, item in EVENT_ITEM.items() if item not in self.kinds}
        self._read_lines(records)
        return self._session(name_results=name_results)

    def more(self, src: SourceFile, records: Sequence[tuple[int, Any]]) -> Session | None:
        """The session after `records` were appended, reusing the messages read before; None when
        the appended lines change how earlier lines are read: the first `response_item` message of
        a role (or reasoning) in a file that so far read those from `event_msg` lines (a full load
        would then skip the events it read). Every other line only adds to what was read, or
        extends the assistant turn still open and the one a usage report goes to."""
        self.src = self.reader.src = src
        if not self.resumable:
            return None
        self.resumable = False  # until this carries on to the end (an error midway leaves it unusable)
        kinds = _item_kinds(records)
        if {event for event, item in EVENT_ITEM.items() if item not in self.kinds | kinds} != self.from_events:
            return None
        self.kinds |= kinds
        drafts = self.reader.drafts
        first_changed = len(drafts)
        for open_draft in (self.reader.open, self.reader.latest_model):  # what later lines may change
            if open_draft is not None:
                first_changed = min(first_changed, next(k for k in range(len(drafts) - 1, -1, -1) if drafts[k] is open_draft))
        self._read_lines(records)
        self.resumable = True
        return self._session(first_changed)

    def _read_lines(self, records: Sequence[tuple[int, Any]]) -> None:
        saved, self.src.tallies = self.src.tallies, self.line_tallies
        try:
            common, full = self._common, self._full_line
            for lineno, record in records:  # `line`, inlined
                self._lineno = lineno
                if type(record) is dict and common(record):
                    if self.pending is not None:
                        self._settle()
                    continue
                full(lineno, record)
        finally:
            self.src.tallies = saved

    def _session(self, first_changed: int = 0, name_results: bool = False) -> Session:
        """The session from what was read; the messages before `first_changed` are those made
        before (their drafts did not change), the tallies in the order a full load makes them.
        With `name_results`, a tool result gets the name of its call when it is made (what
        `with_tool_names` would give it, without making the message twice)."""
        src = self.src
        self._vocabulary_note(self.flat)
        if self.skipped_events:
            listed = ", ".join(f"{kind} {n:,}" for kind, n in self.skipped_events.most_common())
            src.notes.append(f"skipped {sum(self.skipped_events.values()):,} `event_msg` {noun(sum(self.skipped_events.values()), 'line')} that {'is' if sum(self.skipped_events.values()) == 1 else 'are'} not context ({listed})")
        distinct = list(dict.fromkeys(self.models))
        if len(distinct) > 1:
            src.notes.append(f"the model changed during the session ({', '.join(distinct)}); the last is used")
        del self.messages[first_changed:]
        self.injected -= sum(self.injected_at[first_changed:])
        del self.injected_at[first_changed:]
        drafts = self.reader.drafts
        names = {p.id: p.name for d in drafts for p in d.parts if isinstance(p, ToolCallPart) and p.id} if name_results else {}
        for i in range(first_changed, len(drafts)):
            d = drafts[i]
            role = d.role
            name = names.get(d.tool_call_id, "") if role == "tool" else ""
            # `Message.text` of a user message, before it is made (an injected one is context)
            injected = role == "user" and "\n".join(part_text(p) for p in d.parts if part_text(p)).lstrip().startswith(INJECTED_PREFIXES)
            self.messages.append(make_message(i, role, d.parts, id=d.id, name=name, tool_call_id=d.tool_call_id, timestamp=d.timestamp,
                                              category=Category.CONTEXT if injected else None, usage=d.usage,
                                              raw=d.raw[0] if len(d.raw) == 1 else list(d.raw)))  # a copy: the draft may grow
            self.injected_at.append(injected)
            self.injected += injected
        for template, n in self.line_tallies.items():
            src.tally(template, n)
        if self.injected:
            src.tally("read {n} user message(s) Codex writes itself (`<environment_context>`, AGENTS.md instructions) "
                      "as context, not dialog", self.injected)
        return Session(
            messages=tuple(self.messages),
            source=src.path,
            format=CodexLoader.name,
            model=distinct[-1] if distinct else "",
            system_prompt=self.system_prompt,
            summaries=tuple(self.summaries),
            compactions=tuple(self.compactions),
            format_version=self.version,
            context_window=self.context_window,
        )

    @staticmethod
    def _item_kind(record: Any) -> str:
        """What a line holds, for choosing the vocabulary: `message:<role>`, `reasoning`, or ""."""
        if _is_envelope(record):
            if record.get("type") != "response_item":
                return ""
            record = record.get("payload")
        if not isinstance(record, dict):
            return ""
        kind = record.get("type")
        if kind == "message" or (kind is None and "role" in record):
            return f"message:{record.get('role')}"
        return "reasoning" if kind == "reasoning" else ""

    def _vocabulary_note(self, flat: bool) -> None:
        read = [event for event in ("user_message", "agent_message", "agent_reasoning") if event in self.events_read]
        if flat:
            what = "a flat (pre-envelope) Codex rollout: a header line, then bare Responses items"
        elif read:
            what = ("a Codex rollout without `response_item` " + " or ".join(EVENT_WHAT[e] for e in read)
                    + ": those are read from `event_msg` " + " / ".join(read)
                    + " (the older vocabulary); any other `event_msg` copies of messages are skipped")
        else:
            what = ("a Codex rollout with `response_item` messages (what the model saw); their `event_msg` copies "
                    "(user_message, agent_message, agent_reasoning) are skipped")
        self.src.notes.insert(0, f"read as {what}")

    # -- lines --------------------------------------------------------------------------------

    def line(self, lineno: int, record: Any) -> None:
        self._lineno = lineno
        if type(record) is dict and self._common(record):
            if self.pending is not None:
                self._settle()
            return
        self._full_line(lineno, record)

    def _full_line(self, lineno: int, record: Any) -> None:
        """`line` for a line `_common` does not read, every field checked through `Fields`."""
        if not isinstance(record, dict):
            raise self.src.error(f"expected an object, got {type_name(record)}", lineno)
        if _is_state(record):
            self.src.tally("skipped {n} `record_type: state` line(s) (bookkeeping)")
            return
        f = Fields(self.src, record, (), lineno)
        if "payload" not in record:
            if _is_flat_header(record):
                self.session_meta(f)
            else:
                self.item(f, "", lineno)
            return
        kind = f.str("type", required=True)
        payload = f.get("payload")
        if not isinstance(payload, dict):
            raise f.error(f"expected an object, got {type_name(payload)}", "payload")
        p = f.child("payload", payload)
        timestamp = f.str("timestamp")
        if kind == "response_item":
            self.item(p, timestamp, lineno)
            self._settle()
        elif kind == "event_msg":
            self.event(p, timestamp, lineno)
            self._settle()
        elif kind == "compacted":
            self.compacted(p, timestamp, lineno)
        elif kind == "turn_context":
            if p.str("model"):
                self.models.append(p.str("model"))
        elif kind == "session_meta":
            self.session_meta(p)
        else:
            self.src.tally(f"skipped {{n}} `{kind}` line(s), a line type ctxviz does not read")

    def _settle(self) -> None:
        """A report written before its response (Codex 0.39) goes to the response's first item."""
        latest = self.reader.latest_model
        if self.pending is not None and latest is not None and latest.usage is None:
            latest.usage, self.pending = self.pending, None

    def _common(self, record: dict[str, Any]) -> bool:
        """`line` for the lines that are most of a rollout (tool calls and outputs, messages,
        reasoning, usage reports, events that are not context, turn contexts), read from the dicts;
        False for any other line, or any field of an unexpected type, which `line` then reads (and,
        if it must, reports). Every field is checked before anything is changed, so a line left to
        `line` is read from the start."""
        payload, timestamp = record.get("payload"), record.get("timestamp")
        if type(payload) is not dict or (type(timestamp) is not str and timestamp is not None) or record.get("record_type") == "state":
            return False
        kind = record.get("type")
        if kind == "response_item":
            if not self._item_common(payload, timestamp or ""):
                return False
            self._task_item()
            return True
        if kind == "event_msg":
            event = payload.get("type")
            if type(event) is not str:
                return False
            if event == "token_count":
                return self._token_count_common(payload)
            if event in MESSAGE_EVENTS:
                if EVENT_ALIASES.get(event, event) in self.from_events:
                    return False  # read as a message (`event_message`)
                self.src.tally(f"skipped {{n}} `event_msg` `{event}` line(s) that {{repeats|repeat}} a `response_item`")
                return True
            if event == "task_started":
                window = payload.get("model_context_window")
                if type(window) is not int and window is not None:
                    return False
                if window:
                    self.context_window = window
            self._task_event(event)
            self.skipped_events[event] += 1
            return True
        if kind == "turn_context":
            model = payload.get("model")
            if model is None:
                return True
            if type(model) is not str:
                return False
            if model:
                self.models.append(model)
            return True
        return False

    def _item_common(self, payload: dict[str, Any], timestamp: str) -> bool:
        """A `response_item` as `item` reads it (`ItemReader.add`), for function and custom tool
        calls and their outputs, messages of text parts and reasoning whose fields are strings;
        False for any other item."""
        item = payload.get("type")
        reader = self.reader
        if item == "function_call" or item == "custom_tool_call":
            call_id, name = payload.get("call_id"), payload.get("name")
            arguments = payload.get("arguments" if item == "function_call" else "input")
            if type(call_id) is not str or not call_id or type(name) is not str:
                return False
            if type(arguments) is not str:
                if item == "function_call" or arguments is not None:
                    return False
                arguments = ""
            reader.model_side([ToolCallPart(call_id, name, arguments)], f"L{self._lineno}", timestamp, payload)
            return True
        if item == "function_call_output" or item == "custom_tool_call_output":
            call_id, output = payload.get("call_id"), payload.get("output")
            if type(call_id) is not str:
                return False
            if type(output) is not str:
                if output is not None:
                    return False
                output = ""
            reader.close()
            reader.new("tool", [ToolResultPart(call_id, output, False)], f"L{self._lineno}", timestamp, payload, tool_call_id=call_id)
            return True
        if item == "message":
            role = payload.get("role")
            if role == "developer":
                role = "system"
            elif role != "user" and role != "assistant" and role != "system":
                return False
            parts = _content_common(payload.get("content"))
            if parts is None:
                return False
            if role == "assistant":
                reader.model_side(parts, f"L{self._lineno}", timestamp, payload)
            else:
                reader.close()
                reader.new(role, parts, f"L{self._lineno}", timestamp, payload)
            return True
        if item == "reasoning":
            texts = _texts_common(payload.get("summary"))
            if texts is None:
                return False
            if not texts:
                texts = _texts_common(payload.get("content"))
                if texts is None:
                    return False
            if texts:
                part: Any = ThinkingPart("\n\n".join(texts))
            else:
                encrypted = payload.get("encrypted_content")
                if type(encrypted) is not str and encrypted is not None:
                    return False
                if not encrypted:
                    return False  # `ItemReader.add` counts it as skipped
                part = OpaquePart("reasoning", f"[encrypted reasoning: {len(encrypted):,} characters]")
            reader.model_side([part], f"L{self._lineno}", timestamp, payload)
            return True
        return False

    def _token_count_common(self, p: dict[str, Any]) -> bool:
        """`token_count` for a report with `info` whose counts are integers; False for any other."""
        if "info" not in p:
            return False
        info = p["info"]
        if info is None:
            self.skipped_events["token_count (rate limits only)"] += 1
            return True
        if type(info) is not dict:
            return False
        window = info.get("model_context_window")
        if type(window) is not int and window is not None:
            return False
        total = info.get("total_token_usage")
        if total is not None and total == self.last_total:
            if window:
                self.context_window = window
            self.src.tally("skipped {n} `token_count` line(s) that {repeats|repeat} the previous report")
            return True
        last = info.get("last_token_usage")
        if type(last) is not dict:
            return False
        read, written, cached = last.get("input_tokens"), last.get("output_tokens"), last.get("cached_input_tokens")
        if ((type(read) is not int and read is not None) or (type(written) is not int and written is not None)
                or (type(cached) is not int and cached is not None)):
            return False
        if window:
            self.context_window = window
        self.last_total = total
        read = read or 0
        cached = max(0, min(cached or 0, read))
        usage = Usage(read - cached, written or 0, cached)
        self.last_fill = usage.window_fill
        self.attach(usage)
        return True

    def session_meta(self, p: Fields) -> None:
        self.metas += 1
        if self.metas > 1:
            self.src.tally("read the first `session_meta`; skipped {n} later one(s) (a resumed or forked session repeats them)")
            return
        self.version = p.str("cli_version")
        base = p.get("base_instructions")
        if isinstance(base, dict):
            self.system_prompt = p.child("base_instructions", base).str("text")
        elif isinstance(base, str):
            self.system_prompt = base
        if not self.system_prompt and isinstance(p.get("instructions"), str):
            self.system_prompt = p.str("instructions")
        if p.str("model"):
            self.models.append(p.str("model"))

    def item(self, f: Fields, timestamp: str, lineno: int) -> None:
        self._task_item()
        kind = item_type(f)
        if kind in NOT_SENT_ITEMS:
            self.src.tally(f"skipped {{n}} `{kind}` item(s) ({NOT_SENT_ITEMS[kind]})")
            return
        self.reader.add(f, id=f"L{lineno}", timestamp=timestamp)

    def event(self, p: Fields, timestamp: str, lineno: int) -> None:
        kind = p.str("type", required=True)
        if kind in MESSAGE_EVENTS:
            if EVENT_ALIASES.get(kind, kind) not in self.from_events:
                self.src.tally(f"skipped {{n}} `event_msg` `{kind}` line(s) that {{repeats|repeat}} a `response_item`")
                return
            self.events_read.add(EVENT_ALIASES.get(kind, kind))
            self.event_message(p, kind, timestamp, lineno)
        elif kind == "token_count":
            self.token_count(p)
        else:
            if kind == "task_started" and p.int("model_context_window"):
                self.context_window = p.int("model_context_window")
            self._task_event(kind)
            self.skipped_events[kind] += 1

    def _task_item(self) -> None:
        """An item recorded in the task: a compaction in it is the turn's own (automatic)."""
        self.task_items += 1
        if self.quiet is not None:
            self._trigger(self.quiet, "auto")

    def _task_event(self, kind: str) -> None:
        """A task starts or ends: a compaction in a task that recorded no item was `/compact`'s."""
        if kind not in TASK_EVENTS:
            return
        if self.quiet is not None:
            self._trigger(self.quiet, "manual")
        self.in_task, self.task_items = kind == "task_started", 0

    def _trigger(self, k: int, trigger: str) -> None:
        self.compactions[k] = replace(self.compactions[k], trigger=trigger)
        self.quiet = None

    def event_message(self, p: Fields, kind: str, timestamp: str, lineno: int) -> None:
        if kind == "user_message":
            parts: list[Any] = [TextPart(p.str("message"))] if p.str("message") else []
            images = p.list("images")
            for i, image in enumerate(images):
                if isinstance(image, str):
                    parts.append(ImagePart(url=image))
                else:
                    raise p.child("images", images).error(f"expected an image URL, got {type_name(image)}", i)
            self.reader.close()
            self.reader.new("user", parts, f"L{lineno}", timestamp, p.record)
        elif kind == "agent_message":
            if p.str("message"):
                self.reader.model_side([TextPart(p.str("message"))], f"L{lineno}", timestamp, p.record)
        elif kind in ("agent_reasoning", "agent_reasoning_raw_content"):
            if p.str("text"):
                self.reader.model_side([ThinkingPart(p.str("text"))], f"L{lineno}", timestamp, p.record)
        else:
            self.skipped_events[kind] += 1

    def token_count(self, p: Fields) -> None:
        if p.has("info") or not p.has("input_tokens"):
            info = p.get("info")
            if info is None:
                self.skipped_events["token_count (rate limits only)"] += 1
                return
            i = p.child("info", info)
            if i.int("model_context_window"):
                self.context_window = i.int("model_context_window")
            total = i.get("total_token_usage")
            if total is not None and total == self.last_total:
                self.src.tally("skipped {n} `token_count` line(s) that {repeats|repeat} the previous report")
                return
            self.last_total = total
            last = i.get("last_token_usage")
            if not isinstance(last, dict):
                self.src.tally("skipped {n} `token_count` line(s) without `last_token_usage` (a total cannot be split by call)")
                self.reader.close()
                return
            u = i.child("last_token_usage", last)
        else:  # older files: the call's usage is the payload itself
            u = p
        cached = u.int("cached_input_tokens")
        usage = responses_usage(u, cached=cached)
        self.last_fill = usage.window_fill
        self.attach(usage)

    def attach(self, usage: Usage) -> None:
        if self.version.startswith(USAGE_BEFORE_ITEMS):
            if self.pending is not None:
                self.src.tally("{n} reported usage(s) (`token_count`) had no response after them before the next report "
                               "(an interrupted call) and were not attached")
            self.pending = usage  # the response's items come next: `line` attaches it to them
            self.reader.latest_model = None
            self.reader.close()
            return
        target: Draft | None = self.reader.latest_model
        if target is None or target.usage is not None:
            self.src.tally("{n} reported usage(s) (`token_count`) had no assistant turn of their own since the previous report "
                           "(a compaction or an interrupted call) and were not attached")
        else:
            target.usage = usage
        self.reader.latest_model = None
        self.reader.close()  # one call's output ends here

    def compacted(self, p: Fields, timestamp: str, lineno: int) -> None:
        history = p.get("replacement_history")
        if history is not None:
            if not isinstance(history, list):
                raise p.error(f"expected a list, got {type_name(history)}", "replacement_history")
            text = self.history_text(p.child("replacement_history", history), history)
            self.src.tally("read {n} `compacted` line(s) as compactions: the messages before each are summarised by its replacement history")
        else:
            text = p.str("message") or "[compaction: no summary text recorded]"
            self.src.tally("read {n} `compacted` line(s) without a replacement history as compactions summarised by their `message`")
        self.reader.close()
        self.reader.latest_model = None
        drafts = self.reader.drafts
        covered = [d for d in drafts if d.role != "system"]
        self.summaries.append(Summary(
            text=text,
            depth=1,
            messages_covered=len(covered),
            time_range_start=covered[0].timestamp if covered else "",
            time_range_end=covered[-1].timestamp if covered else "",
            covers=tuple(d.id for d in covered),
            created_at=timestamp,
        ))
        trigger = p.get("trigger")
        self.compactions.append(Compaction(before_index=len(drafts), trigger=trigger if isinstance(trigger, str) else "",
                                           pre_tokens=self.last_fill))
        if not isinstance(trigger, str) and self.in_task:  # which it was, from the task it sits in (`_task_event`)
            if self.task_items:
                self._trigger(len(self.compactions) - 1, "auto")
            else:
                self.quiet = len(self.compactions) - 1

    def history_text(self, h: Fields, history: list[Any]) -> str:
        """The replacement history as the summary's text: each message as `[role]` and its text.

        Its developer messages are left out: the session's own system messages, which every policy
        keeps, stand for them.
        """
        reader = ItemReader(self.src)
        for i, item in enumerate(history):
            if isinstance(item, dict) and item.get("type") in NOT_SENT_ITEMS:
                # Codex never sends them, here as anywhere (they were read as summary text before).
                self.src.tally(f"left {{n}} `{item['type']}` item(s) out of replacement histories ({NOT_SENT_ITEMS[item['type']]})")
                continue
            reader.add(h.child(i, item))
        blocks = []
        for message in reader.messages():
            if message.role == "system":
                self.src.tally("left {n} developer message(s) of replacement histories out of their summaries "
                               "(the session's own system messages stand for them)")
                continue
            blocks.append(f"[{message.role}]\n{message.text}")
        return "\n\n".join(blocks)
