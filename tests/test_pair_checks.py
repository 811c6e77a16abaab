"""Tool calls and results whose partner is not in the file at all: flagged on every plan, dropped
by pair safety, with every figure of the plan brought up to date."""

import pytest

from ctxviz.engine.checks import PlanOptions, find_orphans
from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import policy_names
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart
from ctxviz.io.text_summary import plan_summary

SAFE = PlanOptions(pair_safe=True)


def make(*messages: Message) -> Session:
    return Session(messages=tuple(messages), source="<test>", format="test", model="gpt-4o", system_prompt="Be brief.")


def user(i: int, text: str = "please check", *parts) -> Message:
    return Message(f"u{i}", i, "user", (TextPart(text), *parts))


def call(i: int, call_id: str, role: str = "assistant") -> Message:
    return Message(f"a{i}", i, role, (TextPart("Let me look."), ToolCallPart(call_id, "shell", '{"cmd": "ls"}')))


def result(i: int, call_id: str, text: str = "a.txt b.txt") -> Message:
    return Message(f"t{i}", i, "tool", (ToolResultPart(call_id, text),), tool_call_id=call_id, name="shell")


def answer(i: int) -> Message:
    return Message(f"z{i}", i, "assistant", (TextPart("Done."),))


def test_an_unanswered_last_tool_call_is_flagged_and_pair_safety_drops_it():
    s = make(user(0), call(1, "c1"), result(2, "c1"), answer(3), user(4, "and the logs?"), call(5, "c2"))
    plan = plan_session(s, "missy", store=CountStore())
    assert [(o.index, o.partner) for o in plan.orphans] == [(5, None)]
    assert plan.orphans[0].message == "tool call #5 (c2) is sent but no tool result in the file answers it"
    assert plan.to_json()["orphans"][0]["partner"] is None
    safe = plan_session(s, "missy", store=CountStore(), options=SAFE)
    assert safe.messages[5].decision is Decision.DROPPED and "no tool result in the file answers it" in safe.messages[5].reason
    assert safe.orphans == () and 5 not in safe.context_index
    assert [m.decision for m in safe.messages[:5]] == [Decision.KEPT] * 5
    assert safe.totals.used == plan.totals.used - plan.messages[5].sent_tokens
    assert safe.usage["history"] == plan.usage["history"] - plan.messages[5].sent_tokens
    assert not any(c.get("tool_calls") for c in safe.context if c.get("tool_calls") and c["tool_calls"][0]["id"] == "c2")


def test_a_tool_result_whose_call_is_not_in_the_file_is_flagged_and_dropped():
    s = make(user(0), result(1, "gone"), answer(2), Message("t3", 3, "tool", (TextPart("no id"),), name="shell"), user(4, "thanks"))
    plan = plan_session(s, "missy", store=CountStore())
    assert [(o.index, o.partner) for o in plan.orphans] == [(1, None), (3, None)]
    assert plan.orphans[0].message == "tool result #1 is sent but its call gone is not in the file"
    assert plan.orphans[1].message == "tool result #3 is sent but the call it answers (it names none) is not in the file"
    safe = plan_session(s, "missy", store=CountStore(), options=SAFE)
    assert [m.decision for m in safe.messages] == [Decision.KEPT, Decision.DROPPED, Decision.KEPT, Decision.DROPPED, Decision.KEPT]
    assert safe.orphans == () and all(c["role"] != "tool" for c in safe.context)


def test_a_tool_call_on_a_user_message_is_flagged_with_its_result_and_both_are_dropped():
    s = make(user(0, "run it", ToolCallPart("c1", "shell", "{}")), result(1, "c1"), answer(2), user(3, "ok"))
    plan = plan_session(s, "missy", store=CountStore())
    assert [(o.index, o.partner) for o in plan.orphans] == [(0, 1), (1, 0)]
    assert plan.orphans[0].message == ("user message #0 is sent with tool call c1, which only an assistant message can send, "
                                       "so the call is lost (its result #1 has no call)")
    assert plan.orphans[1].message == ("tool result #1 is sent but its call c1 is on user message #0, and only an assistant "
                                       "message sends tool calls")
    assert s.tool_pairs == ()
    safe = plan_session(s, "missy", store=CountStore(), options=SAFE)
    assert [m.decision for m in safe.messages] == [Decision.DROPPED, Decision.DROPPED, Decision.KEPT, Decision.KEPT]
    assert safe.orphans == ()
    text = plan_summary(safe, s)
    assert "pair-safe dropped 2 messages (3 tokens) so that no tool call or result is sent without its partner: 2 whose partner is not in the file as the APIs need it" in text


def test_a_call_on_a_system_message_flags_its_result_but_never_drops_the_system_prompt():
    s = make(Message("s0", 0, "system", (TextPart("house rules"), ToolCallPart("c1", "shell", "{}"))), result(1, "c1"), user(2))
    plan = plan_session(s, "supyagent", store=CountStore())
    assert [(o.index, o.partner) for o in plan.orphans] == [(1, 0)]
    safe = plan_session(s, "supyagent", store=CountStore(), options=SAFE)
    assert safe.messages[0].decision is Decision.KEPT and safe.messages[1].decision is Decision.DROPPED
    assert safe.orphans == ()


def test_pairs_that_travel_together_are_not_flagged():
    s = make(user(0), call(1, "c1"), result(2, "c1"), answer(3), user(4))
    assert s.tool_call_problems == () and s.tool_pairs == ((1, 2),)
    assert plan_session(s, "missy", store=CountStore()).orphans == ()
    assert find_orphans(s, plan_session(s, "mnesis", store=CountStore()).messages) == []


@pytest.mark.parametrize("policy", policy_names())
def test_pair_safety_brings_every_figure_up_to_date(policy):
    s = make(user(0), result(1, "gone", "x " * 300), answer(2), user(3, "run", ToolCallPart("c9", "shell", "{}")), result(4, "c9"),
             call(5, "c1"), result(6, "c1"), answer(7), user(8, "and then?"), call(9, "c2"))
    params = {"autogen-buffered": {"buffer_size": 20}}.get(policy)  # its default keeps only the last 5 messages
    plain = plan_session(s, policy, params, store=CountStore())
    safe = plan_session(s, policy, params, store=CountStore(), options=SAFE)
    dropped = [m.index for m in safe.messages if "pair-safe" in m.reason]
    # OpenHands' View itself leaves out a call without its observation and an observation without
    # its call (ToolCallMatchingProperty): only the user message carrying a tool call is left.
    expected = {3} if policy == "openhands-llm-summarizing" else {1, 3, 4, 9}
    assert set(dropped) == {o.index for o in plain.orphans} == expected
    freed = sum(plain.messages[i].sent_tokens for i in dropped)
    assert safe.totals.used == plain.totals.used - freed == sum(safe.usage.values())
    assert safe.totals.kept == sum(m.tokens for m in safe.messages if m.sent)
    assert safe.totals.kept_messages == plain.totals.kept_messages - len(dropped)
    assert safe.totals.fits == (all(safe.usage[p] <= a for p, a in safe.allocation.items()) if safe.totals.fits_test == "parts"
                                else safe.totals.used <= safe.totals.budget)
    assert not set(dropped) & {i for i in safe.context_index if i is not None}
    assert safe.orphans == ()
