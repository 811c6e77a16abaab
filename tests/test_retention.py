"""Retention and "where did X go", on sessions whose right answer is known by construction."""

from __future__ import annotations

import json

from ctxviz.cli import main
from ctxviz.engine.anchors import anchors_of
from ctxviz.engine.plan import Decision, MessagePlan, Plan, Totals
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.supyagent.context_manager import middle_truncate
from ctxviz.engine.retention import plan_retention, view_of
from ctxviz.engine.retention_timeline import timeline_retention
from ctxviz.engine.session import Message, Session, Summary, TextPart, ToolCallPart, ToolResultPart, default_category
from ctxviz.engine.simulate import simulate
from ctxviz.engine.where import where
from tests.builders import session

RULE = "Never push to main."


def window_session(n: int = 60) -> Session:
    """A user message every third message (0, 3, 6...), assistants between; message 0 is the opening
    request and message 3, said once, is the user's rule."""
    turns = []
    for i in range(n):
        if i == 0:
            turns.append(("user", "Please migrate the billing service to the new queue."))
        elif i == 3:
            turns.append(("user", RULE))
        elif i % 3 == 0:
            turns.append(("user", f"Next step {i}, go ahead."))
        else:
            turns.append(("assistant", f"Working on step {i}."))
    return session(*turns)


#: missy with a one-token history budget: no older message ever fits, so the context is exactly
#: the fresh tail of 37 messages before the newest (and the newest, when it is the user's). Message
#: 3 is in that tail while 3 >= t - 37 at a user turn t and 3 >= t + 1 - 37 at an assistant turn:
#: turns 3 to 39 (39 is a user turn); turn 40, an assistant's, sends messages 4-40 only.
WINDOW = {"total": 1, "system_reserve": 0, "tool_definitions_reserve": 0, "memory_fraction": 0.0, "learnings_fraction": 0.0,
          "fresh_tail_count": 37}


def missy_window(s: Session, per_message: bool = False):
    """Call by call, the requests end at the user messages (0, 3, 6...): at turn 42 the tail is
    messages 5-41 and the user's #42, so the rule said at #3 is sent through turn 39 and leaves at 42."""
    return simulate(s, "missy", get_policy("missy").make_params(WINDOW), per_message=per_message)


def test_rule_said_at_turn_3_leaves_at_turn_40():
    s = window_session()
    timeline = missy_window(s)
    found = where(timeline, "push to MAIN")
    assert found.said == (3,) and found.exact
    assert found.spans == ((3, 39),)
    assert [(e.turn, e.kind) for e in found.exits] == [(42, "window")]
    assert found.exits[0].message.startswith("#3: dropped")
    assert not found.at_end and found.last_turn == 57
    # Per message (the old view), turn 40, an assistant's, is the first without it.
    per_message = where(missy_window(s, per_message=True), "push to MAIN")
    assert per_message.spans == ((3, 39),) and [(e.turn, e.kind) for e in per_message.exits] == [(40, "window")]


def test_retention_per_turn_tracks_the_rule_and_the_opening_request():
    s = window_session()
    index = anchors_of(s)
    rule = next(a for a in index.anchors if a.kind == "instruction")
    opening = next(a for a in index.anchors if a.opening)
    assert (rule.value, rule.first_index, opening.first_index) == (RULE, 3, 0)
    steps = timeline_retention(missy_window(s))  # call by call: a point per request, named by its last message
    assert steps.exact and [p.turn for p in steps.points] == list(range(0, 60, 3))
    leaving = {a.id: loss.turn for loss in steps.losses for a in loss.lost}
    assert leaving[rule.id] == 42 and leaving[opening.id] == 39
    tr = timeline_retention(missy_window(s, per_message=True))
    assert tr.exact and [p.turn for p in tr.points] == list(range(60))
    by_turn = {p.turn: p for p in tr.points}
    assert (by_turn[2].instructions, by_turn[3].instructions_kept, by_turn[39].instructions_kept, by_turn[40].instructions_kept) == (0, 1, 1, 0)
    assert by_turn[40].instruction_score == 0.0
    # The opening request (message 0) leaves at turn 37 (assistant: tail 1-37) by the same rule.
    leaving = {a.id: loss.turn for loss in tr.losses for a in loss.lost}
    assert leaving[rule.id] == 40 and leaving[opening.id] == 37
    loss = next(loss for loss in tr.losses if loss.turn == 40)
    assert loss.kind == "window" and rule in loss.lost
    # At the last turn both are lost, the opening request listed first, then the rule.
    assert tr.final is not None and tr.final.lost[:2] == (opening, rule)


