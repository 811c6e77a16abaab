"""The next call is priced as the provider bills it, and counted from what the provider reported.

A Claude Code log's next call read `$0.3608` (every token of the o200k count at the input price)
where its last call, 99 % from the cache, was billed $0.0475; a redacted Codex rollout's next call
was priced on its markers' 24,392 tokens where the log reports 108,869. And the o200k estimate of a
Claude request, 12 % under what Claude itself counted for a smaller one, was the figure that proved
the policy's estimate "13.6 % over". Every expected figure here is read from the raw log.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxviz.cli import main
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.planner import plan_session
from ctxviz.gui.status import status_text
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
SPOTTER = ROOT / "tests" / "data" / "real" / "claude_code" / "spotter-4d5611e5.jsonl"
SAMPLE = ROOT / "sample_sessions" / "claude_code_autocompact.jsonl"
CODEX = (ROOT / "tests" / "data" / "real" / "codex"
         / "localpush-rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl")
GEMINI = ROOT / "tests" / "data" / "real" / "gemini_cli" / "aim_matrix_flash.json"
#: claude-opus-4-6 per million tokens (resources/models.yaml, from Anthropic's pricing page): input,
#: cache read, 5-minute cache write (the logs' calls wrote 5-minute entries).
OPUS = (5.0, 0.5, 6.25)


def last_claude_usage(path: Path) -> dict:
    """The usage of the log's last call, as Claude Code wrote it."""
    found = None
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message")
        if isinstance(message, dict) and isinstance(message.get("usage"), dict):
            found = message["usage"]
    assert found is not None
    return found


def plan(path: Path, policy: str):  # noqa: ANN201
    return plan_session(load_session(path), policy, options=PlanOptions(real_count=True))


def check_warm_claude_call(path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    usage = last_claude_usage(path)
    previous = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    r = plan(path, "claude-code").real
    assert r.from_usage is not None and r.from_usage.reported == previous and r.from_usage.answer == usage["output_tokens"]
    call = r.next_call
    assert call is not None and call.state == "warm"
    # The whole previous request is read back; what follows it (its answer and the messages since) is written.
    assert call.read == previous and call.request == r.reference == previous + usage["output_tokens"] + r.from_usage.after
    new = call.request - previous
    assert call.write == new and call.uncached == 0 and 0 < new < 1000
    expected = (previous * OPUS[1] + new * OPUS[2]) / 1_000_000
    assert abs(r.input_cost - expected) < 1e-12
    # Billed like the last call was, not the whole count at the input price.
    billed = (usage["input_tokens"] * OPUS[0] + usage["cache_read_input_tokens"] * OPUS[1]
              + usage["cache_creation_input_tokens"] * OPUS[2]) / 1_000_000
    assert r.input_cost < 2 * billed
    assert main(["plan", str(path), "--real-count"]) == 0
    out = capsys.readouterr().out
    assert f"input cost of the next call: ${expected:.4f} with the cache warm: {previous:,} read, {new:,} new" in out


def test_a_claude_code_next_call_reads_the_previous_request_from_the_cache(capsys) -> None:  # type: ignore[no-untyped-def]
    check_warm_claude_call(SPOTTER, capsys)  # 3 + 80,833 + 1,124 = 81,960 read


def test_the_bundled_compaction_sample_next_call_too(capsys) -> None:  # type: ignore[no-untyped-def]
    check_warm_claude_call(SAMPLE, capsys)


def test_the_status_bar_says_the_same_price_and_its_cache() -> None:
    usage = last_claude_usage(SPOTTER)
    previous = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    p = plan(SPOTTER, "claude-code")
    new = p.real.next_call.request - previous
    text = status_text(p)
    assert f"next call ≈ ${(previous * OPUS[1] + new * OPUS[2]) / 1_000_000:.4f} (cache warm)" in text
    assert f"real count {previous + usage['output_tokens'] + p.real.from_usage.after:,} (from the provider's usage)" in text


def test_a_codex_next_call_is_sized_by_the_reported_usage_not_the_redaction_markers() -> None:
    last = None
    for line in CODEX.read_text(encoding="utf-8").splitlines():
        payload = json.loads(line).get("payload") or {}
        if payload.get("type") == "token_count" and payload.get("info"):
            last = payload["info"]["last_token_usage"]
    assert last is not None
    r = plan(CODEX, "codex-compaction").real
    # Nothing follows the last call: the next request is its input and its answer (Codex's own count).
    assert r.reference == r.next_call.request == last["input_tokens"] + last["output_tokens"] == last["total_tokens"]
    assert r.next_call.shared == last["input_tokens"] and r.next_call.state == "warm"
    assert 0 < r.next_call.read <= last["input_tokens"]
    assert r.tokens < r.reference  # the markers' count is shown beside it, as an estimate


def test_the_policy_is_judged_by_the_providers_count_not_the_o200k_estimate(capsys) -> None:  # type: ignore[no-untyped-def]
    usage = last_claude_usage(SPOTTER)
    previous = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
    r = plan(SPOTTER, "claude-code").real
    assert r.tokens < previous  # the o200k count of the larger request is under what Claude counted for the smaller
    assert r.compared == r.reference and abs(r.heuristic_error) < 0.001
    assert main(["plan", str(SPOTTER), "--real-count"]) == 0
    out = capsys.readouterr().out
    assert f"count from the provider's reported usage: {r.reference:,} tokens (#{r.from_usage.anchor}'s reported {previous:,}" in out
    assert f"o200k_base: {r.tokens:,} tokens, {(previous + usage['output_tokens'] + r.from_usage.after - r.tokens) / r.reference * 100:.1f} % under the provider's figure (an estimate, not the reference)" in out
    assert "is 13.6 % over" not in out and "0.0 % under the count from the provider's usage" in out


def test_a_gemini_cli_count_starts_from_the_reported_prompt(capsys) -> None:  # type: ignore[no-untyped-def]
    doc = json.loads(GEMINI.read_text(encoding="utf-8"))
    reported = [m["tokens"] for m in doc["messages"] if m.get("tokens")][-1]
    r = plan(GEMINI, "gemini-cli-compression").real
    assert r.from_usage is not None and r.from_usage.reported == reported["input"] == 47_508
    assert r.reference >= reported["input"] > r.tokens  # o200k's 42,926 is the estimate beside it
    assert r.compared == r.reference - r.unseen  # Gemini CLI's estimate leaves the unseen prompt out
    # Gemini CLI's reported prompt holds no answer: the answer is counted with what follows.
    assert main(["plan", str(GEMINI), "--real-count"]) == 0
    out = capsys.readouterr().out
    assert f"(#{r.from_usage.anchor}'s reported {reported['input']:,} and about {r.reference - reported['input']:,} for its answer and after it" in out
