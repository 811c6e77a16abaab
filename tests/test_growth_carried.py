"""What a followed log's grown session carries over from the session it grew from (engine/growth.py)
equals what a fresh read of the same messages gives: the tool call pairs and problems, the message
columns, which messages carry a reported usage, the reported figures, and the claude-code plan
(its derived step included) with its real count."""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxviz.engine import growth, tool_links
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.reported import reported_usage, usage_mask
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart, Usage
from ctxviz.io.follow import Follower

REAL = Path(__file__).parent / "data" / "real"
LOGS = [REAL / "claude_code" / "tugtool-compact-native.jsonl", REAL / "claude_code" / "agentcmd-full-session-two.jsonl",
        REAL / "claude_code" / "tugtool-rewind-branch.jsonl", REAL / "claude_code" / "spotter-4d5611e5.jsonl", next((REAL / "codex").glob("localpush-rollout-*.jsonl")),
        *sorted((REAL / "gemini_cli").glob("*.jsonl"))[:1]]


def reference_links(messages: tuple[Message, ...]) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int | None, str], ...]]:
    """The tool links as `Session._tool_links` read them before they were carried over (one pass
    over every message), kept here as the definition the carried ones must equal."""
    owner: dict[str, int] = {}
    for m in messages:
        for call in m.tool_calls:
            if call.id:
                owner[call.id] = m.index
    answered: dict[str, int] = {}
    pairs: list[tuple[int, int]] = []
    problems: list[tuple[int, int | None, str]] = []
    for m in messages:
        if m.role != "tool":
            continue
        call_id = m.tool_call_id or next((p.tool_call_id for p in m.parts if isinstance(p, ToolResultPart)), "")
        caller = owner.get(call_id) if call_id else None
        if caller is None:
            what = f"its call {call_id}" if call_id else "the call it answers (it names none)"
            problems.append((m.index, None, f"tool result #{m.index} is sent but {what} is not in the file"))
            continue
        answered.setdefault(call_id, m.index)
        role = messages[caller].role
        if role == "assistant":
            pairs.append((caller, m.index))
        else:
            problems.append((m.index, caller, f"tool result #{m.index} is sent but its call {call_id} is on {role} message #{caller}, "
                                              "and only an assistant message sends tool calls"))
    for m in messages:
        calls = m.tool_calls
        if not calls:
            continue
        if m.role not in ("assistant", "system"):
            for call in calls:
                result = answered.get(call.id) if call.id else None
                then = f" (its result #{result} has no call)" if result is not None else ""
                problems.append((m.index, result, f"{m.role} message #{m.index} is sent with tool call {call.id or '(no id)'}, which only an "
                                                  f"assistant message can send, so the call is lost{then}"))
        elif m.role == "assistant":
            for call in calls:
                if not call.id or call.id not in answered:
                    problems.append((m.index, None, f"tool call #{m.index} ({call.id or 'no id'}) is sent but no tool result in the file "
                                                    "answers it"))
    problems.sort(key=lambda p: (p[0], -1 if p[1] is None else p[1]))
    return tuple(pairs), tuple(problems)


def fresh(s: Session) -> Session:
    """The same session made of other message objects: nothing can be carried over to it."""
    return dataclasses.replace(s, messages=tuple(copy.copy(m) for m in s.messages))


def columns(s: Session) -> tuple[tuple[str, ...], ...]:
    return tuple(m.id for m in s.messages), tuple(m.role for m in s.messages), tuple(m.category for m in s.messages)


def grew(s: Session) -> bool:
    found = growth.origin(s)
    return found is not None and found[1] > 0


