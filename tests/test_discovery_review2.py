"""The session listing after the second review: a Codex log's model found where its loader finds it
(before the tail, when the last turn is long), and Gemini CLI chats saved as JSON listed under a
--root whatever they are called, while other JSON files are not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ctxviz.io import discovery
from ctxviz.io.discovery import SessionIndex, discover
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"
F_CDX = REAL / "codex" / "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
GEM_DIR = REAL / "gemini_cli"


def _listing(roots: list[Path], tmp_path: Path) -> dict[str, discovery.SessionInfo]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    listing = discover(roots, env={}, home=home, index=SessionIndex())
    return {Path(s.path).name: s for s in discovery.iter_sessions(listing)}


def test_a_codex_model_named_before_the_tail_is_found_as_the_loader_finds_it(tmp_path: Path) -> None:
    assert F_CDX.stat().st_size > discovery.HEAD_BYTES + discovery.TAIL_BYTES  # the model is not in the tail read
    found = _listing([F_CDX.parent], tmp_path)[F_CDX.name]
    assert found.model == load_session(F_CDX).model == "gpt-5.5"


def test_a_codex_model_further_back_than_the_search_is_not_looked_for(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(discovery, "MODEL_SEARCH_BYTES", discovery.TAIL_BYTES)  # bounded: no further than this
    assert _listing([F_CDX.parent], tmp_path)[F_CDX.name].model == ""


def test_gemini_cli_json_chats_under_a_root_are_listed_whatever_their_name(tmp_path: Path) -> None:
    found = _listing([GEM_DIR], tmp_path)
    names = sorted(p.name for p in GEM_DIR.iterdir() if p.suffix in (".json", ".jsonl"))
    assert sorted(found) == names == ["ai-sessions_pomodoro.json", "aim_control_pro.json", "aim_matrix_flash.json",
                                      "aim_matrix_pro.migrated.jsonl"]
    for name in names:
        assert found[name].agent == "gemini-cli"
        assert found[name].model == load_session(GEM_DIR / name).model


def test_json_that_is_no_agent_session_is_not_listed(tmp_path: Path) -> None:
    folder = tmp_path / "root"
    folder.mkdir()
    for source in [*(REAL / "otel").glob("*.json"), REAL / "swe_agent" / "github_issue.traj.json"]:
        shutil.copyfile(source, folder / source.name)
    (folder / "package.json").write_text('{"name": "x", "sessionId": "not first"}\n', encoding="utf-8")
    shutil.copyfile(GEM_DIR / "aim_control_pro.json", folder / "chat.json")
    assert list(_listing([folder], tmp_path)) == ["chat.json"]


def test_sessions_command_lists_the_gemini_chats_and_the_codex_model(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-m", "ctxviz", "sessions", "--root", str(REAL.relative_to(ROOT))], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    row = next(line for line in out.splitlines() if F_CDX.name in line)
    assert "gpt-5.5" in row and "(model not seen)" not in row
    for name in ("ai-sessions_pomodoro.json", "aim_control_pro.json", "aim_matrix_flash.json"):
        assert f"gemini_cli/{name}" in out
