"""What OpenHands' summariser is shown, and so what ctxviz's stand-in summary of an OpenHands
condensation may hold: `str(event)` of each forgotten event, a preview of 500 characters (a
message's 497 and "..."), a tool call's name but never its arguments, and the previous summary's
first 497 characters only.

The previews are the SDK's own: tests/golden/openhands/cases_previews.json was recorded by
tests/golden/openhands/generate_previews.py from openhands-sdk's events.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies.openhands.summary_input import N_CHAR_PREVIEW, shown, summary_shown
from ctxviz.engine.session import Message, TextPart, ToolCallPart, ToolResultPart, default_category
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests/golden/openhands/cases_previews.json").read_text(encoding="utf-8"))
POLICY = "openhands-llm-summarizing"


def message_of(i: int, m: dict[str, Any]) -> Message:
    parts: list[Any] = []
    if m["role"] == "tool":
        parts.append(ToolResultPart(m["tool_call_id"], m["text"]))
    else:
        parts += [TextPart(t) for t in (m.get("texts") or ([m["text"]] if m["text"] else []))]
    parts += [ToolCallPart(c["id"], c["name"], c["arguments"]) for c in m.get("tool_calls", [])]
    return Message(f"m{i}", i, m["role"], tuple(parts), tool_call_id=m.get("tool_call_id", ""), category=default_category(m["role"]))


MESSAGES = [message_of(i, m) for i, m in enumerate(GOLDEN["messages"])]


def preview_in(event: str) -> str:
    """The content an event's `str` shows, after its header line and label."""
    body = event.split("\n", 1)[1]
    for label in ("  user: ", "  assistant: ", "  Error: ", "  Thought: "):
        if body.startswith(label):
            return body[len(label):].split("\n  Action: ")[0]
    return body.split("  Result: ", 1)[1]


@pytest.mark.parametrize("case", GOLDEN["events"], ids=lambda c: f"{c['message']}-{c['kind']}")
def test_each_message_is_read_as_the_sdk_shows_its_events(case: dict[str, Any]) -> None:
    m = MESSAGES[case["message"]]
    view = shown(m)
    expected = preview_in(case["str"])
    if case["kind"] == "action":
        firsts = [c for c in GOLDEN["events"] if c["message"] == case["message"] and c["kind"] == "action"]
        thought = preview_in(firsts[0]["str"])  # the message's text is the thought of its first call
        assert view is not None
        assert [p.text for p in view.parts if isinstance(p, TextPart)] == ([thought] if thought else [])
        calls = [p for p in view.parts if isinstance(p, ToolCallPart)]
        assert [c.name for c in calls] == [c["name"] for c in GOLDEN["messages"][case["message"]]["tool_calls"]]
        assert all(c.arguments == "" for c in calls)  # the SDK shows a call's name, never its arguments
        assert any(case["str"].endswith(f"Call: {c.name}:{c.id}") for c in calls)
        return
    assert view is not None and view.text == expected


@pytest.mark.parametrize("case", GOLDEN["summaries"], ids=lambda c: str(len(c["summary"])))
def test_the_previous_summary_is_shown_as_the_sdk_shows_it(case: dict[str, Any]) -> None:
    assert summary_shown(case["summary"]).text == preview_in(case["str"])
    assert len(summary_shown(case["summary"]).text) <= N_CHAR_PREVIEW


def test_a_message_read_whole_is_the_message_itself() -> None:
    short = MESSAGES[0]
    assert shown(short) is short  # (its reading is the one the offline summary keeps for it)


def condensed() -> list[str]:
    session = load_session(str(ROOT / "sample_sessions/coding_agent.yaml"))
    return [s.text for s in simulate(session, POLICY, {"max_size": 40, "keep_first": 2}).summaries]


