"""`ctxviz check`: rules a CI job enforces, with answers known by construction."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ctxviz.cli import main

ROOT = Path(__file__).resolve().parent.parent
INSTRUCTION = "never push to main"


def session_file(tmp_path: Path) -> Path:
    """60 messages of exactly 100 characters (25 tokens for missy: len // 4); message 3 holds the
    user's instruction, said once."""
    messages = []
    for i in range(60):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"{i:03d} " + (INSTRUCTION if i == 3 else "")
        messages.append({"role": role, "content": text + "x" * (100 - len(text))})
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"format": "ctxviz", "model": "gpt-4o", "messages": messages}))
    return path


# missy with no reserves and no memory share: the history budget is the whole total, 925 tokens =
# the newest 37 messages. At turn k it sends messages k-36..k, so message 3 is sent through turn 39
# and dropped from turn 40 on.
HEADER = """policy: missy
params: {total: 925, system_reserve: 0, tool_definitions_reserve: 0, memory_fraction: 0, learnings_fraction: 0}
"""


def write_rules(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(HEADER + body)
    return path


# ... because the 37 newer messages fill the history budget exactly
WHY = ": #3 dropped: 25 tokens did not fit in the 0 left of the 925-token history budget"


def test_an_instruction_dropped_at_turn_40_breaks_a_rule_through_45_not_one_through_39(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = session_file(tmp_path)
    rules = write_rules(tmp_path, f"rules:\n  survive:\n    - {{text: '{INSTRUCTION}', through_turn: 39}}\n    - {{message: '#3', through_turn: 39}}\n")
    assert main(["check", str(session), "--rules", str(rules)]) == 0
    rules = write_rules(tmp_path, f"rules:\n  survive:\n    - {{text: '{INSTRUCTION}', through_turn: 45}}\n    - {{message: '#3', through_turn: 45}}\n")
    assert main(["check", str(session), "--rules", str(rules)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{session}: survive text '{INSTRUCTION}': text '{INSTRUCTION}', said at #3, is no longer sent at turn 40, before turn 45{WHY}",
                   f"{session}: survive message #3: message #3, said at #3, is no longer sent at turn 40, before turn 45{WHY}"]


def test_token_limits_tools_baseline_and_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = session_file(tmp_path)
    # the whole plan at turn 59: 37 messages of 25 tokens = 925
    baseline = tmp_path / "baseline.json"
    assert main(["plan", str(session), "--set", "total=900", "--set", "system_reserve=0", "--set", "tool_definitions_reserve=0",
                 "--set", "memory_fraction=0", "--set", "learnings_fraction=0", "--json"]) == 0
    baseline.write_text(capsys.readouterr().out)  # a smaller budget: 36 messages, 900 tokens
    rules = write_rules(tmp_path, "rules:\n  max_tokens: 925\n  max_part_tokens: {history: 924}\n"
                                  "  max_tokens_over_baseline: {baseline: baseline.json, plus: 20}\n  max_tool_definition_tokens: 0\n")
    junit = tmp_path / "out" / "junit.xml"
    junit.parent.mkdir()
    assert main(["check", str(session), "--rules", str(rules), "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    assert f"{session}: max_part_tokens.history: history uses 925 tokens, over the limit of 924 by 1" in out
    assert "max_tokens_over_baseline: the context is +25 tokens from the baseline's 900: 925 tokens, over the limit of 920 by 5" in out
    assert "max_tokens:" not in out and "max_tool_definition_tokens" not in out  # those hold
    suite = ET.parse(junit).getroot().find("testsuite")  # the counts are per suite (Ant's schema allows none on the root)
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "0")
    failed = {case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None}
    assert failed == {"max_part_tokens.history", "max_tokens_over_baseline"}


def test_compactions_and_cost_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = ROOT / "sample_sessions" / "coding_agent.yaml"
    rules = tmp_path / "rules.yaml"
    rules.write_text("policy: supyagent\nparams: {max_tokens_before_summary: 20000}\ncost_model: gpt-4o\n"
                     "rules:\n  max_compactions_per_100: 1\n  max_cost: 1000\n")
    assert main(["check", str(sample), "--rules", str(rules)]) == 1
    out = capsys.readouterr().out
    assert "max_compactions_per_100:" in out and "over the limit of 1" in out and "max_cost" not in out


@pytest.mark.parametrize(("body", "message"), [
    ("rules: {max_tokens: -1}\n", "rules.max_tokens: must be >= 0"),
    ("rules: {speed: 3}\n", "rules.speed: unknown rule"),
    ("rules:\n  survive:\n    - {text: x}\n", "through_turn: is required"),
    ("rules:\n  survive:\n    - {text: x, message: '#1', through_turn: 3}\n", "give exactly one of message"),
    ("rules: {min_retention: 2}\n", "min_retention: is a share between 0 and 1"),
    ("rules: {max_tokens_over_baseline: {baseline: missing.json}}\n", "cannot read the baseline"),
])
def test_a_bad_rules_file_is_one_line_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, message: str) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(body)
    assert main(["check", str(session_file(tmp_path)), "--rules", str(rules)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and str(rules) in err


SCHEMAS = Path(__file__).parent / "data" / "schemas"


def test_one_bad_session_never_stops_the_check_and_the_junit_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A session without a user message made `survive: {message: first-user}` abort the whole run,
    with no session named and no JUnit file; the XML lacked the `errors` Jenkins requires."""
    xmlschema = pytest.importorskip("xmlschema")
    no_user = tmp_path / "a_no_user.yaml"
    no_user.write_text("messages:\n  - role: assistant\n    content: hello\n")
    unreadable = tmp_path / "b_garbage.json"
    unreadable.write_text("garbage{")
    good = session_file(tmp_path)
    rules = write_rules(tmp_path, "rules:\n  max_tokens: 100000\n  survive:\n    - {message: first-user, through_turn: 5}\n")
    junit = tmp_path / "junit.xml"
    code = main(["check", str(no_user), str(unreadable), str(good), "--rules", str(rules), "--junit", str(junit)])
    out, err = capsys.readouterr()
    assert code == 2  # something could not be checked: never a pass
    assert f"{no_user}: survive message first-user: could not be checked: message first-user: matches no message" in out
    assert f"{unreadable}: readable: could not be checked:" in out
    assert "2 could not be checked" in err and "over 3 sessions" in err
    root = ET.parse(junit).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {str(no_user), str(unreadable), str(good)}
    assert (suites[str(no_user)].get("errors"), suites[str(no_user)].get("failures")) == ("1", "0")
    assert (suites[str(good)].get("errors"), suites[str(good)].get("failures"), suites[str(good)].get("tests")) == ("0", "0", "2")
    for name in ("jenkins-xunit-junit-10.xsd", "ant-junit-windyroad.xsd"):
        xmlschema.XMLSchema(str(SCHEMAS / name)).validate(str(junit))


def test_the_junit_of_a_broken_rule_validates_against_both_schemas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    xmlschema = pytest.importorskip("xmlschema")
    session = session_file(tmp_path)
    rules = write_rules(tmp_path, "rules:\n  max_tokens: 10\n")
    junit = tmp_path / "junit.xml"
    assert main(["check", str(session), "--rules", str(rules), "--junit", str(junit)]) == 1
    capsys.readouterr()
    for name in ("jenkins-xunit-junit-10.xsd", "ant-junit-windyroad.xsd"):
        xmlschema.XMLSchema(str(SCHEMAS / name)).validate(str(junit))
    case = ET.parse(junit).getroot().find("testsuite/testcase")
    assert case.find("failure").get("type") == "ctxviz.rule"
