"""Loading a preset applies every key `ctxviz plan --config` applies: a preset the app saved with
`tokenizer: cl100k_base` came back planned with the policy's own counter, the Tokenizer box still
on "policy's own", while the command line counted 14,538 tokens with cl100k_base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml")


def _cli_used(argv: list[str], capsys: pytest.CaptureFixture[str]) -> int:
    from ctxviz.cli import main

    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["totals"]["used"]


def test_a_preset_brings_back_its_tokenizer(qtbot, open_window, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    vm = win.vm
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        vm.set_param("total", 20000)
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        win.tokenizer_box.setCurrentText("cl100k_base")
    saved_used = vm.plan.totals.used
    preset = tmp_path / "p.yaml"
    win.write_preset(str(preset))
    assert "tokenizer: cl100k_base" in preset.read_text()
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        win.tokenizer_box.setCurrentIndex(0)
    with qtbot.waitSignal(vm.planReady, timeout=30000):
        vm.reset_params()
    assert vm.tokenizer is None

    win.apply_preset(str(preset))
    qtbot.waitUntil(lambda: vm.plan.params["total"] == 20000 and "cl100k_base" in vm.plan.tokenizer, timeout=30000)
    assert win.tokenizer_box.currentText() == "cl100k_base" and vm.tokenizer == "cl100k_base"
    cli = _cli_used(["plan", SAMPLE, "--config", str(preset)], capsys)
    assert vm.plan.totals.used == cli == saved_used
    assert f"{cli:,} of 20,000" in win.status_label.text()
    assert "--tokenizer cl100k_base" in vm.command_line()


def test_a_preset_naming_an_unknown_tokenizer_is_refused_at_its_line(qtbot, open_window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    preset = tmp_path / "bad.yaml"
    preset.write_text("policy: missy\ntokenizer: cl100k_basee\nparams:\n  total: 20000\n")
    errors: list[str] = []
    win.vm.errorOccurred.connect(errors.append)
    win.apply_preset(str(preset))
    assert win.last_error_box.text().startswith(f"{preset}:2: tokenizer: unknown tokenizer 'cl100k_basee'")
    assert win.vm.tokenizer is None and win.vm.params.total == 30000
    assert win.tokenizer_box.currentText() == "policy's own"
    win.last_error_box.close()
