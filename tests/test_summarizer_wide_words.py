"""The offline summariser finds the error and decision lines of a text outside ASCII in bytes
(`summarizers._wide_word_lines`: the text's other characters made "?", then lowered), and finds
the lines the reference finds with the case-insensitive pattern, byte for byte: a summary of a log
written with dashes, quotes or accents is unchanged.

The reference is tests/features_reference.py's `_lines_with_reference`; the random texts are
test_summarizer_batch's pieces (every word and its look-alikes, the characters re.I and \\w read
beyond ASCII) with a character outside ASCII put in, and long texts where a word stands across the
head read first.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine import summarizers as S

from .features_reference import _lines_with_reference
from .hypothesis_budget import examples
from .test_summarizer_batch import around_the_head, texts

WIDE = st.sampled_from(["\u2014", "\u00e9", "\u2026", "\u00a0", "\u3000", "\U0001f600", "\ud800", "\u00c9", "\u0391", "\u03c3", "\u2028"])
SEARCHES = ((S._ERROR_STARTS_BYTES, S.ERROR_WORD_RE, S.ERROR_WORDS), (S._DECISION_STARTS_BYTES, S.DECISION_WORD_RE, S.DECISION_WORDS))


BASES = st.one_of(texts, around_the_head())


@st.composite
def wide(draw) -> str:
    """A text outside ASCII without the characters re.I folds to an ASCII letter."""
    base = draw(BASES)
    at = draw(st.integers(0, len(base)))
    out = base[:at] + draw(WIDE) + base[at:]
    return "".join(c for c in out if c not in S._FOLDS_TO_ASCII)


@settings(max_examples=examples(500), deadline=None)
@given(wide(), st.sampled_from([0, 1, 2, 3]))
def test_the_lines_holding_a_word_are_found_in_bytes_as_before(text: str, limit: int) -> None:
    for starts, word, words in SEARCHES:
        assert S._wide_word_lines(text, starts, word, limit) == _lines_with_reference(word, words, text, limit)


def test_every_word_at_every_place_about_the_head_end_is_found_in_bytes_as_before() -> None:
    """Each word, in either case, at each place about the end of the head read first, after text
    outside ASCII, with a word character after it (ASCII or not) or not: the reference's lines."""
    for word in S.ERROR_WORDS + S.DECISION_WORDS + ("fail", "deci", "ERROR", "Plan Is"):
        for start in range(S._HEAD - 2 * S._LONGEST, S._HEAD + 2, 3):
            for before, after in ((" ", ""), ("\u2014", "s"), ("\u00e9", " "), ("\n", "\u00e9"), (" ", " and error\n")):
                text = "\u00e9" * (start - 1) + before + word + after + "\nmore error here\n" + "tail \u2014 " * 100
                for limit in (0, 1, 2):
                    for starts, found, words in SEARCHES:
                        assert S._wide_word_lines(text, starts, found, limit) == _lines_with_reference(found, words, text, limit), (word, start)


def test_a_text_outside_ascii_is_read_in_bytes() -> None:
    """`_extract` takes the bytes reading for such a text: an assistant's decision after a dash,
    a tool's error lines after an accent, found as the reference finds them."""
    text = "Context \u2014 we decided to use sqlite\nno decision\u00e9 here\nplan is fine"
    assert S._wide_word_lines(text, S._DECISION_STARTS_BYTES, S.DECISION_WORD_RE) == ["Context \u2014 we decided to use sqlite", "plan is fine"]
    assert S._wide_word_lines("caf\u00e9 Error: x\n\u00e9error\nFAILED", S._ERROR_STARTS_BYTES, S.ERROR_WORD_RE, 2) == ["caf\u00e9 Error: x", "FAILED"]
