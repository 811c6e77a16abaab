"""Every figure a plan reports agrees with the others, on random sessions and parameters, under
every policy, with and without pair safety (hypothesis)."""

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Plan
from ctxviz.engine.planner import plan_session
from ctxviz.engine.session import Message, Session, Summary, TextPart, ToolCallPart, ToolResultPart, default_category
from ctxviz.io.text_summary import plan_summary

from .test_properties import PARAMS

TEXT = st.text(alphabet="abc def\n{}:", min_size=0, max_size=300)
CALL_IDS = st.sampled_from(["c1", "c2", "c3", "c4"])


@st.composite
def turns(draw):
    """A message spec: plain text, an assistant (or misplaced user) tool call, or a tool result."""
    kind = draw(st.sampled_from(["user", "assistant", "system", "call", "user_call", "result", "result"]))
    text = draw(TEXT)
    if kind == "call":
        return ("assistant", text, draw(CALL_IDS), "")
    if kind == "user_call":
        return ("user", text, draw(CALL_IDS), "")
    if kind == "result":
        return ("tool", text, "", draw(st.sampled_from(["c1", "c2", "c3", "c4", ""])))
    return (kind, text, "", "")


def build(specs, summarized=0, summary_text=""):
    messages = []
    for i, (role, text, call, result) in enumerate(specs):
        parts = (TextPart(text),) if text else ()
        if call:
            parts += (ToolCallPart(call, "shell", '{"cmd": "ls"}'),)
        if role == "tool":
            parts = (ToolResultPart(result, text),)
        messages.append(Message(f"m{i}", i, role, parts, tool_call_id=result, name="shell" if role == "tool" else "",
                                category=default_category(role)))
    summaries = (Summary(text=summary_text, messages_covered=summarized, covers=tuple(f"m{i}" for i in range(summarized))),) if summary_text else ()
    return Session(messages=tuple(messages), source="<test>", format="test", system_prompt="You are terse.", summaries=summaries)


SESSIONS = st.builds(build, st.lists(turns(), min_size=1, max_size=24), st.integers(0, 6), st.sampled_from(["", "Earlier: decided: use X.", "x " * 400]))
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NUMBER = r"(-?[\d,]+)"


def number(text: str) -> int:
    return int(text.replace(",", ""))


def check_figures(plan: Plan) -> None:
    t = plan.totals
    name = plan.policy
    if t.allocation_kind == "division":
        assert sum(plan.allocation.values()) == t.budget, name
    else:
        assert t.allocation_kind == "caps" and all(v <= t.budget for v in plan.allocation.values()), name
    assert set(plan.usage) == set(plan.allocation), name
    assert sum(plan.usage.values()) == t.used, (name, dict(plan.usage), t.used)
    sent = [m for m in plan.messages if m.sent]
    assert t.kept == sum(m.tokens for m in sent), name
    assert t.dropped == sum(m.tokens for m in plan.messages if not m.sent), name
    assert (t.kept_messages, t.dropped_messages) == (len(sent), len(plan.messages) - len(sent)), name
    assert all(m.sent_tokens == 0 for m in plan.messages if not m.sent), name
    if t.fits_test == "total":
        assert t.fits == (t.used <= t.budget), (name, t)
    else:
        assert t.fits_test == "parts"
        assert t.fits == all(plan.usage[p] <= a for p, a in plan.allocation.items()), (name, t, dict(plan.usage), dict(plan.allocation))
    assert "OVER by -" not in plan.fit_verdict()
    assert len(plan.context) == len(plan.context_index)


def check_text_matches_json(plan: Plan, session: Session) -> None:
    """The rows `ctxviz plan` prints and the document `ctxviz plan --json` prints, for one plan."""
    text = plan_summary(plan, session)
    doc = json.loads(json.dumps(plan.to_json()))
    rows = {}
    for line in text.splitlines():
        match = re.match(rf"^  (\w+)\s+{NUMBER}\s+{NUMBER}(?:\s+(.*))?$", line)
        if match and (match.group(1) in doc["allocation"] or match.group(1) == "total") and match.group(1) not in rows:
            rows[match.group(1)] = (number(match.group(2)), number(match.group(3)), match.group(4) or "")
    budget, used, verdict = rows.pop("total")
    assert (budget, used) == (doc["totals"]["budget"], doc["totals"]["used"])
    assert verdict.startswith("fits") == doc["totals"]["fits"], verdict
    assert rows == {part: (doc["allocation"][part], doc["usage"][part], rows[part][2]) for part in doc["allocation"]}
    for part, (allotted, used_part, mark) in rows.items():
        assert (mark == f"over by {used_part - allotted:,}") if used_part > allotted else mark == "", (part, mark)
    cut = re.search(rf"cut: {NUMBER} messages \({NUMBER} tokens\) not sent", text)
    if cut:
        assert (number(cut.group(1)), number(cut.group(2))) == (doc["totals"]["dropped_messages"], doc["totals"]["dropped"])
    else:
        assert doc["totals"]["dropped_messages"] == 0


@pytest.mark.parametrize("name", sorted(PARAMS))
@settings(SETTINGS, max_examples=12)
@given(s=SESSIONS, data=st.data(), pair_safe=st.booleans())
def test_every_figure_agrees_with_every_other(name, s, data, pair_safe):
    """Each registered policy on its own (test_properties checks every policy has strategies)."""
    plan = plan_session(s, name, data.draw(PARAMS[name]), store=CountStore(), options=PlanOptions(pair_safe=pair_safe))
    check_figures(plan)
    check_text_matches_json(plan, s)
    if pair_safe:
        assert plan.orphans == (), (name, plan.orphans)
