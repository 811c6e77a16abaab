"""The replay's first step of a Claude Code log, explained where it differs from the bill.

Before any reply reports the provider's count, Claude Code's count is the messages alone, so the
first row of `simulate` sent 2,090 beside the 24,017 the provider billed for that request, with no
word why; and a subagent's log that opens with a reply (its request before the file) said
"-1 replies without it". Real logs: tests/data/real/claude_code (see SOURCES.md there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxviz.engine.steps import schedule
from ctxviz.io.loaders import load_session

REAL = Path(__file__).parent / "data" / "real" / "claude_code"


def _simulate(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxviz", "simulate", str(path), "--retention", "off", *extra],
                          capture_output=True, text=True, check=False)


def test_first_step_names_what_the_log_does_not_record() -> None:
    out = _simulate(REAL / "tugtool-compact-native.jsonl")
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.split()[:2] == ["0", "3"]]
    assert rows, out.stdout
    sent, billed = rows[0][2], rows[0][-1]
    line = next(line for line in out.stdout.splitlines() if line.startswith("step 0 sends"))
    assert f"step 0 sends {sent}" in line and f"The provider counted {billed} for it" in line
    assert "the system prompt and tools" in line
    unseen = int(line.split("about ")[1].split(" of them")[0].replace(",", ""))
    # the sent estimate and the unseen prompt make the bill, as the sentence says
    assert abs(int(sent.replace(",", "")) + unseen - int(billed.replace(",", ""))) < 0.15 * int(billed.replace(",", ""))


def test_first_step_in_json() -> None:
    out = _simulate(REAL / "tugtool-compact-native.jsonl", "--json")
    doc = json.loads(out.stdout)
    assert doc["first_step"].startswith("step 0 sends 2,090")


def test_an_excerpt_names_the_conversation_before_it() -> None:
    sample = Path(__file__).parent.parent / "sample_sessions" / "claude_code_autocompact.jsonl"
    line = next(line for line in _simulate(sample).stdout.splitlines() if line.startswith("step 0 sends"))
    assert "the conversation before the file starts" in line


@pytest.mark.parametrize("name", ["agent-a0b12ac0cae20818c.jsonl", "agent-acompact-e1f845.jsonl"])
def test_no_sentence_where_it_would_not_account_for_the_gap(name: str) -> None:
    # one call (plan_versus_replay explains its one step), or a gap the unseen prompt does not make
    assert "step 0 sends" not in _simulate(REAL / name).stdout


def test_a_log_opening_with_a_reply_counts_no_negative_replies() -> None:
    session = load_session(REAL / "agent-a0b12ac0cae20818c.jsonl")
    s = schedule(session)
    assert s.opens_with_reply and s.recorded == 2 and len(s.steps) == 1
    text = s.describe()
    assert "-1" not in text and "(1 with the provider's usage)" in text
    assert "opens with a reply (#0)" in text


def test_a_log_opening_with_a_request_says_nothing_of_it() -> None:
    s = schedule(load_session(REAL / "tugtool-compact-native.jsonl"))
    assert not s.opens_with_reply and "opens with a reply" not in s.describe()
