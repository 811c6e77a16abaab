"""`ctxviz watch`: the policy it forecasts with, and a file read again whole.

A log from a format no agent policy belongs to was forecast with claude-code's trigger, unannounced
(a gpt-4o chat warned "compacting now would lose 62 things you asked"); it opens under missy, as
`plan` opens it, and says why. A file replaced by another log skipped the new log's first calls
(only a shorter file started over) and changed trigger with no header.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.steps import recorded_call
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = ROOT / "tests" / "data" / "real" / "claude_code" / "spotter-4d5611e5.jsonl"
CODEX = ROOT / "tests" / "data" / "real" / "codex" / "localpush-rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
CHAT = ROOT / "sample_sessions" / "support_chat.yaml"
RESPONSE = ROOT / "tests" / "data" / "real" / "responses" / "pydantic-ai-web-search-tool.response.json"


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out


# --- the policy: the one plan opens the log under ---------------------------------------------------

@pytest.mark.parametrize(("path", "fmt"), [(CHAT, "ctxviz"), (RESPONSE, "openai-responses")])
def test_watch_opens_another_format_under_missy_and_says_why(capsys: pytest.CaptureFixture[str], path: Path, fmt: str) -> None:
    code, out = run(capsys, "watch", path, "--once")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{path}: ") and lines[0].endswith("so far; missy")
    assert lines[1] == (f"  opened under missy, ctxviz's reference policy: no agent's own policy belongs to {fmt} files; "
                        "--policy NAME for another")
    assert lines[2] == "  missy has no compaction trigger: each call's fill is set against the window only, with no forecast of a compaction"
    assert "claude-code" not in out and "trigger " not in out and "warning" not in out and "to compaction" not in out
    _, plan_out = run(capsys, "plan", path)
    assert "\npolicy missy " in "\n" + plan_out  # the same policy plan opens it under


def test_watch_of_a_response_sets_the_fill_against_the_window_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "watch", RESPONSE, "--once")
    assert code == 0
    assert out.splitlines()[3] == "call #0  fill 9,506 / 400,000 (2%)  cache 90%"  # no invented trigger 367,000


def test_watch_with_a_policy_named_says_no_opening_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "watch", CHAT, "--once", "--policy", "claude-code")
    assert code == 0
    assert out.splitlines()[0].endswith("; claude-code; no recorded automatic compaction in this log to check the forecast against")
    assert "opened under" not in out and "no compaction trigger" not in out


def test_watch_of_an_agents_log_keeps_its_header(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "watch", CLAUDE, "--once")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{CLAUDE}: 18 calls so far; claude-code; no recorded automatic compaction in this log to check the forecast against"
    assert lines[1].startswith("call #39  fill 81,960 / 200,000 (41%)  trigger 167,000 (49%)")


# --- a file read again whole ------------------------------------------------------------------------

def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    return {**env, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def _watch(live: Path) -> tuple[subprocess.Popen[str], threading.Timer]:
    watcher = subprocess.Popen([sys.executable, "-m", "ctxviz", "watch", str(live), "--interval", "0.05"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_env())
    guard = threading.Timer(90, watcher.kill)  # a watcher that never prints the line ends the test (under the 120 s timeout)
    guard.start()
    return watcher, guard


def _until(watcher: subprocess.Popen[str], done: str) -> list[str]:
    """The lines `watch` prints up to the first that starts with `done`."""
    assert watcher.stdout is not None
    got: list[str] = []
    while not (got and got[-1].startswith(done)):
        line = watcher.stdout.readline()
        assert line, f"watch ended before {done!r}: {got} {watcher.stderr.read() if watcher.stderr else ''}"
        got.append(line.rstrip("\n"))
    return got


def _after_warning(lines: list[str]) -> list[str]:
    """The lines after the first look's warning (printed after its call line)."""
    return lines[1:] if lines and lines[0].startswith("  warning: ") else lines


def _replace(live: Path, text: str) -> None:
    """Another file at the path, as an agent or an editor's atomic save puts it."""
    fresh = live.with_suffix(".new")
    fresh.write_text(text, encoding="utf-8")
    os.replace(fresh, live)


