"""The supyagent replayer makes each turn already numbered as `simulate` numbers it (its step and
the reply that answered it), so `simulate` keeps it instead of copying it: a replay's turns must
carry the schedule's steps and replies and equal the reference replay's (numbered by `simulate`),
and only the turns the reference step made are copied."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine import simulate as simulate_module
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.simulate import simulate
from ctxviz.engine.steps import schedule

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, SMALL, sessions


@settings(SETTINGS, max_examples=examples(40))
@given(sessions(), st.data(), st.booleans(), st.booleans())
def test_a_replays_turns_carry_the_schedules_steps_and_replies(s, data, pair_safe, per_message):
    options = PlanOptions(pair_safe=pair_safe)
    store = CountStore()
    params = data.draw(SMALL["supyagent"])
    copies: list[int] = []
    numbered = simulate_module._numbered
    simulate_module._numbered = lambda turn, step, reply: copies.append(step) or numbered(turn, step, reply)
    try:
        fast = simulate(s, "supyagent", params, store=store, options=options, per_message=per_message)
    finally:
        simulate_module._numbered = numbered
    assert len(copies) <= fast.scratch_steps  # only the turns the reference step made are copied to be numbered
    reference = simulate(s, "supyagent", params, store=store, options=options, incremental=False, per_message=per_message)
    plan = schedule(s, per_message, get_policy("supyagent").step_points)
    assert [(t.index, t.step, t.reply) for t in fast.turns] == [(i, k, r) for k, (i, r) in enumerate(zip(plan.steps, plan.replies, strict=True))]
    assert fast.turns == reference.turns
