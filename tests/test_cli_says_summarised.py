"""The command line's sentences say "summarised"; only the decision code keeps "summarized" (the
value in `plan --json`, the exports and `--filter`), the project's rule (gui/words.py). `plan` said
"not sent (summarized), the newest #29: summarized: the whole history is compressed" beside
"30 messages replaced by a summary ... summarised", and `why` and `compare` the same."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from ctxviz.cli import main

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"
GM = str(REAL / "gemini_cli" / "ai-sessions_pomodoro.json")
CC = str(REAL / "claude_code" / "tugtool-compact-native.jsonl")
CODING = str(ROOT / "sample_sessions" / "coding_agent.yaml")
GM_SET = ["--set", "tokenLimit=8000"]
LANGCHAIN = ["--policy", "langchain-summarization", "--set", "trigger=tokens=3000"]

COMMANDS = {
    "plan gemini": ["plan", GM, *GM_SET],
    "plan claude-code": ["plan", CC],
    "plan langchain (its lost list)": ["plan", CODING, *LANGCHAIN],
    "simulate gemini": ["simulate", GM, *GM_SET],
    "simulate langchain": ["simulate", CODING, *LANGCHAIN],
    "compare": ["compare", GM, "--policy", "gemini-cli-compression", "--policy", "missy", "--set-a", "tokenLimit=8000"],
    "compare -v": ["compare", GM, "--policy", "gemini-cli-compression", "--policy", "missy", "--set-a", "tokenLimit=8000", "-v"],
    "why": ["why", GM, "--message", "3", *GM_SET],
    "why claude-code": ["why", CC, "--message", "3"],
    "where": ["where", GM, "resetTimer", *GM_SET],
}


def _prose(text: str) -> str:
    """The text without its code spans (`...`), where a code keeps its spelling."""
    return re.sub(r"`[^`\n]*`", "", text)


def _summarised_lines(text: str) -> list[str]:
    return [line for line in _prose(text).splitlines() if "summarized" in line]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_text_outputs_say_summarised(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(COMMANDS[name]) == 0
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "summaris" in text.lower() or name.startswith(("simulate", "where")), "the case summarises"
    assert _summarised_lines(text) == []


def test_exports_and_reports_stderr_say_summarised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    assert main(["export", GM, *GM_SET, "--to", "openai", "-o", str(tmp_path / "x.json")]) == 0
    assert main(["report", GM, *GM_SET, "--no-timeline", "-o", str(tmp_path / "r.html")]) == 0
    assert _summarised_lines(capsys.readouterr().err) == []


def test_the_zone_and_the_cut_say_it_as_a_sentence_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", CC]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(re.match(r"  summarised\s+20\s", line) for line in lines)
    assert any(line.startswith("cut: 20 messages (2,463 tokens) not sent (summarised), the newest #19: summarised: ") for line in lines)


def test_the_decision_code_keeps_its_spelling_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", CC, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "summarized" in {m["decision"] for m in doc["messages"]}
