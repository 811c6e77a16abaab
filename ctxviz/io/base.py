"""The loader protocol and the helpers every loader uses to read untrusted records field by field."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

import yaml

from ..engine.session import Category, Message, Part, Session, ToolCallPart, Usage, default_category, message_with
from ..errors import LoadError
from .source import SourceFile

FieldPath = Sequence[str | int]


class Loader(Protocol):
    """One session format. `sniff` looks only at the parsed first record; `load` does the rest."""

    name: str
    title: str

    def sniff(self, src: SourceFile) -> bool: ...

    def load(self, src: SourceFile) -> Any: ...


def path_text(path: FieldPath) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def locate_line(text: str, path: FieldPath) -> int | None:
    """The 1-based line of the node at `path` in a JSON or YAML document, for error messages.

    Only runs when something is wrong. JSON is walked with the json module's C scanner, skipping
    whole sibling values, so a bad field at the end of a 100 MB one-line file is found in about
    the time of one parse; YAML (or JSON the walk cannot follow) is composed into libyaml's node
    tree, which keeps start marks but constructs no Python objects.
    """
    if "\n" not in text.rstrip():
        return 1
    if text.lstrip()[:1] in ("{", "["):
        offset = _json_offset(text, path)
        if offset is not None:
            return text.count("\n", 0, offset) + 1
    from .untrusted import yaml_nesting_may_exceed

    loader = yaml.SafeLoader if yaml_nesting_may_exceed(text) else getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(text, Loader=loader)
    except (yaml.YAMLError, RecursionError):
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if node is None:
            break
        if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            node = node.value[key]
        elif isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
            if match is None:
                break
            node = match
        else:
            break
        line = node.start_mark.line + 1
    return line


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_DECODER = json.JSONDecoder()


def _json_offset(text: str, path: FieldPath) -> int | None:
    """Character offset of the value at `path` in a JSON document (the deepest part of the path
    that exists), or None when the text is not JSON the walk can follow."""
    skip = _JSON_SPACE.match
    decode = _JSON_DECODER.raw_decode
    pos = skip(text, 0).end()
    try:
        for key in path:
            opener = text[pos : pos + 1]
            if opener == "[" and isinstance(key, int):
                pos = skip(text, pos + 1).end()
                for _ in range(key):
                    if text[pos : pos + 1] == "]":
                        return pos
                    pos = skip(text, decode(text, pos)[1]).end()
                    if text[pos : pos + 1] == ",":
                        pos = skip(text, pos + 1).end()
            elif opener == "{" and isinstance(key, str):
                start, pos = pos, skip(text, pos + 1).end()
                while text[pos : pos + 1] == '"':
                    name, pos = decode(text, pos)
                    pos = skip(text, pos).end() + 1  # the colon
                    pos = skip(text, pos).end()
                    if name == key:
                        break
                    pos = skip(text, decode(text, pos)[1]).end()
                    if text[pos : pos + 1] == ",":
                        pos = skip(text, pos + 1).end()
                else:
                    return start  # no such key: the object that lacks it
            else:
                return pos
    except (ValueError, RecursionError):
        return None
    return pos


class Fields:
    """Typed access to one record's fields, raising `FILE:LINE: field: problem` on bad data."""

    def __init__(self, src: SourceFile, record: Any, path: FieldPath = (), line: int | None = None, *, step: bool = False) -> None:
        self.src = src
        self.path = path if type(path) is tuple else tuple(path)
        self.line = line
        if isinstance(record, list) and step:  # a list is only a step on the way to an element: `child(key, lst).child(i, x)`
            record = {}
        elif not isinstance(record, dict):
            raise self.error(f"expected an object, got {type_name(record)}")
        self.record: dict[str, Any] = record

    def error(self, message: str, key: str | int | None = None) -> LoadError:
        path = self.path + ((key,) if key is not None else ())
        line = self.line
        if line is None and self.src.kind != "jsonl":
            line = locate_line(self.src.text, path)
        return LoadError(self.src.path, message, line, path_text(path))

    def child(self, key: str | int, value: Any) -> Fields:
        return Fields(self.src, value, self.path + (key,), self.line, step=isinstance(value, list))

    def get(self, key: str, default: Any = None) -> Any:
        return self.record.get(key, default)

    def has(self, key: str) -> bool:
        return key in self.record

    def str(self, key: str, default: str = "", required: bool = False) -> str:
        value = self.record.get(key)
        if type(value) is str:  # the common case first (loaders call this millions of times)
            return value
        if value is None:
            if required:
                raise self.error("is required", key)
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(f"expected a string, got {type_name(value)}", key)
        return str(value)

    def int(self, key: str, default: int = 0) -> int:
        value = self.record.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise self.error(f"expected an integer, got {type_name(value)}", key)
        return value

    def bool(self, key: str, default: bool = False) -> bool:
        value = self.record.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(f"expected true or false, got {type_name(value)}", key)
        return value

    def list(self, key: str, required: bool = False) -> list[Any]:
        value = self.record.get(key)
        if value is None:
            if required:
                raise self.error("is required", key)
            return []
        if not isinstance(value, list):
            raise self.error(f"expected a list, got {type_name(value)}", key)
        return value

    def refuse_unknown(self, known: Sequence[str], what: str = "key") -> None:
        """A key the record does not take is a typo, not a setting to skip in silence (a preset's
        `tokenzer:` planned with the policy's own estimator): the error names it, with the nearest
        known key when one is close."""
        for key in self.record:
            if key not in known:
                import difflib  # only when a file is wrong

                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.error(f"unknown {what}{hint} (known: {', '.join(known)})", str(key))

    def dict(self, key: str) -> dict[str, Any]:
        value = self.record.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(f"expected an object, got {type_name(value)}", key)
        return value

    def role(self, key: str = "role", aliases: dict[str, str] | None = None, allowed: Sequence[str] = ("system", "user", "assistant", "tool")) -> str:
        role = self.get(key)
        if not isinstance(role, str):
            raise self.error("is required" if role is None else f"expected a string, got {type_name(role)}", key)
        role = (aliases or {}).get(role, role)
        if role not in allowed:
            raise self.error(f"unknown role {role!r} (expected one of {', '.join(allowed)})", key)
        return role

    def category(self, key: str, role: str) -> Category:
        value = self.record.get(key)
        if value is None:
            return default_category(role)
        if not isinstance(value, str):
            raise self.error(f"expected a category name, got {type_name(value)}", key)
        try:
            return Category(value.lower())
        except ValueError:
            names = ", ".join(c.value for c in Category)
            raise self.error(f"unknown category {value!r} (expected one of {names})", key) from None


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(type(value), type(value).__name__)


