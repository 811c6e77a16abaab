"""The offline summariser's fast reading of each message (`summarizers._extract`: the words searched
by their starts, a long text lowered a head first, most clips made without splitting) and its
reading of runs (`features_of`) give what the reading before them gave, byte for byte: every
summary ctxviz writes offline, and so every replayed compaction's size, is unchanged.

The reference is that reading copied verbatim (tests/features_reference.py). It is held to it on
every message of the real logs in tests/data/real, and on random messages: the words looked for in
every case and in words of their own, the characters re.I and str.split read differently from
their ASCII reading (the dotless and dotted I, the Kelvin sign, the long s, the line separators),
texts long enough that a word stands across the head `_word_lines` lowers first, empty and blank
texts, URLs and paths.
"""

from __future__ import annotations

import gc
import re
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine import summarizers as S
from ctxviz.engine.session import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from ctxviz.io.loaders import load_session

from .features_reference import _clip_reference, _extract_reference, _lines_with_reference
from .hypothesis_budget import examples

REAL = Path(__file__).parent / "data" / "real"

PIECES = ["error", "Error", "ERROR", "errors", "xerror", "error_1", "_error", "FAILED", "failed", "failure", "failing", "fail", "exception",
          "Exception:", "exceptions", "Traceback", "traceback", "TRACEBAC\u212a", "exceptıon", "Faİled", "decided", "decision", "decide",
          "deci", "we'll use", "We'll Use", "will use", "chose", "chosen", "going with", "let's use", "plan is", "PLAN IS", "planis",
          "ok", "done", "success", '{"ok": true}', "http://a.io/x", "https://b.org/p?q=1", "http", "src/app.py", "notes.md", "a.PY",
          "\u0131", "\u0130", "\u212a", "\u017f", " ", "  ", "\n", "\n\n", "\r", "\r\n", "\t", "\x0b", "\x0c", "\u2028", "\u2029", "\x1c", "\x1f",
          "\x85", "\u00a0", "\u3000", "\x00", "\x1b[31m", "word", "a", "é", "-", "_", ".", "'", '"', "[", "]", "…"]
texts = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=60).map("".join),
    st.tuples(st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map("".join), st.integers(2, 80)).map(lambda t: t[0] * t[1]),
    st.text(max_size=300),
    st.just(""),
)


@st.composite
def around_the_head(draw) -> str:
    """A long ASCII text with a word starting about where the head lowered first ends (standing
    across it, ending on it or cut by it), followed by a word character or not, then more."""
    filler = draw(st.sampled_from(["x", "word ", "a b\n", "_", "ERR"]))
    at = S._HEAD - draw(st.integers(-2, 2 * S._LONGEST))
    head = (filler * (at // len(filler) + 1))[:at - 1] + draw(st.sampled_from([" ", "\n", "x"]))
    word = draw(st.sampled_from(["error", "Error", "exception", "traceback", "failed", "failure", "fail", "decided", "going with", "plan is"]))
    after = draw(st.sampled_from(["", "s", "x", "_", " ", "\n", "!"]))
    tail = draw(st.lists(st.sampled_from(["word ", "\n", "error", "y", "decision"]), max_size=30))
    return head + word + after + "".join(tail) * draw(st.integers(1, 40))


@st.composite
def messages(draw, text=texts) -> Message:
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    parts: list = [TextPart(draw(text))]
    if role == "tool":
        parts = [ToolResultPart("c1", draw(text))] + ([TextPart(draw(text))] if draw(st.booleans()) else [])
    if role == "assistant" and draw(st.booleans()):
        parts.append(ToolCallPart("c1", draw(st.sampled_from(["write_file", "read", "Edit"])), draw(text)))
    if role == "user" and draw(st.booleans()):  # several text parts, some empty, or a thinking part
        parts += [draw(st.sampled_from([TextPart, ThinkingPart]))(draw(text)) for _ in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()) and role != "tool":  # a message of one call (an assistant's, or a user's: its action is the call)
        parts = [ToolCallPart("c2", draw(st.sampled_from(["bash", "apply_patch"])), draw(text))]
    return Message(id="m", index=0, role=role, parts=tuple(parts), name=draw(st.sampled_from(["", "bash"])))


def real_sessions() -> list[tuple[str, list[Message]]]:
    out = []
    for path in sorted(REAL.glob("*/*")):
        if path.suffix not in (".json", ".jsonl"):
            continue
        try:
            out.append((path.name, list(load_session(path).messages)))
        except Exception:  # noqa: BLE001 (a file no loader reads holds no message to compare)
            continue
    return out


def test_every_real_message_is_read_as_before() -> None:
    sessions = real_sessions()
    assert sum(len(ms) for _, ms in sessions) > 2000  # the logs are there and were read
    for name, ms in sessions:
        S._features.cache_clear()  # type: ignore[attr-defined]
        for m in ms:
            assert S._extract(m) == _extract_reference(m), (name, m.id)
        assert S.features_of(ms) == [_extract_reference(m) for m in ms], name


@settings(max_examples=examples(500), deadline=None)
@given(messages())
def test_each_message_is_read_as_before(m: Message) -> None:
    assert S._extract(m) == _extract_reference(m)


@settings(max_examples=examples(300), deadline=None)
@given(messages(text=around_the_head()))
def test_a_word_across_the_lowered_head_is_read_as_before(m: Message) -> None:
    assert S._extract(m) == _extract_reference(m)


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(texts, around_the_head()), st.sampled_from([0, 1, 2, 3]))
def test_the_lines_holding_a_word_are_found_as_before(text: str, limit: int) -> None:
    for starts, pattern, word, words in ((S._ERROR_STARTS, S._ERROR_LOWER_RE, S.ERROR_WORD_RE, S.ERROR_WORDS),
                                         (S._DECISION_STARTS, S._DECISION_LOWER_RE, S.DECISION_WORD_RE, S.DECISION_WORDS)):
        expected = _lines_with_reference(word, words, text, limit)
        found = S._lines_with(word, text, limit) if S._folds(text) else S._word_lines(text, starts, pattern, limit)
        assert found == expected


def test_every_word_at_every_place_about_the_head_end_is_found_as_before() -> None:
    """Each word starting at each place from well before the lowered head's end to past it, with
    a word character after it or not, on a line of its own or not: the lines found are the
    reference's (a word the head cuts, or ends, is read in the whole text)."""
    for word in S.ERROR_WORDS + S.DECISION_WORDS + ("fail", "deci", "Error"):
        for start in range(S._HEAD - 2 * S._LONGEST, S._HEAD + 2):
            for before, after in ((" ", ""), (" ", "s"), ("\n", "_"), ("x", " "), (" ", " and error\n")):
                text = "w" * (start - 1) + before + word + after + "\nmore error here\n" + "tail " * 300
                for limit in (1, 2):
                    for starts, pattern, found, words in ((S._ERROR_STARTS, S._ERROR_LOWER_RE, S.ERROR_WORD_RE, S.ERROR_WORDS),
                                                          (S._DECISION_STARTS, S._DECISION_LOWER_RE, S.DECISION_WORD_RE, S.DECISION_WORDS)):
                        assert S._word_lines(text, starts, pattern, limit) == _lines_with_reference(found, words, text, limit), (word, start, after)


@settings(max_examples=examples(500), deadline=None)
@given(st.one_of(texts, around_the_head()), st.sampled_from([1, 2, 3, 80, 120, 160]))
def test_a_text_is_clipped_as_before(text: str, width: int) -> None:
    assert S._clip(text, width) == _clip_reference(text, width)


PATH_PIECES = st.sampled_from(["src/a.py", "x.yaml", "./b.json", "a.pyc", "c.PY", "d.md5", ".env", "e.toml.bak", "f.pyi", "g.py.md",
                                "/", ".", "-", "_", " ", "\"", "é", "ü/ö.md", "\n", "{\"path\": \"", "aaaa", "a/" * 40, "x" * 300])


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.one_of(PATH_PIECES, st.text(max_size=5)), max_size=30).map("".join))
def test_paths_are_found_as_findall_finds_them(arguments: str) -> None:
    assert S._paths(arguments) == S.PATH_RE.findall(arguments)


