"""A large replay's retention read per anchor as columns (engine/retention_walk.py) says what the
turn-by-turn count says: the same points, the same losses with the same anchors, ranks and causes,
and the same refusal when a planned turn disagrees with the model, for every policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine import retention, retention_timeline
from ctxviz.engine.anchors import anchors_of
from ctxviz.engine.policies import get_policy, policy_names
from ctxviz.engine.retention_walk import _stays, _stays_of_walk, _stays_of_windows
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

SAMPLES = Path(__file__).parent.parent / "sample_sessions"


def _losses(losses):  # type: ignore[no-untyped-def]
    return [(x.turn, x.kind, x.event_turn, x.message, tuple(x.lost), dict(x.ranks), x.stand_in) for x in losses]


@pytest.mark.parametrize("path", ["coding_agent.yaml", "claude_code_compaction.jsonl"])
@pytest.mark.parametrize("policy", policy_names(False))
def test_columns_and_counts_give_the_same_retention_at_every_turn(path: str, policy: str) -> None:
    session = load_session(str(SAMPLES / path))
    index = anchors_of(session)
    pol = get_policy(policy)
    try:
        params = pol.make_params({"total": 3000})  # tight: trims, summaries and compactions early
    except Exception:
        params = pol.make_params({})
    timeline = simulate(session, policy, params)
    views = retention_timeline._Views(timeline)
    turns, _ = retention_timeline._sample_turns(timeline, 30, 20)
    presence = {t: retention.present(index, views(t)) for t in turns}
    columns = retention_timeline._modelled(timeline, index, presence, views)
    counts = retention_timeline._modelled_by_counts(timeline, index, presence, views)
    assert (columns is None) == (counts is None)
    if columns is not None and counts is not None:
        assert columns[0] == counts[0]
        assert _losses(columns[1]) == _losses(counts[1])
        assert columns[1] == counts[1]


def test_a_message_that_leaves_and_comes_back_stays_twice() -> None:
    # message 4 enters at turn 0, leaves at 3, enters again at 5 and stays; message 7 enters at 2 and leaves at 6
    stays = _stays([4, 7, 4], [0, 2, 5], [4, 7], [3, 6], 9)
    assert stays is not None
    assert [tuple(map(int, row)) for row in zip(*stays, strict=True)] == [(4, 0, 3), (4, 5, 9), (7, 2, 6)]


def test_enters_and_leaves_that_do_not_alternate_are_refused() -> None:
    assert _stays([4, 4], [0, 2], [], [], 9) is None  # entered twice
    assert _stays([], [], [4], [3], 9) is None  # left without entering


@pytest.mark.parametrize(("policy", "params"), [("missy", {"total": 6000}), ("langchain-trim", {"max_tokens": 3000})])
def test_a_window_that_only_moves_forward_gives_the_stays_the_walk_gives(policy: str, params: dict[str, int]) -> None:
    session = load_session(str(SAMPLES / "coding_agent.yaml"))
    timeline = simulate(session, policy, get_policy(policy).make_params(params))
    model = retention_timeline._suffix_model(timeline)
    assert model is not None
    history, system, systems, start, end = model.windows()
    assert all(start[1:] >= start[:-1])
    walked = _stays_of_walk(model.walk(), {}, lambda t: None, len(timeline.turns))
    assert walked is not None
    rows = {tuple(map(int, row)) for row in zip(*_stays_of_windows(history, system, systems, start, end), strict=True)}
    assert rows and rows == {tuple(map(int, row)) for row in zip(*walked, strict=True)}


def test_a_window_that_moves_back_is_read_turn_by_turn_and_checked_the_same_way() -> None:
    session = load_session(str(SAMPLES / "coding_agent.yaml"))
    timeline = simulate(session, "autogen-token-limited", get_policy("autogen-token-limited").make_params({"token_limit": 3000}))
    model = retention_timeline._suffix_model(timeline)
    assert model is not None
    start = model.windows()[3]
    assert not all(start[1:] >= start[:-1])  # a message left, and came back
    index = anchors_of(session)
    views = retention_timeline._Views(timeline)
    presence = {t: retention.present(index, views(t)) for t in retention_timeline._sample_turns(timeline, 30, 20)[0]}
    columns = retention_timeline._modelled(timeline, index, presence, views)
    counts = retention_timeline._modelled_by_counts(timeline, index, presence, views)
    assert columns is None and counts is None  # autogen's context is no suffix: the planned turns refuse the model both ways
