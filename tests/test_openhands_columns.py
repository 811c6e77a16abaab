"""OpenHands' LLMSummarizingCondenser decided in columns (policies/openhands/columns.py) gives exactly
the plan of its get_condensation step by step (`condenser.plan_records`, held to the SDK by the
golden cases in tests/test_policy_openhands.py), on random sessions (some calls thinking, so tool
loops form; orphan results the View leaves out; recorded summaries) and parameters, and again when
one session is re-planned with other parameters (what the columns keep per session and log)."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.openhands.condenser import plan, plan_records
from ctxviz.engine.session import ThinkingPart

from .columns_equivalence import assert_same_plan
from .test_replay_incremental import SETTINGS, sessions

PARAMS = st.builds(dict, max_size=st.integers(6, 40), keep_first=st.integers(0, 1), max_tokens=st.one_of(st.none(), st.integers(1, 800)),
                   max_input_tokens=st.one_of(st.none(), st.just(0), st.integers(1, 2000)), minimum_progress=st.sampled_from([0.05, 0.1, 0.5]))


@st.composite
def thinking_sessions(draw):
    s = draw(sessions())
    messages = tuple(dataclasses.replace(m, parts=(ThinkingPart("weighing it"), *m.parts)) if m.tool_calls and draw(st.booleans()) else m
                     for m in s.messages)
    return dataclasses.replace(s, messages=messages)


@SETTINGS
@given(s=thinking_sessions(), params=st.lists(PARAMS, min_size=1, max_size=3))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params) -> None:
    pol = get_policy("openhands-llm-summarizing")
    counts = CountStore().get(s, pol.scheme(None, s.model))
    for p in params:  # one session re-planned: the later plans reuse what the first derived
        p = pol.make_params(p)
        fast, reference = plan(s, p, counts), plan_records(s, p, counts)
        assert_same_plan(fast, reference)
