"""A plan's lost anchors, ranks and reasons read lazily (engine/retention.py: `_Ranked`, `_Reasons`),
and the replay's last turn planned once for its view and its final retention: each gives what the
eager computation gave (the reference, written out here), on the bundled samples and random lists."""

from __future__ import annotations

import random
from bisect import bisect_left

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine import retention, retention_timeline
from ctxviz.engine.anchor_cache import MessageAnchors
from ctxviz.engine.anchors import AnchorIndex, build_index
from ctxviz.engine.plan import Plan
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.ranking import first_tier, rank, ranked
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session
from tests.hypothesis_budget import examples

SESSIONS = ("sample_sessions/coding_agent.yaml", "sample_sessions/support_chat.yaml", "sample_sessions/claude_code_compaction.jsonl",
            "sample_sessions/coding_agent.traj")
_INDEXES: dict[str, AnchorIndex] = {}


def index_of(path: str) -> AnchorIndex:
    if path not in _INDEXES:
        _INDEXES[path] = build_index(load_session(path), MessageAnchors())
    return _INDEXES[path]


@pytest.mark.parametrize("path", SESSIONS)
def test_first_tier_is_rank_tier_one(path: str) -> None:
    index = index_of(path)
    tiers = {rank(a, index).tier for a in index.anchors}
    assert 1 in tiers and tiers - {1}, "the sample has anchors of tier 1 and of others"
    assert all(first_tier(a) == (rank(a, index).tier == 1) for a in index.anchors)


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(SESSIONS), st.randoms(use_true_random=False), st.integers(0, 60), st.booleans(), st.integers(0, 70))
def test_a_head_of_the_lost_is_the_head_of_their_full_rank_order(path: str, rnd: random.Random, size: int, by_all: bool,
                                                                  head: int) -> None:
    index = index_of(path)
    ids = [a.id for a in rnd.sample(index.anchors, min(size, len(index.anchors)))]
    ids += ids[: size // 3]  # an anchor listed twice counts once
    expected, ranks = ranked([index.anchors[i] for i in dict.fromkeys(ids)], index)
    lost = retention._Ranked(ids, index, by_all=by_all)
    assert len(lost) == len(expected)
    assert lost[:head] == expected[:head]  # read first: from the tier-1 anchors alone when they hold it
    assert tuple(lost) == expected and lost[head:] == expected[head:]
    assert dict(retention._Ranks(lost)) == ranks


@pytest.mark.parametrize("path", SESSIONS)
@pytest.mark.parametrize(("policy", "params"), [("missy", {"total": 1, "system_reserve": 0, "tool_definitions_reserve": 0, "fresh_tail_count": 4}), ("langchain-trim", {"max_tokens": 600}),
                                              ("autogen-head-and-tail", {"head_size": 1, "tail_size": 3})])
def test_plan_retention_reads_its_lost_ranks_and_reasons_as_the_eager_reference(path: str, policy: str, params: dict[str, int]) -> None:
    s = load_session(path)
    index = index_of(path)
    plan = plan_session(s, policy, get_policy(policy).make_params(params))  # tight: many anchors lost
    for lazy in (True, False):
        check_against_reference(retention.plan_retention(plan, s, index, lazy=lazy), plan, index)
    eager = retention.plan_retention(plan, s, index)
    assert type(eager.lost) is tuple and type(eager.reasons) is dict, "ranked and explained where it was computed (the app's worker)"


def check_against_reference(r: retention.Retention, plan: Plan, index: AnchorIndex) -> None:
    ids = retention.present(index, retention.view_of(plan))
    scope = bisect_left(index.first_indices, retention.view_of(plan).turn + 1)
    lost_ref = [a for a in index.anchors[:scope] if a.id not in ids]
    order, ranks = ranked(lost_ref, index)
    reasons = {}
    for a in order:
        below = bisect_left(a.messages, len(plan.messages))
        if below:
            reasons[a.id] = f"#{a.messages[below - 1]}: {plan.messages[a.messages[below - 1]].reason}"
    assert len(order) > 6
    assert r.lost[:6] == order[:6] and len(r.lost) == len(order)
    assert tuple(r.lost) == order and dict(r.ranks) == ranks
    assert dict(r.reasons) == reasons and list(r.reasons) == list(reasons)
    assert all((i in r.reasons) == (i in reasons) for i in range(len(index.anchors)))


def test_the_last_turn_is_planned_once_for_its_view_and_the_final_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_session("sample_sessions/coding_agent.yaml")
    timeline = simulate(s, "missy", get_policy("missy").make_params({"total": 6000}))
    last = len(timeline.turns) - 1
    asked: list[int] = []
    plan_at = type(timeline).plan_at
    monkeypatch.setattr(type(timeline), "plan_at", lambda self, turn: asked.append(turn) or plan_at(self, turn))
    views = retention_timeline._Views(timeline)
    view = views(last)
    final = views.final_plan()
    assert asked == [last], "one plan of the last turn serves both"
    assert view == retention.view_of(plan_at(timeline, last), timeline.turns[last].index)
    assert final.decision_numbers.tolist() == plan_at(timeline, last).decision_numbers.tolist()


def test_a_replays_final_retention_read_lazily_is_the_eager_one() -> None:
    s = load_session("sample_sessions/coding_agent.yaml")
    timeline = simulate(s, "missy", get_policy("missy").make_params({"total": 6000}))
    final = retention_timeline.timeline_retention(timeline).final
    assert final is not None and len(final.lost) > 6
    eager = retention.plan_retention(timeline.plan_at(len(timeline.turns) - 1), s)
    assert type(final.lost) is not tuple, "ranked when read"
    assert final == eager
