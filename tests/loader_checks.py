"""Checks every loader's tests make the same way: the CLI in-process, a whole file through every
command, and a bad file refused in one line naming file, line and field."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.session import Session
from ctxviz.engine.simulate import Timeline
from ctxviz.engine.steps import recorded_call
from ctxviz.errors import LoadError
from ctxviz.io.loaders import load_session


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def assert_plans_simulates_and_exports(path: str | Path, policy: str, folder: Path) -> None:
    """plan, plan --json --pair-safe and simulate succeed under `policy`; under missy, every export too."""
    path = str(path)
    for argv in (["plan", path, "--policy", policy], ["plan", path, "--policy", policy, "--json", "--pair-safe"],
                 ["simulate", path, "--policy", policy]):
        code, out, err = run_cli(argv)
        assert code == 0 and out, (argv, err)
    if policy == "missy":
        for target in ("openai", "anthropic", "jsonl", "markdown"):
            code, _, err = run_cli(["export", path, "--to", target, "-o", str(folder / f"out.{target}")])
            assert code == 0, err


def assert_refused_in_one_line(path: str | Path, prefix: str) -> None:
    """Loading `path` fails with one line that starts `FOLDER/prefix` (`FILE:LINE: field: problem`)."""
    path = Path(path)
    with pytest.raises(LoadError) as err:
        load_session(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(os.path.join(str(path.parent), prefix)), message


def assert_one_step_per_call(s: Session, timeline: Timeline) -> None:
    """One step per model call: each step's request ends right before the assistant message that
    answered it; every assistant reply to new input (and every call the log records) answers a
    step; a step without an answer is the trailing request, holding the file's last message."""
    messages = s.messages
    replies = [t.reply for t in timeline.turns if t.reply >= 0]
    assert replies == sorted(set(replies))
    for t in timeline.turns:
        if t.reply >= 0:
            assert t.reply == t.index + 1 and messages[t.reply].role == "assistant"
        else:
            assert t is timeline.turns[-1] and t.index == len(messages) - 1 and messages[-1].role != "assistant"
    answering = {m.index for m in messages[1:] if m.role == "assistant" and (messages[m.index - 1].role != "assistant" or recorded_call(m))}
    assert answering == set(replies)
