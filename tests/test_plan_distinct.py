"""`Plan.distinct` (the table's column widths read it on every re-plan) holds the same values as the
plan's columns, and `Plan.category_totals` the same sums, for plans decided in columns and record by
record alike."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ctxviz.engine.plan import Rows
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy, policy_names
from ctxviz.io.loaders import load_session

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


@pytest.mark.parametrize("name", ["support_chat.yaml", "coding_agent.yaml", "claude_code_compaction.jsonl"])
def test_distinct_values_are_the_columns_values(name: str) -> None:
    session = load_session(str(SAMPLES / name))
    for policy in policy_names():
        decided = plan_session(session, policy, get_policy(policy).default_params())
        # The plan as the policy made it (in columns, for most), and the same plan as records.
        for plan in (decided, dataclasses.replace(decided, messages=tuple(decided.messages))):
            cols = plan.columns
            d = plan.distinct
            assert d.roles == frozenset(cols.role) and d.decisions == frozenset(cols.decision) and d.zones == frozenset(cols.zone)
            assert d.codes == frozenset(zip(cols.code, cols.decision, strict=True))
            # The per-category sums, from the arrays, are the records' sums (in the same order).
            by_records = {}
            for m in plan.messages:
                sent, tokens = by_records.get(m.category, (0, 0))
                by_records[m.category] = (sent + m.sent_tokens, tokens + m.tokens)
            assert list(plan.category_totals.items()) == list(by_records.items())
        assert not isinstance(plan.messages, Rows)
