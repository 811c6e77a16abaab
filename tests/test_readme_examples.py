"""Every command the READMEs show with its output (`$ ctxviz ...` in a ```sh block) is run, and its
output compared with what the README prints, doctest-style: a line `...` stands for any number of
lines, a line ending in `...` for any line that starts with the rest, and every other line must
appear as printed, in that order. A README that drifts from the program fails here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
READMES = [ROOT / "README.md", ROOT / "sample_sessions" / "README.md"]


def examples(path: Path) -> list[tuple[str, list[str], int]]:
    """(command, expected output lines, line number) for every `$ ctxviz` in the file's sh blocks."""
    found: list[tuple[str, list[str], int]] = []
    lines = path.read_text().splitlines()
    in_block = False
    current: tuple[str, list[str], int] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            if in_block and current is not None:
                found.append(current)
                current = None
            in_block = line.strip() in ("```sh", "```console", "```shell") if not in_block else False
            i += 1
            continue
        if in_block and line.startswith("$ ctxviz "):
            if current is not None:
                found.append(current)
            command, start = line[2:], i + 1
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            current = (command, [], start)
        elif in_block and current is not None:
            current[1].append(line)
        i += 1
    return found


ALL = [(path, *example) for path in READMES if path.exists() for example in examples(path)]


def matches(expected: list[str], actual: list[str]) -> str:
    """'' when `actual` shows `expected` (with its `...` wildcards), else what is missing."""
    at = 0
    skipping = False
    for want in expected:
        want = want.rstrip()
        if want == "...":
            skipping = True
            continue
        prefix = want.endswith("...") or want.endswith("…")
        needle = want.rstrip(".…").rstrip() if prefix else want
        while at < len(actual):
            got = actual[at].rstrip()
            at += 1
            if (got.startswith(needle) if prefix else got == needle):
                break
            if not skipping:
                return f"expected line {want!r}, the program printed {got!r}"
        else:
            return f"expected line {want!r} is not in the output"
        skipping = False
    return ""


@pytest.mark.slow
@pytest.mark.parametrize("readme, command, expected, line", ALL, ids=[f"{p.name}:{line}" for p, _, _, line in ALL])
def test_every_readme_example_prints_what_the_readme_shows(readme, command, expected, line, tmp_path):
    # Run where the README's relative paths resolve, writing any output file into a scratch folder.
    command = re.sub(r"\s+#.*$", "", command)
    argv = shlex.split(command)[1:]
    for name in ("sample_sessions", "examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    rules = ROOT / "examples" / "rules.yaml"
    # The gates example says it runs with through_turn: 145 for first-user.
    (tmp_path / "rules.yaml").write_text(rules.read_text().replace("{message: first-user, through_turn: 60}",
                                                                   "{message: first-user, through_turn: 145}"))
    # As a terminal shows it: standard error interleaved with standard output.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen", "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-m", "ctxviz", *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    out = done.stdout
    shown = [line.split("\r")[-1] for line in out.split("\n")]  # a terminal shows what follows a carriage return
    while shown and not shown[0].strip():
        shown.pop(0)
    problem = matches([e for e in expected if e.strip() or e == ""], shown)
    assert not problem, f"{readme.name} line {line}: `{command}`: {problem}\n--- the program printed:\n{out[:4000]}"


def test_the_examples_are_found():
    commands = [c for _, c, _, _ in ALL]
    assert any(c.startswith("ctxviz where") for c in commands) and any(c.startswith("ctxviz sweep") for c in commands)
