"""Anchors: the facts of a session an agent needs later, found mechanically in every message.

"What did the agent forget?" needs a list of what there was to remember that does not depend on
an LLM's judgement, so it is the same on every run and for every policy: file paths, URLs, commit
SHAs, issue and PR numbers, ids and order numbers, error lines and exception names, numbers with
units, quoted identifiers, every user request and the user's explicit instructions ("always",
"never", "must", "don't", "make sure", "only"). Retention (engine/retention.py) then asks which of
them still reach the model.

API (pure, no Qt; the app reads it):

- `anchors_of(session) -> AnchorIndex`: extracted once per session and cached by the session's
  identity (`STORE`, an `AnchorStore`, like counting.CountStore): ~0.7 µs per character of text,
  so 7-9 s for 10,000 messages of a coding agent holding 12 MB (5 s for a 9 MB support chat),
  0.1-0.4 s for a bundled sample; instant afterwards (worth a worker thread in the app).
- `AnchorIndex.anchors`: every `Anchor` (kind, value, first_index, first_id, messages, role),
  ordered by the message that first said it; `by_message[i]`: the anchor ids message i holds;
  `ids_in_text(text)`: the anchors a text (a summary, the system prompt, a truncated message)
  still carries, memoised per text.
- `extract(text, role)`: the (kind, key, value) triples of one text.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .session import Session

#: Anchor kinds, in the order a "lost" list shows them (what the user asked for comes first).
KINDS: tuple[str, ...] = ("request", "instruction", "path", "url", "issue", "id", "commit", "error", "exception", "quantity", "quoted")
#: Kinds that stand for what the user said, tracked whether or not anyone searches for them.
USER_KINDS = frozenset({"request", "instruction"})

_EXT = (r"py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ya?ml|toml|md|rst|txt|csv|tsv|cfg|ini|sh|bash|sql|html?|css|scss|go|rs|java|kt|"
        r"rb|php|c|h|cc|cpp|hpp|cs|swift|lock|conf|env|log|xml|proto|graphql|tf|gradle|vue|svelte|lua|pl|r|ex|exs|zig|dart")
# Python's `re` scans fast only for a pattern that starts with a literal or a character class (no
# look-behind, no \b, no IGNORECASE): each pattern finds a cheap hook, and the few hits are widened
# and checked in Python. Extraction stays near 0.1 µs a character (10,000 messages of a coding
# agent, 12 MB, in about 2 s).
PATH_HOOK_RE = re.compile(r"/|\.(?:" + _EXT + r")(?![\w])")
PATH_RE = re.compile(r"(?:~|\.{1,2})?/?(?:[\w@+-][\w.@+-]*/)*[\w@+-][\w.@+-]*/?")
PATH_RUN_RE = re.compile(r"[\w.@+~/-]*")
URL_HOOK_RE = re.compile(r"://")
URL_TAIL_RE = re.compile(r"[^\s\"'<>`)\]}]+")
SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp"})
UUID_HOOK_RE = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
SHA_RE = re.compile(r"[0-9a-f]{7,40}")
HASH_ISSUE_RE = re.compile(r"#(\d{1,7})(?!\w)")
GH_ISSUE_RE = re.compile(r"GH-(\d+)(?!\w)")
WORD_ISSUE_RE = re.compile(r"(pr|mr|pull request|pull|issue|ticket|bug)[ \t]*#?[ \t]*(\d+)(?!\w)")
ID_RE = re.compile(r"[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+)*-\d{2,}[A-Z0-9]*(?![\w-])")
PREFIXED_ID_RE = re.compile(r"_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}(?!\w)")
NOT_IDS = frozenset({"UTF", "ISO", "SHA", "MD", "AES", "RSA", "HTTP", "TLS", "SSL", "IPV", "X", "ES", "UTF8", "GPT", "COVID", "PEP", "WCAG"})
EXCEPTION_RE = re.compile(r"(?:Error|Exception|Warning|Interrupt|Exit)(?!\w)")
UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
ERROR_LINE_RE = re.compile(
    r"^[ \t>|]*(?:E[ \t]+)?(?:Traceback \(most recent call last\)|(?:[\w.]*(?:Error|Exception)|error|Error|ERROR|FAILED|FAIL|FATAL|Fatal|fatal|panic)"
    r"(?:\[\w+\])?(?::|[ \t]+-[ \t]|!)).*$", re.M)
_UNIT = (r"ms|milliseconds?|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
         r"[KMGTP]i?B|kB|bytes?|tokens?|req/(?:s|sec|min|h)|requests?/(?:s|sec|min|h)|rps|rpm|qps|kg|lbs?|km|cm|mm|USD|EUR|GBP")
MONEY_RE = re.compile(r"[$€£][ \t]?\d(?:[\d,]*\d)?(?:\.\d+)?(?:[ \t]?[kKmM](?!\w))?")
#: The last digit of a number and its unit: the number's other digits are read leftwards in Python.
UNIT_HOOK_RE = re.compile(r"\d(?P<pct>[ \t]?%)|\d[ \t]?(?P<unit>" + _UNIT + r")(?![\w/])")
NUMBER_CHARS = frozenset("0123456789.,")
BACKTICK_RE = re.compile(r"`([^`\n]{1,80})`")
QUOTED_RE = re.compile(r"(['\"])([A-Za-z_][\w.\-/]{1,80})\1(?!\s*:)")
INSTRUCTION_RE = re.compile(r"\b(?:always|never|must(?:n't)?|don'?t|do not|make sure|only|ensure|avoid)\b", re.I)
INSTRUCTION_HOOK_RE = re.compile(r"always|never|must|don|do not|make sure|only|ensure|avoid")
SENTENCE_RE = re.compile(r"(?:[^\n.!?]|[.!?](?=\w))*(?:[.!?]+(?!\w)|\n|$)")

_UNITS = {"millisecond": "ms", "milliseconds": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s", "min": "min",
          "mins": "min", "minute": "min", "minutes": "min", "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "byte": "B",
          "bytes": "B", "token": "tokens", "day": "days", "week": "weeks", "month": "months", "year": "years", "lb": "lbs", "us": "µs"}

#: The longest stretch of a message that is searched (a 2 MB file dump would cost more than it tells).
MAX_CHARS = 200_000


def _clip(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def norm(text: str) -> str:
    """The form texts are compared in: lower case, runs of white space as one space."""
    return " ".join(text.lower().split())


class _Spans:
    """The stretches of a text already claimed by an anchor (disjoint, kept sorted)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def free(self, start: int, end: int) -> bool:
        k = bisect_right(self.starts, start)
        if k and self.ends[k - 1] > start:
            return False
        return not (k < len(self.starts) and self.starts[k] < end)

    def take(self, start: int, end: int) -> None:
        k = bisect_right(self.starts, start)
        self.starts.insert(k, start)
        self.ends.insert(k, end)


