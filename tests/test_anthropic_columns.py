"""Anthropic's context editing decided in columns (policies/anthropic/columns.py) gives exactly the
plans of the step-by-step edits (`context_editing.plan_clear_*_records`, held to the documented
behaviour by tests/test_policy_anthropic_editing.py), on random sessions (some assistant messages
thinking, some tools excluded, a recorded summary sometimes covering results) and parameters, and
again when one session is re-planned with other parameters (what the columns keep per session)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan_rows import Rows
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.anthropic import context_editing as ae
from ctxviz.engine.session import ThinkingPart

from .test_replay_incremental import SETTINGS, sessions

AMOUNT = st.integers(0, 400).map(str)
TOOL_PARAMS = st.builds(dict, trigger=st.one_of(AMOUNT.map("input_tokens:{}".format), st.integers(0, 6).map("tool_uses:{}".format)),
                        keep=st.integers(0, 4).map("tool_uses:{}".format), clear_at_least=st.one_of(st.none(), AMOUNT.map("input_tokens:{}".format)),
                        exclude_tools=st.sampled_from(["", "read", "other", "read,other"]),
                        clear_tool_inputs=st.sampled_from(["false", "true", "read", "other"]), placeholder=st.sampled_from(["[cleared]", "gone"]))
THINKING_PARAMS = st.builds(dict, keep=st.one_of(st.just("all"), st.integers(1, 4).map("thinking_turns:{}".format)))


def same(fast, reference) -> None:
    assert isinstance(fast.messages, Rows)
    assert fast.to_json() == reference.to_json()
    assert fast.columns == reference.columns
    assert fast.reason_codes == reference.reason_codes
    assert list(fast.context) == list(reference.context)
    assert fast.context_index == reference.context_index and fast.extra == reference.extra


@st.composite
def thinking_sessions(draw):
    s = draw(sessions())
    messages = tuple(dataclasses.replace(m, parts=(ThinkingPart(f"weighing option {m.index} " * draw(st.integers(1, 5))), *m.parts))
                     if m.role == "assistant" and draw(st.booleans()) else m for m in s.messages)
    return dataclasses.replace(s, messages=messages)


@SETTINGS
@given(s=thinking_sessions(), tools=st.lists(TOOL_PARAMS, min_size=1, max_size=3), thinking=st.lists(THINKING_PARAMS, min_size=1, max_size=3))
def test_the_columns_plans_equal_the_step_by_step_plans(s, tools, thinking) -> None:
    counts = CountStore().get(s, get_policy(ae.POLICY_TOOLS).scheme(None, s.model))
    for params in tools:  # one session re-planned: the later plans reuse what the first derived
        p = get_policy(ae.POLICY_TOOLS).make_params(params)
        same(ae.plan_clear_tool_uses(s, p, counts), ae.plan_clear_tool_uses_records(s, p, counts))
    for params in thinking:
        p = get_policy(ae.POLICY_THINKING).make_params(params)
        same(ae.plan_clear_thinking(s, p, counts), ae.plan_clear_thinking_records(s, p, counts))
