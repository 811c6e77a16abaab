"""The offline summariser's shortcuts (engine/summarizers.py) find exactly what its plain regular
expressions find: the error and decision lines, the paths, the URLs, the clipped texts and the
distinct items in first-seen order, on texts built from the words they look for."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine import summarizers as S

WORDS = ["error", "Error", "failed", "failure", "traceback", "exception", "errors", "decided", "we'll use", "plan is", "chose",
         "src/a.py", "x.yaml", "./b.json", "a.pyc", "http://x.io/p", "https://a.b", "ok", "done", "-", "_", "é", "ſ", "K"]
TEXTS = st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from([" ", "  ", "\n", "\r\n", "\t", "\n\n", ".", "/"]), st.text(max_size=6)),
                 max_size=60).map("".join)
ERROR_RE = re.compile(r"^.*\b(?:error|exception|traceback|failed|failure)\b.*$", re.I | re.M)
DECISION_RE = re.compile(r"^.*\b(?:decided|decision|we'll use|will use|chose|going with|let's use|plan is)\b.*$", re.I | re.M)


def plain_clip(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def plain_unique(items: list[str], limit: int) -> list[str]:
    out: list[str] = []
    for item in items:
        if item and item not in out:
            out.append(item)
    return out[-limit:]


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, limit=st.sampled_from([None, 1, 2]), width=st.sampled_from([1, 3, 10, 80]))
def test_the_lines_and_clips_are_the_plain_regular_expressions(text, limit, width) -> None:
    assert S._lines_with(S.ERROR_WORD_RE, text, limit) == ERROR_RE.findall(text)[:limit]
    assert S._lines_with(S.DECISION_WORD_RE, text, limit) == DECISION_RE.findall(text)[:limit]
    assert S._clip(text, width) == plain_clip(text, width)
    if not S.PATH_END_RE.search(text):
        assert S.PATH_RE.findall(text) == []
    if "http" not in text:
        assert S.URL_RE.findall(text) == []


@given(items=st.lists(st.sampled_from(["", "a", "b", "c", "d", "e"]), max_size=20), limit=st.integers(1, 4))
def test_distinct_items_keep_the_order_each_first_appears(items, limit) -> None:
    assert S._unique(items, limit) == plain_unique(items, limit)
