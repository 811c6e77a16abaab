"""Pins carried from turn to turn (`policies/pins_carried.py`): for each policy whose replayer
carries them, `simulate --pin ...` equals the reference, which plans every prefix and applies
`pins.apply_pins` to it (every Turn field and event text, both schedules), on random sessions with
pins of each rule kind, on logs with recorded compactions, on the samples and on a real log; it
plans no step from scratch that the replay without pins does not, and `replays_incrementally`
says "incremental". Pins with pair safety, and policies whose replayer does not carry pins, stay
with the reference and say so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.pins import resolve_pins
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.simulate import simulate
from ctxviz.errors import ParameterError

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, SMALL, sessions
from .test_replay_recorded import compacted

ROOT = Path(__file__).parent.parent
REAL = Path(__file__).parent / "data" / "real"

#: The policies that carry pins, with parameters at the sessions' scale (so that the pins push
#: messages out, trims and overflows happen, and Claude Code compacts).
CARRIED = {
    "missy": SMALL["missy"],
    "mnesis": SMALL["mnesis"],
    "missy-consolidator": SMALL["missy-consolidator"],
    "claude-code": st.builds(dict, context_window=st.integers(1000, 6000), calibrated_trigger=st.one_of(st.none(), st.integers(1, 3000))),
    "langchain-trim": st.builds(dict, max_tokens=st.integers(0, 3000), strategy=st.sampled_from(["last", "first"]), allow_partial=st.booleans(),
                                include_system=st.booleans(), start_on=st.sampled_from(["", "human", "human,ai"]),
                                end_on=st.sampled_from(["", "human", "ai,tool"]))
                      .filter(lambda p: p["strategy"] == "last" or not (p["start_on"] or p["include_system"])),
    "autogen-buffered": st.builds(dict, buffer_size=st.integers(1, 8)),
    "autogen-head-and-tail": st.builds(dict, head_size=st.integers(1, 3), tail_size=st.integers(1, 5)),
    "autogen-token-limited": st.builds(dict, token_limit=st.integers(1, 800), tool_schema=st.booleans()),
}

#: One rule of each kind pins.resolve_pins reads (#index is drawn per session).
RULES = ["role:user", "role:assistant", "role:tool", "role:system", "first-user", "last-user", "first-assistant", "last-tool",
         "text:error", "text:src/a.py", "id:m3"]


def rules_for(data, session) -> tuple[str, ...] | None:
    """Those of one to three drawn pin rules that match messages of the session (None: none does)."""
    n = len(session.messages)
    drawn = data.draw(st.lists(st.sampled_from([*RULES, *(f"#{k}" for k in range(n))]), min_size=1, max_size=3))
    rules = []
    for rule in drawn:
        try:
            resolve_pins(session, (rule,))
        except ParameterError:
            continue
        rules.append(rule)
    return tuple(rules) or None


def same_with_pins(session, policy, params, rules, schedules=(False, True)) -> None:
    """The carried replay equals the reference, on both schedules (one step per model call, one
    per message), and plans from scratch only the steps the replay without pins does (a
    compaction's turn, a recorded summary it does not carry)."""
    store = CountStore()
    options = PlanOptions(pins=rules)
    for per_message in schedules:
        fast = simulate(session, policy, params, store=store, options=options, per_message=per_message)
        reference = simulate(session, policy, params, store=store, options=options, incremental=False, per_message=per_message)
        assert fast.turns == reference.turns, (policy, params, rules, per_message)
        assert fast.to_json() == reference.to_json()
        unpinned = simulate(session, policy, params, store=store, per_message=per_message)
        assert fast.scratch_steps == unpinned.scratch_steps, (policy, params, rules, per_message)


@settings(SETTINGS, max_examples=examples(16))
@given(s=sessions(), data=st.data())
def test_carried_pins_equal_the_reference(s, data):
    rules = rules_for(data, s)
    if rules is None:
        return
    for policy, params in CARRIED.items():
        drawn = data.draw(params)
        same_with_pins(s, policy, drawn, rules)
        assert replays_incrementally(policy, s, PlanOptions(pins=rules), drawn) == "incremental", policy


@settings(SETTINGS, max_examples=examples(10))
@given(s=compacted(), data=st.data())
def test_carried_pins_with_recorded_compactions_equal_the_reference(s, data):
    """Logs with compactions recorded as Claude Code writes them: the pins add summarised messages
    back, and push out what the summary leaves before its last cover first (claude-code)."""
    rules = rules_for(data, s)
    if rules is None:
        return
    for policy in ("claude-code", "missy", "langchain-trim", "mnesis", "missy-consolidator"):
        same_with_pins(s, policy, data.draw(CARRIED[policy]), rules)


SAMPLES = ["support_chat.yaml", "coding_agent.yaml", "claude_code_compaction.jsonl", "claude_code_autocompact.jsonl"]


@pytest.mark.parametrize("name", SAMPLES)
def test_carried_pins_on_the_samples(name):
    """Each sample, pinned as a user would pin it (its first user message and every tool result,
    where it has them, and its last assistant message), at budgets small enough that the pins push
    messages out; one step per model call."""
    from ctxviz.io.loaders import load_session

    session = load_session(ROOT / "sample_sessions" / name)
    roles = {m.role for m in session.messages}
    rules = ("last-assistant", *(("first-user",) if "user" in roles else ()), *(("role:tool",) if "tool" in roles else ()))
    budgets = {"missy": {"total": 6000}, "claude-code": {"context_window": 4000}, "langchain-trim": {"max_tokens": 1500},
               "autogen-buffered": {"buffer_size": 3}, "autogen-head-and-tail": {"head_size": 1, "tail_size": 3},
               "autogen-token-limited": {"token_limit": 1500}, "mnesis": {"context_limit": 9000, "reserved_output_tokens": 1000, "compaction_buffer": 1000},
               "missy-consolidator": {"max_tokens": 3000}}
    for policy, params in budgets.items():
        same_with_pins(session, policy, params, rules, schedules=(False,))


def real_replays(session, policy, params, rules):
    """The carried and the reference replay one step per message, and the replay without pins."""
    store = CountStore()
    options = PlanOptions(pins=rules)
    fast = simulate(session, policy, params, store=store, options=options, per_message=True)
    reference = simulate(session, policy, params, store=store, options=options, incremental=False, per_message=True)
    assert replays_incrementally(policy, session, options, params) == "incremental"
    return fast, reference, simulate(session, policy, params, store=store, per_message=True)


def test_carried_pins_on_a_real_log():
    """spotter-4d5611e5.jsonl, its first user message and every tool result pinned: Claude Code at a
    30,000-token window compacts, and langchain-trim at 8,000 tokens trims; the pins push other
    messages out. Each replay equals the reference and plans no step from scratch."""
    from ctxviz.io.loaders import load_session

    session = load_session(REAL / "claude_code" / "spotter-4d5611e5.jsonl")
    for policy, params in (("claude-code", {"context_window": 30_000}), ("langchain-trim", {"max_tokens": 8_000})):
        fast, reference, unpinned = real_replays(session, policy, params, ("first-user", "role:tool"))
        assert fast.to_json() == reference.to_json(), policy
        assert fast.scratch_steps == 0, policy
        shape = lambda timeline: [(t.dropped, t.summarized, t.tokens_sent) for t in timeline.turns]  # noqa: E731
        assert shape(fast) != shape(unpinned), policy  # the pins changed what is sent


def test_carried_pins_on_a_real_log_with_a_recorded_compaction():
    """tugtool-compact-native.jsonl records one compaction: pinned messages it covers are sent again."""
    from ctxviz.io.loaders import load_session

    session = load_session(REAL / "claude_code" / "tugtool-compact-native.jsonl")
    for policy in ("claude-code", "missy", "langchain-trim", "mnesis", "missy-consolidator"):
        fast, reference, unpinned = real_replays(session, policy, None, ("first-user", "role:assistant"))
        assert fast.to_json() == reference.to_json(), policy
        assert fast.scratch_steps == 0, policy
        assert sum(t.summarized for t in fast.turns) < sum(t.summarized for t in unpinned.turns), policy


def test_pins_without_a_carrying_replayer_or_with_pair_safety_are_said():
    """A replayer that does not carry pins, and pins with pair safety, plan every step from scratch and say so."""
    from ctxviz.io.loaders import load_session

    session = load_session(ROOT / "sample_sessions" / "support_chat.yaml")
    uncovered = sorted(set(REPLAYERS) - {p for p, kind in REPLAYERS.items() if kind.pins_incremental})
    assert set(CARRIED) == {p for p, kind in REPLAYERS.items() if kind.pins_incremental}
    assert uncovered, "every replayer carries pins: this test needs no case for the others"
    pins = PlanOptions(pins=("first-user",))
    assert replays_incrementally(uncovered[0], session, pins) == "from scratch (pins)"
    with_pair_safety = PlanOptions(pins=("first-user",), pair_safe=True)
    assert replays_incrementally("missy", session, with_pair_safety) == "from scratch (pins with pair safety)"
    timeline = simulate(session, "missy", None, store=CountStore(), options=with_pair_safety)
    assert timeline.scratch_steps == len(timeline.turns)
