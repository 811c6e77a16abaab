"""The command line plans and replays with the cycle collector paused and freezes what they built.

A first plan of a long session builds per-message views and counts that live until the command
ends and form no cycles; the collector's full passes over them took up to half of a
100,000-message plan, and `ctxviz plan` of such a session ran 0.62x as long without them (measured
on whole processes, interleaved). These tests hold what a user relies on: the same plan, and a
collector left running (or left off, when the caller had turned it off, with nothing frozen).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxviz.cli import main
from ctxviz.cli import session as cli_session
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.planner import plan_session
from ctxviz.io.loaders import load_session

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml"


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # (the test process goes on: give the collector back what a test froze)
    gc.enable()


def _spied(monkeypatch: pytest.MonkeyPatch, module: Any = cli_session, name: str = "plan_session") -> list[bool]:
    """Whether the collector ran at each call of `module.name` (the command line's plan, by default)."""
    seen: list[bool] = []
    real = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def test_a_plan_runs_with_the_collector_paused_then_freezes_and_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    session = load_session(SAMPLE)
    seen = _spied(monkeypatch)
    frozen = gc.get_freeze_count()
    plan = cli_session.plan_frozen(session, "langchain-trim", None, None, PlanOptions())
    assert seen == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen
    expected = plan_session(load_session(SAMPLE), "langchain-trim")
    assert plan.to_json() == expected.to_json()  # the same plan as the engine's, collector or not


def test_a_caller_that_holds_the_collector_off_keeps_it_off_and_nothing_is_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    session = load_session(SAMPLE)
    seen = _spied(monkeypatch)
    gc.disable()
    frozen = gc.get_freeze_count()
    cli_session.plan_frozen(session, "missy", None, None, PlanOptions())
    assert seen == [False]
    assert not gc.isenabled()
    assert gc.get_freeze_count() <= frozen  # (frozen objects freed since may lower it; a freeze would raise it by thousands)


@pytest.mark.parametrize("command", [["plan", "--json"], ["compare", "--policy", "missy", "--policy", "langchain-trim", "--json"]])
def test_the_commands_plan_so_and_leave_the_collector_running(command: list[str], monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    seen = _spied(monkeypatch)
    assert main([*command, str(SAMPLE)]) == 0
    assert seen and not any(seen)
    assert gc.isenabled()
    json.loads(capsys.readouterr().out)


def test_simulate_replays_with_the_collector_paused_and_leaves_it_running(monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from ctxviz.engine import simulate as engine_simulate

    seen = _spied(monkeypatch, engine_simulate, "simulate")
    frozen = gc.get_freeze_count()
    assert main(["simulate", str(SAMPLE), "--retention", "off", "--json"]) == 0
    assert seen == [False]
    assert gc.isenabled() and gc.get_freeze_count() > frozen
    assert json.loads(capsys.readouterr().out)["turns"]
