"""ChatMemoryBuffer.get in columns (policies/llamaindex/buffer_columns.py) gives exactly the plan of its
steps one message at a time (`chat_memory_buffer.plan_records`, which tests/test_policy_llamaindex.py
holds to LlamaIndex's own class through `plan`): on random sessions and parameters (recorded summaries,
system messages in memory or not, a limit below the initial count, a newest message over the limit),
on every sample and real log, and on re-plans of one session after a change."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies.llamaindex.chat_memory_buffer import plan, plan_records

from .columns_equivalence import assert_same_on_files, assert_same_on_session, file_sessions
from .test_replay_incremental import SETTINGS, sessions

NAME = "llamaindex-chat-memory-buffer"
PARAMS = st.builds(dict, token_limit=st.one_of(st.none(), st.integers(1, 600)), initial_token_count=st.one_of(st.none(), st.integers(0, 300)),
                   system_messages_in_memory=st.booleans())
FILE_PARAMS = ({}, {"token_limit": 500}, {"token_limit": 20_000, "system_messages_in_memory": True}, {"token_limit": 5, "initial_token_count": 9},
               {"token_limit": 200_000_000})


@SETTINGS
@given(s=sessions(), params=st.lists(PARAMS, min_size=1, max_size=3), tokenizer=st.sampled_from([None, "o200k_base"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer) -> None:
    assert_same_on_session(NAME, s, params, tokenizer, plan, plan_records)


@settings(SETTINGS, max_examples=1)
@given(st.just(None))
def test_every_sample_and_real_log(_) -> None:
    assert_same_on_files(NAME, plan, plan_records, FILE_PARAMS)


@settings(SETTINGS, max_examples=10)
@given(s=sessions(), first=PARAMS, then=PARAMS)
def test_a_replan_after_a_change_equals_a_cold_plan(s, first, then) -> None:
    """What is kept per session and counting scheme never carries one setting's or one estimator's
    plan into another's."""
    store = CountStore()
    plan_session(s, NAME, first, store=store)
    for tokenizer in (None, "o200k_base"):
        again = plan_session(s, NAME, then, tokenizer, store=store)
        cold = plan_session(replace(s), NAME, then, tokenizer, store=CountStore())
        assert again.to_json() == cold.to_json() and list(again.context) == list(cold.context), (first, then, tokenizer)


def test_a_replay_of_a_session_with_recorded_summaries_leaves_its_plan_alone() -> None:
    """The replay builds the history's joined count without the recorded summaries (none is in the
    chat store before one is in force); the plan of the same counts holds them. Both were kept
    under one key, so `simulate` crashed planning the whole file after its replay."""
    from ctxviz.engine.simulate import simulate

    for name, s in file_sessions():
        if not s.summaries:
            continue
        store = CountStore()
        cold = plan_session(replace(s), "llamaindex-chat-memory-buffer", {}, None, CountStore())
        simulate(s, "llamaindex-chat-memory-buffer", {}, store=store)
        assert plan_session(s, "llamaindex-chat-memory-buffer", {}, None, store).to_json() == cold.to_json(), name
