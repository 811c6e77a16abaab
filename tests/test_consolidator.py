"""missy's MemoryConsolidator: policies.md 1.4-1.5 golden cases and seed page 003."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies.missy.consolidator import (
    FACT_KEYWORDS,
    NO_FACTS,
    ConsolidatorSettings,
    FactsSoFar,
    consolidated_message,
    extract_key_facts,
    should_consolidate,
)
from ctxviz.engine.session import Message, Session, TextPart

from .builders import session
from .hypothesis_budget import examples


@pytest.mark.parametrize(("tokens", "expected"), [(21000, False), (24000, True), (25500, True), (30000, True)])
def test_should_consolidate_inclusive(tokens, expected):
    assert should_consolidate(tokens, ConsolidatorSettings()) is expected
    assert not should_consolidate(tokens, ConsolidatorSettings(max_tokens=0))


def test_key_facts_golden():
    msgs = [Message("a", 0, "user", (TextPart("Please read the config file"),)),
            Message("b", 1, "assistant", (TextPart("I found: the config has 3 sections"),)),
            Message("c", 2, "user", (TextPart("Result: deployment succeeded"),)),
            Message("d", 3, "tool", (TextPart("output: all tests pass"),), name="shell_exec")]
    assert extract_key_facts(msgs) == ["Please read the config file", "I found: the config has 3 sections",
                                       "Result: deployment succeeded", "[shell_exec] output: all tests pass"]


def test_user_message_of_exactly_120_chars_is_a_fact_and_facts_deduplicate():
    msgs = [Message("a", 0, "user", (TextPart("x" * 120),)), Message("b", 1, "user", (TextPart("y" * 121),)),
            Message("c", 2, "user", (TextPart("x" * 120),))]
    assert extract_key_facts(msgs) == ["x" * 120]


#: Keywords in any case, the characters whose lower case is not one for one (the Kelvin sign, the
#: dotted capital I, final sigma), line breaks Python splits at, and colons alone.
_TRICKY = st.lists(st.sampled_from(["Result:", "ERROR:", "deCided:", "CONFIRMED:", "confİrmed:", "ΣUCCESS:", "found", "output:", ":",
                                    ":::", "K", "\u212a", "İ", "Σ", "e", "d", " ", "\t", "\r", "\n", "\r\n", "\x85", "\u2028", "x"]),
                   max_size=20).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), _TRICKY, st.integers(0, 80)), min_size=1, max_size=4))
def test_key_facts_are_the_lines_holding_a_keyword_in_any_case(drawn):
    """What missy does, line by line: a stripped line is a fact when its lower case holds a
    keyword (extract_key_facts reads the lines of a message only when the message holds one, and
    finds them from its colons: the same facts)."""
    msgs = [Message(str(k), k, role, (TextPart(text + ":" * colons),)) for k, (role, text, colons) in enumerate(drawn)]
    facts: list[str] = []
    for m in msgs:
        if m.role == "tool":
            snippet = m.text[:200].strip()
            facts += [f"[{m.name or 'tool'}] {snippet}"] if snippet else []
            continue
        facts += [line.strip() for line in m.text.splitlines() if line.strip() and any(k in line.strip().lower() for k in FACT_KEYWORDS)]
        facts += [m.text] if m.role == "user" and 0 < len(m.text) <= 120 else []
    assert extract_key_facts(msgs) == list(dict.fromkeys(facts))


def test_consolidation_keeps_last_four_and_replaces_the_rest():
    s = session(*[("user" if i % 2 == 0 else "assistant", f"decided: step {i} " + "z" * 400) for i in range(10)])
    plan = plan_session(s, "missy-consolidator", {"max_tokens": 1000}, store=CountStore())
    assert plan.extra["should_consolidate"]
    assert [m.decision for m in plan.messages] == [Decision.SUMMARIZED] * 6 + [Decision.KEPT] * 4
    first = plan.context[0]["content"]
    assert first.startswith("[Session context consolidated]\n\n- decided: step 0")
    assert len(plan.context) == 5


def test_no_facts_text_and_under_threshold():
    s = session(*[("assistant", "z" * 4000)] * 6)
    plan = plan_session(s, "missy-consolidator", {"max_tokens": 1000}, store=CountStore())
    assert plan.context[0]["content"] == "[Session context consolidated]\n\n- (previous conversation context \u2014 no key facts extracted)"
    calm = plan_session(s, "missy-consolidator", {"max_tokens": 100000}, store=CountStore())
    assert all(m.decision is Decision.KEPT for m in calm.messages) and "under the 80% threshold" in calm.messages[0].reason


def test_estimate_is_total_chars_over_four():
    s = session(("user", "abc"), ("assistant", "abc"))  # 6 chars -> 1 token total (per-message floor would give 0)
    plan = plan_session(s, "missy-consolidator", store=CountStore())
    assert plan.extra["current_tokens"] == 1


def test_pipeline_golden_eight_messages():
    s = session(*[("user", f"message {i}") for i in range(8)])
    plan = plan_session(s, "missy-consolidator", {"max_tokens": 10, "pipeline": True}, store=CountStore())
    assert [c["content"] for c in plan.context] == ["[Conversation Summary]\n- message 0\n- message 1"] + [f"message {i}" for i in range(2, 8)]
    assert [m.decision for m in plan.messages[:2]] == [Decision.SUMMARIZED] * 2


def test_pipeline_masks_large_tool_output():
    tool = Message("t", 4, "tool", (TextPart("L" * 3000),), name="shell", tool_call_id="c")
    msgs = [Message(f"m{i}", i, "user", (TextPart(f"message {i}"),)) for i in range(4)] + [tool] + [Message(f"m{i}", i, "user", (TextPart(f"message {i}"),)) for i in range(5, 9)]
    plan = plan_session(Session(messages=tuple(msgs), source="", format=""), "missy-consolidator", {"max_tokens": 10, "pipeline": True}, store=CountStore())
    assert plan.messages[4].decision is Decision.REPLACED
    assert any(str(c["content"]).startswith("[Tool output masked: 3000 chars, preview: " + "L" * 200) for c in plan.context)


def test_simulate_json_is_the_same_whatever_the_hash_seed() -> None:
    """A consolidation's covers list those of the one before in the order they were covered: the
    same `simulate --json` on every run (a set's order changed with PYTHONHASHSEED)."""
    import hashlib
    import os
    import subprocess
    import sys

    outputs = set()
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-m", "ctxviz", "simulate", "sample_sessions/coding_agent.yaml", "--policy", "missy-consolidator",
                              "--set", "max_tokens=3000", "--json"], capture_output=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        assert b'"consolidation"' in out.stdout
        outputs.add(hashlib.sha256(out.stdout).hexdigest())
    assert len(outputs) == 1


