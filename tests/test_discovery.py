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
    assert "sub-agent " in text and "claude-opus-4-6" in text and "1 compaction(s)" in text
    only = listing_text(listing, "gemini")
    assert "gemini-cli" in only and "codex" not in only
    assert "no sessions found" in listing_text(listing, "no-such-thing")
