"""Reason codes of the agent and memory policies (supyagent, mnesis, missy-consolidator, claude-code,
codex-compaction, gemini-cli-compression, anthropic context editing): each message gets its code
where the policy decides it, so the app's reason column and `reason:CODE` filters name the rule
that kept, cut, cleared or summarised it ("summarised", never "fresh tail", on a consolidated row)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.filters import matching, parse_query
from ctxviz.engine.plan import Decision, Plan
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.reason_codes import CODES
from ctxviz.engine.session import Message, Session, Summary, TextPart, ThinkingPart
from ctxviz.engine.simulate import prefix_counts, simulate, state
from ctxviz.io.loaders import load_session

from .builders import session
from .test_mnesis import tool_heavy_session
from .test_policy_anthropic_editing import agent_session
from .test_policy_codex import TURNS, rollout
from .test_policy_gemini_cli import gemini, record_session, user

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(p for p in (ROOT / "sample_sessions").iterdir() if p.suffix in (".yaml", ".json", ".jsonl", ".traj"))
STORE = CountStore()

#: Per policy, parameters that reach its rules on the samples (compaction, trimming, clearing).
VARIANTS: dict[str, list[dict[str, object]]] = {
    "supyagent": [{}, {"context_limit": 3000}, {"context_limit": 1500, "min_recent_messages": 2}],
    "mnesis": [{}, {"context_limit": 14000, "always_include_latest": True}, {"context_limit": 9000}],
    "missy-consolidator": [{}, {"max_tokens": 2000}, {"max_tokens": 2000, "pipeline": True}, {"max_tokens": 300, "pipeline": True}],
    "claude-code": [{}, {"calibrated_trigger": 3000}],
    "codex-compaction": [{}, {"model_auto_compact_token_limit": 3000, "compact_user_message_max_tokens": 50}],
    "gemini-cli-compression": [{}, {"tokenLimit": 8000}],
    "anthropic-clear-tool-uses": [{}, {"trigger": "input_tokens:100", "keep": "tool_uses:1", "clear_tool_inputs": "true", "exclude_tools": "bash,Bash"}],
    "anthropic-clear-thinking": [{}, {"keep": "all"}],
}


def own_codes(plan: Plan, policy: str) -> None:
    """Every message carries a code the policy set and declares, sent exactly when the message is."""
    declared = set(get_policy(policy).reason_codes)
    for m in plan.messages:
        assert m.code in declared, (policy, m.index, m.decision, m.code, m.reason)
        assert CODES[m.code].sent == m.sent, (policy, m.index, m.decision, m.code, m.reason)


@pytest.mark.parametrize("policy", VARIANTS)
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_every_message_gets_its_policys_code_in_plans_and_replays(policy, sample):
    s = load_session(sample)
    for params in VARIANTS[policy]:
        own_codes(plan_session(s, policy, params, store=STORE), policy)
    timeline = simulate(s, policy, VARIANTS[policy][-1], store=STORE)
    for turn in {len(timeline.turns) // 2, len(timeline.turns) - 1} if timeline.turns else ():
        own_codes(timeline.plan_at(turn), policy)  # with the summaries the replay wrote in force


def codes(plan: Plan, prefix: str = "") -> list[str]:
    return [m.code for m in plan.messages if m.id.startswith(prefix)]


def test_clear_tool_uses_names_cleared_excluded_and_newest():
    params = {"trigger": "input_tokens:30000", "keep": "tool_uses:3", "exclude_tools": "web_search"}
    names = ["web_search", "read_file", "read_file", "web_search", "read_file", "read_file", "read_file"]
    plan = plan_session(agent_session(7, 40_000, names, size=1000), "anthropic-clear-tool-uses", params, store=STORE)
    assert codes(plan, "t") == ["excluded_tool", "cleared", "cleared", "excluded_tool", "fresh_tail", "fresh_tail", "fresh_tail"]
    inputs = plan_session(agent_session(4, 200_000), "anthropic-clear-tool-uses", {"clear_tool_inputs": "true"}, store=STORE)
    assert codes(inputs, "a") == ["replaced", "kept", "kept", "kept"]  # the call's input became "{}"
    below = plan_session(agent_session(6, 100_000), "anthropic-clear-tool-uses", {}, store=STORE)
    assert set(codes(below)) == {"kept"}  # under the trigger nothing is cleared, nothing claims a rule


def test_clear_thinking_names_the_turns_whose_thinking_went():
    messages: list[Message] = []
    for k in range(3):
        messages.append(Message(id=f"u{k}", index=len(messages), role="user", parts=(TextPart(f"question {k}"),)))
        messages.append(Message(id=f"a{k}", index=len(messages), role="assistant",
                                parts=(ThinkingPart(f"let me think about {k} " * 30), TextPart(f"answer {k}"))))
    plan = plan_session(Session(messages=tuple(messages)), "anthropic-clear-thinking", {}, store=STORE)
    assert codes(plan, "a") == ["thinking_cleared", "thinking_cleared", "kept"]
    assert codes(plan, "u") == ["kept"] * 3
    keep_all = plan_session(Session(messages=tuple(messages)), "anthropic-clear-thinking", {"keep": "all"}, store=STORE)
    assert "thinking_cleared" not in codes(keep_all)


def test_consolidator_codes_each_condenser_and_the_trigger():
    s = session(*[("user", f"message {i}") for i in range(30)])
    under = plan_session(s, "missy-consolidator", {"max_tokens": 100_000}, store=STORE)
    assert set(codes(under)) == {"under_trigger"}
    plain = plan_session(s, "missy-consolidator", {"max_tokens": 10}, store=STORE)
    assert codes(plain) == ["summarised"] * 26 + ["fresh_tail"] * 4
    piped = plan_session(s, "missy-consolidator", {"max_tokens": 10, "pipeline": True}, store=STORE)
    by_score = [m.index for m in piped.messages if "relevance score" in m.reason]
    assert by_score and codes(piped)[1:by_score[-1] + 1] == ["low_relevance"] * len(by_score)
    texts = [m.text for m in s.messages]
    assert matching(piped, texts, parse_query("reason:low_relevance")) == by_score
    assert codes(piped)[-6:] == ["fresh_tail"] * 6  # SummarizingCondenser's preserve_recent


def test_codex_codes_initial_context_retained_users_and_the_compacted_rest(tmp_path):
    s = rollout(tmp_path, "gpt-5-codex", TURNS, {3: 244_800})  # reaches 90 % of 272,000: compacts
    plan = plan_session(s, "codex-compaction", {}, store=STORE)
    by_role = {(m.role, m.code) for m in plan.messages}
    assert ("user", "initial_context") in by_role  # the <environment_context> message
    assert {c for r, c in by_role if r == "assistant"} == {"summarised"}
    assert {c for r, c in by_role if r == "user"} == {"initial_context", "retained"}
    under = plan_session(rollout(tmp_path, "gpt-5-codex", TURNS, {3: 244_799}), "codex-compaction", {}, store=STORE)
    assert {m.code for m in under.messages} == {"initial_context", "under_trigger"}  # nothing compacted: not "since compaction"


def test_gemini_codes_the_split_the_truncated_output_and_an_earlier_compression(tmp_path):
    calls = [{"id": "c1", "name": "grep", "args": {}, "status": "success", "result": "r" * 300_000}]
    s = record_session(tmp_path, [user(1, "a" * 200_000), gemini(2, "ok"), user(3, "next"), gemini(4, "", 100, calls),
                                  gemini(5, "done", 600_000), user(6, "more"), gemini(7, "fine", 10)])
    timeline = simulate(s, "gemini-cli-compression", {}, store=STORE)
    compressed_at = next(e.turn for e in timeline.events if e.kind == "compaction")
    at = timeline.plan_at(timeline.step_of(compressed_at))
    assert [at.find(i).code for i in ("u1", "g2", "u3", "u6")] == ["summarised", "summarised", "fresh_tail", "new_message"]
    tool = next(m for m in s.messages if m.role == "tool")
    assert at.messages[tool.index].code == "truncated"
    whole = state(s, "gemini-cli-compression", len(s.messages) - 1, timeline.summaries)  # that compression in force
    later = get_policy("gemini-cli-compression").plan(whole, timeline.params, prefix_counts(timeline.counts, whole))
    assert later.extra["compression_status"] == "NOOP"
    assert [later.find(i).code for i in ("u1", "g2", "u3")] == ["before_compaction", "before_compaction", "since_compaction"]
    assert later.messages[tool.index].code == "truncated"  # it stays truncated


def test_claude_code_codes_what_the_compaction_replaced():
    s = load_session(ROOT / "sample_sessions" / "claude_code_autocompact.jsonl")
    plan = plan_session(s, "claude-code", {}, store=STORE)
    for m in plan.messages:
        assert m.code == ("before_compaction" if m.decision is Decision.SUMMARIZED else "since_compaction")
    assert any(m.code == "before_compaction" for m in plan.messages)


def test_mnesis_codes_a_call_and_its_output_alike():
    s = tool_heavy_session()
    seen: set[str] = set()
    for room in range(0, 400, 37):
        plan = plan_session(s, "mnesis", {"context_limit": 1000 + room, "reserved_output_tokens": 0, "compaction_buffer": 1000}, store=STORE)
        for call, result in s.tool_pairs:
            assert plan.messages[call].code == plan.messages[result].code, room
        seen.update(codes(plan))
    assert {"fits", "missed", "after_cut"} <= seen


def test_supyagent_codes_summary_tail_fit_and_cut():
    s = session(*[("user" if i % 2 == 0 else "assistant", f"message {i} " + "word " * 40) for i in range(12)],
                summaries=(Summary(text="earlier", messages_covered=2, covers=("m0", "m1")),))
    plan = plan_session(s, "supyagent", {"context_limit": 4400, "response_reserve": 4096, "min_recent_messages": 2}, store=STORE)
    # newest first: the 2 protected, 3 that fit, #6 does not, and supyagent stops there
    assert codes(plan) == ["summarised"] * 2 + ["after_cut"] * 4 + ["missed"] + ["fits"] * 3 + ["fresh_tail"] * 2
    assert "(#6)" in plan.messages[2].reason


def test_a_summarised_row_never_reads_as_kept():
    """Issue 24: the reason column said "fresh tail" on 213 summarised rows of missy-consolidator."""
    from ctxviz.engine.reasons import short

    s = session(*[("user", f"message {i}") for i in range(30)])
    plan = plan_session(s, "missy-consolidator", {"max_tokens": 10}, store=STORE)
    assert {short(m) for m in plan.messages if m.decision is Decision.SUMMARIZED} == {"summarised"}
