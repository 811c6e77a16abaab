"""Anchors: the facts of a session an agent needs later, found mechanically in every message.

"What did the agent forget?" needs a list of what there was to remember that does not depend on
an LLM's judgement, so it is the same on every run and for every policy: file paths, URLs, commit
SHAs, issue and PR numbers, ids and order numbers, error lines and exception names, numbers with
units, quoted identifiers, every user request and the user's explicit instructions ("always",
"never", "must", "don't", "make sure", "only"). Retention (engine/retention.py) then asks which of
them still reach the model.

API (pure, no Qt; the app reads it):

- `anchors_of(session) -> AnchorIndex`: built once per session and cached by the session's
  identity (`STORE`, an `AnchorStore`, like counting.CountStore). What each message says is kept
  per message text (engine/anchor_cache.py, `MESSAGE_STORE`), so only messages no index has read
  before are extracted: a session read for the first time costs ~0.1 µs per character of text
  (about 1 s of CPU for 10,000 messages of a coding agent holding 8.7 MB, half of it extraction;
  0.1-0.4 s for a bundled sample); a grown session (a followed log after an append), a log re-read
  whole, or a replay's prefixes cost the new messages and one pass over the per-anchor lists (worth
  a worker thread in the app). `build_index(session, previous=index)` carries the index of the
  session this one grew from (`AnchorStore.get` finds it): only the new messages and the last
  `TAIL` (which a loader may still rebuild) are read, the older texts are searched only for the
  words the new anchors bring (one scan per group of words that hold a shorter one, `_bases`), and
  what the old messages name is taken word by word (`_Growth.holders`), not by a pass over them:
  about a fifth of a read from nothing at 10,000 messages.
- `AnchorIndex.anchors`: every `Anchor` (kind, value, first_index, first_id, messages, role),
  ordered by the message that first said it; `by_message[i]`: the anchor ids message i holds;
  `ids_in_text(text)`: the anchors a text (a summary, the system prompt, a truncated message)
  still carries, memoised per text.
- `extract(text, role)`: the (kind, key, value) triples of one text.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import threading
import time
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .anchor_cache import MESSAGE_STORE, MessageAnchors, Said
from .gc_pause import without_gc
from .session import Session
from .voices import MACHINE_VOICES, SWE_AGENT_FORMATS, own_words, split_template, voices_of
from .voices import voices_from as _voices

#: Anchor kinds, in the order a "lost" list shows them (what the user asked for comes first).
KINDS: tuple[str, ...] = ("request", "instruction", "requirement", "path", "lines", "url", "issue", "id", "commit", "error", "exception",
                          "quantity", "quoted")
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
#: A run's first hook and the run after it: what PATH_HOOK_RE finds, then PATH_RUN_RE from its end, in one match.
PATH_HOOK_RUN_RE = re.compile(r"(?:/|\.(?:" + _EXT + r")(?![\w]))[\w.@+~/-]*")
URL_HOOK_RE = re.compile(r"://")
#: (No backslash: a URL holds none, and in text kept as a JSON string one ends it: `orders?\\"`.)
URL_TAIL_RE = re.compile(r"(?:\[[0-9A-Fa-f:.]+\])?[^\s\"'<>`)\]}\\]+")
SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp"})
UUID_HOOK_RE = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
SHA_RE = re.compile(r"[0-9a-f]{7,64}")
#: Git abbreviates a commit to 7-12 hex digits and writes it whole as 40 (SHA-1) or 64 (SHA-256);
#: other lengths are someone else's ids (a Claude Code sub-agent's `agentId` has 17).
SHA_LENGTHS = frozenset({*range(7, 13), 40, 64})
HASH_ISSUE_RE = re.compile(r"#(\d{1,7})(?!\w)")
GH_ISSUE_RE = re.compile(r"GH-(\d+)(?!\w)")
WORD_ISSUE_RE = re.compile(r"(pr|mr|pull request|pull|issue|ticket|bug)[ \t]*#?[ \t]*(\d+)(?!\w)")
ID_RE = re.compile(r"[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+)*-\d{2,}[A-Z0-9]*(?![\w-])")
PREFIXED_ID_RE = re.compile(r"_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{8,}(?!\w)")
NOT_IDS = frozenset({"UTF", "ISO", "SHA", "MD", "AES", "RSA", "HTTP", "TLS", "SSL", "IPV", "X", "ES", "UTF8", "GPT", "COVID", "PEP", "WCAG"})
EXCEPTION_RE = re.compile(r"(?:Error|Exception|Warning|Interrupt|Exit)(?!\w)")
UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
#: An error line from its start: a keyword (an exception's name, error, FAILED, fatal, panic...) as its
#: first word, its optional `[code]`, then `:`, ` - ` or `!`.
_ERROR_LINE = (r"[ \t>|]*(?:E[ \t]+)?(?:(?:[\w.]*(?:Error|Exception)|error|Error|ERROR|FAILED|FAIL|FATAL|Fatal|fatal|panic)"
               r"(?:\[\w+\])?(?::|[ \t]+-[ \t]|!)).*")
#: Every error line of a text (what `error_lines` finds, and how a reader states it).
ERROR_LINE_RE = re.compile("^" + _ERROR_LINE + "$", re.M)
#: ERROR_LINE_RE's lines, found at line starts only: the text's first line, then each line after a
#: newline (group 1), which `re` finds by its literal first character. ERROR_LINE_RE's `^` is tried at
#: every character, and the searches that guarded it (a keyword and its mark anywhere: a text whose own
#: words say "error" hundreds of times passed them, then was scanned) cost 3x these on a coding agent's
#: session and on the real logs of tests/data/real.
ERROR_FIRST_LINE_RE = re.compile(_ERROR_LINE)
ERROR_NEXT_LINE_RE = re.compile(r"\n(" + _ERROR_LINE + ")")


def error_lines(text: str) -> list[str]:
    """The error lines of a text, in order: `m.group(0) for m in ERROR_LINE_RE.finditer(text)`."""
    first = ERROR_FIRST_LINE_RE.match(text)
    found = ERROR_NEXT_LINE_RE.findall(text) if "\n" in text else []
    if first is not None:
        found.insert(0, first.group(0))
    return found


_UNIT = (r"ms|milliseconds?|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|months?|years?|"
         r"[KMGTP]i?B|kB|bytes?|tokens?|req/(?:s|sec|min|h)|requests?/(?:s|sec|min|h)|rps|rpm|qps|kg|lbs?|km|cm|mm|USD|EUR|GBP")
MONEY_RE = re.compile(r"[$€£][ \t]?\d(?:[\d,]*\d)?(?:\.\d+)?(?:[ \t]?[kKmM](?!\w))?")
#: The last digit of a number and its unit: the number's other digits are read leftwards in Python.
UNIT_HOOK_RE = re.compile(r"\d(?P<pct>[ \t]?%)|\d[ \t]?(?P<unit>" + _UNIT + r")(?![\w/])")
NUMBER_CHARS = frozenset("0123456789.,")
BACKTICK_RE = re.compile(r"`([^`\n]{1,80})`")
#: A backticked run of escape sequences (`\\n`, `\\r\\n`): a line ending named in code, no fact to lose.
ESCAPES_ONLY_RE = re.compile(r"(?:\\[nrt0])+")
QUOTED_RE = re.compile(r"(['\"])([A-Za-z_][\w.\-/]{1,80})\1(?!\s*:)")
#: Words that make a sentence a rule rather than a remark ("exactly ... and nothing else", "no tools").
CONSTRAINT_RE = re.compile(r"\b(?:always|never|must(?:n't)?|don'?t|do not|make sure|only|ensure|avoid|exactly|nothing else|without|instead|"
                           r"no (?!one\b)\w+|at (?:most|least)|should(?:n't)?|keep)\b", re.I)
INSTRUCTION_HOOK_RE = re.compile(r"always|never|must|don|do not|make sure|only|ensure|avoid|exactly|nothing else|without|instead|no |"
                                 r"at most|at least|should|keep|need|have to|has to|you to")
#: How a rule begins: "Never ...", "Don't ...", "No tools, ...", "Make sure ...".
RULE_START_RE = re.compile(r"(?:please[ ,]+)?(?:never|always|don'?t|do not|make sure|ensure|avoid|only|no (?!worries|problem|thanks|idea|way"
                           r"|matter|luck|clue|rush|one)\w+)\b", re.I)
#: Imperative verbs a rule with a constraint word starts with ("Reply with exactly the word ALPHA and nothing else.").
IMPERATIVES = frozenset("""reply answer respond write use keep run fix add remove delete make create update change move put give tell say show
list check read do stop start return include exclude call send commit push open close limit leave set print output format name rename
test document follow prefer treat skip ignore wait ask confirm stay try build deploy merge""".split())
#: "X must / should / needs to ..." with a subject other than the speaker: a rule about X.
MODAL_RE = re.compile(r"\b(?:must(?:n't| not| never| always)?|should(?:n't| not| never| always)?|needs? to|has to|have to|cannot|can't)\b(?! have\b)",
                      re.I)
#: "I want you to ...", "I need you to ...".
WANT_RE = re.compile(r"\bI(?:'d| would)? (?:want|need|like|expect) you to\b", re.I)
#: Lines that are code or headings, not sentences the user addresses to the agent.
NOT_PROSE_PREFIXES = ("#", "//", "/*", "--", "$ ", ">>>")
#: Line numbers and ranges: "lines 400-458", "line 17", SWE-agent's "edit 287:295" / "goto 583".
LINES_RE = re.compile(r"(?:[Ll]ines?|edit|goto)[ \t]+(\d{1,6})(?:[ \t]*(?:-|–|to|:|,)[ \t]*(\d{1,6}))?(?![\w/]|[.:]\d)")
LINES_HOOK_RE = re.compile(r"ines?[ \t]+\d")
EDIT_HOOK_RE = re.compile(r"(?:edit|goto)[ \t]+\d")
OID_HOOK_RE = re.compile(r"\.\d+\.\d+\.\d+\.\d")
#: Dotted numeric ids (DICOM UIDs, OIDs: 1.2.840.10008.1.2.1): five parts or more, so no version or IP address.
OID_RE = re.compile(r"\d+(?:\.\d+){4,}")
#: Lowercase tracker ids with a dotted child number (beads' `spotter-dov.1`).
LOWER_ID_RE = re.compile(r"-[a-z0-9]{2,12}(?:\.\d+)+")
#: Headings under which an issue lists what must hold (read by a tool: the requirements arrive as tool output).
REQUIREMENT_HEADING_RE = re.compile(r"^[ \t#*]*(?:acceptance (?:criteria|tests?)|definition of done|objectives?)\b.*$", re.I | re.M)
BULLET_RE = re.compile(r"^[ \t]*(?:[-*•]|\d{1,2}[.)])[ \t]+(?:\[[ xX]\][ \t]+)?(.+)$")
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


#: A run of path characters -> the anchor it names as extracted, ("path", key, value), or () for none:
#: the verdict depends on the run alone, and a session names the same files again and again (most
#: of extraction's time was these checks).
_PATH_VERDICTS: dict[str, tuple[str, ...]] = {}
_PATH_VERDICTS_LIMIT = 100_000
_PATH_VERDICT_CHARS = 200


def json_escaped(text: str) -> bool:
    """Whether a text's backslashes are JSON string escapes (a tool output recorded as a JSON string,
    as Codex 0.46 kept `{"output": "…\\n…"}`), not Windows paths' separators: two or more `\\n`
    and nearly every backslash part of an escape (`C:\\Users\\name\\notes.txt` is not)."""
    newlines = text.count("\\n")
    if newlines < 2:
        return False
    escapes = newlines + text.count('\\"') + text.count("\\t") + text.count("\\r") + 2 * text.count("\\\\")
    return escapes >= 0.8 * text.count("\\")


def _path_in_run(run: str) -> str:
    """The file path a run of path characters around a hook names, or "" (a fraction, a date, words
    joined by slashes, a bare extension)."""
    path = run.rstrip(".,:-")
    p = PATH_RE.fullmatch(path)
    if p is None or len(path) < 3:
        return ""
    if "/" in path:
        if not any(c.isalpha() for c in path) or path.split("/", 1)[0].replace(".", "").replace(",", "").isdigit():
            return ""  # 1/2, 2024/01/02, 12.99/month: fractions, dates, rates
        if path.count("/") == 1 and "." not in path and not path.startswith(("/", "~", "./")):
            return ""  # and/or, yes/no, read/write
        if path.strip("/") == "" or path.startswith("//"):
            return ""
        last = path.rstrip("/").rsplit("/", 1)[-1]
        if last.isdigit() and not path.startswith(("/", "~", "./")):
            return ""  # `Module.function/1`: an Elixir or Erlang function and its arity, not a file
        if ("." not in path and not path.endswith("/") and not path.startswith(("/", "~", "./", "../"))
                and all(part.isalpha() for part in path.split("/"))):
            return ""  # message/type/tool: words joined by slashes in prose
    elif not PATH_HOOK_RE.search(path) or path.startswith(".") and path.count(".") == 1 and path != ".env":
        return ""  # a bare extension (".py") names no file
    return path


#: Every ASCII character made "x" when it is a lower-case hex digit, else " ": SHA_RE needs "xxxxxxx".
_HEX_MARKS = str.maketrans({chr(c): "x" if chr(c) in "0123456789abcdef" else " " for c in range(128)})


def _hex_run(text: str) -> bool:
    """Whether SHA_RE can match: seven lower-case hex digits in a row. In prose most letters are
    not hex, so SHA_RE tries and fails at each a-f and digit; an ASCII text is first marked in C
    (`str.translate`, about a tenth of that scan) and the scan is skipped when no run is long
    enough. Other texts (the marking would go character by character) are scanned."""
    return not text.isascii() or "xxxxxxx" in text.translate(_HEX_MARKS)


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
    lowered = text.lower()
    # Whether the text holds an upper-case letter: lowering changes every A-Z. The patterns and
    # guards that need one (ids, exception names, "PR 12", "ERROR") are skipped without it: a tool's
    # listing or log in lower case is read by about a dozen fewer passes.
    upper = lowered != text
    if "://" in text:
        for m in URL_HOOK_RE.finditer(text):
            a = m.start()
            while a > 0 and "a" <= text[a - 1].lower() <= "z" and m.start() - a < 6:
                a -= 1
            tail = URL_TAIL_RE.match(text, m.end())
            if text[a:m.start()].lower() not in SCHEMES or tail is None:
                continue
            url = text[a:tail.end()].rstrip(".,;:!?'\"[")
            if sum(c.isalnum() for c in url[m.end() - a:]) < 2:
                continue  # `http://[`, `https://` alone: a pattern in code, no address
            add("url", url, a, a + len(url), url.lower().rstrip("/"))
    if "-" in text:
        for m in UUID_HOOK_RE.finditer(text):
            a, b = m.start() - 8, m.end() + 12
            if a >= 0 and UUID_RE.fullmatch(text, a, b) and (a == 0 or text[a - 1] not in WORD_CHARS) and (b == n or text[b] not in WORD_CHARS):
                add("id", text[a:b], a, b)
    if upper and "GH-" in text:
        for m in GH_ISSUE_RE.finditer(text):
            add("issue", m.group(0), m.start(), m.end(), m.group(0).lower())
    if upper and ("PR" in text or "MR" in text) or "ull request" in lowered or "issue " in lowered or "ticket " in lowered or "bug " in lowered:
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
    verdicts = _PATH_VERDICTS
    # Runs are disjoint and read left to right, so the paths never overlap one another: when no
    # kind before them claimed a stretch, each is taken as found and their spans joined at the end.
    unclaimed = not spans.starts
    path_starts: list[int] = []
    path_ends: list[int] = []
    # Each match is a run's first hook and the rest of the run after it; the next hook is looked for
    # after that run (`src/a/b.py` has three hooks, one run): a hook never straddles a run's end (it
    # is made of run characters), so a run is read once, not once per hook.
    match_run = PATH_RUN_RE.match
    reverse = ""
    escaped: bool | None = None  # (`json_escaped(text)`, read at the first run after a backslash)
    for m in PATH_HOOK_RUN_RE.finditer(text):
        if not reverse:
            reverse = text[::-1]
        hook, b = m.span()
        a = n - match_run(reverse, n - hook).end()  # type: ignore[union-attr]  # the run leftwards, read in the reversed text
        if a and text[a - 1] in ":@<":  # user@host:path, a URL's tail, a closing tag (`</command-name>`)
            continue
        if a and text[a - 1] == "\\" and text[a] in "ntr":
            if escaped is None:
                escaped = json_escaped(text)
            if escaped:  # `\ntests/x.py` in a tool output kept as a JSON string: the path starts after the escape
                a += 1
        run = text[a:b]
        found = verdicts.get(run)
        if found is None:
            path = _path_in_run(run)
            found = ("path", path.lower(), path) if path else ()
            if len(run) <= _PATH_VERDICT_CHARS:  # a long run (a base64 blob) is rarely seen twice
                if len(verdicts) >= _PATH_VERDICTS_LIMIT:
                    verdicts.clear()
                verdicts[run] = found
        if found:
            path = found[2]
            if unclaimed:
                path_starts.append(a)
                path_ends.append(a + len(path))
                out.append(found)  # the anchor as extracted (kind, key, value): one tuple per run, shared
            else:
                add("path", path, a, a + len(path))
    if path_starts:
        spans.starts, spans.ends = path_starts, path_ends
    if "." in text:
        if "-" in text:
            for m in LOWER_ID_RE.finditer(text):
                k = m.start()
                while k > 0 and ("a" <= text[k - 1] <= "z" or "0" <= text[k - 1] <= "9"):
                    k -= 1
                b = m.end()
                before_ok = m.start() - k >= 2 and "a" <= text[k] <= "z" and (k == 0 or text[k - 1] not in WORD_CHARS and text[k - 1] not in "-./")
                after_ok = b == n or text[b] not in WORD_CHARS and text[b] not in "-/" and not (text[b] == "." and text[b + 1:b + 2] in WORD_CHARS)
                if before_ok and after_ok:
                    add("id", text[k:b], k, b)
        for hook in OID_HOOK_RE.finditer(text):
            a = hook.start()
            while a > 0 and "0" <= text[a - 1] <= "9":
                a -= 1
            m = OID_RE.match(text, a)
            if m is None:
                continue
            b = m.end()
            if (a == 0 or text[a - 1] not in WORD_CHARS and text[a - 1] != ".") and (b == n or text[b] not in WORD_CHARS and text[b:b + 2] != ".0"):
                add("id", m.group(0), a, b)
    for m in ID_RE.finditer(text) if upper else ():
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
    for m in SHA_RE.finditer(text) if _hex_run(text) else ():
        a, b = m.span()
        value = m.group(0)
        if (a and text[a - 1] in WORD_CHARS or text[a - 1:a] == "-" or b < len(text) and (text[b] in WORD_CHARS or text[b] == "-")
                or value.isdigit() or value.isalpha() or len(value) not in SHA_LENGTHS):
            continue
        add("commit", value, a, b, value[:7])
    for line in error_lines(text):
        line = _clip(line.strip(" \t>|"), 200)
        out.append(("error", norm(line), line))
    if upper and ("Error" in text or "Exception" in text or "Warning" in text or "Interrupt" in text or "Exit" in text):  # EXCEPTION_RE's words
        for m in EXCEPTION_RE.finditer(text):
            k = m.start()
            while k > 0 and text[k - 1] in WORD_CHARS:
                k -= 1
            if k < m.start() and text[k] in UPPER and (k == 0 or text[k - 1] != "."):
                add("exception", text[k:m.end()], k, m.end(), text[k:m.end()])
    line_starts = [m.start() - 1 for m in LINES_HOOK_RE.finditer(text) if m.start() and text[m.start() - 1] in "lL"] if "ine" in text else []
    if "edit " in text or "goto " in text:
        line_starts += [m.start() for m in EDIT_HOOK_RE.finditer(text)]
    for a in line_starts:
        m = LINES_RE.match(text, a)
        if m is not None:
            if a and text[a - 1] in WORD_CHARS:
                continue
            first, last = m.group(1), m.group(2)
            value = f"lines {first}-{last}" if last else f"line {first}"
            add("lines", value, a, m.end(), value)
    if role == "tool":  # a tool's measurements (`Wall time: 1.0037 seconds`) are not values anyone asked about
        if "cceptance" in text or "efinition of done" in text or "bjective" in text:
            for sentence in requirements(text):
                out.append(("requirement", norm(sentence), sentence))
    elif "$" in text or "€" in text or "£" in text:
        for m in MONEY_RE.finditer(text):
            a = m.start()
            if a and text[a - 1] in WORD_CHARS:
                continue
            value = m.group(0).replace(" ", "").replace("\t", "")
            add("quantity", value, a, m.end(), value.lower().replace(",", ""))
    for m in UNIT_HOOK_RE.finditer(text) if role != "tool" else ():
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
            if inner and text[m.end():m.end() + 1] != "`" and text[m.start() - 1:m.start()] != "`" and not ESCAPES_ONLY_RE.fullmatch(inner):
                add("quoted", inner, m.start(1), m.end(1))
    if role != "tool":  # a tool's JSON would make every string value a "quoted identifier"
        for m in QUOTED_RE.finditer(text):
            a = m.start()
            if a and (text[a - 1] in WORD_CHARS or text[a - 1] == "\\"):
                continue
            inner = m.group(2)
            if "_" in inner or "." in inner.strip(".") or "/" in inner or any(x.islower() and y.isupper() for x, y in zip(inner, inner[1:], strict=False)):
                add("quoted", inner, m.start(2), m.end(2))
    if role == "user":
        words = own_words(text)
        if INSTRUCTION_HOOK_RE.search(words.lower()):
            for sentence in instructions(words):
                out.append(("instruction", norm(sentence), sentence))
    return out


def requirements(text: str) -> list[str]:
    """The bullets under an "Acceptance criteria" / "Acceptance tests" / "Definition of done" heading
    of a text a tool read (an issue, a ticket): what the work must satisfy, said by whoever filed it."""
    found: list[str] = []
    for heading in REQUIREMENT_HEADING_RE.finditer(text):
        if len(heading.group(0)) > 80:
            continue  # a sentence that mentions requirements, not a heading
        lines = text[heading.end():heading.end() + 6000].split("\n")[1:]
        for line in lines:
            if not line.strip():
                if found:
                    break
                continue
            bullet = BULLET_RE.match(line)
            if bullet is None:
                break
            item = _clip(bullet.group(1).strip(), 300)
            if len(item) > 3 and item not in found:
                found.append(item)
    return found


def instructions(text: str) -> list[str]:
    """The sentences of a user's own words that state a rule: "Never push to main.", "Reply with
    exactly the word ALPHA and nothing else.", "No tools, no files, just prose.", "Health checks
    must never be limited.". Not a remark that happens to hold such a word ("I only placed one
    order", "I must have typed it wrong"), a question, a heading or a code comment."""
    if not INSTRUCTION_HOOK_RE.search(text.lower()):
        return []
    if any(line.lstrip().startswith(NOT_PROSE_PREFIXES) for line in text.split("\n")):
        text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith(NOT_PROSE_PREFIXES))
    found: list[str] = []
    for m in SENTENCE_RE.finditer(text):
        sentence = _clip(m.group(0).strip(" \t\n-*•>"), 300)
        if len(sentence) > 3 and sentence not in found and is_instruction(sentence):
            found.append(sentence)
    return found


