"""`ranked_often` (what a replay's losses are ranked with: each anchor's place among all, once per
index) gives every list of lost anchors the order and ranks `ranked` gives it (engine/ranking.py)."""

from __future__ import annotations

import random

from ctxviz.engine.anchor_cache import MessageAnchors
from ctxviz.engine.anchors import build_index
from ctxviz.engine.ranking import ranked, ranked_often
from ctxviz.io.loaders import load_session

SESSIONS = ("sample_sessions/coding_agent.yaml", "sample_sessions/support_chat.yaml", "sample_sessions/claude_code_compaction.jsonl")


def test_ranked_often_orders_and_ranks_every_list_as_ranked_does() -> None:
    rnd = random.Random(5)
    for path in SESSIONS:
        index = build_index(load_session(path), MessageAnchors())
        assert len(index.anchors) > 20
        for size in (0, 1, 2, 7, 40, len(index.anchors)):
            for _ in range(20):
                lost = rnd.sample(index.anchors, min(size, len(index.anchors)))
                lost += lost[: size // 3]  # an anchor listed twice counts once
                expected = ranked(lost, index)
                got = ranked_often(lost, index)
                assert got[0] == expected[0]
                assert got[1] == expected[1] and list(got[1]) == list(expected[1])
        assert index.rank_order is not None
