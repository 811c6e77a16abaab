"""Packed records (engine/packed_json.py): what `Message.raw` keeps of a Claude Code line reads back as
the record itself, on random JSON and on every real log, for every reader of `raw`."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import pickle
from concurrent.futures import ThreadPoolExecutor
from copy import deepcopy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.caching import log_lifetime
from ctxviz.engine.packed_json import PackedLines, PackedRecord, Packer, place, unpack
from ctxviz.engine.session import Message, TextPart, ToolCallPart, message_with, record_of, same_raw, stored_raw
from ctxviz.io import claude_code
from ctxviz.io.exporters import original_blocks
from ctxviz.io.loaders import load_session, named
from ctxviz.io.source import read_source

from .hypothesis_budget import examples

CLAUDE_CODE_LOGS = sorted(glob.glob("tests/data/real/claude_code/*.jsonl") + glob.glob("tests/data/heldout/claude_code/*.jsonl")
                          + glob.glob("sample_sessions/claude_code_*.jsonl"))

# JSON as json.loads gives it: ints of any size, floats (NaN and infinities too), strings with any code point.
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=80)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
                           max_leaves=30)


def same(a: object, b: object) -> bool:
    """Equal as JSON: the values, their types (True is not 1, 1.0 is not 1) and the keys' order
    (NaN, which equals nothing, as its JSON text)."""
    return json.dumps(a) == json.dumps(b) and (a == b or "NaN" in json.dumps(a))


def _places(value: object, path: tuple = ()) -> list[tuple]:
    """Every place inside `value` (its dicts' keys and its lists' positions, nested), top first."""
    found: list[tuple] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        found.append((*path, key))
        found += _places(inner, (*path, key))
    return found


def _at(value: object, path: tuple) -> object:
    for key in path:
        value = value[key]  # type: ignore[index]
    return value


@settings(max_examples=examples(300), deadline=None)
@given(record=st.dictionaries(st.text(max_size=8), json_values, max_size=8), data=st.data())
def test_a_packed_record_unpacks_to_the_record_with_its_holes_filled(record, data):
    """The reference is the record itself: whatever places are holes (a string kept as it is, or
    any value kept as its JSON text and parsed when read), the packed record reads back as the
    record, key order and types included, fresh on each read (pickled too); the hole strings are kept, not
    copied. Holes nest in no other hole, as a loader's do (one per block)."""
    chosen: list[tuple] = []
    for path in _places(record):
        if not any(path[:len(p)] == p for p in chosen) and data.draw(st.booleans()):
            chosen.append(path)
    parse = [data.draw(st.booleans()) or not isinstance(_at(record, p), str) for p in chosen]
    skeleton = deepcopy(record)
    values = []
    for path, as_json in zip(chosen, parse, strict=True):
        value = _at(record, path)
        values.append(json.dumps(value) if as_json else value)
        _at(skeleton, path[:-1])[path[-1]] = None  # type: ignore[index]
    packer = Packer()
    packed = packer.record(skeleton, tuple(place(p, j) for p, j in zip(chosen, parse, strict=True)), values)
    first = unpack(packed)
    assert same(first, record)
    first.clear()  # a reader that changes what it read changes nothing else
    assert same(unpack(packed), record)
    assert all(a is b for a, b in zip(packed[2:], values, strict=True))
    assert same(unpack(pickle.loads(pickle.dumps(packed))), record)  # (a message pickled to a worker carries it)
    assert same(unpack(PackedLines((packed, packer.record(skeleton)))), [record, skeleton])


def test_message_raw_reads_a_packed_record_as_the_record_it_packs():
    """`record_of` unpacks a fresh record on each read and leaves the message packed (a one-pass
    reader's); `raw` unpacks it once and keeps it unpacked (the policies read it at every turn);
    copies of the message keep it as it is kept; any other raw is kept and read as it is."""
    record = {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 1000}}}
    packed = PackedLines((Packer().record(record),))
    m = Message("a1", 0, "assistant", (TextPart("hi"),), raw=packed)
    first = record_of(m)
    assert first == [record] and record_of(m) is not first
    first[0]["message"]["content"].clear()  # a reader that changes what it read changes nothing else
    assert record_of(m) == [record] and stored_raw(m) is packed
    for copy in (message_with(m, index=3), named(m, "x"), pickle.loads(pickle.dumps(m))):
        assert stored_raw(copy) == packed and copy.raw == [record]
    assert dataclasses.replace(m, index=2).raw == [record]
    assert m.raw == [record] and m.raw is m.raw and stored_raw(m) is m.raw  # unpacked once, kept
    assert record_of(m) is m.raw
    plain = {"role": "user"}
    assert Message("u1", 0, "user", raw=plain).raw is plain and Message("u1", 0, "user").raw is None


