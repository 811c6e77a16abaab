"""Finding the sessions on a machine (io/discovery.py): fake home folders laid out as each agent lays
them out, holding real logs from tests/data, with the environment variables each agent honours. What
the listing says of each file (model, last fill, compactions) is checked against a full load."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from ctxviz.io import discovery
from ctxviz.io.discovery import SessionIndex, discover, listing_text
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
REAL = DATA / "real"
CODEX = REAL / "codex" / "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
CODEX_SMALL = REAL / "codex" / "localpush-rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"


def _session_id(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if isinstance(record.get("sessionId"), str):
            return record["sessionId"]
    raise AssertionError(path)


def _rollout_name(path: Path) -> str:
    """The name Codex gives a rollout (the files in tests/data carry their repository's prefix)."""
    return path.name[path.name.index("rollout-"):]


def _place(source: Path, target: Path, mtime: float) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    os.utime(target, (mtime, mtime))
    return target


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A home folder with Claude Code, Codex and Gemini CLI sessions where each agent writes them."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    main = REAL / "claude_code" / "tugtool-subagent-main.jsonl"
    projects = home / ".claude" / "projects"
    sid = _session_id(main)
    placed = {
        "claude_main": _place(main, projects / "-work-tugtool" / f"{sid}.jsonl", 1_700_000_100),
        "claude_sub": _place(REAL / "claude_code" / "agent-a0b12ac0cae20818c.jsonl",
                             projects / "-work-tugtool" / sid / "subagents" / "agent-a0b12ac0cae20818c.jsonl", 1_700_000_150),
        "claude_compact": _place(DATA / "claude_code" / "spotter-258c7280-autocompact.jsonl",
                                 projects / "-home-USER-projects-spotter" / f"{_session_id(DATA / 'claude_code' / 'spotter-258c7280-autocompact.jsonl')}.jsonl",
                                 1_700_000_400),
        "claude_rewind": _place(REAL / "claude_code" / "tugtool-rewind-branch.jsonl", projects / "-work-repo" / "fixture-rewind-0001.jsonl",
                                1_700_000_050),
        "codex": _place(CODEX, home / ".codex" / "sessions" / "2026" / "02" / "23" / _rollout_name(CODEX), 1_700_000_300),
        "gemini_json": _place(REAL / "gemini_cli" / "aim_matrix_flash.json",
                              home / ".gemini" / "tmp" / "3f2a9c" / "chats" / "session-2026-01-02T10-00-aim.json", 1_700_000_200),
        "gemini_jsonl": _place(REAL / "gemini_cli" / "aim_matrix_pro.migrated.jsonl",
                               home / ".gemini" / "tmp" / "aim-matrix" / "chats" / "session-2026-01-03T10-00-aim.jsonl", 1_700_000_250),
    }
    (home / ".gemini" / "tmp" / "aim-matrix" / ".project_root").write_text("/work/aim-matrix\n", encoding="utf-8")
    placed["home"] = home
    return placed


def _by_path(listing: discovery.Listing) -> dict[str, discovery.SessionInfo]:
    return {s.path: s for s in discovery.iter_sessions(listing)}


def test_every_agents_sessions_are_found_newest_first(machine: dict[str, Path]) -> None:
    listing = discover(index=SessionIndex())
    order = [s.path for s in listing.sessions]
    expected = ["claude_compact", "codex", "gemini_jsonl", "gemini_json", "claude_main", "claude_rewind"]
    assert order == [str(machine[k]) for k in expected]
    agents = {s.path: s.agent for s in listing.sessions}
    assert agents[str(machine["codex"])] == "codex" and agents[str(machine["gemini_json"])] == "gemini-cli"
    assert not listing.notes


def test_a_sub_agent_is_listed_under_its_parent(machine: dict[str, Path]) -> None:
    listing = discover(index=SessionIndex())
    parent = next(s for s in listing.sessions if s.path == str(machine["claude_main"]))
    assert [c.path for c in parent.subagents] == [str(machine["claude_sub"])]
    assert parent.subagents[0].parent == parent.path
    assert str(machine["claude_sub"]) not in [s.path for s in listing.sessions]


@pytest.mark.parametrize("key", ["claude_compact", "claude_rewind", "claude_main", "codex", "gemini_json", "gemini_jsonl"])
def test_what_the_listing_says_agrees_with_a_full_load(machine: dict[str, Path], key: str) -> None:
    info = _by_path(discover(index=SessionIndex()))[str(machine[key])]
    session = load_session(machine[key])
    assert info.model == session.model
    calls = [m for m in session.messages if m.usage is not None and m.usage.window_fill > 0]
    assert info.fill == (calls[-1].usage.window_fill if calls else None)
    assert info.compactions == len(session.compactions)
    assert info.size == machine[key].stat().st_size
    assert info.modified == machine[key].stat().st_mtime


def test_projects_are_named_as_the_agents_name_them(machine: dict[str, Path]) -> None:
    info = _by_path(discover(index=SessionIndex()))
    assert info[str(machine["claude_rewind"])].project == "/work/repo"  # the `cwd` its lines record
    codex_cwd = json.loads(CODEX.read_text(encoding="utf-8").splitlines()[0])["payload"]["cwd"]
    assert info[str(machine["codex"])].project == codex_cwd
    assert info[str(machine["gemini_jsonl"])].project == "/work/aim-matrix"  # the folder's .project_root
    assert info[str(machine["gemini_json"])].project == "3f2a9c"  # an older hash folder: its name
    assert info[str(machine["claude_compact"])].window == 200_000  # from the catalogue, by model


def test_environment_variables_add_their_folders(machine: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "claude-config"
    codex_home = tmp_path / "codex-home"
    other = _place(REAL / "claude_code" / "tugtool-compact-native.jsonl", config / "projects" / "-x" / "s.jsonl", 1_700_000_500)
    rollout = _place(CODEX_SMALL, codex_home / "sessions" / "2026" / "02" / "24" / _rollout_name(CODEX_SMALL), 1_700_000_600)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    listing = discover(index=SessionIndex())
    assert [s.path for s in listing.sessions[:2]] == [str(rollout), str(other)]
    assert str(machine["codex"]) in [s.path for s in listing.sessions]  # the defaults are still read


def test_extra_roots_find_logs_by_their_content(machine: dict[str, Path], tmp_path: Path) -> None:
    extra = tmp_path / "elsewhere"
    log = _place(CODEX_SMALL, extra / "deep" / "run.jsonl", 1_700_000_700)
    _place(DATA / "native_small.yaml", extra / "notes.yaml", 1_700_000_800)  # not a JSONL log: not listed
    listing = discover([extra], index=SessionIndex())
    first = listing.sessions[0]
    assert (first.path, first.agent) == (str(log), "codex")
    assert all("notes.yaml" not in s.path for s in listing.sessions)


def test_unreadable_files_are_skipped_with_a_note(machine: dict[str, Path]) -> None:
    projects = machine["home"] / ".claude" / "projects" / "-work-tugtool"
    os.mkfifo(projects / "a-fifo.jsonl")
    os.symlink(projects / "missing.jsonl", projects / "dangling.jsonl")
    listing = discover(index=SessionIndex())
    assert len(listing.sessions) == 6
    assert any("a-fifo.jsonl" in n and "FIFO" in n for n in listing.notes)
    assert any("dangling.jsonl" in n for n in listing.notes)


def _snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
        out[str(path)] = (st.st_mtime_ns, st.st_size, digest)
    return out


def test_listing_never_writes_in_the_agents_folders(machine: dict[str, Path]) -> None:
    before = _snapshot(machine["home"])
    discover(index=SessionIndex())
    discover(index=SessionIndex())
    assert _snapshot(machine["home"]) == before


def test_a_warm_listing_reads_no_file_and_a_grown_one_only_its_own(machine: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    index = SessionIndex()
    cold = discover(index=index)
    read: list[str] = []
    real_ends = discovery._ends

    def counting_ends(path: Path) -> tuple[bytes, bytes, int]:
        read.append(str(path))
        return real_ends(path)

    monkeypatch.setattr(discovery, "_ends", counting_ends)
    assert discover(index=index) == cold and read == []
    # The Claude Code session grows by another compaction: only it is read again, and its count follows.
    grown = machine["claude_compact"]
    lines = grown.read_text(encoding="utf-8").splitlines(keepends=True)
    boundary = json.loads(next(line for line in lines if '"compact_boundary"' in line))
    boundary["uuid"] = "0b5e4a6e-0000-4000-8000-000000000001"  # a second compaction, not the same line written twice,
    boundary["logicalParentUuid"] = json.loads(lines[-1])["uuid"]  # after the last line, as Claude Code chains one
    with open(grown, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(boundary, separators=(",", ":")) + "\n")
    warm = _by_path(discover(index=index))
    assert read == [str(grown)]
    assert warm[str(grown)].compactions == 2 == len(load_session(grown).compactions)


def test_the_text_listing_groups_by_project_and_filters(machine: dict[str, Path]) -> None:
    listing = discover(index=SessionIndex())
    text = listing_text(listing)
    assert text.index("claude-code  /work/repo") > text.index("codex  ")
    assert "sub-agent " in text and "claude-opus-4-6" in text and "1 compaction" in text
    only = listing_text(listing, "gemini")
    assert "gemini-cli" in only and "codex" not in only
    assert "no sessions found" in listing_text(listing, "no-such-thing")


# --- the cache on disk ----------------------------------------------------------------------------

def _counting_ends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real_ends = discovery._ends

    def counting(path: Path) -> tuple[bytes, bytes, int]:
        read.append(str(path))
        return real_ends(path)

    monkeypatch.setattr(discovery, "_ends", counting)
    return read


def test_the_cache_file_is_in_the_users_cache_folder(tmp_path: Path) -> None:
    assert discovery.cache_file({"XDG_CACHE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)}) == tmp_path / "xdg" / "ctxviz" / "sessions.json"
    assert discovery.cache_file({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "ctxviz" / "sessions.json"
    # A relative XDG_CACHE_HOME is invalid (XDG base directory specification): the default is used.
    assert discovery.cache_file({"XDG_CACHE_HOME": "relative/cache", "HOME": str(tmp_path)}) == tmp_path / ".cache" / "ctxviz" / "sessions.json"


def test_a_listing_in_a_new_process_reads_only_the_files_that_changed(machine: dict[str, Path], tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache" / "ctxviz" / "sessions.json"
    cold = discover(index=SessionIndex(cache))
    assert cache.is_file() and json.loads(cache.read_text(encoding="utf-8"))["format"] == discovery.CACHE_FORMAT
    assert [p.name for p in cache.parent.iterdir()] == ["sessions.json"]  # written whole: no temporary file left
    read = _counting_ends(monkeypatch)
    assert discover(index=SessionIndex(cache)) == cold and read == []  # a new index: what it knows comes from the file
    # A changed file is read again: grown (size), touched (mtime), replaced by a copy of the same size (inode).
    grown, touched, replaced = machine["claude_compact"], machine["codex"], machine["gemini_json"]
    with open(grown, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "user", "message": {"role": "user", "content": "more"}}) + "\n")
    os.utime(touched, (1_700_000_301, 1_700_000_301))
    copy = replaced.with_name("copy.tmp")
    shutil.copy2(replaced, copy)
    os.replace(copy, replaced)
    warm = _by_path(discover(index=SessionIndex(cache)))
    assert sorted(read) == sorted(map(str, (grown, touched, replaced)))
    assert warm[str(touched)].modified == 1_700_000_301
    assert warm[str(grown)].size == grown.stat().st_size
    # What the new process wrote back is what the next one reads.
    read.clear()
    assert _by_path(discover(index=SessionIndex(cache))) == warm and read == []


@pytest.mark.parametrize("content", [
    b"\x00\xff not json at all",
    b'{"format": "ctxviz-session-listing", "version": 1, "entries": {',  # cut off mid-write by another program
    b'{"format": "something-else", "version": 1, "entries": {}}',
    b'{"format": "ctxviz-session-listing", "version": 999, "entries": {}}',
    b"[1, 2, 3]",
    b'{"format": "ctxviz-session-listing", "version": 1, "entries": []}',
    b"[" * 100_000,  # nested past the parser's depth
])
def test_a_corrupt_or_foreign_cache_file_is_ignored(machine: dict[str, Path], tmp_path: Path, content: bytes) -> None:
    cache = tmp_path / "cache" / "sessions.json"
    cache.parent.mkdir()
    cache.write_bytes(content)
    assert discover(index=SessionIndex(cache)) == discover(index=SessionIndex())
    # And it is replaced by a cache this version can read.
    assert json.loads(cache.read_text(encoding="utf-8"))["version"] == discovery.CACHE_VERSION


def test_a_cache_entry_that_lies_is_not_believed(machine: dict[str, Path], tmp_path: Path) -> None:
    """Entries with the wrong types, or filed under another path, are dropped one by one; the rest are used."""
    cache = tmp_path / "sessions.json"
    fresh = discover(index=SessionIndex(cache))
    data = json.loads(cache.read_text(encoding="utf-8"))
    codex, gemini, claude = str(machine["codex"]), str(machine["gemini_json"]), str(machine["claude_compact"])
    data["entries"][codex]["info"]["compactions"] = "many"
    data["entries"][gemini]["info"]["path"] = "/elsewhere.json"
    data["entries"][claude]["info"]["model"] = "a model the cache made up"  # well-formed: believed (the key matches)
    cache.write_text(json.dumps(data), encoding="utf-8")
    listed = _by_path(discover(index=SessionIndex(cache)))
    want = _by_path(fresh)
    assert listed[codex] == want[codex] and listed[gemini] == want[gemini]
    assert listed[claude].model == "a model the cache made up"  # (shows the entry was used, not re-read)


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_cache_path_that_is_no_file_is_neither_read_nor_written(machine: dict[str, Path], tmp_path: Path, kind: str) -> None:
    cache = tmp_path / "sessions.json"
    if kind == "directory":
        cache.mkdir()
    else:
        os.mkfifo(cache)
    assert discover(index=SessionIndex(cache)) == discover(index=SessionIndex())  # returns at once (a FIFO never blocks it)
    assert cache.is_dir() if kind == "directory" else cache.is_fifo()


def test_the_cache_is_never_written_next_to_the_logs(machine: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """XDG_CACHE_HOME pointing into a folder the listing reads: no cache is written there."""
    home = machine["home"]
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".claude" / "projects" / "-work-tugtool"))
    before = _snapshot(home)
    listing = discover()
    assert listing.sessions and _snapshot(home) == before
    assert not discovery.default_index().save([home / ".claude" / "projects"])


def test_the_default_listing_keeps_its_cache_in_xdg_cache_home(machine: dict[str, Path], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """`ctxviz sessions` and the app's browser (no index given) use the user's cache file."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(discovery, "_INDEXES", {})
    first = discover()
    assert (tmp_path / "xdg" / "ctxviz" / "sessions.json").is_file()
    monkeypatch.setattr(discovery, "_INDEXES", {})  # as a new process
    read = _counting_ends(monkeypatch)
    assert discover() == first and read == []
