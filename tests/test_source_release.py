"""`SourceFile.release`: a finished load frees the JSONL records it parsed (first line first), and a
source asked for them again reads them again; a records list someone else holds (a follower lends
its own to the source, io/follow.py) is left as it is."""

from __future__ import annotations

import json
import sys

import pytest

from ctxviz.io.loaders import load_session
from ctxviz.io.source import HEAD_BYTES, read_source


@pytest.fixture(params=["small", "streamed"])
def log(request, tmp_path):
    """A JSONL file read whole (under HEAD_BYTES) or streamed line by line (over it)."""
    lines = 20 if request.param == "small" else HEAD_BYTES // 100
    records = [{"role": ("user", "assistant")[i % 2], "content": f"message {i} " + "x" * 80} for i in range(lines)]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path, records


def test_a_released_source_frees_its_records_and_reads_them_again(log):
    path, records = log
    src = read_source(path)
    first = src.jsonl_records[0][1]
    held = sys.getrefcount(first)
    src.release()
    assert sys.getrefcount(first) == held - 1  # its (line, record) pair is gone, though the source lives on
    assert [r for _, r in src.jsonl_records] == records


def test_a_records_list_someone_else_holds_is_left_whole(log):
    path, records = log
    src = read_source(path)
    lent = src.jsonl_records
    src.release()
    assert [r for _, r in lent] == records
    assert src.jsonl_records is not lent and [r for _, r in src.jsonl_records] == records


def test_a_load_releasing_its_records_gives_the_same_session(log, monkeypatch):
    path, _ = log
    released = load_session(path)
    monkeypatch.setattr("ctxviz.io.source.SourceFile.release", lambda self: None)
    assert load_session(path) == released