def test_every_real_calls_paths_are_found_as_findall_finds_them() -> None:
    calls = [p for _, ms in real_sessions() for m in ms for p in m.parts if isinstance(p, ToolCallPart)]
    assert sum(1 for c in calls if S.PATH_RE.findall(c.arguments)) > 50
    for call in calls:
        assert S._paths(call.arguments) == S.PATH_RE.findall(call.arguments)


def test_each_word_begins_with_one_of_the_starts_searched() -> None:
    """`_word_lines` finds a word by the start it begins with: every word has one."""
    for words, starts in ((S.ERROR_WORDS, S._ERROR_STARTS), (S.DECISION_WORDS, S._DECISION_STARTS)):
        assert all(any(w.startswith(s) for s, _ in starts) for w in words)
        assert all(reach == len(s) - 1 for s, reach in starts)
    assert S._LONGEST == max(len(w) for w in S.ERROR_WORDS + S.DECISION_WORDS)


def test_lowering_keeps_each_place_and_whether_a_word_character_stands_there() -> None:
    """`_word_lines` reads a text without `_FOLDS_TO_ASCII` in its lower case: sound only if
    `str.lower` maps every other character to one character, a word character (\\w) exactly
    when it was one. Checked over every code point."""
    word = re.compile(r"\w")
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        if c in S._FOLDS_TO_ASCII:
            continue
        lower = c.lower()
        assert len(lower) == 1 and bool(word.fullmatch(lower)) == bool(word.fullmatch(c)), hex(cp)


def test_only_the_space_is_whitespace_and_printable() -> None:
    """`_clip` reads a printable head with single spaces as flattened already: sound only if every
    other character `str.split` splits at is not printable. Checked over every code point."""
    both = {chr(cp) for cp in range(sys.maxunicode + 1) if chr(cp).isspace() and chr(cp).isprintable()}
    assert both == {" "}


def test_a_run_is_read_as_each_message_and_kept() -> None:
    """`features_of` gives each message's `_features`, the kept ones as kept (the same objects),
    and keeps the ones it read while their messages live."""
    S._features.cache_clear()  # type: ignore[attr-defined]
    ms = [Message(id=f"m{i}", index=i, role=role, parts=(TextPart(text),))
          for i, (role, text) in enumerate([("user", "fix src/a.py"), ("assistant", "We decided to use sqlite"),
                                            ("tool", "Error: disk full\nsee https://x.io/e"), ("user", "")])]
    first = S._features(ms[1])
    run = S.features_of(ms)
    assert run == [_extract_reference(m) for m in ms]
    assert run[1] is first and all(S._features(m) is f for m, f in zip(ms, run, strict=True))
    before = len(S._FEATURES)
    del ms, run, first
    gc.collect()
    assert len(S._FEATURES) == before - 4
