"""Pins: a pinned message reaches the model under every policy, and the plan says what it pushed out."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.pins import resolve_pins
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import policy_names
from ctxviz.errors import ParameterError
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
CODING = load_session(str(ROOT / "sample_sessions" / "coding_agent.yaml"))
FIRST_USER = next(m.index for m in CODING.messages if m.role == "user")


@pytest.mark.parametrize("policy", policy_names())
def test_the_first_user_message_pinned_is_sent_under_every_policy(policy: str) -> None:
    plan = plan_session(CODING, policy, options=PlanOptions(pins=("first-user",)))
    assert plan.messages[FIRST_USER].sent and "pinned" in plan.messages[FIRST_USER].reason and "first-user" in plan.messages[FIRST_USER].reason
    assert sum(plan.usage.values()) == plan.totals.used
    assert plan.totals.kept + plan.totals.dropped == sum(m.tokens for m in plan.messages)
    assert plan.totals.kept_messages == sum(1 for m in plan.messages if m.sent)
    assert FIRST_USER in plan.context_index


def test_a_pin_under_a_tight_budget_pushes_out_the_oldest_sent_messages_and_says_so() -> None:
    base = plan_session(CODING, "missy", {"total": 11000})
    assert not base.messages[FIRST_USER].sent and base.totals.fits
    pinned = plan_session(CODING, "missy", {"total": 11000}, options=PlanOptions(pins=("first-user",)))
    assert pinned.totals.fits and pinned.usage["history"] <= pinned.allocation["history"]
    pushed = [m for m in pinned.messages if m.sent != base.messages[m.index].sent and m.index != FIRST_USER]
    assert pushed and all(m.decision is Decision.DROPPED and m.reason == f"dropped: pushed out to make room for the pinned #{FIRST_USER}" for m in pushed)
    # the oldest messages that were sent go first, and no more than the pin needs
    sent_before = [m.index for m in base.messages if m.sent and m.zone != "system"]
    assert [m.index for m in pushed] == sent_before[: len(pushed)]
    freed = sum(base.messages[m.index].sent_tokens for m in pushed)
    pin_tokens = base.messages[FIRST_USER].tokens
    assert freed - base.messages[pushed[-1].index].sent_tokens < pin_tokens - (base.allocation["history"] - base.usage["history"])
    assert any(n.startswith("pins added 1 message ") and "pushed out" in n for n in pinned.notes)


def test_pins_do_not_repair_an_overflow_the_policy_already_had() -> None:
    # missy's fresh tail overflows a tiny budget by itself; a pin of a message already sent changes nothing
    base = plan_session(CODING, "missy", {"total": 9000})
    assert not base.totals.fits
    last = len(CODING.messages) - 1
    pinned = plan_session(CODING, "missy", {"total": 9000}, options=PlanOptions(pins=(f"#{last}",)))
    assert [m.decision for m in pinned.messages] == [m.decision for m in base.messages]


def test_pin_rules() -> None:
    tools = resolve_pins(CODING, ["role:tool"])
    assert {i: r for i, r in tools.items() if r == "role:tool"} == {m.index: "role:tool" for m in CODING.messages if m.role == "tool"}
    # A tool result goes with its call (the APIs refuse one without the other): pinning one pins both.
    calls = {i for i, r in tools.items() if r == "role:tool: its tool call"}
    assert calls and all(CODING.messages[i].tool_calls for i in calls) and set(tools) == {m.index for m in CODING.messages if m.role == "tool"} | calls
    assert list(resolve_pins(CODING, ["last-user"])) == [max(m.index for m in CODING.messages if m.role == "user")]
    by_id = resolve_pins(CODING, [f"id:{CODING.messages[7].id}"])
    assert list(by_id)[0] == 7 and all(rule.endswith(("its tool call", "its tool result")) for i, rule in by_id.items() if i != 7)
    needle = CODING.messages[FIRST_USER].text.split()[2]
    assert FIRST_USER in resolve_pins(CODING, [f"text:{needle.upper()}"])
    for bad, message in (("#9999", "the session has messages #0-#145"), ("text:zzzz-not-there", "matches no message"),
                         ("first-robot", "not a pin rule")):
        with pytest.raises(ParameterError, match=message):
            resolve_pins(CODING, [bad])


def test_the_cli_pins_and_a_bad_rule_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "sample_sessions" / "coding_agent.yaml")
    assert main(["plan", path, "--set", "total=11000", "--pin", "first-user"]) == 0
    assert "note: pins added 1 message " in capsys.readouterr().out
    assert main(["plan", path, "--pin", "role:robot"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--pin role:robot: not a pin rule" in err


def test_a_simulation_sends_the_pinned_message_from_the_turn_it_is_said() -> None:
    from ctxviz.engine.simulate import simulate

    pinned = simulate(CODING, "missy", {"total": 11000}, options=PlanOptions(pins=("first-user",)))
    plain = simulate(CODING, "missy", {"total": 11000})
    for k in range(FIRST_USER, len(pinned.turns), 17):
        assert pinned.plan_at(k).messages[FIRST_USER].sent
    late = len(plain.turns) - 1
    assert not plain.plan_at(late).messages[FIRST_USER].sent
    assert pinned.turns[late].tokens_sent <= pinned.turns[late].budget


def test_why_answers_with_the_pins_in_force(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "sample_sessions" / "coding_agent.yaml")
    assert main(["why", path, "--message", str(FIRST_USER), "--set", "total=11000", "--pin", "first-user"]) == 0
    assert "kept: pinned by first-user; without it missy would have dropped it: missy stops at the first message" in capsys.readouterr().out


def test_a_pinned_tool_result_brings_its_call_so_pair_safety_keeps_it(capsys: pytest.CaptureFixture[str]) -> None:
    """aim_matrix_pro (a real Gemini CLI log) under missy at 15,000: #38 is a tool result whose call
    (#37) missy cut. Pinned with --pair-safe, pins pushed 16 messages out for it and pair safety then
    dropped it again (1,201 tokens sent instead of 6,838 unpinned)."""
    log = ROOT / "tests" / "data" / "real" / "gemini_cli" / "aim_matrix_pro.migrated.jsonl"
    assert main(["plan", str(log), "--policy", "missy", "--set", "total=15000", "--pin", "#38", "--pair-safe", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    sent = {m["index"] for m in doc["messages"] if m["decision"] == "kept"}
    assert {37, 38} <= sent and doc["totals"]["fits"]


def test_first_user_is_the_users_own_first_words() -> None:
    """A SWE-agent trajectory opens with a demonstration sent as a user turn (#1, the harness's),
    then the task (#2): first-user pinned the demonstration."""
    from ctxviz.io.loaders import load_session

    session = load_session(ROOT / "tests" / "data" / "real" / "swe_agent" / "pydicom__pydicom-1458.traj")
    assert list(resolve_pins(session, ["first-user"])) == [2]


def test_the_pin_note_says_when_the_plan_is_still_over(capsys: pytest.CaptureFixture[str]) -> None:
    """Every user turn of a SWE-agent trajectory pinned at total=12,640: the pins alone are over the
    history allotment; the note said the pushed-out messages kept the plan "within its budget"."""
    log = ROOT / "tests" / "data" / "real" / "swe_agent" / "pydicom__pydicom-1458.traj"
    assert main(["plan", str(log), "--set", "total=12640", "--pin", "role:user"]) == 0
    out = capsys.readouterr().out
    assert "to make room; the plan is still over its budget" in out and "does not fit" in out
    assert "within its budget" not in out
