"""The Gemini CLI plan in columns sets the messages sent whole a run at a time and reads one by one
only the Contents holding truncated outputs (compression_columns._outcome). On tool loops whose
outputs pass a small function-response budget, so that outputs are truncated before the split, after
it, in a Content of several tool messages, under a recorded summary's `held_until`, and with no
compression at all, it gives exactly `plan_records`' plan: each message's decision, code, tokens
sent and place in the context. (The random sessions of test_gemini_columns.py rarely truncate an
output that is sent, so that path is checked here, with the cases asserted to occur.)"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.gemini import service
from ctxviz.engine.policies.gemini.compression import plan, plan_records
from ctxviz.engine.session import Message, Session, Summary, TextPart, ToolCallPart, ToolResultPart

from .columns_equivalence import assert_same_plan
from .hypothesis_budget import examples

POLICY = get_policy("gemini-cli-compression")


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    monkeypatch.setattr(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", 40)


def tool_loop(turns: list[tuple[int, list[int]]], pending: bool, held_until: int | None = None) -> Session:
    """A user turn, assistant calls (one message with all its calls when `calls` > 1 share it,
    each answered by a tool message whose output is `length` characters), a closing answer; then,
    with `pending`, a last user message (the request being sent). With `held_until`, a recorded
    summary covers the first turn and says the outputs it truncated reach that message."""
    messages: list[Message] = []

    def add(role: str, parts: tuple, tool_call_id: str = "") -> None:
        messages.append(Message(id=f"m{len(messages)}", index=len(messages), role=role, parts=parts, tool_call_id=tool_call_id))

    for t, (calls, lengths) in enumerate(turns):
        add("user", (TextPart(f"turn {t}: look at src/app_{t}.py"),))
        for k in range(0, len(lengths), max(1, calls)):
            ids = [f"c{t}_{j}" for j in range(k, min(k + max(1, calls), len(lengths)))]
            add("assistant", tuple(ToolCallPart(c, "shell", '{"cmd": "ls"}') for c in ids))
            for c in ids:
                j = int(c.rsplit("_", 1)[1])
                add("tool", (ToolResultPart(c, f"out {t}.{j} " + "x" * lengths[j]),), tool_call_id=c)
        add("assistant", (TextPart(f"done with turn {t}"),))
    if pending:
        add("user", (TextPart("and now?"),))
    summaries = ()
    if held_until is not None and messages:
        first_turn = next((i for i, m in enumerate(messages) if i and m.role == "user"), len(messages))
        covers = tuple(m.id for m in messages[:first_turn])
        summaries = (Summary(text="earlier work", messages_covered=len(covers), covers=covers,
                             held_until=messages[min(held_until, len(messages) - 1)].id),)
    return Session(messages=tuple(messages), source="<test>", format="test", summaries=summaries)


def same(s: Session, params: dict) -> dict:
    counts = CountStore().get(s, POLICY.scheme(None, s.model))
    p = POLICY.make_params(params)
    fast, reference = plan(s, p, counts), plan_records(s, p, counts)
    assert_same_plan(fast, reference, params)
    return fast.extra


TURNS = st.lists(st.tuples(st.integers(1, 3), st.lists(st.integers(0, 400), min_size=1, max_size=4)), min_size=1, max_size=8)


@settings(max_examples=examples(60), deadline=None)
@given(turns=TURNS, pending=st.booleans(), held_until=st.one_of(st.none(), st.integers(0, 60)),
       limit=st.sampled_from([None, 300, 600, 1200, 5000]), threshold=st.sampled_from([0.2, 0.5, 1.0]),
       chars=st.sampled_from([0, 30, 200, 40_000]))
def test_the_columns_plan_equals_the_step_by_step_plan_on_tool_loops(turns, pending, held_until, limit, threshold, chars) -> None:
    same(tool_loop(turns, pending, held_until), {"tokenLimit": limit, "compressionThreshold": threshold, "truncateToolOutputThreshold": chars})


LONG = [(2, [300, 250, 300, 200]), (1, [300, 300]), (3, [250, 300, 300]), (1, [300]), (2, [300, 300, 300, 300])] * 3


@pytest.mark.parametrize("limit", [1500, 2500])
def test_outputs_truncated_after_the_split_are_sent_truncated(limit: int) -> None:
    extra = same(tool_loop(LONG, pending=True), {"tokenLimit": limit, "truncateToolOutputThreshold": 30})
    assert extra["compression_status"] == "COMPRESSED"
    assert set(extra["truncated_ids"]) - set(extra["compressed_ids"]), "some output sent after the split is truncated"


def test_outputs_truncated_under_a_recorded_summary_without_compressing() -> None:
    extra = same(tool_loop(LONG, pending=True, held_until=40), {"tokenLimit": 10_000_000, "truncateToolOutputThreshold": 30})
    assert extra["compression_status"] == "NOOP" and extra["truncated_ids"]


def test_nothing_truncated_or_compressed_sends_every_message_whole() -> None:
    extra = same(tool_loop(LONG, pending=False), {"tokenLimit": 10_000_000})
    assert extra["compression_status"] == "NOOP" and not extra["truncated_ids"]
