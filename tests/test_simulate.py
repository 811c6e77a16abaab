"""Turn-by-turn simulation: triggers fire where each framework fires them, and scrubbing reproduces turns."""

import json

from ctxviz.cli import main
from ctxviz.engine.counting import CountStore
from ctxviz.engine.simulate import simulate
from ctxviz.engine.summarizers import supyagent_snapshot

from .builders import session


def chat(n, words=20):
    return session(*[("user" if i % 2 == 0 else "assistant", f"step {i}: edit src/module_{i}.py " + "word " * words) for i in range(n)])


def test_supyagent_summary_fires_every_n_messages_since_the_last():
    """The trigger is checked before each model call: the user messages 0, 2, 4... end the requests."""
    tl = simulate(chat(30), "supyagent", {"max_messages_before_summary": 10, "min_recent_messages": 2}, store=CountStore())
    assert tl.step_rule == "replies" and [t.index for t in tl.turns] == list(range(0, 30, 2))
    summaries = [e.turn for e in tl.events if e.kind == "summary"]
    # The request of 11 messages (turn 10) -> summary up to index 8; since = n - 9 reaches 10 at n = 19 (turn 18); then turn 26.
    assert summaries == [10, 18, 26]
    assert tl.summaries[0].messages_covered == 9 and tl.summaries[0].text.startswith("## Files Modified")
    after = tl.turns[tl.step_of(12)]
    assert after.summarized == 9 and after.summaries == 1
    # Per message (the old view), the same trigger fires after the 10th message.
    per_message = simulate(chat(30), "supyagent", {"max_messages_before_summary": 10, "min_recent_messages": 2}, per_message=True)
    assert per_message.step_rule == "messages" and [e.turn for e in per_message.events if e.kind == "summary"] == [9, 17, 25]


def test_plan_at_reproduces_each_turn():
    tl = simulate(chat(24), "supyagent", {"max_messages_before_summary": 8, "min_recent_messages": 2}, store=CountStore())
    for t in range(len(tl.turns)):
        plan = tl.plan_at(t)
        assert plan.totals.used == tl.turns[t].tokens_sent
        assert len(tl.session_at(t).messages) == tl.turns[t].index + 1 == 2 * t + 1


def test_consolidation_shrinks_the_context_and_turns_after_carry_it():
    tl = simulate(chat(40, words=60), "missy-consolidator", {"max_tokens": 1500}, store=CountStore())
    first = next(e.turn for e in tl.events if e.kind == "consolidation")
    assert tl.turns[first + 1].tokens_sent < tl.turns[first].tokens_sent or tl.turns[first + 1].summarized > 0
    assert tl.turns[first + 1].summarized > 0


def test_mnesis_compaction_at_the_soft_threshold():
    tl = simulate(chat(60, words=200), "mnesis", {"context_limit": 30000, "reserved_output_tokens": 1000, "compaction_buffer": 20000}, store=CountStore())
    kinds = {e.kind for e in tl.events}
    assert "compaction" in kinds or "hard_threshold" in kinds
    turn = next(e.turn for e in tl.events if e.kind in ("compaction", "hard_threshold"))
    assert tl.turns[turn + 1].summarized > 0


def test_missy_has_no_trigger_and_counts_add_up():
    tl = simulate(chat(30, words=200), "missy", {"total": 6000}, store=CountStore())
    assert all(e.kind == "overflow" for e in tl.events)
    for t in tl.turns:
        assert t.kept + t.dropped + t.summarized + t.truncated == t.index + 1


def test_snapshot_has_five_sections_under_600_words():
    text = supyagent_snapshot(chat(200, words=100).messages)
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## Files Modified", "## Key Decisions", "## Important Values", "## Current State", "## Pending Tasks"]
    assert len(text.split()) <= 601


