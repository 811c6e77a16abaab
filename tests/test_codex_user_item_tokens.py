"""A user message's count as Codex makes it (`approx_token_count` of the item's JSON) is the same
whether the item is written whole (`item_tokens(user_item(text))`, the step-by-step plan's way) or
only the text's JSON string is written (`user_item_tokens`, what the plan in columns counts the
kept user messages and the summary with): on random texts with quotes, backslashes, control
characters and text outside ASCII, where JSON escapes or UTF-8 lengthen what is written."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.policies.codex.history import SUMMARY_PREFIX, item_tokens, user_item, user_item_tokens

from .hypothesis_budget import examples

#: Characters JSON escapes or UTF-8 writes in several bytes, mixed with plain ones. No lone
#: surrogate: no loaded text holds one (the loaders replace them, io/untrusted.py), and both counts
#: refuse one alike (below).
TRICKY = st.text(st.one_of(st.sampled_from('"\\/\n\r\t\b\f\x00\x1f\x7f\u2028\u00e9\u4e2d\U0001f600 ab'),
                           st.characters(exclude_categories=("Cs",))), max_size=300)


@settings(max_examples=examples(400), deadline=None)
@given(text=st.one_of(TRICKY, st.text(max_size=2000)))
def test_counting_the_text_alone_equals_counting_the_item(text: str) -> None:
    assert user_item_tokens(text) == item_tokens(user_item(text))


def test_a_summary_and_an_empty_text_count_as_their_items() -> None:
    for text in ("", f"{SUMMARY_PREFIX}\n## Files Modified\n- (none)", "x" * 4001):
        assert user_item_tokens(text) == item_tokens(user_item(text))


def test_a_lone_surrogate_fails_both_ways_alike() -> None:
    """A JSON file can hold one ("\\ud800"); UTF-8 cannot: both counts refuse it the same way."""
    with pytest.raises(UnicodeEncodeError):
        item_tokens(user_item("a\ud800b"))
    with pytest.raises(UnicodeEncodeError):
        user_item_tokens("a\ud800b")
