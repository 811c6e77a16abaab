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
    """A session file's text, parsed lazily as JSON, JSONL or YAML."""

    path: str
    text: str
    _kind: str | None = field(default=None, repr=False)

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

    @cached_property
    def jsonl_records(self) -> list[tuple[int, Any]]:
        """(line number, parsed object) for every non-blank line."""
        records: list[tuple[int, Any]] = []
        loads = json.loads
        lines = self.text.split("\n")
        last = len(lines) if lines[-1].strip() else len(lines) - 1
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append((lineno, loads(line)))
            except json.JSONDecodeError as exc:
                # A last line cut off mid-record is what a crashed or still-running agent leaves.
                truncated = lineno == last and not self.text.endswith("\n")
                what = "truncated JSON line" if truncated else "invalid JSON"
                raise self.error(f"{what}: {exc.msg} (column {exc.colno})", lineno) from None
        if not records:
            raise self.error("the file has no JSON lines")
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
            data = handle.read()
    except IsADirectoryError:
        raise LoadError(name, "is a directory, not a session file") from None
    except FileNotFoundError:
        raise LoadError(name, "no such file") from None
    except PermissionError:
        raise LoadError(name, "permission denied") from None
    except OSError as exc:
        raise LoadError(name, f"cannot read the file ({exc.strerror or exc})") from None
    return SourceFile(name, decode(name, data))


def decode(name: str, data: bytes) -> str:
    if not data or data.isspace():  # isspace stops at the first non-blank byte; strip() would copy
        raise LoadError(name, "the file is empty")
    nul = data.find(b"\x00", 0, 1 << 20)
    if nul >= 0:
        raise LoadError(name, f"not a text file (binary data at byte {nul})", data.count(b"\n", 0, nul) + 1)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LoadError(name, f"not UTF-8 text (bad byte 0x{data[exc.start]:02x} at byte {exc.start})", line) from None
