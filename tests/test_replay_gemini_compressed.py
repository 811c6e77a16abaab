"""Gemini CLI's replay after a compression is carried from turn to turn and equals the reference.

After a compression the plan holds the summary turn, its acknowledgement and the Contents of the
messages the summary does not cover, and truncates again the function responses up to the message
held when it compressed. Those truncations need more than 50,000 tokens of tool output, so the
tests lower Gemini CLI's function-response budget (a constant of its compression service) to make
them happen on small sessions and on a real log.
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies.gemini import service
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_replay_edits import edit_sessions
from .test_replay_incremental import SETTINGS, same

REAL = Path(__file__).parent / "data" / "real" / "gemini_cli"


def test_a_real_log_after_its_compression_is_carried():
    """aim_matrix_flash.json (159 messages) at a token limit of 80,000 compresses once, at turn 51
    of 79; with a function-response budget of 2,000 tokens the turns after it truncate older
    outputs again (to 200 characters, far fewer tokens than they had). The replay equals the reference, plans no turn from scratch (the
    compression is carried too), and says it is incremental."""
    from ctxviz.io.loaders import load_session

    session = load_session(REAL / "aim_matrix_flash.json")
    params = {"tokenLimit": 80_000, "truncateToolOutputThreshold": 200}
    with mock.patch.object(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", 2_000):
        store = CountStore()
        fast = simulate(session, "gemini-cli-compression", params, store=store)
        reference = simulate(session, "gemini-cli-compression", params, store=store, incremental=False)
    assert fast.to_json() == reference.to_json()
    assert len(fast.summaries) == 1 and fast.scratch_steps == 0
    compressed = next(k for k, t in enumerate(fast.turns) if t.summaries)
    assert compressed < len(fast.turns) - 10 and all(t.truncated for t in fast.turns[compressed:])
    whole = simulate(session, "gemini-cli-compression", {**params, "truncateToolOutputThreshold": 40_000}, store=store)
    assert fast.turns[-1].tokens_sent < whole.turns[-1].tokens_sent - 1_000  # the truncated outputs are sent shorter
    assert replays_incrementally("gemini-cli-compression", session, PlanOptions(), params) == "incremental"


@settings(SETTINGS, max_examples=examples(25))
@given(s=edit_sessions(), limit=st.integers(100, 6000), threshold=st.sampled_from([0.05, 0.3, 0.5, 0.9]),
       budget=st.sampled_from([0, 20, 20, 200, 50_000]), chars=st.sampled_from([0, 50, 50, 40_000]), pair_safe=st.booleans())
def test_replay_after_compressions_equals_the_reference(s, limit, threshold, budget, chars, pair_safe):
    """Random agent logs at small token limits, so that they compress, often more than once, with
    and without outputs truncated after each compression, with and without pair safety (carried:
    it drops what the compression's cut leaves without its partner, truncated outputs included)."""
    params = {"tokenLimit": limit, "compressionThreshold": threshold, "truncateToolOutputThreshold": chars}
    with mock.patch.object(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", budget):
        same(s, "gemini-cli-compression", params, PlanOptions(pair_safe=pair_safe))


def test_pair_safety_on_a_real_log_is_carried():
    """aim_matrix_flash.json with pair safety, before and after its compression, one step per
    message (so that a call is sent before its result is in): the replay equals the reference,
    drops what pair safety drops, plans no turn from scratch, and says it is incremental."""
    from ctxviz.io.loaders import load_session

    session = load_session(REAL / "aim_matrix_flash.json")
    options = PlanOptions(pair_safe=True)
    for params, compressions in (({}, 0), ({"tokenLimit": 80_000}, 1)):
        store = CountStore()
        fast = simulate(session, "gemini-cli-compression", params, store=store, options=options, per_message=True)
        reference = simulate(session, "gemini-cli-compression", params, store=store, options=options, incremental=False, per_message=True)
        assert fast.to_json() == reference.to_json()
        assert any(t.dropped for t in fast.turns) and fast.scratch_steps == 0 and len(fast.summaries) == compressions
        assert replays_incrementally("gemini-cli-compression", session, options, params) == "incremental"


def test_another_summarizer_compresses_from_scratch_and_equals_the_reference():
    """The carried compression writes the offline snapshot; with another summarizer the turns that
    compress are planned by the reference (the summary the summarizer writes is what the next
    turns send), and the replay still equals the reference."""
    from ctxviz.io.loaders import load_session

    class Marked:
        def supyagent_snapshot(self, messages):
            return f"{len(messages)} messages, the last {messages[-1].id}"

    session = load_session(REAL / "aim_matrix_flash.json")
    params = {"tokenLimit": 80_000}
    store = CountStore()
    fast = simulate(session, "gemini-cli-compression", params, store=store, summarizer=Marked())
    reference = simulate(session, "gemini-cli-compression", params, store=store, summarizer=Marked(), incremental=False)
    assert fast.to_json() == reference.to_json()
    assert len(fast.summaries) == 1 and fast.scratch_steps == 1 and "messages, the last" in fast.summaries[0].text
