"""missy-consolidator's seed consolidation decided in columns (`consolidator.plan_columns`) gives
exactly the plan of its steps one message at a time (`consolidator.plan_records`, which the
policy's own tests check against missy's algorithm), on random sessions and parameters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan_rows import Rows
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.missy.consolidator import plan_columns, plan_records

from .test_replay_incremental import SETTINGS, sessions

PARAMS = st.builds(dict, max_tokens=st.integers(-1, 3000) | st.just(30_000), threshold_pct=st.floats(0, 1))


@SETTINGS
@given(s=sessions(), params=PARAMS, tokenizer=st.sampled_from([None, "o200k_base"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer) -> None:
    pol = get_policy("missy-consolidator")
    p = pol.make_params({**params, "max_tokens": max(0, params["max_tokens"])})
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    fast = plan_columns(s, p, counts)
    assert isinstance(fast.messages, Rows)
    reference = plan_records(s, p, counts)
    assert fast.to_json() == reference.to_json()
    assert [(m.reason_code, m.zone) for m in fast.messages] == [(m.reason_code, m.zone) for m in reference.messages]
    assert fast.context_index == reference.context_index
