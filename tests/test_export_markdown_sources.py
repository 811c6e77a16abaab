"""`export --to markdown` heads each entry with its source, as the app's Context tab does: the
exported file headed Claude Code's own compact summary "## 0. user" and Gemini CLI's inserted
acknowledgement "## 2. assistant", so a reader of the file could not tell the agent's text from
the file's messages or from what ctxviz made up (the app's view said it, rewriting the headings
in the GUI)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.planner import plan_session
from ctxviz.io.exporters import export_text, marked_markdown
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"
CC = REAL / "claude_code" / "tugtool-compact-native.jsonl"
SW = REAL / "swe_agent" / "pydicom__pydicom-1458.traj"
HEADING = re.compile(r"^## \d+\. .*$", re.M)


def test_a_claude_code_export_names_the_agents_recorded_summary(tmp_path: Path) -> None:
    out = tmp_path / "cc.md"
    assert main(["export", str(CC), "--to", "markdown", "-o", str(out)]) == 0
    plan = plan_session(load_session(str(CC)), "claude-code")
    headings = HEADING.findall(out.read_text())
    assert headings[0] == "## 0. user · the log's recorded summary #1, written by the agent (covers #0-#19)"
    assert headings[1:] == [f"## {k}. {plan.context[k]['role']} · #{i}" for k, i in enumerate(plan.context_index) if k]


def test_a_system_prompt_folded_from_the_files_message_is_named_so(tmp_path: Path) -> None:
    out = tmp_path / "sw.md"
    assert main(["export", str(SW), "--set", "total=8000", "--to", "markdown", "-o", str(out)]) == 0
    assert HEADING.findall(out.read_text())[0] == "## 0. system · system prompt: the file's message #0"


@pytest.mark.parametrize(("path", "policy", "params"), [
    (CC, "claude-code", None),
    (REAL / "gemini_cli" / "ai-sessions_pomodoro.json", "gemini-cli-compression", {"tokenLimit": 8000}),
    (ROOT / "sample_sessions" / "support_chat.yaml", "missy", None),
    (ROOT / "sample_sessions" / "support_chat.yaml", "autogen-buffered", None),
])
def test_the_export_and_the_context_tab_give_the_same_headings(path: Path, policy: str, params: dict[str, int] | None) -> None:
    session = load_session(str(path))
    plan = plan_session(session, policy, params)
    exported, shown = export_text(plan, session, "markdown"), marked_markdown(plan, session)
    assert HEADING.findall(exported) == HEADING.findall(shown)
    assert len(HEADING.findall(exported)) == len(plan.context)
    assert "added by the policy" not in exported
