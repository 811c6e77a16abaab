"""The replay steps at model calls (engine/steps.py): where the steps are, that the frameworks run
on that schedule (golden cases recorded by driving their own agents call by call), and that the
number of priced requests is the number of calls real logs record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.caching import cache_costs
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart, Usage, default_category
from ctxviz.engine.simulate import simulate
from ctxviz.engine.steps import CALLS, MESSAGES, REPLIES, schedule
from ctxviz.io.loaders import load_session

from .builders import session

HERE = Path(__file__).parent
REAL = HERE / "data" / "real"


def agent() -> Session:
    """A user turn, a call with two parallel tool results, a call with one, an answer, a second user turn."""
    rows: list[tuple[str, tuple[Any, ...], str]] = [
        ("user", (TextPart("Fix the bug."),), ""),
        ("assistant", (ToolCallPart("c1", "read", '{"path": "a.py"}'), ToolCallPart("c2", "grep", '{"pattern": "bug"}')), ""),
        ("tool", (ToolResultPart("c1", "a.py: def f(): pass"),), "c1"), ("tool", (ToolResultPart("c2", "a.py:1"),), "c2"),
        ("assistant", (ToolCallPart("c3", "read", '{"path": "b.py"}'),), ""), ("tool", (ToolResultPart("c3", "b.py"),), "c3"),
        ("assistant", (TextPart("Fixed."),), ""), ("user", (TextPart("Thanks. Now the docs."),), "")]
    messages = tuple(Message(f"m{i}", i, role, parts, tool_call_id=call, category=default_category(role)) for i, (role, parts, call) in enumerate(rows))
    return Session(messages=messages, source="<test>", format="test")


def with_usage(s: Session, indices: dict[int, Usage]) -> Session:
    import dataclasses

    return dataclasses.replace(s, messages=tuple(dataclasses.replace(m, usage=indices.get(m.index, m.usage)) for m in s.messages))


def test_a_step_is_the_request_before_each_reply_parallel_results_included():
    s = agent()
    plan = schedule(s)
    # Requests: [#0], [#0-#3] (both tool results in one request), [#0-#5], then the trailing user message.
    assert plan.rule == REPLIES and plan.steps == (0, 3, 5, 7) and plan.replies == (1, 4, 6, -1)
    assert "4 steps, one per request before an assistant reply" in plan.describe() and "after the last reply" in plan.describe()
    assert schedule(s, per_message=True).steps == tuple(range(8)) and schedule(s, per_message=True).rule == MESSAGES
    # Ending with the answer: no trailing step (the next request has not been made).
    import dataclasses

    answered = dataclasses.replace(s, messages=s.messages[:7])
    assert schedule(answered).steps == (0, 3, 5)
    # A run of assistant messages is one reply; a system message between them is new input.
    run = session(("user", "hi"), ("assistant", "a"), ("assistant", "b"), ("system", "note"), ("assistant", "c"))
    assert schedule(run).steps == (0, 3)


def test_the_calls_a_log_records_are_the_steps():
    s = with_usage(agent(), {1: Usage(input_tokens=900), 4: Usage(input_tokens=1200), 6: Usage(input_tokens=3, cache_read_input_tokens=1400)})
    plan = schedule(s)
    assert plan.rule == CALLS and plan.steps == (0, 3, 5) and plan.recorded == 3 and plan.unsent == 1
    assert "3 steps, one per model call the log records (3 with the provider's usage)" in plan.describe()
    # Two calls in a row (a call that only reasoned, then one that answered) are two steps.
    two = with_usage(session(("user", "go"), ("assistant", "thinking"), ("assistant", "done")),
                     {1: Usage(input_tokens=10), 2: Usage(input_tokens=12)})
    assert schedule(two).steps == (0, 1)
    # A reply the log records no usage for still answered new input: a call; a zero report is no call.
    gap = with_usage(agent(), {1: Usage(input_tokens=900), 4: Usage(), 6: Usage(input_tokens=5)})
    assert schedule(gap).rule == CALLS and schedule(gap).steps == (0, 3, 5) and schedule(gap).recorded == 2
    # A lone response (its request is not in the file): one step over the whole file.
    lone = with_usage(session(("assistant", "hello")), {0: Usage(input_tokens=50)})
    assert schedule(lone).steps == (0,) and schedule(lone).replies == (-1,)


def test_the_timeline_says_which_rule_and_numbers_its_steps():
    tl = simulate(agent(), "missy", store=CountStore())
    assert tl.step_rule == REPLIES and [(t.step, t.index, t.reply) for t in tl.turns] == [(0, 0, 1), (1, 3, 4), (2, 5, 6), (3, 7, -1)]
    doc = tl.to_json()
    assert doc["step_rule"] == "replies" and [t["reply"] for t in doc["turns"]] == [1, 4, 6, None]
    assert [t.kept + t.dropped + t.summarized + t.truncated for t in tl.turns] == [t.index + 1 for t in tl.turns]
    assert simulate(agent(), "missy", per_message=True).step_rule == MESSAGES


def _calls_in_claude_code_file(path: Path) -> int:
    """The API calls a Claude Code file records, read from the file itself: the distinct message ids
    of the main chain's assistant lines with usage (one call can be several lines), less a call
    whose request is not in the file (a shortened transcript that starts with the reply)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    main = [r for r in records if r.get("uuid") and not r.get("isSidechain")] or [r for r in records if r.get("uuid")]
    by_uuid = {r["uuid"]: r for r in main}
    order = {r["uuid"]: k for k, r in enumerate(main)}
    chain: list[dict[str, Any]] = []
    r: dict[str, Any] | None = main[-1]
    while r is not None and r not in chain:  # the chain from the last line (a rewound branch is not on it)
        chain.append(r)
        parent = r.get("parentUuid") or r.get("logicalParentUuid")
        k = order[r["uuid"]]
        r = by_uuid.get(parent) if parent in by_uuid else (main[k - 1] if parent and k else None)  # a broken chain goes on above
    requested: dict[str, bool] = {}  # message id -> whether a line of the conversation came before its first line
    said = False
    for r in reversed(chain):
        message = r.get("message") or {}
        usage = message.get("usage") or {}
        if r.get("type") == "assistant" and sum(usage.get(k) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")):
            requested.setdefault(message["id"], said)
        said = said or r.get("type") in ("user", "assistant")
    return sum(requested.values())


def _calls_in_codex_file(path: Path) -> int:
    """The model calls a Codex rollout records: its token_count events with usage, a repeated report once."""
    calls, last = 0, None
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        payload = record.get("payload") or {}
        if record.get("type") == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
            total = payload["info"].get("total_token_usage")
            if total != last:
                calls += 1
            last = total
    return calls


LOGS = sorted(REAL.glob("claude_code/*.jsonl")) + sorted(REAL.glob("codex/*.jsonl"))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name[:40]}")
def test_the_priced_requests_are_the_calls_the_real_log_records(path: Path):
    s = load_session(str(path))
    calls = _calls_in_claude_code_file(path) if path.parent.name == "claude_code" else _calls_in_codex_file(path)
    policy = "claude-code" if path.parent.name == "claude_code" else "codex-compaction"
    tl = simulate(s, policy, store=CountStore())
    report = cache_costs(tl)
    if calls:
        assert tl.step_rule == CALLS
        assert len(report.turns) == calls, (path.name, len(report.turns), calls)
        # each priced request is the one the provider reported on
        assert all(t.reported is not None and t.reported.window_fill > 0 for t in report.turns)
    else:
        assert tl.step_rule == REPLIES


