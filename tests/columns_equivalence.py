"""What the column equivalence tests share: the files a plan in columns is checked on besides
random sessions (every sample session and every real log in tests/data/real), and the check that
a plan in columns is the step-by-step plan, field for field and row for row."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Plan
from ctxviz.engine.plan_rows import Rows
from ctxviz.engine.policies import get_policy
from ctxviz.engine.session import Session
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent


@cache
def file_sessions() -> tuple[tuple[str, Session], ...]:
    """Every sample session and real log, loaded once per test run, by name."""
    paths = sorted((ROOT / "sample_sessions").glob("*.yaml"))
    paths += sorted(p for p in (ROOT / "tests" / "data" / "real").glob("*/*") if p.suffix in (".json", ".jsonl"))
    return tuple((f"{p.parent.name}/{p.name}", load_session(p)) for p in paths)


def assert_same_plan(fast: Plan, reference: Plan, where: object = "") -> None:
    assert isinstance(fast.messages, Rows), where
    assert fast.to_json() == reference.to_json(), where
    assert fast.columns == reference.columns, where
    assert fast.reason_codes == reference.reason_codes, where
    assert list(fast.context) == list(reference.context), where
    assert fast.context_index == reference.context_index and fast.extra == reference.extra, where


def assert_same_on_files(policy: str, plan: Callable[..., Plan], plan_records: Callable[..., Plan], params: Iterable[dict[str, Any]]) -> None:
    """The policy's plan in columns is its step-by-step plan on every sample and real log, with
    each of `params`, counted with the policy's own estimator."""
    pol = get_policy(policy)
    for name, s in file_sessions():
        counts = CountStore().get(s, pol.scheme(None, s.model))
        for p in params:
            made = pol.make_params(p)
            assert_same_plan(plan(s, made, counts), plan_records(s, made, counts), (name, p))


def assert_same_on_session(policy: str, s: Session, params: Iterable[dict[str, Any]], tokenizer: str | None, plan: Callable[..., Plan],
                           plan_records: Callable[..., Plan]) -> None:
    """The policy's plan in columns is its step-by-step plan on `s` with each of `params` in turn,
    all on one counts object: the later ones re-plan the same session on what is kept for it."""
    pol = get_policy(policy)
    counts = CountStore().get(s, pol.scheme(tokenizer, s.model))
    for p in params:
        made = pol.make_params(p)
        assert_same_plan(plan(s, made, counts), plan_records(s, made, counts), p)


def both_plans(session: Session, policy: str, plan_records: Callable[..., Plan], params: dict[str, Any] | None = None) -> tuple[Plan, Plan]:
    """The plan `ctxviz plan` makes (in columns where the policy has them) and the step-by-step
    reference, of one session with the same parameters: a wording test holds both to it."""
    from ctxviz.engine.planner import plan_session

    store = CountStore()
    pol = get_policy(policy)
    plan = plan_session(session, policy, params or {}, store=store)
    return plan, plan_records(session, pol.make_params(params or {}), store.get(session, pol.scheme(None, session.model)))
