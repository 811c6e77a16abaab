"""Reason codes: the app's reason column, its filters and `plan --json` read a code per message,
and a code never says "sent" of a message that is not sent (a regular expression over the policy's
sentence put "fits" on 216 dropped rows under langchain-trim, "fresh tail" on dropped rows under
AutoGen's policies)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.filters import matching, parse_query
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy, policy_names
from ctxviz.engine.reason_codes import CODES, GENERIC, code_of
from ctxviz.engine.reasons import DETAILS, short
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(p for p in (ROOT / "sample_sessions").iterdir() if p.suffix in (".yaml", ".json", ".jsonl", ".traj"))
STORE = CountStore()
#: Codes ctxviz's own options give, whatever the policy.
OPTION_CODES = {"pinned", "pushed_out", "unpaired"}


@pytest.mark.parametrize("policy", policy_names(plugins=False))
def test_every_policy_declares_its_vocabulary(policy):
    declared = get_policy(policy).reason_codes
    assert declared and set(declared) <= set(CODES), (policy, set(declared) - set(CODES))


@pytest.mark.parametrize("policy", policy_names(plugins=False))
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_the_reason_never_contradicts_the_decision(policy, sample):
    session = load_session(sample)
    for options in (None, PlanOptions(pair_safe=True, pins=("first-user",)) if any(m.role == "user" for m in session.messages) else None):
        plan = plan_session(session, policy, None, store=STORE, options=options)
        declared = set(get_policy(policy).reason_codes) | OPTION_CODES | set(GENERIC.values())
        for m in plan.messages:
            code = code_of(m.code, m.decision.value)
            assert code.sent == m.sent, (policy, m.index, m.decision, m.code, m.reason)
            assert m.code == "" or m.code in declared, (policy, m.code)
            text = short(m)  # the code's words, or its figure: never a word of another code
            assert text == code.label or (code.code in DETAILS and text.split()[0] in ("after", "missed", "over"))
        assert plan.reason_codes == tuple(code_of(m.code, m.decision.value).code for m in plan.messages)


def test_plan_json_carries_the_reason_code(capsys):
    sample = str(ROOT / "sample_sessions" / "support_chat.yaml")
    assert main(["plan", sample, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    codes = {m["reason_code"] for m in doc["messages"]}
    assert {"after_cut", "missed", "fresh_tail", "fits", "system_prompt"} <= codes
    for m in doc["messages"]:
        assert CODES[m["reason_code"]].sent == (m["decision"] in ("kept", "truncated", "replaced"))


def test_the_filter_language_matches_reason_codes():
    session = load_session(ROOT / "sample_sessions" / "support_chat.yaml")
    plan = plan_session(session, "missy", None, store=STORE)
    texts = [m.text for m in session.messages]
    cut = matching(plan, texts, parse_query("reason:after_cut"))
    assert cut and all(plan.messages[i].reason_code == "after_cut" and not plan.messages[i].sent for i in cut)
    assert set(matching(plan, texts, parse_query("-reason:after_cut"))) == set(range(len(plan.messages))) - set(cut)
