"""AutoGen's TokenLimited context decided in columns (policies/autogen/columns.py) gives exactly the
plan of its get_messages step by step (`token_limited.plan_records`, held to AutoGen's own code by
the golden cases in tests/test_policy_autogen.py), on random sessions and parameters, and again
when the same session is re-planned with other parameters (what the columns keep per session)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan_rows import Rows
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.autogen.token_limited import plan, plan_records
from ctxviz.engine.session import ToolDefinition

from .test_replay_incremental import SETTINGS, sessions

TOOLS = (ToolDefinition("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string", "description": "where"}}}),)
PARAMS = st.builds(dict, token_limit=st.one_of(st.none(), st.integers(1, 3000)), tool_schema=st.booleans(),
                   system_messages_in_context=st.booleans())


def same(fast, reference) -> None:
    assert isinstance(fast.messages, Rows)
    assert fast.to_json() == reference.to_json()
    assert fast.columns == reference.columns
    assert fast.reason_codes == reference.reason_codes
    assert list(fast.context) == list(reference.context)
    assert fast.context_index == reference.context_index and fast.extra == reference.extra


@SETTINGS
@given(s=sessions(), params=st.lists(PARAMS, min_size=1, max_size=3), model=st.sampled_from(["", "claude-3-5-sonnet", "gemini-1.5-pro"]),
       tools=st.booleans())
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, model, tools) -> None:
    s = dataclasses.replace(s, model=model, tools=TOOLS if tools else ())
    pol = get_policy("autogen-token-limited")
    counts = CountStore().get(s, pol.scheme(None, s.model))
    for p in params:  # one session re-planned: the second plan reuses what the first derived
        p = pol.make_params(p)
        same(plan(s, p, counts), plan_records(s, p, counts))
