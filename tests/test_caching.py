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
    # Issue 20: the priced requests are the log's real calls (one per recorded call, not one per message),
    # each the step before the call's answer, and each request holds the unseen system prompt and tools.
    sent = {t["turn"]: t["tokens_sent"] for t in doc["turns"]}
    assert cache["input_tokens"] == sum(t["request"] for t in cache["turns"])
    assert all(t["request"] >= sent[t["turn"]] for t in cache["turns"])
    assert all("reported" in t for t in cache["turns"])  # the provider's own cache figures beside the replay's
    assert main(["compare", sample, "--policy", "missy", "--policy", "categories", "--cost", "--cost-model", "claude-sonnet-4-5"]) == 0
    out = capsys.readouterr().out
    assert "A replayed, prompt caching (claude-sonnet-4-5): input $" in out and "B replayed, prompt caching" in out
    assert main(["simulate", sample, "--cost", "--cost-model", "no-such-model"]) != 0
    assert "--cost-model: 'no-such-model' is not in the model catalogue" in capsys.readouterr().err


# -- issue 20: priced as the provider bills it ---------------------------------------------------------

REAL = ROOT / "tests" / "data" / "real"


def test_every_catalogue_entry_names_its_source_and_the_day_it_was_checked() -> None:
    import datetime
    import re

    from ctxviz.engine.catalog import load_catalog

    for entry in load_catalog():
        assert re.match(r"https://[\w.-]+\.\w+/", entry.source), (entry.name, entry.source)
        assert datetime.date.fromisoformat(entry.checked) <= datetime.date.today(), (entry.name, entry.checked)


def test_the_catalogue_has_the_published_prices_and_minimums() -> None:
    def entry(name: str) -> ModelEntry:
        found = find_model(name)
        assert found is not None, name
        return found

    assert entry("gpt-5.3-codex").input_per_mtok == 1.75 and entry("gpt-5.5").input_per_mtok == 5.00
    assert entry("gpt-5.3-codex").name == "gpt-5.3-codex"  # never priced as gpt-5, whose name it starts with
    for name in ("claude-opus-4-5-20251101", "claude-opus-4-6", "claude-haiku-4-5-20251001"):
        assert entry(name).min_cacheable_tokens == 4096, name
    assert entry("claude-sonnet-4-20250514").name == "claude-sonnet-4" and entry("claude-opus-4-8").input_per_mtok == 5.00
    assert entry("gemini-3-flash-preview").cached_input_per_mtok == 0.05 and entry("gemini-3.1-pro-preview").input_per_mtok == 2.00
    assert entry("gemini-2.5-pro").cached_input_per_mtok == 0.125 and entry("gemini-2.5-flash").cached_input_per_mtok == 0.03
    assert entry("deepseek-chat").cached_input_per_mtok == 0.028
    assert entry("claude-haiku-4-5").cache_write_1h_per_mtok == 2 * entry("claude-haiku-4-5").input_per_mtok
    assert find_model("gpt-5-codex") is None and find_model("gemini-3.1-flash-lite") is None


def test_an_unknown_model_is_said_to_be_unknown_not_priced_or_zero_cached(capsys: pytest.CaptureFixture[str]) -> None:
    session = chat(12)
    import dataclasses

    session = dataclasses.replace(session, model="gpt-9-turbo-max")
    report = cache_costs(simulate(session, WINDOW, {"max_tokens": 100_000}, "chars"))
    assert not report.known and report.sentence().startswith("no cache model for this model: gpt-9-turbo-max is not in the model catalogue")
    doc = report.to_json()
    assert doc["known"] is False and doc["hit_share"] is None and doc["cost_usd"] is None and doc["model"] == "gpt-9-turbo-max"


def test_a_priced_model_without_caching_is_priced_whole_not_said_to_cache_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses

    session = dataclasses.replace(chat(12), model="llama-3.1-70b")  # the catalogue prices it and says: no prompt caching
    report = cache_costs(simulate(session, WINDOW, {"max_tokens": 2_000}, "chars"))
    assert report.known and not report.caches and report.cost == pytest.approx(report.cost_without_cache) and report.cost > 0
    text = report.sentence()
    # It read "... with llama-3.1-70b's prompt caching; expected cache hits 0% ...; the policy broke the cache at 3 request(s)".
    assert "every token priced as input" in text and "cache hits" not in text and "broke the cache" not in text
    doc = report.to_json()
    assert doc["hit_share"] is None and doc["breaks"] == [] and doc["cost_usd"] == pytest.approx(report.cost)


