"""The next-compaction forecast (engine/forecast.py) on real Claude Code logs with recorded automatic
compactions: fed the log as it stood N calls before the compaction (the file cut there, as a live
agent leaves it), the forecast's range holds N; what a compaction would drop and what the recorded
one dropped are checked against independent readings of the plans."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ctxviz.engine.anchors import anchors_of
from ctxviz.engine.forecast import Growth, calls_left, forecast, recorded_calls_before
from ctxviz.engine.planner import plan_session
from ctxviz.engine.retention import present, view_of
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"
#: Real logs whose last lines are Claude Code's automatic compaction (compact_boundary trigger auto).
AUTOCOMPACT = [ROOT / "tests" / "data" / "claude_code" / "spotter-258c7280-autocompact.jsonl",
               ROOT / "tests" / "data" / "claude_code" / "spotter-8463c716-autocompact.jsonl"]


def _call_ids(path: Path) -> tuple[list[str], int]:
    """The Anthropic message ids of the calls the loaded log records before its last compaction, and that compaction's place."""
    session = load_session(path)
    boundary = session.compactions[-1].before_index
    ids = []
    for m in session.messages:
        if m.role == "assistant" and m.usage is not None and m.usage.window_fill > 0 and m.index < boundary:
            raw = m.raw[0] if isinstance(m.raw, list) else m.raw
            ids.append(raw["message"]["id"])
    return ids, recorded_calls_before(session, boundary)


