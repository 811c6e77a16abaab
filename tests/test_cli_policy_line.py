"""The policy line of `ctxviz plan`: it names the --config preset it applied (text and --json), and
shows an unset value as "unset", as the app does, never Python's None or an empty `end_on=`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NATIVE = "tests/data/native_small.yaml"
PRESET = "resources/presets/supyagent-large-context-models.yaml"


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "ctxviz", *argv], cwd=ROOT, env=env, capture_output=True, text=True)


def _description(path: str) -> str:
    from ctxviz.io.config import load_preset

    return load_preset(ROOT / path).description


def test_plan_text_names_the_preset_and_its_description_under_the_policy_line():
    done = _run("plan", NATIVE, "--config", PRESET)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("policy supyagent (")
    assert lines[2] == f"  preset {PRESET}: {_description(PRESET)}"


def test_plan_json_names_the_preset():
    done = _run("plan", NATIVE, "--config", PRESET, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["preset"] == {"path": PRESET, "description": _description(PRESET)}


def test_without_a_preset_nothing_is_named():
    done = _run("plan", NATIVE, "--json")
    assert "preset" not in json.loads(done.stdout)
    assert "  preset " not in _run("plan", NATIVE).stdout


@pytest.mark.parametrize(("policy", "shown"), [
    ("claude-code", ["autocompact_pct_override=unset", "calibrated_trigger=unset"]),
    ("categories", ["max_context_images=unset"]),
    ("langchain-trim", ["end_on=unset", "start_on=unset", "text_splitter=unset"]),
])
def test_unset_values_say_unset_in_the_policy_line(policy, shown):
    done = _run("plan", NATIVE, "--policy", policy)
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[1]
    assert line.startswith(f"policy {policy} (")
    for text in shown:
        assert text in line
    assert "=None" not in line and "=," not in line and "=)" not in line


def test_the_json_keeps_null_and_empty_text():
    params = json.loads(_run("plan", NATIVE, "--policy", "langchain-trim", "--json").stdout)["params"]
    assert params["end_on"] == "" and params["text_splitter"] == ""
    params = json.loads(_run("plan", NATIVE, "--policy", "claude-code", "--json").stdout)["params"]
    assert params["autocompact_pct_override"] is None


def test_simulate_names_the_preset_too(capsys) -> None:  # type: ignore[no-untyped-def]
    """simulate with --config named no preset (plan did): both say which file set the values."""
    import json
    from pathlib import Path

    from ctxviz.cli import main

    root = Path(__file__).resolve().parents[1]
    preset = str(root / "resources" / "presets" / "missy-default.yaml")
    sample = str(root / "sample_sessions" / "coding_agent.yaml")
    assert main(["simulate", sample, "--config", preset]) == 0
    assert f"  preset {preset}: missy's built-in TokenBudget defaults" in capsys.readouterr().out
    assert main(["simulate", sample, "--config", preset, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["preset"]["path"] == preset
