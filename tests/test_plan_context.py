"""A plan's context builds each message's request form when it is read, and reads the same as the
eagerly built list it replaced (`engine.plan.Context`)."""

from __future__ import annotations

import pytest

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.plan import Context
from ctxviz.engine.planner import plan_session
from ctxviz.engine.session import Message, Session, TextPart


class Counting:
    """A message stand-in that counts how often its request form is built."""

    def __init__(self, k: int) -> None:
        self.k, self.built = k, 0

    def to_openai(self) -> dict[str, str]:
        self.built += 1
        return {"role": "user", "content": f"m{self.k}"}


def test_only_the_entries_read_are_built_and_each_once() -> None:
    items = [Counting(k) for k in range(5)]
    context = Context([{"role": "system", "content": "S"}, *items])
    assert len(context) == 6 and sum(i.built for i in items) == 0
    assert context[2] == {"role": "user", "content": "m1"} and context[-1]["content"] == "m4"
    assert context[2] is context[2]  # built once, then the same mapping
    assert [i.built for i in items] == [0, 1, 0, 0, 1]
    assert [c["content"] for c in context[1:3]] == ["m0", "m1"]
    with pytest.raises(IndexError):
        context[6]


def test_a_context_equals_the_list_it_stands_for() -> None:
    context = Context([Counting(0), {"role": "assistant", "content": "a"}])
    assert context == ({"role": "user", "content": "m0"}, {"role": "assistant", "content": "a"})
    assert context != ({"role": "user", "content": "m0"},)
    assert list(context) == [{"role": "user", "content": "m0"}, {"role": "assistant", "content": "a"}]


def _session(n: int) -> Session:
    roles = ["user", "assistant"]
    return Session(messages=tuple(Message(id=f"m{i}", index=i, role=roles[i % 2], parts=(TextPart(f"message {i} " * 30),)) for i in range(n)),
                   source="<t>", format="test", system_prompt="You are terse.")


def test_a_plan_sends_each_kept_message_as_the_message_itself_says() -> None:
    s = _session(40)
    for policy, params in (("missy", {"total": 6000, "fresh_tail_count": 4}), ("langchain-trim", {"max_tokens": 900})):
        plan = plan_session(s, policy, params, "o200k_base", options=PlanOptions(pair_safe=True, pins=("first-user",)))
        assert len(plan.context) == len(plan.context_index)
        for entry, index in zip(plan.context, plan.context_index, strict=True):
            if index is not None:
                assert entry == s.messages[index].to_openai()
        assert 0 in plan.context_index and plan.messages[0].sent  # the pinned first message is in, as the message says
        assert not all(m.sent for m in plan.messages)  # and the budget cut something
        assert plan.to_json()["context"] == [dict(c) for c in plan.context]