def is_instruction(sentence: str) -> bool:
    """Whether one sentence (of the user's own words) states a rule for the agent."""
    s = sentence.strip()
    if s.endswith("?") or len(s) > 300:
        return False
    if RULE_START_RE.match(s) or WANT_RE.search(s):
        return True
    first = s.split(None, 1)[0].lower().strip(",.:;!") if s else ""
    if first == "please":
        parts = s.split(None, 2)
        first = parts[1].lower().strip(",.:;!") if len(parts) > 1 else ""
    if first in IMPERATIVES and CONSTRAINT_RE.search(s):
        return True
    modal = MODAL_RE.search(s)
    if modal is None:
        return False
    subject = s[:modal.start()].strip().lower()
    # "I must have typed it wrong", "I can't promise": the speaker about themselves; "you must", "the tests must pass": a rule
    return bool(subject) and subject.split()[-1].strip(",;:") not in ("i", "i'm", "i've", "i'd", "it", "that", "this", "there", "which", "what",
                                                                     "if", "he", "she", "they", "who")


@dataclass(frozen=True)
class Anchor:
    """One fact: where it was first said, and every message it appears in (in any of its forms)."""

    id: int
    kind: str
    key: str
    #: As first written (an instruction is its sentence; a request the start of the user's own
    #: words; a path its longest form).
    value: str
    first_index: int
    first_id: str
    #: The role of the message that first said it.
    role: str
    #: Every session message index it appears in, in order.
    messages: tuple[int, ...]
    #: The first user turn's request (or, for a turn that is only instructions, its instructions).
    opening: bool = False
    #: Whose words first said it (engine/voices.py): user, quoted, harness, observation, assistant, tool, system.
    voice: str = ""
    #: The first message in which the user's own (or pasted) words name it, else -1.
    user_named: int = -1

    @property
    def needle(self) -> str:
        """What a text must contain (normalised) to carry an instruction or request on."""
        return self.key if self.kind in ("instruction", "requirement") else (norm(self.value.rstrip("…"))[:60] if self.kind == "request" else self.key)

    def label(self, width: int = 72) -> str:
        """The anchor as a "lost" list shows it: `code`, #issue, 'what the user said'."""
        if self.kind in USER_KINDS or self.kind == "requirement":
            return f"'{_clip(self.value, width)}'"
        if self.kind in ("path", "quoted", "commit", "exception", "id", "url"):
            return f"`{self.value}`"
        return self.value

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "value": self.value, "first_index": self.first_index, "first_id": self.first_id, "role": self.role,
                "voice": self.voice, "messages": list(self.messages), **({"opening": True} if self.opening else {})}


