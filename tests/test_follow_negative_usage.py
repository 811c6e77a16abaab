"""A followed log's appended lines get the check `load_session` makes: a negative reported usage is
left out with one note naming the message (io/usage_counts.py). The follower read appended Claude
Code lines on top of its kept state and never checked them, so `ctxviz watch` and the app's follow
mode showed a call that sent -5 tokens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ctxviz.io.follow import Follower
from ctxviz.io.loaders import load_session

CC = Path(__file__).resolve().parent / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"
#: The last line of the log that is part of the conversation (the `last-prompt` line after it is not).
LAST_UUID = "565459f1-5e3a-450a-8b5f-a4f14b1c8b1c"


def _assistant_line(uuid: str, parent: str, input_tokens: int) -> str:
    """The log's last assistant line again, as a new call with `input_tokens` reported."""
    lines = CC.read_text().splitlines()
    record: dict[str, Any] = json.loads(next(line for line in reversed(lines) if '"usage"' in line and '"assistant"' in line))
    record.update(uuid=uuid, parentUuid=parent)
    record["message"]["id"] = f"msg_{uuid[-4:]}"
    record["message"]["usage"]["input_tokens"] = input_tokens
    return json.dumps(record) + "\n"


def _negative_notes(notes: tuple[str, ...]) -> list[str]:
    return [n for n in notes if "negative token count" in n]


def test_an_appended_line_with_negative_usage_is_left_out_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(CC, path)
    follower = Follower(path)
    first = follower.poll()
    assert first is not None and not _negative_notes(first.session.notes)
    bad = "0000aaaa-0000-0000-0000-000000000001"
    with path.open("a") as handle:
        handle.write(_assistant_line(bad, LAST_UUID, -5))
    update = follower.poll()
    assert update is not None and follower.incremental_loads == 1  # (read on top of the kept state)
    last = update.session.messages[-1]
    assert last.id == bad and last.usage is None
    notes = _negative_notes(update.session.notes)
    assert len(notes) == 1 and f"#{last.index} ({bad}): input_tokens -5" in notes[0]
    assert update.session == load_session(str(path))


def test_the_note_stays_when_more_lines_follow(tmp_path: Path) -> None:
    """The messages carried from poll to poll keep the usage as read, so the note still names the
    bad message after a later line is appended (and matches a fresh load)."""
    path = tmp_path / "session.jsonl"
    shutil.copy(CC, path)
    bad, good = "0000aaaa-0000-0000-0000-000000000001", "0000aaaa-0000-0000-0000-000000000002"
    with path.open("a") as handle:
        handle.write(_assistant_line(bad, LAST_UUID, -5))
    follower = Follower(path)
    first = follower.poll()
    assert first is not None and len(_negative_notes(first.session.notes)) == 1
    with path.open("a") as handle:
        handle.write(_assistant_line(good, bad, 12))
    update = follower.poll()
    assert update is not None
    assert [m.usage is None for m in update.session.messages[-2:]] == [True, False]
    assert len(_negative_notes(update.session.notes)) == 1 and bad in _negative_notes(update.session.notes)[0]
    assert update.session == load_session(str(path))
    assert update.session.notes == load_session(str(path)).notes
