"""A user's own policy, from a file or an installed package's entry point, works like a built-in one,
and a broken one is one line naming it: never a traceback, never a dead window."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy, policy_names
from ctxviz.engine.simulate import simulate
from ctxviz.errors import PluginError
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = f"{ROOT / 'examples' / 'sliding_window.py'}:POLICY"
SAMPLE = ROOT / "sample_sessions" / "support_chat.yaml"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_readme_example_keeps_the_newest_messages_that_fit() -> None:
    session = load_session(str(SAMPLE))
    plan = plan_session(session, EXAMPLE, {"max_tokens": 2000, "min_messages": 0})
    rest = [m.index for m in session.messages if m.role != "system"]
    sent = [i for i in rest if plan.messages[i].decision is Decision.KEPT]
    assert sent and sent == rest[rest.index(sent[0]):]  # a contiguous tail of the conversation, after the system messages
    assert all(plan.messages[m.index].sent for m in session.messages if m.role == "system")
    assert plan.totals.used <= 2000 and plan.totals.fits
    first_dropped = plan.messages[rest[rest.index(sent[0]) - 1]]
    # the newest message left out is the one that would not fit in what was left
    assert plan.totals.used + first_dropped.tokens > 2000
    assert first_dropped.reason == "dropped: the window of 2,000 tokens is full"
    assert sum(plan.usage.values()) == plan.totals.used
    assert plan.totals.kept + plan.totals.dropped == sum(m.tokens for m in plan.messages)


def test_a_file_policy_is_registered_under_its_own_name_everywhere() -> None:
    policy = get_policy(EXAMPLE)
    assert policy.name == "sliding-window" and "sliding-window" in policy_names()
    assert get_policy("sliding-window") is policy


def test_a_file_policy_plans_simulates_compares_and_exports_through_the_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run_cli(capsys, "plan", str(SAMPLE), "--policy", EXAMPLE, "--set", "max_tokens=900", "--json")
    assert code == 0 and json.loads(out)["policy"] == "sliding-window"
    code, out, _ = run_cli(capsys, "simulate", str(SAMPLE), "--policy", EXAMPLE, "--json")
    doc = json.loads(out)
    session = load_session(str(SAMPLE))
    replies = [m.index for m in session.messages[1:] if m.role == "assistant" and session.messages[m.index - 1].role != "assistant"]
    # Like a built-in policy, it runs before each model call: one step per request before a reply.
    assert code == 0 and doc["step_rule"] == "replies" and [t["reply"] for t in doc["turns"] if t["reply"] is not None] == replies
    code, out, _ = run_cli(capsys, "simulate", str(SAMPLE), "--policy", EXAMPLE, "--per-message", "--json")
    assert code == 0 and len(json.loads(out)["turns"]) == len(session.messages)
    code, out, _ = run_cli(capsys, "compare", str(SAMPLE), "--policy", EXAMPLE, "--policy", "missy", "--json")
    assert code == 0 and json.loads(out)
    target = tmp_path / "context.json"
    code, _, _ = run_cli(capsys, "export", str(SAMPLE), "--policy", EXAMPLE, "--set", "max_tokens=900", "--to", "openai", "-o", str(target))
    assert code == 0
    exported = json.loads(target.read_text())
    plan = plan_session(load_session(str(SAMPLE)), EXAMPLE, {"max_tokens": 900})
    assert len(exported["messages"] if isinstance(exported, dict) else exported) == len(plan.context)
    code, out, _ = run_cli(capsys, "policies", "--policy", EXAMPLE)
    assert code == 0 and "== examples" in out and "sliding-window: Sliding window (example plugin)" in out
    assert "trigger: max_tokens; keep: min_messages" in out


def test_a_file_policy_rejects_a_bad_value_with_its_own_message(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plan", str(SAMPLE), "--policy", EXAMPLE, "--set", "max_tokens=0")
    assert code != 0 and err.strip().count("\n") == 0 and "max_tokens must be at least 1, got 0" in err


def write(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


BROKEN = {
    "syntax.py": ("def broken(:\n", "importing syntax.py raised SyntaxError"),
    "raises.py": ("raise RuntimeError('no config found')\n", "importing raises.py raised RuntimeError: no config found"),
    "exits.py": ("import sys\nsys.exit(3)\n", "importing exits.py raised SystemExit: 3"),
    "nopolicy.py": ("X = 1\n", "has no 'POLICY'"),
    "wrongtype.py": ("POLICY = 42\n", "is a int, not a ctxviz.api.Policy"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_plugin_file_is_one_line_naming_it(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str) -> None:
    body, expected = BROKEN[name]
    spec = write(tmp_path, name, body) + ":POLICY"
    code, out, err = run_cli(capsys, "plan", str(SAMPLE), "--policy", spec)
    assert code != 0 and not out
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"policy plugin {spec}" in err and expected in err


def test_a_missing_plugin_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "plan", str(SAMPLE), "--policy", f"{tmp_path / 'absent.py'}:POLICY")
    assert code != 0 and err.count("\n") == 1 and "no such file" in err


RAISING_PLAN = """
    from dataclasses import dataclass
    from ctxviz.api import Policy, measure_text

    @dataclass(frozen=True)
    class Settings:
        limit: int = 10

    def plan(session, params, counts):
        return {}["missing"]

    POLICY = Policy(name="raising", title="Raises", params_type=Settings, measure_name="text",
                    measure=measure_text, default_tokenizer="o200k_base", plan=plan)
