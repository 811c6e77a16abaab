"""Gemini CLI compresses the whole history when findCompressSplitPoint finds no user turn to split at
past the oldest ~70 % and the history ends on a model turn without function calls. Every message
then read "before the split point, in the oldest ~70 % of the history", the newest one included
(a real Gemini CLI session at tokenLimit=8,000). Both plans say the rule that applied."""

from __future__ import annotations

from pathlib import Path

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.gemini import compression
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
WHOLE = "summarized: the whole history is compressed: no user turn to split at past its oldest ~70 % by JSON characters"
SPLIT = "summarized: before the split point, in the oldest ~70% of the history by JSON characters"


def _plans(path: Path, limit: int):  # type: ignore[no-untyped-def]
    session = load_session(path)
    store = CountStore()
    columns = plan_session(session, "gemini-cli-compression", {"tokenLimit": limit}, store=store)
    policy = get_policy("gemini-cli-compression")
    records = compression.plan_records(session, policy.make_params({"tokenLimit": limit}), store.get(session, policy.scheme(None, session.model)))
    return columns, records


def test_a_history_compressed_whole_says_so() -> None:
    for plan in _plans(ROOT / "tests" / "data" / "real" / "gemini_cli" / "ai-sessions_pomodoro.json", 8000):
        summarised = [m for m in plan.messages if m.decision is Decision.SUMMARIZED]
        assert len(summarised) == len(plan.messages) == 30
        assert all(m.reason.startswith(WHOLE) for m in summarised)


def test_a_history_split_keeps_its_reason() -> None:
    for plan in _plans(ROOT / "sample_sessions" / "gemini_cli_session.json", 4000):
        summarised = [m for m in plan.messages if m.decision is Decision.SUMMARIZED]
        assert summarised and len(summarised) < len(plan.messages)
        assert all(m.reason.startswith(SPLIT) for m in summarised)
