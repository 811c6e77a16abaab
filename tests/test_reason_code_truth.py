"""The compacting agents' reason codes say what happened: "since compaction" only on a message
written after a compaction in force, "under trigger" only where nothing compacted and the count the
trigger compares is under its level. A log that never compacted used to be all "since compaction"
(Claude Code, Codex and Gemini CLI alike), a word the app's reason column and `reason:` filter
showed on every row of most real sessions.

Checked on every bundled sample and every real Claude Code, Codex and Gemini CLI log in the tests'
data (written by those agents; sources in tests/data/real/*/SOURCES.md), at the policy's defaults
and with a trigger low enough to fire, for the whole file and for the prefixes a replay plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision, Plan
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.session import Session
from ctxviz.engine.simulate import simulate
from ctxviz.engine.vocabulary import trigger_count, trigger_level
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "real"
STORE = CountStore()

#: Each compacting agent's policy, its logs, and a setting that makes it fire on them.
AGENTS = {
    "claude-code": ("claude_code", {"calibrated_trigger": 3000}),
    "codex-compaction": ("codex", {"model_auto_compact_token_limit": 3000}),
    "gemini-cli-compression": ("gemini_cli", {"tokenLimit": 24000}),
}
SAMPLES = sorted(p for p in (ROOT / "sample_sessions").iterdir() if p.suffix in (".yaml", ".json", ".jsonl", ".traj"))


def logs(folder: str) -> list[Path]:
    return sorted(p for p in (REAL / folder).iterdir() if p.suffix in (".json", ".jsonl"))


CASES = [(policy, path) for policy, (folder, _) in AGENTS.items() for path in [*logs(folder), *SAMPLES]]


def check(plan: Plan, session: Session, policy: str) -> None:
    pol = get_policy(policy)
    codes = {m.code for m in plan.messages}
    compacted_before = bool(session.summaries)
    fired = any(m.code == "summarised" for m in plan.messages)
    if "since_compaction" in codes:
        assert compacted_before, f"{policy}: 'since compaction' in a session that never compacted"
        covered = set(session.summaries[-1].covers)
        for m in plan.messages:
            if m.code == "since_compaction":
                assert m.id not in covered and m.decision is Decision.KEPT
    if "under_trigger" in codes:
        assert not compacted_before and not fired, f"{policy}: 'under trigger' where a compaction is in force"
        level = trigger_level(pol, pol.make_params(plan.params), session)
        assert level is not None, f"{policy}: 'under trigger' without a trigger"
        assert trigger_count(pol, plan) < level, f"{policy}: 'under trigger' at {trigger_count(pol, plan):,} of a trigger of {level:,}"
        assert all("since the last compaction" not in m.reason for m in plan.messages if m.code == "under_trigger")
    for m in plan.messages:
        if m.decision is Decision.KEPT and m.code == "kept":  # the generic word: neither of the above holds
            assert not compacted_before or m.id in set(session.summaries[-1].covers) or policy != "claude-code"


@pytest.mark.parametrize(("policy", "path"), CASES, ids=[f"{p}-{f.name[:40]}" for p, f in CASES])
def test_whole_file_codes_say_whether_anything_compacted(policy: str, path: Path) -> None:
    session = load_session(path)
    for overrides in ({}, AGENTS[policy][1]):
        check(plan_session(session, policy, overrides, store=STORE), session, policy)


@pytest.mark.parametrize("policy", list(AGENTS))
def test_a_replay_says_since_compaction_only_after_one_fired(policy: str) -> None:
    """Before the first compaction a replay's plans say "under trigger"; after it, "since compaction"."""
    low = AGENTS[policy][1]
    session = load_session(ROOT / "sample_sessions" / {"claude-code": "claude_code_compaction.jsonl", "codex-compaction": "codex_rollout.jsonl",
                                                       "gemini-cli-compression": "gemini_cli_session.json"}[policy])
    timeline = simulate(session, policy, low, store=STORE)
    seen: set[str] = set()
    for step in range(0, len(timeline.turns), max(1, len(timeline.turns) // 12)):
        plan = timeline.plan_at(step)
        seen |= {m.code for m in plan.messages}
        check(plan, timeline.session_at(step), policy)
    assert {"under_trigger", "since_compaction"} <= seen, seen


def test_a_log_that_never_compacted_is_under_the_trigger_in_every_agent() -> None:
    """The Gemini CLI sample and a real Codex rollout without a compaction: every history row
    "under trigger", with a sentence that does not speak of a last compaction."""
    gemini = plan_session(load_session(ROOT / "sample_sessions" / "gemini_cli_session.json"), "gemini-cli-compression", {}, store=STORE)
    assert {m.code for m in gemini.messages} == {"under_trigger"}
    assert gemini.messages[3].reason == "kept: Gemini CLI sends the whole history until compression fires"
    never = next(p for p in logs("codex") if not load_session(p).summaries)
    codex = plan_session(load_session(never), "codex-compaction", {}, store=STORE)
    assert "under_trigger" in {m.code for m in codex.messages} and "since_compaction" not in {m.code for m in codex.messages}
    claude = next(p for p in logs("claude_code") if not load_session(p).summaries)
    plan = plan_session(load_session(claude), "claude-code", {}, store=STORE)
    assert {m.code for m in plan.messages} == {"under_trigger"}
    assert plan.messages[0].reason == "kept: Claude Code sends the whole conversation until it auto-compacts"


def test_over_the_trigger_without_a_compaction_is_neither() -> None:
    """Claude Code's plan of a log whose count is at its trigger: the request the log records still
    sends every message, which is not "under trigger" (the next request compacts)."""
    session = next(load_session(p) for p in logs("claude_code") if not load_session(p).summaries)
    plan = plan_session(session, "claude-code", {"calibrated_trigger": 1}, store=STORE)
    assert plan.extra["would_compact"]
    assert {m.code for m in plan.messages} == {"kept"}
    assert "compacts before its next request" in plan.messages[0].reason
