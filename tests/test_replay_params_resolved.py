"""simulate --json and where --json state a policy's parameters as plan --json does, what the
session settles included: claude-code's context_window was null in the replay's JSON and 200,000 in
the plan's, for the same run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.policies import policy_names

ROOT = Path(__file__).resolve().parents[1]
CC = ROOT / "tests" / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"


def _json(capsys, *argv: str) -> dict:  # type: ignore[no-untyped-def]
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("policy", policy_names())
def test_the_replay_states_the_parameters_the_plan_states(capsys, policy: str) -> None:  # type: ignore[no-untyped-def]
    plan = _json(capsys, "plan", str(CC), "--policy", policy)
    replay = _json(capsys, "simulate", str(CC), "--policy", policy)
    assert replay["params"] == plan["params"]


def test_where_states_the_resolved_window(capsys) -> None:  # type: ignore[no-untyped-def]
    found = _json(capsys, "where", str(CC), "fourth prime")
    assert found["params"]["context_window"] == 200_000
