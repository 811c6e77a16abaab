"""OpenHands' LLMSummarizingCondenser carries the compactions a Claude Code log records (issue 22,
"every replay incremental"): while the policy has written no summary of its own, its plan reads the
latest recorded summary in force, sent as a user message where the messages it covers were, and
its View is that of the messages after them (the observations of the calls it covers left out).
The replayer rebuilds that View from the first message a recorded summary leaves, when what is in
force changes, instead of handing every turn from the first recorded summary on to the reference
step. Each replay equals the reference (plan every prefix), step by step (every Turn field and
event text, the compaction events included), with and without pair safety, on the real Claude Code
logs with compactions, the bench's tiled log and random logs with compactions as Claude Code
writes them (second observations of a call, system messages, orphan results among them).
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.openhands.replay import OpenhandsCondenserReplay
from ctxviz.engine.policies.replay_recorded import _RecordedShapes
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.session import Summary
from ctxviz.io.loaders import load_session

from .hypothesis_budget import examples
from .test_replay_honesty import chat, replayed, session_of
from .test_replay_incremental import SETTINGS, same
from .test_replay_recorded import compacted
from .test_replay_recorded_edits import LOGS, carried, tiled
from .test_replay_summaries import SMALL

POLICY = "openhands-llm-summarizing"
#: Its defaults (it never condenses these logs), then parameters that make it condense them.
PARAMS = [{}, {"max_size": 12, "keep_first": 0}, {"max_size": 16, "keep_first": 1}, {"max_tokens": 3000}]
#: Budgets at which it condenses the random logs below over their recorded summaries, and again after.
TIGHT = st.builds(dict, max_size=st.integers(8, 14), keep_first=st.integers(0, 2), max_tokens=st.sampled_from([None, None, 300, 800, 2000]),
                  minimum_progress=st.sampled_from([0.1, 0.3]))


def test_real_logs_with_compactions_are_carried():
    """One step per model call without pair safety and one per message with it; at the defaults no
    step is planned from scratch, and the others condense over the recorded compactions or after them."""
    sessions = [load_session(p) for p in LOGS] + [tiled(120)]
    events = written = viewed = 0
    for session in sessions:
        assert session.summaries and _RecordedShapes.of(session).why_not is None
        # (a log whose calls carry thinking blocks has tool loops: the View's state is not carried, `scratch_reason`)
        view = OpenhandsCondenserReplay.scratch_reason(session, None) is None
        viewed += view
        for n, params in enumerate(PARAMS):
            for pair_safe in (False, True):
                options = PlanOptions(pair_safe=pair_safe)
                fast = carried(session, POLICY, params, options, per_message=pair_safe)
                if n == 0 and view:
                    assert fast.scratch_steps == 0, pair_safe
                    assert replays_incrementally(POLICY, session, options, params) == "incremental"
                events += sum(e.kind == "compaction" for t in fast.turns for e in t.events)
                written += len(fast.summaries)
    assert viewed >= 3 and events > 10 and written > 2, (viewed, events, written)  # the compactions' events were compared, and the policy condensed


def test_the_bench_tiled_log_plans_no_step_from_scratch():
    """The bench's tiled real log (many compactions, each covering everything before it), at the
    defaults as the bench replays it, with and without pair safety."""
    session = tiled(250)
    assert len(session.summaries) > 15
    for pair_safe in (False, True):
        options = PlanOptions(pair_safe=pair_safe)
        fast = carried(session, POLICY, {}, options, per_message=False)
        assert fast.scratch_steps == 0, pair_safe
        assert replays_incrementally(POLICY, session, options) == "incremental"


def test_summaries_with_gaps_are_handed_over_until_it_writes_its_own():
    """A recorded summary that covers the file's messages with gaps is no prefix: the turns from it
    on go to the reference step until the policy writes a summary of its own, which the replay then
    takes over; the answer says so."""
    gapped = session_of(chat(30), summaries=(Summary(text="before", covers=tuple(f"m{k}" for k in range(10) if k != 4)),))
    start = gapped.summary_start_turns[0]
    assert replays_incrementally(POLICY, gapped) == ("incremental, then from scratch (the turns from the first recorded summary of the file's "
                                                     "messages on, until the policy writes a summary of its own: a recorded summary that "
                                                     "covers the file's messages with gaps)")
    timeline = replayed(gapped, POLICY)
    assert not timeline.summaries
    assert timeline.scratch_steps == sum(max(t.index, t.horizon) >= start for t in timeline.turns) > 0
    params = {"max_size": 8}
    timeline = replayed(gapped, POLICY, params)
    first = next(t.index for t in timeline.turns if any(e.kind == "summary" for e in t.events))
    assert len(timeline.summaries) > 1
    assert timeline.scratch_steps == sum(start <= max(t.index, t.horizon) and t.index <= first for t in timeline.turns)
    same(gapped, POLICY, params, PlanOptions())


@st.composite
def compacted_agent_logs(draw):
    """`compacted` logs, sometimes with a call's result logged twice (OpenHands'
    ObservationUniquenessProperty; inserted after the compactions' boundaries were drawn, so a
    summary's covers can come out with a gap)."""
    s = draw(compacted())
    messages = list(s.messages)
    results = [m for m in messages if m.role == "tool"]
    if results and draw(st.booleans()):
        again = draw(st.sampled_from(results))
        at = draw(st.integers(again.index + 1, len(messages)))
        messages.insert(at, dataclasses.replace(again, id=f"again-{again.id}"))
    return dataclasses.replace(s, messages=tuple(dataclasses.replace(m, index=k) for k, m in enumerate(messages)))


@settings(SETTINGS, max_examples=examples(24))
@given(s=compacted_agent_logs(), data=st.data())
def test_random_logs_with_compactions_equal_the_reference(s, data):
    """At the small budgets of the summary replay tests, tight ones (it condenses over the recorded
    summaries: the reference step writes that summary, the replay takes it over and writes the next
    ones itself), its defaults or the parameters above, with and without pair safety; where every summary covers a prefix of the file, the answer names no
    recorded summary."""
    params = data.draw(st.sampled_from([SMALL[POLICY], TIGHT, st.sampled_from(PARAMS)]).flatmap(lambda x: x))
    options = PlanOptions(pair_safe=data.draw(st.booleans()))
    same(s, POLICY, params, options)
    how = replays_incrementally(POLICY, s, options, params)
    if _RecordedShapes.of(s).why_not is None:
        assert "recorded summary" not in how, how
