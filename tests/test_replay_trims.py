"""The incremental replays of the trimming policies (each in
ctxviz/engine/policies/<framework>/replay.py) give exactly the
reference replay's turns and events (hypothesis), on random sessions with small budgets (trims,
pops and overflows at most turns) and on the wide ranges of test_properties."""

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.autogen.replay import REPLAYERS as AUTOGEN
from ctxviz.engine.policies.autogen.replay import AutoGenTokenLimitedReplay
from ctxviz.engine.policies.autogen.token_limited import middle_pops
from ctxviz.engine.policies.langchain.replay import LangChainTrimReplay
from ctxviz.engine.policies.llamaindex.replay import LlamaIndexReplay
from ctxviz.engine.policies.strands.replay import StrandsSlidingReplay
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.session import ImagePart, Message, Session, TextPart, ToolDefinition
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_properties import PARAMS as WIDE
from .test_replay_incremental import SETTINGS, same, sessions

TRIMS = {**AUTOGEN, "llamaindex-chat-memory-buffer": LlamaIndexReplay, "langchain-trim": LangChainTrimReplay, "strands-sliding-window": StrandsSlidingReplay}
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


@settings(SETTINGS, max_examples=examples(30))
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


@settings(SETTINGS, max_examples=examples(25))
@given(words=st.lists(st.sampled_from(["a", " ", "\n", "  x", "y ", "", "\t", "word"]), min_size=1, max_size=30), data=st.data())
def test_llamaindex_replay_where_whitespace_meets_whitespace(words, data):
    """Messages that begin or end in whitespace (the buffer's joined count then spans the join) and
    empty ones, which the replay hands to the reference step turn by turn."""
    roles = data.draw(st.lists(st.sampled_from(["user", "assistant", "tool", "system"]), min_size=len(words), max_size=len(words)))
    messages = tuple(Message(id=f"m{i}", index=i, role=role, parts=(TextPart(w),) if w else ()) for i, (w, role) in enumerate(zip(words, roles, strict=True)))
    s = Session(messages=messages, source="<test>", format="test")
    same(s, "llamaindex-chat-memory-buffer", data.draw(SMALL["llamaindex-chat-memory-buffer"]), PlanOptions())


IMAGE = ImagePart("data:image/png;base64," + "iVBORw0KGgo" * 8, "image/png")


@settings(SETTINGS, max_examples=examples(20))
@given(s=agent_sessions(), data=st.data())
def test_strands_replay_with_overflows_equals_the_reference(s, data):
    """Strands' overflow recovery (tool results cut to 200 + 200 characters, images replaced by a
    placeholder, then trims), proactive compression and per_turn, at every model call: what each
    call did stays in the history the next one starts from."""
    long = "x" * 450 + " " + "y" * 30
    extras = st.sampled_from([(), (TextPart(long), IMAGE), (IMAGE,), (TextPart(long),)])
    messages = tuple(dataclasses.replace(m, parts=(*m.parts, *data.draw(extras))) if m.role == "tool" else m for m in s.messages)
    s = dataclasses.replace(s, messages=messages, summaries=())
    params = data.draw(st.builds(dict, window_size=st.integers(0, 10), pin_first=st.none() | st.integers(0, 4),
                                 context_window_limit=st.integers(20, 1500), should_truncate_results=st.booleans(),
                                 proactive_compression=st.none() | st.floats(0.05, 1), per_turn=st.sampled_from([0, 0, 1, 2, 3])))
    same(s, "strands-sliding-window", params, PlanOptions())


def test_strands_replay_where_images_are_replaced():
    """Tool results whose images overflow recovery replaces by the placeholder (REPLACED: trimmed,
    as the trim events say) and whose texts it cuts, seeded so that the case is always there."""
    import random

    from ctxviz.engine.session import ToolCallPart, ToolResultPart

    rng = random.Random(1)
    replaced = 0
    for _ in range(25):
        messages = []
        for i in range(40):
            kind = rng.choice(["user", "call", "tool", "tool", "assistant"])
            if kind == "call":
                messages.append(Message(id=f"m{i}", index=i, role="assistant", parts=(ToolCallPart(f"c{i}", "read", "{}"),)))
            elif kind == "tool":
                extra = rng.choice([(), (IMAGE,), (TextPart("x" * 450),), (IMAGE, TextPart("y" * 500))])
                messages.append(Message(id=f"m{i}", index=i, role="tool", tool_call_id=f"c{i - 1}",
                                        parts=(ToolResultPart(f"c{i - 1}", "ok " * rng.randint(1, 30)), *extra)))
            else:
                messages.append(Message(id=f"m{i}", index=i, role=kind, parts=(TextPart("w " * rng.randint(1, 80)),)))
        s = Session(messages=tuple(messages), source="<test>", format="test")
        params = {"window_size": rng.randint(0, 12), "context_window_limit": rng.randint(50, 800), "pin_first": rng.choice([None, 1, 2]),
                  "proactive_compression": rng.choice([None, 0.5])}
        same(s, "strands-sliding-window", params, PlanOptions())
        replaced += sum("replaced by the placeholder" in e.message for e in simulate(s, "strands-sliding-window", params).events)
    assert replaced  # the case is exercised


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