def _full_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages keep their lines' records as the loader read them (less the fields no reader uses),
    not packed: the reference the packed records are checked against."""
    def full(packer: Packer, x: object) -> dict:
        return {k: v for k, v in x.record.items() if k not in claude_code.UNREAD_AFTER_LOAD}  # type: ignore[attr-defined]

    monkeypatch.setattr(claude_code.reader, "packed_record", full)
    monkeypatch.setattr(claude_code.loop, "packed_record", full)


@pytest.mark.parametrize("path", CLAUDE_CODE_LOGS, ids=os.path.basename)
def test_every_real_log_reads_its_records_back_from_the_packed_ones(path, monkeypatch):
    """Each message's `raw` is its line's record (its lines', for a streamed assistant message), as
    the file wrote it less `UNREAD_AFTER_LOAD`; the Anthropic export's original blocks and the cache
    lifetime the log recorded read the same from it."""
    packed = load_session(path)
    assert any(isinstance(stored_raw(m), (PackedRecord, PackedLines)) for m in packed.messages)
    _full_records(monkeypatch)
    full = load_session(path)
    assert not any(isinstance(stored_raw(m), PackedRecord) for m in full.messages)
    assert packed.messages == full.messages
    for a, b in zip(packed.messages, full.messages, strict=True):
        assert original_blocks(a) == original_blocks(b)
    assert log_lifetime(packed) == log_lifetime(full)
    assert all(stored_raw(a).__class__ is not list for a in packed.messages if a.role == "assistant")  # they left it packed
    for a, b in zip(packed.messages, full.messages, strict=True):
        assert same(record_of(a), b.raw) and same(a.raw, b.raw), a.id


def test_a_tool_calls_input_is_kept_as_its_arguments(tmp_path):
    """The packed record holds a tool_use's `input` as the call's `arguments` string (one copy of the
    text), and reads back the input as written: key order, nesting, numbers, escapes."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "Edit",
            "input": {"z": 1, "a": [1.5, True, None, {"é": "line\nbreak \u2028"}], "big": 2**65}}
    lines = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "go"}},
             {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", "cwd": "/x",
              "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "ok"}, call]}}]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    m = load_session(path).messages[1]
    part = m.parts[1]
    (record,) = stored_raw(m)
    assert part.arguments in {v for v in _leaves(record) if isinstance(v, str)}  # the arguments themselves, not a parsed copy
    assert same(m.raw, [{k: v for k, v in lines[1].items() if k != "cwd"}])


def _leaves(value: object) -> list[object]:
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def test_same_raw_is_raw_equality_without_unpacking():
    """What counting a grown log compares (engine/counting.py `extend_counts`): equal records, packed
    or not, are the same; a changed one is not; the messages stay packed."""
    record = {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "out"}]}}
    changed = {**record, "message": {"role": "user", "content": "other"}}

    def message(raw: object) -> Message:
        return Message("u1", 0, "user", raw=raw)

    a, b, c = message(Packer().record(record)), message(Packer().record(record)), message(Packer().record(changed))
    assert same_raw(a, b) and not same_raw(a, c)
    assert same_raw(a, message(record)) and not same_raw(message(changed), a) and same_raw(message(record), message(dict(record)))
    assert isinstance(stored_raw(a), PackedRecord) and isinstance(stored_raw(b), PackedRecord)


def _block_texts(record: object) -> list[str]:
    """The strings a record's blocks hold where a part takes its text (and a string `content`)."""
    message = record.get("message") if isinstance(record, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [content]
    return [b.get(key) for b in content or () if isinstance(b, dict) for key in ("text", "thinking", "content")
            if isinstance(b.get(key), str)]


@pytest.mark.parametrize("path", CLAUDE_CODE_LOGS[:6], ids=os.path.basename)
def test_a_message_keeps_its_texts_once_and_its_lines_as_they_were_read(path):
    """What makes a packed record small: each text a part holds that its line's record holds too is
    one string, the part's (a hole), not a second copy in the bytes; a tool call's input is its
    arguments. Packing leaves the lines' records as read (a growing log compares them)."""
    src = read_source(path)
    session, reader = claude_code.ClaudeCodeLoader().load_resumable(src, keep=True)
    checked = 0
    for m in session.messages:
        stored = stored_raw(m)
        records = stored if isinstance(stored, PackedLines) else (stored,)
        held = {id(v) for r in records if isinstance(r, PackedRecord) for v in r[2:]}
        texts = {t for r in record_of(m) if isinstance(r, dict) for t in _block_texts(r)} if isinstance(stored, PackedLines) else set(_block_texts(record_of(m)))
        for p in m.parts:
            text = p.arguments if isinstance(p, ToolCallPart) else getattr(p, "text", "")
            if text and (isinstance(p, ToolCallPart) or text in texts):
                assert id(text) in held, (m.id, p)
                checked += 1
    assert checked
    if reader is not None:
        with open(path, encoding="utf-8") as f:
            lines = {r.get("uuid"): r for r in map(json.loads, filter(str.strip, f)) if isinstance(r, dict)}
        assert all(x.record == lines[x.uuid] for x in reader.lines if x.uuid)


def test_two_loads_of_a_log_have_the_same_records():
    """What counting a reloaded log relies on (engine/counting.py `extend_counts`): each message of a
    second load of the same file has the same `raw` as the first's, although the bytes of equal
    packed records may differ (a usage count the loader's cache of usages holds from the first
    load is written as shared); the messages stay packed."""
    for path in CLAUDE_CODE_LOGS[:4]:
        first, second = load_session(path), load_session(path)
        assert all(same_raw(a, b) for a, b in zip(first.messages, second.messages, strict=True)), path
        assert any(isinstance(stored_raw(m), PackedLines) for m in second.messages)
        assert all(stored_raw(m).__class__ is not list for m in first.messages + second.messages)


def test_loads_on_threads_at_once_read_their_records_back():
    """The places of holes are shared by every load in the process (engine/packed_json.py `place`):
    loads on several threads that meet new places at once (a message with more blocks than any
    before it) each read their records back as a load alone does."""
    lines = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "go"}},
             {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
              "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": f"block {k}"} for k in range(400, 700)]}}]
    text = "".join(json.dumps(r) + "\n" for r in lines)
    with ThreadPoolExecutor(4) as pool:
        sessions = list(pool.map(lambda _: load_session("threads.jsonl", text=text), range(8)))
    assert all(s.messages[1].raw == [lines[1]] for s in sessions)
