"""AutoGen's Buffered and HeadAndTail contexts decided in columns (policies/autogen/columns.py) give
exactly the plans of their get_messages step by step (`buffered.plan_records`,
`head_and_tail.plan_records`, held to AutoGen's own code by the golden cases in
tests/test_policy_autogen.py through `plan`), on random sessions and parameters, every sample and
real log, and on re-plans of one session after a change."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.autogen import buffered, head_and_tail

from .columns_equivalence import assert_same_plan, file_sessions
from .test_replay_incremental import SETTINGS, sessions

POLICIES = {"autogen-buffered": (buffered, st.builds(dict, buffer_size=st.integers(1, 12), system_messages_in_context=st.booleans())),
            "autogen-head-and-tail": (head_and_tail, st.builds(dict, head_size=st.integers(1, 6), tail_size=st.integers(1, 12),
                                                               system_messages_in_context=st.booleans()))}
FILE_PARAMS = {"autogen-buffered": ({}, {"buffer_size": 1}, {"buffer_size": 40, "system_messages_in_context": True}),
               "autogen-head-and-tail": ({}, {"head_size": 1, "tail_size": 1}, {"head_size": 5, "tail_size": 30, "system_messages_in_context": True},
                                         {"head_size": 5000, "tail_size": 5000})}


@SETTINGS
@given(s=sessions(), name=st.sampled_from(sorted(POLICIES)), data=st.data(), model=st.sampled_from(["", "claude-3-5-sonnet", "gemini-1.5-pro"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, name, data, model) -> None:
    s = dataclasses.replace(s, model=model)
    module, params = POLICIES[name]
    pol = get_policy(name)
    counts = CountStore().get(s, pol.scheme(None, s.model))
    for p in data.draw(st.lists(params, min_size=1, max_size=3)):  # the later ones re-plan on what is kept for the session
        made = pol.make_params(p)
        assert_same_plan(module.plan(s, made, counts), module.plan_records(s, made, counts), (name, p))


@settings(SETTINGS, max_examples=1)
@given(st.just(None))
def test_every_sample_and_real_log(_) -> None:
    for name, (module, _params) in POLICIES.items():
        pol = get_policy(name)
        for file, s in file_sessions():
            counts = CountStore().get(s, pol.scheme(None, s.model))
            for p in FILE_PARAMS[name]:
                made = pol.make_params(p)
                assert_same_plan(module.plan(s, made, counts), module.plan_records(s, made, counts), (name, file, p))


@settings(SETTINGS, max_examples=10)
@given(s=sessions(), name=st.sampled_from(sorted(POLICIES)), data=st.data())
def test_a_replan_after_a_change_equals_a_cold_plan(s, name, data) -> None:
    """What is kept per session and counting scheme never carries one setting's or one estimator's
    plan into another's."""
    first, then = data.draw(POLICIES[name][1]), data.draw(POLICIES[name][1])
    store = CountStore()
    plan_session(s, name, first, store=store)
    for tokenizer in (None, "cl100k_base"):
        again = plan_session(s, name, then, tokenizer, store=store)
        cold = plan_session(dataclasses.replace(s), name, then, tokenizer, store=CountStore())
        assert again.to_json() == cold.to_json() and list(again.context) == list(cold.context), (first, then, tokenizer)