def test_the_unseen_prefix_is_part_of_the_cached_prefix() -> None:
    """The reproduction: at turn 28 of this log (the request before call #29) the provider reported 36,371
    cached tokens; before issue 20 ctxviz predicted 5,175, because the system prompt and tools the log does
    not record were never part of the shared prefix."""
    from ctxviz.io.loaders import load_session

    session = load_session(str(REAL / "claude_code" / "agentcmd-full-session-two.jsonl"))
    report = cache_costs(simulate(session, "claude-code"))
    turn = next(t for t in report.turns if t.turn == 28)
    assert turn.reported is not None and turn.reported.cache_read_input_tokens == 36_371
    assert turn.unseen > 20_000 and abs(turn.cache_read - 36_371) <= 0.03 * 36_371
    assert len(report.turns) == sum(1 for m in session.messages if m.usage is not None and m.index > 0)  # one per real call


def test_a_cold_start_says_what_other_sessions_cached_cannot_be_known() -> None:
    """After a 30-minute gap (5-minute entries) the provider still served 13,168 tokens of the unseen prefix:
    another session of the user's had it cached. ctxviz prices the share real logs show, with the range from
    none to all of the unseen prefix, and says it cannot be known."""
    from ctxviz.io.loaders import load_session

    session = load_session(str(REAL / "claude_code" / "agentcmd-full-session-two.jsonl"))
    report = cache_costs(simulate(session, "claude-code"))
    after_gap = next(t for t in report.turns if t.turn == 10)
    assert after_gap.expired and after_gap.cold and after_gap.reported.cache_read_input_tokens == 13_168
    assert after_gap.read_low == 0 < after_gap.cache_read < after_gap.read_high <= after_gap.unseen
    assert after_gap.read_low <= 13_168 <= after_gap.read_high
    assert any("cannot be known" in n for n in report.notes) and report.cost_range[0] < report.cost < report.cost_range[1]


def test_the_log_s_one_hour_cache_entries_are_priced_at_twice_the_input() -> None:
    from ctxviz.engine.caching import cache_model, log_lifetime
    from ctxviz.io.loaders import load_session

    one_hour = load_session(str(REAL / "claude_code" / "tugtool-compact-native.jsonl"))  # ephemeral_1h_input_tokens on every call
    five_minutes = load_session(str(REAL / "claude_code" / "agentcmd-full-session-two.jsonl"))
    assert log_lifetime(one_hour) == 3600 and log_lifetime(five_minutes) == 300
    cm = cache_model(one_hour)
    assert cm.ttl_seconds == 3600 and cm.write_per_mtok == 2 * cm.entry.input_per_mtok and "1-hour" in cm.lifetime
    assert cache_model(five_minutes).write_per_mtok == 1.25 * cache_model(five_minutes).entry.input_per_mtok


def test_openai_is_priced_at_the_measured_best_effort_share_with_its_range() -> None:
    from ctxviz.engine.caching import hit_rates
    from ctxviz.io.loaders import load_session

    rates = hit_rates()
    openai = rates["best_effort:openai"]
    assert 0 < openai.low < openai.expected < openai.high <= 1 and openai.files >= 5  # measured, with its spread
    session = load_session(str(REAL / "codex" / "localpush-rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"))
    report = cache_costs(simulate(session, "codex-compaction"))
    warm = [t for t in report.turns if not t.cold and t.read_high]
    assert warm and all(t.read_low < t.cache_read < t.read_high for t in warm)
    assert all(t.cache_read == round(t.read_high * openai.expected) for t in warm)
    assert any("best-effort" in n for n in report.notes)
    held_out = hit_rates("localpush-rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl")["best_effort:openai"]
    assert held_out.files == openai.files - 1