def followed(log: Path, folder: Path, cuts: int) -> Iterator[Session]:
    """The sessions a follower reads from `log` written in `cuts` appends of random sizes."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    rnd = random.Random(len(lines))
    ends = sorted({*rnd.sample(range(1, len(lines)), min(cuts, len(lines) - 1)), len(lines)})
    path = folder / log.name
    path.write_text("", encoding="utf-8")
    follower = Follower(path)
    written = 0
    for end in ends:
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(lines[written:end]))
        written = end
        try:
            follower.poll()
        except Exception:  # noqa: BLE001 - nothing loadable yet
            continue
        yield follower.session


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem[:30])
def test_carried_over_a_followed_real_log_equals_a_fresh_read(log: Path, tmp_path: Path) -> None:
    held: list[Session] = []  # as the app holds the state it shows while the next is planned
    carried = 0
    for s in followed(log, tmp_path, 30):
        again = fresh(s)
        assert (s.tool_pairs, s.tool_call_problems) == reference_links(s.messages) == (again.tool_pairs, again.tool_call_problems)
        assert s.message_columns == columns(s)
        assert usage_mask(s).tolist() == [m.usage is not None and m.usage.window_fill > 0 for m in s.messages]
        assert reported_usage(s) == reported_usage(again)
        carried += grew(s)
        held[:] = [s]
    assert carried >= 8  # a state of fewer messages than a loader may rebuild (growth.TAIL) carries nothing


@pytest.mark.parametrize("log", LOGS[:4], ids=lambda p: p.stem[:30])
def test_the_claude_code_plan_of_a_followed_log_equals_a_fresh_plan(log: Path, tmp_path: Path) -> None:
    """The plan (its derived step, rows and request) and its real count, carried over, are those of
    the same messages planned from scratch."""
    store = CountStore()
    carried = 0
    held: list[Session] = []
    for s in followed(log, tmp_path, 30):
        plan = plan_session(s, "claude-code", store=store, options=PlanOptions(real_count=True, model="gpt-4o"))
        again = plan_session(fresh(s), "claude-code", store=CountStore(), options=PlanOptions(real_count=True, model="gpt-4o"))
        assert plan.to_json() == again.to_json()
        assert plan.real is not None and plan.real == again.real
        assert plan.orphans == again.orphans and plan.reported == again.reported
        carried += grew(s)
        held[:] = [s]
    assert carried >= 8


def _message(rnd: random.Random, index: int, ids: list[str]) -> Message:
    """A random message with tool calls and results over a few ids: ids reused, answered before
    their call, on a user message, never answered, or none."""
    role = rnd.choice(["assistant", "assistant", "tool", "tool", "user", "system"])
    parts: list = [TextPart(f"text {index}")]
    tool_call_id = ""
    if role == "tool":
        tool_call_id = rnd.choice([*ids, ""]) if rnd.random() < 0.3 else ""
        parts = [ToolResultPart(rnd.choice([*ids, ""]), "out")]
    elif role != "system" or rnd.random() < 0.3:
        parts += [ToolCallPart(rnd.choice([*ids, ""]), "f") for _ in range(rnd.choice([0, 0, 1, 2]))]
    usage = Usage(input_tokens=rnd.randint(0, 9)) if role == "assistant" and rnd.random() < 0.5 else None
    return Message(f"m{index}-{rnd.random()}", index, role, tuple(parts), tool_call_id=tool_call_id, usage=usage)


@pytest.mark.parametrize("seed", range(40))
def test_random_growth_with_reused_and_late_calls_and_rebuilt_tails(seed: int) -> None:
    """Random sessions grown in random steps (the last few messages sometimes rebuilt, as a loader
    does, or left out, as a replay's earlier turn): each step's links, columns and usage equal a
    fresh read, whether carried over or read again (a reused id, a call arriving after its result)."""
    rnd = random.Random(seed)
    ids = [f"c{k}" for k in range(rnd.choice([8, 40, 400]))]
    messages: list[Message] = []
    held: list[Session] = []
    carried = 0
    for _step in range(30):
        if messages and rnd.random() < 0.3:  # the loader rebuilt the last few messages
            for k in range(max(0, len(messages) - rnd.randint(1, growth.TAIL)), len(messages)):
                messages[k] = _message(rnd, k, ids)
        if rnd.random() < 0.15:  # a turn-by-turn replay's earlier state: the same messages, a few fewer
            del messages[max(0, len(messages) - rnd.randint(1, growth.TAIL)):]
        else:
            messages += [_message(rnd, len(messages) + k, ids) for k in range(rnd.randint(1, 25))]
        s = Session(messages=tuple(messages), format="test")
        expected = reference_links(s.messages)
        assert (s.tool_pairs, s.tool_call_problems) == expected
        assert usage_mask(s).tolist() == [m.usage is not None and m.usage.window_fill > 0 for m in s.messages]
        assert s.message_columns == columns(s)
        carried += grew(s)
        held[:] = [s]
    assert carried >= 15


def test_a_session_not_grown_from_another_reads_everything() -> None:
    """Other message objects, another format, or fewer messages: nothing is carried over."""
    s = Session(messages=tuple(Message(f"m{k}", k, "assistant", (ToolCallPart(f"c{k}", "f"),)) for k in range(40)), format="test")
    assert s.tool_call_problems
    assert not grew(fresh(s))
    assert not grew(dataclasses.replace(s, format="other", messages=s.messages + s.messages[:1]))
    shorter = dataclasses.replace(s, messages=s.messages[:10])
    assert not grew(shorter)
    assert shorter.tool_call_problems == reference_links(shorter.messages)[1]


def test_the_fold_gives_up_where_a_new_message_changes_older_links() -> None:
    """A new call with the id of an earlier call or of an earlier result that had none."""
    links = tool_links.Links()
    first = (Message("a", 0, "assistant", (ToolCallPart("x", "f"),)), Message("t", 1, "tool", (ToolResultPart("y", "o"),)))
    assert tool_links.fold(links, first, 0, 2)
    for reused in ("x", "y"):
        more = (*first, Message("b", 2, "assistant", (ToolCallPart(reused, "f"),)))
        assert not tool_links.fold(links.copy(), more, 2, 3)
    assert tool_links.fold(links.copy(), (*first, Message("b", 2, "assistant", (ToolCallPart("z", "f"),))), 2, 3)
