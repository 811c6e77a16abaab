"""missy's build in columns (policies/missy/context_manager_columns.py) gives exactly the plan of its
steps one message at a time (`context_manager.plan_records`, which tests/test_missy.py checks against
missy's code through `plan`): on random sessions and budgets (recorded summaries, system messages,
an oversized fresh tail trimmed or sent anyway), on every sample and real log, and on re-plans of
one session that reuse what is kept for it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies.missy.context_manager import plan, plan_records

from .columns_equivalence import assert_same_on_files, assert_same_on_session
from .test_replay_incremental import SETTINGS, SMALL, sessions

FILE_PARAMS = ({}, {"total": 6000}, {"total": 4500, "fresh_tail_count": 2}, {"total": 5000, "trim_protected_tail": True, "fresh_tail_count": 40},
               {"total": 20_000, "system_reserve": 0, "tool_definitions_reserve": 0, "fresh_tail_count": 0},
               {"total": 10_000, "memory_fraction": 0.7, "learnings_fraction": 0.6}, {"total": 200_000_000})


@SETTINGS
@given(s=sessions(), params=st.lists(SMALL["missy"], min_size=1, max_size=3), tokenizer=st.sampled_from([None, "o200k_base"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer) -> None:
    assert_same_on_session("missy", s, params, tokenizer, plan, plan_records)


@settings(SETTINGS, max_examples=1)
@given(st.just(None))
def test_every_sample_and_real_log(_) -> None:
    assert_same_on_files("missy", plan, plan_records, FILE_PARAMS)


@settings(SETTINGS, max_examples=10)
@given(s=sessions(), first=SMALL["missy"], then=SMALL["missy"])
def test_a_replan_after_a_change_equals_a_cold_plan(s, first, then) -> None:
    """What is kept for a session (its build per counting scheme) never carries one budget's or one
    estimator's plan into another's: a re-plan after a change, and under another estimator on the
    same store, is the plan a new session identity gets with those parameters."""
    from dataclasses import replace

    from ctxviz.engine.planner import plan_session

    store = CountStore()
    plan_session(s, "missy", first, store=store)
    for tokenizer in (None, "o200k_base"):
        again = plan_session(s, "missy", then, tokenizer, store=store)
        cold = plan_session(replace(s), "missy", then, tokenizer, store=CountStore())
        assert again.to_json() == cold.to_json() and list(again.context) == list(cold.context), (first, then, tokenizer)