def test_codex_prices_the_reported_usage_not_its_json_estimate() -> None:
    """Codex's trigger reads the reported tokens, and so does the price now: its JSON bytes / 4 estimate of
    this redacted rollout is 13-93 % low."""
    from ctxviz.io.loaders import load_session

    session = load_session(str(REAL / "codex" / "localpush-rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl"))
    timeline = simulate(session, "codex-compaction")
    report = cache_costs(timeline)
    later = [t for t in report.turns[1:] if t.reported is not None]
    real = sum(t.reported.input_tokens + t.reported.cache_read_input_tokens for t in later)
    estimate = sum(next(x.tokens_sent for x in timeline.turns if x.index == t.turn) for t in later)
    assert len(later) >= 50 and estimate < 0.5 * real  # what was priced before: the JSON estimate
    assert abs(sum(t.request for t in later) - real) <= 0.03 * real  # what is priced now


def test_codex_developer_messages_stay_where_they_were_sent() -> None:
    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.planner import plan_session
    from ctxviz.io.loaders import load_session

    session = load_session(str(REAL / "codex" / "localpush-rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl"))
    first_other = next(m.index for m in session.messages if m.role != "system")
    later = [m.index for m in session.messages if m.role == "system" and m.index > first_other]
    assert len(later) >= 10
    plan = plan_session(session, "codex-compaction", {}, store=CountStore())
    order = [i for i in plan.context_index if i is not None]
    assert all(i in order for i in later) and order == sorted(order)  # in place, in the session's order
    assert not cache_costs(simulate(session, "codex-compaction")).breaks  # the replayed cache holds where the real one did


def screenshot(width: int, height: int, size: int) -> str:
    """A base64 PNG data URI of about `size` bytes whose header says width x height."""
    import base64
    import struct

    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height) + b"\x08\x06\x00\x00\x00"
    return "data:image/png;base64," + base64.b64encode(head + bytes(range(256)) * (size * 3 // 4 // 256)).decode()


def test_an_agent_s_request_no_usage_covers_is_priced_at_the_provider_s_count() -> None:
    """Codex sizes a request as JSON bytes / 4, base64 images included, and compacts on that; the
    provider bills text tokens and the image by its tile rule. A held-out rollout's first request came
    out 25,400 tokens against 10,144 billed. The policy keeps its estimate (what it decides on); the
    price is the provider's count: before any usage the whole request, after one the reported figure
    plus the messages since."""
    from ctxviz.engine.images import tile_tokens
    from ctxviz.engine.session import ImagePart, Usage
    from ctxviz.engine.tokenizers import TiktokenTokenizer

    image = screenshot(1298, 614, 63_000)
    o200k = TiktokenTokenizer("o200k_base")
    ask = "What is wrong with this page? " * 20

    def user(i: int, text: str, with_image: bool) -> Message:
        return Message(id=f"m{i}", index=i, role="user", parts=(TextPart(text), *((ImagePart(image),) if with_image else ())),
                       category=default_category("user"))

    answer = Message(id="m1", index=1, role="assistant", parts=(TextPart("The header overlaps the menu."),), category=default_category("assistant"),
                     usage=Usage(input_tokens=1_000, cache_read_input_tokens=0, output_tokens=40))
    session = Session(messages=(user(0, ask, True), answer, user(2, "And this one?", True),
                                Message(id="m3", index=3, role="assistant", parts=(TextPart("Fine."),), category=default_category("assistant"),
                                        usage=Usage(input_tokens=2_200, output_tokens=5))),
                      source="<hand>", format="codex", model="gpt-5.2-codex")
    timeline = simulate(session, "codex-compaction")
    report = cache_costs(timeline)
    first, second = report.turns
    assert (first.turn, second.turn) == (0, 2)
    estimate = timeline.turns[timeline.step_of(0)].tokens_sent
    assert estimate > 15_000  # the policy's own size (what it would compact on): the base64 as text
    picture = tile_tokens(1298, 614)  # 6 tiles: 1,105
    per_message = 3 + o200k.count("user")  # the chat format's overhead and the role
    assert first.request == per_message + o200k.count(ask) + picture + 3  # one message, its text, the image, the priming
    # After the first call: its reported input and output, plus the new message at the provider's count.
    assert second.request == 1_000 + 40 + per_message + o200k.count("And this one?") + picture
