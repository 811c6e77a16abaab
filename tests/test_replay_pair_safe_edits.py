"""Pair safety carried from turn to turn by the replayers of LangChain's trim_messages and
ContextEditingMiddleware, Anthropic's context editing and missy's MemoryConsolidator: each replay
with `--pair-safe` equals the reference (which plans every prefix and applies `apply_pair_safety`
to it), turn by turn and event by event, on random agent logs with broken pairs (calls never
answered, results of no call, calls answered after another message), on real logs and on the
bundled samples; `replays_incrementally` says it is incremental and no step plans from scratch.

The edits send the whole history (edited: a cleared result, a call's emptied input, thinking
removed), so pair safety drops messages as they are sent at that turn; trim_messages sends one run
(and the system message) after the recorded summaries in force; the consolidator sends the
messages after its consolidation.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_properties import PARAMS as WIDE
from .test_replay_edits import SMALL as EDITS
from .test_replay_edits import edit_sessions
from .test_replay_incremental import SETTINGS, same
from .test_replay_incremental import SMALL as GROWING
from .test_replay_trims import SMALL as TRIMS
from .test_replay_trims import agent_sessions

REAL = Path(__file__).parent / "data" / "real"
SAMPLES = Path(__file__).parent.parent / "sample_sessions"
PAIR_SAFE = PlanOptions(pair_safe=True)
EDIT_POLICIES = ("anthropic-clear-thinking", "anthropic-clear-tool-uses", "langchain-context-editing")
POLICIES = (*EDIT_POLICIES, "langchain-trim", "missy-consolidator")


def shared_call_ids(session) -> bool:
    ids = [c.id for m in session.messages for c in m.tool_calls if c.id]
    return len(set(ids)) != len(ids)


def carried(s, name, params) -> None:
    """The replay equals the reference on both schedules, and is incremental unless the session
    says why not (a call id on two calls, a recorded summary: the turns from it on)."""
    same(s, name, params, PAIR_SAFE)
    how = replays_incrementally(name, s, PAIR_SAFE, params)
    assert not how.startswith("from scratch") or shared_call_ids(s), how


@pytest.mark.parametrize("name", EDIT_POLICIES)
@settings(SETTINGS, max_examples=examples(12))
@given(s=edit_sessions(), data=st.data())
def test_edits_with_pair_safety_equal_the_reference(name, s, data):
    """Clearings, emptied inputs and thinking removed at triggers low enough to fire, on messages
    pair safety then drops (a cleared result whose call also made one never answered)."""
    carried(s, name, data.draw(EDITS[name] if data.draw(st.integers(0, 4)) else WIDE[name]))


@settings(SETTINGS, max_examples=examples(15))
@given(s=agent_sessions(), data=st.data())
def test_trim_with_pair_safety_equals_the_reference(s, data):
    """Both strategies, partial messages, start_on / end_on, include_system, and recorded
    summaries covering the file's first messages: pair safety drops the sent half of the pairs
    the cut (or the end_on cut of the tail) breaks, and the trim events name them."""
    carried(s, "langchain-trim", data.draw(TRIMS["langchain-trim"] if data.draw(st.integers(0, 3)) else WIDE["langchain-trim"]))


@settings(SETTINGS, max_examples=examples(15))
@given(s=agent_sessions(), data=st.data())
def test_consolidator_with_pair_safety_equals_the_reference(s, data):
    """Consolidations at low thresholds: the four recent messages kept may hold a result whose
    call was consolidated."""
    name = "missy-consolidator"
    carried(s, name, data.draw(GROWING[name] if data.draw(st.integers(0, 3)) else WIDE[name]))


def real_sessions():
    from ctxviz.io.loaders import load_session

    paths = [REAL / "claude_code" / "spotter-4d5611e5.jsonl", REAL / "codex" / "localpush-rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl",
             REAL / "gemini_cli" / "aim_control_pro.json", REAL / "langchain" / "convert_to_messages.messages_to_dict.json",
             SAMPLES / "coding_agent.yaml"]
    return [(p.name, load_session(p)) for p in paths]


#: Budgets at which each policy edits, trims or consolidates the real logs above.
TIGHT = {
    "anthropic-clear-thinking": {"context_window": 20_000},
    "anthropic-clear-tool-uses": {"trigger": "input_tokens:4000", "keep": "tool_uses:2", "clear_tool_inputs": "true", "context_window": 30_000},
    "langchain-context-editing": {"trigger": 4000, "keep": 2, "clear_tool_inputs": True},
    "langchain-trim": {"max_tokens": 3000},
    "missy-consolidator": {"max_tokens": 6000},
}


@pytest.mark.parametrize("name", POLICIES)
def test_real_logs_with_pair_safety_are_carried(name):
    """Real logs of Claude Code, Codex, Gemini CLI and LangChain and a sample, one step per
    message (a call is sent before its result is in: pair safety drops it), at a budget where the
    policy acts (and at its defaults on the smallest log): the replay equals the reference and plans
    no step from scratch."""
    unpaired = acted = 0
    for file, session in real_sessions():
        assert not session.summaries and not shared_call_ids(session), file
        for params in ({}, TIGHT[name]) if len(session.messages) < 50 else (TIGHT[name],):
            store = CountStore()
            fast = simulate(session, name, params, store=store, options=PAIR_SAFE, per_message=True)
            reference = simulate(session, name, params, store=store, options=PAIR_SAFE, incremental=False, per_message=True)
            assert fast.to_json() == reference.to_json(), (file, params)
            assert fast.scratch_steps == 0, (file, params)
            assert replays_incrementally(name, session, PAIR_SAFE, params) == "incremental"
            plain = simulate(session, name, params, store=store, per_message=True)
            unpaired += sum(a.dropped - b.dropped for a, b in zip(fast.turns, plain.turns, strict=True))
            acted += sum(1 for t in plain.turns if t.truncated or t.summarized or any(e.kind == "trim" for e in t.events))
    assert unpaired > 100 and acted > 20  # pair safety dropped messages, and the policy edited, trimmed or consolidated
