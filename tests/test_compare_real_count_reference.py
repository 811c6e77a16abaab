"""`compare --real-count` judges each side by the count `plan --real-count` takes as the reference:
the provider's reported usage plus what follows, where the log has it. It showed the o200k count
(72,169 for a Claude request the provider had counted at 81,960 for less), as plan no longer does.
Real log: tests/data/real/claude_code/spotter-4d5611e5.jsonl (SOURCES.md there)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

LOG = str(Path(__file__).parent / "data" / "real" / "claude_code" / "spotter-4d5611e5.jsonl")


def _run(*argv: str) -> str:
    return subprocess.run([sys.executable, "-m", "ctxviz", *argv], capture_output=True, text=True, check=True).stdout


def test_compare_rows_use_the_reference() -> None:
    plan = json.loads(_run("plan", LOG, "--real-count", "--json"))["real_count"]
    assert plan["from_reported_usage"] is not None
    reference = plan["from_reported_usage"]["tokens"]
    assert reference != plan["tokens"]  # the encoding's count differs: the row must say the provider-based one
    out = _run("compare", LOG, "--policy", "claude-code", "--policy", "missy", "--real-count")
    row = next(line for line in out.splitlines() if line.startswith("real count "))
    assert row.split()[2] == f"{reference:,}"
    margin = next(line for line in out.splitlines() if line.startswith("real margin"))
    assert margin.split()[2] == f"{plan['window'] - reference:,}"
    assert "(A: from the provider's reported usage" in out
