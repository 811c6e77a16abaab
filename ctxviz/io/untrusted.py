"""Defences for parsed documents from untrusted files: what a valid parse can still hide.

A JSON or YAML parser accepts several things that break everything downstream: lone UTF-16
surrogates (`"\\ud800"` is valid JSON but cannot be written as UTF-8), YAML aliases that refer to
themselves or expand exponentially ("billion laughs": 700 bytes that serialise to gigabytes),
integers longer than Python will print, and nesting deep enough to overflow the C stack of
libyaml's composer. Each check here is cheap when the danger is absent, so the common file pays
almost nothing.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

#: `\uD800`-`\uDFFF` escapes (JSON, and YAML's double-quoted `\u`/`\U0000`), the only way a
#: surrogate code point can reach a decoded str: UTF-8 itself cannot encode one.
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
#: Python refuses to convert longer integer literals (sys.get_int_max_str_digits()).
_LONG_INTEGER = re.compile(r"[0-9]{4301,}")
#: libyaml composes recursively in C: deeper nesting than this goes to the pure-Python parser,
#: which raises RecursionError instead of crashing the process (measured: libyaml survives
#: 10,000 levels and crashes at 30,000).
MAX_C_YAML_DEPTH = 1000
#: A YAML document may expand through aliases to at most this many times its own size.
ALIAS_EXPANSION_FACTOR = 10
ALIAS_EXPANSION_SLACK = 1_000_000


def has_surrogate_escape(text: str) -> bool:
    return "\\" in text and _SURROGATE_ESCAPE.search(text) is not None


#: In JSON text only `\uXXXX` escapes exist: a pattern with a literal start, which `re` finds faster.
_JSON_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def has_json_surrogate_escape(line: str) -> bool:
    """`has_surrogate_escape` for one line of JSON (what a JSONL reader checks on every line)."""
    return "\\" in line and _JSON_SURROGATE_ESCAPE.search(line) is not None


def fix_surrogates(value: Any) -> tuple[Any, int]:
    """Join escaped surrogate pairs into their character and replace lone surrogates with U+FFFD,
    in every string, key included; returns (value, how many code points were replaced)."""
    replaced = 0

    def fix(s: str) -> str:
        nonlocal replaced
        if not _SURROGATE.search(s):
            return s
        fixed = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        replaced += fixed.count("\ufffd") - s.count("\ufffd")
        return fixed

    if isinstance(value, str):
        return fix(value), replaced
    stack = [value]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            items = list(node.items())
            node.clear()
            for k, v in items:
                node[fix(k) if isinstance(k, str) else k] = fix(v) if isinstance(v, str) else v
                if isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, str):
                    node[i] = fix(v)
                elif isinstance(v, (dict, list)):
                    stack.append(v)
    return value, replaced


TOO_LONG_NUMBER = "a number has more than 4,300 digits (Python refuses to read it)"


def long_integer_line(text: str) -> int | None:
    """The line of the first integer literal Python refuses to convert, if any."""
    match = _LONG_INTEGER.search(text)
    return text.count("\n", 0, match.start()) + 1 if match else None


def yaml_nesting_may_exceed(text: str, limit: int = MAX_C_YAML_DEPTH) -> bool:
    """True when the document might nest deeper than `limit` (over-estimates, never under).

    Flow collections nest by brackets (counted ignoring quotes, so brackets in text can only
    raise the estimate); block collections by indentation or compact `- - -` runs, bounded by the
    length of a line's leading run of blanks and indicators.
    """
    if re.search(rf"(?m)^[ \t?:-]{{{limit},}}", text):
        return True
    opening = text.count("[") + text.count("{")
    if opening <= limit:
        return False
    depth = deepest = 0
    for match in re.finditer(r"[\[\]{}]", text):
        depth += 1 if match.group() in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return True
    return False


def yaml_depth(text: str, limit: int = MAX_C_YAML_DEPTH) -> int:
    """How deep the document's collections nest, read from libyaml's events (its parser keeps its
    own stack; only composing recurses), stopping as soon as the depth passes `limit`. A document
    libyaml cannot parse reports 0: loading it will say what is wrong."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = deepest = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > deepest:
                    deepest = depth
                    if deepest > limit:
                        break
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except (yaml.YAMLError, ValueError, RecursionError):
        return 0
    return deepest


def yaml_alias_problem(document: Any, text_size: int) -> str:
    """Why a parsed YAML document cannot be used, or "": it refers to itself through an alias,
    or its aliases expand it to more than ALIAS_EXPANSION_FACTOR times the file's size.

    Sizes are computed once per distinct container (a DAG walk), so a billion-laughs document is
    measured without being expanded.
    """
    limit = ALIAS_EXPANSION_FACTOR * text_size + ALIAS_EXPANSION_SLACK
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            total = 1
            values = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in values:
                total += _leaf_size(k) + (size[id(v)] if isinstance(v, (dict, list)) else _leaf_size(v))
            if total > limit:
                return f"YAML aliases expand the document to over {limit:,} values (a 'billion laughs' file?)"
            size[key] = total
            continue
        if key in size:
            continue
        if key in on_path:
            return "a YAML alias refers to the node that contains it (a recursive document)"
        on_path.add(key)
        stack.append((node, True))
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                if id(child) in on_path:
                    return "a YAML alias refers to the node that contains it (a recursive document)"
                if id(child) not in size:
                    stack.append((child, False))
    return ""


def _leaf_size(value: Any) -> int:
    return len(value) + 1 if isinstance(value, str) else 1


def has_aliases(text: str) -> bool:
    """Aliases need an anchor (`&name`) and a reference (`*name`); most files have neither."""
    return "&" in text and "*" in text
