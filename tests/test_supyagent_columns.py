"""supyagent's build in columns (policies/supyagent/context_manager_columns.py) gives exactly the
plan of its steps one message at a time (`context_manager.plan_records`, which
tests/test_supyagent.py checks against supyagent's code): on random sessions and settings
(recorded summaries, forced overflows, emergency truncation), on every sample and real log, and on
re-plans of one session that reuse what is kept for it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan_rows import Rows
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.supyagent.context_manager import plan, plan_records

from .columns_equivalence import assert_same_plan, file_sessions
from .test_replay_incremental import SETTINGS, SMALL, sessions

# SMALL's budgets cut often; these keep the recorded summary (under 30 % of what is left) often too.
ROOMY = st.builds(dict, context_limit=st.integers(4000, 40_000), response_reserve=st.integers(0, 500), min_recent_messages=st.integers(0, 8),
                  trim_protected_tail=st.booleans())
FILE_PARAMS = ({}, {"context_limit": 3000}, {"context_limit": 1500, "min_recent_messages": 2}, {"context_limit": 6000, "trim_protected_tail": True},
               {"context_limit": 20_000, "response_reserve": 0, "min_recent_messages": 0}, {"context_limit": 200_000_000})


def same_or_records(s, made, counts, where) -> None:
    """The plan equals `plan_records`, and is in columns unless emergency truncation changed a message."""
    fast, reference = plan(s, made, counts), plan_records(s, made, counts)
    if isinstance(fast.messages, Rows):
        assert_same_plan(fast, reference, where)
    else:
        assert fast.to_json() == reference.to_json(), where
        assert fast.extra["emergency_truncation"], where


@SETTINGS
@given(s=sessions(), params=st.lists(st.one_of(SMALL["supyagent"], ROOMY), min_size=1, max_size=2), tokenizer=st.sampled_from([None, "o200k_base"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer) -> None:
    pol = get_policy("supyagent")
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    for p in params:  # the second re-plans the same session on what is kept for it
        same_or_records(s, pol.make_params(p), counts, p)


@settings(SETTINGS, max_examples=1)
@given(st.just(None))
def test_every_sample_and_real_log(_) -> None:
    pol = get_policy("supyagent")
    for name, s in file_sessions():
        counts = CountStore().get(s, pol.scheme(None, s.model))
        for p in FILE_PARAMS:
            same_or_records(s, pol.make_params(p), counts, (name, p))
