"""Recorded compactions carried by the replayers that cut a window or categories, Penguin's manager
(`categories`), LlamaIndex's ChatMemoryBuffer and Strands' sliding window, and by Gemini CLI's
compression.

A Claude Code log's compactions each cover a prefix of the file, so when one comes into force the
replayer rebuilds what it carries from the first message the summaries leave, and the summaries
stand where the policy's plan puts them (categories: a CONTEXT message at its own timestamp; the
ChatMemoryBuffer: SYSTEM entries before the history they leave, whose joins to it are counted as
LlamaIndex counts them, whitespace meeting whitespace included; Strands: the latest in the file's
order as a user message, the agent's life lived again after it; Gemini CLI: the latest in the
file's order as the summary turn, until the policy compresses, which the reference step plans). Each
replay equals the reference, which plans every prefix from scratch, step by step (every Turn field
and event text, the compaction events included), with and without pair safety, on the real Claude
Code logs with compactions, the bench's tiled log and random compacted sessions (timestamps that go
back among them); says "incremental"; and plans no step from scratch.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.replay_recorded import _RecordedShapes
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.session import TextPart
from ctxviz.io.loaders import load_session

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, same
from .test_replay_recorded import compacted
from .test_replay_recorded_carried import LOGS, carried, tiled

#: Each policy, with parameters that make it cut on these small logs (and its defaults).
POLICIES = {
    "llamaindex-chat-memory-buffer": [{}, {"token_limit": 300}, {"token_limit": 100, "initial_token_count": 50}],
    "categories": [{}, {"max_tokens": 800}, {"max_tokens": 800, "trim_other_categories": True}],
    "strands-sliding-window": [{}, {"window_size": 4}, {"context_window_limit": 800, "window_size": 10, "proactive_compression": 0.5}],
    "gemini-cli-compression": [{}, {"tokenLimit": 60000}, {"tokenLimit": 3000, "compressionThreshold": 0.3, "truncateToolOutputThreshold": 50}],
}


@pytest.mark.parametrize("policy", list(POLICIES))
def test_real_logs_with_compactions_are_carried(policy):
    """The real Claude Code logs with compactions and the bench's tiled log: every turn carried,
    the compactions' events as the reference words them."""
    events = 0
    for session in [load_session(p) for p in LOGS] + [tiled(120)]:
        for params in POLICIES[policy]:
            for pair_safe in (False, True):
                carried(session, policy, params, pair_safe)
        events += sum(e.kind == "compaction" for t in carried_turns(session, policy) for e in t.events)
    assert events > 5  # the compactions' events were compared, not skipped


def carried_turns(session, policy):
    from ctxviz.engine.simulate import simulate

    return simulate(session, policy, POLICIES[policy][-1]).turns


@st.composite
def compacted_stamped(draw):
    """`compacted()` with timestamps from a few values (ties; sometimes going back) and summaries
    that sometimes carry a time of their own."""
    s = draw(compacted())
    pool = [f"2026-01-01T00:00:{k:02d}Z" for k in range(draw(st.integers(1, 6)))]
    stamps = [draw(st.sampled_from(pool)) for _ in s.messages]
    if draw(st.booleans()):
        stamps.sort()
    messages = tuple(dataclasses.replace(m, timestamp=t) for m, t in zip(s.messages, stamps, strict=True))
    summaries = tuple(dataclasses.replace(x, created_at=draw(st.sampled_from(["", *pool]))) for x in s.summaries)
    return dataclasses.replace(s, messages=messages, summaries=summaries)


@st.composite
def compacted_spaced(draw):
    """`compacted()` where texts start or end with whitespace, summaries' too: whitespace then meets
    whitespace across the joins LlamaIndex's buffer counts, the summaries' among them."""
    s = draw(compacted())
    pad = st.sampled_from(["", "", " ", "\n", "\n\n ", "  "])

    def spaced(text: str) -> str:
        return draw(pad) + text + draw(pad)

    messages = tuple(dataclasses.replace(m, parts=tuple(dataclasses.replace(p, text=spaced(p.text)) if isinstance(p, TextPart) else p
                                                       for p in m.parts)) for m in s.messages)
    summaries = tuple(dataclasses.replace(x, text=spaced(x.text)) for x in s.summaries)
    return dataclasses.replace(s, messages=messages, summaries=summaries)


SESSIONS = st.one_of(compacted(), compacted_stamped(), compacted_spaced())


@settings(SETTINGS, max_examples=examples(12))
@given(s=SESSIONS, data=st.data())
def test_random_logs_with_compactions_equal_the_reference(s, data):
    """Compactions as Claude Code writes them (a preserved tail, summaries in another order than
    written, one with a gap), with and without pair safety; carried where each covers a prefix."""
    for policy, choices in POLICIES.items():
        params = data.draw(st.sampled_from(choices))
        options = PlanOptions(pair_safe=data.draw(st.booleans()))
        same(s, policy, params, options)
        how = replays_incrementally(policy, s, options, params)
        if _RecordedShapes.of(s).why_not_for(REPLAYERS[policy]) is None and not how.startswith("from scratch"):
            assert how == "incremental", how
