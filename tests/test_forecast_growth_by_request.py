"""The next-compaction forecast measures growth request to request. Measured fill to fill (input
plus output), a Gemini CLI log read a call whose thoughts were long (billed as output, never sent
again) as the next call shrinking the context: `watch` said "no upper bound: a recent call added
nothing" on a log whose every prompt grew. Real log: tests/data/real/gemini_cli/ai-sessions_pomodoro.json
(SOURCES.md there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ctxviz.engine.forecast import GROWTH_WINDOW, growth
from ctxviz.io.loaders import load_session

LOG = Path(__file__).parent / "data" / "real" / "gemini_cli" / "ai-sessions_pomodoro.json"


def _prompts_from_the_file() -> list[int]:
    """Each call's prompt as Gemini reports it: `promptTokenCount` (`input`, cached included) plus
    the built-in tools' prompt (`tool`); all-zero `tokens` are no call."""
    out = []
    for m in json.loads(LOG.read_text())["messages"]:
        t = m.get("tokens") or {}
        if m.get("type") == "gemini" and any(t.values()):
            out.append(t["input"] + t.get("tool", 0))
    return out


def test_growth_is_the_prompts_differences() -> None:
    prompts = _prompts_from_the_file()
    expected = [max(0, b - a) for a, b in zip(prompts, prompts[1:], strict=False)][-GROWTH_WINDOW:]
    g = growth(load_session(LOG))
    assert list(g.fills) == prompts
    assert list(g.increases) == expected
    assert min(expected) > 0  # every prompt grew


def test_watch_gives_an_upper_bound() -> None:
    out = subprocess.run([sys.executable, "-m", "ctxviz", "watch", str(LOG), "--once"], capture_output=True, text=True, check=True).stdout
    assert "added nothing" not in out and "no upper bound" not in out
    assert "(range " in out
