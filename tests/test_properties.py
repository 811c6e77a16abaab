"""Invariants every policy keeps, on random sessions and random parameters (hypothesis)."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy, policy_names

from .builders import session
from .hypothesis_budget import examples

ROLES = st.sampled_from(["user", "assistant", "tool", "system"])
TEXT = st.text(alphabet="abc def\n{}:", min_size=0, max_size=400)
SESSIONS = st.lists(st.tuples(ROLES, TEXT), min_size=1, max_size=40).map(lambda turns: session(*turns))
SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def missy_params():
    return st.builds(dict, total=st.integers(0, 20000), system_reserve=st.integers(0, 3000), tool_definitions_reserve=st.integers(0, 3000),
                     memory_fraction=st.floats(0, 1), learnings_fraction=st.floats(0, 1), fresh_tail_count=st.integers(0, 30)
                     ).filter(lambda p: p["system_reserve"] + p["tool_definitions_reserve"] <= p["total"])


PARAMS = {
    "missy": missy_params(),
    "supyagent": st.builds(dict, context_limit=st.integers(50, 20000), response_reserve=st.integers(0, 2000), min_recent_messages=st.integers(0, 10),
                           max_messages_before_summary=st.integers(1, 50)),
    "categories": st.builds(dict, max_tokens=st.integers(1, 20000), dialog_fraction=st.floats(0, 1), system_output_fraction=st.floats(0, 1)),
    "mnesis": st.builds(dict, context_limit=st.integers(0, 60000), reserved_output_tokens=st.integers(0, 4000), compaction_buffer=st.integers(1000, 30000)),
    "missy-consolidator": st.builds(dict, max_tokens=st.integers(0, 5000), threshold_pct=st.floats(0, 1)),
    "claude-code": st.builds(dict, context_window=st.integers(1000, 60000), autocompact_buffer=st.integers(0, 70000),
                             max_output_tokens_for_summary=st.integers(0, 30000),
                             autocompact_pct_override=st.one_of(st.none(), st.floats(0.5, 100)),
                             calibrated_trigger=st.one_of(st.none(), st.integers(1, 80000))),
    "langchain-trim": st.one_of(
        st.builds(dict, max_tokens=st.integers(0, 3000), strategy=st.just("last"), allow_partial=st.booleans(), include_system=st.booleans(),
                  start_on=st.sampled_from(["", "human", "human,tool"]), end_on=st.sampled_from(["", "ai", "human,tool"])),
        st.builds(dict, max_tokens=st.integers(0, 3000), strategy=st.just("first"), allow_partial=st.booleans(),
                  end_on=st.sampled_from(["", "ai", "tool"]))),
    "langchain-summarization": st.builds(dict, trigger=st.sampled_from(["", "tokens=200", "messages=5", "tokens=300,messages=4|messages=12", "fraction=0.01"]),
                                         keep=st.sampled_from(["messages=3", "tokens=150", "fraction=0.002", "messages=20"]),
                                         trim_tokens_to_summarize=st.sampled_from([None, 5, 4000]), max_input_tokens=st.sampled_from([0, 50000])),
    "langchain-context-editing": st.builds(dict, trigger=st.integers(0, 2000), keep=st.integers(0, 4), clear_at_least=st.integers(0, 300),
                                           clear_tool_inputs=st.booleans(), exclude_tools=st.sampled_from(["", "shell"])),
    "gemini-cli-compression": st.builds(dict, tokenLimit=st.integers(1, 20000), compressionThreshold=st.floats(0.01, 1),
                                        truncateToolOutputThreshold=st.integers(0, 50000)),
    "codex-compaction": st.builds(dict, model_context_window=st.integers(1, 20000), model_auto_compact_token_limit=st.integers(1, 20000),
                                  compact_user_message_max_tokens=st.integers(0, 500)),
    "anthropic-clear-tool-uses": st.builds(dict, trigger=st.sampled_from(["input_tokens:0", "input_tokens:500", "tool_uses:1", "tool_uses:0"]),
                                           keep=st.sampled_from(["tool_uses:0", "tool_uses:1", "tool_uses:3"]),
                                           clear_tool_inputs=st.sampled_from(["true", "false"]), context_window=st.integers(1, 20000)),
    "anthropic-clear-thinking": st.builds(dict, keep=st.sampled_from(["thinking_turns:1", "thinking_turns:2", "all"]), context_window=st.integers(1, 20000)),
    "strands-sliding-window": st.builds(dict, window_size=st.integers(0, 30), pin_first=st.none() | st.integers(0, 5),
                                        context_window_limit=st.integers(1, 5000), should_truncate_results=st.booleans(),
                                        proactive_compression=st.none() | st.floats(0.05, 1)),
    "strands-summarizing": st.builds(dict, summary_ratio=st.floats(0, 1), preserve_recent_messages=st.integers(0, 12),
                                     pin_first=st.none() | st.integers(0, 5), context_window_limit=st.integers(1, 5000)),
    "openhands-llm-summarizing": st.integers(4, 60).flatmap(lambda size: st.builds(
        dict, max_size=st.just(size), keep_first=st.integers(0, size // 2 - 2), max_tokens=st.none() | st.integers(1, 5000),
        max_input_tokens=st.none() | st.integers(0, 5000))),
    "llamaindex-chat-memory-buffer": st.builds(dict, token_limit=st.integers(1, 5000), initial_token_count=st.one_of(st.none(), st.integers(0, 400))),
    "llamaindex-chat-summary-memory-buffer": st.builds(dict, token_limit=st.integers(1, 5000), llm=st.booleans(),
                                                       count_initial_tokens=st.booleans()),
    "autogen-buffered": st.builds(dict, buffer_size=st.integers(1, 30)),
    "autogen-head-and-tail": st.builds(dict, head_size=st.integers(1, 10), tail_size=st.integers(1, 20)),
    "autogen-token-limited": st.builds(dict, token_limit=st.one_of(st.none(), st.integers(1, 5000)), tool_schema=st.booleans()),
}


#: Per policy: every registered policy runs these properties on its own (21 policies x 60 examples
#: ran for minutes; a failure now names its policy).
PER_POLICY = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_every_registered_policy_has_parameter_strategies():
    assert set(policy_names()) == set(PARAMS)


@pytest.mark.parametrize("name", sorted(PARAMS))
@PER_POLICY
@given(s=SESSIONS, data=st.data())
def test_every_message_has_exactly_one_decision_and_kept_order_is_preserved(name, s, data):
    params = data.draw(PARAMS[name])
    plan = plan_session(s, name, params, store=CountStore())
    assert [m.index for m in plan.messages] == list(range(len(s.messages)))
    sent_order = [i for i in plan.context_index if i is not None]
    assert sent_order == sorted(sent_order), name
    sent = {m.index for m in plan.messages if m.sent}
    assert set(sent_order) <= sent, name
    carried = plan.extra.get("carried_by", {})  # mnesis: a tool output sent inside its call's part
    assert all(plan.messages[i].zone == "system" or carried.get(i) in sent_order for i in sent - set(sent_order)), name  # merged into the system prompt
    assert len(plan.context) == len(plan.context_index)


@SETTINGS
@given(s=SESSIONS, params=missy_params())
def test_missy_allocation_adds_up_and_fits_whenever_the_protected_part_fits(s, params):
    plan = plan_session(s, "missy", params, store=CountStore())
    assert sum(plan.allocation.values()) == plan.totals.budget == params["total"]
    protected = sum(m.tokens for m in plan.messages if m.zone in ("fresh_tail", "new_message"))
    if protected <= plan.allocation["history"] and not any(m.role == "system" for m in s.messages):
        assert plan.usage["history"] <= plan.allocation["history"]
        assert plan.totals.fits


@SETTINGS
@given(s=SESSIONS, data=st.data())
def test_allocations_add_up_exactly(s, data):
    for name in ("missy", "supyagent", "mnesis", "missy-consolidator", "llamaindex-chat-memory-buffer", "autogen-buffered",
                 "autogen-head-and-tail", "autogen-token-limited"):
        plan = plan_session(s, name, data.draw(PARAMS[name]), store=CountStore())
        assert sum(plan.allocation.values()) == plan.totals.budget, name


@pytest.mark.parametrize("name", sorted(PARAMS))
@PER_POLICY
@given(s=SESSIONS, data=st.data())
def test_plan_is_the_same_from_scratch_or_after_parameter_changes(name, s, data):
    store = CountStore()
    changes = data.draw(st.lists(PARAMS[name], min_size=1, max_size=4))
    for params in changes:
        last = plan_session(s, name, params, store=store)
    fresh = plan_session(s, name, changes[-1], store=CountStore())
    assert last.messages == fresh.messages and last.context == fresh.context and last.totals == fresh.totals
    assert dataclasses.asdict(last.totals) == dataclasses.asdict(fresh.totals)


@SETTINGS
@given(s=SESSIONS)
def test_supyagent_keeps_at_least_min_recent(s):
    plan = plan_session(s, "supyagent", {"context_limit": 100, "response_reserve": 0, "min_recent_messages": 3}, store=CountStore())
    history = [m for m in plan.messages if m.role != "system"]
    assert all(m.sent for m in history[-3:])
    assert get_policy("supyagent")