def extract(text: str, role: str = "user") -> list[tuple[str, str, str]]:
    """The anchors of one text as (kind, key, value): `value` as shown, `key` its normalised form
    (two spellings of the same fact share a key). A stretch claimed by one kind is not read again
    by a later one (a URL's path is no file path; a UUID's tail is no commit)."""
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS]
    out: list[tuple[str, str, str]] = []
    spans = _Spans()

    def add(kind: str, value: str, start: int, end: int, key: str | None = None) -> None:
        if spans.free(start, end):
            spans.take(start, end)
            out.append((kind, key if key is not None else value.lower(), value))

    n = len(text)
    if "://" in text:
        for m in URL_HOOK_RE.finditer(text):
            a = m.start()
            while a > 0 and "a" <= text[a - 1].lower() <= "z" and m.start() - a < 6:
                a -= 1
            tail = URL_TAIL_RE.match(text, m.end())
            if text[a:m.start()].lower() not in SCHEMES or tail is None:
                continue
            url = text[a:tail.end()].rstrip(".,;:!?'\"")
            add("url", url, a, a + len(url), url.lower().rstrip("/"))
    if "-" in text:
        for m in UUID_HOOK_RE.finditer(text):
            a, b = m.start() - 8, m.end() + 12
            if a >= 0 and UUID_RE.fullmatch(text, a, b) and (a == 0 or text[a - 1] not in WORD_CHARS) and (b == n or text[b] not in WORD_CHARS):
                add("id", text[a:b], a, b)
    if "GH-" in text:
        for m in GH_ISSUE_RE.finditer(text):
            add("issue", m.group(0), m.start(), m.end(), m.group(0).lower())
    lowered = text.lower()
    if "PR" in text or "MR" in text or "ull request" in lowered or "issue " in lowered or "ticket " in lowered or "bug " in lowered:
        for m in WORD_ISSUE_RE.finditer(lowered):
            a = m.start()
            if a and lowered[a - 1] in WORD_CHARS:
                continue
            word, number = m.group(1), m.group(2)
            value = f"PR {number}" if word in ("pr", "pull request", "pull") else (f"MR {number}" if word == "mr" else f"#{number}")
            add("issue", value, a, m.end(), value.lower())
    if "#" in text:
        for m in HASH_ISSUE_RE.finditer(text):
            a = m.start()
            if a == 0 or text[a - 1] not in "&#/" and text[a - 1] not in WORD_CHARS:
                add("issue", m.group(0), a, m.end())
    seen: set[tuple[int, int]] = set()
    reverse = ""
    for m in PATH_HOOK_RE.finditer(text):
        if not reverse:
            reverse = text[::-1]
        a = n - PATH_RUN_RE.match(reverse, n - m.start()).end()  # type: ignore[union-attr]  # the run leftwards, read in the reversed text
        b = PATH_RUN_RE.match(text, m.end()).end()  # type: ignore[union-attr]
        if (a, b) in seen:
            continue
        seen.add((a, b))
        if a and text[a - 1] in ":@":  # user@host:path, a URL's tail
            continue
        path = text[a:b].rstrip(".,:-")
        p = PATH_RE.fullmatch(path)
        if p is None or len(path) < 3:
            continue
        if "/" in path:
            if not any(c.isalpha() for c in path) or path.split("/", 1)[0].replace(".", "").replace(",", "").isdigit():
                continue  # 1/2, 2024/01/02, 12.99/month: fractions, dates, rates
            if path.count("/") == 1 and "." not in path and not path.startswith(("/", "~", "./")):
                continue  # and/or, yes/no, read/write
            if path.strip("/") == "" or path.startswith("//"):
                continue
        elif not PATH_HOOK_RE.search(path) or path.startswith(".") and path.count(".") == 1 and path != ".env":
            continue  # a bare extension (".py") names no file
        add("path", path, a, a + len(path))
    for m in ID_RE.finditer(text):
        a = m.start()
        if a and text[a - 1] in WORD_CHARS or m.group(0).split("-", 1)[0] in NOT_IDS:
            continue
        add("id", m.group(0), a, m.end())
    if "_" in text:
        for m in PREFIXED_ID_RE.finditer(text):
            a = m.start()
            k = a
            while k > 0 and "a" <= text[k - 1] <= "z":
                k -= 1
            if 2 <= a - k <= 5 and (k == 0 or text[k - 1] not in WORD_CHARS):
                add("id", text[k:m.end()], k, m.end())
    for m in SHA_RE.finditer(text):
        a, b = m.span()
        value = m.group(0)
        if (a and text[a - 1] in WORD_CHARS or text[a - 1:a] == "-" or b < len(text) and (text[b] in WORD_CHARS or text[b] == "-")
                or value.isdigit() or value.isalpha()):
            continue
        add("commit", value, a, b, value[:7])
    if "rror" in text or "xception" in text or "ERROR" in text or "FAIL" in text or "atal" in text or "panic" in text or "Traceback" in text:
        for m in ERROR_LINE_RE.finditer(text):
            line = _clip(m.group(0).strip(" \t>|"), 200)
            out.append(("error", norm(line), line))
    if "rror" in text or "xception" in text or "arning" in text or "nterrupt" in text or "Exit" in text:
        for m in EXCEPTION_RE.finditer(text):
            k = m.start()
            while k > 0 and text[k - 1] in WORD_CHARS:
                k -= 1
            if k < m.start() and text[k] in UPPER and (k == 0 or text[k - 1] != "."):
                add("exception", text[k:m.end()], k, m.end(), text[k:m.end()])
    if "$" in text or "€" in text or "£" in text:
        for m in MONEY_RE.finditer(text):
            a = m.start()
            if a and text[a - 1] in WORD_CHARS:
                continue
            value = m.group(0).replace(" ", "").replace("\t", "")
            add("quantity", value, a, m.end(), value.lower().replace(",", ""))
    for m in UNIT_HOOK_RE.finditer(text):
        a = m.start()
        while a > 0 and text[a - 1] in NUMBER_CHARS:
            a -= 1
        while text[a] in ".,":
            a += 1
        if a and (text[a - 1] in WORD_CHARS or text[a - 1] in "$€£-"):
            continue
        number = text[a:m.start() + 1]
        unit = m.group("unit")
        if unit is None:
            value = f"{number}%"
        else:
            value = f"{number} {unit if unit[-1] == 'B' and len(unit) <= 3 else _UNITS.get(unit.lower(), unit)}"
        add("quantity", value, a, m.end(), value.lower().replace(",", ""))
    if "`" in text:
        for m in BACKTICK_RE.finditer(text):
            inner = m.group(1).strip()
            if inner and text[m.end():m.end() + 1] != "`" and text[m.start() - 1:m.start()] != "`":
                add("quoted", inner, m.start(1), m.end(1))
    if role != "tool":  # a tool's JSON would make every string value a "quoted identifier"
        for m in QUOTED_RE.finditer(text):
            a = m.start()
            if a and (text[a - 1] in WORD_CHARS or text[a - 1] == "\\"):
                continue
            inner = m.group(2)
            if "_" in inner or "." in inner.strip(".") or "/" in inner or any(x.islower() and y.isupper() for x, y in zip(inner, inner[1:], strict=False)):
                add("quoted", inner, m.start(2), m.end(2))
    if role == "user" and INSTRUCTION_HOOK_RE.search(lowered):
        for sentence in instructions(text):
            out.append(("instruction", norm(sentence), sentence))
    return out


