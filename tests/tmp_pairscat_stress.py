"""Pair safety carried from turn to turn by the categories and mnesis replayers: each replay with
`--pair-safe` equals the reference, which plans every prefix and applies `apply_pair_safety` to
it, step by step (every Turn field and event), on random logs with tool calls and broken pairs
(hypothesis), the samples and real logs; `replays_incrementally` says it is incremental, and no
step is planned from scratch.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_properties import PARAMS as WIDE
from .test_replay_incremental import SETTINGS, SMALL, same, sessions

ROOT = Path(__file__).parent.parent
PAIR_SAFE = PlanOptions(pair_safe=True)
POLICIES = ("categories", "mnesis")


def shared_call_ids(session) -> bool:  # type: ignore[no-untyped-def]
    ids = [c.id for m in session.messages for c in m.tool_calls if c.id]
    return len(set(ids)) != len(ids)


@settings(SETTINGS, max_examples=600)
@given(s=sessions(), data=st.data(), short=st.sampled_from([1, 3, 64]))
def test_pair_safe_replay_equals_the_reference(s, data, short):  # type: ignore[no-untyped-def]
    """Random logs with calls, results, results without a call and calls never answered, at
    budgets small enough that the policies cut (short and long pairs take different paths)."""
    from ctxviz.engine.policies.replay_common import _PairSafety

    saved, _PairSafety.SHORT = _PairSafety.SHORT, short
    try:
        for name in POLICIES:
            params = data.draw(SMALL[name] if data.draw(st.integers(0, 3)) else WIDE[name])
            same(s, name, params, PAIR_SAFE)
            how = replays_incrementally(name, s, PAIR_SAFE, params)
            assert not how.startswith("from scratch") or shared_call_ids(s), how
            if how == "incremental":
                assert simulate(s, name, params, store=CountStore(), options=PAIR_SAFE).scratch_steps == 0
    finally:
        _PairSafety.SHORT = saved


def test_both_say_they_carry_pair_safety() -> None:
    for name in POLICIES:
        assert replays_incrementally(name, pair_safe=True) == "incremental"


def replay(session, policy, params, per_message):  # type: ignore[no-untyped-def]
    store = CountStore()
    fast = simulate(session, policy, params, store=store, options=PAIR_SAFE, per_message=per_message)
    reference = simulate(session, policy, params, store=store, options=PAIR_SAFE, incremental=False, per_message=per_message)
    return fast, reference
