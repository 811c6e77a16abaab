"""The claude-code and supyagent replayers make each turn already numbered as `simulate` numbers
it (its step and the reply that answered it, `new_turn(..., step, reply)`), so `simulate` keeps it
instead of copying it: the turn `new_turn` makes must be the one the `Turn` dataclass builds from the same
fields, and a replay's turns must carry the schedule's steps and replies, as the reference
replay's turns (numbered by `simulate`) do."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine import simulate as simulate_module
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.replay_contract import Event, Turn, new_turn
from ctxviz.engine.simulate import simulate
from ctxviz.engine.steps import schedule

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, SMALL, sessions

EVENTS = st.lists(st.builds(Event, st.integers(0, 50), st.sampled_from(["compaction", "overflow"]), st.text(max_size=20)), max_size=2).map(tuple)


@SETTINGS
@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 500), st.integers(0, 500), st.integers(0, 500),
       st.booleans(), st.integers(0, 9), EVENTS, st.integers(0, 10**6), st.integers(0, 500), st.integers(-1, 500))
def test_a_turn_made_numbered_is_the_dataclasss_turn(index, tokens_sent, budget, kept, dropped, summarized, fits, summaries, events,
                                                       not_sent, step, reply):
    made = new_turn(index, tokens_sent, budget, kept, dropped, summarized, 0, fits, summaries, events, not_sent, step, reply)
    built = Turn(index, tokens_sent, budget, kept, dropped, summarized, 0, fits, summaries, events, not_sent, step, reply)
    assert made == built
    assert hash(made) == hash(built)
    assert list(vars(made).items()) == list(vars(built).items())  # the same fields, in the same order
    assert made.to_json() == built.to_json()


#: The replayers that build their turns numbered, and parameters at which they compact or summarise.
NUMBERING = {
    "claude-code": st.integers(300, 4000).map(lambda window: {"context_window": window, "autocompact_buffer": window // 4,
                                                              "max_output_tokens_for_summary": 0}),
    "supyagent": SMALL["supyagent"],
}


@pytest.mark.parametrize("policy", sorted(NUMBERING))
@settings(SETTINGS, max_examples=examples(40))
@given(s=sessions(), data=st.data(), pair_safe=st.booleans(), per_message=st.booleans())
def test_a_replays_turns_carry_the_schedules_steps_and_replies(policy, s, data, pair_safe, per_message):
    options = PlanOptions(pair_safe=pair_safe)
    store = CountStore()
    params = data.draw(NUMBERING[policy])
    copies = []
    numbered = simulate_module._numbered
    simulate_module._numbered = lambda turn, step, reply: copies.append(step) or numbered(turn, step, reply)
    try:
        fast = simulate(s, policy, params, store=store, options=options, per_message=per_message)
    finally:
        simulate_module._numbered = numbered
    assert len(copies) <= fast.scratch_steps  # only the turns the reference step made are copied to be numbered
    reference = simulate(s, policy, params, store=store, options=options, incremental=False, per_message=per_message)
    plan = schedule(s, per_message, get_policy(policy).step_points)
    assert [(t.index, t.step, t.reply) for t in fast.turns] == [(i, k, r) for k, (i, r) in enumerate(zip(plan.steps, plan.replies, strict=True))]
    assert fast.turns == reference.turns
    assert len({id(t) for t in fast.turns}) == len(fast.turns)  # each turn its own object
