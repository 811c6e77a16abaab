"""A mistyped policy name gets the nearest names, as a mistyped `--set` parameter does.

`plan --policy claude_code` (or `codex`, `langchain`) printed only the list of every policy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.policies import get_policy
from ctxviz.errors import UnknownNameError

SESSION = str(Path(__file__).resolve().parents[1] / "sample_sessions" / "support_chat.yaml")


@pytest.mark.parametrize(("typed", "meant"), [
    ("claude_code", "'claude-code'"),
    ("codex", "'codex-compaction'"),
    ("langchain", "'langchain-trim', 'langchain-summarization' or 'langchain-context-editing'"),
    ("Codex_Compaction", "'codex-compaction'"),
    ("missi", "'missy'"),
])
def test_plan_suggests_the_policy_meant(capsys: pytest.CaptureFixture[str], typed: str, meant: str) -> None:
    assert main(["plan", SESSION, "--policy", typed]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"unknown policy {typed!r} (did you mean {meant}?); available: missy, ")


def test_a_name_like_no_policy_gets_the_list_alone() -> None:
    with pytest.raises(UnknownNameError) as caught:
        get_policy("nosuch")
    assert str(caught.value).startswith("unknown policy 'nosuch'; available: missy, ")


@pytest.mark.parametrize("command", [["watch", SESSION, "--once"], ["simulate", SESSION], ["gui", SESSION]])
def test_every_command_that_takes_a_policy_says_the_same(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """The error is the registry's, so `watch`, `simulate` and the app (its error text) say it alike."""
    main([*command, "--policy", "codex"])
    assert capsys.readouterr().err.startswith("unknown policy 'codex' (did you mean 'codex-compaction'?); available: ")


def test_a_presets_policy_typo_names_its_file_and_the_policy_meant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    preset = tmp_path / "preset.yaml"
    preset.write_text("policy: claude_code\n", encoding="utf-8")
    assert main(["plan", SESSION, "--config", str(preset)]) == 2
    assert capsys.readouterr().err.startswith(f"{preset}:1: policy: unknown policy 'claude_code' (did you mean 'claude-code'?); available: ")
