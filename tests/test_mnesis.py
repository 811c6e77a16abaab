"""mnesis' ContextBuilder: policies.md section 4.7 golden cases and the builder's edge cases."""

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies.mnesis.context_builder import estimate_message, model_info
from ctxviz.engine.session import FileRefPart, Message, Session, Summary, TextPart, ToolCallPart, ToolResultPart
from ctxviz.engine.tokenizers import get_tokenizer

from .builders import session


def with_model(s, model):
    return Session(messages=s.messages, source=s.source, format=s.format, model=model, system_prompt=s.system_prompt, summaries=s.summaries)


@pytest.mark.parametrize(("model", "usable"), [("anthropic/claude-sonnet-4-5", 171808), ("claude-opus-4-6", 148000),
                                               ("gpt-4o", 91616), ("some-unknown-model", 103904)])
def test_usable_per_model(model, usable):
    plan = plan_session(with_model(session(("user", "hi")), model), "mnesis", store=CountStore())
    assert plan.extra["usable"] == usable


def test_fits_is_inclusive():
    # A Claude model: mnesis counts characters / 3 (with no model it counts cl100k_base, golden-checked).
    s = with_model(session(("user", "a" * ((7999 - 4) * 3))), "claude-sonnet-4-5")
    plan = plan_session(s, "mnesis", {"context_limit": 10000, "reserved_output_tokens": 1000, "compaction_buffer": 1000}, store=CountStore())
    assert plan.messages[0].tokens == 7999 and plan.messages[0].decision is Decision.KEPT and plan.totals.fits
    s = with_model(session(("user", "a" * ((8001 - 4) * 3))), "claude-sonnet-4-5")
    plan = plan_session(s, "mnesis", {"context_limit": 10000, "reserved_output_tokens": 1000, "compaction_buffer": 1000}, store=CountStore())
    assert plan.messages[0].decision is Decision.DROPPED


def test_estimator_golden():
    h = get_tokenizer("mnesis")
    assert h.count("a" * 40) == 10 and h.count("") == 0 and h.count("x") == 1
    assert estimate_message(Message("m", 0, "user", (TextPart("a" * 40),)), h) == 14
    assert model_info("anthropic/claude-opus-4-6").encoding == "claude-heuristic"
    assert get_tokenizer("claude-heuristic").count("a" * 30) == 10


def test_empty_session_counts_the_system_prompt():
    s = Session(messages=(), source="", format="", system_prompt="You are helpful.")
    plan = plan_session(s, "mnesis", store=CountStore())
    assert plan.context == ({"role": "system", "content": "You are helpful."},)
    assert plan.extra["token_estimate"] > 0 and not plan.extra["has_summary"]


def test_summary_first_as_assistant_and_replaces_covered_messages():
    s = session(("user", "old question"), ("assistant", "old answer"), ("user", "new one"), ("assistant", "reply"),
                summaries=(Summary(text="SUMMARY OF THE START", covers=("m0", "m1")),))
    plan = plan_session(s, "mnesis", store=CountStore())
    assert [m["role"] for m in plan.context[1:]] == ["assistant", "user", "assistant"]
    assert "SUMMARY OF THE START" in plan.context[1]["content"]
    assert [m.decision for m in plan.messages] == [Decision.SUMMARIZED, Decision.SUMMARIZED, Decision.KEPT, Decision.KEPT]


def test_negative_usable_includes_no_raw_message():
    s = session(*[("user", f"message {i}") for i in range(20)])
    plan = plan_session(s, "mnesis", {"context_limit": 500, "reserved_output_tokens": 100}, store=CountStore())
    assert plan.extra["usable"] == -19600
    assert all(m.decision is Decision.DROPPED for m in plan.messages)
    assert plan.extra["token_estimate"] <= -19600 + 20000
    forced = plan_session(s, "mnesis", {"context_limit": 500, "reserved_output_tokens": 100, "always_include_latest": True}, store=CountStore())
    assert [m.decision for m in forced.messages][-2:] == [Decision.DROPPED, Decision.KEPT]


def test_newest_first_stops_at_first_misfit():
    s = session(("user", "tiny"), ("assistant", "b" * 4000), ("user", "c" * 40), ("user", "d" * 40))
    plan = plan_session(s, "mnesis", {"context_limit": 1100, "reserved_output_tokens": 0, "compaction_buffer": 1000}, store=CountStore())
    assert [m.decision for m in plan.messages] == [Decision.DROPPED, Decision.DROPPED, Decision.KEPT, Decision.KEPT]


def test_tombstones_and_file_refs_render():
    call = Message("a", 0, "assistant", (ToolCallPart("c1", "read", '{"path": "x.py"}'),))
    result = Message("t", 1, "tool", (ToolResultPart("c1", "SECRET ORIGINAL OUTPUT", compacted_at=1767225600000),), name="read", tool_call_id="c1")
    ref = Message("f", 2, "user", (FileRefPart("src/app.py", "sha256abc", "python", 12345, "Flask app entry point"),))
    s = Session(messages=(call, result, ref), source="", format="")
    plan = plan_session(s, "mnesis", store=CountStore())
    texts = [m["content"] for m in plan.context[1:]]
    # mnesis holds a call and its output in one ToolPart: a compacted output makes the whole part a
    # tombstone, and the tool message has no entry of its own (golden case "compacted").
    assert texts[0] == "[Tool 'read' output compacted at 1767225600000]" and "SECRET" not in "".join(texts)
    assert plan.context_index[1:] == (0, 2) and plan.messages[1].decision is Decision.KEPT and plan.messages[1].tokens == 0
    assert texts[1].startswith("[FILE: src/app.py]") and "Tokens: 12,345" in texts[1] and "Flask app entry point" in texts[1] and texts[1].endswith("[/FILE]")


def tool_heavy_session():
    messages = []
    for k in range(6):
        base = len(messages)
        messages += [Message(f"m{base}", base, "user", (TextPart(f"step {k} " + "word " * (5 * k)),)),
                     Message(f"m{base + 1}", base + 1, "assistant", (TextPart("reading"), ToolCallPart(f"c{k}", "read", '{"path": "a.py"}'))),
                     Message(f"m{base + 2}", base + 2, "tool", (ToolResultPart(f"c{k}", "out " * (10 + 7 * k)),), name="read", tool_call_id=f"c{k}")]
    return Session(messages=tuple(messages), source="", format="", model="gpt-4o")


@pytest.mark.parametrize("latest", [False, True])
def test_a_call_and_its_output_are_kept_or_dropped_together_in_plans_and_replays(latest):
    """mnesis' unit is its message: the output alone never fits where its call does not (golden
    cases tight-tool-last/*); the incremental replay cuts at the same place as a from-scratch plan."""
    from ctxviz.engine.simulate import simulate

    s = tool_heavy_session()
    store = CountStore()
    for room in range(0, 400, 7):
        params = {"context_limit": 1000 + room, "reserved_output_tokens": 0, "compaction_buffer": 1000, "always_include_latest": latest}
        plan = plan_session(s, "mnesis", params, store=store)
        for call, result in s.tool_pairs:
            assert plan.messages[call].decision == plan.messages[result].decision, room
        fast = simulate(s, "mnesis", params, store=store)
        reference = simulate(s, "mnesis", params, store=store, incremental=False)
        assert fast.turns == reference.turns and fast.summaries == reference.summaries, room
