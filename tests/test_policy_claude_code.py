"""The claude-code policy: Claude Code's auto-compact trigger, its count and what survives a compaction.

Claude Code is closed source; the arithmetic is that of its published TypeScript
(`src/services/compact/autoCompact.ts` getAutoCompactThreshold, read in the mirror
Esonhugh/claude-code @5a9162e3): trigger = window - min(max output, 20,000) - 13,000, and
CLAUDE_AUTOCOMPACT_PCT_OVERRIDE gives min(floor(effective window * pct / 100), that trigger). The
expected numbers below are worked by hand from that formula and from the logs' own lines.
"""

import json
from pathlib import Path

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.claude_code.auto_compact import (
    SUMMARY_CONTINUE,
    SUMMARY_PREFIX,
    AutoCompactSettings,
    threshold,
)
from ctxviz.engine.simulate import simulate
from ctxviz.errors import ParameterError
from ctxviz.io.loaders import load_session

from .loader_checks import run_cli

ROOT = Path(__file__).parents[1]
SAMPLE = ROOT / "sample_sessions" / "claude_code_compaction.jsonl"
AUTO = ROOT / "tests" / "data" / "claude_code" / "spotter-autocompact-excerpt.jsonl"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(("model", "trigger"), [
    ("claude-sonnet-4-5-20250929", 167_000),  # 200,000 - min(64,000, 20,000) - 13,000
    ("claude-opus-4-6", 167_000),  # 200,000 - min(128,000, 20,000) - 13,000
    ("claude-3-5-sonnet-20241022", 178_808),  # 200,000 - min(8,192, 20,000) - 13,000
    ("some-unknown-model", 167_000),  # 200,000 (Claude Code's default window) - 20,000 - 13,000
])
def test_default_trigger_per_model(model, trigger):
    assert threshold(model, AutoCompactSettings()).trigger == trigger


@pytest.mark.parametrize(("pct", "trigger"), [
    (50, 90_000),  # floor(180,000 * 0.50)
    (92.5, 166_500),  # floor(180,000 * 0.925): below 167,000, so it applies
    (95, 167_000),  # floor(180,000 * 0.95) = 171,000 would raise it: the override can only lower the trigger
    (100, 167_000),
    (33.3, 59_939),  # Math.floor(180000 * (33.3 / 100)): 59,939.99999999999 in doubles, in JavaScript as in Python
])
def test_pct_override_only_lowers_the_trigger(pct, trigger):
    t = threshold("claude-sonnet-4-5", AutoCompactSettings(autocompact_pct_override=pct))
    assert t.trigger == trigger
    if pct >= 95:
        assert "can only lower the trigger" in t.how


def test_calibrated_trigger_and_window_override():
    assert threshold("claude-sonnet-4-5", AutoCompactSettings(calibrated_trigger=150_000, autocompact_pct_override=10)).trigger == 150_000
    assert threshold("claude-sonnet-4-5", AutoCompactSettings(context_window=1_000_000)).trigger == 967_000
    assert threshold("claude-sonnet-4-5", AutoCompactSettings(autocompact_buffer=25_000, max_output_tokens_for_summary=20_000)).trigger == 155_000


@pytest.mark.parametrize(("name", "value"), [("autocompact_pct_override", "0"), ("autocompact_pct_override", "150"),
                                             ("calibrated_trigger", "-5"), ("context_window", "0")])
def test_bad_values_are_one_line(name, value):
    with pytest.raises(ParameterError) as info:
        get_policy("claude-code").make_params({name: value})
    assert name in str(info.value) and "\n" not in str(info.value)


def test_plan_counts_the_logs_reported_usage_and_sends_the_recorded_summary_first():
    session = load_session(SAMPLE)
    plan = plan_session(session, "claude-code", store=CountStore())
    # The last main-chain assistant line with usage, read straight from the file.
    last = [r for r in records(SAMPLE) if r.get("type") == "assistant" and not r.get("isSidechain") and r["message"].get("usage")][-1]
    u = last["message"]["usage"]
    reported = u["input_tokens"] + u.get("cache_creation_input_tokens", 0) + u.get("cache_read_input_tokens", 0) + u["output_tokens"]
    anchor = plan.extra["anchor_index"]
    assert anchor == max(m.index for m in session.messages if m.usage is not None) and plan.extra["counted"] == "reported"
    assert plan.totals.used == reported + sum(m.tokens for m in plan.messages[anchor + 1:])
    assert plan.totals.budget == 200_000 and plan.allocation == {"context": 167_000, "autocompact_buffer": 33_000}
    assert not plan.extra["would_compact"] and plan.usage["autocompact_buffer"] == 0
    # Everything before the /compact is replaced by the compact summary, sent first as a user message.
    boundary = session.compactions[0].before_index
    assert all(m.decision is Decision.SUMMARIZED for m in plan.messages[:boundary])
    assert all(m.decision is Decision.KEPT for m in plan.messages[boundary:])
    assert plan.context[0]["role"] == "user" and plan.context[0]["content"].startswith("This session is being continued from a previous conversation")
    assert plan.context_index[0] is None and list(plan.context_index[1:]) == list(range(boundary, len(session.messages)))


