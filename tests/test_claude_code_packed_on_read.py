"""A Claude Code line's record is packed as the line is read (`_Line.packed`, while the record is
fresh in memory), not during the walk over the conversation: what each message keeps must be what
packing it during the walk gives, and the walk must use it rather than pack the line again."""

from __future__ import annotations

import glob
import os

import pytest

from ctxviz.engine.packed_json import PackedLines, PackedRecord, Packer, unpack
from ctxviz.engine.session import stored_raw
from ctxviz.io import claude_code
from ctxviz.io.claude_code.records import packed_record
from ctxviz.io.loaders import load_session
from ctxviz.io.source import read_source

CLAUDE_CODE_LOGS = sorted(glob.glob("tests/data/real/claude_code/*.jsonl") + glob.glob("tests/data/heldout/claude_code/*.jsonl")
                          + glob.glob("sample_sessions/claude_code_*.jsonl"))


def _kept(session: object) -> set[int]:
    """The ids of the packed records the session's messages keep."""
    kept: set[int] = set()
    for m in session.messages:  # type: ignore[attr-defined]
        stored = stored_raw(m)
        kept.update(id(r) for r in (stored if isinstance(stored, PackedLines) else (stored,)) if isinstance(r, PackedRecord))
    return kept


@pytest.mark.parametrize("path", CLAUDE_CODE_LOGS, ids=os.path.basename)
def test_a_record_packed_on_read_is_the_one_the_walk_would_pack(path):
    """Same record, same holes, the very hole strings (the texts the parts hold: packed before a
    sub-agent line's parts were built, a tool call's input would be copied instead); and every
    message made of a line packed on read keeps that packed record."""
    src = read_source(path)
    session, reader = claude_code.ClaudeCodeLoader().load_resumable(src, keep=True)
    assert reader is not None
    early = [x for x in reader.lines if x.packed is not None]
    # (a sub-agent's lines are packed in the walk, if the file turns out to be its transcript)
    assert early or not any(x.role and not x.sidechain for x in reader.lines)
    assert _kept(session) or not session.messages
    for x in early:
        again = packed_record(Packer(), x)
        assert unpack(x.packed) == unpack(again)
        assert x.packed[1] == again[1] and all(a is b for a, b in zip(x.packed[2:], again[2:], strict=True)), x.lineno
    kept = _kept(session)
    produced = {x.uuid for x in early if reader.produced.get(x.uuid)}
    assert all(id(x.packed) in kept for x in early if x.uuid in produced and x.kind in ("user", "assistant"))


@pytest.mark.parametrize("path", CLAUDE_CODE_LOGS[:4], ids=os.path.basename)
def test_a_load_packing_every_record_in_the_walk_is_the_same(path, monkeypatch):
    """With no record packed on read (each line packed by the walk, as before), a load gives the
    same messages and the same records."""
    on_read = load_session(path)
    monkeypatch.setattr(claude_code.lines._Line, "packed", property(lambda self: None, lambda self, value: None))
    in_walk = load_session(path)
    assert on_read == in_walk
    assert [m.raw for m in on_read.messages] == [m.raw for m in in_walk.messages]
