"""ctxviz's LangChain policies against LangChain's own code: every case in tests/golden/langchain/cases.json
(recorded by generate.py from langchain 1.5.0 / langchain-core 1.8.2) is replayed here without
LangChain installed, and must give the same counts, the same kept messages and the same cut or
cleared contents."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.counting import TokenCounts, count_session
from ctxviz.engine.plan import Decision
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.langchain import counting as lc
from ctxviz.engine.policies.langchain.summarization import SUMMARY_PREFIX, TOO_LONG, run_pass
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart, message_with
from ctxviz.engine.simulate import simulate
from ctxviz.engine.tokenizers import get_tokenizer
from ctxviz.errors import ParameterError
from ctxviz.io.loaders import load_session

from .loader_checks import assert_plans_simulates_and_exports

GOLDEN = json.loads((Path(__file__).parent / "golden" / "langchain" / "cases.json").read_text(encoding="utf-8"))
SAMPLE = Path(__file__).parent.parent / "sample_sessions" / "coding_agent.langchain.json"


@cache
def golden_session(name: str) -> Session:
    """A recorded input, read by ctxviz's own LangChain loader (messages_to_dict form)."""
    return load_session(f"{name}.json", text=json.dumps(GOLDEN["sessions"][name]))


@cache
def counts_for(name: str, policy: str, tokenizer: str) -> TokenCounts:
    return count_session(golden_session(name), get_policy(policy).scheme(tokenizer))


def test_cases_come_from_the_versions_the_policies_name():
    assert GOLDEN["versions"] == {"langchain": "1.5.0", "langchain-core": "1.8.2", "langchain-openai": "1.7.4", "langchain-anthropic": "1.7.10"}
    assert get_policy("langchain-trim").framework_version == "langchain-core 1.8.2"
    assert get_policy("langchain-summarization").framework_version == "langchain 1.5.0"
    assert get_policy("langchain-context-editing").framework_version == "langchain 1.5.0"
    assert len(GOLDEN["trim"]) >= 500 and len(GOLDEN["summarization"]) >= 150 and len(GOLDEN["context_editing"]) >= 100


@pytest.mark.parametrize("name", sorted(GOLDEN["sessions"]))
def test_count_tokens_approximately_per_message_total_and_scaled(name):
    session = golden_session(name)
    expected = GOLDEN["counts"][name]
    four, anthropic = get_tokenizer("langchain-approx"), get_tokenizer("langchain-approx-3.3")
    per_message = [lc.measure(m, four) for m in session.messages]
    assert per_message == expected["per_message"]
    assert [lc.measure(m, anthropic) for m in session.messages] == expected["per_message_3_3"]
    assert sum(per_message) == expected["total"]
    assert lc.scaled_total(per_message, [lc.lc_view(m) for m in session.messages]) == expected["scaled"]


@pytest.mark.parametrize("name", ["simple", "multimodal", "random0", "random3", "random5"])
def test_messages_from_other_formats_count_the_same_when_rebuilt_from_their_parts(name):
    """Without the LangChain record (a session from another log), ctxviz rebuilds the message from
    its parts: text, image blocks, thinking blocks, tool calls (repr of LangChain's ToolCall dicts)."""
    four = get_tokenizer("langchain-approx")
    session = golden_session(name)
    assert [lc.measure(message_with(m, raw=None), four) for m in session.messages] == GOLDEN["counts"][name]["per_message"]


