"""langchain-context-editing keeps, per session and counting scheme, the request's messages and the
tool results cleared to each placeholder: a re-plan after a change (another placeholder, keep or
trigger) is the plan a session seen for the first time gets, context included."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session

from .test_replay_incremental import SETTINGS, sessions

PARAMS = st.builds(dict, trigger=st.integers(0, 3000), keep=st.integers(-3, 4), clear_at_least=st.integers(0, 200),
                   placeholder=st.sampled_from(["[cleared]", "", "x" * 90]))


@settings(SETTINGS, max_examples=25)
@given(s=sessions(), params=st.lists(PARAMS, min_size=2, max_size=4))
def test_a_replan_after_a_change_equals_a_cold_plan(s, params) -> None:
    store = CountStore()
    for p in params:
        again = plan_session(s, "langchain-context-editing", p, store=store)
        cold = plan_session(dataclasses.replace(s), "langchain-context-editing", p, store=CountStore())
        assert again.to_json() == cold.to_json() and list(again.context) == list(cold.context), p
