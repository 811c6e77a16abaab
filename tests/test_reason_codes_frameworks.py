"""Reason codes of the framework policies (LangChain, LlamaIndex, AutoGen, Strands, OpenHands): each
sets its codes where it decides, so the app's reason column says why a message went or stayed in
the framework's terms ("after cut", "outside window", "start rule", "popped (middle)"...) and never
a word that contradicts the decision (the regular expression it replaced said "fits" of 216 rows
langchain-trim dropped, the system prompt among them, and "fresh tail" of rows AutoGen dropped).

Every code a policy declares must be one some plan gives (a declared code no branch sets would be
a filter that never matches), and every code a plan gives must be declared and agree with the
decision; the sample sessions reach the common branches, the parameters and the small sessions
below the rare ones (an image cut on overflow, a View that leaves a call out, a condensation that
cannot make progress).
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision, Plan
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.reason_codes import CODES
from ctxviz.engine.reasons import short
from ctxviz.engine.session import (
    ImagePart,
    Message,
    Part,
    Session,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    default_category,
)
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(p for p in (ROOT / "sample_sessions").iterdir() if p.suffix in (".yaml", ".json", ".jsonl", ".traj"))
STORE = CountStore()


def built(*messages: tuple[str, tuple[Part, ...]] | tuple[str, tuple[Part, ...], str], model: str = "gpt-4o") -> Session:
    """A session of (role, parts[, tool_call_id]) messages."""
    out = tuple(Message(f"m{i}", i, m[0], m[1], tool_call_id=m[2] if len(m) > 2 else "", category=default_category(m[0]))  # type: ignore[misc]
                for i, m in enumerate(messages))
    return Session(messages=out, source="<test>", format="test", model=model)


def text(role: str, words: str) -> tuple[str, tuple[Part, ...]]:
    return role, (TextPart(words),)


def call(call_id: str) -> tuple[str, tuple[Part, ...]]:
    return "assistant", (ToolCallPart(call_id, "read_file", '{"path": "a.py"}'),)


def result(call_id: str, *parts: Part) -> tuple[str, tuple[Part, ...], str]:
    return "tool", parts or (ToolResultPart(call_id, "ok"),), call_id


PNG = "data:image/png;base64," + "iVBORw0KGgo" * 20
LONG = "word " * 2000


@cache
def sessions() -> dict[str, Session]:
    out = {p.name: load_session(p) for p in SAMPLES}
    # AutoGen removes a tool result that would start the context, however little was popped.
    out["starts on a result"] = built(result("c0"), text("user", "go on"), text("assistant", "done"))
    # Strands cuts the oldest tool result first on overflow: its image becomes a placeholder (and
    # with no user message to trim to, Strands cannot reduce the context further).
    out["image result"] = built(text("user", LONG), call("c1"), result("c1", ToolResultPart("c1", "see"), ImagePart(url=PNG, media_type="image/png")),
                                text("assistant", "seen"))
    # The View leaves out a second observation of a call and a call without its observation.
    out["broken pairs"] = built(text("user", "go"), call("c1"), result("c1"), result("c1"), call("c2"), text("user", "again"),
                                text("assistant", "done"))
    # With system messages in the memory, a lone one that no longer fits is passed through.
    out["big system"] = built(text("system", LONG), text("user", "hi"), text("assistant", "hello"))
    out["chat"] = built(*(text("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(40)))
    return out


#: Per policy, the parameters that reach its branches (with the sessions above and the samples).
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "langchain-trim": [{}, {"allow_partial": True}, {"start_on": "human", "end_on": "human,tool"}, {"include_system": True}],
    "langchain-summarization": [{}, {"trigger": "tokens=2000"}, {"trigger": "tokens=10000000"}],
    "langchain-context-editing": [{}, {"trigger": 100, "clear_tool_inputs": True}, {"trigger": 100, "clear_at_least": 50}],
    "llamaindex-chat-memory-buffer": [{}, {"token_limit": 5}, {"initial_token_count": 10**7}],
    "llamaindex-chat-summary-memory-buffer": [{}, {"llm": False}, {"count_initial_tokens": True, "initial_token_count": 10**7},
                                              {"system_messages_in_memory": True, "token_limit": 50}],
    "autogen-buffered": [{}],
    "autogen-head-and-tail": [{}],
    "autogen-token-limited": [{}, {"token_limit": 2000}],
    "strands-sliding-window": [{}, {"context_window_limit": 3000, "window_size": 1000}, {"context_window_limit": 300, "pin_first": 1}],
    "strands-summarizing": [{}, {"context_window_limit": 3000, "pin_first": 1}, {"context_window_limit": 100, "preserve_recent_messages": 1000}],
    "openhands-llm-summarizing": [{}, {"max_size": 20}, {"max_size": 10, "keep_first": 1, "minimum_progress": 0.99}],
}


@cache
def plans(policy: str) -> tuple[Plan, ...]:
    return tuple(plan_session(session, policy, params, store=STORE) for params in VARIANTS[policy] for session in sessions().values())


@pytest.mark.parametrize("policy", sorted(VARIANTS))
def test_every_declared_code_is_given_and_every_given_code_is_declared(policy: str) -> None:
    declared = set(get_policy(policy).reason_codes)
    given: dict[str, set[Decision]] = defaultdict(set)
    for plan in plans(policy):
        for m in plan.messages:
            assert m.code, (policy, m.index, m.reason)  # set where the policy decides, never left to the decision's generic code
            assert m.code in declared, (policy, m.code, m.reason)
            assert CODES[m.code].sent == m.sent, (policy, m.index, m.decision, m.code, m.reason)
            given[m.code].add(m.decision)
    assert declared == set(given), (policy, "declared but never given:", declared - set(given))


def test_langchain_trim_says_where_the_budget_stopped() -> None:
    """The message the budget could not take says "missed", the older ones "after cut"; none that
    is not sent says "fits", the dropped system message included."""
    session = load_session(ROOT / "sample_sessions" / "coding_agent.yaml")
    plan = plan_session(session, "langchain-trim", {"max_tokens": 4000}, store=STORE)
    dropped = [m for m in plan.messages if m.decision is Decision.DROPPED]
    missed = [m for m in dropped if m.code == "missed"]
    assert len(missed) == 1 and missed[0].index == max(m.index for m in dropped)
    assert {m.code for m in dropped if m is not missed[0]} == {"after_cut"}
    assert {short(m) for m in dropped} == {"missed", "after cut"}
    assert all(m.code == "fits" for m in plan.messages if m.decision is Decision.KEPT)
    first = plan_session(session, "langchain-trim", {"max_tokens": 4000, "strategy": "first"}, store=STORE)
    stop = min(m.index for m in first.messages if m.decision is Decision.DROPPED)
    assert first.messages[stop].code == "missed"
    assert {m.code for m in first.messages if m.decision is Decision.DROPPED and m.index != stop} == {"after_cut"}


@pytest.mark.parametrize("policy", ["autogen-buffered", "autogen-head-and-tail"])
def test_autogen_says_a_dropped_message_is_outside_its_window(policy: str) -> None:
    plan = plan_session(load_session(ROOT / "sample_sessions" / "coding_agent.yaml"), policy, store=STORE)
    dropped = {m.code for m in plan.messages if m.decision is Decision.DROPPED}
    assert "outside_window" in dropped and dropped <= {"outside_window", "start_rule"}
    assert {short(m) for m in plan.messages if not m.sent and m.code == "outside_window"} == {"outside window"}


def test_a_strands_image_cut_on_overflow_says_placeholder() -> None:
    plan = plan_session(sessions()["image result"], "strands-sliding-window", {"context_window_limit": 300}, store=STORE)
    assert plan.messages[2].decision is Decision.REPLACED and plan.messages[2].code == "replaced"
    assert short(plan.messages[2]) == "placeholder"


def test_the_openhands_view_says_which_events_it_leaves_out() -> None:
    plan = plan_session(sessions()["broken pairs"], "openhands-llm-summarizing", store=STORE)
    assert (plan.messages[3].code, plan.messages[4].code) == ("dropped", "unpaired")  # a second observation; a call never observed
    assert plan.messages[2].code == "under_trigger"

