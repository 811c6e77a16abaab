"""The cheap checks `extract` makes before a costly pattern never skip a text the pattern would
match: the anchors stay those the pattern finds (engine/anchors.py)."""

from __future__ import annotations

import glob
import random

from ctxviz.engine.anchors import EXCEPTION_RE, SHA_RE, _hex_run
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