def _cut_before_call(path: Path, tmp_path: Path, message_id: str) -> Path:
    """The file as it stood just before the first line of the call that answered with `message_id`."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for k, line in enumerate(lines):
        record = json.loads(line)
        if record.get("type") == "assistant" and record.get("message", {}).get("id") == message_id:
            out = tmp_path / f"{path.stem}-before-{message_id[-8:]}.jsonl"
            out.write_text("".join(lines[:k]), encoding="utf-8")
            return out
    raise AssertionError(f"{message_id} not in {path}")


@pytest.mark.parametrize("path", AUTOCOMPACT, ids=lambda p: p.stem)
@pytest.mark.parametrize("calls_before", [1, 2, 3, 4, 5])
def test_the_range_holds_the_recorded_compaction(path: Path, calls_before: int, tmp_path: Path) -> None:
    ids, total = _call_ids(path)
    cut = _cut_before_call(path, tmp_path, ids[total - calls_before])
    session = load_session(cut)
    assert not session.compactions  # the log as it stood: the compaction has not happened yet
    # The truth, counted from the files: calls the full log made before the compaction, less those already made.
    remaining = total - sum(1 for m in session.messages if m.role == "assistant" and m.usage is not None and m.usage.window_fill > 0)
    assert remaining == calls_before
    when = forecast(session).when
    assert when is not None and when.calls is not None
    assert when.contains(remaining), f"{when.sentence()} but the log compacted after {remaining} call(s)"
    assert when.trigger == 167_000  # nothing recorded yet to calibrate from: Claude Code's default for a 200k window


@pytest.mark.parametrize("path", AUTOCOMPACT, ids=lambda p: p.stem)
def test_at_the_compaction_it_says_before_the_next_request(path: Path, tmp_path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    boundary = next(k for k, line in enumerate(lines) if '"compact_boundary"' in line)
    cut = tmp_path / "at-boundary.jsonl"
    cut.write_text("".join(lines[:boundary]), encoding="utf-8")
    when = forecast(load_session(cut)).when
    assert when is not None and when.calls == 0 and when.level >= when.trigger


def test_the_sample_autocompact_compacts_before_the_next_request(tmp_path: Path) -> None:
    path = ROOT / "sample_sessions" / "claude_code_autocompact.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    boundary = next(k for k, line in enumerate(lines) if '"compact_boundary"' in line)
    cut = tmp_path / "sample-at-boundary.jsonl"
    cut.write_text("".join(lines[:boundary]), encoding="utf-8")
    when = forecast(load_session(cut)).when
    assert when is not None and when.calls == 0


@pytest.mark.parametrize("path", AUTOCOMPACT, ids=lambda p: p.stem)
def test_the_forecast_states_its_error_on_the_logs_past_compactions(path: Path) -> None:
    session = load_session(path)
    f = forecast(session)
    assert len(f.backtests) == 1
    test = f.backtests[0]
    assert test.before_index == session.compactions[-1].before_index
    assert test.calls_before == recorded_calls_before(session, test.before_index)
    assert [n for n, *_ in test.points] == [1, 2, 3, 4, 5]
    assert f.error_calls == pytest.approx(sum(abs(p - n) for n, p, _, _ in test.points) / 5)
    assert "recorded automatic compaction" in f.error_sentence()
    # After the compaction the trigger is calibrated from it: its preTokens (as `ctxviz calibrate` fits it).
    assert f.when is not None and f.when.trigger == session.compactions[-1].pre_tokens


def test_calls_left_method() -> None:
    g = Growth((1, 2, 3, 4), (100, 200, 400, 450), (100, 200, 50))
    when = calls_left(1000, 1500, g)
    assert (when.calls, when.low, when.high) == (5, 3, 10)  # 500 tokens of room at 100 (median), 200 (largest) and 50 (smallest) a call
    assert calls_left(1500, 1500, g).calls == 0
    flat = calls_left(1000, 1500, Growth((1, 2), (100, 100), (0,)))
    assert flat.calls is None and not flat.contains(3)
    # Why it is unknown, in words that hold: the calls added nothing, or too few, since a compaction or in the log.
    assert "the last 1 call with usage added nothing" in flat.sentence()
    assert Growth((1,), (100,), ()).unknown == "too few calls with usage in the log to measure growth"
    assert Growth((1,), (100,), (), since_compaction=True).unknown == "too few calls with usage since the last compaction to measure growth"
    unbounded = calls_left(1000, 1500, Growth((1, 2, 3), (100, 100, 300), (0, 200)))
    assert unbounded.high is None and unbounded.contains(1_000)


def test_what_it_would_drop_is_what_the_plan_sends_now_and_no_longer_after() -> None:
    session = load_session(REAL / "gemini_cli" / "aim_matrix_pro.migrated.jsonl")
    f = forecast(session, with_backtest=False)
    drop = f.next_drop
    assert drop is not None and drop.summary.startswith("ctxviz's")  # measured against the stand-in, and says so
    index = anchors_of(session)
    now = present(index, view_of(plan_session(session, f.policy)))
    assert drop.anchors and all(a.id in now for a in drop.anchors)
    # Ranked as losses are ranked: what the user asked first; the user's own instruction is among them.
    tiers = [drop.ranks[a.id].tier for a in drop.anchors]
    assert tiers == sorted(tiers)
    assert any(a.kind == "instruction" and "Do not stop until the objective is complete" in a.value for a in drop.user_losses)


def test_what_the_recorded_compaction_dropped_uses_its_summary() -> None:
    session = load_session(AUTOCOMPACT[0])
    f = forecast(session, with_backtest=False)
    last = f.last_compaction
    assert last is not None and last.summary == "recorded"
    boundary = session.compactions[-1].before_index
    before = plan_session(session, "claude-code")  # everything before the boundary is summarised now
    assert last.messages == sum(1 for m in before.messages if m.index < boundary)
    # Each fact it lists is absent from the recorded summary's text and from every message still sent.
    summary = session.summaries[-1].text
    for a in last.anchors:
        assert a.value not in summary
        assert a.first_index < boundary


def test_what_a_follower_keeps_is_what_the_forecast_of_the_grown_log_would_say(tmp_path: Path) -> None:
    """The app keeps the back-tests and the last compaction's drop while a followed log grows past its
    last compaction (gui/live.py): forecasting the grown log without them and putting back the kept
    ones gives the whole forecast of the grown log (what it would drop now, and when, made afresh)."""
    # A real Claude Code excerpt: an automatic compaction at line 14 of 38, calls after it.
    lines = (ROOT / "tests" / "data" / "claude_code" / "spotter-autocompact-excerpt.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(lines[:26]), encoding="utf-8")
    before = load_session(path)
    earlier = forecast(before)
    assert earlier.last_compaction is not None and earlier.last_compaction.summary == "recorded"
    path.write_text("".join(lines), encoding="utf-8")
    grown = load_session(path)
    assert len(grown.messages) > len(before.messages) and grown.compactions == before.compactions
    light = forecast(grown, with_backtest=False, with_last=False)
    assert light.backtests == () and light.last_compaction is None
    whole = forecast(grown)
    assert dataclasses.replace(light, backtests=earlier.backtests, last_compaction=earlier.last_compaction) == whole


@pytest.mark.parametrize(("path", "policy", "key"), [(ROOT / "sample_sessions" / "codex_rollout.jsonl", "codex-compaction", "total_usage_tokens"),
                                                     (ROOT / "sample_sessions" / "gemini_cli_session.json", "gemini-cli-compression", "prompt_token_count")])
def test_the_count_is_the_one_the_trigger_compares(path: Path, policy: str, key: str) -> None:
    """Codex compares its limit with the last call's reported tokens and Gemini CLI its threshold with
    the reported prompt, while what each sends is counted by its own estimator (Codex's JSON bytes / 4
    said 6,131 where the last call reported 17,005): the forecast's count and room are the trigger's."""
    from ctxviz.engine.policies import get_policy
    from ctxviz.engine.vocabulary import trigger_count

    session = load_session(path)
    plan = plan_session(session, policy)
    when = forecast(session, policy).when
    assert when is not None and when.level == plan.extra[key] == trigger_count(get_policy(policy), plan)
    assert plan.totals.used < when.level  # (the figure it replaced)
    last = next(m for m in reversed(session.messages) if m.usage is not None)
    assert when.level >= last.usage.window_fill  # the provider's own figure for the last call, not an estimate
    assert when.room == when.trigger - when.level


def test_once_a_plan_compacts_its_count_is_the_compacted_context() -> None:
    from ctxviz.engine.policies import get_policy
    from ctxviz.engine.vocabulary import trigger_count

    session = load_session(ROOT / "sample_sessions" / "codex_rollout.jsonl")
    plan = plan_session(session, "codex-compaction", {"model_auto_compact_token_limit": 10_000})
    assert plan.extra["compacts"] and plan.extra["total_usage_tokens"] >= 10_000
    assert trigger_count(get_policy("codex-compaction"), plan) == plan.totals.used < 10_000


def test_a_compaction_too_soon_after_the_logs_start_is_said_to_be_so() -> None:
    """The bundled excerpt records an automatic compaction one call after its start: the back-test
    needs three calls before it, and the sentence said the log records no automatic compaction."""
    session = load_session(ROOT / "sample_sessions" / "claude_code_autocompact.jsonl")
    assert [c.trigger for c in session.compactions] == ["auto"]
    f = forecast(session)
    assert not f.backtests and f.automatic == 1
    assert f.error_sentence().startswith("this log's 1 recorded automatic compaction came fewer than 3 calls after its start")
    assert forecast(load_session(ROOT / "sample_sessions" / "support_chat.yaml"), "claude-code").error_sentence().startswith("no recorded automatic")
