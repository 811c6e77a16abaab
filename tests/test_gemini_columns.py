"""Gemini CLI's compression decided in columns (policies/gemini/compression_columns.py) gives exactly
the plan of ChatCompressionService step by step (`compression.plan_records`, held to Gemini CLI's
code by tests/test_policy_gemini_cli.py), on random sessions and parameters, and again when one
session is re-planned with other parameters (what the columns keep per session and budget).

The function-response budget is lowered so that small sessions truncate outputs too, and the
recorded summary sometimes says how far the outputs it truncated reach (`held_until`)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.gemini import service
from ctxviz.engine.policies.gemini.compression import plan, plan_records

from .columns_equivalence import assert_same_plan
from .test_replay_incremental import SETTINGS, sessions

PARAMS = st.builds(dict, compressionThreshold=st.sampled_from([0.01, 0.05, 0.2, 0.5, 1.0]),
                   tokenLimit=st.one_of(st.none(), st.integers(20, 3000)), truncateToolOutputThreshold=st.sampled_from([0, 5, 30, 40_000]))


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    monkeypatch.setattr(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", 3)


@st.composite
def held_sessions(draw):
    s = draw(sessions())
    if s.summaries and s.messages and draw(st.booleans()):
        last = dataclasses.replace(s.summaries[-1], held_until=draw(st.sampled_from(s.messages)).id)
        s = dataclasses.replace(s, summaries=(*s.summaries[:-1], last))
    return s


@SETTINGS
@given(s=held_sessions(), params=st.lists(PARAMS, min_size=1, max_size=3))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params) -> None:
    pol = get_policy("gemini-cli-compression")
    counts = CountStore().get(s, pol.scheme(None, s.model))
    for p in params:  # one session re-planned: the later plans reuse what the first derived
        p = pol.make_params(p)
        fast, reference = plan(s, p, counts), plan_records(s, p, counts)
        assert_same_plan(fast, reference)