def instructions(text: str) -> list[str]:
    """The sentences of a user's message that state a rule: "always", "never", "must", "don't"..."""
    if not INSTRUCTION_RE.search(text):
        return []
    found: list[str] = []
    for m in SENTENCE_RE.finditer(text):
        sentence = _clip(m.group(0).strip(" \t\n-*•>"), 300)
        if len(sentence) > 3 and INSTRUCTION_RE.search(sentence) and sentence not in found:
            found.append(sentence)
    return found


@dataclass(frozen=True)
class Anchor:
    """One fact: where it was first said, and every message it appears in."""

    id: int
    kind: str
    key: str
    #: As first written (an instruction is its sentence; a request the start of the message).
    value: str
    first_index: int
    first_id: str
    #: The role of the message that first said it.
    role: str
    #: Every session message index it appears in, in order.
    messages: tuple[int, ...]
    #: Only for kind "request": the session's first user request.
    opening: bool = False

    @property
    def needle(self) -> str:
        """What a text must contain (normalised) to carry an instruction or request on."""
        return self.key if self.kind == "instruction" else (norm(self.value.rstrip("…"))[:60] if self.kind == "request" else self.key)

    def label(self, width: int = 72) -> str:
        """The anchor as a "lost" list shows it: `code`, #issue, 'what the user said'."""
        if self.kind in USER_KINDS:
            return f"'{_clip(self.value, width)}'"
        if self.kind in ("path", "quoted", "commit", "exception", "id", "url"):
            return f"`{self.value}`"
        return self.value

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "first_index": self.first_index, "first_id": self.first_id, "role": self.role,
                "messages": list(self.messages), **({"opening": True} if self.opening else {})}


