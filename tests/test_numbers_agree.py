"""Every number a plan, a replay or a `why` answer shows agrees with the others, or says why not.

Each test is a contradiction first seen on a bundled sample.
"""

import json
import re
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.explain import describe, why
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy, policy_names
from ctxviz.engine.simulate import plan_versus_replay, simulate
from ctxviz.io.loaders import load_session
from ctxviz.io.text_summary import plan_summary

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
SUPPORT = str(SAMPLES / "support_chat.yaml")
FILES = sorted(str(p) for p in SAMPLES.iterdir() if p.suffix in (".yaml", ".jsonl"))
STORE = CountStore()
_loaded: dict[str, object] = {}


def sample(path: str):
    if path not in _loaded:
        _loaded[path] = load_session(path)
    return _loaded[path]


def total_row(text: str) -> str:
    return next(line for line in text.splitlines() if line.startswith("  total "))


def test_a_part_over_its_allotment_is_named_and_the_total_never_over_by_a_negative(capsys):
    """`total 8,000 7,747 OVER by -253`: missy's plan does not fit because history is over its
    allotment while the total is under the budget."""
    assert main(["plan", SUPPORT, "--set", "total=8000"]) == 0
    out = capsys.readouterr().out
    row = total_row(out)
    assert "OVER by -" not in out
    assert re.split(r"\s{2,}", row.strip()) == ["total", "8,000", "7,747", "does not fit: history is over its 3,200 allotment by 2,117"]
    assert re.search(r"^  history\s+3,200\s+5,317\s+over by 2,117$", out, re.M)
    assert main(["plan", SUPPORT, "--set", "total=8000", "--fail-over-budget"]) == 1
    capsys.readouterr()


def test_supyagents_usage_adds_up_to_its_total():
    """supyagent's usage rows added up to 68,098 against a total of 67,444: each sent message was
    counted with the 3 its fitting loop charges, which the final count adds once."""
    plan = plan_session(sample(SUPPORT), "supyagent", store=STORE)
    assert plan.totals.used == 67_444
    assert sum(plan.usage.values()) == plan.totals.used
    assert sum(plan.allocation.values()) == plan.totals.budget == 128_000
    history = sum(m.sent_tokens for m in plan.messages if m.sent and m.zone != "system")
    assert plan.usage["history"] == history
    assert all(m.sent_tokens == m.tokens for m in plan.messages if m.decision is Decision.KEPT)


@pytest.mark.parametrize("path", FILES)
@pytest.mark.parametrize("policy", policy_names())
@pytest.mark.parametrize("pair_safe", [False, True])
def test_every_sample_under_every_policy_adds_up(path, policy, pair_safe):
    plan = plan_session(sample(path), policy, store=STORE, options=PlanOptions(pair_safe=pair_safe))
    t = plan.totals
    assert sum(plan.usage.values()) == t.used
    if t.allocation_kind == "division":
        assert sum(plan.allocation.values()) == t.budget
    assert t.kept == sum(m.tokens for m in plan.messages if m.sent)
    if t.fits_test == "parts":
        assert t.fits == all(plan.usage[p] <= a for p, a in plan.allocation.items())
    else:
        assert t.fits == (t.used <= t.budget)


def test_why_gives_one_figure_for_a_message_or_labels_the_other():
    """`why` printed "2,933 tokens): kept: 2,936 tokens fit" for one message: the second figure is
    what supyagent's fitting loop charges (the message plus 3 for the one-message list it counts)."""
    session = sample(SUPPORT)
    counts = STORE.get(session, get_policy("supyagent").scheme(None, session.model))
    params = get_policy("supyagent").make_params({"context_limit": 20000})
    plan = plan_session(session, "supyagent", params, store=STORE)
    for m in plan.messages:
        if m.zone == "system" or m.decision not in (Decision.KEPT, Decision.DROPPED):
            continue
        for match in re.finditer(r"([\d,]+) tokens( as supyagent charges it \(its ([\d,]+) plus 3)?", m.reason):
            figure = int(match.group(1).replace(",", ""))
            if match.group(2):
                assert int(match.group(3).replace(",", "")) == m.tokens and figure == m.tokens + 3, m.reason
            else:
                assert figure == m.tokens, m.reason
    kept = next(m for m in plan.messages if m.zone == "evictable" and m.decision is Decision.KEPT)
    text = describe(why(session, "supyagent", params, counts, kept.index))
    assert text.startswith(f"#{kept.index} ({kept.id}, {kept.role}, {kept.category}, {kept.tokens:,} tokens): kept: the {kept.tokens + 3:,} tokens "
                           f"as supyagent charges it (its {kept.tokens:,} plus 3")


