""""Copy as command" (Ctrl+Shift+M) is the view, headless: the copied `ctxviz plan` command, run,
plans what the window shows. It left out the pins, so a pinned view printed another plan
(15,370 tokens and 177 messages not sent where the window said 15,416 and 176)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml")


def _run_copied(command: str, capsys: pytest.CaptureFixture[str]) -> dict:
    from ctxviz.cli import main

    argv = shlex.split(command)
    assert argv[:2] == ["ctxviz", "plan"]
    capsys.readouterr()
    assert main([*argv[1:], "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_copied_command_plans_the_pinned_pair_safe_view(qtbot, open_window, capsys) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QGuiApplication

    win = open_window(SAMPLE)
    vm = win.vm
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        vm.set_param("total", 20000)
    win.select_message(183)
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        win.registry.trigger("pin")
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        win.select_message(40)
        win.registry.trigger("pin")
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        win.tokenizer_box.setCurrentText("cl100k_base")
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        win.pair_box.setChecked(True)
    assert vm.options.pins == ("#40", "#183")
    plan = vm.plan
    assert plan.messages[183].sent and plan.messages[40].sent

    win.copy_command()
    command = QGuiApplication.clipboard().text()
    assert "--pin '#40' --pin '#183'" in command and "--pair-safe" in command and "--tokenizer cl100k_base" in command
    cli = _run_copied(command, capsys)
    assert cli["totals"]["used"] == plan.totals.used
    assert cli["totals"]["kept_messages"] == sum(1 for m in plan.messages if m.sent)
    assert [(m["decision"], m["sent_tokens"]) for m in cli["messages"]] == [
        (str(d), t) for d, t in zip(plan.columns.decision, plan.columns.sent_tokens, strict=True)]
