"""The incremental replays of the trimming policies (ctxviz.engine.replay_trims) give exactly the
reference replay's turns and events (hypothesis), on random sessions with small budgets (trims,
pops and overflows at most turns) and on the wide ranges of test_properties."""

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.autogen_token_limited import middle_pops
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.replay_trims import REPLAYERS as TRIMS
from ctxviz.engine.replay_trims import AutoGenTokenLimitedReplay
from ctxviz.engine.session import Message, Session, TextPart, ToolDefinition

from .test_properties import PARAMS as WIDE
from .test_replay_incremental import SETTINGS, same, sessions

SMALL = {
    "autogen-buffered": st.builds(dict, buffer_size=st.integers(1, 8)),
    "autogen-head-and-tail": st.builds(dict, head_size=st.integers(1, 5), tail_size=st.integers(1, 6)),
    "autogen-token-limited": st.builds(dict, token_limit=st.one_of(st.none(), st.integers(1, 3000)), tool_schema=st.booleans()),
    "llamaindex-chat-memory-buffer": st.builds(dict, token_limit=st.integers(1, 3000), initial_token_count=st.one_of(st.none(), st.integers(0, 300)),
                                               context_window=st.one_of(st.none(), st.integers(1, 4000))),
    "langchain-trim": st.one_of(
        st.builds(dict, max_tokens=st.integers(0, 1500), strategy=st.just("last"), allow_partial=st.booleans(), include_system=st.booleans(),
                  start_on=st.sampled_from(["", "human", "ai", "human,tool", "system"]), end_on=st.sampled_from(["", "ai", "human,tool", "tool"]),
                  text_splitter=st.sampled_from(["", " ", "\\n"])),
        st.builds(dict, max_tokens=st.integers(0, 1500), strategy=st.just("first"), allow_partial=st.booleans(),
                  end_on=st.sampled_from(["", "ai", "tool", "human,system"]), text_splitter=st.sampled_from(["", " "]))),
    "strands-sliding-window": st.builds(dict, window_size=st.integers(0, 8), pin_first=st.none() | st.integers(0, 4),
                                        context_window_limit=st.none() | st.integers(50, 3000), should_truncate_results=st.booleans(),
                                        proactive_compression=st.none() | st.floats(0.05, 1), per_turn=st.sampled_from([0, 0, 0, 1, 2]),
                                        replay_history=st.booleans() | st.just(True)),
}

TOOL = ToolDefinition("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string", "description": "where"}}})


@st.composite
def agent_sessions(draw):
    """The replay tests' sessions, mostly without recorded summaries, some with tool definitions (AutoGen's tool_schema) and a model
    AutoGen's table knows or does not (its limit is the budget)."""
    s = draw(sessions())
    if draw(st.integers(0, 3)):  # the common case most of the time: no recorded summary (the replay then falls back)
        s = dataclasses.replace(s, summaries=())
    return dataclasses.replace(s, tools=draw(st.sampled_from([(), (TOOL,)])), model=draw(st.sampled_from(["", "gpt-4", "gpt-3.5-turbo-0613", "unknown-model"])))


@settings(SETTINGS, max_examples=40)
@given(s=agent_sessions(), data=st.data())
def test_trim_replays_equal_the_reference(s, data):
    for name in TRIMS:
        params = data.draw(SMALL[name] if data.draw(st.integers(0, 3)) else WIDE[name])
        same(s, name, params, PlanOptions(pair_safe=not data.draw(st.integers(0, 3))))


@settings(SETTINGS, max_examples=10)
@given(s=agent_sessions(), pair_safe=st.booleans())
def test_trim_replays_with_default_params_equal_the_reference(s, pair_safe):
    for name in TRIMS:
        same(s, name, {}, PlanOptions(pair_safe=pair_safe))


@settings(SETTINGS, max_examples=25)
@given(words=st.lists(st.sampled_from(["a", " ", "\n", "  x", "y ", "", "\t", "word"]), min_size=1, max_size=30), data=st.data())
def test_llamaindex_replay_where_whitespace_meets_whitespace(words, data):
    """Messages that begin or end in whitespace (the buffer's joined count then spans the join) and
    empty ones, which the replay hands to the reference step turn by turn."""
    roles = data.draw(st.lists(st.sampled_from(["user", "assistant", "tool", "system"]), min_size=len(words), max_size=len(words)))
    messages = tuple(Message(id=f"m{i}", index=i, role=role, parts=(TextPart(w),) if w else ()) for i, (w, role) in enumerate(zip(words, roles, strict=True)))
    s = Session(messages=messages, source="<test>", format="test")
    same(s, "llamaindex-chat-memory-buffer", data.draw(SMALL["llamaindex-chat-memory-buffer"]), PlanOptions())


def test_the_middle_pops_are_one_run():
    for n in range(40):
        order = middle_pops(n)
        for k in range(n + 1):
            lo, hi = AutoGenTokenLimitedReplay.removed(n, k)
            assert set(range(lo, hi)) == set(order[:k]), (n, k)


def test_the_trim_replayers_are_registered():
    for name in TRIMS:
        assert REPLAYERS[name] is TRIMS[name]
        assert replays_incrementally(name) == "incremental"
