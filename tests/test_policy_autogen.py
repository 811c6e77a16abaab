"""ctxviz's AutoGen policies against AutoGen's own model contexts and autogen-ext's count_tokens.

tests/golden/autogen/cases.json was written by tests/golden/autogen/generate.py with autogen-core
0.7.5 and autogen-ext[openai] 0.7.5 installed in a scratch venv; these tests need nothing of it.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.autogen.messages import TOKENS_PER_MESSAGE, model_context, vision_tokens
from ctxviz.engine.policies.autogen.token_limited import middle_pops
from ctxviz.engine.session import Message, Session, ToolDefinition
from ctxviz.errors import ParameterError

from .test_policy_llamaindex import spec_message

GOLDEN = json.loads((Path(__file__).parent / "golden" / "autogen" / "cases.json").read_text())
STORE = CountStore()
POLICIES = {"BufferedChatCompletionContext": "autogen-buffered", "HeadAndTailChatCompletionContext": "autogen-head-and-tail",
            "TokenLimitedChatCompletionContext": "autogen-token-limited"}


@cache
def golden_session(name: str) -> Session:
    spec = GOLDEN["sessions"][name]
    messages = tuple(spec_message(i, m) for i, m in enumerate(spec["messages"]))
    tools = tuple(ToolDefinition(t["name"], t.get("description", ""), t.get("parameters", {})) for t in spec.get("tools", []))
    return Session(messages=messages, source=f"<golden {name}>", format="test", system_prompt=spec["system"], tools=tools, model=spec["model"])


def cases(cls: str) -> list[dict[str, Any]]:
    return [c for c in GOLDEN["cases"] if c["class"] == cls]


def test_the_golden_file_is_autogens_and_covers_every_branch():
    assert GOLDEN["framework"] == "autogen-core" and GOLDEN["version"] == "0.7.5" and GOLDEN["autogen_ext"] == "0.7.5"
    assert len(GOLDEN["cases"]) >= 500
    placeholders = [c for c in cases("HeadAndTailChatCompletionContext") if any(isinstance(r, dict) for r in c["returned"])]
    assert placeholders and len(placeholders) < len(cases("HeadAndTailChatCompletionContext"))
    assert {GOLDEN["sessions"][c["session"]]["model"] for c in GOLDEN["cases"]} == {"gpt-4o", "gpt-4-turbo"}
    assert any(c["params"].get("tool_schema") for c in GOLDEN["cases"])
    # Each removal branch is decided by AutoGen in at least one case.
    reasons = {c["class"]: set() for c in GOLDEN["cases"]}
    for c in GOLDEN["cases"]:
        plan = plan_session(golden_session(c["session"]), POLICIES[c["class"]], c["params"], store=STORE)
        reasons[c["class"]] |= {m.reason.split(",")[0] for m in plan.messages if m.decision.value == "dropped"}
    assert any("tool result would start" in r for r in reasons["BufferedChatCompletionContext"])
    assert any("head would end on this function call" in r for r in reasons["HeadAndTailChatCompletionContext"])
    assert any("tool result would start the tail" in r for r in reasons["HeadAndTailChatCompletionContext"])
    assert any("tool result would start the context" in r for r in reasons["TokenLimitedChatCompletionContext"])
    assert any("from the middle" in r for r in reasons["TokenLimitedChatCompletionContext"])


@pytest.mark.parametrize("name", list(GOLDEN["sessions"]))
def test_count_tokens_is_autogen_exts_to_the_token(name):
    session = golden_session(name)
    expected = GOLDEN["counts"][name]
    plan = plan_session(session, "autogen-token-limited", {"token_limit": 10**9}, store=STORE)
    _system, units = model_context(session)
    counts = STORE.get(session, get_policy("autogen-token-limited").scheme(None, session.model))
    each = [TOKENS_PER_MESSAGE + sum(counts[m.index] for m in u.messages) + 3 for u in units]
    assert each == expected["each"]
    assert sum(each) - 3 * (len(each) - 1) == expected["all"]
    leading = each[0] - 3 if units and units[0].kind == "results" else 0  # AutoGen removes a leading tool result
    assert plan.usage["messages"] == expected["all"] - leading
    assert plan.usage["system"] == (expected["system"] - 3 if expected["system"] else 0)
    with_tools = plan_session(session, "autogen-token-limited", {"token_limit": 10**9, "tool_schema": True}, store=STORE)
    assert with_tools.usage["tools"] == (expected["tools"] - 3 if expected["tools"] else 0)


def returned(plan) -> list[Any]:
    out: list[Any] = []
    for entry, index in zip(plan.context, plan.context_index, strict=True):
        if index is not None:
            out.append(plan.messages[index].id)
        elif entry.get("role") == "user":
            out.append({"placeholder": entry["content"], "source": entry["name"]})
    return out


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['class']}-{c['session']}-{json.dumps(c['params'], sort_keys=True)}")
def test_get_messages_returns_what_autogen_returns(case):
    session = golden_session(case["session"])
    plan = plan_session(session, POLICIES[case["class"]], case["params"], store=STORE)
    assert returned(plan) == case["returned"]
    assert plan.usage["messages"] + plan.usage["placeholder"] + plan.usage["tools"] == case["count"]
    sent = {m.id for m in plan.messages if m.sent and m.role != "system"}
    assert sent == {r for r in case["returned"] if isinstance(r, str)}


def test_middle_pops_are_autogens_list_pops():
    for n in range(0, 40):
        messages = list(range(n))
        expected = []
        while messages:
            expected.append(messages.pop(len(messages) // 2))
        assert middle_pops(n) == expected


def test_vision_tokens_follow_autogens_rounding():
    # calculate_vision_tokens truncates with int() after each scale and only shrinks the short side
    # when both sides exceed 768: a 3000 x 1000 image is 2048 x 682, 4 x 2 tiles.
    assert vision_tokens(3000, 1000) == 85 + 170 * 8
    assert vision_tokens(100, 60) == 85 + 170
    assert vision_tokens(1024, 1024) == 765


def test_bad_sizes_give_one_line():
    with pytest.raises(ParameterError, match="buffer_size"):
        get_policy("autogen-buffered").make_params({"buffer_size": 0})
    with pytest.raises(ParameterError, match="tail_size"):
        get_policy("autogen-head-and-tail").make_params({"tail_size": -1})
    with pytest.raises(ParameterError, match="token_limit"):
        get_policy("autogen-token-limited").make_params({"token_limit": 0})


def test_a_recorded_summary_is_a_system_message_where_its_messages_were():
    from ctxviz.engine.session import Message, Summary, TextPart

    texts = [("user", "first task"), ("assistant", "done"), ("user", "second task"), ("assistant", "also done"), ("user", "third")]
    messages = tuple(Message(id=f"m{i}", index=i, role=r, parts=(TextPart(t),)) for i, (r, t) in enumerate(texts))
    s = Session(messages=messages, summaries=(Summary(text="The user asked for two tasks.", covers=("m1", "m2")),), model="gpt-4o")
    plan = plan_session(s, "autogen-buffered", {"buffer_size": 3}, store=CountStore())
    assert [m.decision.value for m in plan.messages] == ["dropped", "summarized", "summarized", "kept", "kept"]
    assert plan.context[0] == {"role": "system", "content": "The user asked for two tasks."}  # the third LLMMessage from the end
    assert plan.summaries[0].decision.value == "kept"
    plan = plan_session(s, "autogen-buffered", {"buffer_size": 2}, store=CountStore())
    assert plan.summaries[0].decision.value == "dropped" and "not sent" in plan.messages[1].reason


# --- issue 21: model families, system messages in the context, what AutoGen raises on --------------
# tests/golden/autogen/cases_more.json was written by tests/golden/autogen/generate_more.py (same venv).

MORE = json.loads((Path(__file__).parent / "golden" / "autogen" / "cases_more.json").read_text())


@cache
def more_session(name: str) -> Session:
    spec = MORE["sessions"][name]
    messages = tuple(_named(spec_message(i, m), m.get("name", "")) for i, m in enumerate(spec["messages"]))
    tools = tuple(ToolDefinition(t["name"], t.get("description", ""), t.get("parameters", {})) for t in spec.get("tools", []))
    return Session(messages=messages, source=f"<golden {name}>", format="test", system_prompt=spec["system"], tools=tools, model=spec["model"])


def _named(message: Message, name: str) -> Message:
    return dataclasses.replace(message, name=name) if name else message


def test_the_more_cases_are_autogens_and_cover_every_family():
    assert MORE["version"] == "0.7.5" and MORE["autogen_ext"] == "0.7.5" and MORE["generator"].endswith("generate_more.py")
    models = {MORE["sessions"][c["session"]]["model"] for c in MORE["cases"]}
    assert {"claude-3-5-sonnet-20241022", "claude-sonnet-4-20250514", "gemini-2.0-flash", "mistral-large-latest"} <= models
    assert sum(1 for c in MORE["cases"] if c["params"].get("system_messages_in_context")) >= 100
    assert len(MORE["cases"]) >= 400


@pytest.mark.parametrize("name", [n for n in MORE["counts"]])
def test_count_tokens_follows_the_models_family(name):
    """Claude drops whitespace-only messages, Gemini sends empty text as ' ', Mistral sends no user name."""
    session = more_session(name)
    expected = MORE["counts"][name]
    counts = STORE.get(session, get_policy("autogen-token-limited").scheme(None, session.model))
    _system, units = model_context(session)
    each = [TOKENS_PER_MESSAGE + sum(counts[m.index] for m in u.messages) + 3 for u in units]
    assert each == expected["each"]
    system = [TOKENS_PER_MESSAGE + counts[m.index] + 3 for m in session.messages if m.role == "system"]
    assert system == expected["system"]
    plan = plan_session(session, "autogen-buffered", {"buffer_size": 1000}, store=STORE)
    leading = each[0] - 3 if units and units[0].kind == "results" else 0
    assert plan.usage["messages"] == expected["all"] - leading


def test_a_claude_session_counts_what_autogen_counts_and_says_what_the_client_leaves_out():
    from ctxviz.engine.session import TextPart

    texts = [("user", "hello there"), ("assistant", "  "), ("user", "")]
    messages = tuple(Message(id=f"m{i}", index=i, role=r, parts=(TextPart(t),)) for i, (r, t) in enumerate(texts))
    claude = Session(messages=messages, model="claude-3-5-sonnet-20241022")
    plan = plan_session(claude, "autogen-buffered", {"buffer_size": 10}, store=CountStore())
    assert plan.usage["messages"] == 17  # autogen-ext 0.7.5's count_tokens for this context (ctxviz counted 21 before)
    assert any("whitespace-only" in n and "#1, #2" in n for n in plan.notes)
    gemini = Session(messages=messages, model="gemini-2.0-flash")
    assert plan_session(gemini, "autogen-buffered", {"buffer_size": 10}, store=CountStore()).usage["messages"] == 23


def more_cases() -> list[dict[str, Any]]:
    return [c for c in MORE["cases"] if "raises" not in c and not isinstance(c["count"], dict)]


@pytest.mark.parametrize("case", more_cases(), ids=lambda c: f"{c['class']}-{c['session']}-{json.dumps(c['params'], sort_keys=True)}")
def test_more_get_messages_return_what_autogen_returns(case):
    session = more_session(case["session"])
    plan = plan_session(session, POLICIES[case["class"]], case["params"], store=STORE)
    assert returned(plan) == case["returned"]
    assert plan.usage["messages"] + plan.usage["placeholder"] + plan.usage["tools"] == case["count"]


def test_system_messages_in_the_context_are_trimmed_like_any_other():
    case = next(c for c in MORE["cases"] if c["params"].get("system_messages_in_context") and c["class"] == "BufferedChatCompletionContext"
                and c["params"]["buffer_size"] == 1 and any(m["role"] == "system" for m in MORE["sessions"][c["session"]]["messages"]))
    session = more_session(case["session"])
    apart = plan_session(session, "autogen-buffered", {"buffer_size": 1}, store=STORE)
    inside = plan_session(session, "autogen-buffered", {"buffer_size": 1, "system_messages_in_context": True}, store=STORE)
    systems = [m.index for m in session.messages if m.role == "system"]
    assert all(apart.messages[i].decision.value == "kept" for i in systems)  # today's default: the agent's, never trimmed
    assert any(inside.messages[i].decision.value == "dropped" for i in systems)
    assert "system_messages_in_context" in get_policy("autogen-token-limited").make_params({}).__dataclass_fields__


@pytest.mark.parametrize("case", [c for c in MORE["cases"] if "raises" in c or isinstance(c.get("count"), dict)],
                         ids=lambda c: f"{c['class']}-{c['session']}-{json.dumps(c['params'], sort_keys=True)}")
def test_where_autogen_raises_ctxviz_plans_and_says_why_in_one_line(case):
    session = more_session(case["session"])
    plan = plan_session(session, POLICIES[case["class"]], case["params"], store=STORE)
    error = case.get("raises") or case["count"]["raises"]
    said = {"ZeroDivisionError": "ZeroDivisionError", "TypeError": "raises TypeError", "ValueError": "raise ValueError 'Invalid name'"}[error]
    lines = [n for n in plan.notes if said in n]
    assert len(lines) == 1 and "\n" not in lines[0], plan.notes
    if "returned" in case:  # the model context itself still returns its messages: ctxviz sends the same
        assert returned(plan) == case["returned"]
    if error == "TypeError":
        assert "'set_level'" in lines[0] and "'level' enum" in lines[0]


def test_a_thin_image_counts_as_the_formula_without_a_tile_and_tall_ones_as_autogen_does():
    from ctxviz.engine.policies.autogen.messages import vision_raises

    assert vision_raises(5000, 1) and vision_raises(4097, 2) and not vision_raises(1, 5000) and not vision_raises(3000, 2)
    assert vision_tokens(5000, 1) == 85
    assert vision_tokens(1, 5000) == 85  # autogen-ext: width scales to 0, no tile


def test_a_replay_with_system_messages_in_the_context_is_the_reference_replay():
    from ctxviz.engine.simulate import simulate

    session = more_session("system_in_context_0")
    params = get_policy("autogen-token-limited").make_params({"token_limit": 80, "system_messages_in_context": True})
    fast = simulate(session, "autogen-token-limited", params, store=STORE)
    reference = simulate(session, "autogen-token-limited", params, store=STORE, incremental=False)
    assert fast.turns == reference.turns
    last = len(fast.turns) - 1  # the last call's request (the file ends with its answer)
    assert fast.turns[last].tokens_sent == plan_session(fast.session_at(last), "autogen-token-limited", params, store=STORE).totals.used
    # Per message, the last turn holds the whole file: the plan of the whole file.
    per_message = simulate(session, "autogen-token-limited", params, store=STORE, per_message=True)
    assert per_message.turns == simulate(session, "autogen-token-limited", params, store=STORE, incremental=False, per_message=True).turns
    assert per_message.turns[-1].tokens_sent == plan_session(session, "autogen-token-limited", params, store=STORE).totals.used
