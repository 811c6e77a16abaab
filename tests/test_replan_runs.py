"""A re-plan that copies nothing per message reads the same as one that does: `plan.Joined` (runs
of tuples handed over as one) is the tuple it stands for, and `checks.find_orphans` finds the
same broken pairs in a plan decided in columns as in the same plan's records."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random

import pytest

from ctxviz.engine.checks import find_orphans
from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Context, Joined
from ctxviz.engine.plan_rows import Rows
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy, policy_names

from .columns_equivalence import file_sessions


def _runs(rng: random.Random) -> tuple[list[tuple[tuple[int, ...], int, int]], tuple[int, ...]]:
    runs, whole = [], ()
    for _ in range(rng.randint(0, 5)):
        items = tuple(rng.randint(0, 9) for _ in range(rng.randint(0, 8)))
        lo = rng.randint(0, len(items))
        hi = rng.randint(0, len(items))  # hi < lo: an empty run
        runs.append((items, lo, hi))
        whole += items[lo:hi]
    return runs, whole


def test_joined_runs_read_as_the_tuple_they_stand_for() -> None:
    rng = random.Random(22)
    for _ in range(500):
        runs, whole = _runs(rng)
        joined = Joined(*runs)
        assert len(joined) == len(whole) and tuple(joined) == whole and list(joined) == list(whole)
        assert joined == whole and whole == joined and not joined != whole and hash(joined) == hash(whole)
        assert joined != (*whole, 0) and joined != list(range(len(whole) + 1)) and joined != "x"
        for k in range(-len(whole), len(whole)):
            assert joined[k] == whole[k]
        for k in (len(whole), -len(whole) - 1):
            with pytest.raises(IndexError):
                joined[k]
        a, b = sorted(rng.randint(-len(whole) - 1, len(whole) + 1) for _ in range(2))
        assert joined[a:b] == whole[a:b] and joined[::-1] == whole[::-1]
        assert (bool(joined), list(reversed(joined))) == (bool(whole), list(reversed(whole)))
        assert pickle.loads(pickle.dumps(joined)) == whole and copy.deepcopy(joined) == whole and copy.copy(joined) == whole


def test_a_context_keeps_joined_runs_uncopied_and_reads_them_as_entries() -> None:
    message = {"role": "user", "content": "hi"}
    joined = Joined(((message,), 0, 1), ((message, message), 1, 2))
    context = Context(joined)
    assert context.entries is joined
    assert list(context) == [message, message] and context == [message, message] and len(context) == 2


#: A policy's total budget, as the framework names it (bench/bench_engine.py's list).
_BUDGETS = ("total", "context_limit", "max_tokens", "max_context_tokens", "token_limit", "context_window", "budget", "tokenLimit",
            "model_context_window", "context_window_limit")


@pytest.mark.parametrize("policy", policy_names())
def test_a_plan_in_columns_has_the_broken_pairs_of_its_records(policy: str) -> None:
    """The columns' fast path against the records' loop, on every sample and real log with tool
    calls, at budgets that cut pairs anywhere (every policy that plans in columns)."""
    pol = get_policy(policy)
    fields = {f.name for f in dataclasses.fields(pol.default_params())}
    budget = next((name for name in _BUDGETS if name in fields), None)
    rng = random.Random(5)
    broken = 0
    for name, session in file_sessions():
        if not session.tool_pairs:
            continue
        store = CountStore()
        total = sum(store.get(session, pol.scheme(None, session.model)).message_tokens)
        for _ in range(3 if budget else 1):
            params = {budget: rng.randint(4_100, max(4_200, total + 5_000))} if budget else {}
            plan = plan_session(session, policy, params, None, store)
            if isinstance(plan.messages, Rows):
                assert find_orphans(session, plan.messages) == find_orphans(session, tuple(plan.messages)), (name, params)
                broken += bool(plan.orphans)
    if policy == "missy":
        assert broken  # the budgets did cut pairs: the fast path found some
