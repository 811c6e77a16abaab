"""Listing a thousand sessions, cold and warm, and following a growing log.

    python bench/bench_live.py [--sessions 1000] [--rounds 5]

**Listing.** A fake home is filled with `--sessions` session files copied from the real logs in
tests/data (Claude Code, Codex and Gemini CLI, each where its agent writes it, a Claude Code sub-agent
under every fifth session), 100 projects. Cold is a listing with an empty cache (a new
`SessionIndex`; the files are in the OS page cache after the first round, as on a machine where the
agents just wrote them); warm is a listing with the cache of the round before, nothing changed.
Rounds interleave cold and warm; the table reports the median and the spread of each, and the
warm/cold ratio per round. Goal: warm well under a second for 1,000 sessions.

**Following.** A Claude Code log is grown call by call from a real session tiled to `--megabytes`
(fresh ids, one chain); the time of each `Follower.poll()` after an append of one call's lines is
reported beside the time of a full `load_session` of the file as it then is, in the same rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

from common import ROOT  # noqa: E402

sys.path.insert(0, ROOT)

from ctxviz.io.discovery import SessionIndex, discover  # noqa: E402
from ctxviz.io.follow import Follower  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

DATA = Path(ROOT) / "tests" / "data"
CLAUDE = sorted((DATA / "real" / "claude_code").glob("*.jsonl")) + sorted((DATA / "claude_code").glob("spotter-*.jsonl"))
CODEX = sorted((DATA / "real" / "codex").glob("*rollout-*.jsonl"))
GEMINI = sorted((DATA / "real" / "gemini_cli").glob("*.json*"))


def build_home(home: Path, sessions: int) -> int:
    """Lay out `sessions` session files as the agents do; returns how many bytes they hold."""
    total = 0
    sub = DATA / "real" / "claude_code" / "agent-a0b12ac0cae20818c.jsonl"
    for k in range(sessions):
        project = k % 100
        kind = k % 10
        if kind < 6:
            source = CLAUDE[k % len(CLAUDE)]
            sid = str(uuid.UUID(int=k))
            target = home / ".claude" / "projects" / f"-work-project-{project}" / f"{sid}.jsonl"
            if k % 5 == 0:
                extra = target.parent / sid / "subagents" / sub.name
                extra.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(sub, extra)
        elif kind < 9:
            source = CODEX[k % len(CODEX)]
            name = source.name[source.name.index("rollout-"):]
            target = home / ".codex" / "sessions" / "2026" / f"{1 + project % 12:02d}" / f"{1 + k % 28:02d}" / name.replace(".jsonl", f"-{k}.jsonl")
        else:
            source = GEMINI[k % len(GEMINI)]
            target = home / ".gemini" / "tmp" / f"project-{project}" / "chats" / f"session-{k}{source.suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        stamp = 1_700_000_000 + k * 60
        os.utime(target, (stamp, stamp))
        total += target.stat().st_size
    return total


def bench_listing(sessions: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        size = build_home(home, sessions)
        env = {"HOME": str(home)}
        colds: list[float] = []
        warms: list[float] = []
        ratios: list[float] = []
        index = SessionIndex()
        discover(env=env, home=home, index=index)  # one listing first: the page cache as after the agents wrote the files
        count = 0
        for r in range(rounds):
            def cold() -> float:
                start = time.perf_counter()
                discover(env=env, home=home, index=SessionIndex())
                return time.perf_counter() - start

            def warm() -> float:
                nonlocal count
                start = time.perf_counter()
                listing = discover(env=env, home=home, index=index)
                count = sum(1 + len(s.subagents) for s in listing.sessions)
                return time.perf_counter() - start

            c, w = (cold(), warm()) if r % 2 == 0 else tuple(reversed((warm(), cold())))
            colds.append(c)
            warms.append(w)
            ratios.append(w / c)
        print(f"listing {count:,} session files ({size / 1e6:,.0f} MB) in {rounds} interleaved rounds")
        print(f"  cold  median {statistics.median(colds):.3f} s  [{min(colds):.3f}-{max(colds):.3f}]")
        print(f"  warm  median {statistics.median(warms):.3f} s  [{min(warms):.3f}-{max(warms):.3f}]  "
              f"(goal: well under 1 s; {'met' if statistics.median(warms) < 0.5 else 'NOT met'})")
        print(f"  warm/cold median {statistics.median(ratios):.3f}  [{min(ratios):.3f}-{max(ratios):.3f}]")


def tiled_claude_log(megabytes: float) -> list[str]:
    """A Claude Code session repeated to about `megabytes`, with fresh uuids and one chain."""
    source = (DATA / "real" / "claude_code" / "spotter-4d5611e5.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in source]
    out: list[str] = []
    previous = None
    size = 0
    copy = 0
    while size < megabytes * 1e6:
        for record in records:
            r = dict(record)
            if r.get("isSidechain") or r.get("type") == "progress":
                continue
            r["uuid"] = f"{copy:06d}-{r.get('uuid', '')}"
            r["parentUuid"] = previous
            if isinstance(r.get("message"), dict) and isinstance(r["message"].get("id"), str):
                r["message"] = {**r["message"], "id": f"{copy}-{r['message']['id']}"}
            previous = r["uuid"]
            line = json.dumps(r, separators=(",", ":")) + "\n"
            out.append(line)
            size += len(line)
        copy += 1
    return out


def bench_follow(megabytes: float, appends: int) -> None:
    lines = tiled_claude_log(megabytes)
    calls = [k for k, line in enumerate(lines) if '"type":"assistant"' in line]
    start_at = calls[-appends - 1]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "live.jsonl"
        path.write_text("".join(lines[:start_at]), encoding="utf-8")
        follower = Follower(path)
        t = time.perf_counter()
        follower.poll()
        first = time.perf_counter() - t
        follower.plan("claude-code")
        polls, loads, plans = [], [], []
        for a, b in zip(calls[-appends - 1:-1], calls[-appends:], strict=True):
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("".join(lines[a:b]))
            t = time.perf_counter()
            follower.poll()
            polls.append(time.perf_counter() - t)
            t = time.perf_counter()
            follower.plan("claude-code")
            plans.append(time.perf_counter() - t)
            t = time.perf_counter()
            load_session(path)
            loads.append(time.perf_counter() - t)
        size = path.stat().st_size
        n = len(follower.session.messages) if follower.session else 0
        print(f"following a {size / 1e6:,.0f} MB Claude Code log ({n:,} messages), {appends} appends of one call each "
              f"(first read {first:.2f} s)")
        print(f"  poll             median {statistics.median(polls):.3f} s [{min(polls):.3f}-{max(polls):.3f}]")
        print(f"  plan (counts kept) median {statistics.median(plans):.3f} s [{min(plans):.3f}-{max(plans):.3f}]")
        print(f"  load_session     median {statistics.median(loads):.3f} s [{min(loads):.3f}-{max(loads):.3f}]  "
              f"(poll/load median {statistics.median([p / q for p, q in zip(polls, loads, strict=True)]):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--megabytes", type=float, default=20.0)
    parser.add_argument("--appends", type=int, default=5)
    args = parser.parse_args()
    bench_listing(args.sessions, args.rounds)
    bench_follow(args.megabytes, args.appends)


if __name__ == "__main__":
    main()
