"""langchain-trim decided in columns (policies/langchain/trim_columns.py) gives exactly the plan of
LangChain's steps one by one (`trim.plan_records`, itself checked against LangChain's own code by
the golden cases in tests/test_policy_langchain.py), on random sessions and parameters."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan_rows import Rows
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.langchain.trim import plan_records
from ctxviz.engine.policies.langchain.trim_columns import plan_columns

from .test_replay_incremental import SETTINGS, sessions

TYPES = st.sampled_from(["", "human", "ai", "tool", "system", "human,tool", "ai,human"])
PARAMS = st.builds(dict, max_tokens=st.one_of(st.integers(-5, 6000), st.sampled_from([0.5, 1200.7, 4000.0])),
                   strategy=st.sampled_from(["last", "first"]), end_on=TYPES, start_on=TYPES, include_system=st.booleans())


def _valid(params: dict) -> dict:
    if params["strategy"] == "first":  # LangChain refuses start_on and include_system with 'first'
        params = {**params, "start_on": "", "include_system": False}
    return params


@SETTINGS
@given(s=sessions(), params=PARAMS, tokenizer=st.sampled_from([None, "o200k_base"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer) -> None:
    pol = get_policy("langchain-trim")
    p = pol.make_params(_valid(params))
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    fast = plan_columns(s, p, counts)
    assert fast is not None and isinstance(fast.messages, Rows)
    reference = plan_records(s, p, counts)
    assert fast.to_json() == reference.to_json()
    assert fast.columns == reference.columns
    assert fast.reason_codes == reference.reason_codes
    assert fast.context_index == reference.context_index and fast.extra == reference.extra
    # a re-plan of the same session with other parameters reuses the entries and is still exact
    other = pol.make_params(_valid({**params, "max_tokens": 300}))
    assert plan_columns(s, other, counts).to_json() == plan_records(s, other, counts).to_json()


@settings(SETTINGS, max_examples=15)
@given(s=sessions())
def test_a_session_with_a_system_prompt_and_summaries(s) -> None:
    s = dataclasses.replace(s, system_prompt="You are terse and precise.")
    pol = get_policy("langchain-trim")
    for params in ({"max_tokens": 500, "include_system": True, "start_on": "human"}, {"max_tokens": 50}, {"max_tokens": 10**6, "end_on": "ai"}):
        p = pol.make_params(params)
        counts = CountStore().get(s, pol.scheme(None, s.model))
        assert plan_columns(s, p, counts).to_json() == plan_records(s, p, counts).to_json()


def test_other_counters_and_allow_partial_take_the_step_by_step_plan() -> None:
    pol = get_policy("langchain-trim")
    from ctxviz.engine.session import Message, Session, TextPart

    s = Session(messages=(Message(id="a", index=0, role="user", parts=(TextPart("hello"),)),), source="<t>", format="test")
    counts = CountStore().get(s, pol.scheme(None, s.model))
    for params in ({"allow_partial": True}, {"token_counter": "len"}, {"chars_per_token": 3.0}):
        assert plan_columns(s, pol.make_params(params), counts) is None