def test_why_names_what_a_cut_down_message_sends():
    session = sample(str(SAMPLES / "multimodal_review.yaml"))
    plan = plan_session(session, "categories", {"max_tokens": 20000}, store=STORE)
    replaced = next(m for m in plan.messages if m.decision is Decision.REPLACED)
    counts = STORE.get(session, get_policy("categories").scheme(None, session.model))
    text = describe(why(session, "categories", get_policy("categories").make_params({"max_tokens": 20000}), counts, replaced.index))
    assert f"{replaced.tokens:,} tokens, sent as {replaced.sent_tokens:,})" in text


def test_pair_safety_updates_every_table(capsys):
    """With --pair-safe three tables showed the dialog total before pair safety (11,094) and the
    category table after it (9,362)."""
    assert main(["plan", SUPPORT, "--policy", "categories", "--pair-safe"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  dialog\s+75,000\s+9,362$", out, re.M)  # allocation
    assert re.search(r"^  dialog\s+168\s+11,094\s+9,362\s+130\s+38$", out, re.M)  # zones: all tokens, sent tokens
    assert re.search(r"^  dialog\s+168\s+11,094\s+9,362$", out, re.M)  # categories
    assert "  DIALOG: 9,362/75,000 (12.5%)" in out  # format_token_usage
    assert re.search(r"^ DIALOG\s+9,362 ", out, re.M)  # the table form
    assert re.split(r"\s{2,}", total_row(out).strip())[:3] == ["total", "150,000", "16,098"]
    assert "Token Usage: 16,098/150,000" in out
    assert main(["plan", SUPPORT, "--policy", "categories", "--pair-safe", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["usage"]["dialog"] == 9362 and doc["totals"]["used"] == 16098 == sum(doc["usage"].values())
    assert doc["orphans"] == []


@pytest.mark.parametrize("policy", policy_names())
def test_pair_safety_keeps_the_policys_own_figures(policy):
    session = sample(str(SAMPLES / "coding_agent.yaml"))
    params = {"missy": {"total": 12000}, "supyagent": {"context_limit": 12000}, "categories": {},
              "mnesis": {"context_limit": 40000}, "missy-consolidator": {"max_tokens": 300000},
              "claude-code": {"calibrated_trigger": 2000},
              "langchain-trim": {"max_tokens": 4000}, "langchain-summarization": {"trigger": "messages=20", "keep": "messages=6"},
              "langchain-context-editing": {"trigger": 2000},
              "gemini-cli-compression": {"tokenLimit": 12000}, "codex-compaction": {"model_auto_compact_token_limit": 5000},
              "anthropic-clear-tool-uses": {"trigger": "input_tokens:1000"}, "anthropic-clear-thinking": {},
              "strands-sliding-window": {"window_size": 12, "context_window_limit": 6000}, "strands-summarizing": {"context_window_limit": 40000},
              "openhands-llm-summarizing": {"max_size": 40, "keep_first": 4},
              "llamaindex-chat-memory-buffer": {"token_limit": 8000}, "llamaindex-chat-summary-memory-buffer": {"token_limit": 8000},
              "autogen-buffered": {"buffer_size": 12}, "autogen-head-and-tail": {"head_size": 3, "tail_size": 8},
              "autogen-token-limited": {"token_limit": 12000}}[policy]
    safe = plan_session(session, policy, params, store=STORE, options=PlanOptions(pair_safe=True))
    assert sum(safe.usage.values()) == safe.totals.used
    if policy == "missy":
        assert safe.extra["history_used"] == safe.usage["history"]
    if policy == "mnesis":
        assert safe.extra["token_estimate"] == safe.totals.used and safe.extra["raw_message_tokens"] == safe.usage["messages"]
        first = next(i for i in safe.context_index if i is not None)
        assert safe.extra["oldest_included_message_id"] == session.messages[first].id
    if policy == "missy-consolidator":
        assert safe.extra["after_tokens"] == safe.totals.used
    if policy == "claude-code":
        assert safe.usage["context"] == min(safe.totals.used, 2000) and safe.extra["would_compact"] == (safe.totals.used >= 2000)


def test_consolidator_with_max_tokens_zero_does_not_fit(capsys):
    """`--set max_tokens=0` printed "total 0 49,702 fits" and --fail-over-budget exited 0. missy's
    MemoryConsolidator accepts 0 and never consolidates (should_consolidate is False when
    max_tokens <= 0), so the plan keeps everything and is over its 0-token budget."""
    assert main(["plan", SUPPORT, "--policy", "missy-consolidator", "--set", "max_tokens=0", "--fail-over-budget"]) == 1
    out = capsys.readouterr().out
    budget, used, verdict = re.split(r"\s{2,}", total_row(out).strip())[1:]
    assert budget == "0" and verdict.startswith(f"OVER by {used}")
    assert "turns consolidation off" in out
    plan = plan_session(sample(SUPPORT), "missy-consolidator", {"max_tokens": 0}, store=STORE)
    assert not plan.totals.fits and all(m.decision is Decision.KEPT for m in plan.messages)


def test_consolidator_says_when_the_context_passes_the_threshold_without_consolidating():
    """At turn 118 the replay called 24,104 tokens an overflow of the 30,000-token budget: they are
    past the 80 % threshold only with the system prompt, which the consolidator does not measure."""
    timeline = simulate(sample(SUPPORT), "missy-consolidator", store=STORE)
    assert all(t.fits for t in timeline.turns) and not [e for e in timeline.events if e.kind == "overflow"]
    step = timeline.step_of(118)  # the request whose last message is #118
    assert timeline.turns[step].index == 118
    plan = timeline.plan_at(step)
    assert plan.totals.used >= 24_000 > plan.extra["current_tokens"] and not plan.extra["should_consolidate"]
    assert any("does not consolidate" in note for note in plan.notes)


def test_the_plan_and_the_replay_say_why_they_differ(capsys):
    """missy-consolidator's report header said 3,734 of 30,000 and its timeline 7,734; supyagent's
    plan 67,444 and its replay 14,286, with no word of why."""
    session = sample(SUPPORT)
    for policy, summaries in (("supyagent", "8 summaries"), ("missy-consolidator", "2 consolidations")):
        plan = plan_session(session, policy, store=STORE)
        timeline = simulate(session, policy, store=STORE)
        sentence = plan_versus_replay(plan, timeline)
        assert f"{plan.totals.used:,} of 30,000" in sentence or f"{plan.totals.used:,} of 128,000" in sentence
        assert f"its last turn sends {timeline.turns[-1].tokens_sent:,}" in sentence and summaries in sentence
    missy = plan_versus_replay(plan_session(session, "missy", store=STORE), simulate(session, "missy", store=STORE))
    assert missy == "The replay's last turn sends the same 22,792 of 30,000 tokens as the plan of the whole file."
    last = simulate(session, "supyagent", store=STORE).turns[-1].tokens_sent
    assert last < 67_444 // 4  # the replay's own summaries keep its last request far below the whole file's plan
    assert main(["simulate", SUPPORT, "--policy", "supyagent"]) == 0
    out = capsys.readouterr().out
    assert "67,444 of 128,000" in out.splitlines()[-1] and f"sends {last:,}" in out.splitlines()[-1]
    assert main(["simulate", SUPPORT, "--policy", "supyagent", "--json"]) == 0
    versus = json.loads(capsys.readouterr().out)["versus_plan"]
    assert (versus["plan_used"], versus["replay_used"]) == (67444, last) and "8 summaries" in versus["sentence"]


def test_replay_and_plan_agree_under_pair_safety(capsys):
    session = sample(str(SAMPLES / "coding_agent.yaml"))
    options = PlanOptions(pair_safe=True)
    timeline = simulate(session, "categories", store=STORE, options=options)
    last = len(timeline.turns) - 1  # the last model call's request (messages 0..#143 of 146)
    plan = plan_session(timeline.session_at(last), "categories", store=STORE, options=options)
    assert timeline.turns[last].tokens_sent == plan.totals.used
    assert timeline.plan_at(last).totals == plan.totals
    # Per message, the last turn holds the whole file: it is the plan of the whole file.
    whole = plan_session(session, "categories", store=STORE, options=options)
    assert simulate(session, "categories", store=STORE, options=options, per_message=True).turns[-1].tokens_sent == whole.totals.used
    assert main(["simulate", str(SAMPLES / "coding_agent.yaml"), "--policy", "categories", "--pair-safe", "--per-message", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pair_safe"] is True and doc["versus_plan"]["plan_used"] == doc["versus_plan"]["replay_used"] == whole.totals.used


def test_why_answers_for_the_pair_safe_plan():
    session = sample(SUPPORT)
    plan = plan_session(session, "categories", store=STORE, options=PlanOptions(pair_safe=True))
    dropped = next(m for m in plan.messages if "pair-safe" in m.reason)
    counts = STORE.get(session, get_policy("categories").scheme(None, session.model))
    params = get_policy("categories").default_params()
    assert why(session, "categories", params, counts, dropped.index).message.decision is Decision.KEPT
    assert why(session, "categories", params, counts, dropped.index, options=PlanOptions(pair_safe=True)).message == dropped


def test_categories_replay_reports_a_trim_only_when_it_removes_something_new():
    """`ctxviz simulate` printed a trim event on 206 of 230 turns of the support chat."""
    timeline = simulate(sample(SUPPORT), "categories", store=STORE)
    trims = [e for e in timeline.events if e.kind == "trim"]
    assert 0 < len(trims) < 30
    for event in trims:
        step = timeline.step_of(event.turn)  # an event names its step's session index
        now = {m.index for m in timeline.plan_at(step).messages if m.decision is Decision.DROPPED}
        before = {m.index for m in timeline.plan_at(step - 1).messages if m.decision is Decision.DROPPED}
        assert now - before, event
        k = len(now - before)
        assert f"{k:,} more {'message' if k == 1 else 'messages'} removed" in event.message


@pytest.mark.parametrize("path", FILES)
@pytest.mark.parametrize("policy", policy_names())
def test_no_replay_event_repeats_a_steady_state(path, policy):
    timeline = simulate(sample(path), policy, store=STORE)
    turns = timeline.turns
    for previous, turn in zip(turns, turns[1:], strict=False):
        kinds = [e.kind for e in turn.events]
        if "overflow" in kinds:
            assert previous.fits and not turn.fits
        repeated = {(e.kind, e.message) for e in turn.events} & {(e.kind, e.message) for e in previous.events}
        assert not repeated, (turn.index, repeated)


def test_an_emergency_truncation_that_goes_on_is_one_event():
    """supyagent's forced recent messages overflow for as long as the big one is among them: one
    emergency truncation (and one overflow) when it starts, not one per turn."""
    from .builders import session

    s = session(*[("user" if i % 2 else "assistant", f"step {i}") for i in range(4)], ("assistant", "word " * 3000),
                *[("user" if i % 2 else "assistant", f"step {i}") for i in range(5, 12)])
    timeline = simulate(s, "supyagent", {"context_limit": 2000, "response_reserve": 0, "min_recent_messages": 4,
                                         "auto_summarize": False}, store=CountStore())
    over = [t.index for t in timeline.turns if not t.fits]
    # The requests are the user messages #1, #3, ..., #11: the big one is among the 4 most recent in #5 and #7.
    assert over == [5, 7], "the big message overflows while it is one of the 4 most recent"
    assert [(e.turn, e.kind) for e in timeline.events] == [(5, "emergency_truncation"), (5, "overflow")]
    assert timeline.events[1].message == "the context stops fitting (3,038 of 2,000 tokens): OVER by 1,038; history is over its 1,992 allotment by 1,038"


def test_plan_text_and_json_show_the_same_totals_on_every_sample(capsys):
    for path in FILES:
        for policy in policy_names():
            assert main(["plan", path, "--policy", policy, "--json"]) == 0
            totals = json.loads(capsys.readouterr().out)["totals"]
            plan = plan_session(sample(path), policy, store=STORE)
            row = re.split(r"\s{2,}", total_row(plan_summary(plan, sample(path))).strip())
            assert [int(row[1].replace(",", "")), int(row[2].replace(",", ""))] == [totals["budget"], totals["used"]]
            assert row[3].startswith("fits") == totals["fits"]


def test_compare_says_which_side_does_not_fit_and_when_the_scales_differ(capsys):
    """compare printed `fits False` for 7,747 used of 8,000 with no word of why, and set missy's
    len//4 tokens beside supyagent's cl100k tokens as if they were one scale."""
    assert main(["compare", SUPPORT, "--policy", "missy", "--set-a", "total=8000", "--set-b", "total=20000"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "A: does not fit: history is over its 3,200 allotment by 2,117" in lines
    assert not [line for line in lines if line.startswith("B: ") and "fit" in line]
    assert main(["compare", SUPPORT, "--policy", "missy", "--policy", "supyagent"]) == 0
    assert "tokens counted with missy-content/missy for A and supyagent-message/cl100k_base for B" in capsys.readouterr().out
    assert main(["compare", SUPPORT, "--policy", "missy", "--set-a", "total=8000", "--set-b", "total=20000", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["a"]["verdict"].startswith("does not fit: history") and doc["b"]["verdict"] == "fits"


def test_the_cut_line_says_not_sent_and_how(capsys):
    assert main(["plan", SUPPORT, "--policy", "missy-consolidator"]) == 0
    out = capsys.readouterr().out
    assert "cut: 213 messages (48,194 tokens) not sent (summarised), the newest #225: summarised:" in out
    assert re.search(r"^  zone\s+messages\s+tokens\s+sent tokens\s+sent\s+not sent$", out, re.M)


def test_why_answers_keep_a_tool_result_with_its_call_and_say_when_the_context_stays_over() -> None:
    """Two real logs (second review): on aim_matrix_pro (missy, total=15,000) 'total >= 21,648' sent
    the tool result #38 without its call #37, a context the APIs refuse (21,649 sends both); on a
    SWE-agent trajectory already over its budget at total=9,000, 'fresh_tail_count >= 23' was listed
    as a plain answer though the plan it makes does not fit."""
    from ctxviz.engine.explain import why
    from ctxviz.engine.policies import get_policy
    from ctxviz.io.loaders import load_session

    real = Path(__file__).resolve().parent / "data" / "real"
    gem = load_session(real / "gemini_cli" / "aim_matrix_pro.migrated.jsonl")
    pol = get_policy("missy")
    store = CountStore()
    answer = why(gem, "missy", pol.make_params({"total": 15000}), store.get(gem, pol.scheme(None, gem.model)), 38)
    assert [(c.parameter, c.value) for c in answer.changes if c.parameter == "total"] == [("total", 21649)]
    swe = load_session(real / "swe_agent" / "pydicom__pydicom-1458.traj")
    answer = why(swe, "missy", pol.make_params({"total": 9000}), store.get(swe, pol.scheme(None, swe.model)), 3)
    assert "fresh_tail_count" not in [c.parameter for c in answer.changes]
    assert "fresh_tail_count" in [c.parameter for c in answer.over_budget]
