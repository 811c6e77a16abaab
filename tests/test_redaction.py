"""A sanitised log (its texts replaced by `[REDACTED_TEXT len=N sha=...]` markers before it was
shared, as the localpush Codex fixtures are: tests/data/real/codex/SOURCES.md) is said to be one,
and its markers' hashes are not read as facts: one such log listed hashes as a third of its lost
commits ("commit 'dc9e82a0' [you named it in #2]")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ctxviz.engine.anchors import anchors_of
from ctxviz.engine.planner import plan_session
from ctxviz.engine.redaction import read_redaction_note, redaction_note, without_markers
from ctxviz.io.loaders import load_session

REAL = Path(__file__).parent / "data" / "real"
LOCALPUSH = next((REAL / "codex").glob("localpush-rollout-2026-02-23T12-54-34-*.jsonl"))


def test_the_note_counts_the_markers_and_what_they_stand_for() -> None:
    session = load_session(LOCALPUSH)
    raw = LOCALPUSH.read_text()
    note = read_redaction_note(session)
    assert note.startswith(f"{len(session.messages):,} of {len(session.messages):,} messages hold redaction markers")
    # each marker's len= is counted once per message text that holds it (the file repeats some in event copies)
    lengths = [int(n) for m in session.messages for p in m.parts for t in [getattr(p, "text", None) or getattr(p, "arguments", "")]
               for n in re.findall(r"\[REDACTED_[A-Z_]+ len=(\d+)", t or "")]
    assert f"standing for {sum(lengths):,} characters" in note
    assert "[REDACTED_TEXT len=" in raw


def test_every_plan_carries_the_note_once() -> None:
    session = load_session(LOCALPUSH)
    plan = plan_session(session, "codex-compaction")
    assert sum("redaction markers" in n for n in plan.notes) == 1
    assert redaction_note(session) is redaction_note(session)  # read once while the session lives


def test_a_log_without_markers_has_no_note() -> None:
    session = load_session(REAL / "claude_code" / "tugtool-compact-native.jsonl")
    assert read_redaction_note(session) == ""
    assert not any("redaction" in n for n in plan_session(session, "claude-code").notes)


def test_a_marker_is_no_anchor() -> None:
    session = load_session(LOCALPUSH)
    hashes = set(re.findall(r"sha=([0-9a-f]+)\]", "\n".join(m.text for m in session.messages)))
    assert hashes
    values = {a.value.lower() for a in anchors_of(session).anchors}
    assert not values & hashes
    assert not any("redacted" in v for v in values)


def test_text_around_a_marker_is_still_read() -> None:
    assert without_markers("see [REDACTED_TEXT len=12 sha=abcdef12] in src/app.py") == "see   in src/app.py"
    assert without_markers("[REDACTED] and [REDACTED_PROMPT]").strip() == "and"


def test_plan_says_there_is_nothing_to_lose() -> None:
    out = subprocess.run([sys.executable, "-m", "ctxviz", "plan", str(LOCALPUSH)], capture_output=True, text=True, check=True).stdout
    assert "0 of 0 anchors" not in out and "(100 %)" not in out.split("retention")[-1]
    assert "the session states no anchor" in out
    assert "dc9e82a0" not in out.split("retention")[-1]


def test_a_masked_secret_in_a_tool_output_is_no_sanitised_log() -> None:
    """A tool printing `API_KEY=[REDACTED]` sent the model just that: no claim that the log was
    sanitised (its anchors still skip the marker)."""
    from ctxviz.engine.session import Message, Session, TextPart

    def msg(i: int, role: str, text: str) -> Message:
        return Message(id=f"m{i}", index=i, role=role, parts=(TextPart(text),))

    talk = [msg(i, "user" if i % 2 == 0 else "assistant", f"step {i} of the deploy") for i in range(6)]
    session = Session(messages=(*talk, msg(6, "tool", "API_KEY=[REDACTED]\nDB_URL=postgres://db/app")))
    assert read_redaction_note(session) == ""
    signed = Session(messages=(*talk, msg(6, "tool", "[REDACTED_TEXT len=40 sha=0a1b2c3d]")))
    assert "1 of 7 messages hold redaction markers" in read_redaction_note(signed)