#: The token counts a usage object may report (OpenAI and Anthropic spellings).
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def parse_usage(f: Fields, key: str = "usage") -> Usage | None:
    """Provider usage in OpenAI (`prompt_tokens`) or Anthropic (`input_tokens`) spelling."""
    if not f.has(key) or f.get(key) is None:
        return None
    u = f.child(key, f.get(key))
    if not any(u.get(k) is not None for k in USAGE_KEYS):
        return None  # `usage: {}` reports nothing, not a call of 0 tokens
    cached = u.dict("prompt_tokens_details").get("cached_tokens", 0) if u.has("prompt_tokens_details") else 0
    if u.has("prompt_tokens") or u.has("completion_tokens"):
        prompt = u.int("prompt_tokens")
        cached = cached if isinstance(cached, int) else 0
        return Usage(input_tokens=prompt - cached, output_tokens=u.int("completion_tokens"), cache_read_input_tokens=cached)
    return Usage(
        input_tokens=u.int("input_tokens"),
        output_tokens=u.int("output_tokens"),
        cache_read_input_tokens=u.int("cache_read_input_tokens"),
        cache_creation_input_tokens=u.int("cache_creation_input_tokens"),
    )


def make_message(
    index: int,
    role: str,
    parts: Sequence[Part],
    *,
    id: str = "",
    name: str = "",
    tool_call_id: str = "",
    timestamp: str = "",
    category: Category | None = None,
    usage: Usage | None = None,
    raw: Any = None,
) -> Message:
    """A Message with ctxviz's defaults: id `m{index}`, category from the role."""
    return new_message(index, role, tuple(parts), id, name, tool_call_id, timestamp, category or default_category(role), usage, raw)


def new_message(index: int, role: str, parts: tuple[Part, ...], id: str, name: str, tool_call_id: str, timestamp: str,
                category: Category, usage: Usage | None, raw: Any) -> Message:
    """`make_message` with every field given, in the constructor's order: built field by field (what
    the frozen dataclass' `__init__` does, without its keyword handling: loaders make one per line of
    a large log, and the Claude Code loader calls this directly); identical and equal."""
    message = _new(Message)
    _set(message, "id", id or f"m{index}")
    _set(message, "index", index)
    _set(message, "role", role)
    _set(message, "parts", parts)
    _set(message, "name", name)
    _set(message, "tool_call_id", tool_call_id)
    _set(message, "timestamp", timestamp)
    _set(message, "category", category)
    _set(message, "usage", usage)
    _set(message, "_raw", raw)  # where `Message.raw` keeps it (engine/session.py), set without its descriptor's call
    return message


_new = object.__new__
_set = object.__setattr__


def tool_names_settled(session: Session) -> Session:
    """The session with each tool result named as `loaders.with_tool_names` names it (by the last
    call of its id among the messages), for a loader that names its results as it reads them
    (`names_tool_results`) by the calls read before them: that is the name unless a later call
    repeats the id, so only those few are made again."""
    final = {p.id: p.name for m in session.messages for p in m.parts if isinstance(p, ToolCallPart) and p.id}
    wrong = [k for k, m in enumerate(session.messages) if m.role == "tool" and m.name != final.get(m.tool_call_id, "")]
    if not wrong:
        return session
    messages = list(session.messages)
    for k in wrong:
        messages[k] = message_with(messages[k], name=final.get(messages[k].tool_call_id, ""))
    return dataclasses.replace(session, messages=tuple(messages))
