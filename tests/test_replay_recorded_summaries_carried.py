"""Sessions with recorded summaries (Claude Code's compactions) replayed by the replayers that used
to hand them whole to the reference step (LlamaIndex's ChatMemoryBuffer, Strands' sliding window,
and the summarising LangChain, LlamaIndex, Strands and OpenHands ones): each replay equals the
reference, which plans every prefix from scratch, step by step (every Turn field and event text),
with and without pair safety, on real Claude Code logs with compactions, a tiled one like the
bench's, and random logs with compactions as Claude Code writes them. The turns before the first
recorded summary is in force are carried (and, for the summarising policies, those after their own
first summary: the plan then reads only that), and `replays_incrementally` says which are not.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS
from .test_replay_recorded import compacted
from .test_replay_recorded_edits import LOGS, carried, drawn_replays, tiled

#: Each policy, with parameters that make it cut or summarise on these small logs.
POLICIES = {
    "llamaindex-chat-memory-buffer": [{}, {"token_limit": 1500}, {"token_limit": 300}],
    "strands-sliding-window": [{}, {"window_size": 4}, {"context_window_limit": 1500, "window_size": 10}],
    "openhands-llm-summarizing": [{}, {"max_size": 10}, {"max_size": 6, "keep_first": 1}],
}
SUMMARISING = {"openhands-llm-summarizing"}


#: The replayers that now carry the recorded summaries themselves (tests/test_replay_recorded_windows.py).
CARRIED = {"llamaindex-chat-memory-buffer", "strands-sliding-window", "openhands-llm-summarizing"}


def said(policy: str) -> str:
    if policy in CARRIED:
        return "incremental"
    return "incremental, then from scratch (the turns from the first recorded summary on)"


def in_force_from(timeline, start: int) -> int:
    """How many turns a summary starting at `start` is in force at (from its start: `Turn.horizon`)."""
    return sum(max(t.index, t.horizon) >= start for t in timeline.turns)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_real_logs_with_compactions_equal_the_reference(policy):
    """The parameters that make the policy act on these logs, one step per model call without pair
    safety and one per message with it; the turns before the first compaction is in force are
    carried (the summarising policies: also those after their own first summary)."""
    sessions = [load_session(p) for p in LOGS] + [tiled(120)]
    events = carried_turns = answered = 0
    for session in sessions:
        assert session.summaries
        start = min(session.summary_start_turns)
        for params in POLICIES[policy][1:]:
            for pair_safe in (False, True):
                options = PlanOptions(pair_safe=pair_safe)
                fast = carried(session, policy, params, options, per_message=pair_safe)
                events += sum(e.kind == "compaction" for t in fast.turns for e in t.events)
                how = replays_incrementally(policy, session, options, params)
                if how.startswith("from scratch"):  # for a reason of its own (OpenHands: thinking blocks)
                    assert "summar" not in how and fast.scratch_steps == len(fast.turns), how
                    continue
                assert how == said(policy)
                answered += 1
                scratch = 0 if policy in CARRIED else in_force_from(fast, start)
                if policy in SUMMARISING:  # at most those, what the replayer hands over without the summaries, and
                    # (OpenHands) the turn it condenses over a recorded summary: the reference step writes that summary
                    plain = simulate(dataclasses.replace(session, summaries=(), compactions=()), policy, params, options=options, per_message=pair_safe)
                    assert fast.scratch_steps <= scratch + plain.scratch_steps + 1, (policy, params, pair_safe)
                else:
                    assert fast.scratch_steps == scratch, (policy, params, pair_safe)
                carried_turns += len(fast.turns) - fast.scratch_steps
    assert events > 5  # the compactions' events were compared, not skipped
    assert answered and carried_turns > 20, (answered, carried_turns)  # and turns were carried


@settings(SETTINGS, max_examples=examples(15))
@given(s=compacted(), data=st.data())
def test_random_logs_with_compactions_equal_the_reference(s, data):
    """Compactions as Claude Code writes them (a preserved tail, summaries in another order than
    written, one with a gap, none covering the file), with and without pair safety."""
    for policy, params, options, how in drawn_replays(s, data, POLICIES):
        if s.summaries and not how.startswith("from scratch"):
            assert how.startswith(said(policy)[:-1]), how
            # The turns from the first summary in force on at most, and what the replayer hands over without summaries.
            timeline = simulate(s, policy, params, options=options)
            plain = simulate(dataclasses.replace(s, summaries=(), compactions=()), policy, params, options=options)
            assert timeline.scratch_steps <= in_force_from(timeline, min(s.summary_start_turns)) + plain.scratch_steps, policy
