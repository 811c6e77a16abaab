"""Follow a session log while its agent writes it: read only the bytes appended since the last look.

`Follower(path).poll()` reads what was appended, parses each new complete line once, and holds
the parsed records. After each poll its `session` equals `load_session(the file so far)`, notes
included, without reading the file again from the start:

- **A half-written last line** (no newline yet) is not held: it is read again, with what follows
  it, at the next poll. Meanwhile it counts as `load_session` counts it: a record if it already
  parses, else skipped with the same note.
- **A file replaced** (another inode at the path: an agent that rewrites its log, an editor's
  atomic save) **or truncated** (smaller than what was read) is read again whole, with a note.
- **A file deleted** keeps what was read, with a note; if a file appears at the path again, it is
  read whole.
- **A file that is not JSON lines** (a Gemini CLI `.json` chat, which its agent rewrites whole at
  every turn) is read whole again when its size, time or inode changes.

What is incremental, honestly: bytes are read and JSON is decoded once per line. The Claude Code,
Codex and Gemini CLI loaders carry their last load on (`load_resumable` / `load_more`): the records
appended are read on top of the state the loader kept, the messages made before are reused as the
same objects, and tool results are named from the new calls alone. Where the appended records could
change what earlier ones mean (a Claude Code rewind or compaction, a parent written after the line
naming it, a Codex rollout switching from `event_msg` to `response_item` messages; each loader's
`load_more` lists its cases) the loader says it cannot be sure and the records held are loaded whole
again, with no re-read and no re-decoding (`why_full` says why); so does a poll whose unfinished last
line already parses (it is not kept). Other formats are always loaded whole from the records held.
Token counts are incremental: only new or changed messages are measured
(`engine.counting.extend_counts`), and `plan()` reuses them.

Files are only ever opened for reading (`source.open_regular`), under the same size limit as
`load_session`.
"""

from __future__ import annotations

import dataclasses
import gc
import os
from dataclasses import dataclass, field
from typing import Any

from ..engine.counting import CountingScheme, CountStore, TokenCounts, count_session, extend_counts
from ..engine.growth import same_prefix
from ..engine.plan import Plan
from ..engine.planner import plan_session
from ..engine.policies import get_policy
from ..engine.session import Message, Session, ToolCallPart, message_with
from ..engine.tokenizers import Tokenizer
from ..engine.wording import noun
from ..errors import LoadError
from .loaders import detect, forced_format_notes, get_loader, load_session, load_source, with_tool_names
from .source import CUT_LINE, DEFAULT_MAX_BYTES, JSONL_SUFFIXES, SourceFile, check_head, cut_line_note, open_regular
from .usage_counts import without_negative_usage

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Update:
    """What one poll found."""

    session: Session
    appended_bytes: int
    #: Messages the session has now that it did not have before this poll (negative: it lost some).
    new_messages: int
    #: The file was read again whole (replaced, truncated, or a whole-document format rewritten).
    reread: bool = False
    notes: tuple[str, ...] = ()


@dataclass
class _Resume:
    """What carrying a load on needs: the loader's state after the records it read, and the
    session it gave (as built, and finished: notes and tool names)."""

    loader: Any
    state: Any
    records: int  # held records the state has read
    built: tuple[Message, ...]  # the loader's messages
    final: tuple[Message, ...]  # the session's (tool results named)
    forced: list[str]  # notes of a format chosen by name
    names: dict[str, str] = field(default_factory=dict)  # tool call id -> name
    unnamed: set[str] = field(default_factory=set)  # call ids of tool results without a name


def _finished(src: SourceFile, session: Session, forced: list[str], named: bool = True) -> Session:
    """What `load_source` does after the loader: notes, and tool results named (a negative
    reported usage is left out by `_update`, after)."""
    src.notes.extend(forced)
    if not session.messages:
        src.notes.append("the session has no messages")
    notes = src.all_notes()
    if notes:
        session = dataclasses.replace(session, notes=(*session.notes, *notes))
    return with_tool_names(session) if named else session


def _tool_names(messages: tuple[Message, ...]) -> dict[str, str]:
    return {p.id: p.name for m in messages for p in m.parts if isinstance(p, ToolCallPart) and p.id}


def _unnamed(messages: tuple[Message, ...]) -> set[str]:
    return {m.tool_call_id for m in messages if m.role == "tool" and not m.name and m.tool_call_id}


def _first_changed(old: tuple[Message, ...], new: tuple[Message, ...]) -> int:
    """The first position where `new` holds another object than `old` (loaders carrying a load on
    keep the messages they did not change)."""
    return same_prefix(old, new)


