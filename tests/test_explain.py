"""compare and why: differences between plans, and the smallest change that keeps a message."""

import dataclasses
import json

from ctxviz.cli import main
from ctxviz.engine.counting import CountStore
from ctxviz.engine.explain import Cancelled, compare, describe, why
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy

from .builders import session

PARAMS = dict(total=500, system_reserve=150, tool_definitions_reserve=50, memory_fraction=0, learnings_fraction=0, fresh_tail_count=2)
S = session(*[("user" if i % 2 == 0 else "assistant", f"{i:02d}" + "x" * (200 + 40 * i)) for i in range(10)], ("user", "now"))


def counts_for(policy="missy"):
    return CountStore().get(S, get_policy(policy).scheme())


def test_why_finds_the_smallest_total_and_tail_that_keep_a_dropped_message():
    params = get_policy("missy").make_params(PARAMS)
    counts = counts_for()
    base = plan_session(S, "missy", params, store=CountStore())
    dropped = [m.index for m in base.messages if m.decision is Decision.DROPPED]
    target = dropped[-1]  # the first misfit: freeing a few tokens, or a longer tail, sends it
    result = why(S, "missy", params, counts, target)
    changes = {c.parameter: c for c in result.changes}
    assert {"total", "system_reserve"} <= set(changes)
    # a longer fresh tail sends it too, but only by taking missy's history over its budget: said
    # apart, never offered as the answer
    assert [c.parameter for c in result.over_budget] == ["fresh_tail_count"] and result.within_budget
    longer = plan_session(S, "missy", dataclasses.replace(params, fresh_tail_count=result.over_budget[0].value), store=CountStore())
    assert longer.messages[target].sent and not longer.totals.fits
    for change in result.changes:
        plan = plan_session(S, "missy", dataclasses.replace(params, **{change.parameter: change.value}), store=CountStore())
        assert plan.messages[target].sent and plan.totals.fits, change
        step = 1 if isinstance(change.value, int) else 0.001
        closer = change.value - step if change.direction == ">=" else change.value + step
        if closer != change.current:
            try:
                candidate = dataclasses.replace(params, **{change.parameter: closer})
            except ValueError:
                continue
            assert not plan_session(S, "missy", candidate, store=CountStore()).messages[target].sent, change
    assert changes["total"].direction == ">=" and changes["system_reserve"].direction == "<="


def test_why_on_a_kept_message_needs_no_change():
    result = why(S, "missy", get_policy("missy").make_params(PARAMS), counts_for(), len(S.messages) - 1)
    assert result.message.decision is Decision.KEPT and result.changes == ()


def test_compare_lists_only_differences():
    a = plan_session(S, "missy", PARAMS, store=CountStore())
    b = plan_session(S, "missy", {**PARAMS, "total": 5000}, store=CountStore())
    diffs = compare(a, b)
    assert diffs and all(d.a.decision is Decision.DROPPED and d.b.decision is Decision.KEPT for d in diffs)
    assert compare(a, a) == []


