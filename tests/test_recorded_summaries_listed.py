"""Recorded summaries never vanish from a plan, and a new summary is never read as one of the
file's: support_chat.yaml records 3 summaries of conversation before the file.

- missy-consolidator absorbs them into its new consolidation: each is listed as summarised into it,
  and the new one comes after them (it was listed as index 0, so `plan --json` gave it recorded
  summary #1's 38 covers and `plan` printed it as "summary #1");
- categories does not send summaries covering nothing of the file: it now says so for each (the
  plan listed none);
- simulate's plan-versus-replay sentence said the plan ran "with the 3 summaries recorded in the
  file" where it sent none of them."""

import json
from pathlib import Path

from ctxviz.cli import main
from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.missy import consolidator
from ctxviz.io.loaders import load_session

SUPPORT = Path(__file__).resolve().parents[1] / "sample_sessions" / "support_chat.yaml"


def test_a_new_consolidation_lists_the_recorded_ones_it_absorbs_and_comes_after_them():
    session = load_session(SUPPORT)
    assert len(session.summaries) == 3
    store = CountStore()
    columns = plan_session(session, "missy-consolidator", store=store)
    counts = store.get(session, get_policy("missy-consolidator").scheme(None, session.model))
    records = consolidator.plan_records(session, consolidator.ConsolidatorSettings(), counts)
    for plan in (columns, records):  # (the plan in columns and the step-by-step reference)
        assert [(s.index, s.decision.value) for s in plan.summaries] == [(0, "summarized"), (1, "summarized"), (2, "summarized"), (3, "kept")]
        assert all("absorbed by the new consolidation" in s.reason for s in plan.summaries[:3])


def test_plan_json_gives_the_new_consolidation_the_messages_it_replaces(capsys):
    assert main(["plan", str(SUPPORT), "--policy", "missy-consolidator", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    new = doc["summaries"][-1]
    assert new["reason"] == "kept: replaces the 213 older messages"
    # The 213 messages of the file it replaces (they were recorded summary #1's 38 ids, none in the file).
    covered_in_file = [c for c in new["covers"] if c["index"] is not None]
    assert len(covered_in_file) >= 213 and covered_in_file[0] == {"index": 1, "id": "m1"}


def test_plan_names_the_new_summary_apart_from_the_recorded_ones(capsys):
    assert main(["plan", str(SUPPORT), "--policy", "missy-consolidator"]) == 0
    out = capsys.readouterr().out
    assert "summary #1: summarised: absorbed by the new consolidation" in out
    assert "new summary: kept: replaces the 213 older messages" in out and "summary #4" not in out


def test_categories_lists_recorded_summaries_it_does_not_send(capsys):
    assert main(["plan", str(SUPPORT), "--policy", "categories"]) == 0
    out = capsys.readouterr().out
    assert out.count("dropped: the ContextWindowManager sends only the summaries that cover messages of this file") == 3


def test_simulate_says_which_recorded_summaries_the_plan_sends(capsys):
    assert main(["simulate", str(SUPPORT), "--policy", "missy-consolidator"]) == 0
    out = capsys.readouterr().out
    assert "with none of the 3 summaries recorded in the file sent, and a summary of its own" in out
    assert "with the 3 summaries recorded in the file (" not in out