ANCHOR_FIELDS = tuple(f.name for f in dataclasses.fields(Anchor))


def make_anchor(*values: Any) -> Anchor:
    """`Anchor(*values)` without the frozen dataclass's `__init__` (one `object.__setattr__` per
    field): an index of 10,000 messages makes thousands, and a forked child's are rebuilt from
    their fields (engine/anchors_ahead.py). The same object: its fields in its `__dict__`."""
    anchor = object.__new__(Anchor)
    anchor.__dict__.update(zip(ANCHOR_FIELDS, values, strict=True))
    return anchor


def _order(anchor: Anchor) -> tuple[int, int, int]:
    """User requests and instructions first (the opening request at the top), then by first said."""
    rank = 0 if anchor.opening else (1 if anchor.kind == "instruction" else (2 if anchor.kind == "request" else 3))
    return (rank, anchor.first_index, anchor.id)


def ordered(anchors: Iterable[Anchor]) -> list[Anchor]:
    return sorted(anchors, key=_order)


#: Kinds a single token can carry, found in a text by its token set (`AnchorIndex.mentions`).
TOKEN_KINDS = frozenset({"path", "url", "issue", "id", "commit", "exception", "quoted"})
#: What separates tokens when a text is searched for anchors it names in any form (code included).
TOKEN_SPLIT_RE = re.compile(r"[\s`'\"()\[\]{}<>,;!?=*|:]+")


