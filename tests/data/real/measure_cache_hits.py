"""Measure, from the real logs in this folder, how much of a shared prefix providers really serve
from their caches; writes resources/cache_hits.yaml, which `ctxviz.engine.caching` reads.

Run from the repository root:  python tests/data/real/measure_cache_hits.py

Two measurements, both per file (the engine pools them and takes the spread between files):

- best effort (OpenAI from the Codex rollouts, Google from the Gemini CLI sessions): for each call
  whose request only grew (the history was appended to), the shared prefix is the previous request
  (input + cached input of the call before), and the share served is the reported cached input over
  what the provider could serve of that prefix (its minimum and block size). Calls made within 5
  minutes of the one before and calls after a longer gap (`after_gap_*`: OpenAI clears a prefix
  after 5-10 minutes of inactivity, sometimes an hour) are counted apart. OpenAI documents this
  caching as best effort: a call with no cached tokens at all is counted as a miss.
- cold starts (Anthropic from the Claude Code sessions, OpenAI from the Codex rollouts): at a
  session's first call, and (Anthropic) at a call made after the cache's lifetime, nothing this
  session sent is cached, yet the user's other sessions
  may have cached the part every session sends first (system prompt and tool definitions, which the
  log does not record). The share served is the cache read over that unseen prefix as
  `engine.caching.unseen_prefix` estimates it.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from ctxviz.engine.caching import log_lifetime, servable, unseen_prefix  # noqa: E402
from ctxviz.engine.catalog import find_model  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

HERE = Path(__file__).resolve().parent
BEST_EFFORT_GAP = 300
#: An "unseen prefix" this large is not a system prompt but the conversation a forked agent (Claude
#: Code's compaction agent) starts from: not a cold start of the kind measured here.
FORKED = 60_000


def seconds(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def calls(session: Any) -> list[Any]:
    return [m for m in session.messages if m.usage is not None and m.usage.window_fill > 0]


def best_effort(folder: str) -> list[dict[str, Any]]:
    rows = []
    for path in sorted((HERE / folder).glob("*.json*")):
        session = load_session(str(path))
        entry = find_model(session.model)
        found = calls(session)
        if entry is None or len(found) < 2:
            continue
        fresh = {"calls": 0, "shared": 0, "served": 0, "missed": 0}
        stale = {"calls": 0, "shared": 0, "served": 0, "missed": 0}
        for before, after in zip(found, found[1:], strict=False):
            t0, t1 = seconds(before.timestamp), seconds(session.messages[after.index - 1].timestamp)
            grew = after.usage.window_fill >= before.usage.window_fill
            could = servable(before.usage.window_fill, entry)
            if t0 is None or t1 is None or not grew or not could:
                continue
            row = fresh if t1 - t0 <= BEST_EFFORT_GAP else stale
            row["calls"] += 1
            row["shared"] += could
            row["served"] += min(after.usage.cache_read_input_tokens, could)
            row["missed"] += after.usage.cache_read_input_tokens == 0
        if fresh["calls"] or stale["calls"]:
            rows.append({"file": f"{folder}/{path.name}", "model": session.model, **fresh,
                         **{f"after_gap_{k}": v for k, v in stale.items()}})
    return rows


def cold_starts(folder: str, after_gaps: bool) -> list[dict[str, Any]]:
    rows = []
    for path in sorted((HERE / folder).glob("*.jsonl")):
        session = load_session(str(path))
        unseen = unseen_prefix(session)
        if not unseen or unseen > FORKED:
            continue
        ttl = (log_lifetime(session) or 300) if after_gaps else float("inf")
        found = calls(session)
        n = unseen_total = served_total = 0
        previous: float | None = None
        for m in found:
            now = seconds(session.messages[m.index - 1].timestamp) if m.index else None
            if previous is None or (now is not None and now - previous > ttl):
                n += 1
                unseen_total += unseen
                served_total += min(m.usage.cache_read_input_tokens, unseen)
            previous = seconds(m.timestamp) or previous
        rows.append({"file": f"{folder}/{path.name}", "model": session.model, "calls": n, "unseen": unseen_total, "served": served_total})
    return rows


def main() -> None:
    doc = {
        "best_effort": {"openai": best_effort("codex"), "google": best_effort("gemini_cli")},
        "cold_start": {"anthropic": cold_starts("claude_code", True), "openai": cold_starts("codex", False)},
    }
    header = ("# How much of a shared prefix providers really serve from their caches, measured per file on the real\n"
              "# logs in tests/data/real (their sources and licences: the SOURCES.md beside them).\n"
              "# Generated by tests/data/real/measure_cache_hits.py (see its docstring for what is measured); do not edit\n"
              "# by hand: add real logs there and run it again.\n")
    out = ROOT / "resources" / "cache_hits.yaml"
    out.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=140), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