def test_the_real_logs_hold_more_messages_than_calls():
    """What the per-message view got wrong: it priced every message (223 requests for 82 calls in the issue's logs)."""
    messages = calls = 0
    for path in sorted(REAL.glob("claude_code/*.jsonl")):
        s = load_session(str(path))
        messages += len(s.messages)
        calls += len(simulate(s, "claude-code", store=CountStore()).turns)
    assert calls < messages / 2


# --- the frameworks' own schedules, recorded from their code ------------------------------------

LANGCHAIN_CALLS = json.loads((HERE / "golden" / "langchain" / "calls.json").read_text(encoding="utf-8"))


class Fixed:
    """The recording's summarizer: the same text whatever it is given (the token triggers count it)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def supyagent_snapshot(self, messages: Any) -> str:
        return self.text


def _spell(value: list[Any]) -> str:
    return f"{value[0]}={value[1]}"


@pytest.mark.parametrize("case", LANGCHAIN_CALLS["cases"], ids=lambda c: "-".join(f"{k}={_spell(v)}" for k, v in c["config"].items()))
def test_langchain_summarization_runs_before_each_model_call(case: dict[str, Any]):
    """A real LangChain agent (create_agent, SummarizationMiddleware, parallel tool calls, three
    user turns), call by call: each replayed step sends what the agent sent to the model."""
    assert LANGCHAIN_CALLS["versions"]["langchain"] == get_policy("langchain-summarization").framework_version.split()[-1]
    s = load_session("agent.json", text=json.dumps(case["log"]))
    params = {"trigger": _spell(case["config"]["trigger"]), "keep": _spell(case["config"]["keep"]), "max_input_tokens": 128000,
              "model_provider": "openai"}
    tl = simulate(s, "langchain-summarization", params, store=CountStore(), summarizer=Fixed(LANGCHAIN_CALLS["summary"]))
    assert tl.step_rule == REPLIES and len(tl.turns) == len(case["calls"])
    ids = [m.id for m in s.messages]
    for k, call in enumerate(case["calls"]):
        plan = tl.plan_at(k)
        sent = [ids[i] for i in plan.context_index if i is not None]
        summary_first = bool(plan.context_index) and plan.context_index[0] is None
        assert (sent, summary_first) == (call["sent"], call["summary_first"]), (k, tl.turns[k].index)
    covered: list[str] = []
    expected = []
    for batch in case["summarized"]:
        covered += batch
        expected.append(sorted(covered))
    assert [sorted(x.covers) for x in tl.summaries] == expected


LLAMA_CALLS = json.loads((HERE / "golden" / "llamaindex" / "calls.json").read_text(encoding="utf-8"))


def _llama_session() -> Session:
    from .test_policy_llamaindex import spec_message

    spec = LLAMA_CALLS["session"]
    messages = tuple(spec_message(i, m) for i, m in enumerate(spec["messages"]))
    return Session(messages=messages, source="<golden calls>", format="test", system_prompt=spec["system"])


@pytest.mark.parametrize("case", LLAMA_CALLS["cases"], ids=lambda c: json.dumps(c["params"], sort_keys=True))
def test_llamaindex_summary_buffer_gets_once_per_model_call(case: dict[str, Any]):
    """ChatSummaryMemoryBuffer driven as an agent drives it: every message put as it comes, get()
    once before each model call (after a user message or a whole batch of parallel tool results).
    Each replayed step keeps what that get() returned, and the summary get() wrote back is carried."""
    assert LLAMA_CALLS["version"] == get_policy("llamaindex-chat-summary-memory-buffer").framework_version.split()[-1]
    s = _llama_session()
    params = {**case["params"], "context_window": 3900}
    tl = simulate(s, "llamaindex-chat-summary-memory-buffer", params, store=CountStore(), summarizer=Fixed(LLAMA_CALLS["summary"]))
    assert [t.index for t in tl.turns] == [c["request_ends_at"] for c in case["calls"]]
    ids = [m.id for m in s.messages]
    for k, call in enumerate(case["calls"]):
        plan = tl.plan_at(k)
        sent = [m.id for m in plan.messages if m.sent and m.role != "system"]
        summaries = [e for e, i in zip(plan.context, plan.context_index, strict=True) if i is None and e.get("content") != s.system_prompt]
        assert sent == ids[call["first"] : call["request_ends_at"] + 1], k
        assert len(summaries) == int(call["summary_first"]), k  # (its text is ctxviz's stand-in where this get() summarised anew)

def test_the_old_per_message_schedule_disagrees_with_the_recorded_calls():
    """What the recordings catch: run once per message (per tool result), the summary buffer
    summarises at other points and sends other messages at 23 of the 55 recorded calls."""
    s = _llama_session()
    ids = [m.id for m in s.messages]
    wrong = 0
    for case in LLAMA_CALLS["cases"]:
        tl = simulate(s, "llamaindex-chat-summary-memory-buffer", {**case["params"], "context_window": 3900}, store=CountStore(),
                      summarizer=Fixed(LLAMA_CALLS["summary"]), per_message=True)
        for call in case["calls"]:
            plan = tl.plan_at(call["request_ends_at"])
            wrong += [m.id for m in plan.messages if m.sent and m.role != "system"] != ids[call["first"] : call["request_ends_at"] + 1]
    assert wrong == 23