def _path_forms(path: str) -> str:
    """A path's form for comparing: lower case, without `./`, `~/` or a trailing slash."""
    p = path.lower().rstrip("/")
    while p.startswith("./"):
        p = p[2:]
    if p.startswith("~/"):
        p = p[2:]
    return p


class AnchorIndex:
    """Every anchor of one session, with the per-message lists retention reads on every re-plan.

    `mentions(text)` is the one matcher: it says which anchors a text carries, whether the text is
    a message (`by_message`), a summary, the system prompt or a cut message's sent part, and `where`
    asks it about a term that names an anchor. An anchor is carried by a text that yields the same
    key, names it in any of its forms as a token (unquoted in code, a path's relative or absolute
    form), or, for the user's words, repeats them."""

    def __init__(self, session: Session, anchors: tuple[Anchor, ...], by_message: tuple[tuple[int, ...], ...],
                 forms: dict[str, int] | None = None, aliases: dict[tuple[str, str], int] | None = None,
                 voices: tuple[str, ...] = (), phrases: dict[str, list[tuple[int, str]]] | None = None) -> None:
        self.session = session
        self.anchors = anchors
        self.by_message = by_message
        self.by_key: dict[tuple[str, str], int] = {(a.kind, a.key): a.id for a in anchors}
        self.by_key.update(aliases or {})
        #: Every single-token form (lower case) -> the anchor it names.
        self.forms: dict[str, int] = forms if forms is not None else {a.key: a.id for a in anchors if a.kind in TOKEN_KINDS and " " not in a.key}
        #: Anchors that are no single token (`import re`, `super().__call__(value)`, an error line), by their
        #: longest token: a text holding that token is searched for the whole value.
        self.phrases: dict[str, list[tuple[int, str]]] = phrases if phrases is not None else phrases_of(anchors)
        self.voices = voices or voices_of(session)
        self.first_indices: tuple[int, ...] = tuple(a.first_index for a in anchors)
        self.user_anchors: tuple[Anchor, ...] = tuple(a for a in anchors if a.kind in USER_KINDS or a.kind == "requirement")
        # Each user anchor's needle, normalised once (a replay asks every summary text for all of them).
        self._needles: tuple[tuple[int, str], ...] = tuple((a.id, n) for a in self.user_anchors if (n := a.needle))
        self._texts: dict[tuple[str, str], frozenset[int]] = {}
        #: Each anchor's rank among the lost and its sort key (engine/ranking.py), by anchor id, once asked:
        #: a replay ranks the same anchors at every loss.
        self.rank_memo: dict[int, Any] = {}
        #: Every anchor's place in rank order and its rank, by anchor id (`ranking.ranked_often`), once asked.
        self.rank_order: tuple[list[int], list[Any]] | None = None
        self._lock = threading.Lock()
        #: What building the index of this session grown by appended messages starts from (`build_index`).
        self._growth: _Growth | None = None

    def __len__(self) -> int:
        return len(self.anchors)

    def token_hits(self, text: str, tails: bool = False) -> set[int]:
        """The anchors a text names as tokens, in any form: a set intersection at C speed (the forms
        include each with a trailing dot or dash, and a path's unambiguous tails), then the phrases
        whose longest token the text holds. With `tails`, a path form never seen in the session
        (a summary's) is looked up by its shorter tails too."""
        forms = self.forms
        if not forms and not self.phrases:
            return set()
        lowered = text.lower()
        tokens = _tokens(lowered)
        hits = {forms[t] for t in tokens & forms.keys()}
        if self.phrases:
            for t in tokens & self.phrases.keys():
                hits.update(k for k, phrase in self.phrases[t] if phrase in lowered)
        if tails:
            for t in tokens - forms.keys():
                if "/" in t:
                    p = _path_forms(t.rstrip(".-"))
                    while "/" in p:
                        p = p.split("/", 1)[1]
                        k = forms.get(p)
                        if k is not None:
                            hits.add(k)
                            break
        return hits

    def mentions(self, text: str, role: str = "assistant") -> frozenset[int]:
        """The anchors a text carries (see the class docstring). Memoised per text (summaries and
        the system prompt recur turn after turn)."""
        memo = (role, text)
        found = self._texts.get(memo)
        if found is not None:
            return found
        by_key = self.by_key
        ids = {by_key[(kind, key)] for kind, key, _ in extract(text, role) if (kind, key) in by_key}
        ids |= self.token_hits(text, tails=True)
        if self._needles:
            flat = norm(text)
            ids.update(k for k, needle in self._needles if needle in flat)
        found = frozenset(ids)
        with self._lock:
            if len(self._texts) > 20_000:
                self._texts.clear()
            self._texts[memo] = found
        return found

    #: The same matcher under its earlier name.
    ids_in_text = mentions

    def find(self, term: str) -> Anchor | None:
        """The anchor a search term names exactly (its value, key or any form), else None."""
        t = term.strip().lower()
        if not t:
            return None
        k = self.forms.get(t)
        if k is None and "/" in t:
            k = self.forms.get(_path_forms(t))
        if k is not None:
            return self.anchors[k]
        for a in self.anchors:
            if a.value.lower() == t or a.key == t or (a.kind in USER_KINDS and a.key == norm(t)):
                return a
        return None

    def search(self, term: str) -> list[Anchor]:
        """Anchors whose value contains `term` (case-insensitive)."""
        needle = term.lower()
        return [a for a in self.anchors if needle in a.value.lower()]


