"""anthropic-clear-tool-uses and anthropic-clear-thinking against Anthropic's documentation of
context editing (docs.claude.com/en/docs/build-with-claude/context-editing, beta header
context-management-2025-06-27, as of November 2025; field names and types as in the SDKs'
BetaClearToolUses20250919Edit / BetaClearThinking20251015Edit, checked against the anthropic 2.12.0 Python
SDK).

Context editing runs on Anthropic's servers, so there is no code to port: these tests check the
documented defaults and the documented configuration examples ("Advanced configuration":
trigger 30,000 input tokens, keep 3 tool uses, clear_at_least 5,000, exclude_tools web_search;
thinking keep 2 turns, or "all"), with the request's input tokens taken from the reported usage.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.session import Message, Session, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from ctxviz.errors import ParameterError

TOOLS = "anthropic-clear-tool-uses"
THINKING = "anthropic-clear-thinking"


def agent_session(n_tools: int, prompt_tokens: int, names: list[str] | None = None, thinking: bool = False, size: int = 200) -> Session:
    """A user request, then n tool calls each answered, then a final answer whose call reported
    `prompt_tokens` of input (so the next request has that plus its output)."""
    messages: list[Message] = [Message(id="u0", index=0, role="user", parts=(TextPart("Find the bug."),))]
    for k in range(n_tools):
        name = names[k] if names else "read_file"
        parts: tuple = ((ThinkingPart(f"thinking {k} " * 20),) if thinking else ()) + (ToolCallPart(f"c{k}", name, json.dumps({"path": f"f{k}.py"})),)
        messages.append(Message(id=f"a{k}", index=len(messages), role="assistant", parts=parts))
        messages.append(Message(id=f"t{k}", index=len(messages), role="tool", tool_call_id=f"c{k}",
                                parts=(ToolResultPart(f"c{k}", f"contents of f{k}.py " * size),)))
    messages.append(Message(id="final", index=len(messages), role="assistant", parts=(TextPart("Found it."),),
                            usage=Usage(input_tokens=prompt_tokens, output_tokens=0)))
    return Session(messages=tuple(messages), model="claude-sonnet-4-5-20250929")


def decisions(plan, prefix: str) -> list[Decision]:
    return [m.decision for m in plan.messages if m.id.startswith(prefix)]


def test_defaults_are_the_documented_ones():
    p = get_policy(TOOLS).default_params()
    assert (p.trigger, p.keep, p.clear_at_least, p.exclude_tools, p.clear_tool_inputs) == ("input_tokens:100000", "tool_uses:3", None, "", "false")
    assert get_policy(THINKING).default_params().keep == "thinking_turns:1"


def test_below_the_trigger_nothing_is_cleared():
    plan = plan_session(agent_session(6, 100_000), TOOLS, {}, store=CountStore())
    assert not plan.extra["triggered"]  # "once the prompt exceeds": 100,000 is not over 100,000
    assert decisions(plan, "t") == [Decision.KEPT] * 6


def test_over_the_trigger_all_but_the_newest_three_tool_results_become_the_placeholder():
    plan = plan_session(agent_session(6, 100_001), TOOLS, {}, store=CountStore())
    assert plan.extra["applied"] and plan.extra["cleared_tool_uses"] == 3
    assert decisions(plan, "t") == [Decision.REPLACED] * 3 + [Decision.KEPT] * 3
    cleared = [c for c, i in zip(plan.context, plan.context_index, strict=True) if i is not None and plan.messages[i].id == "t0"]
    assert cleared[0]["content"] == "[cleared]"
    assert decisions(plan, "a") == [Decision.KEPT] * 6  # clear_tool_inputs defaults to false: the calls stay
    assert any("invalidates the cached prompt prefix from message #2" in n for n in plan.notes)


def test_documented_advanced_configuration():
    params = {"trigger": "input_tokens:30000", "keep": "tool_uses:3", "clear_at_least": "input_tokens:5000", "exclude_tools": "web_search"}
    names = ["web_search", "read_file", "read_file", "web_search", "read_file", "read_file", "read_file"]
    plan = plan_session(agent_session(7, 40_000, names, size=1000), TOOLS, params, store=CountStore())
    # web_search is never cleared; of the five others the newest three stay.
    assert decisions(plan, "t") == [Decision.KEPT, Decision.REPLACED, Decision.REPLACED, Decision.KEPT, Decision.KEPT, Decision.KEPT, Decision.KEPT]
    assert plan.extra["applied"] and plan.extra["cleared_input_tokens"] >= 5000


def test_clear_at_least_skips_a_clearing_that_frees_too_little():
    s = agent_session(4, 40_000)
    freed = plan_session(s, TOOLS, {"trigger": "input_tokens:30000"}, store=CountStore()).extra["cleared_input_tokens"]
    assert freed > 0
    skipped = plan_session(s, TOOLS, {"trigger": "input_tokens:30000", "clear_at_least": f"input_tokens:{freed + 1}"}, store=CountStore())
    assert not skipped.extra["applied"] and decisions(skipped, "t") == [Decision.KEPT] * 4
    done = plan_session(s, TOOLS, {"trigger": "input_tokens:30000", "clear_at_least": f"input_tokens:{freed}"}, store=CountStore())
    assert done.extra["applied"]


def test_trigger_by_tool_uses_and_keep():
    s = agent_session(5, 10)
    assert not plan_session(s, TOOLS, {"trigger": "tool_uses:5"}, store=CountStore()).extra["triggered"]
    plan = plan_session(s, TOOLS, {"trigger": "tool_uses:4", "keep": "tool_uses:1"}, store=CountStore())
    assert decisions(plan, "t") == [Decision.REPLACED] * 4 + [Decision.KEPT]


def test_clear_tool_inputs_clears_the_calls_too():
    plan = plan_session(agent_session(4, 200_000), TOOLS, {"clear_tool_inputs": "true"}, store=CountStore())
    assert decisions(plan, "a") == [Decision.REPLACED] + [Decision.KEPT] * 3
    sent = next(c for c, i in zip(plan.context, plan.context_index, strict=True) if i == 1)
    assert sent["tool_calls"][0]["function"]["arguments"] == "{}"
    only = plan_session(agent_session(4, 200_000), TOOLS, {"clear_tool_inputs": "grep"}, store=CountStore())
    assert decisions(only, "a") == [Decision.KEPT] * 4  # a list of names clears only those tools' inputs


def test_thinking_keeps_the_newest_turns():
    def turns(n: int) -> Session:
        messages = []
        for k in range(n):
            messages.append(Message(id=f"u{k}", index=len(messages), role="user", parts=(TextPart(f"question {k}"),)))
            messages.append(Message(id=f"a{k}", index=len(messages), role="assistant",
                                    parts=(ThinkingPart(f"let me think about {k} " * 30), TextPart(f"answer {k}"))))
        return Session(messages=tuple(messages))

    s = turns(4)
    one = plan_session(s, THINKING, {}, store=CountStore())
    assert decisions(one, "a") == [Decision.TRUNCATED] * 3 + [Decision.KEPT]
    assert one.context[-3]["content"] == "answer 2"  # the thinking is gone, the answer stays
    two = plan_session(s, THINKING, {"keep": "thinking_turns:2"}, store=CountStore())
    assert decisions(two, "a") == [Decision.TRUNCATED] * 2 + [Decision.KEPT] * 2
    everything = plan_session(s, THINKING, {"keep": "all"}, store=CountStore())
    assert decisions(everything, "a") == [Decision.KEPT] * 4


def test_keep_counts_assistant_turns_not_only_those_with_thinking():
    messages = [Message(id="u0", index=0, role="user", parts=(TextPart("q0"),)),
                Message(id="a0", index=1, role="assistant", parts=(ThinkingPart("deep thought " * 20), TextPart("a0"))),
                Message(id="u1", index=2, role="user", parts=(TextPart("q1"),)),
                Message(id="a1", index=3, role="assistant", parts=(TextPart("a1"),))]
    plan = plan_session(Session(messages=tuple(messages)), THINKING, {}, store=CountStore())
    # keep 1: the newest assistant turn is a1 (no thinking), so a0's thinking goes
    assert decisions(plan, "a") == [Decision.TRUNCATED, Decision.KEPT]


def test_a_turn_spans_its_tool_calls():
    s = agent_session(3, 10, thinking=True)  # one user message: all three thinking blocks are one turn
    plan = plan_session(s, THINKING, {}, store=CountStore())
    assert decisions(plan, "a") == [Decision.KEPT] * 3


@pytest.mark.parametrize(("policy", "params", "field"), [
    (TOOLS, {"trigger": "tokens:5"}, "trigger"), (TOOLS, {"keep": "tool_uses:x"}, "keep"),
    (TOOLS, {"clear_at_least": "tool_uses:3"}, "clear_at_least"), (THINKING, {"keep": "thinking_turns:0"}, "keep"),
])
def test_bad_parameters_are_one_line(policy, params, field):
    with pytest.raises(ParameterError, match=field):
        get_policy(policy).make_params(params)


def test_parts_add_up_with_a_recorded_summary():
    s = agent_session(4, 200_000)
    from ctxviz.engine.session import Summary

    s = dataclasses.replace(s, summaries=(Summary(text="summary of the start", covers=("u0", "a0", "t0")),))
    plan = plan_session(s, TOOLS, {}, store=CountStore())
    assert sum(plan.usage.values()) == plan.totals.used
    assert [m.decision for m in plan.messages[:3]] == [Decision.SUMMARIZED] * 3
    assert plan.context[1] == {"role": "user", "content": "summary of the start"}