"""


def test_a_plugin_whose_plan_raises_is_one_line_in_every_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = write(tmp_path, "raising.py", RAISING_PLAN) + ":POLICY"
    for command in ("plan", "simulate", "why --message 3"):
        code, out, err = run_cli(capsys, *command.split()[:1], str(SAMPLE), *command.split()[1:], "--policy", spec)
        assert code != 0, command
        assert err.count("\n") == 1 and "Traceback" not in err, (command, err)
        assert "policy plugin 'raising'" in err and "its plan raised KeyError: 'missing'" in err
    with pytest.raises(PluginError):
        simulate(load_session(str(SAMPLE)), spec)


def test_an_entry_point_policy_is_found_and_a_broken_one_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import ctxviz.engine.policies as registry

    package = tmp_path / "myteam_policies"
    package.mkdir()
    (package / "__init__.py").write_text((ROOT / "examples" / "sliding_window.py").read_text().replace('name="sliding-window"', 'name="team-window"'))
    dist = tmp_path / "myteam_policies-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: myteam-policies\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[ctxviz.policies]\nteam = myteam_policies:POLICY\nbroken = myteam_policies:NOPE\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    monkeypatch.setattr(registry, "_PLUGIN_PROBLEMS", [])
    assert "team-window" in policy_names()
    plan = plan_session(load_session(str(SAMPLE)), "team-window", {"max_tokens": 2000})
    assert plan.totals.used <= 2000 and plan.totals.kept_messages > 13  # the 13 system messages and some of the conversation
    code, out, err = run_cli(capsys, "policies")
    assert code == 0 and "team-window" in out
    assert "policy plugin broken (myteam_policies:NOPE, entry point of myteam-policies): loading raised AttributeError" in err
    sys.modules.pop("myteam_policies", None)


def test_the_example_keeps_system_messages_as_every_built_in_does() -> None:
    """A newcomer's first plugin silently dropped the system-role messages every built-in folds into the prompt."""
    session = load_session(str(SAMPLE))
    assert sum(m.role == "system" for m in session.messages) > 1
    for budget in (800, 8000):
        plan = plan_session(session, EXAMPLE, {"max_tokens": budget, "min_messages": 0})
        system = [m for m in plan.messages if session.messages[m.index].role == "system"]
        assert system and all(m.sent for m in system)
        # the window counts the system messages first, then slides over the rest
        prompt = sum(m.tokens for m in system)
        rest = sum(m.sent_tokens for m in plan.messages if session.messages[m.index].role != "system")
        assert prompt + rest <= budget or rest == 0


def test_the_readme_shows_the_example_as_it_is() -> None:
    readme = (ROOT / "README.md").read_text()
    assert (ROOT / "examples" / "sliding_window.py").read_text() in readme