def test_cli_simulate_json(capsys, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"role": m.role, "content": m.text} for m in chat(30).messages]))
    assert main(["simulate", str(path), "--policy", "supyagent", "--set", "max_messages_before_summary=10", "--set", "min_recent_messages=2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["turns"]) == 15 and [e["turn"] for e in doc["events"] if e["kind"] == "summary"] == [10, 18, 26]
    assert doc["step_rule"] == "replies" and [(t["step"], t["turn"], t["reply"]) for t in doc["turns"][:2]] == [(0, 0, 1), (1, 2, 3)]
    assert main(["simulate", str(path), "--policy", "supyagent"]) == 0
    out = capsys.readouterr().out
    assert "events:" in out and "15 steps, one per request before an assistant reply" in out
    assert main(["simulate", str(path), "--policy", "supyagent", "--set", "max_messages_before_summary=10", "--set", "min_recent_messages=2",
                 "--json", "--per-message"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["step_rule"] == "messages" and len(doc["turns"]) == 30
    assert [e["turn"] for e in doc["events"] if e["kind"] == "summary"] == [9, 17, 25]


def test_a_recorded_summary_exists_only_from_the_turn_it_was_written():
    """A Claude Code compaction summary covers the messages before its boundary: replaying turn by
    turn, the agent must see those messages raw until the boundary, then the summary instead."""
    from dataclasses import replace

    from ctxviz.engine.session import Summary

    base = chat(12, words=200)
    covered = tuple(m.id for m in base.messages[:8])
    older = Summary(text="Earlier: the user set up the repo.", depth=1, messages_covered=30, covers=("old-1", "old-2"))
    compact = Summary(text="Summary of steps 0-7: edited modules 0 to 7.", depth=1, messages_covered=8, covers=covered)
    s = replace(base, summaries=(older, compact))
    assert s.summary_start_turns == (0, 8)
    tl = simulate(s, "mnesis", store=CountStore(), per_message=True)
    assert [len(tl.session_at(t).summaries) for t in (0, 7, 8, 11)] == [1, 1, 2, 2]
    assert tl.turns[7].summarized == 0 and tl.turns[8].summarized == 8
    assert tl.turns[8].tokens_sent < tl.turns[7].tokens_sent, "the sawtooth drops where the agent compacted"
    assert [(e.turn, e.kind) for e in tl.events] == [(8, "compaction")]
    # Call by call, the requests end at the user messages 0, 2, ..., 10: the first to hold the summary is #8's.
    tl = simulate(s, "mnesis", store=CountStore())
    assert [len(tl.session_at(t).summaries) for t in range(len(tl.turns))] == [1, 1, 1, 1, 2, 2]
    assert [(e.turn, e.kind) for e in tl.events] == [(8, "compaction")]
    # A boundary between a request's last message and its answer (after #8, before the reply #9): the
    # call that answered was made after the compaction, so that request (#0-#8) holds it, as the real
    # Claude Code log shows (its call after such a boundary reported the compacted size).
    before_answer = replace(s, summaries=(older, replace(compact, covers=tuple(m.id for m in base.messages[:9]))))
    tl = simulate(before_answer, "mnesis", store=CountStore())
    assert [(e.turn, e.kind) for e in tl.events] == [(8, "compaction")] and tl.turns[4].reply == 9
    assert tl.turns[4].summarized == 9 and len(tl.session_at(4).summaries) == 2 and len(tl.session_at(3).summaries) == 1
    # A boundary between two requests (after the reply #9): the next request (#0-#10) holds it and says so.
    later = replace(s, summaries=(older, replace(compact, covers=tuple(m.id for m in base.messages[:10]))))
    tl = simulate(later, "mnesis", store=CountStore())
    assert [(e.turn, e.kind) for e in tl.events] == [(10, "compaction")]


def test_the_count_store_given_is_the_one_used():
    """An empty CountStore is falsy (it has a length); `store or default` once sent every first
    plan to a process-wide store that never forgot a session."""
    from ctxviz.engine.planner import plan_session

    s = chat(20)
    store = CountStore()
    plan_session(s, "missy", store=store)
    assert len(store) == 1
    fresh = CountStore()
    simulate(s, "missy", store=fresh)
    assert len(fresh) == 1


def test_each_turn_says_how_many_of_the_conversations_tokens_it_does_not_send():
    """The timeline's "not sent" series: at every turn, the measured tokens of the messages so far
    that the turn's context leaves out (its plan's `Totals.dropped`), for a trimmer and a summariser."""
    conversation = chat(40, words=60)
    for policy, params in (("missy", {"total": 2_600, "system_reserve": 100, "tool_definitions_reserve": 0, "fresh_tail_count": 4}), ("supyagent", {"max_messages_before_summary": 8})):
        tl = simulate(conversation, policy, params, store=CountStore())
        for t in (0, 9, 14, 19):
            plan = tl.plan_at(t)
            assert tl.turns[t].not_sent == plan.totals.dropped == sum(m.tokens for m in plan.messages if not m.sent), (policy, t)
        assert tl.turns[0].not_sent == 0 and tl.turns[-1].not_sent > 0, policy
        assert tl.to_json()["turns"][-1]["not_sent"] == tl.turns[-1].not_sent