def test_cli_compare_and_why(capsys, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"role": m.role, "content": m.text} for m in S.messages]))
    sets = [f"--set={k}={v}" for k, v in PARAMS.items()]
    assert main(["compare", str(path), "--policy", "missy", *sets, "--set-b", "total=5000", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["b"]["params"]["total"] == 5000 and doc["differences"]
    assert main(["why", str(path), "--message", "m1", *sets]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#1 (m1, assistant") and "total >=" in out
    assert "sent too, but only with the context over its budget: fresh_tail_count >=" in out
    assert main(["compare", str(path), "--policy", "missy", "--policy", "supyagent"]) == 0
    assert main(["why", str(path), "--message", "nope"]) == 2
    assert main(["compare", str(path)]) == 2


def test_a_why_search_can_be_abandoned():
    params = get_policy("missy").make_params(PARAMS)
    base = plan_session(S, "missy", params, store=CountStore())
    target = [m.index for m in base.messages if m.decision is Decision.DROPPED][-1]
    asked = []
    try:
        why(S, "missy", params, counts_for(), target, should_stop=lambda: asked.append(1) or len(asked) > 3)
    except Cancelled:
        pass
    else:
        raise AssertionError("the search ran to the end although it was asked to stop")
    assert len(asked) == 4


def test_why_never_offers_a_change_that_only_sends_the_message_over_budget():
    """Under missy-consolidator every summarised message was told "max_tokens <= 0": that turns
    consolidation off and leaves the context over a 0-token budget. The answer is the smallest
    budget under which consolidation does not fire, with the plan still fitting."""
    chat = session(*[("user" if i % 2 == 0 else "assistant", f"step {i} " + "word " * 150) for i in range(20)])
    params = get_policy("missy-consolidator").make_params({"max_tokens": 2000})
    counts = CountStore().get(chat, get_policy("missy-consolidator").scheme())
    base = plan_session(chat, "missy-consolidator", params, store=CountStore())
    target = next(m.index for m in base.messages if m.decision is Decision.SUMMARIZED)
    result = why(chat, "missy-consolidator", params, counts, target)
    assert [(c.parameter, c.direction) for c in result.changes] == [("max_tokens", ">=")]
    change = result.changes[0]
    plan = plan_session(chat, "missy-consolidator", dataclasses.replace(params, max_tokens=change.value), store=CountStore())
    assert plan.messages[target].sent and plan.totals.fits
    smaller = plan_session(chat, "missy-consolidator", dataclasses.replace(params, max_tokens=change.value - 1), store=CountStore())
    assert not (smaller.messages[target].sent and smaller.totals.fits)
    assert result.over_budget == () and "<= 0" not in describe(result)


def test_differences_group_by_both_sides_reason_codes():
    """`compare` printed the same three lines for each of 139 messages; grouped, one line per kind."""
    from pathlib import Path

    from ctxviz.engine.explain import compare, group_differences
    from ctxviz.engine.planner import plan_session
    from ctxviz.io.loaders import load_session

    session = load_session(str(Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"))
    a = plan_session(session, "missy", {"total": 30000})
    b = plan_session(session, "missy", {"total": 12000})
    diffs = compare(a, b)
    groups = group_differences(diffs)
    assert sum(g.count for g in groups) == len(diffs) and len(groups) < len(diffs)
    assert sorted(i for g in groups for i in g.indices) == sorted(d.index for d in diffs)
    for g in groups:
        members = [d for d in diffs if d.index in g.indices]
        assert {(d.a.reason_code, d.b.reason_code) for d in members} == {(g.a_code, g.b_code)}
        assert g.a_tokens == sum(d.a.tokens for d in members)
    biggest = groups[0]
    assert (biggest.a_decision, biggest.b_decision) == ("kept", "dropped") and biggest.b_code == "after_cut"
    assert biggest.span().startswith("#")


def test_why_says_a_compaction_the_log_records_cannot_be_undone(capsys):
    """A message the agent's own compaction summarised is not brought back by any setting: `why`
    says so (where the log compacted) instead of listing the parameters it searched."""
    from pathlib import Path

    from ctxviz.io.loaders import load_session

    path = Path(__file__).resolve().parent.parent / "sample_sessions" / "codex_rollout.jsonl"
    s = load_session(path)
    policy = get_policy("codex-compaction")
    params = policy.default_params()
    counts = CountStore().get(s, policy.scheme(None, s.model))
    result = why(s, "codex-compaction", params, counts, 1)
    assert result.message.decision is Decision.SUMMARIZED and not result.changes
    assert "the agent's own before #39" in result.recorded and "no single change" not in describe(result)
    assert result.to_json()["covered_by_recorded_summary"] is True
    # A message a setting does bring back is not said to be the log's.
    missy = get_policy("missy").make_params(PARAMS)
    dropped = [m.index for m in plan_session(S, "missy", missy, store=CountStore()).messages if m.decision is Decision.DROPPED]
    assert not why(S, "missy", missy, counts_for(), dropped[-1]).recorded
    assert main(["why", str(path), "--message", "1"]) == 0
    assert "no setting brings it back" in capsys.readouterr().out
