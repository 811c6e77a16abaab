"""Recorded compactions and timestamps that go back, carried from turn to turn.

mnesis carries the compactions a Claude Code log records from turn to turn (each covers a prefix
of the file; mnesis charges and sends every summary in force and compacts what they cover), with
and without pair safety: the replay equals the reference step by step, says "incremental" and plans
no step from scratch, on the real logs with compactions, a tiled real log as the benchmark builds
it, and random sessions with recorded compactions (system messages among the covered ones too).
Penguin's manager (`categories`) carries sessions whose timestamps go back (its categories are
ordered by timestamp): random ones, and a real log.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies.replay_recorded import _RecordedShapes
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, SMALL, same
from .test_replay_recorded import compacted

DATA = Path(__file__).parent / "data"
#: The real Claude Code logs with compactions (a subagent's log among them records none: it is left out).
LOGS = [p for p in sorted([*(DATA / "real" / "claude_code").glob("*compact*"), *(DATA / "heldout" / "claude_code").glob("*compact*")])
        if any(_RecordedShapes.of(load_session(p)).lo)]
#: Budgets at which mnesis compacts these logs itself (after the recorded summaries), and its default.
MNESIS = ({}, {"context_limit": 3000, "reserved_output_tokens": 200, "compaction_buffer": 1000},
          {"context_limit": 1800, "reserved_output_tokens": 100, "compaction_buffer": 1000, "always_include_latest": False})


def tiled(messages: int):
    """The benchmark's tiled real Claude Code log (bench/bench_simulate.py: copies chained, fresh uuids)."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    try:
        from bench_simulate import tiled_claude_code
    finally:
        sys.path.pop(0)
    return tiled_claude_code(messages)


def carried(s, name: str, params: dict, pair_safe: bool) -> int:
    """The replay equals the reference on both schedules and plans no step from scratch; how many
    summaries mnesis wrote."""
    options = PlanOptions(pair_safe=pair_safe)
    store = CountStore()
    written = 0
    for per_message in (False, True):
        fast = simulate(s, name, params, store=store, options=options, per_message=per_message)
        reference = simulate(s, name, params, store=store, options=options, incremental=False, per_message=per_message)
        assert fast.to_json() == reference.to_json(), (name, params, pair_safe, per_message)
        assert fast.turns == reference.turns and fast.summaries == reference.summaries
        assert fast.scratch_steps == 0, (name, params, pair_safe, per_message)
        written += len(fast.summaries)
    assert replays_incrementally(name, s, options, params) == "incremental"
    return written


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_mnesis_carries_the_recorded_compactions_of_real_logs(path):
    assert len(LOGS) >= 2
    s = load_session(path)
    for params in MNESIS:
        for pair_safe in (False, True):
            carried(s, "mnesis", params, pair_safe)


def test_mnesis_carries_a_tiled_real_log_with_recorded_compactions():
    s = tiled(120)
    assert len(s.summaries) > 6
    written = [carried(s, "mnesis", params, pair_safe) for params in MNESIS for pair_safe in (False, True)]
    assert written[0] == 0 and min(written[2:]) > 6  # its own compactions follow the recorded ones at the small budgets


@settings(SETTINGS, max_examples=examples(15))
@given(s=compacted(), data=st.data())
def test_mnesis_with_recorded_compactions_equals_the_reference(s, data):
    """Random sessions with compactions as Claude Code records them (system messages, orphan
    results and summaries in any file order among them), at small budgets and the defaults."""
    params = data.draw(SMALL["mnesis"]) if data.draw(st.integers(0, 3)) else {}
    pair_safe = data.draw(st.booleans())
    same(s, "mnesis", params, PlanOptions(pair_safe=pair_safe))
    how = replays_incrementally("mnesis", s, PlanOptions(pair_safe=pair_safe), params)
    if _RecordedShapes.of(s).why_not is None:
        assert not how.startswith("from scratch") or "tool call id" in how, how
        assert "recorded summary" not in how, how


@st.composite
def stamped(draw):
    """`sessions()` with timestamps that go back: from a few values (ties, which the manager's
    stable sort keeps in file order), sometimes a file repeated after itself."""
    import dataclasses

    from .test_replay_incremental import sessions

    s = draw(sessions())
    pool = [f"2026-01-01T00:00:{k:02d}Z" for k in range(draw(st.integers(1, 8)))]
    stamps = [draw(st.sampled_from(pool)) for _ in s.messages]
    if draw(st.booleans()) and len(stamps) > 3:  # a log repeated after itself: its timestamps start again
        half = len(stamps) // 2
        stamps = sorted(stamps[:half]) + sorted(stamps[half:])
    messages = tuple(dataclasses.replace(m, timestamp=t) for m, t in zip(s.messages, stamps, strict=True))
    return dataclasses.replace(s, messages=messages)


@settings(SETTINGS, max_examples=examples(15))
@given(s=stamped(), data=st.data())
def test_categories_with_timestamps_out_of_order_equals_the_reference(s, data):
    """Penguin's manager orders each category by timestamp: the replay carries that order (a message
    put in its place, the cut's moves since the turn before), with and without pair safety."""
    params = data.draw(SMALL["categories"]) if data.draw(st.integers(0, 3)) else {}
    pair_safe = data.draw(st.booleans())
    same(s, "categories", params, PlanOptions(pair_safe=pair_safe))
    how = replays_incrementally("categories", s, PlanOptions(pair_safe=pair_safe), params)
    if not s.summaries:
        assert how == "incremental" or "tool call id" in how, how


def test_categories_carries_a_real_log_whose_timestamps_go_back():
    """A real Claude Code log whose timestamps go back once (no compaction in it), at budgets that trim."""
    s = load_session(DATA / "real" / "claude_code" / "agentcmd-full-session-two.jsonl")
    assert any(b < a for a, b in zip([m.timestamp for m in s.messages], [m.timestamp for m in s.messages][1:], strict=False))
    for params in ({}, {"max_tokens": 3000}, {"max_tokens": 800}, {"max_tokens": 800, "trim_other_categories": False}):
        for pair_safe in (False, True):
            carried(s, "categories", params, pair_safe)
    trims = simulate(s, "categories", {"max_tokens": 800}, store=CountStore(), per_message=True)
    assert sum(e.kind == "trim" for t in trims.turns for e in t.events) > 5  # the cuts move while the timestamps go back
