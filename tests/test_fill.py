"""One fill figure to quote (issue 24): the provider's last reported fill against one window, the
policy's figures, the real count and the other windows explained beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine.agent_policies import default_policy
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.fill import fill
from ctxviz.engine.planner import plan_session
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
#: A real Codex rollout whose log reports a 258,400-token window (gpt-5.3-codex: Codex plans against
#: 272,000, the catalogue lists 400,000): three windows.
CODEX = ROOT / "tests" / "data" / "real" / "codex" / "localpush-rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"


def plan_of(path: Path):  # type: ignore[no-untyped-def]
    session = load_session(path)
    return session, plan_session(session, default_policy(session.format), options=PlanOptions(real_count=True))


def test_codex_names_one_window_and_explains_the_other_two() -> None:
    session, plan = plan_of(CODEX)
    f = fill(plan, session)
    assert (f.tokens, f.window) == (plan.reported.last_window_fill, session.context_window) == (f.tokens, 258_400)
    head, _, beside = f.sentence().partition(" Beside it: ")
    # The headline names one window; 272,000 and 400,000 are said after it, each as what it is.
    assert "258,400" in head and "272,000" not in head and "400,000" not in head
    assert f"plan sends {plan.totals.used:,} of its 272,000" in beside and "95 %" in beside
    assert "catalogue lists a 400,000-token window" in beside
    assert f"real count is {plan.real.tokens:,}" in beside


@pytest.mark.parametrize("name", ["claude_code_compaction.jsonl", "gemini_cli_session.json"])
def test_a_log_with_usage_quotes_the_providers_last_fill(name: str) -> None:
    session, plan = plan_of(ROOT / "sample_sessions" / name)
    f = fill(plan, session)
    assert f.tokens == plan.reported.last_window_fill and f.window == plan.totals.budget  # the agent's own policy's window
    assert f.sentence().startswith(f"Fill to quote: {f.tokens:,} of {f.window:,} tokens")


def test_without_usage_the_policys_estimate_is_the_figure() -> None:
    session, plan = plan_of(ROOT / "sample_sessions" / "support_chat.yaml")
    f = fill(plan, session)
    assert plan.reported is None and (f.tokens, f.window) == (plan.totals.used, plan.totals.budget)
    assert "missy's estimate (the log records no usage)" in f.sentence() and "128,000-token window for gpt-4o" in f.sentence()


def test_the_real_count_says_it_holds_the_unseen_prompt() -> None:
    """The real count adds what the log does not show (Gemini CLI's sample: 9,200 tokens); the
    sentence said "without the prompt and tools it does not record" of a figure that held them."""
    session, plan = plan_of(ROOT / "sample_sessions" / "gemini_cli_session.json")
    assert plan.real.unseen == 9_200
    beside = fill(plan, session).sentence().partition(" Beside it: ")[2]
    assert f"{plan.real.tokens:,} with o200k_base (the log's text, plus about 9,200 tokens of prompt and tools it does not record)" in beside
    assert "without the prompt" not in beside
