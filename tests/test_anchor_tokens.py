"""The token split that matches a text's words against an index's forms (`anchor_growth._token_list`):
an ASCII text is translated as bytes, any other as a string, and both cut where `TOKEN_SPLIT_RE`
cuts, white space included (the ASCII separators \\x1c-\\x1f that `str.split` counts, and Unicode's)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.anchor_growth import _SEPARATORS, _TO_SPACE, TOKEN_SPLIT_RE, _token_list

#: Every separator, every kind of white space, word characters, and characters beyond ASCII.
ALPHABET = [*_SEPARATORS, " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u2028", "\u3000",
            "a", "z", "0", "_", ".", "/", "-", "#", "é", "ß", "\x00", "\x7f"]


def by_string(lowered: str) -> list[str]:
    """The split as `str.translate` gives it (the path every non-ASCII text takes)."""
    tokens = lowered.translate(_TO_SPACE).split()
    if not lowered or lowered[0] in _SEPARATORS or lowered[0].isspace() or lowered[-1] in _SEPARATORS or lowered[-1].isspace():
        tokens.append("")
    return tokens


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join))
def test_bytes_and_string_translation_cut_the_same_tokens(text: str) -> None:
    assert _token_list(text) == by_string(text)
    assert set(_token_list(text)) == set(TOKEN_SPLIT_RE.split(text))


def test_an_ascii_text_with_every_separator() -> None:
    text = "a`b'c\"d(e)f[g]h{i}j<k>l,m;n!o?p=q*r|s:t u\tv\nw\x1cx\x1fy src/a.py."
    assert _token_list(text) == [*"abcdefghijklmnopqrstuvwxy", "src/a.py."]
