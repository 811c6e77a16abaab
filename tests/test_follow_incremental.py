"""Following a log reads the appended records on top of what was read (io/follow.py with the Claude
Code, Codex and Gemini CLI loaders' `load_more`), and that gives exactly what a full load of the file
gives: the same session (every message field, the records each came from, the notes in their order),
after every append, for real logs split at many points; the messages read before are the same objects
(so counts and anything cached per message carry over); and where carrying on cannot be sure (a rewind,
a compaction, a parent written after its child...), a full load is made instead, and says why."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from ctxviz.errors import LoadError
from ctxviz.io.follow import Follower
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"
CLAUDE = sorted((REAL / "claude_code").glob("*.jsonl")) + sorted((ROOT / "tests" / "data" / "claude_code").glob("*.jsonl"))
CODEX = sorted((REAL / "codex").glob("*.jsonl"))
GEMINI = sorted((REAL / "gemini_cli").glob("*.jsonl"))
REWIND = REAL / "claude_code" / "tugtool-rewind-branch.jsonl"  # rewinds and three /compact
SIDECHAIN = REAL / "claude_code" / "claude-code-viewer-fe5e1c67.jsonl"  # 405 of 438 lines are a sub-agent's
COMPACT = REAL / "claude_code" / "tugtool-compact-native.jsonl"  # a compaction that kept a segment


def _assert_same(followed, expected) -> None:
    assert followed == expected
    assert [m.raw for m in followed.messages] == [m.raw for m in expected.messages]
    assert followed.notes == expected.notes


#: A long log is compared with a full load after its first 20 appends, its last, and about this
#: many spread between (every append is still read, and carried on from the state the one before
#: left, so a wrong state shows at the next comparison; the comparisons, each a full load, are what
#: makes a long log slow to test).
CHECKS = 50


def _follow(lines: list[str], path: Path, sizes: list[int]) -> Follower:
    """Write `lines` in pieces of `sizes` lines, polling after each and comparing with a full load."""
    path.write_text("", encoding="utf-8")
    follower = Follower(path)
    at = 0
    every = max(1, len(sizes) // CHECKS)
    for n, size in enumerate(sizes):
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(lines[at:at + size]))
        at += size
        previous = follower.session
        try:
            follower.poll()
            if n % every and at < len(lines) and n > 20:
                continue
            expected = load_session(path)
        except LoadError:
            continue  # nothing loadable yet (a file still without its first message line)
        session = follower.session
        _assert_same(session, expected)
        if previous is not None and follower.why_full == "" and session is not previous:
            # Carried on: what did not change is the very same message object.
            kept = [k for k, (old, new) in enumerate(zip(previous.messages, session.messages, strict=False)) if old is new]
            assert kept == list(range(len(kept)))
        if at >= len(lines):
            break
    return follower


def _pieces(total: int, seed: int) -> list[int]:
    rnd = random.Random(seed)
    sizes = []
    while sum(sizes) < total:
        sizes.append(rnd.randint(1, 9))
    return sizes


@pytest.mark.parametrize("log", CLAUDE + CODEX + GEMINI, ids=lambda p: p.stem[:40])
def test_line_by_line_and_in_random_pieces_it_equals_a_full_load(log: Path, tmp_path: Path) -> None:
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    one = _follow(lines, tmp_path / f"one-{log.name}", [1] * len(lines))
    _follow(lines, tmp_path / f"pieces-{log.name}", _pieces(len(lines), seed=len(lines)))
    if len(lines) > 10:
        # The point: most appends are read on top of what was read, not by loading everything again.
        assert one.incremental_loads > one.full_loads, (one.incremental_loads, one.full_loads, one.why_full)


@pytest.mark.parametrize("log", CLAUDE, ids=lambda p: p.stem[:40])
def test_from_every_split_point_on(log: Path, tmp_path: Path) -> None:
    """The file up to line k read whole, then the rest in one append and line by line."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    step = max(1, len(lines) // 8)
    for k in range(1, len(lines), step):
        _follow(lines, tmp_path / f"split{k}-{log.name}", [k, len(lines) - k])
        _follow(lines, tmp_path / f"then{k}-{log.name}", [k, *([1] * min(15, len(lines) - k))])


def _records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def _lines(records: list[dict]) -> list[str]:
    return [json.dumps(r) + "\n" for r in records]


