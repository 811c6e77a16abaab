"""A log opens under its own agent's policy (issue 24): the format-to-policy map, the CLI's plan,
simulate and info, and the app, on the sample logs each agent wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.agent_policies import DEFAULT_POLICY, default_policy, opened_under, own_policy
from ctxviz.engine.policies import policy_names
from ctxviz.io.loaders import load_session

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
#: Each agent's sample log and the policy that reproduces its agent's context manager.
AGENT_LOGS = [("claude_code_compaction.jsonl", "claude-code"), ("codex_rollout.jsonl", "codex-compaction"),
              ("gemini_cli_session.json", "gemini-cli-compression")]
OTHER_FILES = ["support_chat.yaml", "coding_agent.langchain.json", "coding_agent.otel.json", "coding_agent.traj"]


@pytest.mark.parametrize("name, policy", AGENT_LOGS)
def test_an_agents_log_maps_to_its_agents_policy(name: str, policy: str) -> None:
    session = load_session(SAMPLES / name)
    assert own_policy(session.format) == default_policy(session.format) == policy
    assert policy in policy_names()
    opened = opened_under(session.format, session.model)
    assert opened.policy == policy and opened.agents_own
    assert session.model in opened.reason  # "which wrote this log on <model>"


@pytest.mark.parametrize("name", OTHER_FILES)
def test_a_format_without_an_agent_policy_keeps_missy(name: str) -> None:
    session = load_session(SAMPLES / name)
    assert own_policy(session.format) is None
    assert default_policy(session.format) == DEFAULT_POLICY == "missy"
    assert not opened_under(session.format).agents_own


def run(capsys, *argv: str) -> str:  # type: ignore[no-untyped-def]
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name, policy", AGENT_LOGS)
def test_plan_and_simulate_without_policy_use_the_agents_and_say_so(capsys, name: str, policy: str) -> None:  # type: ignore[no-untyped-def]
    path = str(SAMPLES / name)
    lines = run(capsys, "plan", path).splitlines()
    assert lines[1].startswith(f"policy {policy} (")
    assert lines[2].startswith(f"  opened under {policy}, the policy of ")
    # The same plan as naming the policy, figure for figure.
    auto = json.loads(run(capsys, "plan", path, "--json"))
    named = json.loads(run(capsys, "plan", path, "--json", "--policy", policy))
    assert auto["policy"] == policy and auto["totals"] == named["totals"]
    out = run(capsys, "simulate", path).splitlines()
    assert out[0].endswith(f"turns with {policy}") and f"opened under {policy}" in out[1]
    assert f"  policy: {policy} (the policy of the agent that wrote this log" in run(capsys, "info", path)


def test_a_named_policy_wins_and_says_nothing_of_the_agent(capsys) -> None:  # type: ignore[no-untyped-def]
    out = run(capsys, "plan", str(SAMPLES / "codex_rollout.jsonl"), "--policy", "missy")
    assert out.splitlines()[1].startswith("policy missy (") and "opened under" not in out


def test_plan_of_another_format_is_missy_as_before(capsys) -> None:  # type: ignore[no-untyped-def]
    out = run(capsys, "plan", str(SAMPLES / "support_chat.yaml"))
    assert out.splitlines()[1].startswith("policy missy (") and "opened under" not in out


def test_a_parameter_of_another_policy_names_the_policy_the_log_opened_under(capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["plan", str(SAMPLES / "gemini_cli_session.json"), "--set", "total=20000"])
    err = capsys.readouterr().err
    assert code != 0 and "gemini-cli-compression (the policy this log's agent runs; name another with --policy)" in err
    assert "Traceback" not in err


pytest.importorskip("PySide6")


@pytest.mark.parametrize("name, policy", AGENT_LOGS)
def test_the_app_opens_an_agents_log_under_its_policy_and_says_so(open_window, name: str, policy: str) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLES / name)
    assert win.vm.policy == policy and win.vm.plan.policy == policy
    assert win.policy_box.currentText() == policy
    assert "Opened under" in win.policy_title.text() and policy in win.policy_title.text()


def test_the_app_keeps_a_policy_the_user_chose(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLES / "codex_rollout.jsonl")
    assert win.vm.policy == "codex-compaction"
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.open(str(SAMPLES / "support_chat.yaml"))
    assert win.vm.policy == "missy"  # back to the reference policy: support_chat has no agent policy
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.policy_box.setCurrentText("supyagent")  # the user's choice
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.open(str(SAMPLES / "gemini_cli_session.json"))
    assert win.vm.policy == "supyagent" and "Opened under" not in win.policy_title.text()