def test_plan_lists_lost_requests_and_instructions_first():
    s = window_session()
    plan = plan_session(s, "missy", get_policy("missy").make_params(WINDOW))
    r = plan_retention(plan, s)
    assert r.instructions == 1 and r.instructions_kept == 0
    assert [a.kind for a in r.lost[:2]] == ["request", "instruction"] and r.lost[0].opening
    assert r.reasons[r.lost[1].id].startswith("#3: dropped")
    # The newest message (#59) is an assistant's: the tail is messages 23-59, so the user's requests
    # from #24 on survive.
    requests = [a for a in anchors_of(s).anchors if a.kind == "request"]
    assert {a.first_index for a in requests if a not in r.lost} == set(range(24, 60, 3))
    assert r.score == r.kept / r.anchors


def test_anchors_in_a_recorded_summary_survive_the_messages_it_replaces():
    s = session(("user", "Refund order ORD-2231 and ship BW-58231 today."), ("assistant", "Done: ORD-2231 refunded."),
                ("user", "Thanks."), ("assistant", "Anything else?"),
                summaries=(Summary(text="The user asked to refund ORD-2231; it was refunded.", covers=("m0", "m1")),))
    plan = plan_session(s, "missy")
    assert [m.decision for m in plan.messages[:2]] == [Decision.SUMMARIZED] * 2 and plan.summaries[0].decision is Decision.KEPT
    lost = {a.value for a in plan_retention(plan, s).lost}
    assert "ORD-2231" not in lost and "BW-58231" in lost


def supyagent_session() -> Session:
    """The file path is read through a tool call (supyagent's snapshot lists the files tools touched);
    the case id is only in an assistant's prose (the snapshot keeps no such line)."""
    messages = [
        Message("m0", 0, "user", (TextPart("Please fix the login bug."),), category=default_category("user")),
        Message("m1", 1, "assistant", (ToolCallPart("c1", "read_file", '{"path": "src/auth/session.py"}'),), category=default_category("assistant")),
        Message("m2", 2, "tool", (ToolResultPart("c1", "def login(): pass"),), tool_call_id="c1", category=default_category("tool")),
        Message("m3", 3, "assistant", (TextPart("Case CS-88412 is the one the user hit."),), category=default_category("assistant")),
    ]
    for i in range(4, 24):
        role = "user" if i % 2 == 0 else "assistant"
        messages.append(Message(f"m{i}", i, role, (TextPart(f"Next step {i}."),), category=default_category(role)))
    return Session(messages=tuple(messages), source="<test>", format="test", model="gpt-4o")


def test_what_a_summary_event_lost_and_what_its_text_kept():
    s = supyagent_session()
    params = get_policy("supyagent").make_params({"max_messages_before_summary": 10, "min_recent_messages": 4})
    timeline = simulate(s, "supyagent", params)
    first = next(e for e in timeline.events if e.kind == "summary")
    assert "src/auth/session.py" in timeline.summaries[0].text and "CS-88412" not in timeline.summaries[0].text
    t = timeline.turns[timeline.step_of(first.turn) + 1].index  # the summary is in force from the next step
    tr = timeline_retention(timeline)
    loss = next(loss for loss in tr.losses if loss.turn == t)
    assert (loss.kind, loss.event_turn) == ("summary", first.turn)
    lost = {a.value for a in loss.lost}
    assert "CS-88412" in lost and "src/auth/session.py" not in lost
    assert "lost at turn" in loss.sentence() and "`CS-88412`" in loss.sentence()
    gone = where(timeline, "cs-88412")  # said in #3, an answer: first sent in the request that ends with #4
    assert gone.spans == ((4, first.turn),) and [(e.turn, e.kind, e.event_turn) for e in gone.exits] == [(t, "summary", first.turn)]
    kept = where(timeline, "src/auth/session.py")
    assert kept.spans == ((2, timeline.turns[-1].index),) and kept.exits == () and kept.at_end  # first sent in the request of #0-#2


def test_a_truncated_message_keeps_only_what_its_cut_text_holds():
    s = session(("user", "Read the log."), ("tool", "start ORD-1111 " + "x" * 3000 + " middle ORD-2222 " + "y" * 3000 + " end ORD-3333"))
    cut = middle_truncate(s.messages[1].text)  # supyagent's cut: the first 1,000 and the last 500 characters
    messages = (MessagePlan(0, "m0", "user", "dialog", 3, Decision.KEPT, "history", "kept", 3),
                MessagePlan(1, "m1", "tool", "system_output", 1500, Decision.TRUNCATED, "history", "truncated", 400))
    context = ({"role": "system", "content": "You help."}, {"role": "user", "content": "Read the log."}, {"role": "tool", "content": cut})
    plan = Plan("test", {}, "chars", {"all": 2000}, {"all": 403}, "You help.", messages, context, Totals(2000, 403, 1503, 0, True),
                context_index=(None, 0, 1))
    assert view_of(plan).partial == {1: cut}
    lost = {a.value for a in plan_retention(plan, s).lost}
    assert lost == {"ORD-2222"}
    unknown = Plan("test", {}, "chars", {"all": 2000}, {"all": 403}, "You help.", messages, context, Totals(2000, 403, 1503, 0, True))
    assert plan_retention(unknown, s).lost == ()  # without the context's sources a cut message counts as sent


