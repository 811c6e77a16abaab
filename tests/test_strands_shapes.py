"""The Strands replayers hold the agent's messages `Unrendered` (their blocks rendered when first
read, their kinds found without them): they must say what `messages.conversation`'s rendered
Strands messages say, their kinds before their blocks are read (hypothesis, against the rendering).
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.strands.messages import StrandsMessage, block_kinds, blocks, conversation, held
from ctxviz.engine.policies.strands.replay import StrandsSummarizingReplay, _agent_messages, _Holding
from ctxviz.engine.policies.strands.summarizing import oldest_split, summarize_oldest
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


KEYS = ("toolUse", "toolResult", "text", "image", "reasoningContent")


def same_messages(unrendered, rendered) -> None:
    """The unrendered messages say what the rendered ones say: kinds first (before any block is rendered)."""
    assert [[u.has(key) for key in KEYS] for u in unrendered] == [[r.has(key) for key in KEYS] for r in rendered]
    fields = [f.name for f in dataclasses.fields(StrandsMessage) if f.name != "content"] + ["_kinds", "_ids"]
    assert all(name in vars(u) for u in unrendered for name in fields)  # (it sets StrandsMessage's fields itself)
    assert [(u.role, u.members, u.tokens, u.pinned, u.changed) for u in unrendered] == \
        [(r.role, r.members, r.tokens, r.pinned, r.changed) for r in rendered]
    assert [u.tool_ids() for u in unrendered] == [r.tool_ids() for r in rendered]
    assert [u.content for u in unrendered] == [r.content for r in rendered]
    # A copy (the manager pins or cuts one so) is handed the rendered blocks.
    copies = [dataclasses.replace(u, pinned=True) for u in unrendered]
    assert [(c.content, c.members, c.tokens, c.pinned, [c.has(key) for key in KEYS]) for c in copies] == \
        [(r.content, r.members, r.tokens, True, [r.has(key) for key in KEYS]) for r in rendered]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(MESSAGES, max_size=30))
def test_the_sliding_replays_agent_messages_are_the_sessions_strands_messages(drawn):
    session = session_of(drawn)
    policy = get_policy("strands-sliding-window")
    full = CountStore().get(session, policy.scheme(None, session.model))
    pending, owners, message_of, completes = _agent_messages(session, full.message_tokens)
    start = held(session, full)  # (no summary: every message)
    same_messages(pending, start.messages)
    assert owners == list(start.owners)
    assert message_of == [next((k for k, sm in enumerate(pending) if i in sm.members), -1) for i in range(len(session.messages))]
    assert completes == [next((k for k, sm in enumerate(pending) if sm.members[-1] == i), -1) for i in range(len(session.messages))]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(MESSAGES, min_size=1, max_size=30), st.data())
def test_the_messages_after_the_summary_read_as_the_rendered_ones(drawn, data):
    """The summarizing replay reads the messages it holds through a view (`_Holding`, made from
    where the Strands messages start): for any summary cover c (also one that cuts a run of tool
    messages) it is the summary's message and `conversation` of history[c:], and Strands splits
    it where it splits those rendered."""
    session = session_of(drawn)
    policy = get_policy("strands-summarizing")
    params = policy.make_params({})
    full = CountStore().get(session, policy.scheme(None, session.model))
    replay = StrandsSummarizingReplay(session, "strands-summarizing", params, full, ExtractiveSummarizer(), False)
    replay.summary_text, replay.summary_tokens = "the summary", 3
    for i in range(len(session.messages)):
        replay.absorb(i)
        history = replay.history
        c = data.draw(st.integers(0, len(history)))
        has_summary = data.draw(st.booleans())
        holding = _Holding(replay, c, has_summary)
        after = set(history[c:])
        rest = dataclasses.replace(session, messages=tuple(m for m in session.messages[: i + 1] if m.index in after))
        rendered = ([StrandsMessage("user", [{"text": "the summary"}], (), tokens=3)] if has_summary else []) + \
            conversation(rest, full.message_tokens)[1]
        assert len(holding) == len(rendered)
        # Where each message starts (past the last: the history's end), as its first member says.
        starts = [history.index(sm.members[0]) if sm.members else c for sm in rendered] + [len(history)]
        assert [holding.start(k) for k in range(len(rendered) + 1)] == starts
        # Strands splits them where it splits the rendered messages (before anything renders them).
        ratio, preserve = data.draw(st.floats(0.1, 0.8)), data.draw(st.integers(0, 4))
        assert oldest_split(holding, ratio, preserve) == oldest_split(rendered, ratio, preserve)
        split = summarize_oldest(rendered, ratio, preserve, None, False)
        assert (split.split, split.asked, split.error) == oldest_split(rendered, ratio, preserve)
        assert split.summarized == (tuple(range(split.split)) if split.ok else ())
        shapes = list(holding)
        assert holding[-1:] == shapes[-1:]
        if has_summary:
            assert (shapes[0].role, shapes[0].content, shapes[0].members, shapes[0].tokens) == ("user", [{"text": "the summary"}], (), 3)
        same_messages(shapes[has_summary:], rendered[has_summary:])
