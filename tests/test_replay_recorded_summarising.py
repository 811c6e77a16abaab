"""Recorded compactions carried by the summarising replayers (issue 22, "every replay incremental"):
while the policy has written no summary of its own, its plan reads the summaries a Claude Code log
records, and the replayer now carries them from turn to turn instead of handing those turns to the
reference step. Each replay equals the reference, which plans every prefix from scratch, step by
step (every Turn field and event text, the compaction events included), with and without pair
safety, on the real Claude Code logs with compactions, the bench's tiled log and random logs with
compactions as Claude Code writes them; where the summaries cover a prefix of the file the replay
says "incremental", and at the policy's defaults (it never summarises these logs) it plans no step
from scratch. A turn whose trigger fires may still be planned by the reference (the policy writes
its summary there), as without recorded summaries.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.replay_recorded import _RecordedShapes
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.session import Summary
from ctxviz.io.loaders import load_session

from .hypothesis_budget import examples
from .test_replay_honesty import chat, replayed, session_of
from .test_replay_incremental import SETTINGS, same
from .test_replay_recorded import compacted
from .test_replay_recorded_edits import LOGS, carried, tiled
from .test_replay_summaries import SMALL

#: Each policy carried, its defaults first, then parameters that make it summarise on these small logs.
CARRIED = {
    "langchain-summarization": [{}, {"trigger": "tokens=2000", "keep": "messages=4"}],
    "strands-summarizing": [{}, {"context_window_limit": 1500, "preserve_recent_messages": 2}],
    "llamaindex-chat-summary-memory-buffer": [{}, {"token_limit": 400, "llm": False}],
}


@pytest.mark.parametrize("policy", list(CARRIED))
def test_real_logs_with_compactions_are_carried(policy):
    """One step per model call without pair safety and one per message with it; at the defaults no
    step is planned from scratch, and the other parameters summarise after the recorded compactions."""
    sessions = [load_session(p) for p in LOGS] + [tiled(120)]
    events = written = 0
    for session in sessions:
        assert session.summaries and _RecordedShapes.of(session).why_not is None
        for n, params in enumerate(CARRIED[policy]):
            for pair_safe in (False, True):
                options = PlanOptions(pair_safe=pair_safe)
                fast = carried(session, policy, params, options, per_message=pair_safe)
                assert replays_incrementally(policy, session, options, params) == "incremental"
                if n == 0:
                    assert fast.scratch_steps == 0, (policy, pair_safe)
                assert fast.scratch_steps < len(fast.turns)
                events += sum(e.kind == "compaction" for t in fast.turns for e in t.events)
                written += len(fast.summaries)
    assert events > 10 and written > 2, (events, written)  # the compactions' events were compared, and the policy summarised after them


@pytest.mark.parametrize("policy", list(CARRIED))
def test_the_bench_tiled_log_plans_no_step_from_scratch(policy):
    """The bench's tiled real log (many compactions, each covering everything before it), at the
    policy's defaults as the bench replays it, with and without pair safety."""
    session = tiled(250)
    assert len(session.summaries) > 15
    for pair_safe in (False, True):
        options = PlanOptions(pair_safe=pair_safe)
        fast = carried(session, policy, {}, options, per_message=False)
        assert fast.scratch_steps == 0, (policy, pair_safe)
        assert replays_incrementally(policy, session, options) == "incremental"


@pytest.mark.parametrize("policy", list(CARRIED))
def test_summaries_with_gaps_are_handed_over_and_said(policy):
    """A recorded summary that covers the file's messages with gaps is no prefix: the turns from it
    on, until the policy writes its own, go to the reference step, and the answer says so; one that
    covers a prefix is carried."""
    gapped = session_of(chat(30), summaries=(Summary(text="before", covers=tuple(f"m{k}" for k in range(10) if k != 4)),))
    assert replays_incrementally(policy, gapped) == ("incremental, then from scratch (the turns from the first recorded summary of the file's "
                                                     "messages on, until the policy writes a summary of its own: a recorded summary that "
                                                     "covers the file's messages with gaps)")
    timeline = replayed(gapped, policy)
    start = gapped.summary_start_turns[0]
    assert not timeline.summaries
    assert timeline.scratch_steps == sum(max(t.index, t.horizon) >= start for t in timeline.turns) > 0
    prefix = session_of(chat(30), summaries=(Summary(text="before", covers=tuple(f"m{k}" for k in range(10))),))
    assert replays_incrementally(policy, prefix) == "incremental"
    assert replayed(prefix, policy).scratch_steps == 0


@settings(SETTINGS, max_examples=examples(12))
@given(s=compacted(), data=st.data())
def test_random_logs_with_compactions_equal_the_reference(s, data):
    """Compactions as Claude Code writes them (a preserved tail, summaries in another order than
    written, one with a gap, none covering the file), at the small budgets of the summary replay
    tests or the ones above, with and without pair safety; where the policy's replayer carries
    every summary's shape (a prefix of the file, or for the replayers that carry Codex's shape, a
    prefix without its system messages), the answer names no recorded summary."""
    for policy, choices in CARRIED.items():
        params = data.draw(SMALL[policy] if data.draw(st.booleans()) else st.sampled_from(choices))
        options = PlanOptions(pair_safe=data.draw(st.booleans()))
        same(s, policy, params, options)
        how = replays_incrementally(policy, s, options, params)
        if _RecordedShapes.of(s).why_not_for(REPLAYERS[policy]) is None:
            assert "recorded summary" not in how, how
