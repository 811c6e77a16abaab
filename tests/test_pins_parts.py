"""A pinned message that a recorded summary covers is charged to the policy's message part.

A user who pins the opening request of a compacted Claude Code log reads the allocation table to
see where its tokens went. They belong with the history the policy sends, never to the system
prompt's or the summary's part (langchain-trim once showed "system: over by 17" there).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine.planner import PlanOptions, plan_session
from ctxviz.engine.policies import policy_names
from ctxviz.io.loaders import load_session

REAL = Path(__file__).parent / "data" / "real" / "claude_code"
LOGS = ("tugtool-rewind-branch.jsonl", "tugtool-compact-native.jsonl")
NOT_MESSAGE_PARTS = {"system", "summary", "instructions", "initial", "initial_context", "system_reserve"}


@pytest.fixture(scope="module", params=LOGS)
def session(request: pytest.FixtureRequest):
    return load_session(REAL / request.param)


@pytest.mark.parametrize("policy", policy_names(plugins=False))
def test_a_pinned_covered_message_counts_with_the_history(session, policy: str) -> None:
    first = next(m.index for m in session.messages if m.role == "user")
    before = plan_session(session, policy)
    assert before.messages[first].decision.value == "summarized"  # a recorded compaction covers it
    after = plan_session(session, policy, options=PlanOptions(pins=("first-user",)))
    assert after.messages[first].sent
    changed = {p: after.usage.get(p, 0) - before.usage.get(p, 0) for p in {*before.usage, *after.usage}
               if after.usage.get(p, 0) != before.usage.get(p, 0)}
    assert not changed.keys() & NOT_MESSAGE_PARTS, changed
    assert sum(changed.values()) == after.totals.used - before.totals.used


@pytest.mark.parametrize("policy", ["langchain-trim", "langchain-context-editing"])
def test_langchain_charges_the_pin_to_history(policy: str) -> None:
    session = load_session(REAL / "tugtool-rewind-branch.jsonl")
    first = next(m.index for m in session.messages if m.role == "user")
    before = plan_session(session, policy)
    after = plan_session(session, policy, options=PlanOptions(pins=("first-user",)))
    tokens = after.messages[first].sent_tokens
    assert tokens > 0
    assert after.usage["history"] == before.usage["history"] + tokens
    assert after.totals.fits and all(after.usage[p] <= a for p, a in after.allocation.items())
