"""The conversation a Claude Code file holds, from its parsed lines (`_Reader`): the messages the
conversation's lines make (which lines those are is its `_Chain` part, chain.py; the walk over them
is loop.py's), the session, and carrying a load on as the file grows."""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...engine.id_prefix import IdPrefix
from ...engine.packed_json import Packer
from ...engine.session import (
    Category,
    Compaction,
    Message,
    Part,
    Session,
    Summary,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
    message_with,
    part_text,
)
from ..base import make_message, new_message, tool_names_settled
from ..parts import split_tool_results
from ..source import SourceFile
from .attachments import render_attachment, wrap_reminder
from .chain import _Chain, _is_turn_line, _references
from .lines import (
    _BOOKKEEPING_NOTES,
    _KNOWN_TYPES,
    CLEARED_TOOL_RESULT,
    SUBAGENT_FILE,
    _build_parts,
    _Line,
    _parse_checked,
    _parse_common,
    _result_images,
)
from .loop import _Loop
from .records import packed_record


class _Reader(_Chain):
    """The conversation a Claude Code file holds, from its parsed lines; kept (`keep`) so that the
    lines a growing file appends can be read on top of it (`more`).

    Tallies are kept per phase of the load (parsing, scope, chain, left-out lines, the messages,
    clearing, empty assistants) and written to the source in that order at the end, so that a
    load carried on over later lines names its notes in the order a full load does."""

    def __init__(self, src: SourceFile, keep: bool = False, name_results: bool = False) -> None:
        self.src = src
        self.keep = keep
        #: Tool call id -> name, of the calls read so far, when tool results are named as they are made.
        self.names: dict[str, str] | None = {} if name_results else None
        #: A result was named before its call was read, or a call id came again with another name:
        #: the names are checked against the whole session (`base.tool_names_settled`).
        self.names_unsure = False
        self.strings: dict[str, str] = {}  # the one copy of each line's version and session id (`add_records`)
        self.packer = Packer()  # the records messages keep (`packed_record`)
        self.lines: list[_Line] = []
        self.written: dict[str, dict[str, Any]] = {}  # uuid -> (a copy of) its first line's record
        self.messages: list[Message] = []
        self.summaries: list[Summary] = []
        #: The ids of `messages`' first messages, as far as a summary's covers needed them, and the
        #: first position of each (`_summary`).
        self.message_ids: list[str] = []
        self.first_at: dict[str, int] = {}
        self.compactions: list[Compaction] = []
        self.produced: dict[str, list[str]] = {}  # line uuid -> ids of the messages it became
        self.system_prompt = ""
        self.tools: tuple[ToolDefinition, ...] = ()
        self.breaks = 0  # times the chain reached a parent the file does not have
        # Tallies by phase (see the class docstring).
        self.parse_tallies: dict[str, int] = {}
        self.loop_tallies: dict[str, int] = {}
        self.sidechain = 0
        self.continued = 0  # breaks after which the chain went on with the line before
        self.left_out = {"rewind": 0, "compact": 0, "unlinked": 0}
        self.cleared_counts = [0, 0]  # tool results, attachments
        # The messages as Claude Code sends them (`_sent`): `messages` without its whitespace-only
        # assistant messages, renumbered; the position in `messages` each came from; whether each
        # took the reported usage of such a message.
        self.sent: list[Message] = []
        self.sent_from: list[int] = []
        self.moved: list[bool] = []
        # What carrying the load on needs (set by a full load; see `more`).
        self.resumable = False
        self.why_full = ""  # why the last `more` could not carry the load on
        self.sub = False  # the whole file is a sub-agent's transcript
        self.agent_id = ""  # its `agentId`, from its first turn that has one
        self.agent_default = ""  # its id when no turn has one
        self.main_turns = 0  # turns not marked `isSidechain`
        self.scope: list[_Line] = []
        self.by_uuid: dict[str, int] = {}
        self.previous: str | None = None  # the line a line without `parentUuid` follows
        self.in_order = False  # no line says what it follows: the file's order is the conversation
        self.chained: list[int] = []
        self.chain: set[int] = set()
        self.included: set[int] = set()
        self.missing: set[str] = set()  # uuids lines refer to that the file does not have (yet)
        self.verdict: dict[int, str] = {}
        self.compacted_after: set[str] = set()
        self.included_ids: set[str] = set()  # message.id of included assistant lines
        self.off_ids: set[str] = set()  # message.id of assistant lines left out
        self.calls: set[str] = set()
        self.answered: set[str] = set()
        self.off_results: set[str] = set()  # tool_use ids answered by lines left out
        self.parallel_answers: set[str] = set()  # tool_use ids answered by parallel results taken in
        self.has_segments = False  # a compaction kept a segment (its lines hang beside the chain)
        self.loop = _Loop()
        self.last_by_uuid: tuple[list[_Line], int, dict[str, _Line]] | None = None  # see `_last_line_by_uuid`

    # --- reading lines --------------------------------------------------------------------------
    def add_records(self, records: Any) -> list[_Line]:
        """Parse records into lines (a line written twice is skipped); returns the lines added."""
        src, written, added = self.src, self.written, []
        saved, src.tallies = src.tallies, self.parse_tallies
        try:
            parse_checked, append, strings, pack, packer = _parse_checked, added.append, self.strings, packed_record, self.packer
            for lineno, record in records:
                line = _parse_common(src, lineno, record) or parse_checked(src, lineno, record)  # the common lines read straight from their dicts
                get = record.get
                version = get("version")
                if version.__class__ is str:  # (the walk reads a version only if it is a string)
                    # One string for every line's version and session id (both the same on most lines):
                    # less memory, and the walk compares versions by identity.
                    line.version = shared = strings.setdefault(version, version)
                    if shared is not version:
                        record["version"] = shared
                role = line.role
                if role or line.kind == "attachment":  # a line whose record a message may keep
                    timestamp, session_id = get("timestamp"), get("sessionId")
                    if isinstance(timestamp, str):
                        line.timestamp = timestamp
                    if session_id.__class__ is str and (shared := strings.setdefault(session_id, session_id)) is not session_id:
                        record["sessionId"] = shared
                    if role == "user":
                        line.meta, line.compact_summary = get("isMeta") is True, get("isCompactSummary") is True
                        line.images = _result_images(record)
                uuid = line.uuid
                if uuid:
                    earlier = written.get(uuid)
                    if earlier is None:
                        written[uuid] = record
                    elif earlier == record:
                        # Claude Code sometimes appends the same line again: one message, not a rewind to it.
                        src.tally("skipped {n} line(s) written twice (the same uuid and content as an earlier line)")
                        continue
                if role and not line.sidechain and not line.compact_summary and line.parts is not None:
                    # The record a message made of this line keeps, packed now, while the record is fresh in
                    # memory (`_Line.packed`; a sub-agent's line or a summary is packed, if ever, when used).
                    line.packed = pack(packer, line)
                append(line)
        finally:
            src.tallies = saved
        self.lines += added
        return added

    # --- carrying a load on ---------------------------------------------------------------------
    def more(self, src: SourceFile, records: Sequence[tuple[int, Any]], format_name: str) -> Session | None:
        """The session after `records` were appended, reusing the messages read so far; None when
        the appended lines could change what the lines before them mean. Then a full load is the
        only sure answer; in a live log that happens at a compaction, a rewind, a line naming a
        parent written after it (or one an earlier line named), a preserved segment, a
        microcompaction, a file that turns out to be a
        sub-agent's transcript (or stops being one), and in a file whose lines give no parents when
        one starts giving them. Otherwise the appended lines only extend the chain the last line
        hung from, and each earlier line keeps its place and its message.

        Why each is needed, briefly: a full load walks the chain back from the file's last line, so
        a new last line is read here only when its walk reaches the previous last line through new
        lines alone (a rewind reaches an older one); lines beside the chain (streamed parts of one
        message, parallel tool results, hook context) are taken in by what is on the chain, so new
        chain lines must not take in an earlier line that was left out; and a compaction changes how
        earlier left-out lines are counted."""
        self.src = src
        if not self.resumable:
            return self._unsure("not carried on (the last load could not be)")
        self.resumable = False  # until this carries on to the end (an error midway leaves it unusable)
        added = self.add_records(records)
        new_from = len(self.messages)
        if not added:
            self.resumable = True
            return self._finish(format_name, new_from, new_from)
        if any(x.subtype in ("compact_boundary", "microcompact_boundary") or x.segment for x in added):
            return self._unsure("a compaction, a microcompaction or a preserved segment")
        # The scope: which lines are the conversation.
        turns = [x for x in added if _is_turn_line(x)]
        main_turns = sum(1 for x in turns if not x.sidechain)
        by_name = SUBAGENT_FILE.match(os.path.basename(src.path)) is not None
        if self.sub:
            if main_turns and not by_name:
                return self._unsure("a main-session turn in a sub-agent's transcript")  # a main-session turn: no longer a sub-agent's transcript
            if not self.agent_id:
                self.agent_id = next((str(x.record["agentId"]) for x in turns if isinstance(x.record.get("agentId"), (str, int))), "")
            new = list(added)
            _build_parts(src, new)
        else:
            if not self.main_turns and turns and not main_turns:
                return self._unsure("the first turns are a sub-agent's")  # the first turns are a sub-agent's: the file becomes its transcript
            self.sidechain += sum(1 for x in added if x.sidechain)
            new = [x for x in added if not x.sidechain]
        self.main_turns += main_turns
        scope, start = self.scope, len(self.scope)
        scope += new
        positions = range(start, len(scope))
        if not self._grow_included(scope, positions):
            return None
        first_changed = self.loop.run(self, scope, positions)
        if first_changed < new_from and (self.loop.cleared_tools or self.loop.cleared_lines):
            return self._unsure("a message read before changed, and a microcompaction may have cleared it")
        self.resumable = True
        return self._finish(format_name, first_changed, new_from)

    # --- the session ---------------------------------------------------------------------------
    def session(self, format_name: str) -> Session:
        self.scope = scope = self._scope()
        self.included = self._included(scope)
        by_uuid = self.by_uuid
        # _references, with the common case (a line naming only its parent) inlined
        if self.keep:  # what carrying the load on needs (`more`)
            self.missing = {x.parent for x in scope if type(x.parent) is str and x.parent and x.parent not in by_uuid}
            self.missing.update(u for x in scope if x.logical or x.segment or x.cleared[1] for u in _references(x) if u not in by_uuid)
            self.has_segments = any(x.segment for x in scope)
        self.loop.run(self, scope, range(len(scope)))
        self.resumable = self.keep
        session = self._finish(format_name, 0, 0)
        if self.names is None or not (self.names_unsure or self.loop.cleared_lines):
            return session  # each result has the name of the last call of its id (a cleared line may have held a call)
        return tool_names_settled(session)

    def _finish(self, format_name: str, first_changed: int, new_from: int) -> Session:
        """The session from the messages read so far (those from `first_changed` on are new or
        changed since the last time, those from `new_from` on new), and the tallies in the order a
        full load makes them."""
        loop = self.loop
        if loop.cleared_tools or loop.cleared_lines:
            self._clear(loop.cleared_tools, loop.cleared_lines, new_from)
        self._sent(first_changed)
        src = self.src
        tallies: list[tuple[str, int]] = list(self.parse_tallies.items())
        if self.sidechain:
            tallies.append(("skipped {n} sub-agent (`isSidechain`) line(s): they were never in the main model's context", self.sidechain))
        if self.continued:
            tallies.append(("the chain of lines breaks {n} time(s) at a parent that is not in the file (a message Claude Code "
                            "did not write, or a trimmed file); each time it continues with the line just before", self.continued))
        for kind, template in (("rewind", "left out {n} line(s) of abandoned branches (rewinds)"),
                               ("compact", "left out {n} `/compact` request line(s) a compaction took the place of"),
                               ("unlinked", "left out {n} line(s) whose parent is not in the file (not connected to the last line's chain)")):
            if self.left_out[kind]:
                tallies.append((template, self.left_out[kind]))
        tallies += self.loop_tallies.items()
        tools, attachments = self.cleared_counts
        if tools:
            tallies.append((f"replaced {{n}} tool result(s) a `microcompact_boundary` cleared with \"{CLEARED_TOOL_RESULT}\"", tools))
        if attachments:
            tallies.append((f"replaced {{n}} attachment(s) a `microcompact_boundary` cleared with \"{CLEARED_TOOL_RESULT}\"", attachments))
        moved = sum(self.moved)
        if moved:
            tallies.append(("kept the reported usage of {n} whitespace-only assistant message(s) Claude Code does not send "
                            "(on the message next to it)", moved))
        for template, n in tallies:
            src.tally(template, n)
        notes: list[str] = []
        if self.agent:
            notes.append(f"sub-agent transcript (agentId {self.agent})")
        versions = loop.versions
        if len(versions) > 1:
            notes.append(f"written by Claude Code {versions[0]} to {versions[-1]}")
        compactions = self.compactions
        if len(self.sent) != len(self.messages):  # a compaction's place among the messages sent
            compactions = [replace(c, before_index=bisect_left(self.sent_from, c.before_index)) for c in compactions]
        return Session(
            messages=tuple(self.sent),
            source=src.path,
            format=format_name,
            model=loop.model,
            system_prompt=self.system_prompt,
            tools=self.tools,
            summaries=tuple(self.summaries),
            compactions=tuple(compactions),
            title=loop.custom_title or loop.title or loop.ai_title or (f"sub-agent {self.agent}" if self.agent else ""),
            format_version=versions[-1] if versions else "",
            notes=tuple(notes),
        )

    def _tally_bookkeeping(self, x: _Line) -> None:
        key = (x.kind, x.subtype)
        template = _BOOKKEEPING_NOTES.get(key)
        if template is None:
            if x.kind == "system":
                template = f"skipped {{n}} `system` line(s) of subtype `{x.subtype or '(none)'}` (Claude Code's own bookkeeping, not sent)"
            elif x.kind in _KNOWN_TYPES:
                template = f"skipped {{n}} `{x.kind}` line(s) (bookkeeping, not context)"
            else:
                template = f"skipped {{n}} line(s) of the unknown type `{x.kind}` (no `message`)"
            if len(_BOOKKEEPING_NOTES) < 1000:  # a file may make up any number of types: only the first are kept
                _BOOKKEEPING_NOTES[key] = template
        self.src.tally(template)

    def _add_names(self, parts: Sequence[Part]) -> None:
        """Note the names of the tool calls among `parts` (for the results read after them)."""
        names = self.names
        assert names is not None
        for p in parts:
            if p.__class__ is ToolCallPart and p.id:
                if names.setdefault(p.id, p.name) != p.name:
                    names[p.id] = p.name
                    self.names_unsure = True  # an id called again with another name: a result read before may be misnamed

    def _add(self, x: _Line, message: Message) -> None:
        self.messages.append(message)
        self.produced.setdefault(x.uuid, []).append(message.id)

    def _user(self, x: _Line) -> bool:
        """A user line; each tool_result block becomes its own `tool` message, as in `messages_from_blocks`.
        Returns whether the line has anything besides tool results (a turn of the user's).

        Ids must stay unique, so when one line yields several messages the first keeps the line's
        uuid and the others get `uuid#1`, `uuid#2`... An internal line (`isMeta`: a skill's text, a
        command's caveat, a reminder) is context Claude Code adds, not the user's words.
        """
        record, uuid, names, messages, timestamp = x.packed or packed_record(self.packer, x), x.uuid, self.names, self.messages, x.timestamp
        parts = x.parts
        if len(parts) == 1 and parts[0].__class__ is ToolResultPart:  # a tool's output alone: most user lines of an agent's log
            results, rest = parts, ()
        else:
            results, rest = split_tool_results(parts)
        if x.images:  # a screenshot the Read tool returned is sent as an image block inside the result
            self.src.tally("kept {n} image(s) inside tool results as an `[image]` placeholder (their tokens are not counted)", x.images)
        ids = self.produced.setdefault(uuid, [])
        k = 0
        for r in results:
            tool_call_id = r.tool_call_id
            name = ""
            if names is not None and tool_call_id:
                name = names.get(tool_call_id)
                if name is None:
                    name, self.names_unsure = "", True  # its call may come later
            message = new_message(len(messages), "tool", (r,), (f"{uuid}#{k}" if k else uuid) if uuid else "", name, tool_call_id, timestamp,
                               Category.SYSTEM_OUTPUT, None, record)
            messages.append(message)
            ids.append(message.id)
            k += 1
        if rest or not results:
            category = Category.CONTEXT if x.meta else Category.DIALOG
            message = new_message(len(messages), "user", tuple(rest), (f"{uuid}#{k}" if k else uuid) if uuid else "", "", "", timestamp,
                               category, None, record)
            messages.append(message)
            ids.append(message.id)
        return bool(rest)

    def _attachment(self, x: _Line) -> None:
        attachment = x.record.get("attachment")
        if not isinstance(attachment, dict):
            self.src.tally("skipped {n} `attachment` line(s) without an attachment object")
            return
        kind = str(attachment.get("type") or "")
        if kind == "prompt_snapshot":
            self._prompt_snapshot(attachment)
            return
        text, known = render_attachment(attachment)
        if text is None:
            self.src.tally(f"skipped {{n}} `{kind}` attachment(s): Claude Code sends nothing for them")
            return
        if not known:
            self.src.tally(f"read {{n}} `{kind}` attachment(s) from their fields (ctxviz does not know how Claude Code words them)")
        self.src.tally("read {n} attachment line(s) as context messages (what Claude Code renders into the next request)")
        self._add(x, make_message(len(self.messages), "user", [TextPart(wrap_reminder(text))], id=x.uuid, timestamp=_timestamp(x),
                                  category=Category.CONTEXT, raw=packed_record(self.packer, x)))

    def _prompt_snapshot(self, attachment: dict[str, Any]) -> None:
        """Newer versions record the system prompt and the tool list sent with a request."""
        prompt = attachment.get("systemPrompt")
        if isinstance(prompt, list):
            prompt = "\n\n".join(str(p) for p in prompt if isinstance(p, str) and p != "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__")
        if isinstance(prompt, str) and prompt:
            self.system_prompt = prompt
        tools = attachment.get("tools")
        if isinstance(tools, list):
            self.tools = tuple(ToolDefinition(str(t.get("name", "")), str(t.get("description", "")),
                                              t.get("input_schema") if isinstance(t.get("input_schema"), dict) else {})
                               for t in tools if isinstance(t, dict) and t.get("name"))
        self.src.tally("took the system prompt and tool list from the last of {n} `prompt_snapshot` attachment(s)")

    def _last_line_by_uuid(self, scope: list[_Line]) -> dict[str, _Line]:
        """uuid -> the last line in `scope` with it; made once per state of `scope` (a log with many
        compactions that kept a segment would otherwise build it once per compaction)."""
        cached = self.last_by_uuid
        if cached is None or cached[0] is not scope or cached[1] != len(scope):
            cached = self.last_by_uuid = (scope, len(scope), {y.uuid: y for y in scope if y.uuid})
        return cached[2]

    def _compaction(self, x: _Line, scope: list[_Line]) -> tuple[Compaction, frozenset[str]]:
        preserved: list[str] = []
        if x.segment:
            # The segment's lines, tail back to head, in file order.
            by_uuid = self._last_line_by_uuid(scope)
            uuids: list[str] = []
            at = by_uuid.get(x.segment["tailUuid"])
            while at is not None and at.uuid not in uuids:
                uuids.append(at.uuid)
                if at.uuid == x.segment["headUuid"]:
                    break
                at = by_uuid.get(at.parent) if isinstance(at.parent, str) else None
            preserved = list(dict.fromkeys(mid for u in reversed(uuids) for mid in self.produced.get(u, [])))
        assert x.compaction is not None
        compaction = replace(x.compaction, before_index=len(self.messages), preserved=tuple(preserved))
        return compaction, frozenset(preserved)

    def _summary(self, x: _Line, pending: tuple[Compaction, frozenset[str]] | None) -> None:
        """The summary Claude Code writes after a compaction: it covers every message before the
        boundary except a preserved segment (all messages so far when there is no boundary).
        Where the segment is the last messages before the boundary (or there is none), its covers
        are the first message ids: a view of `message_ids` (`IdPrefix`), not a copy, as each
        compaction of a long log covers every message before it."""
        end, keep = (pending[0].before_index, pending[1]) if pending is not None else (len(self.messages), frozenset())
        messages, ids, at = self.messages, self.message_ids, self.first_at
        for k in range(len(ids), end):  # (a message keeps its id and its place: only new ones are added)
            ids.append(messages[k].id)
            at.setdefault(ids[k], k)
        n = end
        while n and ids[n - 1] in keep:
            n -= 1
        if all(at.get(k, n) >= n for k in keep):  # the segment is the last messages before the boundary
            covers: Sequence[str] = IdPrefix(ids, n)
            first, last = (messages[0], messages[n - 1]) if n else (None, None)
        else:
            before = [m for m in messages[:end] if m.id not in keep]
            covers = tuple([m.id for m in before])
            first, last = (before[0], before[-1]) if before else (None, None)
        text = "\n".join(part_text(p) for p in x.parts if part_text(p))
        self.summaries.append(
            Summary(
                text=text,
                depth=1,
                messages_covered=len(covers),
                time_range_start=first.timestamp if first is not None else "",
                time_range_end=last.timestamp if last is not None else "",
                covers=covers,  # type: ignore[arg-type]
                created_at=_timestamp(x),
            )
        )

    def _clear(self, tool_ids: set[str], line_uuids: set[str], start: int) -> None:
        """What a microcompaction cleared, as Claude Code sends it from then on (in the messages
        from `start` on: those before were cleared when they were read)."""
        cleared_ids = {mid for u in line_uuids for mid in self.produced.get(u, [])}
        for k in range(start, len(self.messages)):
            m = self.messages[k]
            if m.role == "tool" and m.tool_call_id in tool_ids:
                parts = tuple(replace(p, text=CLEARED_TOOL_RESULT) if isinstance(p, ToolResultPart) else p for p in m.parts)
                self.messages[k] = message_with(m, parts=parts)
                self.cleared_counts[0] += 1
            elif m.id in cleared_ids:
                self.messages[k] = message_with(m, parts=(TextPart(CLEARED_TOOL_RESULT),))
                self.cleared_counts[1] += 1

    def _sent(self, first_changed: int) -> int:
        """Bring `sent` up to date with `messages`, of which those from `first_changed` on are new
        or changed; returns the first position in `sent` rebuilt (those before are the same objects).

        An assistant message all of whose lines were whitespace: Claude Code sends nothing of it.
        Its call still happened: the usage it reported moves to the next message (or, at the end of
        the file, to the message before it), the usage of a message being read as the call that
        produced it, made on the request just before it. So what is sent for a message depends on
        it and on the whitespace-only messages just before it (and, for the last one, just after
        it): from the last message sent before `first_changed`, with the whitespace-only ones
        before it, everything is rebuilt, and nothing earlier changes (a followed log that writes
        such lines is carried on, not read again whole)."""
        raw, sent, came_from, moved = self.messages, self.sent, self.sent_from, self.moved
        at = bisect_left(came_from, first_changed) - 1  # the last message sent from before first_changed
        if at < 0:
            at = start = 0
        else:
            start = came_from[at - 1] + 1 if at else 0
        del sent[at:], came_from[at:], moved[at:]
        tail = raw[start:]
        empty = [m.role == "assistant" and not m.parts for m in tail]
        usages = [m.usage for m in tail]
        took = [False] * len(tail)
        if any(empty):
            n = len(tail)
            for k, m in enumerate(tail):
                if not empty[k] or m.usage is None:
                    continue
                after = next((j for j in range(k + 1, n) if not empty[j]), None)
                before = next((j for j in range(k - 1, -1, -1) if not empty[j]), None)
                target = after if after is not None and usages[after] is None else (
                    before if after is None and before is not None and usages[before] is None else None)
                if target is not None:
                    usages[target] = m.usage
                    took[target] = True
        for k, m in enumerate(tail):
            if empty[k]:
                continue
            index = len(sent)
            sent.append(m if m.index == index and not took[k] else message_with(m, index=index, usage=usages[k]))
            came_from.append(start + k)
            moved.append(took[k])
        return at


def _timestamp(x: _Line) -> str:
    return x.timestamp
