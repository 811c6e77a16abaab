"""Reading an untrusted session file: size and binary checks, decoding, and parsing with line numbers.

Every failure becomes a `LoadError` that prints as `FILE:LINE: what is wrong`. Files are only ever
opened for reading, and only regular files are read: a FIFO, a device or a socket would block or
never end, so they are refused before anything waits on them. A file is read up to the size it had
when it was opened, so one that grows while it is read still ends.
"""

from __future__ import annotations

import json
import json.scanner
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO, Any

import yaml

from ..engine.wording import counted
from ..errors import LoadError
from .untrusted import (
    MAX_C_YAML_DEPTH,
    TOO_LONG_NUMBER,
    fix_surrogates,
    has_aliases,
    has_json_surrogate_escape,
    has_surrogate_escape,
    long_integer_line,
    yaml_alias_problem,
    yaml_depth,
    yaml_nesting_may_exceed,
)

#: Larger files are refused with a clear message instead of exhausting memory; override with
#: `CTXVIZ_MAX_FILE_MB` or `max_bytes`.
DEFAULT_MAX_BYTES = int(os.environ.get("CTXVIZ_MAX_FILE_MB", "512")) * 1024 * 1024

#: One JSON document each: an SWE-agent trajectory (`.traj`) too, whose error, cut short, is at its
#: real line and column, not "truncated JSON line" at line 1 as if it were a JSONL log.
JSON_SUFFIXES = (".json", ".traj")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
YAML_SUFFIXES = (".yaml", ".yml")
#: What `-` reads, and how it is named in messages.
STDIN = "-"
STDIN_NAME = "<stdin>"

#: libyaml's parser (C, about 20x faster) when PyYAML was built with it.
_FAST_YAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_NEWLINE = re.compile(r"\r\n?|\n")
#: The json module's own scanner (C when available), with `json.loads`' settings: `scan(line, 0)`
#: is `json.loads(line)` for a line that starts with its value, without the three Python calls and
#: two whitespace matches `json.loads` wraps around it (a third of its time on a log's short lines).
_SCAN_JSON = json.scanner.make_scanner(json.JSONDecoder())
#: How the error for a JSONL line that ends mid-record begins.
CUT_LINE = "truncated JSON line"


def cut_line_note(line: int | None) -> str:
    """The note for a last JSONL line that ends mid-record (a live agent's log, read mid-write)."""
    return f"skipped the last line ({line}): it ends mid-record, as a session still being written (or one that crashed) leaves it"


def tally_text(template: str, count: int) -> str:
    """A tally's note for its count: `{n}` the count, each "(s)" the plural's "s" or nothing and
    each `{singular|plural}` the one that agrees, so the
    note says "1 line" and "20 lines", never "line(s)" (the count is known only when the notes are
    made, after the template was written). `replace`, not str.format: a template may quote file text
    with braces in it."""
    one = count == 1
    text = template.replace("{n}", f"{count:,}").replace("(s)", "" if one else "s")
    return _AGREE.sub(lambda m: m[1] if one else m[2], text)


#: A verb or phrase that agrees with the count, `{singular|plural}`: "1 line that repeats", "2 lines that repeat".
_AGREE = re.compile(r"\{([^{}|]*)\|([^{}|]*)\}")


