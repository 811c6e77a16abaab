"""Reading an untrusted session file: size and binary checks, decoding, and parsing with line numbers.

Every failure becomes a `LoadError` that prints as `FILE:LINE: what is wrong`. Files are only ever
opened for reading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import yaml

from ..errors import LoadError

#: Larger files are refused with a clear message instead of exhausting memory; override with
#: `CTXVIZ_MAX_FILE_MB` or `max_bytes`.
DEFAULT_MAX_BYTES = int(os.environ.get("CTXVIZ_MAX_FILE_MB", "512")) * 1024 * 1024

JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class SourceFile:
    """A session file, parsed lazily as JSON, JSONL or YAML.

    A `.jsonl` file is streamed line by line from disk, never held whole: a 100 MB log then costs
    little more memory than its parsed records.
    """

    path: str
    given_text: str | None = field(default=None, repr=False)

    @cached_property
    def text(self) -> str:
        if self.given_text is not None:
            return self.given_text
        with open(self.path, "rb") as handle:
            return decode(self.path, handle.read())

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
                self.__dict__["json_document"] = json.loads(self.text)
                return "json"
            except json.JSONDecodeError as exc:
                if exc.msg == "Extra data" and "\n" in self.text.strip():
                    return "jsonl"
                if lower.endswith(JSON_SUFFIXES) or stripped[0] == "[" or "\n" not in self.text.strip():
                    raise self._json_error(exc) from None
                return "jsonl"
        return "yaml"

    def _json_error(self, exc: json.JSONDecodeError, line_offset: int = 0) -> LoadError:
        return self.error(f"invalid JSON: {exc.msg} (column {exc.colno})", exc.lineno + line_offset)

    @cached_property
    def json_document(self) -> Any:
        try:
            return json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise self._json_error(exc) from None

    def _lines(self) -> Iterator[str]:
        if self.given_text is not None or "text" in self.__dict__:
            yield from self.text.split("\n")
            return
        lineno = 0
        try:
            # Plain UTF-8 with universal newlines is Python's fast path (utf-8-sig or newline=""
            # reads a large file about twice as slowly); a byte-order mark is dropped by hand.
            with open(self.path, encoding="utf-8") as handle:
                for lineno, line in enumerate(handle, start=1):  # noqa: B007 (used after the loop on error)
                    yield line[1:] if lineno == 1 and line.startswith("\ufeff") else line
        except UnicodeDecodeError as exc:
            raise self.error(f"not UTF-8 text (bad byte 0x{exc.object[exc.start]:02x})", lineno + 1) from None

    @cached_property
    def jsonl_records(self) -> list[tuple[int, Any]]:
        """(line number, parsed object) for every non-blank line."""
        records: list[tuple[int, Any]] = []
        append, loads = records.append, json.loads
        for lineno, line in enumerate(self._lines(), start=1):
            if not line or line.isspace():
                continue
            try:
                append((lineno, loads(line)))
            except json.JSONDecodeError as exc:
                # A last line cut off mid-record is what a crashed or still-running agent leaves.
                what = "truncated JSON line" if not line.endswith("\n") else "invalid JSON"
                raise self.error(f"{what}: {exc.msg} (column {exc.colno})", lineno) from None
        if not records:
            raise self.error("the file is empty")
        return records

    @cached_property
    def yaml_document(self) -> Any:
        try:
            return yaml.safe_load(self.text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            line = mark.line + 1 if mark is not None else None
            raise self.error(f"invalid YAML: {exc.problem or exc}", line) from None
        except yaml.YAMLError as exc:
            raise self.error(f"invalid YAML: {exc}") from None

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


def read_source(path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES, text: str | None = None) -> SourceFile:
    """Open a file read-only and check it is text of a sane size before anything parses it."""
    name = os.fspath(path)
    if text is not None:
        return SourceFile(name, text)
    try:
        with open(name, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise LoadError(name, f"the file is {size / 1e6:,.0f} MB, over the {max_bytes / 1e6:,.0f} MB limit (set CTXVIZ_MAX_FILE_MB to raise it)")
            head = handle.read(HEAD_BYTES)
            check_head(name, head, complete=size <= HEAD_BYTES)
            if name.lower().endswith(JSONL_SUFFIXES) and size > HEAD_BYTES:
                return SourceFile(name)  # streamed by `jsonl_records`
            data = head + handle.read()
    except IsADirectoryError:
        raise LoadError(name, "is a directory, not a session file") from None
    except FileNotFoundError:
        raise LoadError(name, "no such file") from None
    except PermissionError:
        raise LoadError(name, "permission denied") from None
    except OSError as exc:
        raise LoadError(name, f"cannot read the file ({exc.strerror or exc})") from None
    return SourceFile(name, decode(name, data))


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
