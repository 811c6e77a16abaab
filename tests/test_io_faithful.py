"""Issue 21, "Reading files": the loaders read what the frameworks and agents wrote, as they read it.

Each test loads a real file other tools wrote (tests/data/real, sources in each SOURCES.md) or
compares with golden cases recorded by running the framework's own code (tests/golden).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.io.loaders import load_session

REAL = Path(__file__).parent / "data" / "real"

# -- a cut-off last line (a live or crashed session) ------------------------------------------------------

JSONL_LOGS = [
    REAL / "claude_code" / "agentcmd-full-session-two.jsonl",
    REAL / "claude_code" / "tugtool-rewind-branch.jsonl",
    REAL / "codex" / "localpush-rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
    REAL / "gemini_cli" / "aim_matrix_pro.migrated.jsonl",
]


def _cut_last_line(text: str) -> tuple[str, int]:
    """The text with its last record cut in the middle (as an agent that is still writing leaves
    it), and the number of that line."""
    lines = text.rstrip("\n").split("\n")
    last = lines[-1]
    return "\n".join([*lines[:-1], last[: len(last) // 2]]), len(lines)


@pytest.mark.parametrize("path", JSONL_LOGS, ids=[p.name for p in JSONL_LOGS])
def test_a_cut_off_last_line_is_skipped_with_a_note_in_every_jsonl_log(path):
    text = path.read_text(encoding="utf-8")
    cut, last = _cut_last_line(text)
    whole = load_session(str(path), text="\n".join(text.rstrip("\n").split("\n")[:-1]) + "\n")
    got = load_session(str(path), text=cut)
    assert [m.id for m in got.messages] == [m.id for m in whole.messages]
    assert any(n.startswith(f"skipped the last line ({last:,})") or n.startswith(f"skipped the last line ({last})") for n in got.notes), got.notes


@pytest.mark.parametrize("lines", [
    ['{"role": "user", "content": "a"}', '{"role": "assistant", "content": "b'],  # OpenAI chat JSONL
    ['{"type": "human", "data": {"content": "a"}}', '{"type": "ai", "data": {"content": "b'],  # LangChain messages_to_dict lines
])
def test_a_cut_off_last_line_is_skipped_in_the_other_jsonl_formats(tmp_path, lines):
    path = tmp_path / "live.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    s = load_session(str(path))
    assert [m.text for m in s.messages] == ["a"]
    assert any(n.startswith("skipped the last line (2)") for n in s.notes)