def _order(anchor: Anchor) -> tuple[int, int, int]:
    """User requests and instructions first (the opening request at the top), then by first said."""
    rank = 0 if anchor.opening else (1 if anchor.kind == "instruction" else (2 if anchor.kind == "request" else 3))
    return (rank, anchor.first_index, anchor.id)


def ordered(anchors: Iterable[Anchor]) -> list[Anchor]:
    return sorted(anchors, key=_order)


class AnchorIndex:
    """Every anchor of one session, with the per-message lists retention reads on every re-plan."""

    def __init__(self, session: Session, anchors: tuple[Anchor, ...], by_message: tuple[tuple[int, ...], ...]) -> None:
        self.session = session
        self.anchors = anchors
        self.by_message = by_message
        self.by_key: dict[tuple[str, str], int] = {(a.kind, a.key): a.id for a in anchors}
        self.first_indices: tuple[int, ...] = tuple(a.first_index for a in anchors)
        self.user_anchors: tuple[Anchor, ...] = tuple(a for a in anchors if a.kind in USER_KINDS)
        self._texts: dict[str, frozenset[int]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.anchors)

    def ids_in_text(self, text: str, role: str = "assistant") -> frozenset[int]:
        """The anchors a text carries on: those it names (the same key), and the user requests and
        instructions whose words it repeats. Memoised per text (summaries recur turn after turn)."""
        found = self._texts.get(text)
        if found is not None:
            return found
        ids = {self.by_key[(kind, key)] for kind, key, _ in extract(text, role) if (kind, key) in self.by_key}
        if self.user_anchors:
            flat = norm(text)
            ids.update(a.id for a in self.user_anchors if a.needle and a.needle in flat)
        found = frozenset(ids)
        with self._lock:
            if len(self._texts) > 20_000:
                self._texts.clear()
            self._texts[text] = found
        return found

    def search(self, term: str) -> list[Anchor]:
        """Anchors whose value contains `term` (case-insensitive)."""
        needle = term.lower()
        return [a for a in self.anchors if needle in a.value.lower()]


