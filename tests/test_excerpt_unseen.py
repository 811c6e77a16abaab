"""An excerpt of a log that starts mid-conversation: what its first call holds beyond the file is not
only the system prompt and tools but the conversation before the file, which a compaction covering
the file's start summarises.

sample_sessions/claude_code_autocompact.jsonl is such an excerpt (38 lines of a real Claude Code
session around an automatic compaction; its first message is a tool result). Its first call
reported 164,831 tokens where the file shows 727: the 164,100 "unseen" tokens held the earlier
conversation. The call after the compaction reported 36,081; the replay added the 164,100 to the
compacted context and said 167,805, and the real count, the next call's price and the donut's
"Unseen" said the same for the whole file.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path

from ctxviz.engine.caching import cache_costs
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.planner import plan_session
from ctxviz.engine.reported import reported_usage, starts_mid_conversation
from ctxviz.engine.session import Compaction, Message, Session, Summary, TextPart, ToolResultPart, Usage
from ctxviz.engine.simulate import simulate
from ctxviz.engine.tokenizers import TiktokenTokenizer, count_openai_chat
from ctxviz.engine.verify import verify
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
EXCERPT = ROOT / "sample_sessions" / "claude_code_autocompact.jsonl"
WHOLE = ROOT / "tests" / "data" / "real" / "claude_code" / "tugtool-rewind-branch.jsonl"  # starts with the user's first prompt


def test_the_unseen_part_after_the_compaction_is_read_from_the_first_call_after_it() -> None:
    session = load_session(EXCERPT)
    assert starts_mid_conversation(session) and session.messages[0].role == "tool"
    r = reported_usage(session)
    assert r is not None and r.unseen == 164_100
    call = session.messages[r.restart_call]
    assert r.restart_call == 3 and call.usage.window_fill == 36_081 and r.restart_call > session.compactions[0].before_index - 1
    # that call's report less what the log shows of its request: the summary and what it does not cover
    (summary,) = session.summaries
    shown = [{"role": "user", "content": summary.text}] + [m.to_openai() for m in session.messages[:3] if m.id not in set(summary.covers)]
    assert r.unseen_after_compaction == round(36_081 - count_openai_chat(shown, tokenizer=TiktokenTokenizer("o200k_base")), -2) == 32_400
    assert r.unseen_after == 32_400 and "the first call after it (#3) suggests about 32,400" in r.unseen_note()


def test_a_log_that_starts_the_conversation_keeps_its_first_estimate() -> None:
    session = load_session(WHOLE)
    r = reported_usage(session)
    assert not starts_mid_conversation(session) and session.compactions
    assert r is not None and r.unseen > 0 and r.unseen_after_compaction is None and r.unseen_after == r.unseen


def test_the_request_the_call_after_the_compaction_answers_holds_the_later_estimate() -> None:
    """That request went out compacted: the summary in place of the conversation before the file.
    Counting the first call's 164,100 for it (which held that conversation) replayed it at 167,805
    where 36,081 was billed. The later estimate is a fact of the file, as the first call's own is
    (read from that call's usage too): the carried replay and the reference both count it, and the
    cache model prices that request with it."""
    session = load_session(EXCERPT)
    carried, reference = (simulate(session, "claude-code", incremental=i) for i in (True, False))
    assert [t.to_json() for t in carried.turns] == [t.to_json() for t in reference.turns]
    at = next(t for t in carried.turns if t.reply == 3)
    assert abs(at.tokens_sent - 36_081) < 0.01 * 36_081
    report = cache_costs(carried)
    assert (report.turns[0].unseen, report.turns[1].unseen) == (164_100, 32_400)

def test_the_whole_files_real_count_and_unseen_part_leave_the_earlier_conversation_out() -> None:
    session = load_session(EXCERPT)
    plan = plan_session(session, "claude-code", options=PlanOptions(real_count=True))
    assert plan.reported is not None and plan.reported.unseen_after == 32_400
    last = session.messages[-2].usage.window_fill  # the last call, 39,121
    assert plan.real is not None and abs(plan.real.tokens - last) < 0.1 * last  # it said 168,553
    v = verify(session)
    assert v.calls[-1].predicted.request < 45_000


def _opening() -> tuple[list[Message], Callable[..., None]]:
    """The start of a hand-made excerpt: a tool result first (the file starts mid-conversation),
    then 12 calls of about 90,000 tokens each; and the function that adds a message."""
    messages: list[Message] = []

    def add(role: str, text: str, usage: Usage | None = None) -> None:
        k = len(messages)
        part = ToolResultPart(tool_call_id=f"c{k}", text=text) if role == "tool" else TextPart(text=text)
        messages.append(Message(id=f"m{k}", index=k, role=role, parts=(part,), usage=usage))

    for k in range(12):
        add("tool", f"output {k} " * 40)
        add("assistant", f"answer {k}", Usage(input_tokens=5, cache_read_input_tokens=90_000 + 1_000 * k, output_tokens=20))
    return messages, add


def _two_compactions() -> Session:
    """An excerpt made by hand: a tool result first, calls, a compaction covering them, one call, a
    second compaction and no call after it: the request after the second counts the prompt and
    tools alone, as the call between the two reported them."""
    messages, add = _opening()
    first = len(messages)
    add("user", "go on " * 30)
    add("assistant", "later", Usage(input_tokens=5, cache_read_input_tokens=20_000, output_tokens=20))
    second = len(messages)
    add("user", "and then " * 30)
    summaries = (Summary(text="the summary " * 50, covers=tuple(m.id for m in messages[:first]), messages_covered=first),
                 Summary(text="the second summary " * 50, covers=tuple(m.id for m in messages[:second]), messages_covered=second))
    return Session(messages=tuple(messages), summaries=summaries, format="claude-code",
                   compactions=(Compaction(before_index=first, trigger="auto"), Compaction(before_index=second, trigger="auto")))


def test_after_a_second_compaction_the_count_adds_the_prompt_and_tools_alone() -> None:
    session = _two_compactions()
    r = reported_usage(session)
    assert r is not None and r.restart_call == 25 and 0 < r.unseen_after_compaction < 20_000 < r.unseen
    for incremental in (True, False):
        last = simulate(session, "claude-code", incremental=incremental, per_message=True).turns[-1]
        assert last.index == len(session.messages) - 1 and last.summarized == 26
        assert last.tokens_sent < 30_000  # the second summary, the new message and the later estimate, not the first's 90,000
    plan = plan_session(session, "claude-code")
    assert plan.totals.used < 30_000 and f"plus the {r.unseen_after_compaction:,} tokens" in " ".join(plan.notes)


def _excerpt(calls_after: int) -> Session:
    """An excerpt made by hand: a tool result first, 12 calls, a compaction covering them, then
    `calls_after` calls (enough messages that a grown session carries its figures over)."""
    messages, add = _opening()
    boundary = len(messages)
    covers = tuple(m.id for m in messages)
    for k in range(calls_after):
        add("user" if k == 0 else "tool", f"after {k} " * 30)
        add("assistant", f"later {k}", Usage(input_tokens=5, cache_read_input_tokens=20_000 + 500 * k, output_tokens=20))
    summary = Summary(text="the summary " * 50, covers=covers, messages_covered=len(covers))
    return Session(messages=tuple(messages), summaries=(summary,), compactions=(Compaction(before_index=boundary, trigger="auto"),), format="claude-code")


def test_a_followed_excerpt_measures_again_when_the_first_call_after_its_compaction_comes() -> None:
    whole = _excerpt(4)
    before = dataclasses.replace(whole, messages=whole.messages[:25])  # the compaction is logged, no call after it yet
    r = reported_usage(before)
    assert r is not None and r.unseen > 0 and r.unseen_after_compaction is None
    grown = dataclasses.replace(whole, messages=whole.messages)  # the same message objects, grown: carried over from `before`
    carried = reported_usage(grown)
    again = reported_usage(dataclasses.replace(whole, messages=tuple(copy.copy(m) for m in whole.messages)))
    assert carried == again and carried is not None and carried.restart_call == 25 and carried.unseen_after_compaction is not None
    assert carried.unseen_after_compaction < carried.unseen


def test_a_prefix_of_a_measured_excerpt_does_not_borrow_its_later_estimate() -> None:
    """The replay's reference plans each prefix of the session; a prefix sharing the whole file's
    messages was measured as grown from it and kept the estimate read from a call after the
    compaction that the prefix does not reach (its unseen 2,500 became 0; found by hypothesis,
    seed 2912, once a log with a system prompt could have an unseen part). It is measured afresh."""
    from ctxviz.engine.reported import _measure

    def call(k: int, unseen: bool) -> Message:
        usage = Usage(input_tokens=3, cache_read_input_tokens=2500) if unseen else Usage(input_tokens=900, output_tokens=40)
        return Message(id=f"m{k}", index=k, role="assistant", parts=(TextPart(f"answer {k}"),), usage=usage)

    messages = [call(0, True)]  # the excerpt opens on a reply: it starts mid-conversation
    messages += [Message(id=f"m{k}", index=k, role="user", parts=(TextPart(f"ask {k} " + "x" * 40),)) for k in range(1, 16)]
    messages += [call(k, k % 2 == 0) for k in range(16, 23)]
    whole = Session(messages=tuple(messages), system_prompt="You are terse.", format="test",
                    summaries=(Summary(text="the summary", covers=("m0",)), Summary(text="later", covers=tuple(f"m{k}" for k in range(16)))),
                    compactions=(Compaction(before_index=2, preserved=("m1",)), Compaction(before_index=16)))
    measured = reported_usage(whole)
    assert measured is not None and measured.unseen == 2500 and measured.restart_call is not None and measured.restart_call >= 16
    prefix = dataclasses.replace(whole, messages=whole.messages[:11], summaries=whole.summaries[:1], compactions=whole.compactions[:1])
    assert reported_usage(prefix) == _measure(prefix)
    assert reported_usage(prefix).unseen_after == 2500  # no call after the compaction yet: the first call's estimate
