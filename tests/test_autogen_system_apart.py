"""AutoGen's TokenLimitedChatCompletionContext counts its model context only; the agent prepends the
system message. A plan whose context fits token_limit can so be over it: every kept message's
sentence and the plan's notes must say why, not "the context fits" beside "OVER"."""

from __future__ import annotations

from pathlib import Path

from ctxviz.engine.planner import plan_session
from ctxviz.io.loaders import load_session

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml"


def test_a_kept_message_says_the_system_message_is_apart_when_it_takes_the_request_over() -> None:
    session = load_session(str(SAMPLE))
    plan = plan_session(session, "autogen-token-limited", {"token_limit": 5000})
    assert not plan.totals.fits
    system = plan.usage["system"]
    assert system > 0 and plan.totals.used - system <= plan.totals.budget  # AutoGen's own count fits
    kept = [m for m in plan.messages if m.sent and m.code == "fits"]
    assert kept and all("without the agent's system message, which AutoGen does not count" in m.reason for m in kept)
    over = plan.totals.used - plan.totals.budget
    assert any(f"({system:,} tokens), which AutoGen does not count: the request is {plan.totals.used:,} tokens, over by {over:,}" in note
               for note in plan.notes)


def test_a_plan_that_fits_has_no_such_note() -> None:
    plan = plan_session(load_session(str(SAMPLE)), "autogen-token-limited", {"token_limit": 20000})
    assert plan.totals.fits
    assert not any("AutoGen does not count: the request is" in note for note in plan.notes)
