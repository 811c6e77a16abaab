"""mnesis' build in columns (policies/mnesis/context_builder_columns.py) gives exactly the plan of its
steps one message at a time (`context_builder.plan_records`, which tests/test_mnesis.py and the
golden cases check against mnesis itself): on random sessions and budgets (tool calls carried in
their call's ToolPart, recorded summaries, always_include_latest), on every sample and real log,
and on re-plans of one session that reuse what is kept for it, with counts measured whole (whose
ToolPart shares the plan reads) and counts made another way (whose ToolParts it counts itself)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore, TokenCounts
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.mnesis.context_builder import plan, plan_records

from .columns_equivalence import assert_same_on_files, assert_same_plan
from .test_replay_incremental import SETTINGS, SMALL, sessions

# SMALL's budgets cut often; these send most of a session too.
ROOMY = st.builds(dict, context_limit=st.integers(5000, 40_000), reserved_output_tokens=st.integers(0, 1000), compaction_buffer=st.integers(1000, 4000),
                  always_include_latest=st.booleans())
FILE_PARAMS = ({}, {"context_limit": 14000, "always_include_latest": True}, {"context_limit": 9000}, {"context_limit": 23_000, "compaction_buffer": 1000},
               {"context_limit": 0}, {"context_limit": 200_000_000})


@SETTINGS
@given(s=sessions(), params=st.lists(st.one_of(SMALL["mnesis"], ROOMY), min_size=1, max_size=2), tokenizer=st.sampled_from([None, "o200k_base"]),
       measured=st.booleans())
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer, measured) -> None:
    pol = get_policy("mnesis")
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    if not measured:  # counts not made by measure_session (as a replay's): equal, but not those it kept ToolPart shares for
        counts = TokenCounts(s, counts.scheme, list(counts.message_tokens))
    for p in params:  # the second re-plans the same session on what is kept for it
        made = pol.make_params(p)
        assert_same_plan(plan(s, made, counts), plan_records(s, made, counts), p)


@settings(SETTINGS, max_examples=1)
@given(st.just(None))
def test_every_sample_and_real_log(_) -> None:
    assert_same_on_files("mnesis", plan, plan_records, FILE_PARAMS)
