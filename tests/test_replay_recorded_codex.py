"""Codex's recorded compactions carried from turn to turn.

A Codex rollout's `compacted` line summarises the non-system messages before it; the system ones
among them (the developer instructions, the environment context) stay in the request. Sixteen
replayers carry that shape as they carry Claude Code's prefixes: each replay equals the reference,
which plans every prefix from scratch, step by step (every Turn field and event text, the
compaction event naming the covered messages as the reference does), with and without pair
safety, on a real Codex rollout, the bundled sample and random sessions compacted as Codex does;
it plans no turn from scratch and says it is incremental. langchain-summarization carries them
too: the system messages a compaction leaves stand in its state after the summaries, and its own
summary may take some of them and leave the others (random sessions where it summarises). So does
langchain-trim: those system messages are the first of the leading system messages its entries
put before the summaries, trimmed, kept by include_system, cut by allow_partial or pinned like any
(random sessions at every parameter it has). No policy hands those turns to the reference any more.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.llamaindex.joined import joined_counter
from ctxviz.engine.policies.replay_recorded import _RecordedShapes
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.session import Compaction, Session, Summary
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, same, sessions
from .test_replay_pair_safe_summaries import SMALL
from .test_replay_pins_carried import CARRIED, rules_for, same_with_pins

#: langchain-trim's parameters at the random sessions' scale, every one of them drawn.
TRIMS = CARRIED["langchain-trim"]

ROOT = Path(__file__).parent.parent
SAMPLE = ROOT / "sample_sessions" / "codex_rollout.jsonl"
#: A real Codex rollout with a compaction among 703 messages (tests/data/real/codex/SOURCES.md).
REAL = ROOT / "tests" / "data" / "real" / "codex" / "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"

#: Each policy that carries Codex's compactions, with parameters that make it edit, cut or summarise on these logs.
POLICIES = {
    "anthropic-clear-tool-uses": [{}, {"trigger": "tool_uses:1", "keep": "tool_uses:0", "clear_at_least": "input_tokens:30"}],
    "anthropic-clear-thinking": [{}, {"keep": "thinking_turns:2", "context_window": 3000}],
    "langchain-context-editing": [{}, {"trigger": 100, "keep": 0, "clear_at_least": 50}],
    "missy-consolidator": [{}, {"max_tokens": 600, "threshold_pct": 0.5}],
    "autogen-buffered": [{}, {"buffer_size": 3}],
    "autogen-head-and-tail": [{}, {"head_size": 1, "tail_size": 2}],
    "autogen-token-limited": [{}, {"token_limit": 300}],
    "missy": [{}, {"total": 1500, "system_reserve": 100, "tool_definitions_reserve": 0, "fresh_tail_count": 0, "trim_protected_tail": True}],
    "mnesis": [{}, {"context_limit": 3000, "reserved_output_tokens": 200, "compaction_buffer": 1000}],
    "supyagent": [{}, {"context_limit": 12000, "max_messages_before_summary": 20}],
    "llamaindex-chat-summary-memory-buffer": [{}, {"token_limit": 600, "llm": True}],
    "strands-summarizing": [{}, {"context_window_limit": 1500, "preserve_recent_messages": 2}],
    "categories": [{}, {"max_tokens": 2000, "trim_other_categories": True}],
    "llamaindex-chat-memory-buffer": [{}, {"token_limit": 3000}],
    "strands-sliding-window": [{}, {"window_size": 6, "context_window_limit": 3000}],
    # (a compression while a recorded summary is in force is planned by the reference step)
    "gemini-cli-compression": [{}, {"tokenLimit": 200000, "truncateToolOutputThreshold": 50}],
    # (a trigger met is planned by the reference step: these overflow without summarising; the
    # random test below summarises)
    "langchain-summarization": [{}, {"trigger": "messages=1000", "max_input_tokens": 1500}],
    "langchain-trim": [{}, {"max_tokens": 1500, "include_system": True, "allow_partial": True, "start_on": "human"}],
}

#: Policies whose replay of a session with images is from scratch (categories' image rule re-counts
#: older messages): the real rollout, which holds images, is not carried; the sample and random ones are.
IMAGES_FROM_SCRATCH = {"categories"}

#: langchain-summarization at the random sessions' scale, where it summarises often.
SUMMARISING = SMALL["langchain-summarization"]


def whitespace_joins(session: Session) -> bool:
    """Whether ChatMemoryBuffer's history joins whitespace to whitespace somewhere (its joined count
    is then recounted over the run, and a turn ending inside one is planned by the reference)."""
    counts = CountStore().get(session, get_policy("llamaindex-chat-memory-buffer").scheme(None, session.model))
    return bool(joined_counter(session, list(session.system_and_history[1]), counts).runs)


def carried(session: Session, policy: str, params: dict, pair_safe: bool, per_message: bool = False) -> None:
    options = PlanOptions(pair_safe=pair_safe)
    store = CountStore()
    fast = simulate(session, policy, params, store=store, options=options, per_message=per_message)
    reference = simulate(session, policy, params, store=store, options=options, incremental=False, per_message=per_message)
    assert fast.turns == reference.turns, (policy, params, pair_safe)
    assert fast.to_json() == reference.to_json()
    assert fast.scratch_steps == 0, (policy, params, pair_safe)
    assert replays_incrementally(policy, session, options, params) == "incremental"


def test_the_logs_record_compactions_that_leave_system_messages_out():
    for path in (SAMPLE, REAL):
        shapes = _RecordedShapes.of(load_session(path))
        assert shapes.system_gaps and shapes.why_not is None


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_the_sample_rollout_is_carried(policy):
    s = load_session(SAMPLE)
    for params in POLICIES[policy]:
        for pair_safe in (False, True):
            carried(s, policy, params, pair_safe)


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_a_real_rollout_is_carried(policy):
    """The compaction event names the 467 messages covered, not the 507 before it."""
    s = load_session(REAL)
    if policy in IMAGES_FROM_SCRATCH:  # (the rollout holds 12 images)
        assert replays_incrementally(policy, s) == "from scratch (images (the image rule re-counts older messages))"
        return
    carried(s, policy, POLICIES[policy][-1], pair_safe=policy.startswith("missy"))
    timeline = simulate(s, policy, {})
    events = [e for t in timeline.turns for e in t.events if e.kind == "compaction" and "recorded summary" in e.message]
    if not timeline.summaries:  # (a policy that wrote its own summary before the rollout's compaction may read only its own)
        assert len(events) == 1
    assert all("467 messages (#2, #3, #6, #7, #8 and 462 more)" in e.message for e in events)


@pytest.mark.parametrize("policy", sorted(REPLAYERS))
def test_no_policy_hands_codex_compactions_to_the_reference(policy):
    """Every replayer carries that shape (claude-code and codex-compaction read recorded summaries
    their own way): none says it hands those turns to the reference."""
    assert "Codex's compactions" not in replays_incrementally(policy, load_session(SAMPLE))


@st.composite
def codex_compacted(draw):
    """A session compacted as Codex does: up to three compactions, each summarising every non-system
    message before it (system messages among them left where they are)."""
    s = draw(sessions())
    messages = s.messages
    ends = sorted(set(draw(st.lists(st.integers(1, len(messages)), max_size=3))))
    summaries, compactions = [], []
    for end in ends:
        covers = tuple(m.id for m in messages[:end] if m.role != "system")
        if covers:
            summaries.append(Summary(text=draw(st.sampled_from(["the summary", "x " * 300])), messages_covered=len(covers), covers=covers))
            compactions.append(Compaction(before_index=end))
    return Session(messages=messages, source=s.source, format=s.format, system_prompt=s.system_prompt, summaries=tuple(summaries),
                   compactions=tuple(compactions))


@settings(SETTINGS, max_examples=examples(40))
@given(s=codex_compacted(), policy=st.sampled_from(sorted(POLICIES)), which=st.integers(0, 1), pair_safe=st.booleans(),
       per_message=st.booleans())
def test_random_codex_compactions_are_carried(s, policy, which, pair_safe, per_message):
    params = POLICIES[policy][which]
    shapes = _RecordedShapes.of(s)
    options = PlanOptions(pair_safe=pair_safe)
    store = CountStore()
    fast = simulate(s, policy, params, store=store, options=options, per_message=per_message)
    reference = simulate(s, policy, params, store=store, options=options, incremental=False, per_message=per_message)
    assert fast.turns == reference.turns
    assert fast.to_json() == reference.to_json()
    if policy == "llamaindex-chat-memory-buffer" and whitespace_joins(s):
        return  # (a turn ending inside a run of whitespace joins goes to the reference, Codex or not)
    if policy == "gemini-cli-compression":
        return  # (a turn whose prompt reaches the threshold while a recorded summary is held goes to the reference, Codex or not)
    if shapes.why_not is None and replays_incrementally(policy, s, options, params) == "incremental":
        # Only a turn that writes a summary or truncates in an emergency may be planned from scratch.
        writing = sum(1 for t in fast.turns if any(e.kind in ("summary", "emergency_truncation") for e in t.events))
        assert fast.scratch_steps <= writing, policy


@settings(SETTINGS, max_examples=examples(12))
@given(s=codex_compacted(), data=st.data())
def test_random_codex_compactions_with_pins_are_carried(s, data):
    """Pins on a session compacted as Codex does: a pinned summarised message is sent again, the
    system messages the summaries leave are pushed out like any other, each replay as the reference."""
    rules = rules_for(data, s)
    if rules is None:
        return
    for policy in ("missy", "mnesis", "missy-consolidator", "autogen-buffered", "autogen-token-limited", "langchain-trim"):
        same_with_pins(s, policy, data.draw(CARRIED[policy]), rules)


@settings(SETTINGS, max_examples=examples(40))
@given(s=codex_compacted(), params=SUMMARISING, pair_safe=st.booleans())
def test_langchain_summarization_summarises_after_codex_compactions(s, params, pair_safe):
    """Its own summary folds the compactions' covers in and takes the state's first entries: the
    system messages they left, some or all of them, and the messages after; each replay equals the
    reference (per call and per message), and the turns its trigger is not met at are carried (it
    says incremental)."""
    options = PlanOptions(pair_safe=pair_safe)
    same(s, "langchain-summarization", params, options)
    if _RecordedShapes.of(s).why_not is None:
        assert replays_incrementally("langchain-summarization", s, options, params) == "incremental"


@settings(SETTINGS, max_examples=examples(40))
@given(s=codex_compacted(), params=TRIMS, pair_safe=st.booleans())
def test_langchain_trim_carries_codex_compactions_at_every_parameter(s, params, pair_safe):
    """The system messages a compaction leaves lead the entries, before the summaries: strategy
    "first" keeps them first, include_system keeps the first of them, allow_partial may cut one,
    start_on and end_on may stop on them; each replay equals the reference (per call and per
    message), and without pair safety (which hands a turn it cannot read as runs to the reference)
    no turn is planned from scratch."""
    options = PlanOptions(pair_safe=pair_safe)
    same(s, "langchain-trim", params, options)
    if not pair_safe and _RecordedShapes.of(s).why_not is None:
        store = CountStore()
        assert all(simulate(s, "langchain-trim", params, store=store, options=options, per_message=per_message).scratch_steps == 0
                   for per_message in (False, True))
        assert replays_incrementally("langchain-trim", s, options, params) == "incremental"
