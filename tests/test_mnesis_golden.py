"""ctxviz's mnesis policy against mnesis' own ContextBuilder and TokenEstimator (no mnesis needed).

tests/golden/mnesis/cases.json was recorded by tests/golden/mnesis/generate.py from mnesis 0.3.0 at
677d1898 (Lucenor/mnesis): varied sessions (tool calls with outputs, errors, compacted outputs,
pending calls, reasoning, empty reasoning, `<|endoftext|>` and other special tokens, file
references, no model and models of each encoding, tight budgets), what mnesis kept and its counts.
"""

import json
from pathlib import Path

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.session import FileRefPart, Message, Session, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

GOLDEN = json.loads((Path(__file__).parent / "golden" / "mnesis" / "cases.json").read_text())
CASES = GOLDEN["cases"]


def part(p: dict):
    kind = p["kind"]
    if kind == "text":
        return TextPart(p["text"])
    if kind == "thinking":
        return ThinkingPart(p["text"])
    if kind == "tool_call":
        return ToolCallPart(p["id"], p["name"], p["arguments"])
    if kind == "tool_result":
        return ToolResultPart(p["tool_call_id"], p["text"], p["is_error"], p["compacted_at"])
    return FileRefPart(p["path"], p["content_id"], p["file_type"], p["token_count"], p["exploration_summary"])


def to_session(case: dict) -> Session:
    messages = []
    for i, m in enumerate(case["messages"]):
        call_id = next((p["tool_call_id"] for p in m["parts"] if p["kind"] == "tool_result"), "")
        messages.append(Message(f"m{i}", i, m["role"], tuple(part(p) for p in m["parts"]), name=m["name"], tool_call_id=call_id))
    return Session(messages=tuple(messages), source="golden", format="golden", model=case["model"], system_prompt=case["system_prompt"])


def plan_case(case: dict):
    params = dict(case["params"])
    params.setdefault("compaction_buffer", 20_000)
    return plan_session(to_session(case), "mnesis", params, store=CountStore())


def test_recorded_from_mnesis_itself():
    assert GOLDEN["framework"] == "mnesis" and GOLDEN["version"] == "0.3.0" and GOLDEN["commit"] == "677d1898"
    assert len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_same_counts_kept_messages_and_context_as_mnesis(case):
    plan = plan_case(case)
    built = case["built"]
    # Each mnesis message's estimate is the count of the ctxviz message that starts it; the tool
    # messages whose outputs its ToolPart holds count 0.
    for m in case["mnesis_messages"]:
        first, *carried = m["indices"]
        assert plan.messages[first].tokens == m["tokens"], (case["name"], first)
        assert all(plan.messages[i].tokens == 0 for i in carried)
    assert plan.usage["system"] == case["system_tokens"]
    assert plan.extra["usable"] == built["usable"]
    assert plan.totals.used == plan.extra["token_estimate"] == built["token_estimate"]
    assert plan.extra["raw_message_tokens"] == built["raw_message_tokens"]
    assert plan.extra["tool_output_tokens"] == built["tool_output_tokens"]
    assert [dict(c) for c in plan.context[1:]] == built["messages"]
    oldest = built["oldest_included"]
    assert plan.extra["oldest_included_message_id"] == (None if oldest is None else f"m{oldest}")
    kept = {i for m in case["mnesis_messages"] for i in m["indices"] if oldest is not None and m["indices"][0] >= oldest}
    assert {m.index for m in plan.messages if m.decision is Decision.KEPT} == kept


def test_the_cases_exercise_what_they_are_for():
    """Guards the golden file itself: each of the five differences is in it, with mnesis' answer."""
    by_name = {c["name"]: c for c in CASES}
    tools = by_name["tools/gpt-4o"]
    assert any(len(m["indices"]) == 2 for m in tools["mnesis_messages"])  # call + output: one mnesis message
    assert "\nOutput: " in tools["built"]["messages"][2]["content"] and tools["built"]["messages"][2]["content"].endswith("[/Tool]")
    assert by_name["empty-reasoning/gpt-4o"]["built"]["messages"][2]["content"] == "Answer without thoughts."
    assert by_name["plain/no-model"]["encoding"] == "cl100k_base"
    assert any(c["built"]["oldest_included"] not in (None, 0) for c in CASES if c["name"].startswith("tight/"))
    assert any(c["built"]["oldest_included"] is None for c in CASES if c["name"].startswith("tight/"))
    # `<|endoftext|>`: mnesis' tiktoken call raised and it counted characters / 4 (plus 4 for the role)
    eot = by_name["endoftext/gpt-4o"]
    assert eot["mnesis_messages"][2]["tokens"] == 4 + len(eot["messages"][2]["parts"][0]["text"]) // 4
    # an empty reasoning part is still charged by its str() (type='reasoning' text='' is 24 characters)
    empty, full = by_name["empty-reasoning/claude-sonnet-4-5"], by_name["reasoning-only/claude-sonnet-4-5"]
    assert empty["mnesis_messages"][2]["tokens"] == 4 + len("Answer without thoughts.") // 3 + 24 // 4
    assert full["mnesis_messages"][2]["tokens"] == 4 + len("type='reasoning' text='just thinking\\nacross lines'") // 4