#: Words too common to pick the texts a phrase is searched in.
COMMON_WORDS = frozenset("the and for with from that this not you are was but all can has have will its use get set run def let var".split())
#: Kinds whose value, when it is more than one token, is searched for as it is written.
PHRASE_KINDS = frozenset({"path", "url", "issue", "id", "commit", "exception", "quoted"})


def phrases_of(anchors: Iterable[Anchor]) -> dict[str, list[tuple[int, str]]]:
    """Multi-token anchors by their longest token (see `AnchorIndex.phrases`)."""
    return _phrases((a.id, a.kind, a.value) for a in anchors)


def _phrases(anchors: Iterable[tuple[int, str, str]]) -> dict[str, list[tuple[int, str]]]:
    """`phrases_of` from each anchor's (id, kind, value): `build_index` asks it before its anchors exist."""
    out: dict[str, list[tuple[int, str]]] = {}
    for ident, kind, value in anchors:
        if kind not in PHRASE_KINDS:
            continue
        value = value.lower().rstrip("…")
        tokens = [t for t in TOKEN_SPLIT_RE.split(value) if t]
        if len(tokens) > 1 or (tokens and tokens[0] != value):
            trigger = max(tokens, key=len)
            if len(trigger) >= 3 and trigger not in COMMON_WORDS:
                out.setdefault(trigger, []).append((ident, value))
    return out


def _merge_paths(first: dict[tuple[str, str], list[Any]]) -> dict[tuple[str, str], tuple[str, str]]:
    """One fact, one anchor: `spotter.css`, `priv/static/assets/spotter.css` and its absolute form
    name one file. Each path whose form is a component suffix of longer paths that all end in the
    same longest one is folded into it; a suffix two different files share (`config.ex` of two
    folders) stays its own anchor. Returns old key -> new key."""
    forms = {key: _path_forms(entry[2]) for (kind, key), entry in first.items() if kind == "path"}
    if len(forms) < 2:
        return {}
    owners: dict[str, set[str]] = {}
    for key, form in forms.items():
        parts = form.lstrip("/").split("/")
        for i in range(1, len(parts)):
            owners.setdefault("/".join(parts[i:]), set()).add(key)
    merged: dict[tuple[str, str], tuple[str, str]] = {}
    for key, form in forms.items():
        longer = owners.get(form.lstrip("/"))
        if not longer:
            continue
        tops = {k for k in longer if not owners.get(forms[k].lstrip("/"))}
        if len(tops) == 1:
            top = next(iter(tops))
            if top != key:
                merged[("path", key)] = ("path", top)
    return merged


def said_in(text: str, voice: str, role: str, swe: bool) -> Said:
    """What one message says: per voice that said them, each (kind, key, value), and whether it is a
    user turn holding a request or instruction. Depends only on its arguments, so it is kept per message
    (engine/anchor_cache.py). Requests are the user's own words (each user turn its own anchor;
    harness text and observations are not requests)."""
    if not text:
        return (), False
    fmt = "swe-agent" if swe else ""
    role = "user" if voice == "user" else ("tool" if voice in MACHINE_VOICES else ("quoted" if voice == "quoted" else role))
    task, template = split_template(text, fmt) if voice == "user" else (text, "")
    found = extract(task, role)
    if voice in ("user", "quoted") and text.strip():
        words = own_words(text, fmt).strip() if voice == "user" else ""
        key = norm(words or text)[:300]
        rules = [k for kind, k, _ in found if kind == "instruction"]
        if rules != [key]:  # a turn that is one instruction ("Reply with exactly ...") is that instruction, not also a request
            found.append(("request", key, _clip(words or text, 160)))
    said: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = ((voice, tuple(found)),)
    if template:  # the task template wrapped around a coding agent's issue is the harness's
        said += (("harness", tuple(extract(template, "tool"))),)
    return said, voice in ("user", "quoted") and any(kind in USER_KINDS for kind, _, _ in found)