def test_a_tool_call_rebuilt_from_parts_counts_the_repr_of_langchains_tool_call():
    call = Message("a", 0, "assistant", (ToolCallPart("c1", "read", '{"path": "x.py", "n": 2}'),))
    text = lc.counted_text(lc.lc_view(call))[0]
    assert text == "[{'name': 'read', 'args': {'path': 'x.py', 'n': 2}, 'id': 'c1', 'type': 'tool_call'}]assistant"
    result = Message("t", 1, "tool", (ToolResultPart("c1", "ok"),), name="read", tool_call_id="c1")
    assert lc.measure(result, get_tokenizer("langchain-approx")) == -(-len("okc1toolread") // 4) + 3


def _spell_types(value: Any) -> str:
    return ",".join(value) if isinstance(value, list) else value


def trim_params(options: dict[str, Any]) -> dict[str, Any]:
    return {k: _spell_types(v) if k in ("end_on", "start_on") else v for k, v in options.items()}


def test_trim_messages_every_case():
    policy = get_policy("langchain-trim")
    failures = []
    for case in GOLDEN["trim"]:
        session = golden_session(case["session"])
        plan = policy.plan(session, policy.make_params(trim_params(case["options"])), counts_for(case["session"], "langchain-trim", "langchain-approx"))
        got = []
        for index, sent in zip(plan.context_index, plan.context, strict=True):
            decided = plan.messages[index]
            item: dict[str, Any] = {"id": decided.id}
            if decided.decision is Decision.TRUNCATED:
                item["content"] = sent["content"]
            item["tokens"] = decided.sent_tokens
            got.append(item)
        if got != case["result"]:
            failures.append((case["session"], case["options"]))
    assert not failures, f"{len(failures)} cases differ, first: {failures[:3]}"


def test_trim_cases_cover_every_option():
    options = [c["options"] for c in GOLDEN["trim"]]
    for key in ("allow_partial", "end_on", "start_on", "include_system", "text_splitter"):
        assert any(key in o for o in options), key
    assert {o["strategy"] for o in options} == {"first", "last"}
    cut = [c for c in GOLDEN["trim"] if any("content" in r for r in c["result"])]
    assert any(isinstance(r.get("content"), list) for c in cut for r in c["result"])  # blocks dropped from a list
    assert any(isinstance(r.get("content"), str) for c in cut for r in c["result"])  # text cut by the splitter


def test_trim_reasons_name_the_rule():
    policy = get_policy("langchain-trim")
    session = golden_session("tools")
    counts = counts_for("tools", "langchain-trim", "langchain-approx")
    plan = policy.plan(session, policy.make_params({"max_tokens": 400, "start_on": "human", "end_on": "human,tool"}), counts)
    reasons = [m.reason for m in plan.messages if m.decision is Decision.DROPPED]
    assert any(r.startswith("dropped: start_on='human'") for r in reasons)
    assert any(r.startswith("dropped: older than the newest messages that fit max_tokens=400") for r in reasons)
    plan = policy.plan(session, policy.make_params({"max_tokens": 100000, "end_on": "ai"}), counts)
    assert session.messages[-1].role == "user" and plan.messages[-1].reason.startswith("dropped: end_on='ai'")


def _spell_size(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list) and value and isinstance(value[0], str):
        return f"{value[0]}={value[1]}"
    return "|".join(_spell_size(v) for v in value)


def summarization_setup(case: dict[str, Any]) -> tuple[Session, Any, TokenCounts]:
    cfg = case["config"]
    policy = get_policy("langchain-summarization")
    overrides: dict[str, Any] = {"trigger": _spell_size(cfg.get("trigger")), "max_input_tokens": cfg.get("max_input_tokens", 128000),
                                 "model_provider": cfg.get("ls_provider", "openai")}
    if "keep" in cfg:
        overrides["keep"] = _spell_size(cfg["keep"])
    if "trim_tokens_to_summarize" in cfg:
        overrides["trim_tokens_to_summarize"] = cfg["trim_tokens_to_summarize"]
    tokenizer = "langchain-approx-3.3" if cfg.get("llm_type", "").startswith("anthropic-chat") else "langchain-approx"
    return golden_session(case["session"]), policy.make_params(overrides), counts_for(case["session"], "langchain-summarization", tokenizer)


def test_summarization_middleware_every_case():
    policy = get_policy("langchain-summarization")
    failures = []
    for case in GOLDEN["summarization"]:
        session, params, counts = summarization_setup(case)
        plan = policy.plan(session, params, counts)
        expected = case["result"]
        got: dict[str, Any] = {"fired": plan.extra["fired"], "total_tokens": plan.extra["total_tokens"]}
        want: dict[str, Any] = {"fired": expected["fired"], "total_tokens": expected["total_tokens"]}
        if expected["fired"]:
            got["preserved"] = [m.id for m in plan.messages if m.decision is Decision.KEPT]
            want["preserved"] = expected["preserved"]
            # The summary HumanMessage goes first, with LangChain's prefix; the text is the stand-in's
            # except where LangChain writes its own (nothing fits trim_tokens_to_summarize).
            first = plan.context[0]
            got["summary"] = (first["role"], first["content"].startswith(SUMMARY_PREFIX), plan.extra["summary_text"] == TOO_LONG)
            want["summary"] = ("user", expected["summary_message"]["content"].startswith(SUMMARY_PREFIX),
                               expected["summary_message"]["content"] == SUMMARY_PREFIX + TOO_LONG)
            run = run_pass(session, params, counts)
            got["summarizer_input"] = [{"id": session.messages[e.pos].id, **({"content": e.view.content} if e.view else {})}
                                       for e in run.summary_input]
            want["summarizer_input"] = [{k: v for k, v in r.items() if k in ("id", "content")} for r in expected["summarizer_input"] or []]
        if got != want:
            failures.append((case["session"], case["config"], got, want))
    assert not failures, f"{len(failures)} cases differ, first: {failures[:2]}"


def test_summarization_cases_cover_the_rules():
    results = [(c["config"], c["result"]) for c in GOLDEN["summarization"]]
    assert any(r["fired"] for _, r in results) and any(not r["fired"] for _, r in results)
    assert any(r.get("summary_message", {}).get("content") == SUMMARY_PREFIX + TOO_LONG for _, r in results)
    assert any(isinstance(c.get("trigger"), list) for c, _ in results) and any(isinstance(c.get("trigger"), dict) for c, _ in results)
    assert any(c.get("llm_type") == "anthropic-chat" for c, _ in results)
    # the reported-usage trigger: below the counted threshold, fired by the last AI message's
    # usage_metadata only when its provider is the model's own
    by_case = {(c["session"], json.dumps(c["config"])): c["result"] for c in GOLDEN["summarization"]}
    own = by_case[("tools_usage", json.dumps({"trigger": ["tokens", 5000], "keep": ["messages", 6]}))]
    other = by_case[("tools_usage", json.dumps({"trigger": ["tokens", 5000], "keep": ["messages", 6], "ls_provider": "anthropic"}))]
    assert own["fired"] and not other["fired"] and own["total_tokens"] < 5000


def test_context_editing_every_case():
    policy = get_policy("langchain-context-editing")
    failures = []
    for case in GOLDEN["context_editing"]:
        session = golden_session(case["session"])
        cfg = {k: ",".join(v) if k == "exclude_tools" else v for k, v in case["config"].items()}
        plan = policy.plan(session, policy.make_params(cfg), counts_for(case["session"], "langchain-context-editing", "langchain-approx"))
        position = {i: k for k, i in enumerate(plan.context_index) if i is not None}
        got, want = [], []
        for decided, expected in zip(plan.messages, case["result"], strict=True):
            sent = plan.context[position[decided.index]]
            item: dict[str, Any] = {"id": decided.id, "tokens": decided.sent_tokens}
            if decided.decision is Decision.REPLACED:
                item["content"] = sent["content"]
            if decided.decision is Decision.TRUNCATED:
                item["args"] = {c["id"]: json.loads(c["function"]["arguments"]) for c in sent["tool_calls"]}
            got.append(item)
            wanted: dict[str, Any] = {"id": expected["id"], "tokens": expected["tokens"]}
            if "content" in expected:
                wanted["content"] = expected["content"]
            if "tool_calls" in expected:
                wanted["args"] = {c["id"]: c["args"] for c in expected["tool_calls"]}
            want.append(wanted)
        if got != want:
            failures.append((case["session"], case["config"]))
    assert not failures, f"{len(failures)} cases differ, first: {failures[:3]}"


@pytest.mark.parametrize(("policy", "overrides", "words"), [
    ("langchain-trim", {"strategy": "middle"}, "strategy"),
    ("langchain-trim", {"strategy": "first", "start_on": "human"}, "start_on"),
    ("langchain-trim", {"strategy": "first", "include_system": True}, "include_system"),
    ("langchain-trim", {"end_on": "humans"}, "end_on"),
    ("langchain-summarization", {"trigger": "tokens=0"}, "greater than 0"),
    ("langchain-summarization", {"trigger": "fraction=1.5"}, "between 0 and 1"),
    ("langchain-summarization", {"trigger": "tokens=100,tokens=5"}, "twice"),
    ("langchain-summarization", {"trigger": "tokns=100"}, "unsupported"),
    ("langchain-summarization", {"trigger": "messages=2.5"}, "integer"),
    ("langchain-summarization", {"keep": "20"}, "keep"),
    # A negative keep is no longer refused: LangChain takes it (issue 21; see test_more_context_editing_cases).
    ("langchain-trim", {"token_counter": "words"}, "token_counter"),
    ("langchain-trim", {"chars_per_token": 0}, "chars_per_token"),
])
def test_bad_parameters_are_refused_in_one_line_naming_the_field(policy, overrides, words):
    with pytest.raises(ParameterError) as err:
        get_policy(policy).make_params(overrides)
    assert "\n" not in str(err.value) and words in str(err.value)


def test_fraction_uses_the_catalogue_window_unless_max_input_tokens_is_set():
    session = golden_session("tools")
    policy = get_policy("langchain-summarization")
    counts = counts_for("tools", "langchain-summarization", "langchain-approx")
    for model, override, fired in (("gpt-4", 0, True), ("gpt-4o", 0, False), ("gpt-4o", 7000, True), ("unknown-model", 0, False)):
        params = policy.make_params({"trigger": "fraction=0.4", "keep": "messages=5", "max_input_tokens": override})
        plan = policy.plan(Session(messages=session.messages, model=model), params, counts)
        assert plan.extra["fired"] is fired, (model, override)  # the session counts 3,951: above 0.4 of gpt-4's 8,192, not of gpt-4o's 128,000
    assert any("max_input_tokens" in n for n in plan.notes)
    assert lc.tokenizer_for_model("claude-sonnet-4-5") == "langchain-approx-3.3" and lc.tokenizer_for_model("gpt-4o") == "langchain-approx"


def test_max_input_tokens_are_langchains_model_profiles():
    """`fraction` multiplies the model profile's max_input_tokens (GPT-5: 272,000, not its 400,000 window)."""
    assert lc.PROFILE_MAX_INPUT_TOKENS == GOLDEN["profiles"]
    assert lc.max_input_tokens("gpt-5-2025-08-07", 0) == 272000 and lc.max_input_tokens("gpt-5", 5000) == 5000
    assert lc.max_input_tokens("gemini-2.5-pro", 0) == 1048576 and lc.max_input_tokens("no-such-model", 0) is None


def test_simulate_fires_the_middleware_turn_by_turn_and_carries_one_summary():
    session = load_session(SAMPLE)
    timeline = simulate(session, "langchain-summarization", get_policy("langchain-summarization").make_params({"trigger": "messages=30", "keep": "messages=10"}))
    events = [e for t in timeline.turns for e in t.events if e.kind == "summary"]
    assert events and all("SummarizationMiddleware" in e.message for e in events)
    first = events[0].turn
    assert first >= 29  # the state needs 30 messages
    after = timeline.turns[first + 1]
    assert after.summarized > 0 and after.kept <= 30


def test_summary_message_and_cleared_results_are_what_is_sent():
    session = load_session(SAMPLE)
    summarization = get_policy("langchain-summarization")
    plan = summarization.plan(session, summarization.make_params({"trigger": "messages=10", "keep": "messages=6"}),
                              count_session(session, summarization.scheme()))
    summary = next(c for c, i in zip(plan.context, plan.context_index, strict=True) if i is None and c["role"] == "user")
    assert summary["content"].startswith(SUMMARY_PREFIX) and plan.usage["summary"] > 0
    assert any("stand-in" in n for n in plan.notes)
    editing = get_policy("langchain-context-editing")
    plan = editing.plan(session, editing.make_params({"trigger": 1000}), count_session(session, editing.scheme()))
    replaced = [m for m in plan.messages if m.decision is Decision.REPLACED]
    assert replaced and all(m.role == "tool" and m.sent_tokens < m.tokens for m in replaced)
    tools = [m for m in plan.messages if m.role == "tool"]
    assert all(m.decision is Decision.KEPT for m in tools[-3:])


@pytest.mark.parametrize("policy", ["langchain-trim", "langchain-summarization", "langchain-context-editing"])
def test_every_command_runs(policy, tmp_path):
    assert_plans_simulates_and_exports(SAMPLE, policy, tmp_path)


def test_parts_without_a_record_still_plan():
    messages = tuple(Message(f"m{i}", i, role, (TextPart("x " * 50 + "\n" + "y " * 50),)) for i, role in enumerate(["user", "assistant"] * 5))
    session = Session(messages=messages, system_prompt="Be brief.")
    policy = get_policy("langchain-trim")
    plan = policy.plan(session, policy.make_params({"max_tokens": 150, "allow_partial": True, "include_system": True}),
                       count_session(session, policy.scheme()))
    assert plan.context[0] == {"role": "system", "content": "Be brief."}
    assert any(m.decision is Decision.TRUNCATED for m in plan.messages)
    assert plan.totals.used <= 150


def test_text_parameters_get_a_line_edit_in_the_app(qtbot):
    from ctxviz.gui.widgets.param_form import ParamForm

    form = ParamForm()
    qtbot.addWidget(form)
    policy = get_policy("langchain-summarization")
    form.build(policy.default_params())
    seen: list[tuple[str, Any]] = []
    form.valueChanged.connect(lambda name, value: seen.append((name, value)))
    editor = form.editors["trigger"][0]
    editor.setText("tokens=3000|messages=40")
    editor.editingFinished.emit()
    assert seen == [("trigger", "tokens=3000|messages=40")]
    form.set_values(policy.make_params({"keep": "tokens=5000"}))
    assert form.editors["keep"][0].text() == "tokens=5000" and len(seen) == 1


@pytest.mark.parametrize("policy", ["langchain-trim", "langchain-context-editing", "langchain-summarization"])
def test_an_earlier_summary_is_passed_as_langchains_summary_message(policy):
    """A session that carries a summary (a log's compaction, or a replay's): the messages it covers
    are not sent, and it stands first as the HumanMessage LangChain's summarization writes."""
    from ctxviz.engine.session import Summary

    base = golden_session("simple")
    session = Session(messages=base.messages, summaries=(Summary(text="earlier facts", covers=("h0", "a0", "h1")),))
    pol = get_policy(policy)
    plan = pol.plan(session, pol.make_params({"max_tokens": 100000} if policy == "langchain-trim" else {}), count_session(session, pol.scheme()))
    assert [m.id for m in plan.messages if m.decision is Decision.SUMMARIZED] == ["h0", "a0", "h1"]
    sent = [c for c, i in zip(plan.context, plan.context_index, strict=True) if i is None]
    assert sent == [{"role": "user", "content": SUMMARY_PREFIX + "earlier facts"}]
    if policy == "langchain-summarization":  # LangChain's state after a pass: [summary, *preserved]
        assert plan.context_index[0] is None
    else:  # a message list: after its leading SystemMessage
        assert plan.context_index[0] == 0 and plan.context_index[1] is None
    assert plan.summaries[0].decision is Decision.KEPT


# --- issue 21: the parameters LangChain takes that ctxviz could not ---------------------------------
# tests/golden/langchain/cases_more.json was written by generate_more.py (langchain 1.5.0 / langchain-core 1.8.2)
# over the sessions cases.json holds.

MORE = json.loads((Path(__file__).parent / "golden" / "langchain" / "cases_more.json").read_text(encoding="utf-8"))


def test_more_cases_come_from_the_same_versions_and_cover_every_new_setting():
    assert MORE["versions"] == {"langchain": "1.5.0", "langchain-core": "1.8.2"}
    options = [c["options"] for c in MORE["trim"]]
    assert any(o.get("token_counter") == "len" for o in options)
    assert any(o.get("chars_per_token") for o in options) and any("extra_tokens_per_message" in o for o in options)
    assert any(o["max_tokens"] < 0 for o in options) and any(isinstance(o["max_tokens"], float) for o in options)
    assert {c["config"]["keep"] for c in MORE["context_editing"]} >= {-1, -2} and any(c["config"]["trigger"] < 0 for c in MORE["context_editing"])


def test_trim_messages_with_other_counters_and_budgets_every_case():
    policy = get_policy("langchain-trim")
    failures = []
    for case in MORE["trim"]:
        session = golden_session(case["session"])
        plan = policy.plan(session, policy.make_params(trim_params(case["options"])), counts_for(case["session"], "langchain-trim", "langchain-approx"))
        got = []
        for index in plan.context_index:
            decided = plan.messages[index]
            item: dict[str, Any] = {"id": decided.id}
            if decided.decision is Decision.TRUNCATED:
                item["content"] = plan.context[plan.context_index.index(index)]["content"]
            item["tokens"] = decided.sent_tokens
            got.append(item)
        if got != case["result"] or plan.totals.used != case["total"]:
            failures.append((case["session"], case["options"]))
    assert not failures, f"{len(failures)} of {len(MORE['trim'])} cases differ, first: {failures[:3]}"


def test_token_counter_len_counts_messages_and_says_so():
    plan = get_policy("langchain-trim").plan(golden_session("simple"), get_policy("langchain-trim").make_params(
        {"token_counter": "len", "max_tokens": 4}), counts_for("simple", "langchain-trim", "langchain-approx"))
    assert plan.totals.used == 4 == plan.totals.kept_messages
    assert any("token_counter=len" in n for n in plan.notes)


def test_a_negative_or_fractional_max_tokens_is_taken_as_langchain_takes_it():
    policy = get_policy("langchain-trim")
    counts = counts_for("simple", "langchain-trim", "langchain-approx")
    assert policy.make_params({"max_tokens": "150.9"}).max_tokens == 150.9
    assert policy.make_params({"max_tokens": "400"}).max_tokens == 400 and isinstance(policy.make_params({"max_tokens": "400"}).max_tokens, int)
    whole = policy.plan(golden_session("simple"), policy.make_params({"max_tokens": 150}), counts)
    fraction = policy.plan(golden_session("simple"), policy.make_params({"max_tokens": 150.9}), counts)
    assert fraction.context_index == whole.context_index and fraction.totals.budget == 150
    negative = policy.plan(golden_session("simple"), policy.make_params({"max_tokens": -1}), counts)
    assert negative.totals.kept_messages == 0 and any("negative" in n for n in negative.notes)


def test_more_context_editing_cases():
    policy = get_policy("langchain-context-editing")
    failures = []
    for case in MORE["context_editing"]:
        session = golden_session(case["session"])
        plan = policy.plan(session, policy.make_params(case["config"]), counts_for(case["session"], "langchain-context-editing", "langchain-approx"))
        position = {i: k for k, i in enumerate(plan.context_index) if i is not None}
        got = []
        for decided in plan.messages:
            item: dict[str, Any] = {"id": decided.id}
            if decided.decision is Decision.REPLACED:
                item["content"] = plan.context[position[decided.index]]["content"]
            item["tokens"] = decided.sent_tokens
            got.append(item)
        if got != case["result"]:
            failures.append((case["session"], case["config"]))
    assert not failures, f"{len(failures)} cases differ, first: {failures[:3]}"


def test_keep_minus_one_clears_only_the_first_result_and_replays_as_the_reference():
    policy = get_policy("langchain-context-editing")
    session = golden_session("tools")
    params = policy.make_params({"trigger": 200, "keep": -1})
    plan = policy.plan(session, params, counts_for("tools", "langchain-context-editing", "langchain-approx"))
    tools = [m for m in plan.messages if m.role == "tool"]
    assert [m.decision.value for m in tools] == ["replaced"] + ["kept"] * (len(tools) - 1)
    assert simulate(session, "langchain-context-editing", params).turns == simulate(session, "langchain-context-editing", params,
                                                                                        incremental=False).turns


def test_a_quoted_set_value_is_kept_as_given(capsys):
    from ctxviz.cli import _parse_sets

    assert _parse_sets(["placeholder=   "]) == {"placeholder": "   "}
    assert _parse_sets(["placeholder=\"  x \""]) == {"placeholder": "  x "}
    assert _parse_sets([" keep = 2"]) == {"keep": " 2"}
    assert get_policy("langchain-context-editing").make_params(_parse_sets([" keep = 2"])).keep == 2  # numbers ignore the spaces
    from ctxviz.cli import main

    assert main(["plan", str(SAMPLE), "--policy", "langchain-context-editing", "--set", "trigger=0", "--set", "placeholder=   ", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["params"]["placeholder"] == "   "
    assert any(c.get("content") == "   " for c in doc["context"] if c.get("role") == "tool")


# --- issue 21: ContextEditingMiddleware(token_count_method="model") ------------------------------
# tests/golden/langchain/cases_model_count.json was written by generate_model_count.py: ChatOpenAI's
# get_num_tokens_from_messages (langchain-openai 1.7.4, offline, sockets blocked) and the middleware
# run with it, over the sessions cases.json holds and a few of its own (images, names, invalid calls).

MODEL_COUNT = json.loads((Path(__file__).parent / "golden" / "langchain" / "cases_model_count.json").read_text(encoding="utf-8"))


@cache
def model_count_session(name: str, system: bool = False) -> Session:
    if name not in MODEL_COUNT["sessions"]:
        session = golden_session(name)
    else:
        session = load_session(f"{name}.json", text=json.dumps(MODEL_COUNT["sessions"][name]))
    return dataclasses.replace(session, system_prompt=MODEL_COUNT["system"]) if system else session


def test_model_count_cases_come_from_the_versions_the_policy_names_and_cover_the_rules():
    assert MODEL_COUNT["versions"]["langchain"] == "1.5.0" and MODEL_COUNT["versions"]["langchain-openai"] == "1.7.4"
    models = {c["model"] for c in MODEL_COUNT["counts"]}
    assert {"gpt-4o", "gpt-4", "gpt-3.5-turbo-0301", "gpt-6"} <= models  # o200k, cl100k, 4/-1 per message/name, LangChain's fallback
    assert sum(1 for c in MODEL_COUNT["context_editing"] if isinstance(c["result"], list) and any("content" in m for m in c["result"])) >= 100
    assert any(c["system"] for c in MODEL_COUNT["context_editing"]) and len(MODEL_COUNT["context_editing"]) >= 300


@pytest.mark.parametrize("case", [c for c in MODEL_COUNT["counts"] if c["model"] != "chatgpt-4o-latest"],
                         ids=lambda c: f"{c['session']}-{c['model']}")
def test_chatopenai_counts_every_message_as_langchain_does(case):
    from ctxviz.engine.policies.langchain.model_count import PRIMING, message_tokens, model_counter

    counter = model_counter(case["model"])
    session = model_count_session(case["session"])
    shares = []
    for m, want in zip(session.messages, case["per_message"], strict=True):
        problems: list[str] = []
        shares.append(message_tokens(counter, lc.cached_view(m), m, problems))
        if isinstance(want, dict):  # LangChain raises there (an image Pillow cannot read, a special token): ctxviz says so
            assert problems, (m.index, want)
        else:
            assert shares[-1] + PRIMING == want, m.index
    if not isinstance(case["total"], dict):
        assert sum(shares) + PRIMING == case["total"]
        system = message_tokens(counter, lc.LCMessage("system", MODEL_COUNT["system"], role="system"))
        assert sum(shares) + system + PRIMING == case["with_system"]


def test_context_editing_with_the_models_count_every_case():
    policy = get_policy("langchain-context-editing")
    failures, raised = [], 0
    for case in MODEL_COUNT["context_editing"]:
        session = model_count_session(case["session"], case["system"])
        cfg = {k: ",".join(v) if k == "exclude_tools" else v for k, v in case["config"].items()}
        params = policy.make_params({**cfg, "token_count_method": "model", "model": case["model"]})
        plan = policy.plan(session, params, count_session(session, policy.scheme("langchain-approx")))
        if isinstance(case["result"], dict):  # LangChain's count raised, so its model call fails: ctxviz plans and says why
            raised += 1
            if not any("raises" in n for n in plan.notes):
                failures.append((case["session"], case["model"], case["config"], "no note"))
            continue
        position = {i: k for k, i in enumerate(plan.context_index) if i is not None}
        got, want = [], []
        for decided, expected in zip(plan.messages, case["result"], strict=True):
            sent = plan.context[position[decided.index]]
            item: dict[str, Any] = {"id": decided.id, "tokens": decided.sent_tokens}
            if decided.decision is Decision.REPLACED:
                item["content"] = sent["content"]
            if decided.decision is Decision.TRUNCATED:
                item["args"] = {c["id"]: json.loads(c["function"]["arguments"]) for c in sent["tool_calls"]}
            got.append(item)
            wanted: dict[str, Any] = {"id": expected["id"], "tokens": expected["tokens"]}
            if "content" in expected:
                wanted["content"] = expected["content"]
            if "tool_calls" in expected:
                wanted["args"] = {c["id"]: c["args"] for c in expected["tool_calls"]}
            want.append(wanted)
        if got != want:
            failures.append((case["session"], case["model"], case["config"], case["system"]))
    assert raised and not failures, f"{len(failures)} of {len(MODEL_COUNT['context_editing'])} cases differ, first: {failures[:3]}"


@pytest.mark.parametrize(("model", "words"), [
    ("claude-sonnet-4-5", "Anthropic's count_tokens API"),  # ChatAnthropic asks the API: ctxviz does not guess
    ("", "the session names none"),
    ("chatgpt-4o-latest", "ChatOpenAI's count only"),  # LangChain raises NotImplementedError for it (recorded in the cases)
    ("gemini-2.5-pro", "ChatOpenAI's count only"),
])
def test_the_models_count_says_in_one_line_where_ctxviz_cannot_reproduce_it(model, words):
    policy = get_policy("langchain-context-editing")
    session = dataclasses.replace(golden_session("tools"), model="")
    with pytest.raises(ParameterError, match=words) as raised:
        policy.plan(session, policy.make_params({"token_count_method": "model", "model": model}),
                    counts_for("tools", "langchain-context-editing", "langchain-approx"))
    assert "\n" not in str(raised.value)
    assert all(isinstance(c["total"], dict) for c in MODEL_COUNT["counts"] if c["model"] == "chatgpt-4o-latest")
    with pytest.raises(ParameterError, match="token_count_method"):
        policy.make_params({"token_count_method": "exact"})


def test_the_models_count_takes_the_sessions_model_and_replays_from_scratch():
    policy = get_policy("langchain-context-editing")
    session = dataclasses.replace(golden_session("tools"), model="gpt-4o", system_prompt=MODEL_COUNT["system"])
    params = policy.make_params({"token_count_method": "model", "trigger": 300})
    assert params.needs_full_replay and not policy.make_params({"trigger": 300}).needs_full_replay
    plan = policy.plan(session, params, counts_for("tools", "langchain-context-editing", "langchain-approx"))
    explicit = policy.plan(session, policy.make_params({"token_count_method": "model", "trigger": 300, "model": "gpt-4o"}),
                           counts_for("tools", "langchain-context-editing", "langchain-approx"))
    assert plan.totals == explicit.totals and plan.extra["fired"]
    case = next(c for c in MODEL_COUNT["counts"] if c["session"] == "tools" and c["model"] == "gpt-4o")
    assert plan.extra["tokens_before"] == case["with_system"]  # what the middleware compares with the trigger
    assert any("ChatOpenAI.get_num_tokens_from_messages" in n and "system prompt" in n for n in plan.notes)
    timeline = simulate(session, "langchain-context-editing", params)
    assert timeline.turns[-1].tokens_sent == plan.totals.used


def test_the_message_at_the_cut_says_it_did_not_fit():
    """The message trim_messages stops at (reason code "missed") says it did not fit itself, in both
    plans; it read "older than the newest messages that fit", the sentence of every message beyond
    it (coding_agent.yaml's #134, 2,828 tokens, at max_tokens=4,000)."""
    from ctxviz.engine.policies.langchain import trim

    from .columns_equivalence import both_plans

    session = load_session(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml")
    for p in both_plans(session, "langchain-trim", trim.plan_records):
        missed = [m for m in p.messages if m.reason_code == "missed"]
        assert [m.index for m in missed] == [134]
        assert missed[0].reason == ("dropped: the newest message that did not fit max_tokens=4,000 with the newer ones (strategy='last'); "
                                    "trim_messages stops here, so every older message goes too")
        assert all(m.reason.startswith("dropped: older than the newest messages that fit") for m in p.messages if m.reason_code == "after_cut")


def test_messages_under_a_cut_summary_do_not_say_it_stands_in_for_them(capsys):
    """tugtool-compact-native.jsonl (a real Claude Code log with its compact summary) at
    max_tokens=1,500: trim_messages cuts the summary itself, so the 20 messages it covers are
    replaced by nothing sent. They read "the summary is passed in its place", in both plans."""
    from ctxviz.cli import main
    from ctxviz.engine.policies.langchain import trim

    from .columns_equivalence import both_plans

    log = Path(__file__).resolve().parent / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"
    session = load_session(log)
    for max_tokens, sent in ((1500, False), (4000, True)):
        for p in both_plans(session, "langchain-trim", trim.plan_records, {"max_tokens": max_tokens}):
            assert (p.summaries[0].decision is Decision.KEPT) is sent
            reasons = {m.reason for m in p.messages if m.decision is Decision.SUMMARIZED}
            assert len([m for m in p.messages if m.decision is Decision.SUMMARIZED]) == 20
            assert reasons == {"summarized: an earlier summary replaced it; the summary is passed in its place" if sent else
                               "summarized: an earlier summary replaced it, and trim_messages cut that summary like any message: neither is sent"}
    assert main(["plan", str(log), "--policy", "langchain-trim", "--set", "max_tokens=1500"]) == 0
    assert "20 messages replaced by a summary, which is not sent either" in capsys.readouterr().out
