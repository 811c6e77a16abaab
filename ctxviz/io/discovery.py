"""The agent sessions on this machine, found where each agent keeps them, newest first.

Where each agent writes its logs (the source checked for each):

- **Claude Code**: `~/.claude/projects/<project-slug>/<session-id>.jsonl`, or under
  `$CLAUDE_CONFIG_DIR` when it is set ("If you set CLAUDE_CONFIG_DIR, every ~/.claude path ... lives
  under that directory instead", code.claude.com/docs/en/claude-directory). A session's sub-agents
  are `<project-slug>/<session-id>/subagents/agent-<id>.jsonl` (older versions: `agent-<id>.jsonl`
  beside the sessions, naming their parent in `sessionId`); they are listed under their parent.
- **Codex CLI**: `~/.codex/sessions/YYYY/MM/DD/rollout-<timestamp>-<uuid>.jsonl`, or
  `$CODEX_HOME/sessions` (openai/codex `codex-rs/core`: `find_codex_home` honours `CODEX_HOME`;
  formats.md B5), and `archived_sessions/` beside it (`codex archive`).
- **Gemini CLI**: `~/.gemini/tmp/<project_hash>/chats/session-*.json` (and `.jsonl` in newer
  versions) (geminicli.com/docs/cli/session-management: "Sessions are stored in
  ~/.gemini/tmp/<project_hash>/chats/"). Newer versions name the folder after the project and
  keep its path in `.project_root`.
- Any folder given with `roots` (`--root DIR`, the app's settings): every JSONL log in it whose
  first line one of ctxviz's loaders recognises, and every JSON file whose head is a Gemini CLI chat
  (`sessionId` and `projectHash` first, whatever the file is called: a chat copied out of
  `chats/` keeps its format, not its name). Other JSON files are not sessions and are not listed.

The other formats ctxviz reads (SWE-agent trajectories, supyagent, OpenTelemetry, API requests...)
have no per-user default location: they are found through `roots`.

**Fast and safe.** For each file only its first `HEAD_BYTES` and last `TAIL_BYTES` are read and
parsed, never the whole log: the model and the last reported fill come from the tail, the project
and start from the head. A Codex log whose tail names no model (a long last turn) is searched
backwards for its last `turn_context` or `session_meta`, as its loader takes the last one, by a
byte search bounded by `MODEL_SEARCH_BYTES`. Compactions are counted by searching the raw bytes for the agent's marker
(no JSON is parsed), only in the bytes appended since the file was last seen. Results are cached
by (path, size, modification time, inode), in memory and on disk (`cache_file`: the user's cache
folder, `$XDG_CACHE_HOME/ctxviz` or `~/.cache/ctxviz`), so a listing in a new process (`ctxviz
sessions`, the app's browser) opens only the files that changed since the last one. The cache file
is written atomically (`io.output.write_atomic`), never inside a folder the listing reads; one that
is corrupt, foreign, or of another version is ignored (the listing is made from the files, as
without a cache), never an error. Files are only ever opened for reading; unreadable ones are
skipped with a note.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..engine.catalog import find_model
from ..engine.wording import noun
from ..errors import CtxvizError
from .source import open_regular

HEAD_BYTES = 64 * 1024
TAIL_BYTES = 256 * 1024
#: How far back from a Codex log's end the byte search for its model goes when the tail names none.
MODEL_SEARCH_BYTES = 64 * 1024 * 1024
#: A line longer than this is not decoded for its model (Codex's lines naming it are a few kB).
MODEL_LINE_BYTES = 1024 * 1024
#: The raw bytes each agent writes once per compaction.
COMPACTION_MARKERS: Mapping[str, tuple[bytes, ...]] = {
    # A JSON string value: inside a message's text the quotes are escaped (\\"), so text about it does not count.
    "claude-code": (b'"compact_boundary"',),
    "codex": (b'"type":"compacted"',),  # Codex writes compact JSON (serde_json)
    "gemini-cli": (),  # its chat file records no compression
}
#: What the cache file says it is: a file without this `format` and `version` is not ours (ignored).
CACHE_FORMAT = "ctxviz-session-listing"
CACHE_VERSION = 2  # 2: Codex models found before the tail, Gemini CLI chats under --root
#: A cache file larger than this is not read (a listing of 100,000 sessions is about 40 MB).
CACHE_MAX_BYTES = 64 * 1024 * 1024
_SUBAGENT = re.compile(r"^agent[-_].+\.jsonl$", re.IGNORECASE)
_CODEX_ROLLOUT = re.compile(r"^rollout-.*\.jsonl$")
_GEMINI_CHAT = re.compile(r"^session-.*\.jsonl?$")
#: The head of a Gemini CLI chat saved as one JSON document (its `ConversationRecord` starts so).
_GEMINI_RECORD = re.compile(rb'^\s*\{\s*"sessionId"\s*:\s*"[^"]*"\s*,\s*"projectHash"\s*:\s*"')


@dataclass(frozen=True)
class Location:
    """A folder where an agent keeps its sessions, and where that is documented."""

    agent: str
    folder: str
    why: str


@dataclass(frozen=True)
class SessionInfo:
    """One session file, as read from its head and tail."""

    path: str
    agent: str
    project: str
    modified: float  # seconds since the epoch
    size: int
    model: str = ""
    #: The last call's reported fill (input, cache reads and writes), None when the tail reports none.
    fill: int | None = None
    window: int | None = None
    compactions: int = 0
    title: str = ""
    #: For a sub-agent's transcript: the path of its parent session's log.
    parent: str = ""
    subagents: tuple[SessionInfo, ...] = ()

    @property
    def fill_share(self) -> float | None:
        return self.fill / self.window if self.fill is not None and self.window else None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["subagents"] = [s.to_json() for s in self.subagents]
        out["modified_iso"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.modified))
        out["fill_share"] = None if self.fill_share is None else round(self.fill_share, 4)
        return out


@dataclass(frozen=True)
class Listing:
    sessions: tuple[SessionInfo, ...]  # newest first, sub-agents inside their parent
    locations: tuple[Location, ...]
    notes: tuple[str, ...] = ()

    def by_project(self) -> list[tuple[tuple[str, str], list[SessionInfo]]]:
        """(agent, project) groups, the group with the newest session first, each newest first."""
        groups: dict[tuple[str, str], list[SessionInfo]] = {}
        for s in self.sessions:
            groups.setdefault((s.agent, s.project), []).append(s)
        return list(groups.items())

    def latest(self, agent: str | None = None) -> SessionInfo | None:
        return next((s for s in self.sessions if agent is None or s.agent == agent), None)

    def to_json(self) -> dict[str, Any]:
        return {"locations": [asdict(loc) for loc in self.locations], "sessions": [s.to_json() for s in self.sessions],
                "notes": list(self.notes)}


def locations(env: Mapping[str, str] | None = None, home: str | os.PathLike[str] | None = None,
              roots: Sequence[str | os.PathLike[str]] = ()) -> list[Location]:
    """Every folder to look in, for this environment (a variable set adds its folder to the default's)."""
    env = os.environ if env is None else env
    base = Path(home) if home is not None else Path.home()
    out: list[Location] = []

    def add(agent: str, folder: Path, why: str) -> None:
        if not any(loc.folder == str(folder) and loc.agent == agent for loc in out):
            out.append(Location(agent, str(folder), why))

    if env.get("CLAUDE_CONFIG_DIR"):
        add("claude-code", Path(env["CLAUDE_CONFIG_DIR"]) / "projects", "CLAUDE_CONFIG_DIR/projects")
    add("claude-code", base / ".claude" / "projects", "~/.claude/projects (Claude Code's default)")
    if env.get("CODEX_HOME"):
        add("codex", Path(env["CODEX_HOME"]) / "sessions", "CODEX_HOME/sessions")
        add("codex", Path(env["CODEX_HOME"]) / "archived_sessions", "CODEX_HOME/archived_sessions")
    add("codex", base / ".codex" / "sessions", "~/.codex/sessions (Codex's default)")
    add("codex", base / ".codex" / "archived_sessions", "~/.codex/archived_sessions (codex archive)")
    add("gemini-cli", base / ".gemini" / "tmp", "~/.gemini/tmp/<project_hash>/chats (Gemini CLI's default)")
    for root in roots:
        add("any", Path(root), "--root")
    return out


# --- walking ---------------------------------------------------------------------------------------

def _files(loc: Location, notes: list[str]) -> Iterator[tuple[Path, str]]:
    """(file, agent) for every candidate session file under one location."""
    root = Path(loc.folder)
    if not root.is_dir():
        return
    for folder, dirs, names in os.walk(root, onerror=lambda exc: notes.append(f"skipped {exc.filename}: {exc.strerror}")):
        dirs.sort()
        here = Path(folder)
        for name in sorted(names):
            path = here / name
            if loc.agent == "claude-code":
                if name.endswith(".jsonl") and name != "journal.jsonl":
                    yield path, "claude-code"
            elif loc.agent == "codex":
                if _CODEX_ROLLOUT.match(name):
                    yield path, "codex"
            elif loc.agent == "gemini-cli":
                if here.name == "chats" and _GEMINI_CHAT.match(name):
                    yield path, "gemini-cli"
            elif name.endswith((".jsonl", ".ndjson", ".json")):
                yield path, ""


# --- reading a file's ends -------------------------------------------------------------------------

def _ends(path: Path) -> tuple[bytes, bytes, int]:
    """The first HEAD_BYTES and the last TAIL_BYTES of a file, and its size (one open, for reading)."""
    with open_regular(str(path)) as handle:
        size = os.fstat(handle.fileno()).st_size
        head = handle.read(min(size, HEAD_BYTES))
        if size <= HEAD_BYTES + TAIL_BYTES:
            tail = head + handle.read(size - len(head))
        else:
            handle.seek(size - TAIL_BYTES)
            tail = handle.read(TAIL_BYTES)
        return head, tail, size


def _lines(chunk: bytes, cut_start: bool) -> list[bytes]:
    """The complete lines of a chunk (the first dropped when the chunk starts mid-line), undecoded."""
    lines = chunk.split(b"\n")
    if cut_start and lines:
        lines = lines[1:]
    return [line for line in lines if line.strip()]


def _last_lines(chunk: bytes, cut_start: bool) -> Iterator[bytes]:
    """The chunk's complete lines, last first, found one at a time (the line wanted is usually near the end)."""
    end = len(chunk)
    while end > 0:
        start = chunk.rfind(b"\n", 0, end) + 1  # where the line ending at `end` starts
        if start == 0 and cut_start:
            return  # the chunk's first line is cut: not a line
        line = chunk[start:end]
        if line.strip():
            yield line
        end = start - 1


def _records(lines: Iterable[bytes], *needles: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects of the lines that contain one of `needles`, decoded only then (most lines of a
    log are not what the listing needs, and decoding is what costs)."""
    for line in lines:
        if needles and not any(n in line for n in needles):
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a line cut by the chunk's end, or one being written
        if isinstance(value, dict):
            yield value


def _claude(head: list[bytes], tail: bytes, cut: bool, path: Path) -> dict[str, Any]:
    info: dict[str, Any] = {}
    sub = bool(_SUBAGENT.match(path.name))
    first = next(_records(head, b'"sessionId"', b'"cwd"'), {})
    cwd = next((r["cwd"] for r in _records(head, b'"cwd"') if isinstance(r.get("cwd"), str) and r["cwd"]), "")
    info["project"] = cwd or path.parent.name
    info["session_id"] = first.get("sessionId") if isinstance(first.get("sessionId"), str) else ""
    for r in _records(_last_lines(tail, cut), b'"assistant"'):
        message = r.get("message")
        if r.get("type") != "assistant" or not isinstance(message, dict) or (r.get("isSidechain") and not sub):
            continue
        model = message.get("model")
        usage = message.get("usage")
        if not info.get("model") and isinstance(model, str) and model and model != "<synthetic>":
            info["model"] = model
        if "fill" not in info and isinstance(usage, dict):
            fill = sum(v for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
                       if isinstance(v := usage.get(k), int))
            if fill > 0:
                info["fill"] = fill
        if info.get("model") and "fill" in info:
            break
    title = next((r.get("title") or r.get("customTitle") or r.get("aiTitle") or r.get("summary")
                  for r in _records(_last_lines(tail[-HEAD_BYTES:], True), b'-title"', b'"summary"') if r.get("type") in ("custom-title", "ai-title", "summary")), "")
    info["title"] = title if isinstance(title, str) else ""
    return info


def _codex(head: list[bytes], tail: bytes, cut: bool, path: Path) -> dict[str, Any]:
    info: dict[str, Any] = {"project": ""}
    for r in _records(head[:3], b'"session_meta"'):
        payload = r.get("payload") if isinstance(r.get("payload"), dict) else {}
        if isinstance(payload.get("cwd"), str):
            info["project"] = payload["cwd"]
            break
    for r in _records(_last_lines(tail, cut), b'"turn_context"', b'"token_count"'):
        payload = r.get("payload") if isinstance(r.get("payload"), dict) else {}
        if not info.get("model") and r.get("type") == "turn_context" and isinstance(payload.get("model"), str):
            info["model"] = payload["model"]
        if "fill" not in info and payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
            last = payload["info"].get("last_token_usage")
            if isinstance(last, dict) and isinstance(last.get("input_tokens"), int):
                info["fill"] = last["input_tokens"]
                window = payload["info"].get("model_context_window")
                if isinstance(window, int) and window > 0:
                    info["window"] = window
        if info.get("model") and "fill" in info:
            break
    if not info.get("model") and cut:
        model = _codex_model(path)
        if model:
            info["model"] = model
    return info


_CODEX_MODEL_MARKERS = (b'"type":"turn_context"', b'"type":"session_meta"')


def _codex_model(path: Path) -> str:
    """The model of the last `turn_context` or `session_meta` line naming one (the loader uses the
    last), found by searching the raw bytes backwards from the end (no more than
    MODEL_SEARCH_BYTES); only the lines found are decoded. "" when none is found."""
    with open_regular(str(path)) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return ""
        with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as data:
            low, end = max(0, size - MODEL_SEARCH_BYTES), size
            while end > low:
                at = max(data.rfind(m, low, end) for m in _CODEX_MODEL_MARKERS)
                if at < 0:
                    return ""
                start = data.rfind(b"\n", 0, at) + 1
                stop = data.find(b"\n", at)
                stop = size if stop < 0 else stop
                end = at
                if stop - start > MODEL_LINE_BYTES:
                    continue
                for r in _records([data[start:stop]]):
                    payload = r.get("payload")
                    model = payload.get("model") if isinstance(payload, dict) else None
                    if r.get("type") in ("turn_context", "session_meta") and isinstance(model, str) and model:
                        return model
    return ""


def _gemini(head: bytes, tail: bytes, path: Path) -> dict[str, Any]:
    """A Gemini CLI chat: a JSON document (rewritten whole) or JSON lines; read with patterns, not parsed whole."""
    info: dict[str, Any] = {}
    marker = path.parent.parent / ".project_root"
    try:
        with open_regular(str(marker), "project marker") as handle:
            info["project"] = handle.read(4096).decode("utf-8", "replace").strip()
    except CtxvizError:
        info["project"] = path.parent.parent.name
    models = re.findall(rb'"model"\s*:\s*"([^"]+)"', tail)
    if models:
        info["model"] = models[-1].decode("utf-8", "replace")
    tokens = re.findall(rb'"tokens"\s*:\s*\{([^{}]*)\}', tail)
    for found in reversed(tokens):
        try:
            t = json.loads(b"{" + found + b"}")
        except ValueError:
            continue
        prompt = t.get("input") if isinstance(t.get("input"), int) else 0
        tool = t.get("tool") if isinstance(t.get("tool"), int) else 0
        if prompt or tool:
            info["fill"] = prompt + tool
            break
    return info


def _sniff(head: bytes, name: str) -> str:
    """The agent of a log found under a --root ("" when none claims it): a JSONL log's from its
    first line, a JSON file's from its head (only a Gemini CLI chat is a session saved as one
    JSON document; any other JSON is not listed)."""
    from .loaders import detect
    from .source import SourceFile

    if name.endswith(".json"):
        return "gemini-cli" if _GEMINI_RECORD.match(head) else ""
    first = head.split(b"\n", 1)[0].strip()
    if not first:
        return ""
    try:
        text = first.decode("utf-8")
        return detect(SourceFile("x.jsonl", text + "\n", size=len(text))).name
    except (CtxvizError, UnicodeDecodeError, ValueError):
        return ""


# --- the cache ---------------------------------------------------------------------------------

@dataclass
class _Entry:
    key: tuple[int, int, int]  # (size, mtime_ns, inode)
    info: SessionInfo
    scanned: int  # bytes searched for compaction markers
    extra: dict[str, Any] = field(default_factory=dict)


#: SessionInfo's fields a cache entry holds, with the types they must have (`parent`, `subagents`
#: are the listing's, not the file's).
_INFO_TYPES: Mapping[str, tuple[type, ...]] = {
    "path": (str,), "agent": (str,), "project": (str,), "modified": (float, int), "size": (int,), "model": (str,),
    "fill": (int, type(None)), "window": (int, type(None)), "compactions": (int,), "title": (str,)}
_EXTRA_TYPES: tuple[type, ...] = (str, int, float, type(None))


def _entry_to_json(entry: _Entry) -> dict[str, Any]:
    info = {name: getattr(entry.info, name) for name in _INFO_TYPES}
    extra = {k: v for k, v in entry.extra.items() if isinstance(v, _EXTRA_TYPES) and not isinstance(v, bool)}
    return {"key": list(entry.key), "scanned": entry.scanned, "info": info, "extra": extra}


def _entry_from_json(path: str, value: Any) -> _Entry | None:
    """An entry read back from the cache file, or None when anything in it is not what we wrote."""
    if not isinstance(value, dict):
        return None
    key, scanned, info, extra = value.get("key"), value.get("scanned"), value.get("info"), value.get("extra")
    if (not isinstance(key, list) or len(key) != 3 or not all(type(k) is int for k in key) or type(scanned) is not int
            or not isinstance(info, dict) or not isinstance(extra, dict)):
        return None
    fields: dict[str, Any] = {}
    for name, types in _INFO_TYPES.items():
        v = info.get(name)
        if isinstance(v, bool) or not isinstance(v, types):
            return None
        fields[name] = v
    if fields["path"] != path or not all(isinstance(k, str) and isinstance(v, _EXTRA_TYPES) for k, v in extra.items()):
        return None
    fields["modified"] = float(fields["modified"])
    return _Entry((key[0], key[1], key[2]), SessionInfo(**fields), scanned, dict(extra))


def cache_file(env: Mapping[str, str] | None = None, home: str | os.PathLike[str] | None = None) -> Path:
    """Where the listing's cache is kept: `$XDG_CACHE_HOME/ctxviz/sessions.json`, else
    `~/.cache/ctxviz/sessions.json` (the XDG base directory specification; a relative
    XDG_CACHE_HOME is invalid there and ignored)."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else (Path(home) if home is not None else Path(env.get("HOME") or Path.home())) / ".cache"
    return base / "ctxviz" / "sessions.json"


class SessionIndex:
    """What was read of each file, by path; a file whose size, time and inode are unchanged is not
    opened again, and one that only grew is searched for compactions only in its new bytes.

    With a `cache` path, what was read is loaded from that file on first use and written back by
    `save` when it changed."""

    def __init__(self, cache: str | os.PathLike[str] | None = None) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.cache = Path(cache) if cache is not None else None
        self._loaded = cache is None
        self._dirty = False

    def load(self) -> None:
        """Read the cache file once (an entry already read in this process wins). A missing,
        unreadable, corrupt or foreign file, or one of another version, gives an empty cache."""
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
        entries = _read_cache(self.cache) if self.cache is not None else {}
        with self._lock:
            for name, entry in entries.items():
                self._entries.setdefault(name, entry)

    def save(self, folders: Iterable[str | os.PathLike[str]] = ()) -> bool:
        """Write the cache file if anything changed since it was read (atomically, in a folder made
        private to the user); entries of files that no longer exist are dropped. Never inside one
        of `folders` (the folders the listing read): the cache is not written next to the logs.
        Returns whether it was written; a cache that cannot be written is not an error."""
        target = self.cache
        if target is None or not self._dirty:
            return False
        real = os.path.realpath(target.parent)
        for folder in folders:
            inside = os.path.realpath(folder).rstrip(os.sep) + os.sep
            if (real + os.sep).startswith(inside):
                return False
        with self._lock:
            entries = dict(self._entries)
            self._dirty = False
        payload = {"format": CACHE_FORMAT, "version": CACHE_VERSION,
                   "entries": {name: _entry_to_json(e) for name, e in entries.items() if os.path.lexists(name)}}
        from .output import write_atomic  # (the writer every output of ctxviz goes through)

        try:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_atomic(target, json.dumps(payload, separators=(",", ":")))
        except (CtxvizError, OSError):
            return False
        return True

    def info(self, path: Path, agent: str, st: os.stat_result) -> tuple[SessionInfo, dict[str, Any]]:
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        name = str(path)
        with self._lock:
            found = self._entries.get(name)
        if found is not None and found.key == key and (not agent or found.info.agent == agent):
            return found.info, found.extra
        head, tail, size = _ends(path)
        if not agent:
            agent = _sniff(head, path.name)
            if agent not in COMPACTION_MARKERS:
                agent = agent or "unknown"
        cut = size > HEAD_BYTES + TAIL_BYTES
        if agent == "claude-code":
            extra = _claude(_lines(head, False), tail, cut, path)
        elif agent == "codex":
            extra = _codex(_lines(head, False), tail, cut, path)
        elif agent == "gemini-cli":
            extra = _gemini(head, tail, path)
        else:
            extra = {"project": str(path.parent)}
        grew = (found is not None and found.info.agent == agent and found.key[2] == st.st_ino and found.scanned <= size
                and found.key[0] <= size)
        compactions, scanned = _count_markers(path, agent, found.info.compactions if grew and found else 0,
                                              found.scanned if grew and found else 0, size)
        model = str(extra.get("model") or "")
        window = extra.get("window")
        if window is None and model:
            entry = find_model(model)
            window = entry.context_window if entry is not None else None
        info = SessionInfo(name, agent, str(extra.get("project") or path.parent.name), st.st_mtime, size, model, extra.get("fill"), window,
                           compactions, str(extra.get("title") or ""))
        with self._lock:
            self._entries[name] = _Entry(key, info, scanned, extra)
            self._dirty = True
        return info, extra


def _read_cache(path: Path) -> dict[str, _Entry]:
    """The entries of a cache file; {} for anything that is not a cache file this version wrote."""
    try:
        with open_regular(str(path), "cache file") as handle:
            if os.fstat(handle.fileno()).st_size > CACHE_MAX_BYTES:
                return {}
            data = json.loads(handle.read())
    except (CtxvizError, OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or data.get("version") != CACHE_VERSION:
        return {}
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return {}
    out: dict[str, _Entry] = {}
    for name, value in entries.items():
        entry = _entry_from_json(name, value) if isinstance(name, str) else None
        if entry is not None:
            out[name] = entry
    return out


def _count_markers(path: Path, agent: str, counted: int, scanned: int, size: int) -> tuple[int, int]:
    """Compactions recorded in the file: `counted` in its first `scanned` bytes, plus the markers
    that end after them (a byte search through a read-only map of the file; no JSON is parsed)."""
    markers = COMPACTION_MARKERS.get(agent, ())
    if not markers or size <= scanned:
        return counted, scanned
    total = counted
    with open_regular(str(path)) as handle, mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as data:
        for marker in markers:
            at = data.find(marker, max(0, scanned - len(marker) + 1))
            while at >= 0:
                total += 1
                at = data.find(marker, at + 1)
    return total, size


#: The listing's cache of each cache file (one per user cache folder; tests change the folder).
_INDEXES: dict[str, SessionIndex] = {}
_INDEXES_LOCK = threading.Lock()


def default_index(env: Mapping[str, str] | None = None, home: str | os.PathLike[str] | None = None) -> SessionIndex:
    """The cache a listing without an `index` uses: kept in memory for the process, and on disk in `cache_file`."""
    path = cache_file(env, home)
    with _INDEXES_LOCK:
        index = _INDEXES.get(str(path))
        if index is None:
            index = _INDEXES[str(path)] = SessionIndex(path)
    return index


# --- the listing -----------------------------------------------------------------------------------

def discover(roots: Sequence[str | os.PathLike[str]] = (), env: Mapping[str, str] | None = None, home: str | os.PathLike[str] | None = None,
             index: SessionIndex | None = None) -> Listing:
    """The sessions on this machine (and under `roots`), newest first, sub-agents inside their parent.
    Without an `index`, the user's cache (`default_index`) is used and written back."""
    index = index if index is not None else default_index(env, home)
    index.load()
    notes: list[str] = []
    found: list[SessionInfo] = []
    session_ids: dict[tuple[str, str], str] = {}  # (project folder, session id) -> path
    subagents: list[tuple[SessionInfo, str, Path]] = []
    seen: set[str] = set()
    locs = locations(env, home, roots)
    for loc in locs:
        for path, agent in _files(loc, notes):
            real = os.path.realpath(path)
            if real in seen:
                continue
            seen.add(real)
            try:
                st = path.stat()
                info, extra = index.info(path, agent, st)
            except CtxvizError as exc:
                notes.append(f"skipped {exc}")
                continue
            except OSError as exc:
                notes.append(f"skipped {path}: {exc.strerror or exc}")
                continue
            if info.agent == "unknown":
                continue
            if info.agent == "claude-code" and _SUBAGENT.match(path.name):
                subagents.append((info, str(extra.get("session_id") or ""), path))
                continue
            if info.agent == "claude-code":
                session_ids[(str(path.parent), path.stem)] = info.path
            found.append(info)
    by_path = {s.path: s for s in found}
    children: dict[str, list[SessionInfo]] = {}
    for info, session_id, path in subagents:
        # <project>/<session-id>/subagents/agent-<id>.jsonl, or agent-<id>.jsonl beside <session-id>.jsonl
        parent = (session_ids.get((str(path.parent.parent.parent), path.parent.parent.name)) if path.parent.name == "subagents"
                  else session_ids.get((str(path.parent), session_id)))
        if parent is not None and parent in by_path:
            children.setdefault(parent, []).append(replace(info, parent=parent, project=by_path[parent].project))
        else:
            found.append(info)  # an orphan: listed on its own
    sessions = [replace(s, subagents=tuple(sorted(children.get(s.path, ()), key=lambda c: -c.modified))) if s.path in children else s
                for s in found]
    sessions.sort(key=lambda s: -max([s.modified, *(c.modified for c in s.subagents)]))
    index.save([loc.folder for loc in locs])
    return Listing(tuple(sessions), tuple(locs), tuple(notes))


def listing_text(listing: Listing, query: str = "") -> str:
    """The listing as `ctxviz sessions` prints it: grouped by project, newest first."""
    lines: list[str] = []
    shown = [s for s in listing.sessions if matches(s, query)]
    groups: dict[tuple[str, str], list[SessionInfo]] = {}
    for s in shown:
        groups.setdefault((s.agent, s.project), []).append(s)
    for (agent, project), sessions in groups.items():
        lines.append(f"{agent}  {project}")
        for s in sessions:
            lines.append("  " + _row(s))
            lines += ["    sub-agent " + _row(c) for c in s.subagents]
    if not shown:
        looked = ", ".join(loc.folder for loc in listing.locations)
        lines.append(f"no sessions found{' matching ' + repr(query) if query else ''} (looked in {looked})")
    lines += [f"note: {n}" for n in listing.notes]
    return "\n".join(lines) + "\n"


def _row(s: SessionInfo) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.modified))
    fill = "fill -"
    if s.fill is not None:
        fill = f"fill {s.fill:,}" + (f" of {s.window:,} ({s.fill / s.window:.0%})" if s.window else "")
    parts = [when, f"{s.size / 1e6:,.1f} MB" if s.size >= 100_000 else f"{s.size / 1e3:,.0f} kB", s.model or "(model not seen)", fill,
             f"{s.compactions:,} {noun(s.compactions, 'compaction')}", s.path]
    return "  ".join(parts)


def matches(s: SessionInfo, query: str) -> bool:
    """Whether a search for `query` finds the session (in its path, project, model, agent or title;
    case-insensitive): `ctxviz sessions QUERY` and the app's session browser filter alike."""
    if not query:
        return True
    q = query.lower()
    return any(q in text.lower() for text in (s.path, s.project, s.model, s.agent, s.title))


def iter_sessions(listing: Listing) -> Iterable[SessionInfo]:
    """Every session, sub-agents after their parent."""
    for s in listing.sessions:
        yield s
        yield from s.subagents
