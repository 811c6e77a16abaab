"""ctxviz's Strands policies against Strands' own conversation managers (strands-agents 1.62.0).

tests/golden/strands/cases.json was recorded by tests/golden/strands/generate.py, which drives
SlidingWindowConversationManager and SummarizingConversationManager themselves; nothing of Strands
is needed here. Each recorded conversation becomes a ctxviz Session (a user message of tool results
becomes one `tool` message per result, which the policy joins back into one Strands message).
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.counting import count_session
from ctxviz.engine.plan import Decision
from ctxviz.engine.policies import get_policy
from ctxviz.engine.session import (
    ImagePart,
    Message,
    Session,
    Summary,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolResultPart,
    default_category,
)
from ctxviz.engine.simulate import prefix_counts

GOLDEN = json.loads((Path(__file__).parent / "golden" / "strands" / "cases.json").read_text(encoding="utf-8"))
SLIDING = [c for c in GOLDEN["cases"] if c["manager"] == "SlidingWindowConversationManager"]
SUMMARIZING = [c for c in GOLDEN["cases"] if c["manager"] == "SummarizingConversationManager"]


def _image(block: dict[str, Any]) -> ImagePart:
    fmt = block["format"]
    return ImagePart(url=f"data:image/{fmt};base64,{block['source']['bytes']}", media_type=f"image/{fmt}")


@cache
def converted(session_name: str) -> tuple[tuple[Message, ...], tuple[tuple[int, ...], ...]]:
    """The session's messages as ctxviz holds them, and for each Strands message its ctxviz messages."""
    out: list[Message] = []
    members: list[tuple[int, ...]] = []
    for position, sm in enumerate(GOLDEN["sessions"][session_name]):
        mine: list[int] = []
        if sm["role"] == "user" and any("toolResult" in b for b in sm["content"]):
            for block in sm["content"]:
                result = block["toolResult"]
                parts = tuple(_image(item["image"]) if "image" in item
                              else ToolResultPart(result["toolUseId"], item["text"], is_error=result["status"] == "error")
                              for item in result["content"])
                mine.append(len(out))
                out.append(Message(f"m{len(out)}", len(out), "tool", parts, tool_call_id=result["toolUseId"], category=default_category("tool")))
        else:
            parts_list: list[Any] = []
            for block in sm["content"]:
                if "text" in block:
                    parts_list.append(TextPart(block["text"]))
                elif "image" in block:
                    parts_list.append(_image(block["image"]))
                elif "toolUse" in block:
                    use = block["toolUse"]
                    parts_list.append(ToolCallPart(use["toolUseId"], use["name"], json.dumps(use["input"])))
                elif "reasoningContent" in block:
                    parts_list.append(ThinkingPart(block["reasoningContent"]["reasoningText"]["text"]))
            mine.append(len(out))
            out.append(Message(f"m{len(out)}", len(out), sm["role"], tuple(parts_list), category=default_category(sm["role"])))
        members.append(tuple(mine))
        assert position == len(members) - 1
    return tuple(out), tuple(members)


def session_of(case: dict[str, Any]) -> tuple[Session, tuple[tuple[int, ...], ...]]:
    messages, members = converted(case["session"])
    tools = tuple(ToolDefinition(s["name"], s["description"], s["inputSchema"]["json"]) for s in case.get("tool_specs") or [])
    return Session(messages=messages, system_prompt=case.get("system_prompt") or "", tools=tools, model="unknown-model"), members


def run(policy_name: str, session: Session, params: dict[str, Any]):
    policy = get_policy(policy_name)
    counts = count_session(session, policy.scheme())
    return counts, policy.plan(session, policy.make_params(params), counts)


def sliding_params(case: dict[str, Any]) -> dict[str, Any]:
    params = dict(case["params"])
    proactive = params.pop("proactive_compression", None)
    if proactive is True:
        params["proactive_compression"] = 0.7
    elif isinstance(proactive, dict):
        params["proactive_compression"] = proactive["compression_threshold"]
    params["context_window_limit"] = case["context_window_limit"]
    # The generator calls apply_management once on the list as it stands, as per_turn=True does before a model call.
    params["per_turn"] = 1
    params["replay_history"] = False
    return params


def test_the_golden_file_covers_what_users_rely_on() -> None:
    assert GOLDEN["version"] == "1.62.0"
    assert len(SLIDING) >= 100 and len(SUMMARIZING) >= 40
    assert sum(any("tool_result_texts" in r for r in c["remaining"]) for c in SLIDING) >= 5
    assert any(c["error"] for c in SLIDING) and any(c["error"] for c in SUMMARIZING)