def test_the_next_summary_sees_only_the_head_of_the_one_it_replaces() -> None:
    """The second summary's summariser is shown the first summary's first 497 characters: what the
    first summary listed past them (its later sections) is not in the second, unless an event it
    forgets says it again."""
    texts = condensed()
    assert len(texts) >= 3
    first, second = texts[0], texts[1]
    assert len(first) > N_CHAR_PREVIEW
    head = summary_shown(first).text
    tail_items = [line[2:] for line in first[len(head) - 3:].split("\n") if line.startswith("- ") and line != "- (none)"]
    assert tail_items
    for item in tail_items:
        if item not in second:
            break
    else:
        pytest.fail("every item past the first summary's head reached the next summary")


def test_a_plan_says_what_its_summariser_was_shown() -> None:
    session = load_session(str(ROOT / "sample_sessions/coding_agent.yaml"))
    plan = plan_session(session, POLICY, {"max_size": 40, "keep_first": 2})
    said = plan.extra["summary_shown"]
    shown_messages = {k for a, b in said["messages"] for k in range(a, b + 1)}
    summarized = {m.index for m in plan.messages if m.decision is Decision.SUMMARIZED}
    assert shown_messages and shown_messages <= summarized
    assert json.loads(json.dumps(plan.to_json()))["extra"]["summary_shown"] == said  # the plan's JSON holds it
    # with a summary in force, the next condensation is shown the summary it folds, as far as shown
    first, second = simulate(session, POLICY, {"max_size": 40, "keep_first": 2}).summaries[:2]
    upto = next(m.index for m in session.messages if m.id == second.written_after[-1])
    prefix = dataclasses.replace(session, messages=session.messages[: upto + 1], summaries=(first,))
    said = plan_session(prefix, POLICY, {"max_size": 40, "keep_first": 2}).extra["summary_shown"]
    assert said["previous_summary_shown"] == first.text[: N_CHAR_PREVIEW - 3] + "..."
    assert plan_session(prefix, POLICY, {"max_size": 40, "keep_first": 2}).extra["summarized_ids"] == list(second.covers)


def test_the_replay_equals_the_reference_with_summaries_chained() -> None:
    session = load_session(str(ROOT / "sample_sessions/coding_agent.yaml"))
    for params in ({"max_size": 40, "keep_first": 2}, {"max_size": 24, "keep_first": 0}, {"max_size": 60, "keep_first": 4}):
        fast = simulate(session, POLICY, params)
        slow = simulate(session, POLICY, params, incremental=False)
        assert fast.turns == slow.turns
        assert [s.text for s in fast.summaries] == [s.text for s in slow.summaries]
        assert len(fast.summaries) >= 2
        # no file a call named only in its arguments is in a summary
        assert not any("(changed via" in t or "(read via" in t for t in (s.text for s in fast.summaries))


def empty(features: Any) -> bool:
    return features is None or not any(features)


@pytest.mark.parametrize("sample", ["coding_agent.yaml", "multimodal_review.yaml", "claude_code_compaction.jsonl", "codex_rollout.jsonl",
                                    "gemini_cli_session.json", "support_chat.yaml"])
def test_the_reading_made_without_the_view_is_the_views(sample: str) -> None:
    """`reading` reads a message as shown without building the view; it must read what the view is."""
    from ctxviz.engine.policies.openhands.summary_input import _read
    from ctxviz.engine.summarizers import _extract

    messages = [*load_session(str(ROOT / "sample_sessions" / sample)).messages, *MESSAGES]
    for m in messages:
        view = shown(m)
        made = _read(m)
        if view is None:
            assert empty(made)
        else:
            assert made == _extract(view) or (empty(made) and empty(_extract(view))), m.id


def test_a_long_chain_of_summaries_is_made_without_recursion() -> None:
    """An earlier summary's text is made from the one it folded, and so on down the chain: a long
    session condensed thousands of times must not run out of Python's recursion limit."""
    from ctxviz.engine.policies.openhands.log import Log, Measure

    session_messages = MESSAGES[:2]
    log = Log([], [])
    log.inputs["summary-0"] = (0,)
    for k in range(1, 3000):
        log.inputs[f"summary-{k}"] = (f"summary-{k - 1}", 1)
    measure = Measure(type("S", (), {"messages": session_messages})(), lambda e: 0, len)  # type: ignore[arg-type]
    text = measure.text_of(log, "summary-2999")
    assert text and len(log.texts) == 3000
