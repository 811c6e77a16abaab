"""Checks none of the frameworks make: broken tool-call pairs, pair safety, and the real count."""

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart
from ctxviz.engine.tokenizers import count_openai_chat, get_tokenizer
from ctxviz.io.exporters import anthropic_messages


def tool_session(model="gpt-4o"):
    msgs = (
        Message("u", 0, "user", (TextPart("list the pods " + "please " * 50),)),
        Message("a", 1, "assistant", (TextPart("Let me check the cluster. " * 20), ToolCallPart("c1", "shell", '{"cmd": "kubectl get pods"}'))),
        Message("t", 2, "tool", (ToolResultPart("c1", "web-1 Running"),), tool_call_id="c1", name="shell"),
        Message("z", 3, "assistant", (TextPart("All good."),)),
    )
    return Session(messages=msgs, source="", format="", model=model)


TIGHT = {"total": 60, "system_reserve": 0, "tool_definitions_reserve": 0, "memory_fraction": 0, "learnings_fraction": 0, "fresh_tail_count": 2}


def test_orphan_result_is_flagged_but_kept_by_default():
    plan = plan_session(tool_session(), "missy", TIGHT, store=CountStore())
    assert plan.messages[1].decision is Decision.DROPPED and plan.messages[2].decision is Decision.KEPT
    assert [(o.index, o.partner) for o in plan.orphans] == [(2, 1)]
    assert plan.to_json()["orphans"][0]["message"] == "tool result #2 is sent but its tool call #1 is not"


def test_pair_safe_drops_the_orphan_and_keeps_the_context_valid():
    plan = plan_session(tool_session(), "missy", TIGHT, store=CountStore(), options=PlanOptions(pair_safe=True))
    assert plan.messages[2].decision is Decision.DROPPED and "pair-safe" in plan.messages[2].reason
    assert plan.orphans == ()
    assert all(m.get("role") != "tool" for m in plan.context)
    assert len(plan.context) == len(plan.context_index)
    _, messages = anthropic_messages(list(plan.context))
    blocks = [b for m in messages for b in m["content"]]
    assert not any(b["type"] == "tool_result" for b in blocks)


def test_no_orphans_when_pairs_travel_together():
    plan = plan_session(tool_session(), "missy", store=CountStore())
    assert plan.orphans == ()


def test_real_count_matches_the_cookbook_count_of_the_context():
    session = tool_session()
    plan = plan_session(session, "missy", store=CountStore(), options=PlanOptions(real_count=True))
    expected = count_openai_chat([dict(c) for c in plan.context], tokenizer=get_tokenizer("o200k_base"))
    assert plan.real.tokens == expected
    assert plan.real.window == 128000 and plan.real.fits and plan.real.exact
    assert plan.real.estimated == plan.totals.used
    assert plan.real.input_cost == expected * 2.5 / 1_000_000


def test_real_count_for_claude_is_an_estimate_and_can_be_over_the_window():
    plan = plan_session(tool_session("claude-sonnet-4-5"), "missy", store=CountStore(), options=PlanOptions(real_count=True, model="gpt-4"))
    assert plan.real.window == 8192 and plan.real.encoding == "cl100k_base"
    claude = plan_session(tool_session("claude-sonnet-4-5"), "missy", store=CountStore(), options=PlanOptions(real_count=True))
    assert not claude.real.exact and claude.real.window == 200000


def test_every_policy_maps_context_entries_to_messages():
    from pathlib import Path

    from ctxviz.engine.policies import policy_names
    from ctxviz.io.loaders import load_session
    session = load_session(Path(__file__).parent / "data" / "native_small.yaml")
    for name in policy_names():
        plan = plan_session(session, name, store=CountStore())
        assert len(plan.context) == len(plan.context_index), name
        sent = {m.index for m in plan.messages if m.sent and m.zone != "system"}
        carried = set(plan.extra.get("carried_by", {}))  # mnesis: a tool output sent inside its call's part
        assert {i for i in plan.context_index if i is not None} - {m.index for m in plan.messages if m.zone == "system"} == sent - carried, name