@pytest.mark.parametrize("case", SLIDING, ids=[c["name"] for c in SLIDING])
def test_sliding_window_keeps_and_cuts_what_strands_does(case: dict[str, Any]) -> None:
    session, members = session_of(case)
    counts, plan = run("strands-sliding-window", session, sliding_params(case))
    # Strands' own count_tokens, message by message and for the request before and after.
    for position, tokens in enumerate(case["message_tokens"]):
        assert sum(counts.message_tokens[i] for i in members[position]) == tokens, position
    kept_positions = [r["position"] for r in case["remaining"]]
    expected_sent = {i for p in kept_positions for i in members[p]}
    sent = {m.index for m in plan.messages if m.sent}
    assert sent == expected_sent
    assert tuple(i for i in plan.context_index if i is not None) == tuple(sorted(expected_sent))
    assert plan.totals.used == case["after_tokens"]
    for r in case["remaining"]:
        texts = r.get("tool_result_texts")
        for k, index in enumerate(members[r["position"]]):
            decision = plan.messages[index].decision
            if texts is None:
                assert decision is Decision.KEPT
                continue
            before = [p.text if isinstance(p, ToolResultPart) else None for p in session.messages[index].parts]
            changed = texts[k] != before
            assert decision is (Decision.KEPT if not changed else Decision.REPLACED if all(
                b is None or b == t for b, t in zip(before, texts[k], strict=True)) else Decision.TRUNCATED)
            if changed:
                sent_content = plan.context[plan.context_index.index(index)]["content"]
                assert sent_content == "\n".join(texts[k])
        if r["pinned"]:
            assert all(plan.messages[i].zone == "pinned" for i in members[r["position"]])
    if case["error"] == "Unable to trim conversation context!":
        assert any("ContextWindowOverflowException" in n for n in plan.notes)
    assert plan.totals.fits == (case["after_tokens"] <= case["context_window_limit"])


def test_reasons_name_the_window() -> None:
    case = next(c for c in SLIDING if c["params"] == {"window_size": 5} and len(c["remaining"]) < len(GOLDEN["sessions"][c["session"]]))
    session, _ = session_of(case)
    _, plan = run("strands-sliding-window", session, sliding_params(case))
    dropped = [m for m in plan.messages if m.decision is Decision.DROPPED]
    assert dropped and any("outside the newest 5 messages (window_size=5)" in m.reason for m in dropped)


def summarizing_params(case: dict[str, Any]) -> dict[str, Any]:
    # context_window_limit=1: every plan overflows, so each plan is one reduce_context pass, as the generator forced.
    return {**case["params"], "context_window_limit": 1}


@pytest.mark.parametrize("case", SUMMARIZING, ids=[c["name"] for c in SUMMARIZING])
def test_summarizing_summarises_and_keeps_what_strands_does(case: dict[str, Any]) -> None:
    session, members = session_of(case)
    policy = get_policy("strands-summarizing")
    params = policy.make_params(summarizing_params(case))
    assert params.ratio == case["summary_ratio_used"]
    counts = count_session(session, policy.scheme())
    carried: tuple[Summary, ...] = ()
    expected_passes = case["summarised"]
    for k in range(case["passes"]):
        current = dataclasses.replace(session, summaries=carried)
        plan = policy.plan(current, params, counts)
        if k >= len(expected_passes):  # Strands raised at this pass: nothing changes, and the plan says why
            assert case["error"] and any(case["error"] in n for n in plan.notes)
            assert not plan.extra["summarized_ids"]
            break
        expected = expected_passes[k]
        new = [i for p in expected if p >= 0 for i in members[p]]
        assert sorted(session.messages[i].id for i in new) == sorted(set(plan.extra["summarized_ids"]) - {c for s in carried for c in s.covers})
        assert all(plan.messages[i].decision is Decision.SUMMARIZED for i in new)
        assert (-k in expected) == bool(carried) if k else all(p >= 0 for p in expected)
        carried = (Summary(text=f"pass {k + 1}", covers=tuple(plan.extra["summarized_ids"])),)
        final = plan
    else:
        final = plan
    if len(expected_passes) == case["passes"]:
        # The list Strands holds after the last pass: pinned messages, the summary (None), the rest.
        layout = [None if r["position"] < 0 else members[r["position"]] for r in case["remaining"]]
        want: list[int | None] = []
        for entry in layout:
            want += [None] if entry is None else list(entry)
        assert list(final.context_index) == want
        summary = next(r for r in case["remaining"] if r["position"] < 0)
        assert summary["role"] == "user" and final.context[want.index(None)]["role"] == "user"
        for r in case["remaining"]:
            if r["position"] >= 0 and r["pinned"]:
                assert all(final.messages[i].zone == "pinned" for i in members[r["position"]])


def test_summarizing_waits_for_an_overflow() -> None:
    case = SUMMARIZING[0]
    session, _ = session_of(case)
    counts, plan = run("strands-summarizing", session, {"context_window_limit": 10**9})
    assert all(m.decision is Decision.KEPT for m in plan.messages) and not plan.summaries
    assert "only when the model overflows" in plan.messages[0].reason


