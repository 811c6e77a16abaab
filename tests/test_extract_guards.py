"""The cheap checks `extract` makes before a costly pattern never skip a text the pattern would
match: the anchors stay those the pattern finds (engine/anchors.py)."""

from __future__ import annotations

import glob
import random

from ctxviz.engine.anchor_extract import EXCEPTION_RE, SHA_RE, _hex_run
from ctxviz.io.loaders import load_session

EXCEPTION_WORDS = ("Error", "Exception", "Warning", "Interrupt", "Exit")


def _texts() -> list[str]:
    texts: list[str] = []
    for path in sorted(glob.glob("sample_sessions/*.*")) + sorted(glob.glob("tests/data/real/*/*.*")):
        try:
            session = load_session(path)
        except Exception:  # noqa: BLE001 (README.md, SOURCES.md, scripts: not sessions)
            continue
        texts += [m.text for m in session.messages]
    return texts


def test_the_hex_check_passes_every_text_sha_re_matches() -> None:
    rnd = random.Random(7)
    alphabet = "0123456789abcdefgxyzABCF-_ .\né"
    randoms = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 24))) for _ in range(50_000)]
    matched = 0
    for text in [*_texts(), *randoms]:
        found = SHA_RE.search(text) is not None
        assert not found or _hex_run(text), repr(text[:200])
        if text.isascii():
            assert _hex_run(text) == found, repr(text[:200])  # and skips every ASCII text it cannot match
        matched += found
    assert matched > 100


def test_the_exception_check_passes_every_text_exception_re_matches() -> None:
    for text in _texts():
        if EXCEPTION_RE.search(text) is not None:
            assert any(w in text for w in EXCEPTION_WORDS), repr(text[:200])


def test_a_text_lowering_leaves_unchanged_holds_nothing_the_upper_case_patterns_match() -> None:
    """`extract` skips the patterns and guards that need an upper-case letter (ids, exception
    names, "GH-12", "PR 12", "ERROR", "FAIL", "Traceback") when lowering the text changes nothing:
    none of them can match such a text, whatever its script."""
    from ctxviz.engine.anchor_extract import GH_ISSUE_RE, ID_RE, extract

    rnd = random.Random(23)
    alphabet = ["a", "b", "z", "1", "2", "-", "_", ".", " ", "\n", "é", "ß", "İ", "σ", "A", "Z", "É", "Σ", "ORD-1234", "GH-12", "PR 4",
                "ValueError", "ERROR:", "FAIL", "Traceback", "error: x", "issue 7"]
    randoms = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 16))) for _ in range(50_000)]
    skipped = 0
    for text in [*_texts(), *randoms]:
        if text.lower() != text:
            continue
        skipped += 1
        assert ID_RE.search(text) is None and GH_ISSUE_RE.search(text) is None and EXCEPTION_RE.search(text) is None, repr(text[:200])
        assert not any(w in text for w in ("PR", "MR", "ERROR", "FAIL", "Traceback", *EXCEPTION_WORDS)), repr(text[:200])
    assert skipped > 3_000  # the gate is exercised
    assert extract("see ORD-1234 and gh-12, ValueError") != extract("see ord-1234 and gh-12, valueerror")  # the gate is per text
