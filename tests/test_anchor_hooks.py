"""Extraction's cheap searches stand for the costly patterns they guard: a text the guard passes over
holds nothing the costly pattern would find, so the anchors are those of the pattern run on every
text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.anchor_extract import (
    ERROR_LINE_RE,
    PATH_HOOK_RE,
    PATH_HOOK_RUN_RE,
    PATH_RUN_RE,
    error_lines,
    extract,
)

#: Pieces of error lines and of prose that names errors without being one.
PIECES = ["Error", "error", "ERROR", "ValueError", "Exception", "FAILED", "FAIL", "FATAL", "Fatal", "fatal", "panic", ":", "!", " - ", "\t-\t",
          " -", "- ", "[E0308]", "[", "]", " ", "\t", "\n", "E ", "> ", "|", "x", "ED", "tests/a.py", ".", "Traceback"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=24).map("".join))
def test_error_lines_read_at_line_starts_are_the_error_line_patterns_matches(text: str) -> None:
    assert error_lines(text) == [m.group(0) for m in ERROR_LINE_RE.finditer(text)]


def test_error_lines_are_found_in_each_of_their_forms() -> None:
    text = ("FAILED: tests/test_a.py::test_x\nFAIL - b\nFatal: disk full\nERROR: boom\npanic: nil map\n  E   AssertionError: x\n"
            "error[E0308]: mismatched types\nfatal: not a git repository\nthe error is that the retry never stops\n")
    errors = [value for kind, _, value in extract(text, "tool") if kind == "error"]
    assert errors == ["FAILED: tests/test_a.py::test_x", "FAIL - b", "Fatal: disk full", "ERROR: boom", "panic: nil map", "E AssertionError: x",
                      "error[E0308]: mismatched types", "fatal: not a git repository"]


#: Pieces of paths, of things that look like them, and of what stands between them.
PATH_PIECES = ["src", "/", ".", "py", "md", "a", "_0", "~", "-", "@", "+", " ", "\n", ":", "<", "é", ".py", ".pyc", "x.y", "//", "1/2", "`"]


def runs_hook_by_hook(text: str) -> list[tuple[int, int]]:
    """Each run of path characters holding a hook, as (hook, end): PATH_HOOK_RE searched again after
    each run, and the run read on from the hook by PATH_RUN_RE (how extract found them before)."""
    found = []
    m = PATH_HOOK_RE.search(text)
    while m is not None:
        end = PATH_RUN_RE.match(text, m.end()).end()  # type: ignore[union-attr]
        found.append((m.start(), end))
        m = PATH_HOOK_RE.search(text, end)
    return found


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PATH_PIECES), max_size=30).map("".join))
def test_one_match_finds_each_runs_first_hook_and_its_end(text: str) -> None:
    assert [m.span() for m in PATH_HOOK_RUN_RE.finditer(text)] == runs_hook_by_hook(text)