AGENT = [c for c in GOLDEN["cases"] if c["manager"] == "Agent+SlidingWindowConversationManager"]


@pytest.mark.parametrize("case", AGENT, ids=[c["name"] for c in AGENT])
def test_each_model_call_of_a_real_agent_gets_what_the_plan_sends(case: dict[str, Any]) -> None:
    """A strands Agent living several invocations (apply_management at the end of each; with
    per_turn before every N-th model call too): the plan of the transcript so far sends exactly
    what the agent sent to the model at that call."""
    full, members = session_of(case)
    params = dict(case["params"])
    params["per_turn"] = int(params.get("per_turn", 0))  # Strands' True is 1
    policy = get_policy("strands-sliding-window")
    counts = count_session(full, policy.scheme())
    assert len(case["calls"]) >= 3
    for seen in case["calls"]:
        upto = max(seen) + 1  # the newest message the model was sent is the newest in the transcript
        size = sum(len(members[p]) for p in range(upto))
        prefix = dataclasses.replace(full, messages=full.messages[:size])
        plan = policy.plan(prefix, policy.make_params(params), prefix_counts(counts, prefix))
        assert [i for i in plan.context_index if i is not None] == [i for p in seen for i in members[p]]


OVERFLOW = [c for c in GOLDEN["cases"] if c["manager"] == "Agent+SlidingWindowConversationManager+overflow"]


def overflow_params(case: dict[str, Any]) -> dict[str, Any]:
    params = {**case["params"], "context_window_limit": case["context_window_limit"]}
    params["per_turn"] = int(params.get("per_turn", 0))  # Strands' True is 1
    return params


def test_the_overflow_goldens_cover_recoveries_that_last() -> None:
    """Enough real overflows to matter: calls sent after an earlier recovery trimmed or cut,
    per_turn agents whose retries are counted, and agents Strands could not rescue."""
    assert len(OVERFLOW) >= 30
    sent_after_recovery = 0
    for case in OVERFLOW:
        attempts = case["attempts"]
        first = next((k for k, a in enumerate(attempts) if a["overflow"]), len(attempts))
        sent_after_recovery += sum(1 for a in attempts[first + 1:] if not a["overflow"] and a["transcript"] > attempts[first]["transcript"])
    assert sent_after_recovery >= 100
    assert sum(1 for c in OVERFLOW if c["params"].get("per_turn") and any(a["overflow"] for a in c["attempts"])) >= 10
    assert sum(1 for c in OVERFLOW if any("cut" in a for a in c["attempts"])) >= 15
    assert sum(1 for c in OVERFLOW if c["error"]) >= 5


@pytest.mark.parametrize("case", OVERFLOW, ids=[c["name"] for c in OVERFLOW])
def test_what_an_agent_trimmed_at_an_overflow_stays_trimmed(case: dict[str, Any]) -> None:
    """A real Strands agent whose model refuses requests over its window: at every call it made,
    the plan of the transcript so far sends what the agent sent (the same messages, the same cut
    tool results, the same count), the recoveries of earlier calls kept; and the replay steps at
    those calls, incremental and reference alike."""
    from ctxviz.engine.simulate import simulate

    full, members = session_of(case)
    policy = get_policy("strands-sliding-window")
    params = policy.make_params(overflow_params(case))
    counts = count_session(full, policy.scheme())
    sizes = [0]
    for m in members:
        sizes.append(sizes[-1] + len(m))
    made = [a for a in case["attempts"] if not a["overflow"]]
    timeline = simulate(full, "strands-sliding-window", params)
    assert timeline.turns == simulate(full, "strands-sliding-window", params, incremental=False).turns
    for step, attempt in enumerate(made):
        prefix = dataclasses.replace(full, messages=full.messages[: sizes[attempt["transcript"]]])
        plan = policy.plan(prefix, params, prefix_counts(counts, prefix))
        assert [i for i in plan.context_index if i is not None] == [i for p in attempt["sent"] for i in members[p]], step
        assert plan.totals.used == attempt["tokens"]
        for position, texts in attempt.get("cut", {}).items():
            for k, index in enumerate(members[int(position)]):
                sent = plan.context[plan.context_index.index(index)]["content"]
                assert sent == "\n".join(texts[k]) or plan.messages[index].decision is Decision.KEPT and texts[k] == [
                    p.text for p in full.messages[index].parts]
        turn = timeline.turns[step]
        assert (turn.index, turn.tokens_sent) == (len(prefix.messages) - 1, attempt["tokens"])
    if case["error"]:  # the agent raised at its last request: the replay's last step says so
        assert len(timeline.turns) == len(made) + 1
        last = timeline.plan_at(len(made))
        assert any("raises ContextWindowOverflowException" in n for n in last.notes)
