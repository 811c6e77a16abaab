"""Prompt caching: what each turn's request shares with the one before, and what that costs.

The sessions are built so that every figure can be worked out by hand: messages of exactly 100
characters, counted one token per character."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.caching import cache_costs, servable
from ctxviz.engine.catalog import ModelEntry, find_model
from ctxviz.engine.session import Message, Session, TextPart, default_category
from ctxviz.engine.simulate import simulate

ROOT = Path(__file__).resolve().parent.parent
WINDOW = f"{ROOT / 'examples' / 'sliding_window.py'}:POLICY"
#: One dollar per million input tokens, a tenth of that for a cache read, writes free (OpenAI-like).
FLAT = ModelEntry(name="flat", provider="test", context_window=100_000, input_per_mtok=1.0, cached_input_per_mtok=0.1,
                  min_cacheable_tokens=1, cache_granularity=1, cache_ttl_seconds=300)


def chat(n: int, stamps: list[str] | None = None) -> Session:
    messages = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"{i:03d} " + "x" * 96  # exactly 100 characters
        messages.append(Message(id=f"m{i}", index=i, role=role, parts=(TextPart(text),), category=default_category(role),
                                timestamp=stamps[i] if stamps else ""))
    return Session(messages=tuple(messages), source="<hand>", format="test", model="gpt-4o")


def test_a_sliding_window_rewrites_its_whole_prefix_every_turn_once_full() -> None:
    # Window of 1,000 tokens = the newest 10 messages. Turn k sends messages max(0, k-9)..k.
    # Turns 0-9 only append: turn k shares all k x 100 tokens of the turn before. From turn 10 on the
    # oldest message goes, so the request starts differently: nothing is shared and the cache breaks.
    # (per message, the old view: every message a request, so that the figures follow one message at a time)
    timeline = simulate(chat(30), WINDOW, {"max_tokens": 1000, "min_messages": 0}, "chars", per_message=True)
    report = cache_costs(timeline, FLAT)
    assert [t.request for t in report.turns] == [min(k + 1, 10) * 100 for k in range(30)]
    assert [t.shared for t in report.turns] == [k * 100 if k < 10 else 0 for k in range(30)]
    assert report.breaks == list(range(10, 30))
    assert report.input_tokens == 25_500 and report.cache_read == 4_500
    assert report.hit_share == pytest.approx(4_500 / 25_500)
    assert report.cost == pytest.approx((4_500 * 0.1 + 21_000 * 1.0) / 1e6)


def test_a_summariser_rewrites_the_prefix_only_when_it_summarises() -> None:
    # missy's MemoryConsolidator (characters / 4: 25 per message; max_tokens 750, fires at 80 % = 600): it appends
    # until the trigger, then replaces all but the last 4 messages with one summary. Every turn
    # that is not a consolidation shares the whole previous request; a consolidation shares nothing.
    timeline = simulate(chat(60), "missy-consolidator", {"max_tokens": 750}, per_message=True)  # one message at a time
    report = cache_costs(timeline, FLAT)
    consolidations = [e.turn for e in timeline.events if e.kind == "consolidation"]
    assert len(consolidations) >= 2
    changed = [t.turn for t in report.turns if t.turn > 0 and t.shared < report.turns[t.turn - 1].request]
    # the request after a consolidation is the first built with the new summary: that is the break
    assert report.breaks == changed and set(changed) <= {c + 1 for c in consolidations} | set(consolidations)
    for t in report.turns[1:]:
        if t.turn not in report.breaks:
            assert t.shared == report.turns[t.turn - 1].request and t.cache_read == t.shared
    window = cache_costs(simulate(chat(60), WINDOW, {"max_tokens": 2400, "min_messages": 0}, "chars", per_message=True), FLAT)
    assert report.hit_share > 2 * window.hit_share  # the summariser caches far better than the window


def test_anthropic_charges_writes_and_a_minimum_prefix() -> None:
    sonnet = find_model("claude-sonnet-4-5")
    assert sonnet is not None and sonnet.cache_write_per_mtok == pytest.approx(1.25 * sonnet.input_per_mtok)
    assert sonnet.cached_input_per_mtok == pytest.approx(0.1 * sonnet.input_per_mtok)
    report = cache_costs(simulate(chat(30), WINDOW, {"max_tokens": 100_000, "min_messages": 0}, "chars"), sonnet)
    # append-only: turn k requests (k+1) x 100 and shares k x 100; below 1,024 tokens nothing is cached at all
    for t in report.turns:
        cacheable = t.request >= 1024
        assert t.cache_read == (t.shared if t.shared >= 1024 else 0)
        assert t.cache_write == (t.request - t.cache_read if cacheable else 0)
        assert t.uncached == t.request - t.cache_read - t.cache_write


def test_openai_serves_hits_in_blocks_of_128_from_1024() -> None:
    gpt = find_model("gpt-4o")
    assert gpt is not None
    assert [servable(n, gpt) for n in (1023, 1024, 1151, 1152, 5000)] == [0, 1024, 1024, 1152, 1024 + 3976 // 128 * 128]


def test_an_expired_cache_serves_nothing() -> None:
    stamps = [f"2026-01-01T00:{m:02d}:00Z" for m in range(0, 24, 2)]  # a message every 2 minutes
    stamps[6] = "2026-01-01T00:30:00Z"  # then 18 minutes of silence before message 6 (TTL 5 minutes)
    stamps[7:] = [f"2026-01-01T00:{m:02d}:00Z" for m in range(31, 31 + len(stamps) - 7)]
    report = cache_costs(simulate(chat(12, stamps), WINDOW, {"max_tokens": 100_000}, "chars", per_message=True), FLAT)
    assert [t.turn for t in report.turns if t.expired] == [6]
    assert report.turns[6].cache_read == 0 and report.turns[7].cache_read == 700


def test_simulate_and_compare_print_and_serialise_the_cost(capsys: pytest.CaptureFixture[str]) -> None:
    sample = str(ROOT / "sample_sessions" / "claude_code_compaction.jsonl")
    assert main(["simulate", sample, "--policy", "missy", "--cost", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cache = doc["cache"]
    assert cache["input_tokens"] == sum(t["request"] for t in cache["turns"]) == sum(t["tokens_sent"] for t in doc["turns"])
    assert any("reported" in t for t in cache["turns"])  # the provider's own cache figures beside the replay's
    assert main(["compare", sample, "--policy", "missy", "--policy", "categories", "--cost", "--cost-model", "claude-sonnet-4-5"]) == 0
    out = capsys.readouterr().out
    assert "A replayed, prompt caching (claude-sonnet-4-5): input $" in out and "B replayed, prompt caching" in out
    assert main(["simulate", sample, "--cost", "--cost-model", "no-such-model"]) != 0
    assert "--cost-model: 'no-such-model' is not in the model catalogue" in capsys.readouterr().err
