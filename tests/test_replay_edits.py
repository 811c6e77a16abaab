"""The incremental replayers of the policies that edit or compact the history (each in
ctxviz/engine/policies/<framework>/replay.py) give exactly the reference replay's
turns, events and summaries (hypothesis), on sessions with thinking blocks, reported usage, tool
names an exclusion can name, and budgets small enough that triggers, clearings and overflows
happen often."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.anthropic.replay import REPLAYERS as ANTHROPIC
from ctxviz.engine.policies.claude_code.replay import ClaudeCodeReplay
from ctxviz.engine.policies.codex.replay import CodexReplay
from ctxviz.engine.policies.gemini.replay import GeminiCliReplay
from ctxviz.engine.policies.langchain.replay import LangChainContextEditingReplay
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.session import (
    Message,
    Session,
    Summary,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    default_category,
)

from .test_properties import PARAMS as WIDE
from .test_replay_incremental import SETTINGS, same, sessions

REPLAYERS = {**ANTHROPIC, "langchain-context-editing": LangChainContextEditingReplay, "claude-code": ClaudeCodeReplay,
             "codex-compaction": CodexReplay, "gemini-cli-compression": GeminiCliReplay}
SMALL = {
    "anthropic-clear-thinking": st.builds(dict, keep=st.sampled_from(["thinking_turns:1", "thinking_turns:2", "thinking_turns:3", "all"]),
                                          context_window=st.integers(1, 4000)),
    "anthropic-clear-tool-uses": st.builds(
        dict, trigger=st.sampled_from(["input_tokens:0", "input_tokens:300", "input_tokens:1500", "tool_uses:0", "tool_uses:2", "tool_uses:5"]),
        keep=st.sampled_from(["tool_uses:0", "tool_uses:1", "tool_uses:3"]), clear_at_least=st.sampled_from([None, "input_tokens:0", "input_tokens:40", "input_tokens:400"]),
        exclude_tools=st.sampled_from(["", "shell", "read,shell"]), clear_tool_inputs=st.sampled_from(["true", "false", "read"]),
        placeholder=st.sampled_from(["[cleared]", "a much longer placeholder text than most results " * 3]), context_window=st.integers(1, 4000)),
    "langchain-context-editing": st.builds(
        dict, trigger=st.integers(0, 3000), keep=st.integers(0, 5), clear_at_least=st.sampled_from([0, 0, 1, 30, 300]),
        clear_tool_inputs=st.booleans(), exclude_tools=st.sampled_from(["", "shell", "read"]),
        placeholder=st.sampled_from(["[cleared]", "a much longer placeholder text than most results " * 3])),
    "claude-code": st.builds(dict, context_window=st.integers(300, 6000), autocompact_buffer=st.integers(0, 3000),
                             max_output_tokens_for_summary=st.integers(0, 3000), autocompact_pct_override=st.one_of(st.none(), st.floats(0.5, 100)),
                             calibrated_trigger=st.one_of(st.none(), st.integers(1, 3000))),
    "codex-compaction": st.builds(dict, model_context_window=st.one_of(st.none(), st.integers(200, 6000)),
                                  model_auto_compact_token_limit=st.one_of(st.none(), st.integers(50, 4000)),
                                  compact_user_message_max_tokens=st.sampled_from([0, 5, 50, 500, 20000])),
    "gemini-cli-compression": st.builds(dict, tokenLimit=st.integers(100, 8000), compressionThreshold=st.floats(0.05, 1),
                                        truncateToolOutputThreshold=st.sampled_from([0, 50, 40000])),
}


TEXT = st.sampled_from(["", "ok", "edit src/a.py", "decided to use sqlite", "word " * 30, "x" * 400, "line\n" * 80])


#: What Codex takes for its initial context, not the user's own words.
INJECTED = st.sampled_from(["# AGENTS.md instructions for /repo\n\nbe brief", "<environment_context>cwd=/repo</environment_context>"])


@st.composite
def agent_sessions(draw):
    """An agent's log: user turns, assistant messages with one or more tool calls each answered
    (mostly at once, sometimes after another message or never), system messages now and then."""
    messages: list[Message] = []
    summaries = []

    def add(role: str, parts: tuple, call_id: str = "") -> None:
        i = len(messages)
        messages.append(Message(id=f"m{i}", index=i, role=role, parts=parts, tool_call_id=call_id, category=default_category(role)))

    for _ in range(draw(st.integers(1, 12))):
        add(draw(st.sampled_from(["user"] * 5 + ["system"])), (TextPart(draw(TEXT | INJECTED) or "go"),))
        for _ in range(draw(st.integers(0, 3))):
            calls = [f"c{len(messages)}_{k}" for k in range(draw(st.integers(1, 2)))]
            text = draw(TEXT)
            add("assistant", ((TextPart(text),) if text else ()) + tuple(ToolCallPart(c, "read", draw(st.sampled_from(["{}", '{"path": "src/a.py"}', '{"q": "' + "y" * 200 + '"}'])))
                                                                  for c in calls))
            if draw(st.integers(0, 5)) == 0:
                add("assistant", (TextPart("meanwhile"),))
            for c in calls:
                if draw(st.integers(0, 8)):
                    add("tool", (ToolResultPart(c, draw(TEXT) or "ok"),), c)
        if draw(st.booleans()):
            add("assistant", (TextPart(draw(TEXT) or "done"),))
    if draw(st.integers(0, 5)) == 0:
        end = draw(st.integers(0, len(messages) - 1))
        covers = tuple(m.id for m in messages[: end + 1])
        summaries.append(Summary(text="earlier work", messages_covered=len(covers), covers=covers))
    return Session(messages=tuple(messages), source="<test>", format="test", system_prompt=draw(st.sampled_from(["", "You are terse."])),
                   summaries=tuple(summaries))


@st.composite
def edit_sessions(draw):
    """Agent logs and `sessions()`'s odder ones, with some assistant messages thinking, some
    reporting usage, and calls to two tools."""
    s = draw(st.one_of(agent_sessions(), agent_sessions(), sessions()))
    messages = []
    for m in s.messages:
        if m.role == "assistant":
            parts = tuple(dataclasses.replace(p, name=draw(st.sampled_from(["read", "shell"]))) if isinstance(p, ToolCallPart) else p for p in m.parts)
            if draw(st.integers(0, 2)) == 0:
                parts = (ThinkingPart(draw(st.sampled_from(["hmm", "let me think about the file " * 20]))),) + parts
            usage = Usage(input_tokens=draw(st.integers(0, 3000)), output_tokens=draw(st.integers(0, 200))) if draw(st.integers(0, 4)) == 0 else None
            m = dataclasses.replace(m, parts=parts, usage=usage)
        messages.append(m)
    return dataclasses.replace(s, messages=tuple(messages))


@pytest.mark.parametrize("name", sorted(REPLAYERS))
@settings(SETTINGS, max_examples=20)
@given(s=edit_sessions(), data=st.data())
def test_edits_replay_equals_the_reference(name, s, data):
    params = data.draw(SMALL[name] if data.draw(st.integers(0, 4)) else WIDE[name])
    same(s, name, params, PlanOptions(pair_safe=data.draw(st.integers(0, 3)) == 0))


@pytest.mark.parametrize("name", sorted(REPLAYERS))
@settings(SETTINGS, max_examples=6)
@given(s=edit_sessions(), pair_safe=st.booleans())
def test_edits_replay_equals_the_reference_with_default_params(name, s, pair_safe):
    same(s, name, {}, PlanOptions(pair_safe=pair_safe))


def test_the_edit_policies_replay_incrementally():
    for name in REPLAYERS:
        assert replays_incrementally(name) == "incremental"


def test_a_reported_usage_of_zero_tokens_is_counted_from_in_neither_replay():
    """Claude Code's count starts from the last usage that measured a window: a report of 0 tokens
    (a message Claude Code wrote itself) measured nothing. The replayer counted from it and sent 0
    tokens where the reference sent the messages' estimate (hypothesis found it)."""
    from .builders import session

    s = session(("user", "please go on"), ("assistant", "meanwhile"), ("user", "please go on"), ("user", "and on"))
    zero = Usage(input_tokens=0, output_tokens=0)
    s = dataclasses.replace(s, messages=tuple(dataclasses.replace(m, usage=zero) if m.role == "assistant" else m for m in s.messages))
    params = {"context_window": 1000, "autocompact_buffer": 0, "max_output_tokens_for_summary": 0}  # no compaction
    same(s, "claude-code", params, PlanOptions())
    from ctxviz.engine.simulate import simulate

    assert all(t.tokens_sent > 0 for t in simulate(s, "claude-code", params).turns)


