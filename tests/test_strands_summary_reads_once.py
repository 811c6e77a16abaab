"""What a strands-summarizing replay costs per summarised message stays constant: over the whole
replay each message the summaries cover has its features (the offline stand-in summarizer's
reading, `summarizers._extract`) looked up once, however many passes summarise it again inside a
later summary (each pass gathers only what is new since the pass before, `carried._Snapshot`).
A replay that rebuilt each summary from everything it covers would look each message up once per
pass: with a pass every few dozen turns, its cost per message would grow with the session.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ctxviz.engine import summarizers
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import carried
from ctxviz.engine.simulate import simulate

from .test_replay_summaries import agent_log


@pytest.mark.parametrize("pair_safe", [False, True])
def test_each_summarised_message_is_read_once(monkeypatch, pair_safe):
    session = agent_log(600)
    looked_up: Counter[str] = Counter()  # message id -> times its features were asked for
    read: Counter[str] = Counter()  # message id -> times its features were read (not found kept)
    features_of, extract, snapshot = carried.features_of, summarizers._extract, summarizers.supyagent_snapshot

    def counting_features_of(messages):
        looked_up.update(m.id for m in messages)
        return features_of(messages)

    def counting_extract(m):
        read[m.id] += 1
        return extract(m)

    def counting_snapshot(messages):  # the plan's own summary (the reference step's), were one planned
        looked_up.update(m.id for m in messages)
        return snapshot(messages)

    monkeypatch.setattr(carried, "features_of", counting_features_of)
    monkeypatch.setattr(summarizers, "_extract", counting_extract)
    monkeypatch.setattr(summarizers, "supyagent_snapshot", counting_snapshot)
    summarizers._features.cache_clear()  # type: ignore[attr-defined]
    timeline = simulate(session, "strands-summarizing", {"context_window_limit": 6000}, store=CountStore(),
                        options=PlanOptions(pair_safe=pair_safe))
    assert timeline.scratch_steps == 0  # every step the replayer's own
    assert len(timeline.summaries) >= 10  # summaries absorb summaries, pass after pass
    covered = list(timeline.summaries[-1].covers)
    assert len(covered) > len(session.messages) // 2
    assert looked_up == Counter(covered)  # the last summary's messages, each once over all passes
    assert read == Counter(covered)
