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


CLAUDE = load_session(str(Path(__file__).resolve().parent.parent / "sample_sessions" / "claude_code_compaction.jsonl"))
CLAUDE_PLAN = plan_session(CLAUDE, "claude-code")


def claude_rows(query: str) -> list[int]:
    parsed = parse_query(query, CLAUDE_PLAN)
    assert not parsed.error, parsed.error
    return matching(CLAUDE_PLAN, [m.text for m in CLAUDE.messages], parsed)


@pytest.mark.parametrize("query", ["decision:summarised", "decision:summarized", "decision:Summarised", "is:summarised"])
def test_a_decision_is_found_as_the_table_spells_it(query: str) -> None:
    expected = [m.index for m in CLAUDE_PLAN.messages if m.decision.value == "summarized"]
    assert expected and claude_rows(query) == expected


@pytest.mark.parametrize("query", ["category:tool_output", 'category:"Tool output"', "category:system_output", "category:Tool-output"])
def test_a_category_is_found_by_its_label_or_its_name(query: str) -> None:
    expected = [m.index for m in CLAUDE_PLAN.messages if m.category == "system_output"]
    assert expected and claude_rows(query) == expected


@pytest.mark.parametrize("query", ['zone:"fresh tail"', "zone:fresh_tail", "zone:Fresh-Tail", '-zone:"fresh tail"'])
def test_a_zone_is_found_with_spaces_or_underscores(query: str) -> None:
    tail = [m.index for m in PLAN.messages if m.zone == "fresh_tail"]
    parsed = parse_query(query, PLAN)
    assert tail and not parsed.error, parsed.error
    expected = tail if not query.startswith("-") else [m.index for m in PLAN.messages if m.zone != "fresh_tail"]
    assert matching(PLAN, TEXTS, parsed) == expected


def test_a_summarised_zone_is_found_as_shown() -> None:
    assert claude_rows("zone:summarised") == [m.index for m in CLAUDE_PLAN.messages if m.zone == "summarized"]


@pytest.mark.parametrize(("query", "error"), [
    ("decision:foo", "decision:foo: no decision is called 'foo' (kept, dropped, summarised, truncated, replaced)"),
    ("is:sent", "is:sent: no decision is called 'sent'"),
    ("category:bar", "category:bar: no category is called 'bar' (system, context, dialog, tool output, error, internal, unknown)"),
    ('zone:"fresh tail"', "no zone is called 'fresh tail' in this plan (summarised, context)"),
    ("decision:", "decision: which decision? (kept,"),
])
def test_a_value_no_message_can_hold_is_said(query: str, error: str) -> None:
    assert error in parse_query(query, CLAUDE_PLAN).error


def test_every_category_label_the_app_shows_names_its_category() -> None:
    from ctxviz.gui.theme import CATEGORY_LABELS

    for name, label in CATEGORY_LABELS.items():
        parsed = parse_query(f'category:"{label}"')
        assert not parsed.error and parsed.terms[0].value == name, (label, parsed)


def test_a_phrase_of_the_reason_column_finds_its_rows() -> None:
    """The table's reason column shows a short label ("after cut #145", "missed by 4"), not the sentence."""
    from ctxviz.engine.reasons import short

    for phrase in ("after cut", "missed by", "fresh tail"):
        expected = [m.index for m in PLAN.messages if phrase in short(m)]
        assert expected and set(expected) <= set(rows(f'"{phrase}"')), phrase
    since = [m.index for m in CLAUDE_PLAN.messages if "since compaction" in short(m)]
    assert since and set(since) <= set(claude_rows('"since compaction"'))


@pytest.mark.parametrize("word", ["summarised", "summarized"])
def test_either_spelling_of_summarised_finds_the_reasons_that_say_it(word: str) -> None:
    from ctxviz.engine.reasons import short

    expected = [m.index for m in CLAUDE_PLAN.messages if "summari" in f"{short(m)} {m.reason}".lower()]
    assert expected and set(expected) <= set(claude_rows(word))


def test_role_reads_the_role_column_as_shown_given_the_voices() -> None:
    from ctxviz.engine.voices import voices_of

    voices = voices_of(SESSION)
    harness = [i for i, m in enumerate(PLAN.messages) if m.role == "user" and voices[i] == "harness"]
    assert harness
    assert matching(PLAN, TEXTS, parse_query("role:harness", PLAN), voices=voices) == harness
    users = matching(PLAN, TEXTS, parse_query("role:user", PLAN), voices=voices)
    assert users == [i for i, m in enumerate(PLAN.messages) if m.role == "user" and i not in harness]
    assert "role:robot: no role is called 'robot' (system, user, assistant, tool, harness, observation)" in parse_query("role:robot").error
