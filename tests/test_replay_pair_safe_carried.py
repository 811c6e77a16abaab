"""Pair safety carried from turn to turn by the replayers whose sent history is one run (after the
summary or compaction in force): each replay with `--pair-safe` equals the reference, which plans
every prefix and applies `apply_pair_safety` to it, on random logs (hypothesis) and on real ones,
and `replays_incrementally` says it is incremental.

Missy, supyagent and Gemini CLI are checked in test_replay_incremental.py,
test_replay_recorded.py and test_replay_gemini_compressed.py.
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
from .test_replay_incremental import SETTINGS, same, sessions
from .test_replay_recorded import codex_compacted, compacted

REAL = Path(__file__).parent / "data" / "real"
PAIR_SAFE = PlanOptions(pair_safe=True)


def shared_call_ids(session) -> bool:
    ids = [c.id for m in session.messages for c in m.tool_calls if c.id]
    return len(set(ids)) != len(ids)


@settings(SETTINGS, max_examples=examples(40))
@given(s=compacted(), trigger=st.sampled_from([None, 50, 400, 2000]))
def test_claude_code_with_pair_safety_equals_the_reference(s, trigger):
    """Logs with compactions recorded as Claude Code writes them (a preserved tail, summaries
    that match no compaction...), at triggers low enough that ctxviz compacts too."""
    params = {} if trigger is None else {"calibrated_trigger": trigger}
    same(s, "claude-code", params, PAIR_SAFE)
    how = replays_incrementally("claude-code", s, PAIR_SAFE, params)
    assert not how.startswith("from scratch") or shared_call_ids(s), how


def real_replay(session, policy, params):
    """The replay one step per message (a call is sent before its result is in), carried and
    from scratch."""
    store = CountStore()
    fast = simulate(session, policy, params, store=store, options=PAIR_SAFE, per_message=True)
    reference = simulate(session, policy, params, store=store, options=PAIR_SAFE, incremental=False, per_message=True)
    return fast, reference


def test_claude_code_with_pair_safety_on_a_real_log_is_carried():
    """spotter-4d5611e5.jsonl at a 40,000-token window compacts four times; pair safety drops the
    calls whose results are not in yet and what a compaction's cut leaves unpaired. The replay
    equals the reference and plans no turn from scratch."""
    from ctxviz.io.loaders import load_session

    session = load_session(REAL / "claude_code" / "spotter-4d5611e5.jsonl")
    params = {"context_window": 40_000}
    fast, reference = real_replay(session, "claude-code", params)
    assert fast.to_json() == reference.to_json()
    assert len(fast.summaries) > 1 and sum(t.dropped for t in fast.turns) > 10 and fast.scratch_steps == 0
    assert replays_incrementally("claude-code", session, PAIR_SAFE, params) == "incremental"


@settings(SETTINGS, max_examples=examples(25))
@given(s=codex_compacted(), window=st.sampled_from([None, 1500, 6000]), limit=st.sampled_from([None, 300, 1200, 4000]),
       keep=st.sampled_from([0, 40, 20_000]))
def test_codex_with_pair_safety_equals_the_reference(s, window, limit, keep):
    """Rollouts with recorded compactions and initial context, at limits low enough that Codex
    compacts too, keeping none, some or all of the user messages."""
    params = {"model_context_window": window, "model_auto_compact_token_limit": limit, "compact_user_message_max_tokens": keep}
    same(s, "codex-compaction", params, PAIR_SAFE)
    how = replays_incrementally("codex-compaction", s, PAIR_SAFE, params)
    assert not how.startswith("from scratch") or shared_call_ids(s), how


def test_codex_with_pair_safety_on_a_real_rollout_is_carried():
    """A real rollout at a 30,000-token auto-compact limit compacts once; pair safety drops the
    calls whose output is not in yet, before and after the compaction. The replay equals the
    reference and plans only the compaction's turn from scratch."""
    from ctxviz.io.loaders import load_session

    session = load_session(REAL / "codex" / "localpush-rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl")
    params = {"model_auto_compact_token_limit": 30_000}
    fast, reference = real_replay(session, "codex-compaction", params)
    assert fast.to_json() == reference.to_json()
    compacted_at = next(k for k, t in enumerate(fast.turns) if t.summaries)
    assert any(t.dropped for t in fast.turns[compacted_at:]) and fast.scratch_steps == len(fast.summaries) == 1
    assert replays_incrementally("codex-compaction", session, PAIR_SAFE, params) == "incremental"


AUTOGEN = {
    "autogen-buffered": st.builds(dict, buffer_size=st.integers(1, 8)),
    "autogen-head-and-tail": st.builds(dict, head_size=st.integers(1, 4), tail_size=st.integers(1, 6)),
    "autogen-token-limited": st.builds(dict, token_limit=st.integers(20, 3000)),
}


@settings(SETTINGS, max_examples=examples(40))
@given(s=sessions(), data=st.data())
def test_autogen_with_pair_safety_equals_the_reference(s, data):
    """AutoGen's three model contexts on random agent logs, at sizes small enough that they cut:
    the tail, the head and the tail, what the middle pops leave; pair safety drops what the cuts
    leave unpaired (with the 3 tokens of a dropped LLMMessage's first message)."""
    for name, params in AUTOGEN.items():
        drawn = data.draw(params)
        same(s, name, drawn, PAIR_SAFE)
        how = replays_incrementally(name, s, PAIR_SAFE, drawn)
        assert not how.startswith("from scratch") or shared_call_ids(s) or s.summaries, how