class Follower:
    """The session of one growing log file, read as it grows. Not thread-safe: poll from one thread."""

    def __init__(self, path: str | os.PathLike[str], input_format: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 store: CountStore | None = None, forget_previous: bool = True) -> None:
        self.path = os.fspath(path)
        self.input_format = input_format
        self.max_bytes = max_bytes
        self.jsonl = self.path.lower().endswith(JSONL_SUFFIXES)
        self.session: Session | None = None
        #: What happened to the file while it was followed (replaced, truncated, deleted), oldest first.
        self.notes: list[str] = []
        #: Where the counts are kept; the app passes its own, so that its plans find the extended counts.
        self.store = store if store is not None else CountStore()
        #: Drop a state's counts from the store once the next is read (off for a store others still
        #: plan earlier states from: they forget those themselves).
        self.forget_previous = forget_previous
        self._counts: dict[tuple[str, str], TokenCounts] = {}
        #: Polls that read the appended records on top of the last state, and those that loaded all held records.
        self.incremental_loads = 0
        self.full_loads = 0
        #: Why the last full load was needed ("" for the first read of a file).
        self.why_full = ""
        self._reset()
        self._deleted = False

    def _reset(self) -> None:
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file read
        self._offset = 0  # bytes consumed (complete lines)
        self._pending = b""  # a last line without its newline yet
        self._lines = 0  # lines consumed (blank ones included: line numbers count them)
        self._records: list[tuple[int, Any]] = []
        self._line_notes: list[str] = []  # notes made while decoding held lines (replaced surrogates)
        self._stamp: tuple[int, int] | None = None  # (size, mtime_ns) of a whole-document file
        #: A complete line that ends mid-record: fine as the file's last line (skipped with a note, as
        #: load_session does), a broken file once another line follows it.
        self._cut: LoadError | None = None
        self._broken: LoadError | None = None
        self._resume: _Resume | None = None

    # --- reading -------------------------------------------------------------------------------
    def poll(self) -> Update | None:
        """Read what changed since the last poll; None when nothing did. Raises LoadError (one line)
        when the file so far cannot be read as `load_session` would refuse it."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self.session is not None and not self._deleted:
                self._deleted = True
                self._note(f"the file was deleted; keeping the {len(self.session.messages):,} {noun(len(self.session.messages), 'message')} read from it")
                return Update(self.session, 0, 0, notes=(self.notes[-1],))
            if self.session is None:
                raise LoadError(self.path, "no such file") from None
            return None
        identity = (st.st_dev, st.st_ino)
        notes: list[str] = []
        if self._deleted:
            self._deleted = False
            notes.append(self._note("a file appeared again at the path: read whole"))
            self._reset()
        elif self._identity is not None and identity != self._identity:
            notes.append(self._note("the file was replaced (another file at the path): read again whole"))
            self._reset()
        elif st.st_size < self._offset + len(self._pending):
            notes.append(self._note(f"the file was truncated ({st.st_size:,} bytes, {self._offset + len(self._pending):,} read): read again whole"))
            self._reset()
        if self._broken is not None:
            raise self._broken
        if st.st_size > self.max_bytes:
            raise LoadError(self.path, f"the file is {st.st_size / 1e6:,.0f} MB, over the {self.max_bytes / 1e6:,.0f} MB limit "
                                       "(set CTXVIZ_MAX_FILE_MB to raise it)")
        if not self.jsonl:
            return self._poll_whole(st, identity, notes)
        reread = self._identity is None
        if not reread and st.st_size == self._offset + len(self._pending):
            return None
        appended = self._read_from(self._offset + len(self._pending), identity)
        if appended is None:  # replaced between the stat and the open
            notes.append(self._note("the file was replaced while it was read: read again whole"))
            self._reset()
            appended = self._read_from(0, None) or b""
            reread = True
        if not appended and not reread:
            return None
        self._consume(appended)
        return self._update(len(appended), reread, notes)

    def _read_from(self, offset: int, identity: tuple[int, int] | None) -> bytes | None:
        """The bytes from `offset` to the end (None: the opened file is not the one held)."""
        with open_regular(self.path) as handle:
            st = os.fstat(handle.fileno())
            if identity is not None and (st.st_dev, st.st_ino) != identity:
                return None
            self._identity = (st.st_dev, st.st_ino)
            handle.seek(offset)
            return handle.read(max(0, st.st_size - offset))

    def _consume(self, data: bytes) -> None:
        """Hold the complete lines of `self._pending + data`; keep the unfinished rest pending."""
        data = self._pending + data
        if self._offset == 0 and self._lines == 0:
            check_head(self.path, data[: 1 << 20], complete=False)
        end = data.rfind(b"\n") + 1
        complete, self._pending = data[:end], data[end:]
        start = self._offset
        self._offset += len(complete)
        if not complete:
            return
        if start == 0 and complete.startswith(_BOM):
            complete = complete[len(_BOM):]
        text = self._decode(complete, start)
        lines = text.split("\n")[:-1]
        src = self._source()
        for line in lines:
            self._lines += 1
            if not line or line.isspace():
                continue
            if self._cut is not None:  # a line after a line cut mid-record: the file is broken, as load_session says
                self._broken = self._cut
                raise self._cut
            before = len(src.notes)
            try:
                value = src._jsonl_value(line, self._lines)
            except LoadError as exc:
                if not exc.message.startswith(CUT_LINE):
                    self._broken = exc
                    raise
                self._cut = exc
                continue
            self._records.append((self._lines, value))
            self._line_notes += src.notes[before:]

    def _decode(self, data: bytes, start: int) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = self._lines + data.count(b"\n", 0, exc.start) + 1
            raise LoadError(self.path, f"not UTF-8 text (bad byte 0x{data[exc.start]:02x} at byte {start + exc.start})", line) from None

    def _tail(self) -> tuple[list[tuple[int, Any]], list[str]]:
        """The pending last line as `load_session` reads it: a record when it parses already, else a
        note; and the note for a held line cut mid-record when it is still the last."""
        tail = self._pending
        if self._offset == 0 and tail.startswith(_BOM):
            tail = tail[len(_BOM):]
        if not tail or tail.isspace():
            return [], [cut_line_note(self._cut.line)] if self._cut is not None else []
        if self._cut is not None:  # the cut line is no longer the last: load_session refuses the file
            raise self._cut
        try:
            line = tail.decode("utf-8")
        except UnicodeDecodeError:  # a multi-byte character cut in two: the rest is on its way
            return [], [cut_line_note(self._lines + 1)]
        src = self._source()
        number = self._lines + 1
        try:
            return [(number, src._jsonl_value(line, number))], list(src.notes)
        except LoadError:
            # Unfinished, whatever the parser says (a line cut after a minus sign reads as "invalid
            # JSON", which load_session would refuse): it waits for its newline.
            return [], [cut_line_note(number)]

    def _source(self) -> SourceFile:
        return SourceFile(self.path, size=self._offset + len(self._pending))

    def _poll_whole(self, st: os.stat_result, identity: tuple[int, int], notes: list[str]) -> Update | None:
        stamp = (st.st_size, st.st_mtime_ns)
        if self._identity == identity and self._stamp == stamp:
            return None
        reread = self._identity is not None
        self._identity, self._stamp = identity, stamp
        before = len(self.session.messages) if self.session is not None else 0
        session = load_session(self.path, self.input_format, max_bytes=self.max_bytes)
        if reread:
            notes.append(self._note("the file changed: read again whole (a format its agent rewrites whole, not JSON lines)"))
        self._set(session)
        return Update(session, st.st_size, len(session.messages) - before, True, tuple(notes))

    def _update(self, appended: int, reread: bool, notes: list[str]) -> Update | None:
        before = len(self.session.messages) if self.session is not None and not reread else 0
        tail, tail_notes = self._tail()
        if not self._records and not tail:
            return None  # nothing complete yet (an empty file, or its first line still being written): wait
        src = self._source()
        src.__dict__["_jsonl_read"] = self._records  # read by nothing that carries a load on (a full load gets its own)
        src.__dict__["kind"] = "jsonl"
        src.notes.extend(self._line_notes)
        src.notes.extend(tail_notes)
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            session = None
            resume, self._resume = self._resume, None
            if resume is not None and not tail and not reread:
                session = self._load_more(src, resume)
            if session is None:
                self.full_loads += 1
                session = self._load_whole(self._source_again(tail, tail_notes), keep=not tail)
            else:
                self.incremental_loads += 1
        finally:
            if gc_was_enabled:
                gc.enable()
        # As `load_source` does, over the whole session at every poll: an appended line gets it as a
        # line read first does, and the note keeps naming what earlier polls found (the messages kept
        # to carry the load on keep their usage, so the next poll sees it again).
        session = without_negative_usage(session)
        self._set(session)
        return Update(session, appended, len(session.messages) - before, reread, tuple(notes))

    def _source_again(self, tail: list[tuple[int, Any]], tail_notes: list[str]) -> SourceFile:
        """A source of the records held (and the pending tail) as `load_session` would read them."""
        src = self._source()
        records = [(n, dict(r) if type(r) is dict else r) for n, r in (*self._records, *tail)]  # loaders may slim the records they keep
        src.__dict__["_jsonl_read"] = records
        src.__dict__["kind"] = "jsonl"
        src.notes.extend(self._line_notes)
        src.notes.extend(tail_notes)
        return src

    def _load_whole(self, src: SourceFile, keep: bool) -> Session:
        """`load_source` of the records held, keeping what carrying it on needs (`keep`, and a
        loader that can: Claude Code, Codex, Gemini CLI)."""
        loader = get_loader(self.input_format) if self.input_format else detect(src)
        resumable = keep and hasattr(loader, "load_resumable")
        if not resumable:
            return load_source(src, self.input_format)
        try:
            built, state = loader.load_resumable(src)
        except RecursionError:
            raise LoadError(src.path, "the document is nested too deeply") from None
        forced = forced_format_notes(src, loader) if self.input_format else []
        session = _finished(src, built, forced)
        if state is not None:
            self._resume = _Resume(loader, state, len(self._records), built.messages, session.messages, forced,
                                   _tool_names(session.messages), _unnamed(session.messages))
        return session

    @staticmethod
    def _names_hold(resume: _Resume, messages: tuple[Message, ...], first: int) -> bool:
        """Whether naming only the new messages' tool results names every result as a full load
        does: the calls of the messages that changed are still there, none renamed, and no new call
        answers a result read before without its call."""
        names = resume.names
        kept = {(p.id, p.name) for m in messages[first:] for p in m.parts if isinstance(p, ToolCallPart) and p.id}
        for m in resume.built[first:]:
            if any((p.id, p.name) not in kept for p in m.parts if isinstance(p, ToolCallPart) and p.id):
                return False
        return not any(p.id in resume.unnamed or names.get(p.id, p.name) != p.name
                       for m in messages[first:] for p in m.parts if isinstance(p, ToolCallPart) and p.id)

    def _load_more(self, src: SourceFile, resume: _Resume) -> Session | None:
        """The session after the records appended since `resume`, from the loader's kept state;
        None when the loader cannot be sure to give what a full load gives (see each loader's
        `load_more`), or the tool names of messages read before would change."""
        records = [(n, dict(r) if type(r) is dict else r) for n, r in self._records[resume.records:]]
        try:
            result = resume.loader.load_more(src, resume.state, records)
        except Exception:  # noqa: BLE001 - a full load says what is wrong, in its own words
            return None
        if result is None:
            self.why_full = getattr(resume.state, "why_full", "") or "the loader could not carry its load on"
            return None
        built, state = result
        old = resume.built
        first = _first_changed(old, built.messages)
        names = resume.names
        if not self._names_hold(resume, built.messages, first):
            # A call went (a rewind) or changed its name, or a result read before gets its call now:
            # the names of all results again, keeping the messages whose name did not change.
            names = _tool_names(built.messages)
            src.notes.extend(resume.forced)
            named = with_tool_names(dataclasses.replace(built, notes=())).messages
            messages = tuple(resume.final[k] if k < first and resume.final[k] == m and resume.final[k].name == m.name else m
                             for k, m in enumerate(named))
            session = _finished(src, dataclasses.replace(built, messages=messages), [], named=False)
            self._resume = _Resume(resume.loader, state, len(self._records), built.messages, messages, resume.forced, names,
                                   _unnamed(messages))
            return session
        for m in built.messages[first:]:
            for p in m.parts:
                if isinstance(p, ToolCallPart) and p.id:
                    names[p.id] = p.name
        src.notes.extend(resume.forced)
        tail = tuple(message_with(m, name=names[m.tool_call_id]) if m.role == "tool" and not m.name and m.tool_call_id in names else m
                     for m in built.messages[first:])
        messages = resume.final[:first] + tail
        session = _finished(src, dataclasses.replace(built, messages=messages), [], named=False)
        resume.unnamed |= _unnamed(tail)
        self._resume = _Resume(resume.loader, state, len(self._records), built.messages, messages, resume.forced, names, resume.unnamed)
        return session

    def _set(self, session: Session) -> None:
        previous, self.session = self.session, session
        if previous is not None and self.forget_previous:
            self.store.forget(previous)
        for key, counts in list(self._counts.items()):
            grown = extend_counts(counts, session) if previous is not None else count_session(session, counts.scheme)
            self._counts[key] = grown
            self.store.put(grown)

    def _note(self, text: str) -> str:
        self.notes.append(text)
        return text

    # --- counting and planning -----------------------------------------------------------------
    def counts(self, scheme: CountingScheme) -> TokenCounts:
        """The session's counts under `scheme`, kept up to date as the file grows: after the first
        count, each poll measures only the new or changed messages."""
        if self.session is None:
            raise LoadError(self.path, "nothing read yet: poll() first")
        found = self._counts.get(scheme.key)
        if found is None or found.session is not self.session:
            # A shared store may hold them already (the app counted this session for its plan): not counted twice.
            found = self.store.get(self.session, scheme)
            self._counts[scheme.key] = found
        return found

    def plan(self, policy: str, params: Any = None, tokenizer: Tokenizer | str | None = None, **options: Any) -> Plan:
        """`plan_session` of the session so far, with the follower's incremental counts."""
        if self.session is None:
            raise LoadError(self.path, "nothing read yet: poll() first")
        self.counts(get_policy(policy).scheme(tokenizer, self.session.model))
        return plan_session(self.session, policy, params, tokenizer, store=self.store, **options)

