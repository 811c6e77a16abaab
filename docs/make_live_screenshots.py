"""The "Your agent, live" screenshots: a fake home holding real logs from tests/data, laid out where
each agent writes them, then `ctxviz sessions`, the session browser (the welcome page) and
`ctxviz gui --latest` (the newest session, with its "Next compaction" card), rendered offscreen.

    python docs/make_live_screenshots.py        # writes docs/screenshots/session-browser.png, next-compaction.png
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
REAL = DATA / "real"
SHOTS = ROOT / "docs" / "screenshots"


def session_id(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if isinstance(record.get("sessionId"), str):
            return record["sessionId"]
    raise SystemExit(f"{path}: no sessionId")


def place(source: Path, target: Path, minutes_ago: float) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    stamp = time.time() - minutes_ago * 60
    os.utime(target, (stamp, stamp))


def build(home: Path) -> None:
    projects = home / ".claude" / "projects"
    main = REAL / "claude_code" / "tugtool-subagent-main.jsonl"
    sid = session_id(main)
    spotter = REAL / "claude_code" / "spotter-4d5611e5.jsonl"
    place(spotter, projects / "-home-USER-projects-spotter" / f"{session_id(spotter)}.jsonl", 1)
    auto = DATA / "claude_code" / "spotter-8463c716-autocompact.jsonl"
    place(auto, projects / "-home-USER-projects-spotter" / f"{session_id(auto)}.jsonl", 95)
    place(main, projects / "-work-tugtool" / f"{sid}.jsonl", 30)
    place(REAL / "claude_code" / "agent-a0b12ac0cae20818c.jsonl", projects / "-work-tugtool" / sid / "subagents" / "agent-a0b12ac0cae20818c.jsonl", 28)
    place(REAL / "claude_code" / "tugtool-rewind-branch.jsonl", projects / "-work-tugtool" / "fixture-rewind-0001.jsonl", 60 * 26)
    for k, name in enumerate(("localpush-rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
                              "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")):
        source = REAL / "codex" / name
        place(source, home / ".codex" / "sessions" / "2026" / "02" / "23" / name[name.index("rollout-"):], 12 + 200 * k)
    chats = home / ".gemini" / "tmp" / "aim-matrix" / "chats"
    place(REAL / "gemini_cli" / "aim_matrix_pro.migrated.jsonl", chats / "session-2026-01-03T10-00-aim.jsonl", 60 * 50)
    (chats.parent / ".project_root").write_text("/work/aim-matrix\n", encoding="utf-8")


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        build(home)
        env = {**os.environ, "HOME": str(home), "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
        env.pop("CLAUDE_CONFIG_DIR", None)
        env.pop("CODEX_HOME", None)
        run = [sys.executable, "-m", "ctxviz"]
        print(subprocess.run([*run, "sessions"], env=env, check=True, capture_output=True, text=True).stdout.replace(str(home), "~"))
        subprocess.run([*run, "gui", "--screenshot", str(SHOTS / "session-browser.png"), "--size", "1280x800"], env=env, check=True)
        subprocess.run([*run, "gui", "--latest", "--screenshot", str(SHOTS / "next-compaction.png"), "--size", "1280x800"], env=env, check=True)
        print(f"wrote {SHOTS / 'session-browser.png'} and {SHOTS / 'next-compaction.png'}")


if __name__ == "__main__":
    main()