@dataclass
class SourceFile:
    """A session file, parsed lazily as JSON, JSONL or YAML.

    A `.jsonl` file is streamed line by line from disk, never held whole: a 100 MB log then costs
    little more memory than its parsed records. `size` is how much of the file is read (its size
    when it was opened).
    """

    path: str
    given_text: str | None = field(default=None, repr=False)
    size: int = 0
    #: Things a reader should know about what was changed while reading (one line each).
    notes: list[str] = field(default_factory=list, repr=False)
    #: Which conversation to load (1-based) from a file that holds several (`--conversation N`).
    conversation: int | None = field(default=None, repr=False)
    #: How many conversations the loader found (0: it does not hold several).
    conversations: int = field(default=0, repr=False)
    #: Counted notes: "skipped {n} `progress` line(s)" -> how many times it happened.
    tallies: dict[str, int] = field(default_factory=dict, repr=False)
    #: The last JSONL line `jsonl_records` skipped because it ends mid-record (None: none was).
    cut_line: int | None = field(default=None, repr=False)

    def tally(self, template: str, n: int = 1) -> None:
        """Count one kind of skip or guess; it becomes one note with the count (`{n}` in `template`)."""
        self.tallies[template] = self.tallies.get(template, 0) + n

    def all_notes(self) -> list[str]:
        return [*self.notes, *(tally_text(template, count) for template, count in self.tallies.items())]

    @cached_property
    def text(self) -> str:
        if self.given_text is not None:
            return self.given_text
        with open_regular(self.path) as handle:
            return decode(self.path, handle.read(self.size))

    @property
    def display(self) -> str:
        return self.path

    def error(self, message: str, line: int | None = None, field: str = "") -> LoadError:
        return LoadError(self.path, message, line, field)

    @cached_property
    def kind(self) -> str:
        """"json", "jsonl" or "yaml", from the suffix and, failing that, the content."""
        lower = self.path.lower()
        if lower.endswith(YAML_SUFFIXES):
            return "yaml"
        if lower.endswith(JSONL_SUFFIXES):
            return "jsonl"
        stripped = self.text.lstrip()
        if not stripped:
            raise self.error("the file is empty")
        if stripped[0] in "{[":
            try:
                self.__dict__["json_document"] = self._parse_json(self.text)
                return "json"
            except json.JSONDecodeError as exc:
                several_lines = len(_NEWLINE.split(self.text.strip(), maxsplit=1)) > 1
                if exc.msg == "Extra data" and several_lines:
                    return "jsonl"
                if lower.endswith(JSON_SUFFIXES) or stripped[0] == "[" or not several_lines:
                    raise self._json_error(exc) from None
                return "jsonl"
        return "yaml"

    def _json_error(self, exc: json.JSONDecodeError, line_offset: int = 0) -> LoadError:
        return self.error(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno + line_offset)

    def _parse_json(self, text: str, line: int | None = None) -> Any:
        """json.loads, with Python's own limits turned into one-line errors and surrogates fixed.

        JSONDecodeError passes through (the caller knows whether the file may be JSON lines).
        """
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise
        except RecursionError:
            raise self.error("the document is nested too deeply", line) from None
        except ValueError as exc:  # an integer literal over Python's 4,300-digit limit
            where = long_integer_line(text)
            if "digits" not in str(exc):
                raise
            raise self.error(TOO_LONG_NUMBER, (line or 1) + (where or 1) - 1) from None
        if has_surrogate_escape(text):
            value = self._fix_surrogates(value)
        return value

    def _fix_surrogates(self, value: Any) -> Any:
        value, replaced = fix_surrogates(value)
        if replaced:
            self.notes.append(f"replaced {counted(replaced, 'invalid character')} (unpaired UTF-16 surrogate escapes) with U+FFFD")
        return value

    @cached_property
    def json_document(self) -> Any:
        try:
            return self._parse_json(self.text)
        except json.JSONDecodeError as exc:
            raise self._json_error(exc) from None

    def _lines(self) -> Iterator[str]:
        """Every line of the file, whatever its line ends (LF, CRLF or CR alone)."""
        if self.given_text is not None or "text" in self.__dict__:
            yield from _NEWLINE.split(self.text)
            return
        lineno = 0
        try:
            # Plain UTF-8 with universal newlines (LF, CRLF and CR alone) is Python's fast path
            # (utf-8-sig or newline="" read a large file about twice as slowly); a byte-order mark
            # is dropped by hand. The read stops after as many characters as the file had bytes
            # when it was opened, so a file that keeps growing still ends.
            with open_regular(self.path, text=True) as handle:
                remaining = self.size
                for lineno, line in enumerate(handle, start=1):  # noqa: B007 (used after the loop on error)
                    yield line[1:] if lineno == 1 and line.startswith("\ufeff") else line
                    remaining -= len(line)
                    if remaining <= 0:
                        break
        except UnicodeDecodeError as exc:
            raise self.error(f"not UTF-8 text (bad byte 0x{exc.object[exc.start]:02x})", lineno + 1) from None

    @property
    def jsonl_records(self) -> list[tuple[int, Any]]:
        """(line number, parsed object) for every non-blank line; a file without one is refused
        (every time it is asked, from one read: several loaders sniff the same file)."""
        if not self._jsonl_read:
            raise self.error("the file is empty")
        return self._jsonl_read

    @cached_property
    def _jsonl_read(self) -> list[tuple[int, Any]]:
        records: list[tuple[int, Any]] = []
        append, loads, scan = records.append, json.loads, _SCAN_JSON
        #: A line that ends mid-record, held until we know whether it is the last one.
        cut: LoadError | None = None
        if self.given_text is not None or "text" in self.__dict__:
            for lineno, line in enumerate(self._lines(), start=1):
                if line and not line.isspace():
                    if cut is not None:
                        raise cut  # not the last line: a broken file, not one being written
                    try:
                        append((lineno, self._jsonl_value(line, lineno)))
                    except LoadError as exc:
                        if not exc.message.startswith(CUT_LINE):
                            raise
                        cut = exc
        else:
            # The hot loop of a 100 MB load, inlined (_lines' streamed branch, one line at a time):
            # json.loads first, and a line is only checked for being blank when it does not parse.
            lineno = 0
            try:
                with open_regular(self.path, text=True) as handle:
                    remaining = self.size
                    for line in handle:
                        lineno += 1
                        remaining -= len(line)
                        if lineno == 1 and line.startswith("\ufeff"):
                            line = line[1:]
                        if line.isspace():  # before json.loads: a failed parse costs 20x a blank check
                            if remaining <= 0:
                                break
                            continue
                        try:
                            value, end = scan(line, 0)
                            if end != len(line) and line[end:] != "\n" and line[end:].strip(" \t\n\r"):
                                value = loads(line)  # something after the value: json.loads says what
                        except Exception:  # a blank line, or the one-line error _jsonl_value raises
                            if line.isspace() or not line:
                                if remaining <= 0:
                                    break
                                continue
                            if cut is not None:
                                raise cut from None
                            try:
                                value = self._jsonl_value(line, lineno)
                            except LoadError as exc:
                                if not exc.message.startswith(CUT_LINE):
                                    raise
                                cut = exc
                                if remaining <= 0:
                                    break
                                continue
                        else:
                            if cut is not None:
                                raise cut
                            # A backslash first (memchr): most lines of a real log have none. Then the pattern
                            # itself: a search for "\\u" first would cost more than the pattern on a line full
                            # of escaped quotes and newlines (a tool's output), where it finds "\\u" rarely.
                            if "\\" in line and has_json_surrogate_escape(line):
                                value = self._fix_surrogates(value)
                        append((lineno, value))
                        if remaining <= 0:
                            break
            except UnicodeDecodeError as exc:
                raise self.error(f"not UTF-8 text (bad byte 0x{exc.object[exc.start]:02x})", lineno + 1) from None
        if cut is not None:
            if not records:
                raise cut
            # What a live or crashed agent leaves: every JSONL log format is read up to it.
            self.cut_line = cut.line
            self.notes.append(cut_line_note(cut.line))
        return records

    def release(self) -> None:
        """Free the parsed JSONL records now, first line first (a later `jsonl_records` reads the
        file again). What a finished load does: dropped whole, the list frees them last line first,
        which took a quarter longer (a 100 MB Claude Code log: 54 ms against 43 ms), the blocks going
        back to the allocator against the order they were taken."""
        records = self.__dict__.pop("_jsonl_read", None)
        if records and sys.getrefcount(records) == 2:  # only a list no one else holds (a follower lends its own, io/follow.py)
            for i in range(len(records)):
                records[i] = None

    def _jsonl_value(self, line: str, lineno: int) -> Any:
        """One JSONL line's value, or the one-line error it deserves."""
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            # A last line cut off mid-record is what a crashed or still-running agent leaves.
            ran_out = exc.msg.startswith("Unterminated string") or (exc.msg != "Extra data" and exc.pos >= len(line.rstrip()))
            what = CUT_LINE if ran_out else "invalid JSON"
            raise self.error(f"{what}: {exc.msg} (column {exc.colno})", lineno) from None
        except (ValueError, RecursionError):
            value = self._parse_json(line, lineno)  # raises the one-line error
        if "\\u" in line and has_surrogate_escape(line):
            value = self._fix_surrogates(value)
        return value

    @cached_property
    def yaml_document(self) -> Any:
        text = self.text
        # libyaml composes in C recursion: too deep a document would crash the process, and the
        # pure-Python composer would spend seconds reaching its recursion limit. A document the quick
        # estimate flags has its depth read from libyaml's events (which do not recurse).
        loader = _FAST_YAML
        if yaml_nesting_may_exceed(text):
            if yaml_depth(text) > MAX_C_YAML_DEPTH:
                raise self.error(f"the document is nested too deeply (over {MAX_C_YAML_DEPTH:,} levels)")
        try:
            try:
                document = yaml.load(text, Loader=loader)  # noqa: S506 (a safe loader)
            except yaml.MarkedYAMLError as exc:
                # libyaml refuses JSON-style surrogate escapes ("\ud83d\ude00") that PyYAML reads.
                if loader is yaml.SafeLoader or "escape" not in str(exc.problem):
                    raise
                document = yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506
        except yaml.MarkedYAMLError as exc:
            raise self.error(*_yaml_problem(exc, text)) from None
        except yaml.reader.ReaderError as exc:  # a control character or bad encoding
            line = text.count("\n", 0, exc.position) + 1
            char = exc.character if isinstance(exc.character, int) else ord(exc.character or "\0")
            column = exc.position - text.rfind("\n", 0, exc.position)
            raise self.error(f"invalid YAML: character U+{char:04X} at column {column}: {exc.reason}", line) from None
        except yaml.YAMLError as exc:
            raise self.error(f"invalid YAML: {exc}") from None
        except RecursionError:
            raise self.error("the document is nested too deeply") from None
        except (ValueError, OverflowError) as exc:  # an integer over Python's 4,300-digit limit, an escape out of range
            if "digits" in str(exc):
                raise self.error(TOO_LONG_NUMBER, long_integer_line(text)) from None
            raise self.error(f"invalid YAML: {' '.join(str(exc).split())}") from None
        if has_aliases(text) and isinstance(document, (dict, list)):
            problem = yaml_alias_problem(document, len(text))
            if problem:
                raise self.error(problem)
        if has_surrogate_escape(text):
            document = self._fix_surrogates(document)
        return document

    @property
    def document(self) -> Any:
        """The top-level document for JSON or YAML files (JSONL has records instead)."""
        return self.yaml_document if self.kind == "yaml" else self.json_document

    def first_record(self) -> Any:
        """What auto-detection looks at: the top-level document, or the first JSONL record."""
        if self.kind == "jsonl":
            return self.jsonl_records[0][1]
        return self.document

    def records(self) -> Iterator[tuple[int, Any]]:
        return iter(self.jsonl_records)


_FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _yaml_problem(exc: yaml.MarkedYAMLError, text: str) -> tuple[str, int | None]:
    """The message and line of a YAML error, with its column; a tab where YAML wants indentation is
    named as such ("found character that cannot start any token" said neither the tab nor where)."""
    mark = exc.problem_mark
    if mark is None:
        return f"invalid YAML: {exc.problem or exc}", None
    column = mark.column + 1
    at = mark.index if mark.index is not None and mark.index < len(text) else -1
    if at >= 0 and text[at] == "\t":
        return f"invalid YAML: a tab character (YAML indents with spaces only), column {column:,}", mark.line + 1
    return f"invalid YAML: {exc.problem or exc} (column {column:,})", mark.line + 1


def open_regular(name: str, what: str = "session file", text: bool = False) -> IO[Any]:
    """Open `name` for reading if it is a regular file; refuse anything that could block or never end.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer, and the check
    is made on the opened descriptor, so the file cannot be swapped in between.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        raise LoadError(name, "no such file") from None
    except PermissionError:
        raise LoadError(name, "permission denied") from None
    except OSError as exc:
        raise LoadError(name, f"cannot open the file ({exc.strerror or exc})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((text for test, text in _FILE_KINDS if test(mode)), "not a regular file")
        raise LoadError(name, f"is {kind}, not a {what}")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "r", encoding="utf-8") if text else os.fdopen(fd, "rb")


def read_source(path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES, text: str | None = None, what: str = "session file") -> SourceFile:
    """Open a file read-only and check it is text of a sane size before anything parses it.

    `-` reads standard input, under the same size limit.
    """
    name = os.fspath(path)
    if text is not None:
        return SourceFile(name, text, size=len(text))
    if name == STDIN:
        return _read_stdin(max_bytes)
    try:
        with open_regular(name, what) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise LoadError(name, _too_large(size, max_bytes))
            head = handle.read(min(HEAD_BYTES, size))
            check_head(name, head, complete=size <= HEAD_BYTES)
            if name.lower().endswith(JSONL_SUFFIXES) and size > HEAD_BYTES:
                return SourceFile(name, size=size)  # streamed by `jsonl_records`
            data = head + handle.read(size - len(head))
    except OSError as exc:
        raise LoadError(name, f"cannot read the file ({exc.strerror or exc})") from None
    return SourceFile(name, decode(name, data), size=len(data))


def _read_stdin(max_bytes: int) -> SourceFile:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None or sys.stdin.closed:
        raise LoadError(STDIN_NAME, "standard input is closed")
    try:
        data = stream.read(max_bytes + 1)
    except OSError as exc:
        raise LoadError(STDIN_NAME, f"cannot read standard input ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise LoadError(STDIN_NAME, _too_large(None, max_bytes))
    return SourceFile(STDIN_NAME, decode(STDIN_NAME, data), size=len(data))


def _too_large(size: int | None, max_bytes: int) -> str:
    what = f"the file is {size / 1e6:,.0f} MB, over" if size is not None else "standard input is over"
    return f"{what} the {max_bytes / 1e6:,.0f} MB limit (set CTXVIZ_MAX_FILE_MB to raise it)"


HEAD_BYTES = 1 << 20


def check_head(name: str, head: bytes, complete: bool) -> None:
    """Refuse empty and binary files from their first megabyte, before anything parses them."""
    if complete and (not head or head.isspace()):
        raise LoadError(name, "the file is empty")
    nul = head.find(b"\x00")
    if nul >= 0:
        raise LoadError(name, f"not a text file (binary data at byte {nul})", head.count(b"\n", 0, nul) + 1)


def decode(name: str, data: bytes) -> str:
    check_head(name, data[:HEAD_BYTES], complete=len(data) <= HEAD_BYTES)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LoadError(name, f"not UTF-8 text (bad byte 0x{data[exc.start]:02x} at byte {exc.start})", line) from None
