"""langchain-context-editing decided in columns (policies/langchain/context_editing_columns.py) gives
exactly the plan of ClearToolUsesEdit's steps one by one (`context_editing.plan_records`, itself
checked against LangChain's own code by the golden cases in tests/test_policy_langchain.py), on
random sessions and parameters."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan_rows import Rows
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.langchain.context_editing import plan_records
from ctxviz.engine.policies.langchain.context_editing_columns import plan_columns

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, sessions

PARAMS = st.builds(dict, trigger=st.integers(-5, 3000), keep=st.integers(-4, 6), clear_at_least=st.integers(-5, 400),
                   exclude_tools=st.sampled_from(["", "read", "shell,read", "other"]), placeholder=st.sampled_from(["[cleared]", "", "x" * 90]))


def _cleared_before(message, draw_it: bool):
    """A tool result an earlier edit cleared, as LangChain dumps it (messages_to_dict)."""
    if not draw_it or message.role != "tool":
        return message
    data = {"content": "[cleared]", "tool_call_id": message.tool_call_id, "response_metadata": {"context_editing": {"cleared": True}}}
    return dataclasses.replace(message, raw={"type": "tool", "data": data})


@settings(SETTINGS, max_examples=examples(60))
@given(s=sessions(), params=PARAMS, tokenizer=st.sampled_from([None, "o200k_base"]), data=st.data())
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer, data) -> None:
    marks = data.draw(st.lists(st.booleans(), min_size=len(s.messages), max_size=len(s.messages)))
    s = dataclasses.replace(s, messages=tuple(_cleared_before(m, mark and data.draw(st.integers(0, 3)) == 0)
                                              for m, mark in zip(s.messages, marks, strict=True)))
    pol = get_policy("langchain-context-editing")
    p = pol.make_params(params)
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    fast = plan_columns(s, p, counts)
    assert fast is not None and isinstance(fast.messages, Rows)
    reference = plan_records(s, p, counts)
    assert fast.to_json() == reference.to_json()
    assert [(m.reason_code, m.zone) for m in fast.messages] == [(m.reason_code, m.zone) for m in reference.messages]
    assert fast.context_index == reference.context_index
