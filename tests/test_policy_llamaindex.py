"""ctxviz's LlamaIndex policies against LlamaIndex's own ChatMemoryBuffer and ChatSummaryMemoryBuffer.

tests/golden/llamaindex/cases.json was written by tests/golden/llamaindex/generate.py with
llama-index-core 0.14.25 installed in a scratch venv; these tests need nothing of it installed.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
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
from ctxviz.errors import ParameterError

GOLDEN = json.loads((Path(__file__).parent / "golden" / "llamaindex" / "cases.json").read_text())
STORE = CountStore()
BUFFER = "llamaindex-chat-memory-buffer"
SUMMARY = "llamaindex-chat-summary-memory-buffer"


def spec_message(i: int, spec: dict[str, Any]) -> Message:
    parts: list[Any] = []
    for p in spec["parts"]:
        if p["type"] == "text":
            parts.append(TextPart(p["text"]))
        elif p["type"] == "image":
            parts.append(ImagePart(url=p["url"]))
        elif p["type"] == "tool_call":
            parts.append(ToolCallPart(p["id"], p["name"], p["arguments"]))
        elif p["type"] == "tool_result":
            parts.append(ToolResultPart(p["tool_call_id"], p["text"]))
    return Message(id=spec["id"], index=i, role=spec["role"], parts=tuple(parts), tool_call_id=spec.get("tool_call_id", ""),
                   category=default_category(spec["role"]))


@cache
def full_session(name: str) -> Session:
    spec = GOLDEN["sessions"][name]
    messages = tuple(spec_message(i, m) for i, m in enumerate(spec["messages"]))
    return Session(messages=messages, source=f"<golden {name}>", format="test", system_prompt=spec["system"])


def buffer_cases() -> list[dict[str, Any]]:
    return [c for c in GOLDEN["cases"] if c["class"] == "ChatMemoryBuffer"]


def summary_cases() -> list[dict[str, Any]]:
    return [c for c in GOLDEN["cases"] if c["class"] == "ChatSummaryMemoryBuffer"]


def test_the_golden_file_is_llamaindexs_and_covers_every_branch():
    assert GOLDEN["framework"] == "llama-index-core" and GOLDEN["version"] == "0.14.25"
    buffers = buffer_cases()
    assert len(buffers) >= 200 and len(summary_cases()) >= 200
    assert any(c["error"] for c in buffers)  # initial_token_count > token_limit raises
    assert any(c["kept_from"] == len(GOLDEN["sessions"][c["session"]]["messages"]) - 1 and c["token_count"] > c["token_limit"]
               for c in buffers)  # the newest message alone, over the limit
    assert len({c["kept_from"] for c in buffers}) > 20
    steps = [s for c in summary_cases() for s in c["steps"]]
    assert any(s[1] >= 0 for s in steps) and any(s[3] and s[1] >= 0 and s[4] == s[2] for s in steps)


@pytest.mark.parametrize("case", buffer_cases(), ids=lambda c: f"{c['session']}-{json.dumps(c['params'], sort_keys=True)}")
def test_chat_memory_buffer_keeps_what_llamaindex_keeps(case):
    session = full_session(case["session"])
    params = {k: v for k, v in case["params"].items() if k != "initial_token_count"}
    params["initial_token_count"] = None if case["params"].get("initial_token_count") == "system" else case["initial_token_count"]
    plan = plan_session(session, BUFFER, params, store=STORE)
    assert plan.params["token_limit"] == case["token_limit"]
    assert plan.params["initial_token_count"] == case["initial_token_count"]
    kept = [m.id for m in plan.messages if m.sent and m.role != "system"]
    if case["error"]:
        assert "Initial token count exceeds token limit" in case["error"]
        assert kept == [] and plan.extra["raised"] and not plan.totals.fits
        return
    ids = [m.id for m in session.messages]
    assert kept == ids[case["kept_from"]:]
    assert plan.usage["history"] == case["token_count"]
    assert plan.totals.used == case["token_count"] + case["initial_token_count"]


@pytest.mark.parametrize("case", summary_cases(), ids=lambda c: f"{c['session']}-{json.dumps(c['params'], sort_keys=True)}")
def test_chat_summary_memory_buffer_keeps_and_summarises_what_llamaindex_does(case):
    full = full_session(case["session"])
    ids = [m.id for m in full.messages]
    overrides = dict(case["params"])
    if overrides.get("llm", True):
        overrides.setdefault("context_window", 3900)  # the generator's fake LLM reports LlamaIndex's default window
    params = get_policy(SUMMARY).make_params(overrides)
    assert params.limit == case["token_limit"]
    for turn, carried, lost, has_summary, first, error in case["steps"]:
        summaries = (Summary(text=case["summaries"][carried], covers=tuple(ids[:lost])),) if carried >= 0 else ()
        session = Session(messages=full.messages[: turn + 1], source=full.source, format="test", system_prompt=full.system_prompt,
                          summaries=summaries)
        plan = plan_session(session, SUMMARY, params, store=CountStore())
        where = f"turn {turn}"
        if error:
            assert "Initial token count exceeds token limit" in error and plan.extra["raised"], where
            continue
        sent = [m.id for m in plan.messages if m.sent and m.role != "system"]
        assert sent == ids[first : turn + 1], where
        summary_sent = sum(1 for i in plan.context_index if i is None) - (1 if plan.system_prompt else 0)
        assert summary_sent == int(has_summary), where
        decided = {m.id: m.decision.value for m in plan.messages}
        gone = "summarized" if case["params"].get("llm", True) else "dropped"
        assert all(decided[i] == gone for i in ids[lost:first]), where


def test_the_joined_count_is_exact_where_whitespace_meets_whitespace_across_a_join():
    """LlamaIndex tokenises the window's contents joined by spaces: a message ending in a newline
    followed by one starting with a newline merge into one whitespace token, which counting each
    message alone would miss."""
    from ctxviz.engine.tokenizers import get_tokenizer

    texts = ["first line\n", "\nsecond", "   ", "", "\n\nthird\n", "\n", "end"]
    session = Session(messages=tuple(Message(id=f"m{i}", index=i, role="user", parts=(TextPart(t),)) for i, t in enumerate(texts)))
    encoding = get_tokenizer("cl100k_base")
    for limit in (1, 5, 8, 12, 40):
        plan = plan_session(session, BUFFER, {"token_limit": limit, "initial_token_count": 0}, store=STORE)
        start = next(m.index for m in plan.messages if m.sent)
        assert plan.usage["history"] == encoding.count(" ".join(texts[start:]))
        assert sum(m.sent_tokens for m in plan.messages if m.sent) == plan.usage["history"]


def test_bad_limits_give_one_line():
    with pytest.raises(ParameterError, match="token_limit"):
        get_policy(BUFFER).make_params({"token_limit": 0})
    with pytest.raises(ParameterError, match="token_limit"):
        get_policy(SUMMARY).make_params({"token_limit": -5})


def test_a_replay_carries_the_summary_get_wrote_into_the_next_get():
    """ChatSummaryMemoryBuffer.get rewrites the chat store with [summary] + full text, and runs before
    each LLM call (after a user message or tool results): the replay writes a summary only then, and
    later turns count that summary as the oldest history message."""
    from ctxviz.engine.simulate import simulate

    turns = []
    for k in range(8):
        turns += [("user", f"question {k}: " + "word " * 60), ("assistant", f"answer {k}: " + "text " * 60)]
    s = Session(messages=tuple(Message(id=f"m{i}", index=i, role=r, parts=(TextPart(t),), category=default_category(r))
                              for i, (r, t) in enumerate(turns)), source="<test>", format="test")
    # per message: the turns between two get() calls (the answers) carry the summary without writing a new one
    timeline = simulate(s, SUMMARY, {"token_limit": 400}, store=CountStore(), incremental=False, per_message=True)
    events = [e for e in timeline.events if e.kind == "summary"]
    assert events and all(s.messages[e.turn].role == "user" for e in events)
    assert len(timeline.summaries) == len(events)
    for earlier, later in zip(timeline.summaries, timeline.summaries[1:], strict=False):
        assert set(earlier.covers) < set(later.covers)  # the new summary summarises the old one with what follows it
    carried_and_sent = 0
    for t in range(len(timeline.turns)):
        in_force = timeline.session_at(t).summaries
        if not in_force:
            continue
        plan = timeline.plan_at(t)
        summarized = {m.id for m in plan.messages if m.decision.value == "summarized"}
        assert set(in_force[-1].covers) <= summarized
        if not plan.extra["summarized_ids"] and any(sp.decision.value == "kept" for sp in plan.summaries):
            assert plan.context[0] == {"role": "system", "content": in_force[-1].text}
            carried_and_sent += 1
    assert carried_and_sent


def test_a_recorded_summary_is_a_system_message_in_the_chat_store_where_its_messages_were():
    texts = [("user", "first task"), ("assistant", "done"), ("user", "second task"), ("assistant", "also done"), ("user", "third")]
    messages = tuple(Message(id=f"m{i}", index=i, role=r, parts=(TextPart(t),), category=default_category(r)) for i, (r, t) in enumerate(texts))
    s = Session(messages=messages, summaries=(Summary(text="The user asked for two tasks.", covers=("m1", "m2")),))
    for policy in (BUFFER, SUMMARY):
        plan = plan_session(s, policy, {"token_limit": 1000}, store=CountStore())
        assert [m.decision.value for m in plan.messages] == ["kept", "summarized", "summarized", "kept", "kept"], policy
        assert [c["content"] for c in plan.context][:2] == ["first task", "The user asked for two tasks."], policy
    # The buffer drops oldest first: the summary goes before the messages after it.
    plan = plan_session(s, BUFFER, {"token_limit": 6, "initial_token_count": 0}, store=CountStore())
    assert plan.summaries[0].decision.value == "dropped" and [c["content"] for c in plan.context] == ["also done", "third"][-len(plan.context):]


# --- issue 21: system messages put into the memory ------------------------------------------------
# tests/golden/llamaindex/cases_more.json was written by generate_more.py (llama-index-core 0.14.25).

MORE = json.loads((Path(__file__).parent / "golden" / "llamaindex" / "cases_more.json").read_text())


@cache
def more_session(name: str) -> Session:
    spec = MORE["sessions"][name]
    return Session(messages=tuple(spec_message(i, m) for i, m in enumerate(spec["messages"])), source=f"<golden {name}>", format="test",
                   system_prompt=spec["system"])


@pytest.mark.parametrize("case", MORE["cases"], ids=lambda c: f"{c['session']}-{json.dumps(c['params'], sort_keys=True)}")
def test_system_messages_in_memory_are_trimmed_like_any_other(case):
    assert MORE["version"] == "0.14.25"
    session = more_session(case["session"])
    params = {"initial_token_count": 0, **case["params"]}
    plan = plan_session(session, "llamaindex-chat-memory-buffer", params, store=CountStore())
    assert [session.messages[i].id for i in plan.context_index if i is not None] == case["kept"]
    assert plan.usage["history"] == case["token_count"]


def test_system_messages_stay_the_prefix_by_default_and_the_replay_follows_the_parameter():
    from ctxviz.engine.simulate import simulate

    case = next(c for c in MORE["cases"] if c["params"]["token_limit"] == 40)
    session = more_session(case["session"])
    default = plan_session(session, "llamaindex-chat-memory-buffer", {"token_limit": 40, "initial_token_count": 0}, store=CountStore())
    assert all(default.messages[m.index].decision.value == "kept" for m in session.messages if m.role == "system")
    params = get_policy("llamaindex-chat-memory-buffer").make_params({"token_limit": 150, "system_messages_in_memory": True})
    assert (simulate(session, "llamaindex-chat-memory-buffer", params).turns
            == simulate(session, "llamaindex-chat-memory-buffer", params, incremental=False).turns)


# ChatSummaryMemoryBuffer with system messages put into the memory (generate_more.py's summary_cases):
# get() before each LLM call; each step is what it returned, an LLM summary named summary<k>.

def store_before(case: dict[str, Any], step: int) -> tuple[int, tuple[Summary, ...]]:
    """(index of the first message the store still holds, the summary at its head) before step `step`'s
    get(): what the previous get() returned, and every message put since."""
    if step == 0:
        return 0, ()
    ids = [m["id"] for m in MORE["sessions"][case["session"]]["messages"]]
    previous = case["steps"][step - 1]
    kept = [name for name in previous["returned"] if not name.startswith("summary")]
    first = ids.index(kept[0]) if kept else previous["turn"] + 1
    head = previous["returned"][0] if previous["returned"] else ""
    if not head.startswith("summary"):
        return first, ()
    return first, (Summary(text=case["summaries"][int(head[len("summary"):]) - 1], covers=tuple(ids[:first])),)


@pytest.mark.parametrize("case", MORE["summary_cases"], ids=lambda c: f"{c['session']}-{json.dumps(c['params'], sort_keys=True)}")
def test_system_messages_in_the_summary_memory_are_kept_summarised_or_passed_through_as_llamaindex_does(case):
    full = more_session(case["session"])
    params = get_policy(SUMMARY).make_params({**case["params"], **({"context_window": 3900} if case["params"].get("llm", True) else {})})
    for step, expected in enumerate(case["steps"]):
        first, summaries = store_before(case, step)
        session = dataclasses.replace(full, messages=full.messages[: expected["turn"] + 1], summaries=summaries)
        plan = plan_session(session, SUMMARY, params, store=CountStore())
        entries = list(zip(plan.context, plan.context_index, strict=True))[1 if plan.system_prompt else 0:]
        got = ["summary" if i is None else session.messages[i].id for _, i in entries]
        assert got == ["summary" if n.startswith("summary") else n for n in expected["returned"]], f"turn {expected['turn']}"
        gone = {m.id for m in session.messages[first:]} - set(got)
        decided = {m.id: m.decision.value for m in plan.messages}
        assert all(decided[i] == ("summarized" if params.llm else "dropped") for i in gone), f"turn {expected['turn']}"


def test_the_summary_memory_covers_system_messages_and_passes_a_lone_one_through():
    steps = [(c, s) for c in MORE["summary_cases"] for s in c["steps"]]
    roles = {(c["session"], m["id"]): m["role"] for c in MORE["summary_cases"] for m in MORE["sessions"][c["session"]]["messages"]}
    # get() summarised system messages of the memory, and passed a lone one through as the store's head
    assert any(s["returned"] and s["returned"][0].startswith("summary") and any(
        roles[c["session"], f"m{k}"] == "system" for k in range(int(next(n for n in s["returned"] if not n.startswith("summary"))[1:])
                                                                if len(s["returned"]) > 1 else 0)) for c, s in steps)
    assert any(s["returned"] and not s["returned"][0].startswith("summary") and roles[c["session"], s["returned"][0]] == "system"
               for c, s in steps)
    params = get_policy(SUMMARY).make_params({"token_limit": 120, "system_messages_in_memory": True})
    assert params.needs_full_replay and not get_policy(SUMMARY).make_params({"token_limit": 120}).needs_full_replay
    from ctxviz.engine.simulate import simulate

    session = more_session(MORE["summary_cases"][0]["session"])
    timeline = simulate(session, SUMMARY, params)
    assert timeline.summaries and any(session.messages[[m.id for m in session.messages].index(c)].role == "system"
                                      for s in timeline.summaries for c in s.covers)
