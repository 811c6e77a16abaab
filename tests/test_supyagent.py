"""supyagent's ContextManager: policies.md section 2.7 golden cases and hand-computed builds."""

from dataclasses import replace

import pytest

from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.supyagent.context_manager import (
    ContextSettings,
    count_message_dict,
    emergency_truncate,
    get_context_limit,
    summary_message,
    trigger_status,
)
from ctxviz.engine.session import Summary
from ctxviz.engine.tokenizers import get_tokenizer
from ctxviz.io.text_summary import plan_summary

from .builders import session

CL100K = get_tokenizer("cl100k_base")


def test_message_counting_matches_supyagent():
    hello = count_message_dict({"role": "user", "content": "hello"}, CL100K)
    assert hello == 4 + 1 + 1
    with_image = count_message_dict({"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "image_url", "image_url": {"url": "x"}}]}, CL100K)
    assert with_image == 4 + 1 + 1 + 765
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    assert count_message_dict({"role": "assistant", "content": None, "tool_calls": calls}, CL100K) == 4 + 1 + CL100K.count(str(calls))


@pytest.mark.parametrize(("model", "limit"), [("gpt-4o", 128000), ("claude-3-5-sonnet", 200000), ("unknown-model-xyz", 128000),
                                              ("gpt-4", 8192), ("openai/gpt-4o-mini", 128000), ("deepseek-chat", 64000)])
def test_context_limits(model, limit):
    assert get_context_limit(model) == limit


def status(n, settings, summary_idx=None, text="Hi"):
    s = session(*[("user", text)] * n)
    counts = [count_message_dict(m.to_openai(), CL100K) for m in s.messages]
    return trigger_status(list(s.messages), tuple(counts), summary_idx, settings)


def test_should_summarize_golden():
    assert not status(5, ContextSettings(min_recent_messages=6)).will_trigger
    assert status(15, ContextSettings(max_messages_before_summary=10)).will_trigger
    assert not status(15, ContextSettings(max_messages_before_summary=20, max_tokens_before_summary=10**9), text="Short").will_trigger
    assert status(15, ContextSettings()).messages_percent == 50.0
    assert status(20, ContextSettings(), summary_idx=9).messages_since_summary == 10
    assert status(12, ContextSettings(max_tokens_before_summary=3 + 12 * 6)).will_trigger  # tokens trigger is inclusive


def test_summary_message_format():
    msg = summary_message(Summary(text="body", messages_covered=20))
    assert msg["role"] == "system" and "20 previous messages" in msg["content"]
    assert msg["content"] == "[Context Summary - 20 previous messages]\n\nbody"


def test_emergency_truncation_golden():
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Request"}, {"role": "tool", "tool_call_id": "t", "content": "x" * 5000},
                {"role": "user", "content": "Follow up"}, {"role": "assistant", "content": "Response"}]
    tokens = [count_message_dict(m, CL100K) for m in messages]
    out, _, _, _ = emergency_truncate(messages, tokens, [None] * 5, 10, ContextSettings(min_recent_messages=2), CL100K, None)
    truncated = "x" * 1000 + "\n...[truncated]...\n" + "x" * 500
    assert len(truncated) == 1519
    # Still over 10 tokens after pass 1, so pass 2 pops the oldest unprotected (the tool message).
    assert [m["content"] for m in out] == ["sys", "Request", "Follow up", "Response"]
    out, _, _, _ = emergency_truncate(messages, tokens, [None] * 5, 10**6 if False else 300, ContextSettings(min_recent_messages=2), CL100K, None)
    assert out[2]["content"] == truncated


def test_min_recent_messages_kept_even_over_budget_and_break_at_first_misfit():
    s = session(("user", "old " * 10), ("assistant", "big " * 3000), ("user", "a " * 500), ("assistant", "b " * 500), ("user", "now"))
    plan = plan_session(s, "supyagent", {"context_limit": 1500, "response_reserve": 0, "min_recent_messages": 2})
    d = [m.decision for m in plan.messages]
    # 'now' and 'b' are the protected two, 'a' still fits, 'big' does not, and 'old' is never considered.
    assert d == [Decision.DROPPED, Decision.DROPPED, Decision.KEPT, Decision.KEPT, Decision.KEPT]
    assert [m.zone for m in plan.messages] == ["evictable", "evictable", "evictable", "recent", "recent"]
    assert "did not fit" in plan.messages[1].reason
    assert "stops at the first message that does not fit (#1)" in plan.messages[0].reason


def test_summary_included_only_under_30_percent_and_replaces_covered_messages():
    summary = Summary(text="state " * 20, messages_covered=2, covers=("m0", "m1"))
    s = session(("user", "first"), ("assistant", "second"), ("user", "third"), ("assistant", "fourth"), ("user", "fifth"), summaries=(summary,))
    plan = plan_session(s, "supyagent", {"context_limit": 2000, "response_reserve": 0, "min_recent_messages": 1})
    assert [m.decision for m in plan.messages[:2]] == [Decision.SUMMARIZED] * 2
    assert plan.context[1]["content"].startswith("[Context Summary - 2 previous messages]")
    assert plan.summaries[0].decision is Decision.KEPT
    small = plan_session(s, "supyagent", {"context_limit": 120, "response_reserve": 0, "min_recent_messages": 1})
    assert small.summaries[0].decision is Decision.DROPPED
    assert small.messages[0].decision is not Decision.SUMMARIZED


def test_emergency_truncation_in_a_build_cannot_save_the_forced_messages():
    """Derived from the source: only the forced min_recent_messages can overflow a build, and
    _emergency_truncate protects exactly those (plus index 1), so the middle it may cut is empty."""
    s = session(("user", "Request"), ("user", "filler"), ("assistant", "y" * 9000), ("user", "Follow up"), ("assistant", "Response"))
    plan = plan_session(s, "supyagent", {"context_limit": 900, "response_reserve": 0, "min_recent_messages": 3})
    assert plan.extra["emergency_truncation"]
    assert [m.decision for m in plan.messages] == [Decision.DROPPED, Decision.DROPPED, Decision.KEPT, Decision.KEPT, Decision.KEPT]
    assert not plan.totals.fits
    assert any("protected messages alone are too big" in n for n in plan.notes)


def test_context_status_text_matches_supyagents_display():
    s = session(*[("user" if i % 2 == 0 else "assistant", "word " * 50) for i in range(18)])
    plan = plan_session(s, "supyagent", {"context_limit": 200000})
    text = plan_summary(plan, s)
    assert "Context limit: 200,000 tokens" in text and "No summary yet" in text
    assert "Messages: 18 / 30 (60%)" in text
    assert "[" + "\u2588" * 12 + "\u2591" * 8 + "]" in text


def test_validation_messages():
    with pytest.raises(Exception, match="min_recent_messages must be >= 0, got -1"):
        get_policy("supyagent").make_params({"min_recent_messages": "-1"})


def test_trim_protected_tail_option():
    s = session(("user", "Request"), ("user", "filler"), ("assistant", "y" * 9000), ("user", "Follow up"), ("assistant", "Response"))
    plan = plan_session(s, "supyagent", {"context_limit": 900, "response_reserve": 0, "min_recent_messages": 3, "trim_protected_tail": True})
    assert [m.decision for m in plan.messages] == [Decision.DROPPED, Decision.DROPPED, Decision.DROPPED, Decision.KEPT, Decision.KEPT]
    assert plan.totals.fits and not plan.extra["emergency_truncation"]


def test_a_summary_of_messages_before_the_file_covers_none_of_it():
    """covers naming ids that are not in the session means the summary predates it: every message
    here is "since the summary", none is summarised; without covers, messages_covered is the index."""
    from ctxviz.engine.policies.supyagent.context_manager import summary_last_index

    s = session(*[("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(12)])
    history = list(s.messages)
    earlier = Summary(text="what happened last week", messages_covered=79, covers=("old-1", "old-2"))
    assert summary_last_index(earlier, history) == -1
    assert summary_last_index(Summary(text="x", messages_covered=5), history) == 4
    assert summary_last_index(Summary(text="x", messages_covered=3, covers=("m0", "m1", "m2")), history) == 2
    plan = plan_session(replace(s, summaries=(earlier,)), "supyagent")
    assert plan.summaries[0].decision is Decision.KEPT
    assert not plan.by_decision(Decision.SUMMARIZED)