#: What separates tokens, one character at a time (`TOKEN_SPLIT_RE` without its `\\s`: white space
#: is asked of `str.isspace`, as the pattern's `\\s` does).
_SEPARATORS = frozenset("`'\"()[]{}<>,;!?=*|:")
#: Every separator but white space made a space, so that `str.split()` (which splits at what
#: `str.isspace` calls white space, as `\\s` does) cuts where `TOKEN_SPLIT_RE` does.
_TO_SPACE = str.maketrans(dict.fromkeys(_SEPARATORS, " "))
#: `_TO_SPACE` for the bytes of an ASCII text: `bytes.translate` reads a 256-byte table where
#: `str.translate` looks each character up in a dict (8.7 MB of text: about 40 ms -> 10 ms).
_TO_SPACE_BYTES = bytes(ord(" ") if chr(c) in _SEPARATORS else c for c in range(256))


def _token_list(lowered: str) -> list[str]:
    """The tokens `TOKEN_SPLIT_RE.split(lowered)` gives, as a list that may repeat one (intersect
    it with the words wanted: cheaper than a set of every token). About twice as fast as the
    pattern: `str.translate` and `str.split` run in C without the regular expression engine (an
    ASCII text is translated as bytes and read back: the same string). The pattern's split also
    yields "" when the text is empty or starts or ends with a separator."""
    if lowered.isascii():
        spaced = lowered.encode("ascii").translate(_TO_SPACE_BYTES).decode("ascii")
    else:
        spaced = lowered.translate(_TO_SPACE)
    tokens = spaced.split()
    if not lowered or lowered[0] in _SEPARATORS or lowered[0].isspace() or lowered[-1] in _SEPARATORS or lowered[-1].isspace():
        tokens.append("")
    return tokens


def _tokens(lowered: str) -> set[str]:
    return set(_token_list(lowered))


#: Characters of lowered text per piece of a grown session's search corpus (`_Lowered`): one
#: `str.find` over a piece holds the interpreter for about a millisecond.
PIECE_CHARS = 4_000_000


