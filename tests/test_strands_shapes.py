"""The Strands summarizing replayer reads the messages after its summary as shapes (role, members,
tokens, block kinds), not rendered Strands messages: they must say what `messages.conversation`'s
Strands messages say wherever `summarize_oldest` reads them (hypothesis, against the rendering).
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.strands.messages import block_kinds, blocks, conversation
from ctxviz.engine.policies.strands.replay import StrandsSummarizingReplay
from ctxviz.engine.policies.strands.summarizing import summarize_oldest
from ctxviz.engine.session import (
    FileRefPart,
    ImagePart,
    Message,
    OpaquePart,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from ctxviz.engine.summarizers import ExtractiveSummarizer

from .hypothesis_budget import examples

IDS = st.sampled_from(["", "c1", "c2", "c3"])
PARTS = st.one_of(
    st.builds(TextPart, st.sampled_from(["", "hello", "decided to use x.py"])),
    st.builds(ImagePart, st.sampled_from(["", "data:image/png;base64,aGk="]), st.sampled_from(["", "image/png"])),
    st.builds(ToolCallPart, IDS, st.sampled_from(["read", "edit"]), st.sampled_from(["{}", '{"path": "a.py"}', "not json"])),
    st.builds(ToolResultPart, IDS, st.sampled_from(["ok", "error: no"]), st.booleans()),
    st.builds(ThinkingPart, st.sampled_from(["", "hmm"])),
    st.builds(FileRefPart, st.sampled_from(["a.py", "b.md"])),
    st.builds(OpaquePart, st.sampled_from(["x", "y"]), st.sampled_from(["", "{}"])),
)
MESSAGES = st.tuples(st.sampled_from(["user", "assistant", "tool", "tool", "system"]), st.lists(PARTS, max_size=3), IDS)


def session_of(drawn: list[tuple[str, list, str]]) -> Session:
    messages = tuple(Message(id=f"m{i}", index=i, role=role, parts=tuple(parts), tool_call_id=call if role == "tool" else "")
                     for i, (role, parts, call) in enumerate(drawn))
    return Session(messages=messages, source="<test>", format="test")


@settings(max_examples=examples(200), deadline=None)
@given(MESSAGES)
def test_block_kinds_are_the_keys_of_the_rendered_blocks(drawn):
    m = session_of([drawn]).messages[0]
    assert block_kinds(m) == frozenset(k for block in blocks(m) for k in block)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(MESSAGES, min_size=1, max_size=30), st.data())
def test_the_shapes_after_the_summary_read_as_the_rendered_messages(drawn, data):
    session = session_of(drawn)
    policy = get_policy("strands-summarizing")
    params = policy.make_params({})
    full = CountStore().get(session, policy.scheme(None, session.model))
    replay = StrandsSummarizingReplay(session, "strands-summarizing", params, full, ExtractiveSummarizer(), False)
    for i in range(len(session.messages)):
        replay.absorb(i)
        history = replay.history
        # The summary in force moves forward (or stays) as the replay goes on: the shapes are carried.
        c = data.draw(st.integers(replay.rest_from if replay.rest_to else 0, len(history)))
        shapes = replay._rest(c)
        after = set(history[c:])
        rest = dataclasses.replace(session, messages=tuple(m for m in session.messages[: i + 1] if m.index in after))
        rendered = conversation(rest, full.message_tokens)[1]
        assert [(s.role, s.members, s.tokens, s.pinned) for s in shapes] == [(r.role, r.members, r.tokens, r.pinned) for r in rendered]
        for key in ("toolUse", "toolResult", "text", "image", "reasoningContent"):
            assert [s.has(key) for s in shapes] == [r.has(key) for r in rendered]
        assert [s.tool_ids() for s in shapes] == [r.tool_ids() for r in rendered]
        # summarize_oldest splits the shapes where it splits the rendered messages.
        ratio, preserve = data.draw(st.floats(0.1, 0.8)), data.draw(st.integers(0, 4))
        assert summarize_oldest(list(shapes), ratio, preserve, None, False) == summarize_oldest(rendered, ratio, preserve, None, False)
