"""`ctxviz sessions` and `ctxviz watch`, run as a user runs them (a child process, a fake home)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "data" / "claude_code" / "spotter-8463c716-autocompact.jsonl"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    return {**env, "HOME": str(home), "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def _ctxviz(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxviz", *args], capture_output=True, text=True, env=_env(home), timeout=120)


def test_sessions_lists_a_claude_code_session_in_a_fake_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    target = home / ".claude" / "projects" / "-home-USER-spotter" / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copyfile(LOG, target)
    done = _ctxviz("sessions", "--json", home=home)
    assert done.returncode == 0, done.stderr
    sessions = json.loads(done.stdout)["sessions"]
    assert [(s["path"], s["agent"], s["model"], s["compactions"]) for s in sessions] == [(str(target), "claude-code", "claude-opus-4-6", 1)]
    text = _ctxviz("sessions", home=home)
    assert str(target) in text.stdout and "1 compaction" in text.stdout


def _cut(lines: list[str], calls_left: int) -> int:
    """The line before which the log had `calls_left` calls to make before its compaction."""
    ids: list[str] = []
    starts: dict[str, int] = {}
    for k, line in enumerate(lines):
        record = json.loads(line)
        if record.get("type") == "assistant" and record["message"].get("usage"):
            mid = record["message"]["id"]
            if mid not in starts:
                ids.append(mid)
                starts[mid] = k
    return starts[ids[len(ids) - calls_left]]


def test_watch_once_prints_the_last_call_and_the_calls_left(tmp_path: Path) -> None:
    lines = LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "live.jsonl"
    live.write_text("".join(lines[: _cut(lines, 3)]), encoding="utf-8")
    done = _ctxviz("watch", str(live), "--once", home=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith(f"{live}: ") and "claude-code" in out[0]
    assert out[1].startswith("call #") and "trigger 167,000" in out[1] and " calls to compaction" in out[1]


def test_watch_prints_a_line_per_new_call_and_ends_on_ctrl_c(tmp_path: Path) -> None:
    lines = LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "live.jsonl"
    start, end = _cut(lines, 3), _cut(lines, 1)
    live.write_text("".join(lines[:start]), encoding="utf-8")
    # Ctrl+C's default action in the child, as in a terminal, whatever this run inherited (a shell's
    # background job ignores SIGINT, and an ignored SIGINT passes to every child).
    watcher = subprocess.Popen([sys.executable, "-m", "ctxviz", "watch", str(live), "--interval", "0.05"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_env(tmp_path),
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert watcher.stdout is not None
    try:
        assert watcher.stdout.readline().startswith(str(live))
        assert watcher.stdout.readline().startswith("call #")
        with open(live, "a", encoding="utf-8") as handle:  # two more calls' lines
            handle.write("".join(lines[start:end]))
        got: list[str] = []
        for _ in range(10):  # warning lines may come between the call lines
            line = watcher.stdout.readline()
            if line.startswith("call #"):
                got.append(line)
            if len(got) == 2:
                break
        assert len(got) == 2 and "compaction" in got[-1], got
        time.sleep(0.2)
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(timeout=30) == 0
    finally:
        if watcher.poll() is None:
            watcher.kill()
        watcher.communicate()  # closes the pipes


def test_watch_shows_each_call_of_a_batch_as_itself_and_the_compaction_between(tmp_path: Path) -> None:
    """Calls read at one look: each line's share of the trigger is its own fill's, the forecast is on
    the newest call only, and the compaction the log records between two calls has a line (every line
    showed the batch's last share and forecast, "fill 89,130 ... trigger 167,000 (23%)", and the fill
    fell by 87,705 tokens with nothing said)."""
    sample = Path(__file__).resolve().parent.parent / "sample_sessions" / "claude_code_compaction.jsonl"
    lines = sample.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "live.jsonl"
    live.write_text("".join(lines[:80]), encoding="utf-8")
    watcher = subprocess.Popen([sys.executable, "-m", "ctxviz", "watch", str(live), "--interval", "0.05"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    assert watcher.stdout is not None
    try:
        assert watcher.stdout.readline().startswith(str(live))
        assert watcher.stdout.readline().startswith("call #")
        with open(live, "a", encoding="utf-8") as handle:
            handle.write("".join(lines[80:]))
        got: list[str] = []
        while not (got and got[-1].startswith("call #132")):
            line = watcher.stdout.readline()
            assert line, "watch ended early"
            got.append(line.rstrip("\n"))
    finally:
        watcher.kill()
        watcher.communicate()
    calls = [line for line in got if line.startswith("call #")]
    assert len(calls) > 10
    for line in calls:
        fill = int(line.split("fill ", 1)[1].split(" ", 1)[0].replace(",", ""))
        share = int(line.split("trigger 167,000 (", 1)[1].split("%", 1)[0])
        if line is not calls[-1]:
            assert share == round(fill / 167_000 * 100) and "calls to compaction" not in line, line
    assert "calls to compaction" in calls[-1]
    compaction = [k for k, line in enumerate(got) if line.startswith("  compaction (manual) recorded before #")]
    assert len(compaction) == 1 and got[compaction[0] + 1].startswith("call #95 ") and "-87,705 tokens" in got[compaction[0] + 1]
