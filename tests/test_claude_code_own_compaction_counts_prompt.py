"""After a compaction of the replay's own, Claude Code's requests still open with the system prompt
and tools. The replay left them out (it added them only after a compaction the log recorded), so
on a real log at a 60,000-token window the steps after ctxviz's compaction read 1,371 tokens where
the provider had counted 29,361 for the same request's prefix, and the next compaction came five
steps late. Real log: tests/data/real/claude_code/spotter-4d5611e5.jsonl (SOURCES.md there)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ctxviz.engine.planner import plan_session
from ctxviz.engine.reported import reported_usage
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

LOG = Path(__file__).parent / "data" / "real" / "claude_code" / "spotter-4d5611e5.jsonl"
PARAMS = {"context_window": 60000}


def test_steps_after_its_own_compaction_count_the_unseen_prompt() -> None:
    session = load_session(LOG)
    unseen = reported_usage(session).unseen
    assert unseen > 20000  # the first call's report: about 26,400 the log does not show
    timeline = simulate(session, "claude-code", PARAMS)
    first = next(k for k, t in enumerate(timeline.turns) if any(e.kind == "compaction" for e in t.events))
    after = timeline.turns[first + 1:]
    assert after
    assert all(t.tokens_sent >= unseen for t in after)
    # 26,400 of prompt under a 27,000 trigger: Claude Code compacts again at the next request that
    # adds anything, as the replay now does (it waited five steps)
    assert any(e.kind == "compaction" for e in after[0].events)


def test_the_reference_plan_says_what_it_adds() -> None:
    session = load_session(LOG)
    timeline = simulate(session, "claude-code", PARAMS)
    summary = timeline.summaries[0]
    k = timeline.turns[-1].index + 1
    prefix = dataclasses.replace(session, messages=session.messages[:k], summaries=(summary,))
    plan = plan_session(prefix, "claude-code", PARAMS)
    count = next(n for n in plan.notes if n.startswith("count: "))
    assert "the summary in force is ctxviz's" in count and "tokens of system prompt and tools the log does not show" in count
