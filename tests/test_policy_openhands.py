"""ctxviz's openhands-llm-summarizing against the OpenHands SDK's own LLMSummarizingCondenser.

tests/golden/openhands/cases.json was recorded by tests/golden/openhands/generate.py, which drives
the SDK's View and LLMSummarizingCondenser (openhands-sdk 1.58.0) on its own events; nothing of the
SDK is needed here. Static cases: the view and one `condense`; rolling cases: the conversation
replayed message by message with `condense` whenever the agent steps, compared with `simulate`.
tests/golden/openhands/cases_more.json (generate_more.py): rolling cases whose views had left events
out before a condensation, with the view the agent sends after each one (the summary placed early).
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.policies import get_policy
from ctxviz.engine.session import (
    Message,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    default_category,
)
from ctxviz.engine.simulate import simulate

GOLDEN = json.loads((Path(__file__).parent / "golden" / "openhands" / "cases.json").read_text(encoding="utf-8"))
STATIC = [c for c in GOLDEN["cases"] if c["kind"] == "static"]
ROLLING = [c for c in GOLDEN["cases"] if c["kind"] == "rolling"]
POLICY = "openhands-llm-summarizing"
STORE = CountStore()  # each conversation is counted once for all its cases


@cache
def session_of(name: str) -> Session:
    return build_session(GOLDEN["conversations"][name])


def build_session(messages: list[dict[str, Any]]) -> Session:
    out = []
    for i, m in enumerate(messages):
        parts: list[Any] = []
        if m.get("thinking"):
            parts.append(ThinkingPart("let me think"))
        if m["role"] == "tool":
            parts.append(ToolResultPart(m["tool_call_id"], m["text"]))
        elif m["text"]:
            parts.append(TextPart(m["text"]))
        parts += [ToolCallPart(c["id"], c["name"], c["arguments"]) for c in m.get("tool_calls", [])]
        out.append(Message(f"m{i}", i, m["role"], tuple(parts), tool_call_id=m.get("tool_call_id", ""), category=default_category(m["role"])))
    return Session(messages=tuple(out), model="unknown-model")


def params_of(case: dict[str, Any]) -> dict[str, Any]:
    return {**case["params"], "max_input_tokens": 0}  # the golden cases condense on events only


def message_of(name: str) -> int | None:
    return None if name in ("system", "summary") else int(name.split("#")[0])


def test_the_golden_file_covers_what_users_rely_on() -> None:
    assert GOLDEN["version"] == "1.58.0"
    assert len(STATIC) >= 40 and len(ROLLING) >= 40
    assert sum(1 for c in STATIC if c["forgotten"]) >= 20
    assert sum(len(c["condensations"]) for c in ROLLING) >= 100
    assert any(len(c["view"]) < sum(1 + max(0, len(m.get("tool_calls", [])) - 1) for m in GOLDEN["conversations"][c["name"].split("/")[0]]
                                    if m["role"] != "system") for c in STATIC)  # the View left something out


@pytest.mark.parametrize("case", STATIC, ids=[c["name"] for c in STATIC])
def test_one_condensation_forgets_what_openhands_forgets(case: dict[str, Any]) -> None:
    session = session_of(case["name"].split("/")[0])
    policy = get_policy(POLICY)
    counts = STORE.get(session, policy.scheme())
    plan = policy.plan(session, policy.make_params(params_of(case)), counts)
    in_view = {message_of(n) for n in case["view"]} - {None}
    forgotten = {message_of(n) for n in case["forgotten"] or []} - {None}
    for m in plan.messages:
        if m.role == "system":
            continue
        expected = (Decision.SUMMARIZED if m.index in forgotten else Decision.KEPT if m.index in in_view else Decision.DROPPED)
        assert m.decision is expected, (m.index, m.reason)
    if case["forgotten"] is None:
        assert not plan.extra["condensed"]
        return
    # The summary goes where the forgotten span began: summary_offset events of the view before it.
    remaining = [n for n in case["view"] if n not in set(case["forgotten"])]
    before = remaining[: case["summary_offset"]]
    at = next(k for k, (c, i) in enumerate(zip(plan.context, plan.context_index, strict=True)) if i is None and c["role"] == "user")
    head = [i for i in plan.context_index[:at] if i is not None]
    assert head == sorted({message_of(n) for n in before} - {None})
    assert ("system" in before) == (plan.context_index[:1] == (None,) and plan.context[0]["role"] == "system")
    assert plan.extra["view_events"] == len(remaining) + 1


@pytest.mark.parametrize("case", ROLLING, ids=[c["name"] for c in ROLLING])
def test_replay_condenses_when_and_what_openhands_does(case: dict[str, Any]) -> None:
    session = session_of(case["name"].split("/")[0])
    timeline = simulate(session, POLICY, get_policy(POLICY).make_params(params_of(case)), store=STORE)
    fired = [(e.turn, e) for e in timeline.events if e.kind == "summary"]
    assert [t for t, _ in fired] == [c["after"] for c in case["condensations"]]
    covered: set[int] = set()
    for summary, condensation in zip(timeline.summaries, case["condensations"], strict=True):
        new = {message_of(n) for n in condensation["forgotten"]} - {None}
        if "summary" in condensation["forgotten"]:
            new |= covered
        covered = new
        assert {int(c[1:]) for c in summary.covers} == covered
    # The log's final view holds every message, the last reply too, which no request sent yet: the
    # whole file planned with the summaries the replay wrote.
    from ctxviz.engine.simulate import prefix_counts, state

    whole = state(session, POLICY, len(session.messages) - 1, timeline.summaries)
    final = get_policy(POLICY).plan(whole, timeline.params, prefix_counts(timeline.counts, whole))
    if len(case["final_view"]) > case["params"]["max_size"]:
        # The plan shows what the next call's condense would do; the log's view is before it.
        assert final.extra["condensed"] or any("cannot condense" in n for n in final.notes)
        return
    want = []
    for name in case["final_view"]:
        index = message_of(name)
        if name == "summary" or index is None:
            want.append(None)
        elif not want or want[-1] != index:
            want.append(index)
    assert list(final.context_index) == want


def test_reasons_say_why() -> None:
    case = next(c for c in STATIC if c["forgotten"])
    session = session_of(case["name"].split("/")[0])
    policy = get_policy(POLICY)
    plan = policy.plan(session, policy.make_params(params_of(case)), STORE.get(session, policy.scheme()))
    summarized = [m for m in plan.messages if m.decision is Decision.SUMMARIZED]
    assert summarized and f"over max_size={case['params']['max_size']}" in summarized[0].reason


def test_keep_first_must_leave_room() -> None:
    from ctxviz.errors import ParameterError

    with pytest.raises(ParameterError, match="keep_first must be less than max_size // 2"):
        get_policy(POLICY).make_params({"max_size": 8, "keep_first": 3})


# cases_more.json (generate_more.py): views that left events out (an observation written twice, a
# broken thinking tool loop) before a condensation; the SDK then puts its summary early.
MORE = json.loads((Path(__file__).parent / "golden" / "openhands" / "cases_more.json").read_text(encoding="utf-8"))


@cache
def more_session_of(name: str) -> Session:
    return build_session(MORE["conversations"][name])


def sent_order(names: list[str]) -> list[int | None]:
    """A view's event names as the context's entries: a message once (a batch's calls are one
    assistant message), the system prompt and every summary as None."""
    out: list[int | None] = []
    previous = ""
    for name in names:
        message = name.split("#")[0]
        index = None if name == "system" or name.startswith("summary") else int(message)
        if index is None or message != previous:
            out.append(index)
        previous = message
    return out


def placed_early(case: dict[str, Any]) -> list[int]:
    """The condensations (1-based) whose summary the SDK put before the span it forgot."""
    return [k for k, c in enumerate(case["condensations"], start=1)
            if f"summary{k}" in c["view_after"] and c["view_after"].index(f"summary{k}") < c["summary_offset"]]


def test_the_more_golden_file_has_summaries_placed_early() -> None:
    assert MORE["version"] == GOLDEN["version"]
    assert sum(len(placed_early(c)) for c in MORE["cases"]) >= 30
    # ... some of them inside the head, where the next condensation keeps them: two summaries in one view
    assert sum(1 for c in MORE["cases"] for s in c["condensations"] if sum(n.startswith("summary") for n in s["view_after"]) > 1) >= 30
    # ... and in sessions without thinking blocks too (the incremental replayer's sessions)
    assert any(placed_early(c) for c in MORE["cases"] if not any(m.get("thinking") for m in MORE["conversations"][c["name"].split("/")[0]]))


@pytest.mark.parametrize("case", MORE["cases"], ids=[c["name"] for c in MORE["cases"]])
def test_the_summary_goes_where_openhands_puts_it_after_the_view_left_events_out(case: dict[str, Any]) -> None:
    session = more_session_of(case["name"].split("/")[0])
    policy = get_policy(POLICY)
    params = policy.make_params(params_of(case))
    timeline = simulate(session, POLICY, params, store=STORE)
    assert [e.turn for e in timeline.events if e.kind == "summary"] == [c["after"] for c in case["condensations"]]
    covers: dict[str, set[int]] = {}
    early = placed_early(case)
    for k, (summary, condensation) in enumerate(zip(timeline.summaries, case["condensations"], strict=True), start=1):
        gone = condensation["forgotten"]
        covers[f"summary{k}"] = {int(n.split("#")[0]) for n in gone if n != "system" and not n.startswith("summary")}.union(
            *(covers[n] for n in gone if n.startswith("summary")))
        assert {int(c[1:]) for c in summary.covers} == covers[f"summary{k}"]
        # The view the agent sends next: the summaries where the SDK put them.
        prefix = replace(session, messages=session.messages[: condensation["after"] + 1], summaries=(summary,))
        plan = policy.plan(prefix, params, STORE.get(prefix, policy.scheme()))
        assert list(plan.context_index) == sent_order(condensation["view_after"]), condensation["after"]
        said = any("not where the span it forgot began" in n for n in plan.notes)
        assert said == (k in early), plan.notes
    # The view at the end of the log: the whole file with the last summary in force (the replay's last
    # step is the request before the last call, and events after it are in no request).
    whole = replace(session, summaries=timeline.summaries[-1:])
    final = policy.plan(whole, params, STORE.get(whole, policy.scheme()))
    if len(case["final_view"]) <= case["params"]["max_size"]:
        assert list(final.context_index) == sent_order(case["final_view"])


def test_a_replay_does_not_depend_on_the_replays_run_before_it():
    """The log at each replayed condensation is cached across plans. A prefix that ends before an
    empty system message has no system-prompt event; the same messages followed by it have one. A
    replay that stepped over the system message (one per model call) must not hand its log to a
    replay that steps just before it (one per message): the found-by-hypothesis CI failure."""
    from ctxviz.engine.policies.openhands import log as openhands_log
    from ctxviz.engine.simulate import simulate

    roles = ["user", "assistant"] * 3 + ["system"] + ["user", "assistant"] * 3
    s = Session(messages=tuple(Message(id=f"m{i}", index=i, role=r, parts=() if r == "system" else (TextPart(f"word {i} " * 20),))
                               for i, r in enumerate(roles)), source="<t>", format="test")
    params = {"max_size": 4, "keep_first": 0}
    openhands_log._CACHE.clear()
    alone = simulate(s, "openhands-llm-summarizing", params, incremental=False, per_message=True)
    openhands_log._CACHE.clear()
    simulate(s, "openhands-llm-summarizing", params, incremental=False)  # steps at #4 then #7, past the system message at #6
    after = simulate(s, "openhands-llm-summarizing", params, incremental=False, per_message=True)
    assert [t.summaries for t in alone.turns][:8] == [0, 0, 0, 0, 0, 1, 1, 1]
    assert after.turns == alone.turns