def build_index(session: Session) -> AnchorIndex:
    """Read every message once. Requests are the user's messages with text (each its own anchor)."""
    first: dict[tuple[str, str], list[Any]] = {}
    per_message: list[list[tuple[str, str]]] = []
    opening_done = False
    for m in session.messages:
        text = m.text
        keys: list[tuple[str, str]] = []
        if text:
            found = extract(text, m.role)
            if m.role == "user" and text.strip():
                request = _clip(text, 160)
                found.append(("request", f"#{m.index}", request))
            for kind, key, value in found:
                k = (kind, key)
                entry = first.get(k)
                if entry is None:
                    first[k] = [kind, key, value, m.index, m.id, m.role, [m.index], kind == "request" and not opening_done]
                    if kind == "request":
                        opening_done = True
                elif entry[6][-1] != m.index:
                    entry[6].append(m.index)
                keys.append(k)
        per_message.append(keys)
    anchors = tuple(Anchor(i, kind, key, value, index, mid, role, tuple(messages), opening)
                    for i, (kind, key, value, index, mid, role, messages, opening) in enumerate(first.values()))
    ids = {(a.kind, a.key): a.id for a in anchors}
    by_message = tuple(tuple(dict.fromkeys(ids[k] for k in keys)) for keys in per_message)
    return AnchorIndex(session, anchors, by_message)


class AnchorStore:
    """Each session's anchors, extracted once. Keyed by the session's identity (hashing a session of
    100,000 messages would cost as much as reading it); the entry keeps the session alive so the
    identity cannot be reused."""

    def __init__(self, limit: int = 16) -> None:
        self._entries: dict[int, AnchorIndex] = {}
        self._lock = threading.Lock()
        self.limit = limit

    def get(self, session: Session) -> AnchorIndex:
        with self._lock:
            found = self._entries.get(id(session))
        if found is not None and found.session is session:
            return found
        index = build_index(session)
        with self._lock:
            if len(self._entries) >= self.limit:
                self._entries.pop(next(iter(self._entries)))
            self._entries[id(session)] = index
        return index

    def forget(self, session: Session) -> None:
        with self._lock:
            self._entries.pop(id(session), None)


STORE = AnchorStore()


def anchors_of(session: Session, store: AnchorStore | None = None) -> AnchorIndex:
    """The session's anchors, from the shared store unless another is given."""
    return (store or STORE).get(session)
