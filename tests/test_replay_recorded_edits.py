"""Recorded compactions carried from turn to turn by the replayers that edit the history or keep
it whole until a trigger (Anthropic's context editing, LangChain's ContextEditingMiddleware,
missy's MemoryConsolidator, AutoGen's model contexts): each replay equals the reference, which
plans every prefix from scratch, step by step (every Turn field and event text), with and without
pair safety, on real Claude Code logs with compactions, a tiled one like the bench's, and random
logs with compactions as Claude Code writes them; and where the summaries cover a prefix of the
file the replay plans no turn from scratch and says it is incremental.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies.replay_recorded import _RecordedShapes
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, same
from .test_replay_recorded import compacted
from .test_replay_recorded_carried import tiled

DATA = Path(__file__).parent / "data"
LOGS = [DATA / "real" / "claude_code" / "tugtool-rewind-branch.jsonl", DATA / "real" / "claude_code" / "tugtool-compact-native.jsonl",
        DATA / "heldout" / "claude_code" / "fasthooks-sample-main-transcript.jsonl", DATA / "heldout" / "claude_code" / "agentlogs-compact.jsonl"]

#: Each policy carried, with parameters that make it edit, consolidate or cut on these small logs.
POLICIES = {
    "anthropic-clear-tool-uses": [{}, {"trigger": "input_tokens:2000", "keep": "tool_uses:1", "clear_tool_inputs": "true"},
                                  {"trigger": "tool_uses:1", "keep": "tool_uses:0", "clear_at_least": "input_tokens:30"}],
    "anthropic-clear-thinking": [{}, {"keep": "all"}, {"keep": "thinking_turns:2", "context_window": 3000}],
    "langchain-context-editing": [{}, {"trigger": 500, "keep": 1, "clear_tool_inputs": True}, {"trigger": 100, "keep": 0, "clear_at_least": 50}],
    "missy-consolidator": [{}, {"max_tokens": 3000}, {"max_tokens": 600, "threshold_pct": 0.5}],
    "autogen-buffered": [{}, {"buffer_size": 1}, {"buffer_size": 3}],
    "autogen-head-and-tail": [{}, {"head_size": 1, "tail_size": 2}, {"head_size": 3, "tail_size": 1}],
    "autogen-token-limited": [{}, {"token_limit": 300}, {"token_limit": 2500}],
}


def carried(session, policy, params, options, per_message):
    store = CountStore()
    fast = simulate(session, policy, params, store=store, options=options, per_message=per_message)
    reference = simulate(session, policy, params, store=store, options=options, incremental=False, per_message=per_message)
    assert fast.turns == reference.turns, (policy, params)
    assert fast.to_json() == reference.to_json()
    return fast


@pytest.mark.parametrize("policy", list(POLICIES))
def test_real_logs_with_compactions_are_carried(policy):
    """The parameters that make the policy act on these logs, one step per model call without pair
    safety and one per message with it (a call is then sent before its result is in)."""
    sessions = [load_session(p) for p in LOGS] + [tiled(120)]
    events = 0
    for session in sessions:
        assert session.summaries and _RecordedShapes.of(session).why_not is None
        for params in POLICIES[policy][1:]:
            for pair_safe in (False, True):
                options = PlanOptions(pair_safe=pair_safe)
                fast = carried(session, policy, params, options, per_message=pair_safe)
                assert fast.scratch_steps == 0, (policy, params, pair_safe)
                events += sum(e.kind == "compaction" for t in fast.turns for e in t.events)
                assert replays_incrementally(policy, session, options, params) == "incremental"
    assert events > 10  # the compactions' events were compared, not skipped


def drawn_replays(s, data, policies: dict):
    """For each policy, drawn parameters (among its choices) and pair safety, the replay checked
    equal to the reference; yields (policy, params, options, what replays_incrementally says)."""
    for policy, choices in policies.items():
        params = data.draw(st.sampled_from(choices))
        options = PlanOptions(pair_safe=data.draw(st.booleans()))
        same(s, policy, params, options)
        yield policy, params, options, replays_incrementally(policy, s, options, params)


@settings(SETTINGS, max_examples=examples(20))
@given(s=compacted(), data=st.data())
def test_random_logs_with_compactions_equal_the_reference(s, data):
    """Compactions as Claude Code writes them (a preserved tail, summaries in another order than
    written, one with a gap, none covering the file), with and without pair safety."""
    for policy, params, options, how in drawn_replays(s, data, POLICIES):
        if _RecordedShapes.of(s).why_not_for(REPLAYERS[policy]) is None and not how.startswith("from scratch"):
            assert "recorded summary" not in how or "before its call" in how, how
        if how == "incremental":
            assert simulate(s, policy, params, options=options).scratch_steps == 0, policy