#: Facts as extract_key_facts hands them over (a tool's snippet or a user message may hold line
#: breaks of every kind, a "- " line of its own, the no-facts words, or repeat an earlier fact).
_FACT = st.lists(st.sampled_from(["a", "b", "- ", "- c", "no key facts", NO_FACTS, " ", "\r", "\n", "\r\n", "\x0b", "\x85", "\u2028",
                                  "Result: x", "\n- d"]), min_size=1, max_size=6).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.lists(_FACT, max_size=5), min_size=1, max_size=6), st.lists(_FACT, max_size=3))
def test_facts_carried_from_consolidation_to_consolidation_are_the_facts_read_back_from_its_text(rounds, recorded):
    """The replay's consolidations carry the facts over (`FactsSoFar`) instead of reading them back
    from the text before: each text is the seed's, which reads them back (`consolidated_message`
    after `earlier_facts`), from recorded consolidations' texts on."""
    texts = ["[Session context consolidated]\n\n" + "\n".join(f"- {f}" for f in recorded)] if recorded else []
    carried = FactsSoFar(texts)
    for new in rounds:
        messages = [Message(f"m{k}", k, ("user", "tool")[k % 2], (TextPart(fact),), name="t") for k, fact in enumerate(new)]
        facts = extract_key_facts(messages)
        earlier = [line[2:] for t in texts for line in t.splitlines() if line.startswith("- ") and "no key facts" not in line]
        expected = consolidated_message(messages, earlier)
        assert carried.consolidate(facts) == expected
        texts = [expected]