@pytest.mark.parametrize("log", CLAUDE, ids=lambda p: p.stem[:40])
def test_lines_written_twice(log: Path, tmp_path: Path) -> None:
    """Claude Code sometimes appends a line again (the same uuid and content), soon or much later."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    rnd = random.Random(7)
    for _ in range(6):
        i = rnd.randrange(len(lines))
        lines.insert(rnd.randrange(i, len(lines)) + 1, lines[i])
    _follow(lines, tmp_path / log.name, [1] * len(lines))


@pytest.mark.parametrize("log", CLAUDE, ids=lambda p: p.stem[:40])
def test_a_line_whose_parent_comes_later(log: Path, tmp_path: Path) -> None:
    """Lines swapped with the line after them: a line names a parent not yet written."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    rnd = random.Random(11)
    for _ in range(6):
        i = rnd.randrange(len(lines) - 1)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    follower = _follow(lines, tmp_path / log.name, [1] * len(lines))
    assert follower.full_loads >= 1


def test_a_parent_written_after_its_child_needs_a_full_load(tmp_path: Path) -> None:
    records = _records(REAL / "claude_code" / "spotter-4d5611e5.jsonl")
    turns = [k for k, r in enumerate(records) if r.get("type") in ("user", "assistant") and r.get("parentUuid")]
    k = turns[len(turns) // 2]
    records[k], records[k - 1] = records[k - 1], records[k]  # the child first, then its parent
    lines = _lines(records)
    follower = _follow(lines, tmp_path / "later.jsonl", [k, 1, 1, *([1] * 5)])
    assert follower.full_loads >= 2


def test_a_rewind_and_compactions_need_a_full_load_and_say_why(tmp_path: Path) -> None:
    lines = REWIND.read_text(encoding="utf-8").splitlines(keepends=True)
    follower = Follower(tmp_path / "rewind.jsonl")
    (tmp_path / "rewind.jsonl").write_text("", encoding="utf-8")
    reasons = set()
    for line in lines:
        with (tmp_path / "rewind.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(line)
        before = follower.full_loads
        try:
            follower.poll()
        except LoadError:
            continue
        if follower.full_loads > before and follower.session is not None and follower.why_full:
            reasons.add(follower.why_full)
    _assert_same(follower.session, load_session(tmp_path / "rewind.jsonl"))
    assert any("compaction" in r for r in reasons)
    assert any("does not hang from the previous one" in r for r in reasons)


def test_sidechain_lines_between_main_lines(tmp_path: Path) -> None:
    """A sub-agent's lines interleaved with the main session's: skipped and counted, carried on."""
    lines = SIDECHAIN.read_text(encoding="utf-8").splitlines(keepends=True)
    follower = _follow(lines, tmp_path / SIDECHAIN.name, [1] * len(lines))
    assert any("isSidechain" in note for note in follower.session.notes)
    assert follower.incremental_loads > 10 * follower.full_loads


def test_a_compaction_that_kept_a_segment(tmp_path: Path) -> None:
    lines = COMPACT.read_text(encoding="utf-8").splitlines(keepends=True)
    follower = _follow(lines, tmp_path / COMPACT.name, [1] * len(lines))
    assert follower.session.compactions and follower.session.compactions[0].preserved


def test_gemini_rewinds_and_checkpoints(tmp_path: Path) -> None:
    """Gemini CLI appends a message again when it changes, rewinds with `$rewindTo` and replaces all
    messages with a `$set` checkpoint: each is read on top of what was read."""
    records = _records(GEMINI[0])
    messages = [r for r in records if isinstance(r.get("id"), str)]
    lines = _lines(records)
    lines.append(json.dumps(messages[3]) + "\n")  # an earlier message written again, changed
    lines[-1] = lines[-1].replace('"type"', '"extra": 1, "type"', 1)
    lines.append(json.dumps({"$rewindTo": messages[-4]["id"]}) + "\n")
    lines += _lines(messages[-4:])
    lines.append(json.dumps({"$set": {"messages": messages[:5], "summary": "checkpoint"}}) + "\n")
    lines += _lines(messages[5:9])
    follower = _follow(lines, tmp_path / "chat.jsonl", [1] * len(lines))
    assert any("rewound" in note for note in follower.session.notes)
    assert follower.full_loads == 1  # only the first read


def test_codex_switching_vocabulary_needs_a_full_load(tmp_path: Path) -> None:
    """A rollout that read its user messages from `event_msg` lines so far, then gets a
    `response_item` user message: a full load skips the events it read, so following loads it whole."""
    records = _records(CODEX[0])
    events = [r for r in records if not (r.get("type") == "response_item" and r["payload"].get("type") == "message"
                                         and r["payload"].get("role") == "user")]
    item = next(r for r in records if r.get("type") == "response_item" and r["payload"].get("role") == "user")
    lines = _lines(events) + _lines([item])
    follower = _follow(lines, tmp_path / "rollout-x.jsonl", [len(lines) - 1, 1])
    assert follower.full_loads == 2


def test_counts_carry_over_and_only_new_messages_are_measured(tmp_path: Path) -> None:
    import dataclasses

    from ctxviz.engine.counting import count_session
    from ctxviz.engine.policies import get_policy

    lines = (REAL / "claude_code" / "spotter-4d5611e5.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(lines[:150]), encoding="utf-8")
    follower = Follower(path)
    follower.poll()
    base = get_policy("claude-code").scheme(None, follower.session.model)
    measured: list[str] = []

    def counting(message, tokenizer):
        measured.append(message.id)
        return base.measure(message, tokenizer)

    scheme = dataclasses.replace(base, measure_name="counting-test", measure=counting)
    follower.counts(scheme)
    measured.clear()
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines[150:170]))
    old = follower.session
    follower.poll()
    assert follower.why_full == "" and follower.incremental_loads == 1
    grown = follower.counts(scheme)
    same = sum(1 for a, b in zip(old.messages, follower.session.messages, strict=False) if a is b)
    assert same > 0
    assert len(measured) == len(follower.session.messages) - same  # only what is new or changed
    assert grown.message_tokens == count_session(follower.session, base).message_tokens


def _whitespace_reply(after: dict, n: int, usage: bool) -> dict:
    """An assistant line whose only block is whitespace, hanging from `after` (a message of its own,
    with or without the usage its call reported)."""
    record = json.loads(json.dumps(after)) if after.get("type") == "assistant" else {
        k: v for k, v in after.items() if k in ("sessionId", "cwd", "version", "gitBranch", "userType", "isSidechain")}
    message = {"id": f"msg_ws{n}", "type": "message", "role": "assistant", "model": "claude-opus-4-5",
               "content": [{"type": "text", "text": "\n\n" if n % 2 else " \t\n"}]}
    if usage:
        message["usage"] = {"input_tokens": 10 + n, "output_tokens": 2, "cache_read_input_tokens": 1000 * n,
                            "cache_creation_input_tokens": 0}
    record.update(type="assistant", uuid=f"00000000-0000-4000-8000-{n:012d}", parentUuid=after["uuid"], message=message)
    record.pop("toolUseResult", None)
    return record


def test_whitespace_only_assistant_lines_are_carried_on(tmp_path: Path) -> None:
    """Claude Code leaves out an assistant line of whitespace only, and its reported usage moves to
    the next message sent (to the one before it while it is the last): each such line appended, one
    or several in a row, with or without usage, at the end of the file or followed by more, is read
    on top of what was read and gives what a full load gives."""
    records = _records(REAL / "claude_code" / "spotter-4d5611e5.jsonl")
    turns = [k for k, r in enumerate(records) if r.get("type") in ("user", "assistant") and r.get("uuid")]
    # After an assistant line answered by the user (the usage moves to the user's message), after a
    # user line followed by an assistant one (it moves only while the reply is the last line).
    before_user = [k for k, n in zip(turns, turns[1:], strict=False) if records[k]["type"] == "assistant" and records[n]["type"] == "user"]
    before_assistant = [k for k, n in zip(turns, turns[1:], strict=False) if records[k]["type"] == "user" and records[n]["type"] == "assistant"]
    at = set(before_user[1::4] + before_assistant[2::6])
    out: list[dict] = []
    n = 0
    for k, r in enumerate(records):
        out.append(r)
        if k in at or k == len(records) - 1:  # one, two or three in a row; some at the very end
            for j in range(1 + n % 3):
                n += 1
                out.append(_whitespace_reply(out[-1], n, usage=j != 1))
            for x in records[k + 1:]:
                if x.get("parentUuid") == r["uuid"]:
                    x["parentUuid"] = out[-1]["uuid"]
    lines = _lines(out)
    follower = _follow(lines, tmp_path / "ws.jsonl", [1] * len(lines))
    assert any("whitespace-only" in note for note in follower.session.notes)
    assert any("kept the reported usage" in note for note in follower.session.notes)
    # Read whole only where the log without them is (its rewinds), never for a whitespace-only line.
    assert follower.full_loads == _full_loads(_lines(records), tmp_path / "plain.jsonl")
    _follow(lines, tmp_path / "ws-pieces.jsonl", _pieces(len(lines), seed=3))


def _full_loads(lines: list[str], path: Path) -> int:
    """How many times following `lines` appended one by one reads the file whole."""
    path.write_text("", encoding="utf-8")
    follower = Follower(path)
    for line in lines:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line)
        try:
            follower.poll()
        except LoadError:
            continue
    return follower.full_loads
