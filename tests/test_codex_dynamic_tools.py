"""Codex `session_meta.dynamic_tools`: the tools a Codex client declared, read as the session's tools.

Codex sends each to the model as a function tool (`codex-rs/tools`: `parse_dynamic_tool`, pushed by
`build_tool_registry_plan`), yet `ctxviz info` said "tool definitions: 0" of a rollout declaring 3
(4,895 characters of schemas), with no note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.errors import LoadError
from ctxviz.io.follow import Follower
from ctxviz.io.loaders import load_session

CODEMIE = Path(__file__).resolve().parent / "data" / "real" / "codex" / "codemie-rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
NAMES = ("automation_update", "read_thread_terminal", "load_workspace_dependencies")


def _declared() -> list[dict]:
    return json.loads(CODEMIE.read_text(encoding="utf-8").splitlines()[0])["payload"]["dynamic_tools"]


def test_the_declared_tools_are_the_sessions_tool_definitions() -> None:
    session = load_session(str(CODEMIE))
    declared = _declared()
    assert tuple(t.name for t in session.tools) == NAMES == tuple(t["name"] for t in declared)
    for tool, raw in zip(session.tools, declared, strict=True):
        assert tool.description == raw["description"] and dict(tool.parameters) == raw["inputSchema"]
    assert any(n.startswith("read 3 tool definitions from `session_meta.dynamic_tools` (automation_update, ") for n in session.notes)


def test_info_counts_them_and_plans_count_their_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(CODEMIE)]) == 0
    out = capsys.readouterr().out
    assert "tool definitions: 3;" in out and "Codex's built-in tools (shell, apply_patch ...) are not in the rollout" in out
    assert main(["plan", str(CODEMIE), "--policy", "missy", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["usage"]["tool_definitions_reserve"] > 1_000  # 4,895 characters of schemas (0 before)


def test_a_follower_carrying_the_load_on_keeps_them(tmp_path: Path) -> None:
    lines = CODEMIE.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "rollout.jsonl"
    live.write_text("".join(lines[:40]), encoding="utf-8")
    follower = Follower(live)
    follower.poll()
    with open(live, "a", encoding="utf-8") as handle:
        handle.write("".join(lines[40:]))
    follower.poll()
    assert follower.incremental_loads == 1
    whole = load_session(str(live))
    assert follower.session is not None and follower.session.tools == whole.tools and follower.session.notes == whole.notes
    assert len(whole.tools) == 3


def _rollout_with(tmp_path: Path, tools: list) -> Path:
    lines = CODEMIE.read_text(encoding="utf-8").splitlines(keepends=True)
    first = json.loads(lines[0])
    first["payload"]["dynamic_tools"] = tools
    path = tmp_path / "rollout.jsonl"
    path.write_text(json.dumps(first) + "\n" + "".join(lines[1:]), encoding="utf-8")
    return path


def test_a_deferred_tool_is_noted_not_counted(tmp_path: Path) -> None:
    tools = _declared()
    tools[1]["deferLoading"] = True
    session = load_session(str(_rollout_with(tmp_path, tools)))
    assert [t.name for t in session.tools] == ["automation_update", "load_workspace_dependencies"]
    assert any(n.startswith("1 dynamic tool declared with `deferLoading` (read_thread_terminal) not counted") for n in session.notes)


def test_a_bad_declaration_names_its_line_and_field(tmp_path: Path) -> None:
    tools = _declared()
    tools[2]["inputSchema"] = "not a schema"
    path = _rollout_with(tmp_path, tools)
    with pytest.raises(LoadError) as caught:
        load_session(str(path))
    assert str(caught.value) == f"{path}:1: payload.dynamic_tools[2].inputSchema: expected an object, got a string"
