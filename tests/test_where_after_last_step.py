"""`where` on a log that goes on after its last model call: tugtool-compact-native.jsonl (a real
Claude Code log) says "fourth prime" in #16, its last call is answered by #20, and the log records a
manual /compact before #21. The last step held the phrase; the plan of the whole file does not
send it. `where` said only "at the last turn (#19): in the context"."""

from __future__ import annotations

import json
from pathlib import Path

from ctxviz.cli import main

CC = Path(__file__).resolve().parent / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"


def test_where_says_what_the_whole_file_does_after_the_last_step(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["where", str(CC), "fourth prime"]) == 0
    out = capsys.readouterr().out
    assert "said in 1 message (#16)" in out
    assert "at the last turn (#19): in the context" in out
    assert ("after it: the file goes on past the last model call (in no request); the plan of the whole file, with the compaction the log "
            "records before #21, does not send it") in out
    assert main(["where", str(CC), "fourth prime", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["in_file_plan"] is False


def test_nothing_is_added_where_the_whole_file_agrees(capsys) -> None:  # type: ignore[no-untyped-def]
    sample = Path(__file__).resolve().parents[1] / "sample_sessions" / "claude_code_compaction.jsonl"
    assert main(["where", str(sample), "Retry-After"]) == 0
    assert "after it:" not in capsys.readouterr().out
