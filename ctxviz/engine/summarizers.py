"""Deterministic, offline summaries in each framework's format, used when a simulated trigger fires.

The frameworks ask an LLM; ctxviz defaults to extractive summaries so simulations are repeatable and
need no network. `EndpointSummarizer` calls an OpenAI-compatible endpoint when a user asks for it
(never in tests).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import chain, islice
from operator import itemgetter
from typing import Protocol

from ..errors import EndpointError
from .gc_pause import without_gc
from .kept_by_identity import KeptByIdentity
from .session import Message, OpaquePart, Part, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, part_text

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
WORD_LIMIT = 600


class Summarizer(Protocol):
    def supyagent_snapshot(self, messages: Sequence[Message]) -> str: ...


def _clip(text: str, width: int = 160) -> str:
    """The text with its whitespace runs made single spaces, cut to `width` characters with "…".

    Most heads need no flattening: when the first `width` + 1 characters, their newlines read as
    spaces, are printable (every whitespace character but the space is not), hold no two spaces
    together and neither start nor end with one, they are the start of the flattened text as they
    stand, so they decide the clip without splitting (a third of what `_flat_clip` costs)."""
    head = text[: width + 1] if len(text) > width else text
    if "\n" in head:
        head = head.replace("\n", " ")
    if head.isprintable() and "  " not in head and head[:1] != " " and head[-1:] != " ":
        return head if len(text) <= width else head[: width - 1] + "…"
    return _flat_clip(text, width)


def _flat_clip(text: str, width: int) -> str:
    """`_clip` by flattening. Only a head of a long text is flattened: its first k characters
    flattened are the start of the whole flattened (a word cut at k is the start of that word), so
    once they are longer than `width` they decide the cut (a tool output of 100 KB is not split
    whole for 120 characters). The first head is half again the width: most texts' whitespace is
    single spaces, so that head nearly always decides the cut, and it splits less than half of what
    four widths did."""
    k = width + width // 2 + 1
    while k < len(text):
        head = " ".join(text[:k].split())
        if len(head) > width:
            return head[: width - 1] + "…"
        k *= 4
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _lines_with(word: re.Pattern[str], text: str, limit: int = 0) -> list[str]:
    """The lines of a text holding one of the four characters re.I reads as an ASCII letter
    (`_FOLDS_TO_ASCII`; any other text is read by `_word_lines`), split at "\\n", that hold a
    match of `word`, in order, each once, at most `limit` of them (0: all): what `^.*<word>.*$`
    (re.M) finds, found by the word."""
    lines: list[str] = []
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


#: The characters outside ASCII that `re.I` matches to an ASCII letter: dotted and dotless I, the
#: long s and the Kelvin sign (found by trying every code point against every letter).
_FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"


def _folds(text: str) -> bool:
    """Whether a text outside ASCII holds one of `_FOLDS_TO_ASCII`."""
    return "\u0130" in text or "\u0131" in text or "\u017f" in text or "\u212a" in text


def _word_lines(text: str, starts: tuple[tuple[str, int], ...], at: re.Pattern[str], limit: int = 0, lower: str | None = None) -> list[str]:
    """`_lines_with` of a text without `_FOLDS_TO_ASCII` (`lower`: its lower case, if made
    already). In such a text re.I matches the words' letters only in ASCII letters, which is the
    lower case's reading, and `str.lower` keeps every character's place and whether it is a word
    character (\\b); tests/test_summarizer_batch.py checks both over every code point. Each of
    the words `at` matches (between word boundaries, in the lower case) begins with one of
    `starts` (each with its length less one), so the first place any of them stands is found by
    `str.find`, each search stopping where the earliest found so far begins, and `at` tells there
    whether a word stands whole: a search per start, several times faster than the
    case-insensitive pattern's scan, and one fewer for "failed" and "failure" found as "fail".

    With a `limit`, a long text is lowered a head first (`_HEAD` characters): where the lines asked
    for are found in it (a log's error near its top), the rest is never lowered; else the rest is
    lowered onto it."""
    if lower is None:
        lower = text[:_HEAD].lower() if limit and len(text) > _HEAD else text.lower()
    return _lines_found(text, lower, str.lower, starts, at, limit, in_text=False)


def _lines_found(text: str, lower, widen, starts, at: re.Pattern[str], limit: int, in_text: bool) -> list[str]:  # noqa: ANN001
    """The search `_word_lines` and `_wide_word_lines` share, over `lower` (a lowered head of the
    text or all of it, as str or as bytes; `widen` lowers the rest onto it the same way), `at`
    matched in the text itself (`in_text`) or in `lower`."""
    lines: list[str] = []
    n = len(lower)
    # A place found before `sure` is the place in the whole text: a word starting before it, and
    # the character after the word (its \b), lie in the head.
    sure = n if n == len(text) else n - _LONGEST
    find = lower.find
    match = at.match
    start = 0
    while True:
        best = n
        for w, reach in starts:
            found = find(w, start, best + reach)  # (only a start before the best so far counts)
            if found >= 0:
                best = found
        if best >= sure:
            if n == len(text):  # (nothing found)
                return lines
            lower += widen(text[n:])  # the rest, and this search again
            n = sure = len(lower)
            find = lower.find
            continue
        if match(text if in_text else lower, best) is None:  # a start of a longer word, or a word not standing alone
            start = best + 1
            continue
        end = text.find("\n", best)
        if end < 0:
            end = len(text)
        lines.append(text[text.rfind("\n", 0, best) + 1: end])
        if len(lines) == limit:
            return lines
        start = end


#: How much of a long text `_word_lines` lowers first.
_HEAD = 1024


def _wide_word_lines(text: str, starts: tuple[tuple[bytes, int], ...], at: re.Pattern[str], limit: int = 0) -> list[str]:
    """`_word_lines` of a text outside ASCII without `_FOLDS_TO_ASCII`, read in bytes: its
    characters outside ASCII made "?" one for one (`str.encode`'s "replace"), then lowered. Such a
    text's lower case holds an ASCII letter exactly where the text holds that letter in either case
    (no other character lowers to one: tests/test_summarizer_batch.py checks every code point),
    so the words' starts (`starts`, in bytes) stand at the same places in both, and `at` (the
    words with re.I) tells whether a word stands whole there, in the text itself. `str.lower`
    looks each character of such a text up in the Unicode tables, and each search of its lower case
    runs over two or four bytes a character: lowering and searching the bytes costs a fraction.
    With a `limit`, a long text is read a head first, as `_word_lines` reads it."""
    head = limit and len(text) > _HEAD
    return _lines_found(text, _ascii_lower(text[:_HEAD] if head else text), _ascii_lower, starts, at, limit, in_text=True)


def _ascii_lower(text: str) -> bytes:
    return text.encode("ascii", "replace").lower()


def _unique(items: list[str], limit: int) -> list[str]:
    """The last `limit` distinct non-empty items, in the order each first appears (a dict keeps
    that order: a list searched for each item was quadratic in a long session's tool results)."""
    return [item for item in dict.fromkeys(items) if item][-limit:]


Features = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str, str]
#: Each message's features, kept while the message lives (engine/kept_by_identity.py).
_FEATURES: KeptByIdentity[Features] = KeptByIdentity()


def _features(m: Message) -> Features:
    """(files, decisions, values, last action, request) of one message, kept while the message
    lives: a simulation summarises the same early messages again at every trigger (supyagent
    re-summarises from 0), and a re-plan after a parameter moved summarises nearly the span its
    first plan did. (A cache of the last 65,536 messages forgot a 100,000-message session's first
    messages before its re-plan asked for them again.)"""
    return _FEATURES.get(m, _extract)


@without_gc
def features_of(messages: Iterable[Message]) -> list[Features]:
    """`_features` of each message, in order: the kept ones looked up and the others read and kept
    in one loop (a run of thousands read cold, as Codex's stand-in summary reads them, without a
    `_features` call per message). Reading several texts as one (joined, lowered and searched
    once, the places mapped back) was measured slower: the searches cost by the character, not
    by the call, and a joined text's lower case outgrows the cache that each text's fits in.

    The cycle collector is paused meanwhile (`without_gc`): each message read leaves tuples and a
    weak reference, none in a cycle, and the full passes they set off over a long session's heap
    took a third of a 100,000-message Codex re-plan's reading (626 -> 400 ms)."""
    out: list[Features] = []
    add = out.append
    kept = _FEATURES.entries.get
    put = _FEATURES.put
    extract = _extract
    for m in messages:
        entry = kept(id(m))
        if entry is not None and entry[0]() is m:
            add(entry[1])
            continue
        add(put(m, extract(m)))
    return out


#: One message's reading, kept while it lives (for a caller that reads messages one at a time).
message_features = _features
_features.cache_clear = _FEATURES.clear  # type: ignore[attr-defined]  # what a benchmark calls to start cold


def _paths(arguments: str) -> list[str]:
    """`PATH_RE.findall(arguments)`, the pattern tried only where a path can start. A match starts
    where a run of path characters ([\\w./-]) starts (its look-behind) and lies in that run, which
    holds a file ending (`PATH_END_RE`) where it matches; after a match the run's later places
    fail the look-behind. So each run with an ending is tried once, from its start (found by the
    last other character before the ending), and no other place is: findall's own scan tries every
    place, and its nested repetition backtracks through every long run (a file's contents written
    by a call), several times slower."""
    out: list[str] = []
    if PATH_END_RE.search(arguments) is None:  # (most calls name no file: one search, no iterator)
        return out
    tried = -1
    for end in PATH_END_RE.finditer(arguments):
        at = end.start()
        lo = max(0, at - 256)
        while True:  # the run's start: after the last other character before the ending
            before = _LAST_OTHER.match(arguments, lo, at)
            if before is not None:
                start = before.end()
                break
            if lo == 0:
                start = 0
                break
            lo = max(0, lo - 4096)
        if start == tried:  # (a run with several endings)
            continue
        tried = start
        found = PATH_RE.match(arguments, start)
        if found is not None:
            out.append(found.group(1))
    return out


#: Up to the last character that cannot be in a path (`_paths`).
_LAST_OTHER = re.compile(r".*[^\w./-]", re.S)


@lru_cache(maxsize=1024)
def _verb(name: str) -> str:
    """How a call of the tool named so touches the files in its arguments (a session calls a few
    tools thousands of times)."""
    lower = name.lower()
    return "changed" if any(w in lower for w in WRITE_TOOLS) else "read"


#: The parts whose `part_text` is their `text` (their exact types: a message's one part is read
#: without `part_text`'s chain of isinstance tests).
_TEXT_PARTS = frozenset((TextPart, ToolResultPart, ThinkingPart, OpaquePart))
#: Up to this length an ASCII text is searched for the decision words by one pattern over its lower
#: case: a call's short text costs the pattern's one pass less than a `str.find` per word start.
_SHORT = 256
#: What every URL_RE match starts with, found by the pattern's literal-prefix search: twice as fast
#: as `"http" in text` on code listings, whose many "t", "h", "p" and digits defeat `str`'s skip.
_HTTP = re.compile("http")
#: ERROR_WORD_RE and DECISION_WORD_RE for the lower case of a text without `_FOLDS_TO_ASCII`: the
#: same matches there (see `_word_lines`).
_ERROR_LOWER_RE = re.compile(rf"\b(?:{'|'.join(ERROR_WORDS)})\b")
_DECISION_LOWER_RE = re.compile(rf"\b(?:{'|'.join(DECISION_WORDS)})\b")
#: What each of the words begins with, searched for by `_word_lines` ("failed" and "failure" as
#: one), each with its length less one.
_ERROR_STARTS = tuple((w, len(w) - 1) for w in ("error", "exception", "traceback", "fail"))
_DECISION_STARTS = tuple((w, len(w) - 1) for w in ("deci", "we'll use", "will use", "chose", "going with", "let's use", "plan is"))
#: The starts in bytes, for `_wide_word_lines`.
_ERROR_STARTS_BYTES = tuple((w.encode("ascii"), reach) for w, reach in _ERROR_STARTS)
_DECISION_STARTS_BYTES = tuple((w.encode("ascii"), reach) for w, reach in _DECISION_STARTS)
#: The longest of the words, ERROR_WORDS and DECISION_WORDS ("going with").
_LONGEST = max(map(len, ERROR_WORDS + DECISION_WORDS))


def _extract(m: Message) -> Features:
    """(files, decisions, values, last action, request) of one message (see `_features`)."""
    return read_parts(m.role, m.name, m.parts)


def read_parts(role: str, name: str, parts: Sequence[Part]) -> Features:
    """`_extract` of a message of this role, name and parts, for a caller that has them without
    the message (a framework's view of one, read without making it)."""
    calls: Sequence[Part] = ()
    if len(parts) == 1:  # (`m.text` of one part, without the generator)
        part = parts[0]
        kind = type(part)
        if kind in _TEXT_PARTS:
            text = part.text  # type: ignore[union-attr]
        elif kind is ToolCallPart:  # (`part_text`'s, without its chain of isinstance tests)
            text = f"{part.name}({part.arguments})"  # type: ignore[union-attr]
            calls = parts
        else:
            text = part_text(part)
            if isinstance(part, ToolCallPart):
                calls = parts
    else:  # (`m.text`: the parts' non-empty texts, each read once)
        texts: list[str] = []
        for part in parts:
            kind = type(part)
            if kind in _TEXT_PARTS:
                t = part.text  # type: ignore[union-attr]
            elif kind is ToolCallPart:
                t = f"{part.name}({part.arguments})"  # type: ignore[union-attr]
                calls = parts
            else:
                t = part_text(part)
                calls = parts
            if t:
                texts.append(t)
        text = "\n".join(texts)
    return read_text(role, name, text, calls)


def read_text(role: str, name: str, text: str, calls: Sequence[Part] = ()) -> Features:
    """(files, decisions, values, last action, request) of a message of this role and name whose
    text (its parts' texts joined by newlines, a call's as `name(arguments)`) and tool calls are
    these: what `_extract` reads of a message, for a caller that has them without the message (a
    framework's preview of one, read for tens of thousands of messages)."""
    files: list[str] = []
    action = ""
    for call in calls:  # its tool calls, in order (`m.tool_calls` without the tuple)
        if not isinstance(call, ToolCallPart):
            continue
        found = _paths(call.arguments)
        if found:
            verb = _verb(call.name)
            files += [f"{p} ({verb} via {call.name})" for p in found]
        if role != "assistant":  # (an assistant's text holds its calls, so its action is its text below)
            action = f"called {call.name}({_clip(call.arguments, 80)})"
    if not text:  # no line, no word, no URL
        return tuple(files), (), (), action, ""
    written = not text.isspace()  # what `text.strip()` says, without copying the text
    values: list[str] = []
    decisions: tuple[str, ...] = ()
    request = ""
    if role == "tool":
        if text.isascii():
            lines = _word_lines(text, _ERROR_STARTS, _ERROR_LOWER_RE, 2)
        elif not _folds(text):
            lines = _wide_word_lines(text, _ERROR_STARTS_BYTES, ERROR_WORD_RE, 2)
        else:
            lines = _lines_with(ERROR_WORD_RE, text, 2)
        if lines:
            values = [_clip(line, 160) for line in lines]
        if written and not ACK_RE.fullmatch(text):
            values.append(f"[{name or 'tool'}] {_clip(text, 120)}")
    elif role == "assistant":
        if text.isascii():
            if len(text) <= _SHORT:  # (one pattern's pass, and the lines only where it found one)
                lower = text.lower()
                lines = [] if _DECISION_LOWER_RE.search(lower) is None else _word_lines(text, _DECISION_STARTS, _DECISION_LOWER_RE, 0, lower)
            else:
                lines = _word_lines(text, _DECISION_STARTS, _DECISION_LOWER_RE)
        elif not _folds(text):
            lines = _wide_word_lines(text, _DECISION_STARTS_BYTES, DECISION_WORD_RE)
        else:
            lines = _lines_with(DECISION_WORD_RE, text)
        if lines:
            decisions = tuple([_clip(line, 160) for line in lines])
        if written:
            action = _clip(text, 160)
    elif role == "user" and written:
        request = _clip(text, 160)
    if _HTTP.search(text) is not None:  # (URL_RE's every match starts so)
        values += [u.group() for u in islice(URL_RE.finditer(text), 3)]
    return tuple(files), decisions, tuple(values), action, request


_features.__wrapped__ = _extract  # type: ignore[attr-defined]  # the reading itself, uncached (as under lru_cache)


@without_gc
def supyagent_snapshot(messages: Sequence[Message]) -> str:
    """supyagent's five-section state snapshot, built from file paths, decisions, error lines, data
    tool results and the latest requests, kept under 600 words. Read with the cycle collector paused,
    as `features_of` reads."""
    return snapshot_of(features_of(messages))


def snapshot_of(features: Sequence[Features]) -> str:
    """`supyagent_snapshot` of the messages read so (`features_of`'s, or a caller's own kept readings)."""
    # Each section gathered in one pass at C speed over the readings (a loop adding each message's
    # items cost about as much as looking them up: a strands re-plan at 100,000 messages gathers 31,000).
    files, decisions, values = (list(chain.from_iterable(map(itemgetter(k), features))) for k in (0, 1, 2))
    last_action = next(filter(None, map(itemgetter(3), reversed(features))), "")
    pending = list(filter(None, map(itemgetter(4), features)))
    return render_snapshot(_unique(files, 12), _unique(decisions, 8), _unique(values, 12), last_action,
                           pending[-1] if pending else "", _unique(pending, 4))


def render_snapshot(files: list[str], decisions: list[str], values: list[str], last_action: str, last_request: str,
                    pending: list[str]) -> str:
    """The five sections of supyagent's snapshot from what was gathered, cut to its word limit
    (shared by the summariser and the incremental replay, which gathers turn by turn)."""
    state = [f"Last action: {last_action}" if last_action else "No action taken yet",
             f"Latest request: {last_request}" if last_request else "No request yet"]
    lines: list[str] = []
    for title, items in zip(SECTIONS, (files, decisions, values, state, pending), strict=True):
        lines.append(f"## {title}")
        lines += [f"- {item}" for item in items] or ["- (none)"]
        lines.append("")
    text = "\n".join(lines).strip()
    words = text.split(" ")
    return text if len(words) <= WORD_LIMIT else " ".join(words[:WORD_LIMIT]) + " …"


#: The snapshot's sections, in order (Current State's two lines are read apart by `snapshot_items`).
SECTIONS = ("Files Modified", "Key Decisions", "Important Values", "Current State", "Pending Tasks")
_HEADINGS = tuple(f"## {title}" for title in SECTIONS)


def read_as_snapshot(message: Message) -> None:
    """Have the offline summary read `message`, whose text is one of its own snapshots or the head
    of one (a framework shows its summariser the previous summary, cut), as the items that text
    shows: the files, decisions and values listed, the last action and the latest request (of the
    pending tasks, only the latest carries over: one message holds one request). A text in no such
    form (a summary an LLM wrote, read from a log) is one value, clipped. Kept while the message
    lives, as any message's reading is."""
    _FEATURES.put(message, snapshot_items(message.text))


def snapshot_items(text: str) -> Features:
    """The items of a snapshot's text as one message's features (see `read_as_snapshot`)."""
    lists: tuple[list[str], ...] = ([], [], [], [], [])
    section: int | None = None
    action = request = ""
    seen = False
    for line in text.split("\n"):
        if line in _HEADINGS:
            section = _HEADINGS.index(line)
            seen = True
            continue
        if section is None or not line.startswith("- ") or line == "- (none)":
            continue
        item = line[2:]
        if section == 3:
            if item.startswith("Last action: "):
                action = item[len("Last action: "):]
            elif item.startswith("Latest request: "):
                request = item[len("Latest request: "):]
        else:
            lists[section].append(item)
    if not seen:
        return (), (), (_clip(text, 160),) if text.strip() else (), "", ""
    return tuple(lists[0]), tuple(lists[1]), tuple(lists[2]), action, request or (lists[4][-1] if lists[4] else "")


def mnesis_fallback(messages: Sequence[Message], budget_tokens: int) -> str:
    """mnesis' Level 3 deterministic summary: newest messages as `[ROLE]: …` lines (500 chars each)
    while they fit, with the file-id footer when file ids appear."""
    header = "[CONTEXT TRUNCATED \u2014 DETERMINISTIC FALLBACK]\n\n## Kept Messages\n\n"
    file_ids = sorted({f for m in messages for f in re.findall(r"\bfile_[0-9a-fA-F]{8,32}\b", m.text)})
    footer = f"\n\n[LCM File IDs: {', '.join(file_ids)}]" if file_ids else ""
    room = budget_tokens * 4 - len(header) - len(footer)
    kept: list[str] = []
    for m in reversed(messages):
        line = f"[{'USER' if m.role == 'user' else 'ASSISTANT'}]: {m.text[:500]}"
        if len(line) + 1 > room:
            break
        kept.insert(0, line)
        room -= len(line) + 1
    return header + "\n".join(kept) + footer


class EndpointSummarizer:
    """Asks an OpenAI-compatible chat endpoint for supyagent's snapshot (opt-in, network)."""

    def __init__(self, url: str, model: str, api_key: str = "", timeout: float = 60.0) -> None:
        self.url, self.model, self.api_key, self.timeout = url.rstrip("/"), model, api_key, timeout

    def supyagent_snapshot(self, messages: Sequence[Message]) -> str:
        transcript = "\n\n".join(f"{m.role.upper()}: {m.text}" for m in messages if m.role != "system")
        prompt = ("Summarize the conversation as a structured state snapshot with the sections ## Files Modified, "
                  "## Key Decisions, ## Important Values, ## Current State, ## Pending Tasks, under 600 words.\n\n"
                  f"Conversation:\n{transcript}\n\nSummary:")
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": prompt}]}).encode()
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})}
        request = urllib.request.Request(f"{self.url}/chat/completions", data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (user-given URL)
                answer = json.load(response)
        except urllib.error.HTTPError as exc:
            raise EndpointError(f"--summarizer-url {self.url}: the endpoint answered HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EndpointError(f"--summarizer-url {self.url}: cannot reach the endpoint ({getattr(reason, 'strerror', None) or reason})") from None
        except ValueError:
            raise EndpointError(f"--summarizer-url {self.url}: the endpoint's answer is not JSON") from None
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"--summarizer-url {self.url}: the answer has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise EndpointError(f"--summarizer-url {self.url}: the summary is not text")
        return content


class ExtractiveSummarizer:
    def supyagent_snapshot(self, messages: Sequence[Message]) -> str:
        return supyagent_snapshot(messages)
