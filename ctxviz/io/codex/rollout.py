"""A Codex rollout read line by line into a session, and carried on as the file grows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...engine.session import (
    Category,
    Compaction,
    ImagePart,
    Message,
    Session,
    Summary,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    Usage,
    part_text,
)
from ...engine.wording import noun
from ..base import Fields, make_message, type_name
from ..responses import ItemReader, item_type
from ..source import SourceFile
from .compactions import CompactionReading
from .fast_lines import FastLines
from .records import (
    EVENT_ALIASES,
    EVENT_ITEM,
    EVENT_WHAT,
    FORMAT,
    INJECTED_PREFIXES,
    MESSAGE_EVENTS,
    NOT_SENT_ITEMS,
    is_envelope,
    is_flat_header,
    is_state,
    item_kind,
    item_kinds,
    rollout_records,
)
from .usage import UsageReading


class _Rollout(FastLines, UsageReading, CompactionReading):
    """The reading of one rollout, kept so that a growing file is read on from where it stopped (`more`)."""

    def __init__(self, src: SourceFile) -> None:
        self.src = src
        self.reader = ItemReader(src)
        self.models: list[str] = []
        self.system_prompt = ""
        self.tools: tuple[ToolDefinition, ...] = ()  # session_meta.dynamic_tools
        self.meta_notes: list[str] = []  # what was read of them
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
        self.flat = not is_envelope(records[0][1])
        self.kinds = item_kinds(records)
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
        kinds = item_kinds(records)
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
        src.notes.extend(self.meta_notes)
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
            format=FORMAT,
            model=distinct[-1] if distinct else "",
            system_prompt=self.system_prompt,
            tools=self.tools,
            summaries=tuple(self.summaries),
            compactions=tuple(self.compactions),
            format_version=self.version,
            context_window=self.context_window,
        )

    #: What a line holds, for choosing the vocabulary (records.item_kind).
    _item_kind = staticmethod(item_kind)

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
        if is_state(record):
            self.src.tally("skipped {n} `record_type: state` line(s) (bookkeeping)")
            return
        f = Fields(self.src, record, (), lineno)
        if "payload" not in record:
            if is_flat_header(record):
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