def test_cli_where_plan_and_simulate(capsys, tmp_path):
    path = tmp_path / "window.yaml"
    lines = ["ctxviz: 1", "messages:"]
    for m in window_session().messages:
        lines.append(f"  - {{id: {m.id}, role: {m.role}, content: {json.dumps(m.text)}}}")
    path.write_text("\n".join(lines) + "\n")
    sets = [arg for k, v in WINDOW.items() for arg in ("--set", f"{k}={v}")]
    assert main(["where", str(path), "push to main", *sets]) == 0
    out = capsys.readouterr().out
    assert "in the context at turns 3-39" in out and "left at turn 42: no event (plain trim): #3: dropped" in out
    assert "at the last turn (#57)" in out
    assert main(["where", str(path), "push to main", "--json", *sets]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["in_context"] == [{"from": 3, "to": 39}] and doc["exits"][0]["turn"] == 42
    assert main(["where", str(path), "push to main", "--json", "--per-message", *sets]) == 0
    assert json.loads(capsys.readouterr().out)["exits"][0]["turn"] == 40
    assert main(["plan", str(path), "--json", *sets]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["retention"]["instructions"] == 1 and doc["retention"]["instructions_kept"] == 0
    assert doc["retention"]["lost"][1]["value"] == RULE and doc["retention"]["lost"][1]["first_index"] == 3
    assert main(["plan", str(path), *sets]) == 0
    assert "user instructions 0 of 1 (0 %)" in capsys.readouterr().out
    assert main(["simulate", str(path), "--json", *sets]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"turns", "events", "versus_plan", "retention"} <= set(doc)
    assert [p["instructions_kept"] for p in doc["retention"]["points"] if 36 <= p["turn"] <= 42] == [1, 1, 0]
    assert main(["compare", str(path), "--policy", "missy", "--set-a", "fresh_tail_count=60", *sets]) == 0
    out = capsys.readouterr().out
    assert "instructions" in out and "lost by B only" in out


def test_large_replays_read_every_turn_from_the_counts_and_agree_with_planning_it():
    """Past EXACT_WORK the turns are read from the replay's counts and checked against a few
    planned turns; forced here on small sessions, the answers are those of planning every turn."""
    s = window_session()
    timeline = missy_window(s)
    planned, read = timeline_retention(timeline), timeline_retention(timeline, exact_work=0, samples=8)
    assert planned.exact and not read.exact and read.method.startswith("every turn read")
    assert read.points == planned.points and read.plans < planned.plans
    assert [(x.turn, x.lost) for x in read.losses] == [(x.turn, x.lost) for x in planned.losses]
    found = where(timeline, "push to main", exact_work=0, samples=8)
    assert found.spans == ((3, 39),) and [e.turn for e in found.exits] == [42]
    supy = simulate(supyagent_session(), "supyagent", get_policy("supyagent").make_params({"max_messages_before_summary": 10,
                                                                                            "min_recent_messages": 4}))
    assert timeline_retention(supy, exact_work=0, samples=5).losses == timeline_retention(supy).losses


def test_retention_is_skipped_beyond_the_automatic_size_and_forced_on_request(capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import json as _json
    from pathlib import Path as _Path

    import ctxviz.cli as cli
    import ctxviz.cli.retention as retention_options

    sample = str(_Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml")
    monkeypatch.setattr(retention_options, "RETENTION_AUTO_CHARS", 1000)
    assert cli.main(["plan", sample, "--json"]) == 0
    doc = _json.loads(capsys.readouterr().out)
    assert doc["retention"] is None and "the automatic limit is" in doc["retention_note"]
    assert cli.main(["plan", sample]) == 0
    assert "retention: not computed for" in capsys.readouterr().out
    assert cli.main(["plan", sample, "--json", "--retention", "on"]) == 0
    assert _json.loads(capsys.readouterr().out)["retention"]["anchors"] > 0


def test_cli_says_a_session_has_no_user_instruction_rather_than_keeping_all_of_none(capsys, tmp_path):
    path = tmp_path / "plain.yaml"
    path.write_text("ctxviz: 1\nmessages:\n  - {role: user, content: What does src/app/main.py do?}\n"
                    "  - {role: assistant, content: It starts the server on port 8080.}\n")
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no user instruction in the session" in out and "0 of 0" not in out
    assert main(["simulate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no user instruction in the session" in out and "0 of 0" not in out
