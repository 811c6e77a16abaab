"""strands-sliding-window's plan reads apply_management's trims off the session's own Strands
messages while Strands holds a stretch of them as they are (`sliding_window._Run`): the plan must
be the one the manager's own lists give, reason for reason (hypothesis, against the plan with the
run turned off), and a re-plan must reuse the run it made.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies.strands import sliding_window
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart

from .hypothesis_budget import examples

#: What an agent's turn looks like: a request, then calls and their results, then a reply; now and
#: then a result without its call, a call without its result, a user message holding a call.
TURNS = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 400), st.sampled_from(["plain", "orphan_result", "orphan_call", "user_call"])),
                 min_size=1, max_size=40)


def agent_session(turns: list[tuple[int, int, str]]) -> Session:
    messages: list[Message] = []

    def add(role: str, *parts: object, call: str = "") -> None:
        i = len(messages)
        messages.append(Message(id=f"m{i}", index=i, role=role, parts=tuple(parts), tool_call_id=call))  # type: ignore[arg-type]

    add("system", TextPart("You are a coding agent."))
    for t, (calls, size, odd) in enumerate(turns):
        if odd == "user_call":
            add("user", TextPart(f"request {t}"), ToolCallPart(f"u{t}", "read", '{"path": "a.py"}'))
            add("tool", ToolResultPart(f"u{t}", "x" * size), call=f"u{t}")
        else:
            add("user", TextPart(f"request {t} " + "w " * (size // 4)))
        for c in range(calls):
            add("assistant", TextPart("calling"), ToolCallPart(f"c{t}_{c}", "edit", '{"path": "src/b.py"}'))
            if not (odd == "orphan_call" and c == calls - 1):
                add("tool", ToolResultPart(f"c{t}_{c}", "out " * size), call=f"c{t}_{c}")
        if odd == "orphan_result":
            add("tool", ToolResultPart(f"gone{t}", "stray"), call=f"gone{t}")
        add("assistant", TextPart(f"done {t}"))
    return Session(messages=tuple(messages), source="<test>", format="test")


def _plan(session: Session, params: dict[str, object], run: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    with monkeypatch.context() as m:
        if not run:
            m.setattr(sliding_window, "_run", lambda session, counts: None)
        plan = plan_session(session, "strands-sliding-window", params, None, CountStore())
    doc = plan.to_json()
    doc["reasons"] = [row.reason for row in plan.messages]
    return doc


@settings(max_examples=examples(120), deadline=None)
@given(TURNS, st.integers(0, 12), st.sampled_from([None, 600, 2_000, 8_000, 200_000]), st.booleans())
def test_the_run_plans_as_the_managers_lists_do(turns, window_size, limit, truncate) -> None:
    session = agent_session(turns)
    params = {"window_size": window_size, "context_window_limit": limit, "should_truncate_results": truncate}
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _plan(session, params, True, monkeypatch) == _plan(session, params, False, monkeypatch)


def test_a_long_session_trims_on_the_run_with_the_start_rule_and_reuses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Turns of eight Strands messages (a request, three calls and results, a reply): a window of 10
    # starts inside the turn before the last, so Strands trims on to the last request (the start
    # rule), read off the run.
    session = agent_session([(3, 50, "plain")] * 60)
    store = CountStore()
    made: list[object] = []
    real = sliding_window._Run.__init__

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        made.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(sliding_window._Run, "__init__", counted)
    plan = plan_session(session, "strands-sliding-window", {"window_size": 10}, None, store)
    codes = [row.reason_code for row in plan.messages]
    assert "start_rule" in codes and "outside_window" in codes
    again = plan_session(session, "strands-sliding-window", {"window_size": 11}, None, store)
    assert len(made) == 1  # the re-plan walked the run the first plan made
    with monkeypatch.context() as m:
        m.setattr(sliding_window, "_run", lambda session, counts: None)
        assert plan_session(session, "strands-sliding-window", {"window_size": 11}, None, CountStore()).to_json() == again.to_json()