def test_a_lower_trigger_shows_the_count_in_the_buffer():
    session = load_session(SAMPLE)
    plan = plan_session(session, "claude-code", {"calibrated_trigger": 30_000}, store=CountStore())
    assert plan.extra["would_compact"] and plan.usage == {"context": 30_000, "autocompact_buffer": plan.totals.used - 30_000}
    assert any("Claude Code auto-compacts before its next request" in n for n in plan.notes)


def test_the_summary_wording_is_claude_codes():
    """The prefix and the closing request are the ones the real auto-compaction recorded (2.1.39)."""
    summary = next(r for r in records(AUTO) if r.get("isCompactSummary"))["message"]["content"]
    assert summary.startswith(SUMMARY_PREFIX) and summary.endswith(SUMMARY_CONTINUE)


def test_replay_compacts_where_the_real_log_auto_compacted():
    """The excerpt: Claude Code auto-compacted right after the tool output #2 (the request before it
    reported 164,831 input tokens). Message by message, the count reaches the trigger at #2 and not
    before; the log's compaction is in force from the request its next call answers, which the
    replay sends compacted, as the bill says (36,081), and nothing compacts again. (Counting the
    first call's unseen 164,100 for that request, the conversation before the file included, put it
    at 168,035 and made the replay compact a second time on top of the log's.)"""
    session = load_session(AUTO)
    assert session.compactions[0].trigger == "auto" and session.compactions[0].before_index == 3
    timeline = simulate(session, "claude-code", store=CountStore())
    fired = [e for t in timeline.turns for e in t.events if e.kind == "compaction"]
    assert [e.turn for e in fired] == [2] and "recorded summary" in fired[0].message and not timeline.summaries
    at = timeline.step_of(2)  # the step whose request ends with #2 (steps are the log's calls)
    assert timeline.turns[at].index == 2 and abs(timeline.turns[at].tokens_sent - 36_081) < 0.01 * 36_081
    per = simulate(session, "claude-code", store=CountStore(), per_message=True)
    before = [t.tokens_sent for t in per.turns if t.index <= 2]
    assert before[-1] >= 167_000 > max(before[:-1])


def test_a_summary_the_replay_writes_is_worded_as_claude_codes():
    """Where the replay compacts by itself (the sample at CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50), its
    summary message opens and closes as Claude Code's does, and replaces every message before it."""
    session = load_session(SAMPLE)
    timeline = simulate(session, "claude-code", {"autocompact_pct_override": 50}, store=CountStore())
    summary = timeline.summaries[0]
    fired = next(e.turn for t in timeline.turns for e in t.events if "auto-compact" in e.message)
    assert summary.covers == tuple(m.id for m in session.messages[: fired + 1] if m.role != "system")
    assert summary.text.startswith(SUMMARY_PREFIX) and summary.text.endswith(SUMMARY_CONTINUE)

def test_replay_of_the_sample_never_auto_compacts_at_the_default_and_does_at_a_lowered_trigger():
    """The sample compacted only by hand (/compact at 107,264): at Claude Code's 167,000 the replay
    never fires; with CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50 (trigger 90,000) it fires at the first
    request whose count reaches 90,000, before a user message or a tool output is answered."""
    session = load_session(SAMPLE)
    store = CountStore()
    assert not [e for t in simulate(session, "claude-code", store=store).turns for e in t.events if e.kind == "compaction" and "auto-compact" in e.message]
    timeline = simulate(session, "claude-code", {"autocompact_pct_override": 50}, store=store)
    fired = [e for t in timeline.turns for e in t.events if "auto-compact" in e.message]
    assert fired, "no auto-compaction at 90,000"
    first = fired[0].turn
    assert session.messages[first].role in ("user", "tool") and timeline.turns[timeline.step_of(first)].tokens_sent >= 90_000
    assert all(t.tokens_sent < 90_000 for t in timeline.turns[: timeline.step_of(first)] if session.messages[t.index].role in ("user", "tool"))
    assert "90,000" in fired[0].message


def test_cli_plan_and_simulate_through_the_policy():
    for argv in (["plan", str(AUTO), "--policy", "claude-code"], ["plan", str(SAMPLE), "--policy", "claude-code", "--json", "--pair-safe"],
                 ["simulate", str(AUTO), "--policy", "claude-code", "--set", "calibrated_trigger=170251"]):
        code, out, err = run_cli(argv)
        assert code == 0 and out, (argv, err)
    code, _, err = run_cli(["plan", str(AUTO), "--policy", "claude-code", "--set", "autocompact_pct_override=0"])
    assert code == 2 and err.count("\n") == 1 and "autocompact_pct_override" in err