def test_codex_developer_messages_written_mid_conversation_replay_as_history_items():
    """A real rollout whose developer messages after the first user message (a changed sandbox or
    approval policy) Codex sent in place: the replayer takes them into the history as the policy
    does, and a compaction covers those before it like any history item (issue 20)."""
    from pathlib import Path

    from ctxviz.engine.plan import Decision
    from ctxviz.engine.simulate import simulate
    from ctxviz.io.loaders import load_session

    path = Path(__file__).parent / "data" / "real" / "codex" / "localpush-rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl"
    s = load_session(str(path))
    first_other = next(m.index for m in s.messages if m.role != "system")
    later = [m.index for m in s.messages if m.role == "system" and m.index > first_other]
    assert len(later) >= 10
    compacting = {"model_auto_compact_token_limit": 20_000}
    for params in ({}, compacting):
        same(s, "codex-compaction", params, PlanOptions())
    tl = simulate(s, "codex-compaction", compacting)
    (at,) = [e.turn for e in tl.events if e.kind == "compaction"]
    plan = tl.plan_at(len(tl.turns) - 1)
    decided = {i: plan.messages[i] for i in later if i < len(plan.messages)}  # those the last call's request holds
    assert any(i <= at for i in decided) and any(i > at for i in decided)
    assert {d.decision for i, d in decided.items() if i <= at} == {Decision.SUMMARIZED}
    assert all(d.decision is Decision.KEPT and d.zone == "history" for i, d in decided.items() if i > at)
    assert [i for i in plan.context_index if i is not None and i > at] == sorted(i for i in plan.context_index if i is not None and i > at)
