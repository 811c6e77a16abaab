"""codex-compaction against Codex's own tests (openai/codex, Rust):

- codex-rs/core/src/compact.rs at 0100b103 (`collect_user_messages_*`,
  `build_token_limited_compacted_history_*`);
- codex-rs/core/src/truncate.rs, the TruncationSource version of the same period
  (`truncate_middle_*` over `truncate_with_token_budget`);
- models_manager/model_family.rs of that period (`auto_compact_token_limit`: 90 % of the window).

Where a Codex test only checks a property ("contains 'tokens truncated'"), the exact output is
also checked here, worked out by hand from the Rust source in the comment next to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.codex.compaction import (
    SUMMARY_PREFIX,
    approx_token_count,
    default_auto_compact_limit,
    family_context_window,
    select_user_messages,
    truncate_tokens,
    user_message_text,
)
from ctxviz.engine.session import Message, TextPart
from ctxviz.engine.simulate import simulate
from ctxviz.errors import ParameterError
from ctxviz.io.loaders import load_session

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "codex_rollout.jsonl"
POLICY = "codex-compaction"


def msg(role: str, text: str, i: int = 0) -> Message:
    return Message(id=f"m{i}", index=i, role=role, parts=(TextPart(text),))


# -- compact.rs ----------------------------------------------------------------------------------

def test_summary_prefix_is_the_template():
    assert SUMMARY_PREFIX.startswith("Another language model started to solve this problem")
    assert SUMMARY_PREFIX.endswith("use the information in this summary to  assist with your own analysis:")
    assert len(SUMMARY_PREFIX) == 400  # templates/compact/summary_prefix.md, as stored


def test_collect_user_messages_extracts_user_text_only():
    assert user_message_text(msg("assistant", "ignored")) is None
    assert user_message_text(msg("user", "first")) == "first"


def test_collect_user_messages_filters_session_prefix_entries():
    assert user_message_text(msg("user", "# AGENTS.md instructions for project\n\n<INSTRUCTIONS>\ndo things\n</INSTRUCTIONS>")) is None
    assert user_message_text(msg("user", "<ENVIRONMENT_CONTEXT>cwd=/tmp</ENVIRONMENT_CONTEXT>")) is None
    assert user_message_text(msg("user", "real user message")) == "real user message"
    assert user_message_text(msg("user", f"{SUMMARY_PREFIX}\nold summary")) is None  # is_summary_message


def test_build_token_limited_compacted_history_truncates_overlong_user_messages():
    big = "word " * 200
    ((_, truncated),) = select_user_messages([big], 16)
    assert "tokens truncated" in truncated and big not in truncated
    # By hand: 64 bytes; marker "[…234 tokens truncated…]" (ceil(936 / 4) = 234) is 28 bytes, so
    # 18 + 18 are kept, joined by the marker and "\n"; 65 bytes are cut back to 64.
    assert truncated == "word word word wor[…234 tokens truncated…]\nrd word word word"


def test_build_token_limited_compacted_history_appends_summary_message():
    assert select_user_messages(["first user message"], 20_000) == [(0, "first user message")]


def test_newest_user_messages_first_until_the_budget():
    texts = ["a" * 40, "b" * 40, "c" * 40]  # 10 tokens each
    assert select_user_messages(texts, 20) == [(1, "b" * 40), (2, "c" * 40)]  # the budget is spent exactly: stop
    kept = select_user_messages(texts, 25)
    # 'a' gets Tokens(5): 20 bytes, but the marker "[…5 tokens truncated…]" is 26 bytes, so Codex
    # returns the marker cut to 20 bytes (truncate_with_byte_estimate: marker_len >= max_bytes).
    assert [i for i, _ in kept] == [0, 1, 2] and kept[0][1] == "[…5 tokens truncat"
    assert select_user_messages(texts, 0) == []


# -- truncate.rs ---------------------------------------------------------------------------------

def test_truncate_middle_returns_original_when_under_limit():
    assert truncate_tokens("short output", 100) == "short output"


def test_truncate_middle_reports_truncation_at_zero_limit():
    assert truncate_tokens("abcdef", 0) == "[…2 tokens truncated…]"


def test_truncate_middle_enforces_token_budget():
    s = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    out = truncate_tokens(s, 12)
    assert "tokens truncated" in out and len(out.encode()) < len(s.encode())


def test_truncate_middle_handles_utf8_content():
    s = "😀😀😀😀😀😀😀😀😀😀\nsecond line with text\n"
    out = truncate_tokens(s, 8)
    assert "tokens truncated" in out and "\ufffd" not in out and len(out.encode()) < len(s.encode())


def test_small_text_is_never_truncated():
    # truncate_with_token_budget returns a text of at most (max_tokens / 4) * 4 bytes unchanged.
    assert truncate_tokens("x" * 8, 8) == "x" * 8


def test_approx_token_count_rounds_bytes_up():
    assert approx_token_count("") == 0 and approx_token_count("abcd") == 1 and approx_token_count("abcde") == 2
    assert approx_token_count("€") == 1  # 3 bytes


# -- the auto-compact limit ----------------------------------------------------------------------

def test_auto_compact_limit_is_90_percent_of_the_family_window():
    assert family_context_window("gpt-5-codex") == 272_000 and default_auto_compact_limit(272_000) == 244_800
    assert family_context_window("o3") == 200_000 and default_auto_compact_limit(200_000) == 180_000
    assert family_context_window("gpt-4.1-2025-04-14") == 1_047_576
    assert family_context_window("gpt-oss-20b") == 96_000
    assert family_context_window("llama3") is None  # derive_default_model_family: no window, never compacts


# -- the policy ------------------------------------------------------------------------------------

def rollout(tmp_path: Path, model: str, turns: list[tuple[str, str]], totals: dict[int, int]) -> Any:
    lines: list[dict[str, Any]] = [
        {"timestamp": "2025-10-14T09:00:00.000Z", "type": "session_meta",
         "payload": {"id": "s", "timestamp": "2025-10-14T09:00:00.000Z", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.46.0",
                     "instructions": None, "base_instructions": {"text": "You are Codex."}}},
        {"timestamp": "2025-10-14T09:00:00.000Z", "type": "turn_context", "payload": {"model": model, "cwd": "/w"}},
        {"timestamp": "2025-10-14T09:00:00.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]}},
    ]
    for i, (role, text) in enumerate(turns):
        kind = "input_text" if role == "user" else "output_text"
        lines.append({"timestamp": f"2025-10-14T09:00:{i + 1:02d}.000Z", "type": "response_item",
                      "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}})
        if i in totals:
            usage = {"input_tokens": totals[i] - 10, "cached_input_tokens": 0, "output_tokens": 10, "reasoning_output_tokens": 0,
                     "total_tokens": totals[i]}
            lines.append({"timestamp": f"2025-10-14T09:00:{i + 1:02d}.500Z", "type": "event_msg",
                          "payload": {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                                                      "model_context_window": 258_400}}})
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return load_session(str(path))


TURNS = [("user", "first task"), ("assistant", "done one"), ("user", "second task " + "x" * 100), ("assistant", "done two")]


def test_compacts_at_the_limit_into_initial_context_user_messages_and_summary(tmp_path):
    s = rollout(tmp_path, "gpt-5-codex", TURNS, {3: 244_800})  # reaches 90 % of 272,000
    plan = plan_session(s, POLICY, {}, store=CountStore())
    assert plan.extra["compacts"] and plan.extra["auto_compact_token_limit"] == 244_800
    roles = [(c["role"], str(c["content"])[:20]) for c in plan.context]
    assert roles[0] == ("system", "You are Codex.")  # base instructions (the `instructions` field)
    texts = [c["content"] for c in plan.context if c["role"] == "user"]
    assert texts[0].startswith("<environment_context>")  # initial context first
    assert texts[1:3] == ["first task", "second task " + "x" * 100]  # the user messages, oldest first
    assert texts[3].startswith(SUMMARY_PREFIX + "\n")  # then the summary
    decided = {plan.messages[i].role: plan.messages[i].decision for i in range(len(plan.messages)) if plan.messages[i].role == "assistant"}
    assert decided["assistant"] is Decision.SUMMARIZED


def test_under_the_limit_the_history_is_sent_whole(tmp_path):
    s = rollout(tmp_path, "gpt-5-codex", TURNS, {3: 244_799})
    plan = plan_session(s, POLICY, {}, store=CountStore())
    assert not plan.extra["compacts"]
    assert all(m.decision is Decision.KEPT for m in plan.messages)


def test_unknown_model_never_compacts_unless_configured(tmp_path):
    s = rollout(tmp_path, "llama3", TURNS, {3: 10_000_000})
    assert not plan_session(s, POLICY, {}, store=CountStore()).extra["compacts"]
    assert plan_session(s, POLICY, {"model_auto_compact_token_limit": 1000}, store=CountStore()).extra["compacts"]


def test_config_limit_overrides_the_family(tmp_path):
    s = rollout(tmp_path, "gpt-5-codex", TURNS, {3: 5000})
    plan = plan_session(s, POLICY, {"model_auto_compact_token_limit": 5000}, store=CountStore())
    assert plan.extra["compacts"]


def test_replay_compacts_and_later_turns_carry_the_summary():
    s = load_session(str(SAMPLE))
    timeline = simulate(s, POLICY, {"model_auto_compact_token_limit": 12_000}, store=CountStore())
    assert any(e.kind == "compaction" and "Codex auto-compacts" in e.message for e in timeline.events)
    last = timeline.plan_at(len(timeline.turns) - 1)
    summary = [c for c in last.context if isinstance(c.get("content"), str) and c["content"].startswith(SUMMARY_PREFIX + "\n")]
    assert len(summary) == 1
    assert any(m.zone == "retained_user" for m in last.messages)


def test_recorded_compaction_is_sent_as_recorded():
    s = load_session(str(SAMPLE))
    plan = plan_session(s, POLICY, {}, store=CountStore())
    assert s.summaries[0].text in [c["content"] for c in plan.context]
    assert plan.extra["token_source"] == "reported"


def test_bad_parameters_are_one_line():
    with pytest.raises(ParameterError, match="model_auto_compact_token_limit"):
        get_policy(POLICY).make_params({"model_auto_compact_token_limit": "0"})


def test_leading_developer_messages_send_their_part_of_the_instructions():
    """A real rollout (localpush, two developer messages before the conversation): they are sent
    inside the instructions, which are counted whole (29 tokens with the base instructions); each
    row said it sent its own item count (30 and 30), 60 beside instructions of 29. Both plans."""
    from ctxviz.engine.policies.codex import compaction
    from ctxviz.io.loaders import load_session

    from .columns_equivalence import both_plans

    log = Path(__file__).resolve().parent / "data" / "real" / "codex" / "localpush-rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
    for p in both_plans(load_session(log), "codex-compaction", compaction.plan_records):
        developer = [m for m in p.messages if m.reason_code == "system_prompt"]
        assert [m.index for m in developer] == [0, 1] and [m.tokens for m in developer] == [30, 30]
        assert 0 < sum(m.sent_tokens for m in developer) <= p.usage["instructions"] == 29
        assert all(m.reason.endswith("(its tokens sent are its share of the instructions' count)") for m in developer)
