"""The readers' counted notes say "1 line" and "20 lines", never "line(s)": a tally's template is
written before its count is known, and the count chooses the words when the note is made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"
LOGS = sorted(p for folder in ("claude_code", "codex", "gemini_cli", "swe_agent", "otel") for p in (REAL / folder).iterdir()
              if p.suffix in (".jsonl", ".json"))


def test_a_tally_agrees_with_its_count():
    from ctxviz.io.source import tally_text

    template = "skipped {n} `progress` line(s) that {repeats|repeat} a report"
    assert tally_text(template, 1) == "skipped 1 `progress` line that repeats a report"
    assert tally_text(template, 20) == "skipped 20 `progress` lines that repeat a report"
    assert tally_text(template, 1234) == "skipped 1,234 `progress` lines that repeat a report"
    assert tally_text("kept {n} image(s) as {0}", 1) == "kept 1 image as {0}"  # other braces are file text: kept


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name[:40]}")
def test_no_note_of_a_real_log_says_s_in_brackets(path):
    notes = load_session(path).notes
    assert not [n for n in notes if "(s)" in n and "item(s) before compacting" not in n]  # (the latter quotes Codex's own message)


def test_info_counts_the_claude_code_bookkeeping_in_words():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "ctxviz", "info", "tests/data/real/claude_code/spotter-4d5611e5.jsonl"], cwd=ROOT,
                         env=env, capture_output=True, text=True, check=True).stdout
    assert "skipped 208 `progress` lines (bookkeeping, not context)" in out
    assert "left out 1 whitespace-only assistant line, as Claude Code does before sending them" in out
    assert "skipped 1 `system` line of subtype `turn_duration`" in out
    assert "(s)" not in out
