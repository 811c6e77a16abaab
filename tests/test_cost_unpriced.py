"""`--cost` for a model the catalogue does not know: no priced rows, and how to price it.

`simulate --cost` on such a log said ctxviz "neither prices its requests" and then listed "the 10
most expensive requests", each at 0.0000; its --json gave every turn "cost_usd": 0.0 as if priced.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main

TRAJ = Path(__file__).resolve().parent / "data" / "real" / "swe_agent" / "pydicom__pydicom-1458.traj"
HINT = "name a model of the catalogue (resources/models.yaml) with --cost-model NAME"


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out


def test_simulate_cost_of_an_unknown_model_lists_no_priced_requests(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "simulate", TRAJ, "--cost")
    assert code == 0
    block = out[out.index("prompt caching ("):].splitlines()
    assert "neither prices its requests" in block[0]
    assert block[1:] == [f"  124,373 input tokens over 12 requests (every step of the replay), not priced; to price them, {HINT}"]
    assert "most expensive" not in out and "0.0000" not in out and "cost $" not in out


def test_simulate_cost_json_of_an_unknown_model_has_null_costs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "simulate", TRAJ, "--cost", "--json")
    assert code == 0
    cache = json.loads(out)["cache"]
    assert cache["known"] is False and cache["cost_usd"] is None and cache["cache_read"] is None
    assert len(cache["turns"]) == 12 and cache["input_tokens"] == sum(t["request"] for t in cache["turns"]) == 124_373
    for turn in cache["turns"]:
        assert turn["cost_usd"] is None and turn["cost_usd_range"] is None and turn["cache_read"] is None, turn


def test_simulate_cost_model_prices_the_same_log(capsys: pytest.CaptureFixture[str]) -> None:
    """Priced with a catalogue model, the table and its figures are there (and the hint is not)."""
    code, out = run(capsys, "simulate", TRAJ, "--cost-model", "gpt-4o")
    assert code == 0
    assert "(the 10 most expensive requests;" in out and HINT not in out
    rows = [line for line in out[out.index("prompt caching ("):].splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == 10 and all(float(r.split()[6]) > 0 for r in rows)
    code, out = run(capsys, "simulate", TRAJ, "--cost-model", "gpt-4o", "--json")
    assert all(t["cost_usd"] > 0 for t in json.loads(out)["cache"]["turns"])


def test_compare_cost_of_an_unknown_model_says_how_to_price_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "compare", TRAJ, "--policy", "missy", "--policy", "langchain-trim", "--cost")
    assert code == 0
    assert out.count(HINT) == 2
    code, out = run(capsys, "compare", TRAJ, "--policy", "missy", "--policy", "langchain-trim", "--cost", "--json")
    doc = json.loads(out)
    assert all(t["cost_usd"] is None for side in "ab" for t in doc[side]["cache"]["turns"])


def test_a_known_model_without_prices_gives_null_costs_and_keeps_its_cache_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """A catalogue entry with no input price ("no prices for ... in the catalogue") is unpriced too:
    no table, null costs; what it would cache is still known, so those figures stay."""
    from ctxviz.cli.cost import cache_json, print_cache
    from ctxviz.engine.caching import cache_costs
    from ctxviz.engine.catalog import ModelEntry
    from ctxviz.engine.simulate import simulate
    from ctxviz.io.loaders import load_session

    report = cache_costs(simulate(load_session(str(TRAJ)), "missy"), ModelEntry("house-model", "house", 128_000))
    assert report.known
    doc = cache_json(report)
    assert doc["cost_usd"] is None and doc["cost_without_cache_usd"] is None and doc["cache_read"] == 0
    assert all(t["cost_usd"] is None and t["cost_usd_range"] is None and t["cache_read"] == 0 for t in doc["turns"])
    print_cache(report)
    out = capsys.readouterr().out
    assert "most expensive" not in out and out.splitlines()[-1].endswith(HINT)
