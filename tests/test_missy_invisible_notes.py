"""missy's note on what its estimator cannot see (tool calls cost nothing, a tool-call-only message
is 'None') is counted once for the prefixes of one session (parts._prefix_counts, read by a replay's
retention plans): every prefix, asked in any order, between other sessions, says what counting
that prefix alone says."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine.policies.missy.parts import CONTENT_PARTS, invisible_call_notes
from ctxviz.engine.session import ImagePart, Message, Session, TextPart, ToolCallPart, ToolResultPart
from ctxviz.io.loaders import load_session

REAL = Path(__file__).parent / "data" / "real"


def counted_alone(session: Session) -> tuple[int, int, int]:
    """(messages with calls, call-only messages, characters of names and arguments), by the rule
    missy's estimator follows, counted from the messages of this session alone."""
    with_calls = only_calls = characters = 0
    for m in session.messages:
        if m.role != "assistant" or not m.tool_calls:
            continue
        with_calls += 1
        only_calls += not any(isinstance(p, CONTENT_PARTS) for p in m.parts)
        characters += sum(len(c.name) + len(c.arguments) for c in m.tool_calls)
    return with_calls, only_calls, characters


def check(session: Session) -> None:
    notes = invisible_call_notes(session)
    with_calls, only_calls, characters = counted_alone(session)
    if not with_calls:
        assert notes == ()
        return
    (note,) = notes
    assert f"the tool calls of {with_calls:,} {'message' if with_calls == 1 else 'messages'} ({characters:,} characters" in note
    assert f"and {only_calls:,} tool-call-only {'message counts' if only_calls == 1 else 'messages count'} as" in note


def prefix(session: Session, k: int) -> Session:
    """A new Session over the first k messages, as `Timeline.plan_at` makes one."""
    return dataclasses.replace(session, messages=session.messages[:k])


PART = st.sampled_from(["text", "call", "image", "result", "empty"])


def message(i: int, role: str, kinds: list[str]) -> Message:
    parts = []
    for j, kind in enumerate(kinds):
        if kind == "text":
            parts.append(TextPart(f"text {i}.{j}"))
        elif kind == "call":
            parts.append(ToolCallPart(f"c{i}_{j}", f"tool{j}", f'{{"step": {i * 7 + j}}}'))
        elif kind == "image":
            parts.append(ImagePart(media_type="image/png"))
        elif kind == "result":
            parts.append(ToolResultPart(f"c{i}_{j}", f"out {i}"))
    return Message(id=f"m{i}", index=i, role=role, parts=tuple(parts))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["assistant", "assistant", "user", "tool"]), st.lists(PART, max_size=3)), min_size=0, max_size=25),
       st.lists(st.tuples(st.integers(0, 30), st.booleans()), min_size=1, max_size=8))
def test_every_prefix_in_any_order_counts_as_itself(spec, asks) -> None:  # type: ignore[no-untyped-def]
    full = Session(messages=tuple(message(i, role, kinds) for i, (role, kinds) in enumerate(spec)), source="<test>", format="test")
    # the same messages, rebuilt: equal, not the same objects, so no prefix of `full`
    twin = Session(messages=tuple(message(i, role, kinds) for i, (role, kinds) in enumerate(spec)), source="<twin>", format="test")
    for k, other in asks:
        check(prefix(twin if other else full, min(k, len(full.messages))))
    check(full)
    check(twin)


def test_the_prefixes_of_real_logs_count_as_themselves() -> None:
    logs = [REAL / "claude_code" / "spotter-4d5611e5.jsonl", sorted((REAL / "codex").glob("codemie-rollout-*.jsonl"))[0]]
    for log in logs:
        s = load_session(log)
        n = len(s.messages)
        assert counted_alone(s)[0] > 0
        for k in (n // 3, n // 2, n, 1, n - 1, n // 4, 0):  # growing, shrinking, and back
            check(prefix(s, k))
