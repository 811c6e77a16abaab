"""langchain-summarization in columns (`summarization.plan`, on the state kept per session by
policies/langchain/summarization_columns.py) gives exactly the plan of SummarizationMiddleware's
steps one by one (`summarization.plan_records`, itself checked against LangChain's own code by the
golden cases in tests/test_policy_langchain.py): on random sessions and parameters, on every sample
and real log, and on re-plans of one session that reuse its state."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.langchain.summarization import plan, plan_records

from .columns_equivalence import assert_same_on_files, assert_same_plan
from .test_replay_incremental import SETTINGS, sessions

SIZE = st.sampled_from(["tokens=1", "tokens=300", "tokens=2000", "messages=1", "messages=3", "messages=40", "fraction=0.001", "fraction=0.5"])
TRIGGER = st.one_of(st.just(""), SIZE, st.tuples(SIZE, SIZE).map("|".join),
                    st.sampled_from(["tokens=100,messages=4", "messages=2,fraction=0.01"]))
PARAMS = st.builds(dict, trigger=TRIGGER, keep=SIZE, trim_tokens_to_summarize=st.sampled_from([None, 1, 50, 400, 4000]),
                   max_input_tokens=st.sampled_from([0, 0, 2000, 200_000]), model_provider=st.sampled_from(["", "", "openai", "anthropic"]))
MODELS = st.sampled_from(["", "gpt-4o", "claude-sonnet-4-5", "an-unknown-model"])
#: Parameters that fire on the sample and real logs, with every kind of keep.
FILE_PARAMS = ({}, {"trigger": "tokens=500", "keep": "messages=5"}, {"trigger": "messages=3", "keep": "tokens=300", "trim_tokens_to_summarize": 200},
               {"trigger": "fraction=0.01|messages=500", "keep": "fraction=0.005", "trim_tokens_to_summarize": None},
               {"trigger": "tokens=1", "keep": "tokens=100000", "model_provider": "anthropic"})


@SETTINGS
@given(s=sessions(), model=MODELS, params=st.lists(PARAMS, min_size=1, max_size=2), tokenizer=st.sampled_from([None, "o200k_base"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, model, params, tokenizer) -> None:
    s = dataclasses.replace(s, model=model)
    pol = get_policy("langchain-summarization")
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    for p in params:  # the second re-plans the same session on the state kept for it
        made = pol.make_params(p)
        assert_same_plan(plan(s, made, counts), plan_records(s, made, counts), p)


@settings(SETTINGS, max_examples=1)
@given(st.just(None))
def test_every_sample_and_real_log(_) -> None:
    assert_same_on_files("langchain-summarization", plan, plan_records, FILE_PARAMS)
