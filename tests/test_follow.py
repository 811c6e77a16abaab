"""Following a growing log (io/follow.py): after every write, the followed session equals
`load_session` of the file so far and its plan equals `plan_session` of that, for real Claude Code,
Codex and Gemini CLI logs written line by line (each line in two halves, so a cut-off line is seen),
from this process and from another; a replaced, truncated or deleted file; counts that measure only
what is new."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxviz.engine.counting import CountingScheme, count_session
from ctxviz.engine.planner import plan_session
from ctxviz.engine.tokenizers import get_tokenizer
from ctxviz.engine.verify import agent_policy
from ctxviz.errors import LoadError
from ctxviz.io.follow import Follower
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
LOGS = [
    DATA / "claude_code" / "spotter-8463c716-autocompact.jsonl",  # a real session up to its automatic compaction
    DATA / "real" / "claude_code" / "tugtool-rewind-branch.jsonl",  # rewinds and three /compact
    DATA / "real" / "codex" / "localpush-rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    DATA / "real" / "gemini_cli" / "aim_matrix_pro.migrated.jsonl",  # upserts by id
]


def _check(follower: Follower, path: Path) -> None:
    """The followed session and its plan equal a fresh load and plan of the file as it is."""
    try:
        expected = load_session(path)
    except LoadError:
        return  # nothing loadable yet (the first line still being written): nothing to compare
    assert follower.session == expected
    policy, _ = agent_policy(expected)
    assert follower.plan(policy) == plan_session(expected, policy)


def _halves(line: str) -> tuple[str, str]:
    return line[: len(line) // 2], line[len(line) // 2 :]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem[:40])
def test_written_line_by_line_it_equals_a_fresh_load(log: Path, tmp_path: Path) -> None:
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / log.name
    path.write_text("", encoding="utf-8")
    follower = Follower(path)
    assert follower.poll() is None  # an empty file: waiting
    cut_seen = False
    for line in lines:
        for piece in _halves(line):
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(piece)
            follower.poll()
            _check(follower, path)
            cut_seen = cut_seen or bool(follower.session and any("ends mid-record" in n for n in follower.session.notes))
    assert cut_seen  # a half-written line was seen, and counted as load_session counts it
    assert follower.session is not None and dataclasses.replace(follower.session, source=str(log)) == load_session(log)


WRITER = r"""
import sys, time
path, source = sys.argv[1], sys.argv[2]
lines = open(source, encoding="utf-8").read().splitlines(keepends=True)
for command in sys.stdin:
    step, count = command.split()
    if step == "lines":  # write the next N lines, the last one in two halves with a pause between
        chunk, lines = "".join(lines[: int(count)]), lines[int(count):]
        half = len(chunk) - len(chunk.splitlines(keepends=True)[-1]) // 2
        with open(path, "a", encoding="utf-8") as h:
            h.write(chunk[:half]); h.flush()
        print("half", flush=True)
        sys.stdin.readline()
        with open(path, "a", encoding="utf-8") as h:
            h.write(chunk[half:])
    elif step == "free":  # the rest, a line at a time, without waiting for the reader
        for line in lines:
            with open(path, "a", encoding="utf-8") as h:
                h.write(line)
            time.sleep(float(count))
        lines = []
    print("done", flush=True)
