"""Tokens that name an anchor are found by `str.translate` + `str.split` (engine/anchors.py
`_token_list`) instead of `TOKEN_SPLIT_RE.split`: the same tokens, or retention would count other
messages as naming an anchor."""

from __future__ import annotations

import glob
import random

from ctxviz.engine.anchor_growth import _SEPARATORS, TOKEN_SPLIT_RE, _token_list, _tokens
from ctxviz.io.loaders import load_session


def test_every_code_point_separates_tokens_exactly_when_the_pattern_says_so() -> None:
    for code in range(0x110000):
        c = chr(code)
        assert (TOKEN_SPLIT_RE.fullmatch(c) is not None) == (c in _SEPARATORS or c.isspace()), hex(code)


def test_random_texts_give_the_patterns_tokens() -> None:
    alphabet = list("ab/.-_`'\"()[]{}<>,;!?=*|:# \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000\u200béİ")
    rnd = random.Random(22)
    for _ in range(20_000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 14)))
        assert _tokens(text) == set(TOKEN_SPLIT_RE.split(text)), repr(text)
        assert set(_token_list(text)) == set(TOKEN_SPLIT_RE.split(text)), repr(text)


def test_real_logs_and_samples_give_the_patterns_tokens() -> None:
    files = sorted(glob.glob("sample_sessions/*.*")) + sorted(glob.glob("tests/data/real/*/*.*"))
    checked = 0
    for path in files:
        try:
            session = load_session(path)
        except Exception:  # noqa: BLE001 (README.md, SOURCES.md, scripts: not sessions)
            continue
        for m in session.messages:
            lowered = m.text.lower()
            assert _tokens(lowered) == set(TOKEN_SPLIT_RE.split(lowered)), (path, m.index)
            checked += 1
    assert checked > 2_000
