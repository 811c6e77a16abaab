"""Pair safety carried from turn to turn by the summarising replayers (LangChain's
SummarizationMiddleware, LlamaIndex's ChatSummaryMemoryBuffer, Strands' SummarizingConversationManager,
OpenHands' LLMSummarizingCondenser) and by LlamaIndex's ChatMemoryBuffer and Strands' sliding window:
each replay with `--pair-safe` equals the reference, which plans every prefix and applies
`apply_pair_safety` to it, on random logs with tool calls (broken pairs, results without a call,
calls never answered), on the samples and on real logs; `replays_incrementally` says it is
incremental, and pair safety plans no more steps from scratch than the replay without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.replay import replays_incrementally
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart, default_category
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_properties import PARAMS as WIDE
from .test_replay_incremental import SETTINGS, TEXT, same, sessions

ROOT = Path(__file__).parent.parent
PAIR_SAFE = PlanOptions(pair_safe=True)

# Budgets on the scale of the random sessions (a few thousand tokens), so that summaries, cuts and
# overflows happen often, and the wide ranges of test_properties.
SMALL = {
    "langchain-summarization": st.builds(dict, trigger=st.sampled_from(["tokens=400", "messages=6", "tokens=1500", "messages=15"]),
                                         keep=st.sampled_from(["messages=2", "messages=5", "tokens=300"]),
                                         max_input_tokens=st.sampled_from([0, 1200, 50000])),
    "llamaindex-chat-summary-memory-buffer": st.builds(dict, token_limit=st.integers(50, 3000), llm=st.booleans(), count_initial_tokens=st.booleans()),
    "strands-summarizing": st.builds(dict, summary_ratio=st.floats(0.1, 0.9), preserve_recent_messages=st.integers(0, 6),
                                     context_window_limit=st.integers(200, 4000)),
    "openhands-llm-summarizing": st.integers(4, 20).flatmap(lambda size: st.builds(
        dict, max_size=st.just(size), keep_first=st.integers(0, size // 2 - 2), max_tokens=st.none() | st.integers(200, 3000))),
    "llamaindex-chat-memory-buffer": st.builds(dict, token_limit=st.integers(50, 3000), initial_token_count=st.one_of(st.none(), st.integers(0, 100))),
    "strands-sliding-window": st.builds(dict, window_size=st.integers(2, 12), context_window_limit=st.integers(200, 4000),
                                        should_truncate_results=st.booleans(), proactive_compression=st.none() | st.floats(0.3, 1)),
}
POLICIES = list(SMALL)


def call_ids_shared(session) -> bool:
    ids = [c.id for m in session.messages for c in m.tool_calls if c.id]
    return len(set(ids)) != len(ids)


KINDS = st.sampled_from(["user", "assistant", "call", "call", "result", "result", "result", "repeat_result", "orphan_result", "user_call", "system"])


@st.composite
def paired_sessions(draw, texts=TEXT):
    """Agent logs whose tool calls pair in every way apply_pair_safety reads: results in order and
    out of it, a call answered twice, results without a call, calls never answered, a call on a
    user message (only an assistant sends one), system messages between."""
    size = draw(st.integers(1, 30))
    kinds = draw(st.lists(st.tuples(KINDS, texts), min_size=size, max_size=size))
    messages: list[Message] = []
    open_calls: list[str] = []
    answered: list[str] = []
    for i, (kind, text) in enumerate(kinds):
        parts: tuple = (TextPart(text),) if text else ()
        role, call_id = kind, ""
        if kind in ("call", "user_call"):
            role = "assistant" if kind == "call" else "user"
            ids = [f"c{i}_{k}" for k in range(draw(st.integers(1, 3)) if kind == "call" else 1)]
            open_calls += ids
            parts = parts + tuple(ToolCallPart(c, "read", "{}") for c in ids)
        elif kind in ("result", "repeat_result", "orphan_result"):
            role = "tool"
            if kind == "result" and open_calls:
                call_id = open_calls.pop(draw(st.integers(0, len(open_calls) - 1)))
                answered.append(call_id)
            elif kind == "repeat_result" and answered:
                call_id = draw(st.sampled_from(answered))
            else:
                call_id = f"missing{i}"
            parts = (ToolResultPart(call_id, text or "ok"),)
        messages.append(Message(id=f"m{i}", index=i, role=role, parts=parts, tool_call_id=call_id, category=default_category(role)))
    return Session(messages=tuple(messages), source="<test>", format="test", system_prompt=draw(st.sampled_from(["", "You are terse."])))


def same_and_carried(s, name, params) -> None:
    """The carried replay equals the reference, and replays from scratch only where it does without
    pair safety, or where a tool call id is on more than one call."""
    same(s, name, params, PAIR_SAFE)
    how = replays_incrementally(name, s, PAIR_SAFE, params)
    assert how == replays_incrementally(name, s, PlanOptions(), params) or call_ids_shared(s), how


@pytest.mark.parametrize("name", POLICIES)
def test_the_carried_replayer_says_it_is_incremental(name):
    assert replays_incrementally(name, pair_safe=True) == "incremental"


@pytest.mark.parametrize("name", POLICIES)
@settings(SETTINGS, max_examples=examples(12))
@given(s=st.one_of(sessions(), paired_sessions()), data=st.data())
def test_pair_safe_replay_equals_the_reference(name, s, data):
    """Random logs (with recorded summaries, categories, usage) and logs whose pairs are tangled."""
    params = data.draw(SMALL[name] if data.draw(st.integers(0, 3)) else WIDE[name])
    same_and_carried(s, name, params)


# Texts that start or end with whitespace: LlamaIndex's joined count recounts the runs of messages
# where whitespace meets whitespace across a join, and a dropped message's share holds its run's fix.
SPACED = st.lists(st.sampled_from(["", " ", "\n", " a ", "\nb", "c\n", "x", "  d  ", "edit src/a.py " * 5]), max_size=4).map("".join)


@settings(SETTINGS, max_examples=examples(12))
@given(s=paired_sessions(SPACED), data=st.data())
def test_chat_memory_buffer_drops_a_messages_share_of_the_joined_count(s, data):
    same_and_carried(s, "llamaindex-chat-memory-buffer", data.draw(SMALL["llamaindex-chat-memory-buffer"]))


REAL_PARAMS = {
    "langchain-summarization": {"trigger": "tokens=20000", "keep": "messages=10"},
    "llamaindex-chat-summary-memory-buffer": {"token_limit": 8000},
    "strands-summarizing": {"context_window_limit": 20000},
    "openhands-llm-summarizing": {"max_size": 40, "keep_first": 4},
    "llamaindex-chat-memory-buffer": {"token_limit": 6000},
    "strands-sliding-window": {"context_window_limit": 12000, "window_size": 20, "pin_first": 2},
}
LOGS = ["tests/data/real/claude_code/spotter-4d5611e5.jsonl",
        "tests/data/real/codex/codemie-rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl",
        "sample_sessions/coding_agent.yaml"]


@pytest.mark.parametrize("name", POLICIES)
def test_pair_safe_replay_of_real_logs_and_the_sample_is_carried(name):
    """A real Claude Code log, a real Codex rollout and the bundled coding-agent sample, one step per
    message (a call is sent before its result is in), at budgets where the policy summarises or
    trims: the carried replay equals the reference, pair safety drops messages on each, and it
    plans no more steps from scratch than the replay without it."""
    from ctxviz.io.loaders import load_session

    params = REAL_PARAMS[name]
    for path in LOGS:
        session = load_session(ROOT / path)
        store = CountStore()
        carried = simulate(session, name, params, store=store, options=PAIR_SAFE, per_message=True)
        reference = simulate(session, name, params, store=store, options=PAIR_SAFE, incremental=False, per_message=True)
        plain = simulate(session, name, params, store=store, per_message=True)
        assert carried.to_json() == reference.to_json(), path
        # OpenHands' view leaves out what has no partner yet: pair safety finds nothing more to drop in these.
        assert sum(t.dropped for t in carried.turns) > sum(t.dropped for t in plain.turns) or name == "openhands-llm-summarizing", path
        assert carried.scratch_steps == plain.scratch_steps, path
        assert replays_incrementally(name, session, PAIR_SAFE, params) == replays_incrementally(name, session, PlanOptions(), params), path
    assert any(replays_incrementally(name, load_session(ROOT / path), PAIR_SAFE, params) == "incremental" for path in LOGS)


def test_strands_sliding_window_handed_over_mid_replay_tells_only_new_trims():
    """Found by a fresh draw: with pair safety, the messages the window removed stop being one run
    at message 9, so the carried replay hands that step and the rest to the reference. That first
    reference step compared its plan with a turn before it had not planned, and told every message
    still trimmed as newly removed ("7 more", where the turn before had removed 6). It now starts
    from what the carried replay's turn before trimmed, as the categories replay's hand-over does."""
    def text(n: int) -> str:
        return ("word " * (n // 5 + 1))[:n]

    def message(i: int, role: str, parts: list, tool_call_id: str = "") -> Message:
        return Message(id=f"m{i}", index=i, role=role, parts=tuple(parts), tool_call_id=tool_call_id, category=default_category(role))

    def calls(i: int, k: int) -> list[ToolCallPart]:
        return [ToolCallPart(f"c{i}_{j}", "read", "{}") for j in range(k)]

    messages = [message(0, "assistant", [TextPart(text(1338)), *calls(0, 1)]), message(1, "assistant", [TextPart(text(245))]),
                message(2, "user", [TextPart(text(737))]), message(3, "assistant", [TextPart(text(1156))]),
                message(4, "assistant", [TextPart(text(753)), *calls(4, 1)]), message(5, "assistant", [TextPart(text(1779)), *calls(5, 2)]),
                message(6, "assistant", [TextPart(text(1510))]), message(7, "tool", [ToolResultPart("c0_0", text(1487))], "c0_0"),
                message(8, "assistant", [TextPart(text(1462)), *calls(8, 3)]), message(9, "tool", [ToolResultPart("c4_0", text(1462))], "c4_0")]
    s = Session(messages=tuple(messages), system_prompt="You are terse.")
    params = {"window_size": 0, "pin_first": 1, "context_window_limit": 104, "should_truncate_results": True}
    store, options = CountStore(), PlanOptions(pair_safe=True)
    fast = simulate(s, "strands-sliding-window", params, store=store, options=options)
    reference = simulate(s, "strands-sliding-window", params, store=store, options=options, incremental=False)
    assert 0 < fast.scratch_steps < reference.scratch_steps  # (carried, then handed over)
    assert fast.turns == reference.turns
    assert fast.turns[-1].events[0].message.startswith("DIALOG: 1 more message removed (#8, ")
