"""The ContextWindowManager (category budgets): policies.md section 3 golden cases and edge cases."""

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.penguin.context_window import format_token_usage, format_token_usage_table
from ctxviz.engine.session import Category, ImagePart, Message, Session, TextPart


class Chars:
    """One token per character, so hand-computed budgets are exact."""

    name = "chars"

    def count(self, text):
        return len(text)


def msg(i, category, n, role="user", ts=None, images=0):
    parts = (TextPart("a" * n),) + tuple(ImagePart(url=f"https://img/{i}/{k}.png") for k in range(images))
    return Message(id=f"m{i}", index=i, role=role, parts=parts, category=category, timestamp=ts or f"2026-01-01T00:{i:02d}:00")


def build(*specs):
    return Session(messages=tuple(msg(i, *spec) for i, spec in enumerate(specs)), source="<t>", format="t")


def plan(session, **params):
    return plan_session(session, "categories", dict(max_tokens=1000, **params), Chars(), CountStore())


def test_budgets_of_the_seed_split():
    p = plan(build((Category.DIALOG, 10)))
    assert p.allocation == {"system": 100, "context": 350, "dialog": 500, "system_output": 50, "error": 50, "internal": 50, "unknown": 50}
    assert p.extra["category_min"]["system"] == 100


def test_derived_golden_case():
    """policies.md 3.7: SYSTEM 50, 10 DIALOG x 60, 2 SYSTEM_OUTPUT x 40 -> 570 tokens."""
    s = build((Category.SYSTEM, 50, "system"), *[(Category.DIALOG, 60)] * 10, *[(Category.SYSTEM_OUTPUT, 40, "tool")] * 2)
    p = plan(s)
    decisions = [m.decision for m in p.messages]
    assert decisions == [Decision.KEPT] + [Decision.DROPPED] * 2 + [Decision.KEPT] * 8 + [Decision.DROPPED, Decision.KEPT]
    assert p.totals.used == 570
    assert [e["category"] for e in p.extra["truncation_events"]] == ["SYSTEM_OUTPUT", "DIALOG"]
    assert p.extra["truncation_events"][1]["tokens_freed"] == 120


def test_category_within_its_max_is_never_trimmed_even_when_total_is_over():
    s = build((Category.SYSTEM, 900, "system"), (Category.DIALOG, 400), (Category.CONTEXT, 300))
    p = plan(s)
    assert all(m.decision is Decision.KEPT for m in p.messages)
    assert not p.totals.fits and p.notes


def test_total_over_raises_excess_to_what_the_total_needs():
    s = build((Category.DIALOG, 300), (Category.DIALOG, 300), (Category.CONTEXT, 340), (Category.SYSTEM_OUTPUT, 40, "tool"))
    # DIALOG 600 > 500: excess 100, but the total 980 is fine -> one message (300) goes.
    p = plan(s)
    assert [m.decision for m in p.messages] == [Decision.DROPPED, Decision.KEPT, Decision.KEPT, Decision.KEPT]
    s = build((Category.DIALOG, 300), (Category.DIALOG, 300), (Category.DIALOG, 10), (Category.CONTEXT, 340), (Category.SYSTEM_OUTPUT, 100, "tool"))
    # total 1050 > 1000: SYSTEM_OUTPUT 100 > 50 -> excess max(50, min(50, 100)) = 50 -> the whole 100 goes (overshoot).
    p = plan(s)
    assert p.messages[4].decision is Decision.DROPPED


def test_oldest_first_by_timestamp_not_position():
    s = Session(messages=(msg(0, Category.DIALOG, 300, ts="2026-01-02"), msg(1, Category.DIALOG, 300, ts="2026-01-01")), source="", format="")
    p = plan(s)
    assert [m.decision for m in p.messages] == [Decision.KEPT, Decision.DROPPED]


def test_older_images_replaced_newest_kept():
    s = build((Category.DIALOG, 10, "user", None, 1), (Category.DIALOG, 10, "user", None, 1), (Category.DIALOG, 10, "user", None, 1))
    p = plan_session(s, "categories", {"max_tokens": 10000}, Chars(), CountStore())  # DIALOG 12,030 > 5,000
    assert [m.decision for m in p.messages] == [Decision.REPLACED, Decision.REPLACED, Decision.KEPT]
    assert p.messages[0].tokens == 4010 and p.messages[0].sent_tokens == 10 + len("[Image removed to save tokens]")
    assert p.totals.used == 2 * 40 + 4010
    later = plan_session(s, "categories", {"max_tokens": 20000, "max_context_images": 2}, Chars(), CountStore())
    assert [m.decision for m in later.messages] == [Decision.REPLACED, Decision.KEPT, Decision.KEPT]


def test_image_placeholder_in_context():
    s = build((Category.CONTEXT, 10, "user", None, 2), (Category.DIALOG, 10, "user", None, 1), (Category.DIALOG, 700))
    p = plan(s)
    first = p.context[0]
    assert {"type": "text", "text": "[Image removed to save tokens]"} in first["content"]
    assert p.messages[0].decision is Decision.REPLACED and p.messages[0].sent_tokens == 10 + 2 * len("[Image removed to save tokens]")


def test_seed_version_loses_other_categories_when_trimming_later_version_keeps_them():
    s = build((Category.DIALOG, 600), (Category.ERROR, 10), (Category.DIALOG, 10))
    assert plan(s).messages[1].decision is Decision.DROPPED
    later = plan(s, trim_other_categories=True)
    assert later.messages[1].decision is Decision.KEPT


def test_no_trimming_when_nothing_is_over():
    s = build((Category.ERROR, 10), (Category.DIALOG, 10), (Category.SYSTEM, 900, "system"))
    p = plan(s)
    assert all(m.decision is Decision.KEPT for m in p.messages)


def test_reports():
    s = build((Category.SYSTEM, 50, "system"), *[(Category.DIALOG, 60)] * 10, *[(Category.SYSTEM_OUTPUT, 40, "tool")] * 2)
    p = plan(s)
    text = format_token_usage(p)
    assert text.splitlines()[:4] == ["Token Usage: 570/1,000 (57.0%)", "Available: 430 tokens", "", "By Category:"]
    assert "  DIALOG: 480/500 (96.0%)" in text
    table = format_token_usage_table(p)
    assert "Token Usage: 570/1,000 (57.0%)" in table.splitlines()[0]
    assert "100-100" in table and "TOTAL" in table and "[" + "\u2588" * 19 + " ] 96.0%" in table


def test_default_counting_charges_4000_per_image():
    s = build((Category.DIALOG, 0, "user", None, 2))
    p = plan_session(s, "categories")
    assert p.messages[0].tokens == 8000 + 0


@pytest.mark.parametrize(("key", "value"), [("max_tokens", "0"), ("dialog_fraction", "1.5")])
def test_validation(key, value):
    with pytest.raises(Exception, match=key):
        get_policy("categories").make_params({key: value})