def _replaced_while_watched(tmp_path: Path, replacement: str, done: str) -> tuple[Path, list[str], list[str]]:
    """What `watch` prints of the first 150 lines of the Claude Code log, then, once that file is
    replaced by `replacement`, up to the line starting with `done`."""
    lines = CLAUDE.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "r2.jsonl"
    live.write_text("".join(lines[:150]), encoding="utf-8")
    watcher, guard = _watch(live)
    try:
        first = _until(watcher, "call #")
        _replace(live, replacement)
        after = _after_warning(_until(watcher, done))
    finally:
        guard.cancel()
        watcher.kill()
        watcher.communicate()
    return live, first, after


def _calls(path: Path) -> int:
    """The calls the log records, as `verify` lists them."""
    return sum(1 for m in load_session(str(path)).messages if recorded_call(m))


def test_watch_starts_over_on_another_log_replacing_the_file(tmp_path: Path) -> None:
    live, first, after = _replaced_while_watched(tmp_path, CODEX.read_text(encoding="utf-8"), "call #152 ")
    assert first[0].endswith("so far; claude-code; no recorded automatic compaction in this log to check the forecast against")
    assert after[0] == "note: the file was replaced (another file at the path): read again whole"
    # The new log's header, with how many calls it holds before the newest (it skipped 8 of 28 calls,
    # #7 to #45, and kept claude-code's header over codex-compaction's trigger).
    assert after[1] == (f"{live}: {_calls(CODEX)} calls so far; codex-compaction; "
                        "no recorded automatic compaction in this log to check the forecast against")
    assert after[2] == ("  now codex-compaction on gpt-5.3-codex, window 258,400 (was claude-code on claude-opus-4-6, window 200,000): "
                        "the policy of Codex, which wrote this log on gpt-5.3-codex, with the window Codex uses for it")
    assert after[3].startswith("call #152  fill 108,869 / 258,400 (42%)  trigger 244,800 (47%)  +660 tokens")
    assert not any(line.startswith("call #") for line in after[:3])


def test_watch_goes_on_when_the_file_read_again_is_the_same_log_grown(tmp_path: Path) -> None:
    """A file written again whole with the calls printed at its start (truncated and rewritten) is the
    same log: only its new calls are printed, with no header."""
    live, first, after = _replaced_while_watched(tmp_path, CLAUDE.read_text(encoding="utf-8"), "call #39 ")
    assert first[-1].startswith("call #19 ")
    assert after[0] == "note: the file was replaced (another file at the path): read again whole"
    calls = [line.split()[1] for line in after if line.startswith("call #")]
    assert calls[0] != "#19" and calls[-1] == "#39" and len(calls) == 18 - 8  # the 10 calls after the 8 printed at the start
    assert not any(line.startswith(str(live)) or line.startswith("  now ") for line in after)


def test_watch_starts_over_on_a_file_emptied_then_written_anew(tmp_path: Path) -> None:
    """Emptied (its note comes at a poll with nothing to read) and then written with another log in
    place, which the next poll reads as an append: `watch` printed neither the note nor a header, and
    went on from the call count it had printed."""
    lines = CLAUDE.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "r3.jsonl"
    live.write_text("".join(lines[:150]), encoding="utf-8")
    watcher, guard = _watch(live)
    try:
        _until(watcher, "call #")
        live.write_bytes(b"")  # the same file, emptied
        emptied = _after_warning(_until(watcher, "note: "))
        with open(live, "a", encoding="utf-8") as handle:
            handle.write(CODEX.read_text(encoding="utf-8"))
        after = _until(watcher, "call #152 ")
    finally:
        guard.cancel()
        watcher.kill()
        watcher.communicate()
    assert emptied[0].startswith("note: the file was truncated (0 bytes, ") and emptied[0].endswith(" read): read again whole")
    assert after[0] == f"{live}: 28 calls so far; codex-compaction; no recorded automatic compaction in this log to check the forecast against"
    assert after[1].startswith("  now codex-compaction on gpt-5.3-codex, window 258,400 (was claude-code on claude-opus-4-6, window 200,000)")
    assert after[2].startswith("call #152  fill 108,869 / 258,400 (42%)")
