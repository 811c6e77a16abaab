"""Pair safety carried from turn to turn by the categories and mnesis replayers: each replay with
`--pair-safe` equals the reference, which plans every prefix and applies `apply_pair_safety` to
it, step by step (every Turn field and event), on random logs with tool calls and broken pairs
(hypothesis), the samples and real logs; `replays_incrementally` says it is incremental, and no
step is planned from scratch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.session import Category
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_properties import PARAMS as WIDE
from .test_replay_incremental import SETTINGS, SMALL, same, sessions

ROOT = Path(__file__).parent.parent
PAIR_SAFE = PlanOptions(pair_safe=True)
POLICIES = ("categories", "mnesis")


def shared_call_ids(session) -> bool:  # type: ignore[no-untyped-def]
    ids = [c.id for m in session.messages for c in m.tool_calls if c.id]
    return len(set(ids)) != len(ids)


@settings(SETTINGS, max_examples=examples(30))
@given(s=sessions(), data=st.data(), short=st.sampled_from([1, 3, 64]))
def test_pair_safe_replay_equals_the_reference(s, data, short):  # type: ignore[no-untyped-def]
    """Random logs with calls, results, results without a call and calls never answered, at
    budgets small enough that the policies cut (short and long pairs take different paths)."""
    from ctxviz.engine.policies.replay_pairs import _PairSafety

    saved, _PairSafety.SHORT = _PairSafety.SHORT, short
    try:
        for name in POLICIES:
            params = data.draw(SMALL[name] if data.draw(st.integers(0, 3)) else WIDE[name])
            same(s, name, params, PAIR_SAFE)
            how = replays_incrementally(name, s, PAIR_SAFE, params)
            assert not how.startswith("from scratch") or shared_call_ids(s), how
            if how == "incremental":
                assert simulate(s, name, params, store=CountStore(), options=PAIR_SAFE).scratch_steps == 0
    finally:
        _PairSafety.SHORT = saved


@settings(SETTINGS, max_examples=examples(15))
@given(s=sessions(), data=st.data())
def test_categories_spares_system_messages_in_pairs(s, data):  # type: ignore[no-untyped-def]
    """A file may put a call or a result in the SYSTEM category, which the manager never trims and
    pair safety never drops: a pair around one stays, and one beside a broken pair stays alone."""
    system = data.draw(st.lists(st.booleans(), min_size=len(s.messages), max_size=len(s.messages)))
    messages = tuple(dataclasses.replace(m, category=Category.SYSTEM) if flip and (m.role == "tool" or m.tool_calls) else m
                     for m, flip in zip(s.messages, system, strict=True))
    s = dataclasses.replace(s, messages=messages)
    params = data.draw(SMALL["categories"])
    same(s, "categories", params, PAIR_SAFE)
    if not shared_call_ids(s) and not s.summaries:
        assert simulate(s, "categories", params, store=CountStore(), options=PAIR_SAFE).scratch_steps == 0


def test_categories_keeps_the_results_of_a_system_call_whose_other_call_is_open() -> None:
    """An assistant message filed as SYSTEM with two calls, one answered: pair safety may not drop
    the message, so its answered call keeps its result; the replay, one step per message, equals
    the reference (which drops nothing there) and plans no turn from scratch."""
    from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart

    messages = (Message(id="u", index=0, role="user", parts=(TextPart("look"),)),
                Message(id="a", index=1, role="assistant", parts=(ToolCallPart("c1", "read", "{}"), ToolCallPart("c2", "read", "{}")),
                        category=Category.SYSTEM),
                Message(id="r1", index=2, role="tool", parts=(ToolResultPart("c1", "one"),), tool_call_id="c1"),
                Message(id="r2", index=3, role="tool", parts=(ToolResultPart("c2", "two"),), tool_call_id="c2"))
    session = Session(messages=messages, source="<test>", format="test")
    fast, reference = replay(session, "categories", {}, per_message=True)
    assert fast.to_json() == reference.to_json() and fast.scratch_steps == 0
    assert [t.dropped for t in fast.turns] == [0, 0, 0, 0]


def test_categories_drops_the_late_result_of_a_summarised_system_call() -> None:
    """An assistant message filed as SYSTEM makes two calls; a recorded summary covers it, so it is
    not sent, and the result that arrives after the summary answers a call the model never sees:
    pair safety drops that result, in the replay as in the reference (the replay once held a star
    around a SYSTEM message unbroken even when the message itself was summarised away)."""
    from ctxviz.engine.session import Message, Session, Summary, TextPart, ToolCallPart, ToolResultPart

    def text(i: int, role: str = "user") -> Message:
        return Message(id=f"m{i}", index=i, role=role, parts=(TextPart(f"message {i} " + "word " * 40),))

    messages = (text(0),
                Message(id="m1", index=1, role="assistant", parts=(ToolCallPart("c1", "read", "{}"), ToolCallPart("c2", "read", "{}")),
                        category=Category.SYSTEM),
                Message(id="m2", index=2, role="tool", parts=(ToolResultPart("c1", "one " * 30),), tool_call_id="c1"),
                text(3), text(4, "assistant"), text(5),
                Message(id="m6", index=6, role="tool", parts=(ToolResultPart("c2", "two " * 30),), tool_call_id="c2"),
                text(7, "assistant"))
    session = Session(messages=messages, source="<test>", format="test",
                      summaries=(Summary(text="what came before", covers=("m0", "m1", "m2", "m3"), messages_covered=4),))
    fast, reference = replay(session, "categories", {"max_tokens": 100_000}, per_message=True)
    assert fast.to_json() == reference.to_json() and fast.scratch_steps == 0
    from ctxviz.engine.planner import plan_session
    plan = plan_session(session, "categories", {"max_tokens": 100_000}, store=CountStore(), options=PAIR_SAFE)
    assert plan.messages[6].decision.value == "dropped" and plan.messages[6].code == "unpaired"


def test_both_say_they_carry_pair_safety() -> None:
    for name in POLICIES:
        assert replays_incrementally(name, pair_safe=True) == "incremental"


def replay(session, policy, params, per_message):  # type: ignore[no-untyped-def]
    store = CountStore()
    fast = simulate(session, policy, params, store=store, options=PAIR_SAFE, per_message=per_message)
    reference = simulate(session, policy, params, store=store, options=PAIR_SAFE, incremental=False, per_message=per_message)
    return fast, reference


ROLLOUT = ROOT / "tests" / "data" / "real" / "codex" / "localpush-rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl"


def pair_drops(session, policy, params, fast) -> int:  # type: ignore[no-untyped-def]
    """How many more messages the turns drop with pair safety than without."""
    plain = simulate(session, policy, params, store=CountStore(), per_message=True)
    return sum(a.dropped - b.dropped for a, b in zip(fast.turns, plain.turns, strict=True))


def test_categories_with_pair_safety_on_a_real_rollout_is_carried() -> None:
    """A real Codex rollout at 8,000 tokens: the manager trims SYSTEM_OUTPUT and DIALOG each turn,
    and pair safety drops the calls whose outputs were trimmed (and the calls whose output is not
    in yet). The replay, one step per message, equals the reference and plans no turn from scratch."""
    from ctxviz.io.loaders import load_session

    session = load_session(ROLLOUT)
    params = {"max_tokens": 8000}
    fast, reference = replay(session, "categories", params, per_message=True)
    assert fast.to_json() == reference.to_json()
    assert fast.scratch_steps == 0 and pair_drops(session, "categories", params, fast) > 1000
    assert sum(e.kind == "trim" for e in fast.events) > 100
    assert replays_incrementally("categories", session, PAIR_SAFE, params) == "incremental"


def test_mnesis_with_pair_safety_on_a_real_rollout_is_carried() -> None:
    """The same rollout at a 30,000-token context limit: mnesis compacts four times, and pair safety
    drops the calls whose output is not in yet and what the newest-first cut leaves unpaired."""
    from ctxviz.io.loaders import load_session

    session = load_session(ROLLOUT)
    params = {"context_limit": 30_000}
    fast, reference = replay(session, "mnesis", params, per_message=True)
    assert fast.to_json() == reference.to_json()
    assert fast.scratch_steps == 0 and len(fast.summaries) == 4 and pair_drops(session, "mnesis", params, fast) > 100
    assert replays_incrementally("mnesis", session, PAIR_SAFE, params) == "incremental"


SAMPLES = sorted(p for p in (ROOT / "sample_sessions").iterdir() if p.suffix in (".yaml", ".json", ".jsonl", ".traj"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_the_samples_with_pair_safety_equal_the_reference(path: Path) -> None:
    """Every bundled sample, at budgets where both policies cut (and mnesis compacts), one step per model call."""
    from ctxviz.io.loaders import load_session

    session = load_session(path)
    for policy, params in (("categories", {"max_tokens": 6000}), ("mnesis", {"context_limit": 20_000})):
        fast, reference = replay(session, policy, params, per_message=False)
        assert fast.to_json() == reference.to_json(), (policy, path.name)
