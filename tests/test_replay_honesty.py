"""`replays_incrementally` says what `simulate` really does for the session at hand.

"from scratch (why)" means every step of the replay plans the whole prefix (`Timeline.scratch_steps`
counts the steps the reference planned); "incremental" means the replayer carries the steps; one
test per case that replays from scratch, and a property over random sessions and every policy.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.session import (
    ImagePart,
    Message,
    Session,
    Summary,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    default_category,
)
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, sessions

DATA = Path(__file__).parent / "data"


def chat(n: int = 12, call_ids: tuple[str, ...] = ()) -> list[Message]:
    """user / assistant turns; the assistant messages call a tool (ids from `call_ids`, in turn)."""
    messages: list[Message] = []
    ids = list(call_ids)
    for k in range(n):
        i = len(messages)
        if k % 3 == 0:
            messages.append(Message(id=f"m{i}", index=i, role="user", parts=(TextPart(f"please look at item {k} " * 5),), category=default_category("user")))
        elif k % 3 == 1 and ids:
            call = ids.pop(0)
            messages.append(Message(id=f"m{i}", index=i, role="assistant", parts=(ToolCallPart(call, "read", "{}"),), category=default_category("assistant")))
            i += 1
            messages.append(Message(id=f"m{i}", index=i, role="tool", parts=(ToolResultPart(call, "contents " * 20),), tool_call_id=call,
                                    category=default_category("tool")))
        else:
            messages.append(Message(id=f"m{i}", index=i, role="assistant", parts=(TextPart(f"here is item {k} " * 5),), category=default_category("assistant")))
    return messages


def session_of(messages: list[Message], **kw) -> Session:
    return Session(messages=tuple(messages), source="<test>", format="test", **kw)


def replayed(session: Session, policy: str, params=None, options: PlanOptions | None = None):
    return simulate(session, policy, params, store=CountStore(), options=options)


def check(session: Session, policy: str, params, options: PlanOptions | None, why: str) -> None:
    """The answer names the reason, and the replay planned every step from scratch."""
    answer = replays_incrementally(policy, session, options, params)
    assert answer == f"from scratch ({why})", answer
    timeline = replayed(session, policy, params, options)
    assert timeline.turns and timeline.scratch_steps == len(timeline.turns)
    # Without the reason, the same session replays incrementally (the test would catch a replayer that never does).


CASES = {
    "pins": lambda: (session_of(chat()), "supyagent", None, PlanOptions(pins=("first-user",)), "pins"),
    "pins with pair safety": lambda: (session_of(chat()), "missy", None, PlanOptions(pins=("first-user",), pair_safe=True), "pins with pair safety"),
    "parameters": lambda: (session_of(chat()), "autogen-buffered", {"system_messages_in_context": True}, None,
                           "parameters its replayer does not follow"),
    "pair safety, shared call ids": lambda: (session_of(chat(call_ids=("a", "a"))), "missy", None, PlanOptions(pair_safe=True),
                                             "pair safety, with a tool call id on more than one call"),
    "shared message ids": lambda: (session_of([Message(id="same", index=m.index, role=m.role, parts=m.parts, category=m.category) for m in chat()]),
                                   "supyagent", None, None, "an id on more than one message"),
    "images": lambda: (session_of([*chat(), Message(id="img", index=12, role="user", parts=(ImagePart("data:image/png;base64,AAAA"),),
                                                    category=default_category("user"))]), "categories", None, None,
                       "images (the image rule re-counts older messages)"),
    "replay_history off": lambda: (session_of(chat()), "strands-sliding-window", {"replay_history": False}, None, "replay_history off"),
    "pin_first": lambda: (session_of(chat()), "strands-summarizing", {"pin_first": 2}, None, "pin_first"),
    "consolidation pipeline": lambda: (session_of(chat()), "missy-consolidator", {"pipeline": True}, None, "the consolidation pipeline"),
    "tool call without an id": lambda: (session_of(chat(call_ids=("",))), "anthropic-clear-tool-uses", None, None,
                                        "a tool call id on more than one call, or on none"),
    "openhands view": lambda: (session_of(chat(call_ids=("",))), "openhands-llm-summarizing", None, None,
                               "tool calls without an id or with thinking blocks, or an id on more than one call"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_from_scratch_case_is_said(case):
    session, policy, params, options, why = CASES[case]()
    check(session, policy, params, options, why)


def test_without_the_reason_the_same_sessions_replay_incrementally():
    """The cases above replay incrementally once the reason is gone (no pins, default parameters, no pair safety...)."""
    for case in ("pins", "parameters", "pair safety, shared call ids", "replay_history off", "pin_first", "consolidation pipeline"):
        session, policy, _, _, _ = CASES[case]()
        assert replays_incrementally(policy, session) == "incremental"
        timeline = replayed(session, policy)
        assert timeline.scratch_steps < len(timeline.turns), case


@pytest.mark.parametrize("policy", sorted(REPLAYERS))
def test_every_replayer_carries_pair_safety(policy):
    """With each tool call id on one call, no policy hands pair safety to the reference step (issue 22):
    the answer says "incremental" and the replay plans fewer steps from scratch than it has turns."""
    session = session_of(chat(call_ids=("a", "b")))
    options = PlanOptions(pair_safe=True)
    assert not replays_incrementally(policy, session, options).startswith("from scratch"), policy
    timeline = replayed(session, policy, None, options)
    assert timeline.scratch_steps < len(timeline.turns), policy


def test_the_turns_from_a_recorded_summary_on_are_said():
    """A replayer that hands the turns from the first recorded summary of the file's messages to the
    reference says so, and does: mnesis carries a summary of a prefix of the file, not one with gaps."""
    session = session_of(chat(30), summaries=(Summary(text="before", covers=tuple(f"m{k}" for k in range(10) if k != 4)),))
    assert replays_incrementally("mnesis", session) == ("incremental, then from scratch (the turns from the first recorded summary of the "
                                                        "file's messages on: a recorded summary that covers the file's messages with gaps)")
    timeline = replayed(session, "mnesis")
    assert 0 < timeline.scratch_steps < len(timeline.turns)


def test_openhands_carries_a_recorded_summary_in_force():
    """OpenHands' condenser carries a recorded summary of a prefix of the file (it handed the turns
    from the first one in force on to the reference before): the answer says "incremental", no turn
    is planned from scratch, and the replay equals the reference."""
    session = session_of(chat(30), summaries=(Summary(text="before", covers=tuple(f"m{k}" for k in range(10))),))
    assert replays_incrementally("openhands-llm-summarizing", session) == "incremental"
    timeline = replayed(session, "openhands-llm-summarizing")
    assert not timeline.summaries and timeline.scratch_steps == 0
    reference = simulate(session, "openhands-llm-summarizing", None, store=CountStore(), incremental=False)
    assert timeline.to_json() == reference.to_json()


def test_openhands_carries_the_turns_after_its_own_summary_over_a_recorded_one():
    """OpenHands' condenser, over a recorded summary, writes one of its own on a turn the reference
    step plans; the replay takes that summary over (it stayed with the reference step from there
    before), so the turns after it, and the summaries it writes after it, are carried: one step
    planned from scratch, and the replay equals the reference."""
    session = session_of(chat(30), summaries=(Summary(text="before", covers=tuple(f"m{k}" for k in range(10))),))
    params = {"max_size": 8}
    answer = replays_incrementally("openhands-llm-summarizing", session, None, params)
    assert answer == "incremental"
    timeline = replayed(session, "openhands-llm-summarizing", params)
    assert len(timeline.summaries) > 1  # it wrote its own, then more on turns it carried
    assert timeline.scratch_steps == 1
    reference = simulate(session, "openhands-llm-summarizing", params, store=CountStore(), incremental=False)
    assert timeline.to_json() == reference.to_json()


def test_gemini_cli_after_its_first_compression_is_carried():
    """Gemini CLI's replay carries the turns after a compression too (it handed them all to the
    reference before), and so are the compressions: no turn is planned from scratch."""
    from ctxviz.io.loaders import load_session

    session = load_session(DATA / "real" / "gemini_cli" / "aim_matrix_flash.json")
    assert replays_incrementally("gemini-cli-compression", session) == "incremental"
    timeline = replayed(session, "gemini-cli-compression", {"tokenLimit": 80_000})
    first = next(k for k, t in enumerate(timeline.turns) if t.events)
    assert timeline.summaries and timeline.scratch_steps == 0 and first < len(timeline.turns) - 10


@settings(SETTINGS, max_examples=examples(25))
@given(s=sessions(), pair_safe=st.booleans())
def test_the_answer_is_what_simulate_does(s, pair_safe):
    """For every policy on random sessions: 'from scratch' plans every step from scratch; a plain
    'incremental' leaves some step to the replayer."""
    options = PlanOptions(pair_safe=pair_safe)
    store = CountStore()
    for name in REPLAYERS:
        params = get_policy(name).default_params()
        answer = replays_incrementally(name, s, options, params)
        timeline = simulate(s, name, params, store=store, options=options)
        if not timeline.turns:
            continue
        if answer.startswith("from scratch"):
            assert timeline.scratch_steps == len(timeline.turns), (name, answer)
        elif answer == "incremental" and len(timeline.turns) > 1:
            assert timeline.scratch_steps < len(timeline.turns), (name, answer, timeline.scratch_steps, len(timeline.turns))
