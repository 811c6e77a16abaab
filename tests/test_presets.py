"""Every bundled preset loads into its policy's parameters and plans a session."""

from pathlib import Path

import pytest

from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.io.config import load_preset
from ctxviz.io.loaders import load_session
from ctxviz.resources import resource_path

PRESETS = sorted(resource_path("presets").glob("*.yaml"))
NATIVE = Path(__file__).parent / "data" / "native_small.yaml"


def test_there_are_presets_for_the_seed_scenarios():
    names = {p.stem for p in PRESETS}
    assert {"missy-default", "missy-premium", "supyagent-short-conversations", "supyagent-long-coding-sessions",
            "supyagent-large-tool-outputs", "supyagent-small-context-models", "supyagent-large-context-models"} <= names


@pytest.mark.parametrize("path", PRESETS, ids=[p.stem for p in PRESETS])
def test_preset_applies(path):
    preset = load_preset(path)
    policy = get_policy(preset.policy)
    params = policy.make_params(preset.params)
    for key, value in preset.params.items():
        assert getattr(params, key) == value
    plan = plan_session(load_session(NATIVE), preset.policy, params)
    key = next(iter(preset.params))
    assert plan.params[key] == getattr(params, key) == preset.params[key]


def test_default_presets_equal_the_dataclass_defaults():
    for name in ("missy", "supyagent"):
        preset = load_preset(resource_path("presets", f"{name}-default.yaml"))
        policy = get_policy(name)
        assert policy.make_params(preset.params) == policy.default_params()
