"""strands-summarizing keeps its offline summary per session as a snapshot that grows: a re-plan
whose summary covers more of the same messages (summary_ratio moved up) gathers only the new ones,
and every re-plan's summary is the one a plan from nothing writes (summary_ratio moved up, down,
and back).
"""

from __future__ import annotations

from collections import Counter

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import carried

from .test_replay_summaries import agent_log

LIMIT = 5_000  # a window the session (about 15,000 tokens) overflows, so the plan summarises


def _summary(plan) -> str:  # noqa: ANN001
    return plan.summaries[-1].text


def test_a_replan_summarises_as_a_plan_from_nothing_and_gathers_only_what_is_new(monkeypatch: pytest.MonkeyPatch) -> None:
    session = agent_log(400)
    store = CountStore()
    gathered: Counter[str] = Counter()
    features_of = carried.features_of

    def counting(messages):  # noqa: ANN001, ANN202
        gathered.update(m.id for m in messages)
        return features_of(messages)

    monkeypatch.setattr(carried, "features_of", counting)
    for ratio in (0.3, 0.35, 0.25, 0.35):
        gathered.clear()
        params = {"context_window_limit": LIMIT, "summary_ratio": ratio}
        plan = plan_session(session, "strands-summarizing", params, None, store)
        fresh = plan_session(session, "strands-summarizing", params, None, CountStore())  # a plan from nothing
        assert plan.summaries and _summary(plan) == _summary(fresh)
        assert plan.to_json() == fresh.to_json()
    # 0.3 -> 0.35 grew the summary: the second plan gathered only the messages 0.35 adds
    gathered.clear()
    plan_session(session, "strands-summarizing", {"context_window_limit": LIMIT, "summary_ratio": 0.3}, None, store)
    first = sum(gathered.values())
    gathered.clear()
    plan_session(session, "strands-summarizing", {"context_window_limit": LIMIT, "summary_ratio": 0.35}, None, store)
    grown = sum(gathered.values())
    assert 0 < grown < first / 4
