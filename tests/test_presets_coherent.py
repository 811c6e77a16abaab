"""Every bundled preset's numbers agree with each other and with its own description: no token
trigger above the window it is compared against (a trigger that can never fire), and a preset that
names a window range keeps its window inside it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.supyagent.messages import DEFAULT_CONTEXT_LIMIT
from ctxviz.io.config import load_preset
from ctxviz.resources import resource_path

PRESETS = sorted(resource_path("presets").glob("*.yaml"))


def _supyagent(p: Any) -> list[tuple[str, int, str, int]]:
    # A model get_context_limit does not know (the window a preset gets when it names none) has DEFAULT_CONTEXT_LIMIT.
    window = p.context_limit or DEFAULT_CONTEXT_LIMIT
    return [("max_tokens_before_summary", p.max_tokens_before_summary, "context_limit", window),
            ("response_reserve", p.response_reserve, "context_limit", window)]


def _missy(p: Any) -> list[tuple[str, int, str, int]]:
    return [("system_reserve + tool_definitions_reserve", p.system_reserve + p.tool_definitions_reserve, "total", p.total)]


def _llamaindex(p: Any) -> list[tuple[str, int, str, int]]:
    return [] if p.token_limit is None or p.context_window is None else [("token_limit", p.token_limit, "context_window", p.context_window)]


#: Per policy, (trigger or budget field, its value, the window field, its value) pairs to compare.
WINDOWS: dict[str, Callable[[Any], list[tuple[str, int, str, int]]]] = {
    "supyagent": _supyagent, "missy": _missy, "llamaindex-chat-memory-buffer": _llamaindex,
    "llamaindex-chat-summary-memory-buffer": _llamaindex,
}


@pytest.mark.parametrize("path", PRESETS, ids=[p.stem for p in PRESETS])
def test_no_token_trigger_exceeds_its_window(path):
    preset = load_preset(path)
    params = get_policy(preset.policy).make_params(preset.params)
    for name, value, window_name, window in WINDOWS.get(preset.policy, lambda p: [])(params):
        assert value <= window, f"{path.name}: {name} {value:,} > {window_name} {window:,}"


def test_the_supyagent_presets_are_checked():
    assert {load_preset(p).policy for p in PRESETS if p.stem.startswith("supyagent")} == {"supyagent"}


def _k(text: str) -> int:
    return int(text) * 1000


@pytest.mark.parametrize("path", [p for p in PRESETS if re.search(r"\d+K", load_preset(p).description or "")],
                         ids=lambda p: p.stem)
def test_a_window_the_description_names_is_the_presets_window(path):
    preset = load_preset(path)
    params = get_policy(preset.policy).make_params(preset.params)
    window = params.context_limit or DEFAULT_CONTEXT_LIMIT
    ranged = re.search(r"(\d+)K-(\d+)K", preset.description)
    if ranged:
        assert _k(ranged[1]) <= window <= _k(ranged[2]) * 1.024 + 1
    else:
        least = re.search(r"(\d+)K\+", preset.description)
        assert least and window >= _k(least[1])
