"""The bundled compaction sample starts mid-conversation: one unseen-prefix estimate, and no cold start.

`info`, `simulate --cost` and `verify` said its requests open with about 164,100 tokens of system
prompt and tools, while `plan` and the app said 32,400 after the compaction: the first call's
164,100 holds the conversation before the file too (`Reported.unseen_at`). And its first request was
priced as a cold start (69 % of the unseen prefix assumed read) where the log shows 163,346 of
164,831 read from the cache, which put `verify`'s pooled cost ratio at 1.90 on the sample the README
points newcomers to.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxviz.cli import main
from ctxviz.engine.reported import reported_usage
from ctxviz.engine.verify import verify
from ctxviz.io.info import session_facts
from ctxviz.io.loaders import load_session

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "claude_code_autocompact.jsonl"
#: claude-opus-4-6 per million tokens (resources/models.yaml): input, cache read, 5-minute cache write.
OPUS = (5.0, 0.5, 6.25)


def raw_calls() -> list[dict]:
    """Each call's usage as the log wrote it (one per message id: a call's lines repeat its usage)."""
    calls: dict[str, dict] = {}
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        message = json.loads(line).get("message")
        if isinstance(message, dict) and isinstance(message.get("usage"), dict):
            calls[message["id"]] = message["usage"]
    return list(calls.values())


def test_info_simulate_and_verify_give_the_unseen_prefix_the_plan_gives(capsys) -> None:  # type: ignore[no-untyped-def]
    session = load_session(SAMPLE)
    found = reported_usage(session)
    assert found is not None
    after = found.unseen_at(len(session.messages) - 1)  # the one rule the plan and the app read
    first = raw_calls()[0]
    assert after < found.unseen and found.unseen < first["input_tokens"] + first["cache_read_input_tokens"] + first["cache_creation_input_tokens"]
    assert session_facts(session)["unseen_estimate"] == after
    assert main(["info", str(SAMPLE)]) == 0
    out = capsys.readouterr().out
    assert f"unseen: about {after:,} tokens" in out and f"the first call's {found.unseen:,} held the conversation before it too" in out
    assert main(["simulate", str(SAMPLE), "--cost", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cache"]["cache_model"]["unseen_prefix"] == after
    assert not any(f"about {found.unseen:,} tokens of them open every request" in n for n in doc["cache"]["notes"])
    v = verify(session)
    assert any(f"about {after:,} tokens of them open every request" in n for n in v.cache.notes)


def test_the_first_request_reads_what_the_conversation_before_the_file_cached() -> None:
    v = verify(load_session(SAMPLE))
    usage = raw_calls()[0]
    first = v.calls[0].predicted
    assert not first.cold and first.cache_read == usage["cache_read_input_tokens"] == 163_346
    assert first.cost == (first.cache_read * OPUS[1] + (first.request - first.cache_read) * OPUS[2]) / 1_000_000
    billed = sum((u["input_tokens"] * OPUS[0] + u["cache_read_input_tokens"] * OPUS[1] + u["cache_creation_input_tokens"] * OPUS[2])
                 / 1_000_000 for u in raw_calls())
    assert abs(sum(c.billed for c in v.calls) - billed) < 1e-9
    predicted = sum(c.predicted.cost for c in v.calls)
    assert abs(first.cost - v.calls[0].billed) / v.calls[0].billed < 0.01  # the first call: $0.0909 against $0.0910 billed
    assert 0.5 < predicted / billed < 1.2  # was 1.90 ($0.4372 over $0.2300)