"""


def test_written_by_another_process(tmp_path: Path) -> None:
    log = LOGS[0]
    path = tmp_path / "live.jsonl"
    path.write_text("", encoding="utf-8")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(log)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdin is not None and writer.stdout is not None
    follower = Follower(path)
    try:
        for count in (3, 1, 7, 2, 20):
            writer.stdin.write(f"lines {count}\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "half"
            follower.poll()
            _check(follower, path)  # the last line is cut off here
            writer.stdin.write("go\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "done"
            follower.poll()
            _check(follower, path)
        writer.stdin.write("free 0.002\n")
        writer.stdin.flush()
        while writer.poll() is None:  # polling while it writes: whatever a poll catches, nothing is lost
            follower.poll()
            if writer.stdout.readline().strip() == "done":
                break
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
        writer.stdout.close()
    follower.poll()
    assert follower.session is not None and dataclasses.replace(follower.session, source=str(log)) == load_session(log)


def _followed(tmp_path: Path, log: Path, lines: int) -> tuple[Follower, Path, list[str]]:
    text = log.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / log.name
    path.write_text("".join(text[:lines]), encoding="utf-8")
    follower = Follower(path)
    follower.poll()
    return follower, path, text


def test_a_replaced_file_is_read_again_whole(tmp_path: Path) -> None:
    follower, path, _ = _followed(tmp_path, LOGS[0], 40)
    other = tmp_path / "other.jsonl"
    other.write_text((LOGS[1]).read_text(encoding="utf-8"), encoding="utf-8")
    os.replace(other, path)  # an atomic save: another inode at the path
    update = follower.poll()
    assert update is not None and update.reread
    assert any("replaced" in n for n in update.notes)
    _check(follower, path)
    assert follower.session is not None and dataclasses.replace(follower.session, source=str(LOGS[1])) == load_session(LOGS[1])


def test_a_truncated_file_is_read_again_whole(tmp_path: Path) -> None:
    follower, path, text = _followed(tmp_path, LOGS[0], 60)
    with open(path, "r+", encoding="utf-8") as handle:  # the same inode, shorter
        handle.truncate(0)
        handle.write("".join(text[:25]))
    update = follower.poll()
    assert update is not None and update.reread and any("truncated" in n for n in update.notes)
    _check(follower, path)


def test_a_deleted_file_keeps_what_was_read(tmp_path: Path) -> None:
    follower, path, text = _followed(tmp_path, LOGS[0], 50)
    kept = follower.session
    assert kept is not None and kept.messages
    path.unlink()
    update = follower.poll()
    assert update is not None and update.session is kept and any("deleted" in n for n in update.notes)
    assert follower.poll() is None and follower.session is kept
    path.write_text("".join(text[:10]), encoding="utf-8")  # a new file at the path: read whole
    update = follower.poll()
    assert update is not None and update.reread
    _check(follower, path)


def test_a_line_cut_in_the_middle_of_the_file_is_refused_as_load_session_refuses_it(tmp_path: Path) -> None:
    follower, path, text = _followed(tmp_path, LOGS[0], 10)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(_halves(text[10])[0] + "\n")  # a line cut mid-record, then ended
    follower.poll()
    _check(follower, path)  # as the last line it is skipped with a note, as load_session does
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text[11])
    with pytest.raises(LoadError) as caught:
        load_session(path)
    with pytest.raises(LoadError) as followed:
        follower.poll()
    assert str(followed.value) == str(caught.value)


def test_only_new_or_changed_messages_are_measured(tmp_path: Path) -> None:
    measured: list[str] = []

    def measure(message, tokenizer):  # the claude-code policy's estimate, recording what it measures
        measured.append(message.id)
        return tokenizer.count(message.text)

    scheme = CountingScheme("recording", measure, get_tokenizer("chars4"))
    follower, path, text = _followed(tmp_path, LOGS[3], 20)
    first = follower.counts(scheme)
    assert len(measured) == len(follower.session.messages)
    before = {m.id: m for m in follower.session.messages}
    measured.clear()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(text[20:45]))
    follower.poll()
    grown = follower.counts(scheme)
    session = follower.session
    changed = [m.id for m in session.messages if m.id not in before or before[m.id] != m or before[m.id].raw != m.raw]
    assert measured == changed and len(changed) < len(session.messages)
    assert grown is not first and grown.message_tokens == count_session(session, scheme).message_tokens


def test_polling_an_unchanged_file_reads_nothing(tmp_path: Path) -> None:
    follower, path, _ = _followed(tmp_path, LOGS[0], 30)
    session = follower.session
    started = time.perf_counter()
    assert follower.poll() is None and follower.session is session
    assert time.perf_counter() - started < 0.05
