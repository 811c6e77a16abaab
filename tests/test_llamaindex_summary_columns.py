"""LlamaIndex's ChatSummaryMemoryBuffer decided in columns (policies/llamaindex/summary_columns.py)
gives exactly the plan of its get() step by step (`chat_summary_memory_buffer.plan_records`, held
to LlamaIndex's own class by the golden cases in tests/test_policy_llamaindex.py), on random
sessions and parameters, and again when one session is re-planned with other parameters (what the
columns keep per session)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.llamaindex.chat_summary_memory_buffer import plan, plan_records

from .columns_equivalence import assert_same_plan
from .test_replay_incremental import SETTINGS, sessions

PARAMS = st.builds(dict, token_limit=st.one_of(st.none(), st.integers(1, 400)), llm=st.booleans(), count_initial_tokens=st.booleans(),
                   initial_token_count=st.one_of(st.none(), st.integers(0, 300)), system_messages_in_memory=st.booleans())


@SETTINGS
@given(s=sessions(), params=st.lists(PARAMS, min_size=1, max_size=3), tokenizer=st.sampled_from([None, "chars4"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer) -> None:
    pol = get_policy("llamaindex-chat-summary-memory-buffer")
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    for p in params:  # one session re-planned: the later plans reuse what the first derived
        p = pol.make_params(p)
        fast, reference = plan(s, p, counts), plan_records(s, p, counts)
        assert_same_plan(fast, reference)
