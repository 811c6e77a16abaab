"""`ctxviz plan ...` builds the parser of `plan` alone (cli/__init__.py `build_parser(only)`): it
imports no other command's module, and answers every command line as the whole parser does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ctxviz import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "sample_sessions", "support_chat.yaml")


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def test_plan_imports_no_other_commands_module() -> None:
    code = ("import sys, io, contextlib\nfrom ctxviz.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(sys.argv[1:])\n"
            "print(sorted(m for m in sys.modules if m.startswith('ctxviz.cli.')))")
    out = _run(code, "plan", SAMPLE, "--retention", "off")
    assert out.returncode == 0, out.stderr
    loaded = eval(out.stdout.strip().splitlines()[-1])  # noqa: S307 (our own list literal)
    assert "ctxviz.cli.plan" in loaded
    assert not {f"ctxviz.cli.{name}" for name in cli.COMMANDS if name != "plan"} & set(loaded)


@pytest.mark.parametrize("argv", [["plan", "-h"], ["plan"], ["plan", SAMPLE, "--bogus"], ["plan", SAMPLE, "--retention", "maybe"],
                                  ["simulate", "--help"], ["watch", "-h"], ["plan", SAMPLE, "--version"], ["count", SAMPLE, "--json"]])
def test_one_commands_parser_answers_as_the_whole_parser(argv: list[str]) -> None:
    """The same output, error line and exit code with the one command's parser as with all of them."""
    code = ("import sys\nfrom ctxviz import cli\nwhole = sys.argv[1] == 'whole'\n"
            "if whole: cli.build_parser.cache_clear(); parser = cli.build_parser(); cli.build_parser = lambda only=None: parser\n"
            "sys.exit(cli.main(sys.argv[2:]))")
    one, whole = _run(code, "one", *argv), _run(code, "whole", *argv)
    assert (one.returncode, one.stdout, one.stderr) == (whole.returncode, whole.stdout, whole.stderr)


@pytest.mark.parametrize("preset", [None, "4"])
def test_a_command_starts_openblas_with_one_thread_unless_the_user_set_it(preset: str | None) -> None:
    """ctxviz does no linear algebra; OpenBLAS starting a thread per core cost every command ~50 ms."""
    code = ("import sys, io, os, contextlib\nfrom ctxviz.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(sys.argv[1:])\n"
            "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    env_before = os.environ.pop("OPENBLAS_NUM_THREADS", None)
    try:
        if preset is not None:
            os.environ["OPENBLAS_NUM_THREADS"] = preset
        out = _run(code, "plan", SAMPLE, "--retention", "off")
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
        if env_before is not None:
            os.environ["OPENBLAS_NUM_THREADS"] = env_before
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == (preset or "1")