def _bases(words: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
    """The words grouped by a shorter word each holds, among them: word -> the one it is searched
    through (`w.` and `w-` through `w`, a path through its tail after a slash), and where in the word
    that one starts (its first place: every place the word is found holds it there). A word with
    none is its own group."""
    known = set(words)
    base_of: dict[str, str] = {}

    def base(w: str) -> str:
        found = base_of.get(w)
        if found is None:
            found = w
            if len(w) > 1 and w[-1] in ".-" and w[:-1] in known:
                found = base(w[:-1])
            else:
                at = w.find("/")
                while at >= 0:
                    if w[at + 1:] in known:
                        found = base(w[at + 1:])
                        break
                    at = w.find("/", at + 1)
            base_of[w] = found
        return found

    groups: dict[str, list[tuple[str, int]]] = {}
    for w in dict.fromkeys(words):
        b = base(w)
        groups.setdefault(b, []).append((w, w.find(b)))
    return groups


class _Lowered:
    """A session's message texts in lower case, joined in pieces, so that a word new to a grown
    session is looked for in every old text by one C-speed search per piece instead of lowering
    each text again. Built the first time a grown session needs it; texts are added as it grows."""

    def __init__(self) -> None:
        self.pieces: list[list[str]] = []  # each piece's texts, joined when searched
        self.joined: list[str | None] = []
        self.starts: list[list[int]] = []  # where each text starts in its joined piece
        self.owners: list[list[int]] = []  # the message position of each text
        self.size = 0  # characters in the last piece

    def _open(self) -> None:
        """Start a new piece."""
        self.pieces.append([])
        self.joined.append(None)
        self.starts.append([])
        self.owners.append([])
        self.size = 0

    def add(self, position: int, lowered: str) -> None:
        if not self.pieces or self.size > PIECE_CHARS:
            self._open()
        self.pieces[-1].append(lowered)
        self.starts[-1].append(self.size)
        self.owners[-1].append(position)
        self.joined[-1] = None
        self.size += len(lowered) + 1

    def extend(self, texts: Iterable[tuple[int, str]]) -> None:
        """`add` of each (position, lowered text) in turn, without a call per text: the first growth
        of a 10,000-message session adds them all."""
        texts = list(texts)
        if not texts:
            return
        if not self.pieces or self.size > PIECE_CHARS:
            self._open()
        piece, starts, owners, size = self.pieces[-1], self.starts[-1], self.owners[-1], self.size
        self.joined[-1] = None
        for position, lowered in texts:
            if size > PIECE_CHARS:
                self._open()
                piece, starts, owners, size = self.pieces[-1], self.starts[-1], self.owners[-1], 0
            piece.append(lowered)
            starts.append(size)
            owners.append(position)
            size += len(lowered) + 1
        self.size = size

    def find(self, words: Iterable[str]) -> dict[int, set[str]]:
        """Message position -> the words it holds as tokens (as `_tokens(lowered text)` would find
        them). The interpreter is let go between pieces (a worker must not starve the window).

        Words that hold a shorter one (`src/a.py`, `a.py`, `a.py.`, `a.py-`: the forms and tails
        of one new file) are found through it (`_bases`): one scan of each piece per group, not
        per word, and each place the shorter word is found is checked for the longer ones there."""
        found: dict[int, set[str]] = {}
        words = [w for w in words if w and TOKEN_SPLIT_RE.search(w) is None]  # one with a separator is never a token
        if not words:
            return found
        seps = _SEPARATORS
        groups = _bases(words)
        for k, texts in enumerate(self.pieces):
            piece = self.joined[k]
            if piece is None:
                piece = self.joined[k] = "\n".join(texts) + "\n"
            starts, owners, end = self.starts[k], self.owners[k], len(piece)
            for base, members in groups.items():
                at = piece.find(base)
                while at >= 0:
                    for w, offset in members:
                        a = at - offset
                        b = a + len(w)
                        if a < 0 or b > end or (offset or len(w) != len(base)) and not piece.startswith(w, a):
                            continue
                        before = piece[a - 1] if a else "\n"
                        after = piece[b] if b < end else "\n"
                        if (before in seps or before.isspace()) and (after in seps or after.isspace()):
                            found.setdefault(owners[bisect_right(starts, a) - 1], set()).add(w)
                    at = piece.find(base, at + 1)
            time.sleep(0)
        return found

    def contain(self, values: Iterable[str]) -> dict[str, set[int]]:
        """Value -> the message positions whose lower-case text contains it (anywhere)."""
        out: dict[str, set[int]] = {v: set() for v in values}
        for k, texts in enumerate(self.pieces):
            piece = self.joined[k]
            if piece is None:
                piece = self.joined[k] = "\n".join(texts) + "\n"
            starts, owners = self.starts[k], self.owners[k]
            for v, where in out.items():
                if "\n" in v or not v:  # could span two texts: each text of the piece on its own
                    where.update(owners[j] for j, text in enumerate(texts) if v in text)
                    continue
                at = piece.find(v)
                while at >= 0:
                    where.add(owners[bisect_right(starts, at) - 1])
                    at = piece.find(v, at + 1)
            time.sleep(0)
        return out


class _Growth:
    """What an index keeps so that the index of its session grown by appended messages (a followed
    log) reads only the new messages: what messages[:covered] said (before anchors are folded), the
    words each holds as tokens, and which words every one of them was searched for. The last few
    messages (`TAIL`) are left out of it: a loader may still change them (an assistant message a
    streamed line extends). Used up by the index built from it (extended in place)."""

    def __init__(self) -> None:
        self.messages: tuple[Any, ...] = ()  # the session's messages: those before `covered` must be the grown one's
        self.covered = 0
        self.first: dict[tuple[str, str], list[Any]] = {}
        self.opening_done = False
        self.hits: list[Any] = []  # per covered message: words it holds as tokens (None: no text)
        #: Word searched for -> the covered messages (positions) that hold it as a token: what the
        #: grown index's anchors take from the old messages, word by word, without a pass over them.
        self.holders: dict[str, list[int]] = {}
        self.searched: set[str] = set()  # every covered message was searched for each of these words
        self.voices: tuple[str, ...] = ()
        self.texts: list[str] = []  # per covered message: its text
        self.lowered: _Lowered | None = None
        #: Phrase -> the messages[:phrases_upto] whose lower-case text contains it (`_phrases_in`).
        self.phrases: dict[str, set[int]] = {}
        self.phrases_upto = 0


#: The voices whose words are the user's (typed or pasted).
_USERS = frozenset({"user", "quoted"})
#: Messages at the end of a session an index's growth state leaves out (see `_Growth`).
TAIL = 16


def _said(messages: Sequence[Any], texts: Sequence[str], voices: Sequence[str], swe: bool, store: MessageAnchors, start: int, stop: int
          ) -> list[Said]:
    """What messages[start:stop] say, from `store` (read there, or kept from before)."""
    rest = messages[start:stop]
    return store.said(_keys(rest, voices[start:stop], texts[start:stop], swe), said_in)


def _read(rest: Sequence[Any], saids: Sequence[Said], first: dict[tuple[str, str], list[Any]], opening_done: bool) -> bool:
    """What the messages `rest` say (`saids`, one per message), added to `first` (kind, key -> the
    anchor's fields before folding); returns whether the opening request has been said."""
    for m, (said, user_turn) in zip(rest, saids, strict=True):
        i = m.index
        for by, found in said:
            users = by in _USERS
            for kind, key, value in found:
                k = (kind, key)
                entry = first.get(k)
                if entry is None:
                    opening = not opening_done and users and kind in USER_KINDS
                    entry = first[k] = [kind, key, value, i, m.id, m.role, [i], opening, by, -1]
                elif entry[6][-1] != i:
                    entry[6].append(i)
                if users and entry[9] < 0:
                    entry[9] = i
        if user_turn:
            opening_done = True
    return opening_done


def said_keys(session: Session, start: int, stop: int) -> list[tuple[str, str, bool, str]]:
    """The keys under which `build_index` looks up what messages[start:stop] say in its store
    (anchor_cache.MessageAnchors.said, computed by `said_in`): a caller that reads some messages
    ahead, elsewhere, keeps them under the same keys."""
    rest = session.messages[start:stop]
    return _keys(rest, voices_of(session)[start:stop], [m.text for m in rest], session.format in SWE_AGENT_FORMATS)


def _keys(messages: Sequence[Any], voices: Sequence[str], texts: Sequence[str], swe: bool) -> list[tuple[str, str, bool, str]]:
    """The store's keys of these messages (each with its voice and text)."""
    return [(voice, m.role, swe, text) for m, voice, text in zip(messages, voices, texts, strict=True)]


def _grows(previous: AnchorIndex | None, session: Session) -> bool:
    """Whether `session` holds the messages `previous`'s growth state read (the same objects): the
    last few messages may differ, or more may follow."""
    growth = previous._growth if previous is not None else None
    if growth is None or previous is None or previous.session.format != session.format:
        return False
    old, new, n = growth.messages, session.messages, growth.covered
    return len(new) >= n and (not n or new[n - 1] is old[n - 1]) and all(map(operator.is_, old[:n], new))


@without_gc
def build_index(session: Session, store: MessageAnchors | None = None, previous: AnchorIndex | None = None, grows: bool = True,
                said: Sequence[Said] | None = None) -> AnchorIndex:
    """Read every message once (or take what it says from `store`, where an earlier index of any
    session read it: see engine/anchor_cache.py). Anchors are then folded (one fact, one anchor),
    every message that names one in any form is added to it, and they are ordered by the message
    that first said them.

    With `previous`, the index of a session this one grew from by appended messages (a followed
    log: the same message objects, then new ones), only the new messages are read, and the old ones
    are searched only for the words the new ones made anchors of: the result is the same as
    reading the session from scratch.

    `grows=False` keeps nothing to grow from (`_growth` is None: an index of a session grown from
    this one reads it whole): for an index whose session never grows, such as the one a forked
    child builds and sends (engine/anchors_ahead.py), the copies kept for growth are never read.

    `said`, with `grows=False` and no `previous`: what every message says, read by the caller
    (`said_in` of each of `said_keys(session, 0, len(messages))`, in order). The store is then
    neither read nor filled, and each text's tokens are matched against this index's words alone:
    the same index, without keeping per text what a process about to exit never asks again (the
    forked child: its store's bookkeeping was about a tenth of its work after extraction)."""
    if said is not None and (grows or previous is not None or len(said) != len(session.messages)):
        raise ValueError("build_index: `said` needs grows=False, no previous index, and one entry per message")
    store = store if store is not None else MESSAGE_STORE
    swe = session.format in SWE_AGENT_FORMATS
    messages = session.messages
    growth: _Growth | None = None
    if previous is not None and _grows(previous, session):
        with previous._lock:
            growth, previous._growth = previous._growth, None  # used up: extended in place below
    kept = growth if growth is not None else _Growth()
    n = kept.covered  # read before
    # A message's text joins its parts (30 ms for 14,000 messages): those read before are kept.
    texts = kept.texts[:n] + [m.text for m in messages[n:]]
    covered = max(n, len(messages) - TAIL)  # read into the state kept for the next growth
    if growth is not None:
        before = kept.voices[:n]
        voices = before + _voices(messages[n:], swe, "user" in before or "observation" in before)
    else:
        voices = voices_of(session)
    head = said[n:covered] if said is not None else _said(messages, texts, voices, swe, store, n, covered)
    kept.opening_done = _read(messages[n:covered], head, kept.first, kept.opening_done)
    # What the last messages say is read into a copy (a loader may still change them).
    first = {k: [*e[:6], list(e[6]), *e[7:]] for k, e in kept.first.items()} if grows else kept.first
    tail = said[covered:] if said is not None else _said(messages, texts, voices, swe, store, covered, len(messages))
    _read(messages[covered:], tail, first, kept.opening_done)
    kept.messages, kept.voices, kept.texts = messages, voices[:covered], texts[:covered]
    aliases = _merge_paths(first)
    for old, new in aliases.items():
        a, b = first.pop(old), first[new]
        b[6] = [*a[6], *b[6]]
        if a[3] < b[3]:
            b[3:6], b[8] = a[3:6], a[8]
        if a[9] >= 0 and (b[9] < 0 or a[9] < b[9]):
            b[9] = a[9]
    # The single-token forms of every anchor, then every message that names one in any form.
    forms: dict[str, list[Any]] = {}
    for (kind, key), entry in first.items():
        if kind in TOKEN_KINDS and " " not in key:
            forms[key] = entry
            if kind == "path":
                forms[_path_forms(entry[2])] = entry
    for (_, key), new in aliases.items():
        forms[key] = first[new]
        forms[_path_forms(key)] = first[new]
    tails: dict[str, list[Any]] = {}
    for (kind, _), entry in first.items():
        if kind == "path":
            parts = _path_forms(entry[2]).lstrip("/").split("/")
            for i in range(1, len(parts)):
                if "." in parts[-1]:
                    tail = "/".join(parts[i:])
                    tails[tail] = entry if tails.get(tail, entry) is entry else []  # a tail two files share names neither
    forms.update({tail: entry for tail, entry in tails.items() if entry and tail not in forms})
    forms.update({f + end: entry for f, entry in list(forms.items()) for end in (".", "-")})  # "see src/a.py."
    for entry in first.values():
        entry[6] = set(entry[6])
    entries = list(first.values())
    position = {id(e): i for i, e in enumerate(entries)}
    form_ids = {f: position[id(e)] for f, e in forms.items()}
    phrases = _phrases((i, e[0], e[2]) for i, e in enumerate(entries))
    form_words, phrase_words = set(form_ids), set(phrases)
    if form_words or phrase_words:
        said_at = [(p, m.index) for p, (m, text) in enumerate(zip(session.messages, texts, strict=True)) if text]
        wanted = form_words | phrase_words
        if growth is not None:
            every = _grown_hits(kept, texts, n, covered, wanted)
        else:
            if said is None:
                found = store.token_hits([texts[p] for p, _ in said_at], wanted, _token_list)
                # The store's words of other sessions (the app's) were not searched for here: kept out.
                only_wanted = len(store.vocabulary.words) == len(wanted)
            else:  # what the store would give, restricted to `wanted` (see `said`)
                hits = wanted.intersection
                found = [hits(_token_list(texts[p].lower())) for p, _ in said_at]
                only_wanted = True
            every = [None] * len(texts)
            for (p, _), words in zip(said_at, found, strict=True):
                every[p] = words
            holders: defaultdict[str, list[int]] = defaultdict(list)
            for p in range(covered):
                words = every[p]
                if words:
                    for w in words if only_wanted else words & wanted:
                        holders[w].append(p)
            if grows:
                kept.hits, kept.searched, kept.holders = every[:covered], set(wanted), dict(holders)
            else:
                kept.holders = holders
        index_of = [m.index for m in messages]
        as_placed = all(map(operator.eq, index_of, range(len(index_of))))  # message i at position i, as loaders make them
        # messages[:covered] through each word's holders (a grown index reads no old message here)
        holders_of = kept.holders
        for w in form_words & holders_of.keys():
            entries[form_ids[w]][6].update(holders_of[w] if as_placed else map(index_of.__getitem__, holders_of[w]))
        within = _phrases_in(kept, texts, n, covered, phrases) if growth is not None else None
        lowered_texts: dict[int, str] = {}
        for t in phrase_words & holders_of.keys():
            for p in holders_of[t]:
                for k, phrase in phrases[t]:
                    if within is not None:
                        if p in within[phrase]:
                            entries[k][6].add(index_of[p])
                        continue
                    lowered = lowered_texts.get(p)
                    if lowered is None:
                        lowered = lowered_texts[p] = texts[p].lower()
                    if phrase in lowered:
                        entries[k][6].add(index_of[p])
        # the last messages, read again by every index (a loader may still change them)
        for p in range(covered, len(texts)):
            words = every[p]
            if not words:
                continue
            i = index_of[p]
            for w in words & form_words:
                entries[form_ids[w]][6].add(i)
            triggers = words & phrase_words
            if triggers:
                lowered = texts[p].lower()
                for t in triggers:
                    for k, phrase in phrases[t]:
                        if phrase in lowered:
                            entries[k][6].add(i)
    firsts = [min(e[6]) for e in entries]
    order = sorted(range(len(entries)), key=lambda i: (firsts[i], entries[i][3]))
    new_id = {old: new for new, old in enumerate(order)}
    messages_of = session.messages
    anchors = []
    by_message_sets: list[list[int]] = [[] for _ in messages_of]
    for i, old in enumerate(order):
        kind, key, value, index, mid, role, named_in, opening, voice, user_named = entries[old]
        lo = firsts[old]
        if index != lo:  # first named in another form or unquoted before it was extracted
            mid, role, voice = messages_of[lo].id, messages_of[lo].role, voices[lo]
        named = tuple(sorted(named_in))
        anchors.append(make_anchor(i, kind, key, value, lo, mid, role, named, opening, voice, user_named))
        for k in named:  # ids in order: each message's list is sorted
            by_message_sets[k].append(i)
    ids = {(a.kind, a.key): a.id for a in anchors}
    alias_ids = {old: ids[new] for old, new in aliases.items()}
    token_forms = {f: new_id[k] for f, k in form_ids.items()}
    final_phrases = {t: [(new_id[k], v) for k, v in found] for t, found in phrases.items()}
    by_message = tuple(map(tuple, by_message_sets))
    index = AnchorIndex(session, tuple(anchors), by_message, token_forms, alias_ids, voices, final_phrases)
    if not (form_words or phrase_words) and grows:
        _grown_hits(kept, texts, n, covered, set())
    kept.covered = covered
    index._growth = kept if grows else None
    return index


def _grown_hits(growth: _Growth, texts: list[str], n: int, covered: int, wanted: set[str]) -> list[Any]:
    """Each message's words of `wanted` it holds as tokens (and, for messages[:covered], of every
    word searched before): texts[:n] from `growth`, searched only for the words none of them was
    searched for; the others from their text. Brings `growth` up to `covered`."""
    searched = growth.searched | wanted
    new_words = wanted - growth.searched
    hits: list[Any] = growth.hits
    lowered = growth.lowered
    if new_words and n:
        if lowered is None:
            lowered = growth.lowered = _Lowered()
            lowered.extend((p, texts[p].lower()) for p in range(n) if texts[p])
        holders = growth.holders
        for p, words in lowered.find(new_words).items():
            hits[p] = (hits[p] or frozenset()) | words
            for w in words:
                holders.setdefault(w, []).append(p)
    tail: list[Any] = []
    holders_of = growth.holders
    for p in range(n, len(texts)):
        text = texts[p]
        if not text:
            (hits if p < covered else tail).append(None)
        elif p < covered:
            low = text.lower()
            words = searched.intersection(_token_list(low))
            hits.append(words)
            for w in words:
                holders_of.setdefault(w, []).append(p)
            if lowered is not None:
                lowered.add(p, low)
        else:
            tail.append(wanted.intersection(_token_list(text.lower())))
    growth.searched = searched
    return hits + tail


def _phrases_in(growth: _Growth, texts: list[str], n: int, covered: int, phrases: dict[str, list[tuple[int, str]]]) -> dict[str, set[int]]:
    """For each phrase, the messages[:covered] whose lower-case text contains it, kept in `growth`
    per phrase: a phrase met before is looked for only in the messages read since, a new one in
    the old texts by one search per piece (`_Lowered`)."""
    memo = growth.phrases
    values = {v for found in phrases.values() for _, v in found}
    # The texts read since, lowered only when a phrase met before is to be looked for in them (the
    # first growth has none: every phrase is looked for below, in every old text at once).
    new_texts = [(p, texts[p].lower()) for p in range(growth.phrases_upto, covered) if texts[p]] if memo else []
    for v, where in memo.items():
        where.update(p for p, low in new_texts if v in low)
    fresh = [v for v in values if v not in memo]
    if fresh:
        lowered = growth.lowered
        if lowered is None:
            lowered = growth.lowered = _Lowered()
            lowered.extend((p, texts[p].lower()) for p in range(covered) if texts[p])
        memo.update(lowered.contain(fresh))
    growth.phrases_upto = covered
    return memo


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
            if found is None or found.session is not session:
                # The newest index of a session this one grew from (a followed log): only the new messages are read.
                previous = next((e for e in reversed(self._entries.values()) if _grows(e, session)), None)
        if found is not None and found.session is session:
            return found
        index = build_index(session, previous=previous)
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
