"""The bundled sample sessions are what a newcomer opens first: each must load, plan, simulate and render."""

import subprocess
import sys
from pathlib import Path

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import policy_names
from ctxviz.engine.session import ImagePart
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

from .loader_checks import assert_one_step_per_call

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
FILES = sorted(p.name for p in SAMPLES.iterdir() if p.suffix in (".yaml", ".yml", ".json", ".jsonl", ".traj"))
_loaded: dict[str, object] = {}


def sample(name: str):
    if name not in _loaded:
        _loaded[name] = load_session(str(SAMPLES / name))
    return _loaded[name]


def test_the_four_promised_samples_are_there():
    assert {"coding_agent.yaml", "support_chat.yaml", "multimodal_review.yaml", "claude_code_compaction.jsonl"} <= set(FILES)


def test_coding_agent_has_tool_calls_and_large_outputs():
    s = sample("coding_agent.yaml")
    assert len(s.messages) >= 80 and s.tools
    calls = sum(len(m.tool_calls) for m in s.messages)
    results = [m for m in s.messages if m.role == "tool"]
    assert calls >= 20 and len(results) >= 20
    assert max(len(m.text) for m in results) > 8000, "a large tool output"


def test_support_chat_has_memory_learnings_and_earlier_summaries():
    s = sample("support_chat.yaml")
    assert len(s.messages) >= 200
    assert s.memory and len(s.learnings) > 5, "more learnings than missy admits, so the cap shows"
    assert len(s.summaries) >= 2 and all(x.text for x in s.summaries)


def test_multimodal_review_has_several_images():
    s = sample("multimodal_review.yaml")
    images = [p for m in s.messages for p in m.parts if isinstance(p, ImagePart)]
    assert len(images) >= 5
    assert all(p.url.startswith(("data:image/", "http")) for p in images)


def test_claude_code_sample_has_a_compaction_and_its_summary():
    s = sample("claude_code_compaction.jsonl")
    assert s.format == "claude-code"
    assert s.compactions and s.summaries
    assert any(m.usage is not None for m in s.messages)
    # Replayed call by call, the context drops at the first call Claude Code made after compacting
    # (the one its boundary's next message answers), as the real session did.
    boundary = s.compactions[0].before_index
    turns = simulate(s, "mnesis").turns
    after = next(k for k, t in enumerate(turns) if t.index >= boundary or t.reply == boundary)
    assert after > 0 and turns[after].tokens_sent < turns[after - 1].tokens_sent / 10


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("policy", policy_names())
def test_every_sample_plans_with_every_policy(name, policy):
    s = sample(name)
    plan = plan_session(s, policy, store=CountStore())
    assert [m.index for m in plan.messages] == list(range(len(s.messages)))
    assert all(isinstance(m.decision, Decision) and m.reason for m in plan.messages)
    sent = [m for m in plan.messages if m.sent]
    assert plan.totals.kept_messages == len(sent) and plan.totals.kept == sum(m.tokens for m in sent)
    assert plan.totals.used > 0


@pytest.mark.parametrize("name", FILES)
def test_every_sample_simulates(name):
    s = sample(name)
    timeline = simulate(s, "missy")
    assert [t.index for t in timeline.turns] == sorted({t.index for t in timeline.turns})
    assert_one_step_per_call(s, timeline)
    assert [t.index for t in simulate(s, "missy", per_message=True).turns] == list(range(len(s.messages)))  # the old view: one per message
    assert all(t.tokens_sent > 0 and t.kept + t.dropped + t.summarized + t.truncated >= 1 for t in timeline.turns)


@pytest.mark.parametrize("name", FILES)
def test_cli_plans_every_sample(name):
    out = subprocess.run([sys.executable, "-m", "ctxviz", "plan", str(SAMPLES / name)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "tokens" in out.stdout


@pytest.mark.parametrize("name", FILES)
def test_every_sample_renders_in_the_app(qtbot, tmp_path, name):
    pytest.importorskip("PySide6")
    from PySide6.QtCore import QSettings

    from ctxviz.gui.main_window import MainWindow

    window = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.resize(1440, 900)
    window.show()
    with qtbot.waitSignal(window.vm.planReady, timeout=30000):
        window.open_path(str(SAMPLES / name))
    assert window.model.rowCount() == len(sample(name).messages)
    assert window.pie.parts and len(window.strip.item.starts) == window.model.rowCount()
    image = window.grab().toImage()
    assert not image.isNull() and image.width() >= 1000
    window.vm.shutdown()


def test_the_multimodal_preset_the_sample_readme_suggests_replaces_older_images():
    """The sample README said the preset shows "older images replaced"; no message was replaced at its budget."""
    from ctxviz.io.config import load_preset

    readme = (SAMPLES / "README.md").read_text()
    assert "--config resources/presets/categories-later.yaml --set max_tokens=100000" in readme
    preset = load_preset(str(SAMPLES.parent / "resources" / "presets" / "categories-later.yaml"))
    session = load_session(str(SAMPLES / "multimodal_review.yaml"))
    plan = plan_session(session, "categories", {**preset.params, "max_tokens": 100000})
    replaced = [m for m in plan.messages if m.decision is Decision.REPLACED]
    assert len(replaced) == 4 and all(m.sent for m in plan.messages)  # every message still sent
