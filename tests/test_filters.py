"""The search box's filter language, on a plan whose answers are known by construction."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxviz.engine.filters import matching, parse_query
from ctxviz.engine.planner import plan_session
from ctxviz.io.loaders import load_session

SESSION = load_session(str(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml"))
PLAN = plan_session(SESSION, "missy")
TEXTS = [m.text for m in SESSION.messages]


def rows(query: str) -> list[int]:
    parsed = parse_query(query)
    assert not parsed.error, parsed.error
    return matching(PLAN, TEXTS, parsed)


def test_fields_numbers_words_and_negation_combine() -> None:
    expected = [m.index for m in PLAN.messages if m.role == "user" and m.decision.value == "dropped"]
    assert rows("role:user decision:dropped") == expected and expected
    assert rows("tokens>1000") == [m.index for m in PLAN.messages if m.tokens > 1000]
    assert rows("tokens>=1000 -role:tool") == [m.index for m in PLAN.messages if m.tokens >= 1000 and m.role != "tool"]
    assert rows("sent=0 index<20") == [m.index for m in PLAN.messages if m.sent_tokens == 0 and m.index < 20]
    phrase = "pydantic 2 bump"
    assert rows(f'"{phrase}"') == [i for i, t in enumerate(TEXTS) if phrase in t.lower() or phrase in PLAN.messages[i].reason.lower()]
    assert rows("PYDANTIC role:user") == [m.index for m in PLAN.messages if m.role == "user" and "pydantic" in TEXTS[m.index].lower()]
    assert rows("is:kept") == [m.index for m in PLAN.messages if m.decision.value == "kept"]


@pytest.mark.parametrize(("query", "error"), [
    ("color:red", "unknown field 'color'"),
    ("tokens>lots", "tokens compares with a whole number"),
    ("role>user", "role takes role:VALUE"),
])
def test_a_malformed_term_is_reported(query: str, error: str) -> None:
    assert error in parse_query(query).error


def test_text_with_a_colon_or_a_url_is_searched_as_text() -> None:
    assert not parse_query("https://example.com/x").error
    assert not parse_query('"note: this"').error
