"""A grown index looks for its new words in the old messages by one scan per group of words that
hold a shorter one (`src/a.py`, `a.py`, `a.py.`, `a.py-` through `a.py`), and takes the old
messages' token hits word by word (`_Growth.holders`). Both give what splitting every old text into
tokens gives, and the grown index says what an index read from scratch says."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine import anchor_growth
from ctxviz.engine.anchor_cache import MessageAnchors
from ctxviz.engine.anchor_growth import _bases, _Lowered, _tokens
from ctxviz.engine.anchors import build_index
from ctxviz.engine.session import Message, Session, TextPart, default_category
from ctxviz.io.loaders import load_session

REAL = Path(__file__).parent / "data" / "real"
#: Pieces of text and words that overlap: a path, its tails, its forms with a trailing dot or dash.
PIECES = ["src/", "a.py", "x/", ".", "-", " ", "\n", "b", "a", "/", "`", "(", "ab", "A.PY", "é", " src/a.py ", " x/src/a.py.", " a.py- ", " b.",
          " x/a.py "]
WORDS = ["a.py", "src/a.py", "x/src/a.py", "a.py.", "a.py-", "b", "b.", "b-", "ab", "a", "a/a", "a/a/a", "src/a.py.", "py", "a.py--",
         "a.py.-", "é", "é.", "x/a.py"]


def by_tokens(texts: list[str], words: list[str]) -> dict[int, set[str]]:
    """What `_Lowered.find` must give: each text's words among its tokens (the token split itself)."""
    out: dict[int, set[str]] = {}
    for p, text in enumerate(texts):
        held = _tokens(text) & set(words)
        held.discard("")
        if held:
            out[p] = held
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=30).map("".join), min_size=1, max_size=6),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=12), st.sampled_from([4_000_000, 25]))
def test_words_found_through_a_shorter_word_are_the_tokens_each_text_holds(texts, words, piece_chars) -> None:  # type: ignore[no-untyped-def]
    lowered = [t.lower() for t in texts]
    saved, anchor_growth.PIECE_CHARS = anchor_growth.PIECE_CHARS, piece_chars  # several pieces, and one
    try:
        search = _Lowered()
        for p, text in enumerate(lowered):
            search.add(p, text)
        assert search.find(words) == by_tokens(lowered, words)
    finally:
        anchor_growth.PIECE_CHARS = saved


def test_a_path_its_tails_and_forms_are_searched_through_one_word() -> None:
    groups = _bases(["src/grown/module_0.py", "grown/module_0.py", "module_0.py", "module_0.py.", "module_0.py-", "ord-9000", "ord-9000."])
    assert groups == {"module_0.py": [("src/grown/module_0.py", 10), ("grown/module_0.py", 6), ("module_0.py", 0), ("module_0.py.", 0),
                                      ("module_0.py-", 0)],
                      "ord-9000": [("ord-9000", 0), ("ord-9000.", 0)]}


def _appended(s: Session, texts: list[tuple[str, str]]) -> Session:
    start = len(s.messages)
    new = tuple(Message(id=f"grown{start + i}", index=start + i, role=role, parts=(TextPart(text),), category=default_category(role))
                for i, (role, text) in enumerate(texts))
    return dataclasses.replace(s, messages=s.messages + new)


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert a.anchors == b.anchors and a.by_message == b.by_message
    assert a.forms == b.forms and a.by_key == b.by_key and a.phrases == b.phrases


@pytest.mark.parametrize("log", [REAL / "claude_code" / "spotter-4d5611e5.jsonl", sorted((REAL / "codex").glob("codemie-rollout-*.jsonl"))[0],
                                 REAL / "swe_agent" / "pydicom__pydicom-1458.traj"], ids=lambda p: p.stem[:30])
def test_a_real_session_grown_by_calls_naming_its_files_anew_equals_one_read_from_scratch(log: Path) -> None:
    """A real session cut short, then grown call by call with messages that name its own files by
    their tails, with a trailing dot or dash, inside new longer paths, and new files and ids: every
    grown index (built from the one before) says what an index read from scratch says."""
    full = load_session(str(log))
    rnd = random.Random(log.stem)
    index = build_index(full, MessageAnchors())
    paths = [a.value for a in index.anchors if a.kind == "path"] or ["src/app.py"]
    s = dataclasses.replace(full, messages=full.messages[: len(full.messages) * 2 // 3])
    previous = build_index(s, MessageAnchors())
    # Words the old messages hold that no anchor names yet: quoted in a new message, they become one.
    said = sorted({w for m in s.messages for w in _tokens(m.text.lower()) if 3 < len(w) < 40 and w.isidentifier()} - set(index.forms))
    for call in range(6):
        old = rnd.choice(paths)
        tail = old.rstrip("/").rsplit("/", 1)[-1]
        word = rnd.choice(said) if said else "nothing_said"
        texts = [("user", f"Now look at {tail}. Then {old}- and vendor/{old.lstrip('./~')} too; open new/module_{call}.py and ORD-{700 + call}."),
                 ("assistant", f"Reading `{tail}`, `{word}` and new/module_{call}.py.\n{old}: line 3"),
                 ("tool", f"{old}:12: error: {tail} failed\nnew/module_{call}.py- ok")]
        s = _appended(s, texts[: rnd.randint(1, 3)])
        grown = build_index(s, MessageAnchors(), previous=previous)
        assert previous._growth is None  # carried over, not read again
        _same(grown, build_index(s, MessageAnchors()))
        previous = grown


def test_texts_added_at_once_are_the_pieces_added_one_by_one() -> None:
    """`_Lowered.extend` (the first growth adds every old text) builds the pieces `add` builds, text
    by text, whatever is already there, and the same words are found in them."""
    rnd = random.Random(3)
    saved = anchor_growth.PIECE_CHARS
    try:
        for _ in range(500):
            anchor_growth.PIECE_CHARS = rnd.choice([5, 20, 100, 4_000_000])
            texts = [(p, " ".join(rnd.choice(["a.py", "src/a.py", "b", "x"]) for _ in range(rnd.randint(0, 6)))) for p in range(rnd.randint(0, 20))]
            one, many = _Lowered(), _Lowered()
            k = rnd.randint(0, len(texts))
            for p, text in texts[:k]:
                one.add(p, text)
                many.add(p, text)
            if k and rnd.random() < 0.5:  # pieces joined before the rest comes
                assert one.find(["a.py"]) == many.find(["a.py"])
            for p, text in texts[k:]:
                one.add(p, text)
            many.extend(texts[k:])
            assert (many.pieces, many.starts, many.owners, many.size) == (one.pieces, one.starts, one.owners, one.size)
            assert many.find(["a.py", "src/a.py", "b"]) == one.find(["a.py", "src/a.py", "b"])
    finally:
        anchor_growth.PIECE_CHARS = saved
