"""Issue 20's accuracy goal on real logs the cache model has never seen (tests/data/heldout).

The hit rates ctxviz prices with (resources/cache_hits.yaml) were measured on tests/data/real, so
tests/test_verify.py can only leave one file out at a time. The logs here come from other
repositories and were never measured: every figure below is a prediction made before seeing them.
Their sources and licences are in each folder's SOURCES.md.

What these logs show is recorded as it is; nothing was tuned to them. The Codex pooled cost ratio
missed the ±15 % goal when first measured (1.21); the cause was general (how requests no reported
usage covers are sized) and its fix is checked on tests/data/real too (tests/test_verify.py).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from ctxviz.engine.caching import cache_costs, real_calls
from ctxviz.engine.simulate import simulate
from ctxviz.engine.verify import Verification, verify
from ctxviz.io.loaders import load_session
from ctxviz.resources import resource_path

from .loader_checks import run_cli

HELDOUT = Path(__file__).parent / "data" / "heldout"
FORMATS = {"claude_code": "claude-code", "codex": "codex"}
LOGS = sorted(p for folder in FORMATS for p in (HELDOUT / folder).glob("*.jsonl"))


def test_the_held_out_set_is_there_and_was_never_measured() -> None:
    by_folder = {folder: [p for p in LOGS if p.parent.name == folder] for folder in FORMATS}
    assert len(by_folder["claude_code"]) >= 7 and len(by_folder["codex"]) >= 2
    measured = resource_path("cache_hits.yaml").read_text(encoding="utf-8")
    for path in LOGS:
        assert path.name not in measured, f"{path.name} is in the measured hit rates: it is no longer held out"
    sources = {folder: (HELDOUT / folder / "SOURCES.md").read_text(encoding="utf-8") for folder in FORMATS}
    for path in LOGS:
        assert f"`{path.name}`" in sources[path.parent.name], f"{path.name} has no line in its SOURCES.md"


@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_held_out_log_loads_and_is_priced_at_its_real_calls(path: Path) -> None:
    """Each file loads as its agent's log, and the replay prices exactly one request per call the log
    records: the request before each call, none for the messages in between."""
    session = load_session(str(path))
    assert session.format == FORMATS[path.parent.name]
    calls = real_calls(session)
    assert calls, "a held-out log must record the provider's usage"
    report = cache_costs(simulate(session, {"claude-code": "claude-code", "codex": "codex-compaction"}[session.format]))
    assert len(report.turns) == len(calls)
    assert [t.turn for t in report.turns] == [m.index - 1 for m in calls]
    v = verify(session)
    assert v.known, f"{session.model} is not in the model catalogue"
    assert [c.call for c in v.calls] == [m.index for m in calls]
    assert all(c.reported_request == m.usage.window_fill for c, m in zip(v.calls, calls, strict=True))
    code, out, err = run_cli(["verify", str(path), "--json"])
    assert code == 0 and err == ""
    assert json.loads(out)["summary"]["calls"] == len(calls)


def pooled(folder: str) -> tuple[float, float, int, list[Verification]]:
    """(predicted over billed input cost, pooled over the folder's calls; median per-call hit-share
    error in points; calls; the verifications)."""
    checks = [verify(load_session(str(p))) for p in LOGS if p.parent.name == folder]
    predicted = sum(c.predicted.cost for v in checks for c in v.calls)
    billed = sum(c.billed or 0.0 for v in checks for c in v.calls)
    errors = [c.hit_error_points for v in checks for c in v.calls]
    return predicted / billed, statistics.median(errors), len(errors), checks


def test_claude_code_held_out_cost_within_15_percent_and_hit_share_within_10_points() -> None:
    """Measured on first run (before any change): pooled ratio 1.01 over 34 calls in 7 files, median
    hit-share error 1.0 point. The files' first calls carry the misses: what the user's other sessions
    had cached of the unseen system prompt is unknowable (reported 34-95 %, priced at the 69 %
    measured on tests/data/real)."""
    ratio, median_error, calls, _ = pooled("claude_code")
    assert calls >= 30
    assert 0.85 <= ratio <= 1.15, ratio
    assert median_error <= 10, median_error


def test_codex_held_out_hit_share_within_10_points() -> None:
    _, median_error, calls, _ = pooled("codex")
    assert calls >= 15
    assert median_error <= 10, median_error


def test_codex_held_out_cost_within_15_percent() -> None:
    """Missed at first (pooled 1.21, $0.1137 predicted against $0.0937 billed over 18 calls), and not
    tuned to these files since: the requests no reported usage covered were priced at the
    codex-compaction policy's own size estimate (JSON bytes / 4, what Codex compacts on), which
    counts a 63 KB base64 screenshot as about 15,000 tokens, so the request before the images
    rollout's first call was 25,400 where the provider counted 10,144. They are now priced at the
    provider's count (o200k_base and OpenAI's tile rule, engine.provider_count): 10,165 there, and
    the pool is 1.10 ($0.1031 against $0.0936). What is left is what cannot be known from a log:
    the user's other sessions had cached 66-73 % of the first requests where the 24 % measured on
    tests/data/real is priced, and best-effort misses (36 % served at #18)."""
    ratio, _, _, checks = pooled("codex")
    assert 0.85 <= ratio <= 1.15, ratio
    first = next(v for v in checks if v.session.source.endswith("agentlogs-images.jsonl")).calls[0]
    assert abs(first.predicted.request - first.reported_request) <= 0.02 * first.reported_request  # was 25,400 against 10,144
