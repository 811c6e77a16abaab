"""The ContextWindowManager's category budgets in columns (policies/penguin/context_window_columns.py)
give exactly the plan of its steps one message at a time (`context_window.plan_records`, which
tests/test_categories.py and the golden cases check against Penguin's code): on random sessions
and parameters (images, recorded summaries, both trim orders), on every sample and real log, and
on re-plans of one session that reuse what is kept for it."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.penguin.context_window import plan, plan_records
from ctxviz.engine.session import ImagePart, TextPart

from .columns_equivalence import assert_same_on_files, assert_same_plan
from .test_replay_incremental import SETTINGS, SMALL, sessions

PARAMS = st.builds(lambda p, images: {**p, "max_context_images": images}, SMALL["categories"], st.sampled_from([None, None, 0, 1, 3]))
FILE_PARAMS = ({}, {"max_tokens": 2000}, {"max_tokens": 500, "trim_other_categories": True, "max_context_images": 0},
               {"max_tokens": 100_000, "dialog_fraction": 0.01}, {"max_tokens": 30_000, "max_context_images": 1})


@st.composite
def with_images(draw):
    """A random session where some messages carry images, some with equal timestamps (the
    manager sorts by timestamp, stably)."""
    s = draw(sessions())
    messages = []
    for m in s.messages:
        if m.role in ("user", "assistant") and draw(st.integers(0, 4)) == 0:
            m = dataclasses.replace(m, parts=(*m.parts, *[ImagePart("data:image/png;base64,aGk=", "image/png")] * draw(st.integers(1, 2)), TextPart("see")))
        messages.append(dataclasses.replace(m, timestamp=draw(st.sampled_from(["", "2026-01-01T00:00:01Z", "2026-01-01T00:00:00Z"]))))
    return dataclasses.replace(s, messages=tuple(messages))


@SETTINGS
@given(s=with_images(), params=st.lists(PARAMS, min_size=1, max_size=2), tokenizer=st.sampled_from([None, "o200k_base"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer) -> None:
    pol = get_policy("categories")
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    for p in params:  # the second re-plans the same session on what is kept for it
        made = pol.make_params(p)
        assert_same_plan(plan(s, made, counts), plan_records(s, made, counts), p)


@settings(SETTINGS, max_examples=1)
@given(st.just(None))
def test_every_sample_and_real_log(_) -> None:
    assert_same_on_files("categories", plan, plan_records, FILE_PARAMS)
