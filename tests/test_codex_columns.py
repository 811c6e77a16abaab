"""Codex's auto-compaction decided in columns (policies/codex/compaction_columns.py) gives exactly the
plan of Codex's compaction step by step (`compaction.plan_records`, held to Codex's code by
tests/test_policy_codex.py), on random sessions and parameters, and again when one session is
re-planned with other parameters (what the columns keep per session).

Some sessions open with injected user messages (the environment, which Codex rebuilds), and some
summaries are Codex's own (SUMMARY_PREFIX), so the user messages a compaction keeps are in force."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.codex.compaction import SUMMARY_PREFIX, plan, plan_records
from ctxviz.engine.session import TextPart

from .columns_equivalence import assert_same_plan
from .test_replay_incremental import SETTINGS, sessions

PARAMS = st.builds(dict, model_context_window=st.one_of(st.none(), st.integers(30, 3000)),
                   model_auto_compact_token_limit=st.one_of(st.none(), st.integers(1, 1500)),
                   compact_user_message_max_tokens=st.sampled_from([0, 3, 20, 200, 20_000]))


@st.composite
def codex_sessions(draw):
    s = draw(sessions())
    messages = tuple(dataclasses.replace(m, parts=(TextPart(f"<environment_context>cwd {m.index}</environment_context>"),))
                     if m.role == "user" and draw(st.integers(0, 4)) == 0 else m for m in s.messages)
    summaries = tuple(dataclasses.replace(x, text=f"{SUMMARY_PREFIX}\n{x.text}") if draw(st.booleans()) else x for x in s.summaries)
    return dataclasses.replace(s, messages=messages, summaries=summaries, model=draw(st.sampled_from(["", "gpt-5-codex", "o3"])))


@SETTINGS
@given(s=codex_sessions(), params=st.lists(PARAMS, min_size=1, max_size=3), tokenizer=st.sampled_from([None, "chars4"]))
def test_the_columns_plan_equals_the_step_by_step_plan(s, params, tokenizer) -> None:
    pol = get_policy("codex-compaction")
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    for p in params:  # one session re-planned: the later plans reuse what the first derived
        p = pol.make_params(p)
        fast, reference = plan(s, p, counts), plan_records(s, p, counts)
        assert_same_plan(fast, reference)
