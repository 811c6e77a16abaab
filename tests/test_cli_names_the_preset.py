"""compare, export and report name the --config preset they applied, as plan and simulate do: a
user who exports or reports with a preset could not tell from the output which one set the values."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ctxviz.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_sessions" / "coding_agent.yaml")
PRESET = str(ROOT / "resources" / "presets" / "missy-default.yaml")
DESCRIPTION = "missy's built-in TokenBudget defaults (seed page 000)"


@pytest.fixture
def hostile_preset(tmp_path: Path) -> str:
    """A preset whose description is markup: the outputs must say it, never render it."""
    path = tmp_path / "team.yaml"
    path.write_text('description: "<script>alert(1)</script> *team* [link](x)"\npolicy: missy\nparams:\n  fresh_tail_count: 8\n')
    return str(path)


def test_compare_text_names_the_preset_for_both_sides(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", SAMPLE, "--config", PRESET, "--set-b", "fresh_tail_count=4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["A: missy", "B: missy fresh_tail_count=4", f"  A and B from preset {PRESET}: {DESCRIPTION}"]


def test_compare_json_names_the_preset(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", SAMPLE, "--config", PRESET, "--set-b", "fresh_tail_count=4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["preset"] == {"path": PRESET, "description": DESCRIPTION}
    assert main(["compare", SAMPLE, "--set-b", "fresh_tail_count=4", "--json"]) == 0
    assert "preset" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("fmt", ["openai", "markdown"])
def test_export_story_line_names_the_preset(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"x.{fmt}"
    assert main(["export", SAMPLE, "--config", PRESET, "--to", fmt, "-o", str(out)]) == 0
    assert f"({fmt}, parameters from preset {PRESET}): the plan sends" in capsys.readouterr().err
    assert main(["export", SAMPLE, "--to", fmt, "-o", str(out)]) == 0
    assert "preset" not in capsys.readouterr().err


def test_markdown_export_heading_names_the_preset_escaped(hostile_preset: str, tmp_path: Path) -> None:
    out = tmp_path / "x.md"
    assert main(["export", SAMPLE, "--config", hostile_preset, "--to", "markdown", "-o", str(out)]) == 0
    head = out.read_text().splitlines()[:6]
    assert (f"Parameters from the preset `{hostile_preset}`: \\<script\\>alert(1)\\</script\\> \\*team\\* \\[link\\](x)." in head)
    assert main(["export", SAMPLE, "--to", "markdown", "-o", str(out)]) == 0
    assert "preset" not in out.read_text().split("```")[0]


def test_openai_request_is_unchanged_by_a_preset(tmp_path: Path) -> None:
    """A request has no field for it: the provider refuses one it does not know."""
    with_preset, without = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["export", SAMPLE, "--config", PRESET, "--to", "openai", "-o", str(with_preset)]) == 0
    assert main(["export", SAMPLE, "--to", "openai", "-o", str(without)]) == 0
    assert with_preset.read_text() == without.read_text()


def test_html_report_names_the_preset_escaped(hostile_preset: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    out = tmp_path / "r.html"
    assert main(["report", SAMPLE, "--config", hostile_preset, "--no-timeline", "-o", str(out)]) == 0
    assert f"(parameters from preset {hostile_preset})" in capsys.readouterr().err
    page = out.read_text()
    assert f"parameters from the preset {hostile_preset}: &lt;script&gt;alert(1)&lt;/script&gt; *team* [link](x)" in page
    assert "<script>alert(1)" not in page
    # in the header, beside the policy, said once
    header = page.split("<h1>", 1)[1].split("<h2>", 1)[0]
    assert "parameters from the preset" in header and page.count("parameters from the preset") == 1
