"""The offline summariser's per-message reading as it was before `summarizers.features_of` read
runs of messages (ctxviz 2026-11-27, commit 9d778f3): `_extract`, `_clip`, `_lines_with` and
`_first_word`, copied verbatim (renamed `*_reference`), the reference the fast reader is held to
byte for byte (tests/test_summarizer_batch.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import islice

from ctxviz.engine.session import (
    Message,
    OpaquePart,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    part_text,
)

Features = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str, str]
PATH_RE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:py|pyi|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|cfg|ini|sh|sql|html|css|go|rs|java|rb|lock|conf|env))\b")
URL_RE = re.compile(r"https?://[^\s\"'<>)]+")
ERROR_RE = re.compile(r"^.*\b(?:error|exception|traceback|failed|failure)\b.*$", re.I | re.M)
DECISION_RE = re.compile(r"^.*\b(?:decided|decision|we'll use|will use|chose|going with|let's use|plan is)\b.*$", re.I | re.M)
# The words the two line patterns above look for, found on their own: a line pattern scans every
# line from its start and backtracks over it, five to ten times slower on long tool outputs than
# finding the word and taking the line around it (`_lines_with`).
ERROR_WORDS = ("error", "exception", "traceback", "failed", "failure")
ERROR_WORD_RE = re.compile(rf"\b(?:{'|'.join(ERROR_WORDS)})\b", re.I)
DECISION_WORDS = ("decided", "decision", "we'll use", "will use", "chose", "going with", "let's use", "plan is")
DECISION_WORD_RE = re.compile(rf"\b(?:{'|'.join(DECISION_WORDS)})\b", re.I)
#: What every PATH_RE match ends with: arguments without it are not searched.
PATH_END_RE = re.compile(r"\.(?:py|pyi|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|cfg|ini|sh|sql|html|css|go|rs|java|rb|lock|conf|env)\b")
ACK_RE = re.compile(r"\s*(\{\s*\"ok\"\s*:\s*true\s*\}|ok|done|success)\s*", re.I)
WRITE_TOOLS = ("write", "edit", "patch", "create", "apply", "replace", "update")
_FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"


def _clip_reference(text: str, width: int = 160) -> str:
    """The text with its whitespace runs made single spaces, cut to `width` characters with "…".

    Only a head of a long text is flattened: its first k characters flattened are the start of the
    whole flattened (a word cut at k is the start of that word), so once they are longer than
    `width` they decide the cut (a tool output of 100 KB is not split whole for 120 characters).
    The first head is half again the width: most texts' whitespace is single spaces, so that head
    nearly always decides the cut, and it splits less than half of what four widths did."""
    k = width + width // 2 + 1
    while k < len(text):
        head = " ".join(text[:k].split())
        if len(head) > width:
            return head[: width - 1] + "…"
        k *= 4
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _lines_with_reference(word: re.Pattern[str], words: tuple[str, ...], text: str, limit: int = 0) -> list[str]:
    """The lines of `text` (split at "\\n") holding a match of `word`, in order, each once, at most
    `limit` of them (0: all): what `^.*<word>.*$` (re.M) finds, found by the word.

    `words` are the lower-case words `word` matches case-insensitively between word boundaries.
    An ASCII text (a tool's output nearly always) is searched for them in its lower case with
    `str.find`, several times faster than the pattern: only outside ASCII does re.I match more
    than the case (the dotless i and the Kelvin sign match "i" and "k"), and only there does \\w
    hold more than letters, digits and "_"."""
    lines: list[str] = []
    if not text.isascii():
        if not any(c in text for c in _FOLDS_TO_ASCII):
            # Without them a match is one of `words` in the text's lower case (`str.lower` maps no
            # other character to an ASCII letter), so a text that holds none has no match: the
            # case-insensitive pattern, several times slower, runs only where one of them is.
            lower = text.lower()
            if not any(w in lower for w in words):
                return lines
        end = -1
        for found in word.finditer(text):
            at = found.start()
            if at < end:  # on the line already taken
                continue
            end = text.find("\n", at)
            if end < 0:
                end = len(text)
            lines.append(text[text.rfind("\n", 0, at) + 1: end])
            if len(lines) == limit:
                break
        return lines
    lower = text.lower()
    start = 0
    while (at := _first_word_reference(lower, words, start)) >= 0:
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        lines.append(text[text.rfind("\n", 0, at) + 1: end])
        if len(lines) == limit:
            break
        start = end
    return lines


def _first_word_reference(lower: str, words: tuple[str, ...], start: int) -> int:
    """Where the first of `words` stands alone (\\b on both sides) in the ASCII `lower` from
    `start` on (-1: nowhere)."""
    best = -1
    for w in words:
        stop = best + len(w) - 1 if best >= 0 else len(lower)  # only a start before the best so far counts
        at = lower.find(w, start, stop)
        while at >= 0:
            after = at + len(w)
            if (at == 0 or not _word_char(lower[at - 1])) and (after == len(lower) or not _word_char(lower[after])):
                best = at
                break
            at = lower.find(w, at + 1, stop)
    return best


def _word_char(c: str) -> bool:
    """\\w for an ASCII character."""
    return c.isalnum() or c == "_"


def _verb(name: str) -> str:
    lower = name.lower()
    return "changed" if any(w in lower for w in WRITE_TOOLS) else "read"


#: The parts whose `part_text` is their `text` (their exact types: a message's one part is read
#: without `part_text`'s chain of isinstance tests).
_TEXT_PARTS = frozenset((TextPart, ToolResultPart, ThinkingPart, OpaquePart))
#: Up to this length a text is searched for the decision words by one pattern over its lower case:
#: a call's short text costs the pattern's one pass less than eight `str.find` calls in Python.
_SHORT = 256
#: What every URL_RE match starts with, found by the pattern's literal-prefix search: twice as fast
#: as `"http" in text` on code listings, whose many "t", "h", "p" and digits defeat `str`'s skip.
_HTTP = re.compile("http")
#: DECISION_WORD_RE for an ASCII text's lower case: the same matches there (on ASCII, \b and \w are
#: the ASCII ones `_first_word` checks, and the lower case is the case-insensitive reading).
_DECISION_LOWER_RE = re.compile(rf"\b(?:{'|'.join(DECISION_WORDS)})\b")


def _extract_reference(m: Message) -> Features:
    parts = m.parts
    role = m.role
    calls: Sequence[Part] = ()
    if len(parts) == 1:  # (`m.text` of one part, without the generator)
        part = parts[0]
        if type(part) in _TEXT_PARTS:
            text = part.text  # type: ignore[union-attr]
        else:
            text = part_text(part)
            if isinstance(part, ToolCallPart):
                calls = parts
    else:
        text = m.text
        calls = parts
    files: list[str] = []
    action = ""
    for call in calls:  # its tool calls, in order (`m.tool_calls` without the tuple)
        if not isinstance(call, ToolCallPart):
            continue
        if PATH_END_RE.search(call.arguments):
            verb = _verb(call.name)
            files += [f"{p} ({verb} via {call.name})" for p in PATH_RE.findall(call.arguments)]
        if role != "assistant":  # (an assistant's text holds its calls, so its action is its text below)
            action = f"called {call.name}({_clip_reference(call.arguments, 80)})"
    if not text:  # no line, no word, no URL
        return tuple(files), (), (), action, ""
    written = not text.isspace()  # what `text.strip()` says, without copying the text
    values: list[str] = []
    decisions: tuple[str, ...] = ()
    request = ""
    if role == "tool":
        values += [_clip_reference(line, 160) for line in _lines_with_reference(ERROR_WORD_RE, ERROR_WORDS, text, 2)]
        if written and not ACK_RE.fullmatch(text):
            values.append(f"[{m.name or 'tool'}] {_clip_reference(text, 120)}")
    elif role == "assistant":
        if len(text) <= _SHORT and text.isascii():  # (`_lines_with`'s reading, by one pattern)
            lower = text.lower()
            lines = [] if _DECISION_LOWER_RE.search(lower) is None else _lines_with_reference(DECISION_WORD_RE, DECISION_WORDS, text)
        else:
            lines = _lines_with_reference(DECISION_WORD_RE, DECISION_WORDS, text)
        decisions = tuple([_clip_reference(line, 160) for line in lines])
        if written:
            action = _clip_reference(text, 160)
    elif role == "user" and written:
        request = _clip_reference(text, 160)
    if _HTTP.search(text) is not None:  # (URL_RE's every match starts so)
        values += [u.group() for u in islice(URL_RE.finditer(text), 3)]
    return tuple(files), decisions, tuple(values), action, request

