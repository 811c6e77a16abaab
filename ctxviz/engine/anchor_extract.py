"""Anchors found in one text: the facts a message states, read mechanically (engine/anchors.py folds
them into a session's anchors).

`extract(text, role)` gives each (kind, key, value) of one text: file paths, URLs, commit SHAs,
issue and PR numbers, ids and order numbers, error lines and exception names, numbers with units,
quoted identifiers, and (for a user's own words) instructions; `said_in` what one message says, per
voice that said it, requests included. Both depend on their arguments alone, so what a message says
is kept per message text (engine/anchor_cache.py). Reading costs about 0.04-0.1 µs per character:
each pattern is hooked on something cheap to find, and the few hits are widened and checked in
Python.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from .anchor_cache import Said
from .redaction import MARK, without_markers
from .voices import MACHINE_VOICES, own_words, split_template
from .wording import clip as _clip

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



def said_in(text: str, voice: str, role: str, swe: bool) -> Said:
    """What one message says: per voice that said them, each (kind, key, value), and whether it is a
    user turn holding a request or instruction. Depends only on its arguments, so it is kept per message
    (engine/anchor_cache.py). Requests are the user's own words (each user turn its own anchor;
    harness text and observations are not requests)."""
    if MARK in text:  # a sanitised log's markers are no facts: their hashes read as ids (engine/redaction.py)
        text = without_markers(text)
    if not text or text.isspace():
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


