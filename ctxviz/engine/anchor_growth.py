"""Which messages name an anchor as a token, and what an index keeps so that the index of its
session grown by appended messages reads only the new ones (engine/anchors.py builds the index).

A text's tokens are what `TOKEN_SPLIT_RE` cuts it into, lowered (`_token_list`); a word new to a
grown session is looked for in every old text by one C-speed search per piece of their joined lower
case (`_Lowered`), words that hold a shorter one through it (`_bases`).
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Any

#: What separates tokens when a text is searched for anchors it names in any form (code included).
TOKEN_SPLIT_RE = re.compile(r"[\s`'\"()\[\]{}<>,;!?=*|:]+")


#: What separates tokens, one character at a time (`TOKEN_SPLIT_RE` without its `\\s`: white space
#: is asked of `str.isspace`, as the pattern's `\\s` does).
_SEPARATORS = frozenset("`'\"()[]{}<>,;!?=*|:")
#: Every separator but white space made a space, so that `str.split()` (which splits at what
#: `str.isspace` calls white space, as `\\s` does) cuts where `TOKEN_SPLIT_RE` does.
_TO_SPACE = str.maketrans(dict.fromkeys(_SEPARATORS, " "))
#: `_TO_SPACE` for the bytes of an ASCII text: `bytes.translate` reads a 256-byte table where
#: `str.translate` looks each character up in a dict (8.7 MB of text: about 40 ms -> 10 ms).
_TO_SPACE_BYTES = bytes(ord(" ") if chr(c) in _SEPARATORS else c for c in range(256))


def _token_list(lowered: str) -> list[str]:
    """The tokens `TOKEN_SPLIT_RE.split(lowered)` gives, as a list that may repeat one (intersect
    it with the words wanted: cheaper than a set of every token). About twice as fast as the
    pattern: `str.translate` and `str.split` run in C without the regular expression engine (an
    ASCII text is translated as bytes and read back: the same string). The pattern's split also
    yields "" when the text is empty or starts or ends with a separator."""
    if lowered.isascii():
        spaced = lowered.encode("ascii").translate(_TO_SPACE_BYTES).decode("ascii")
    else:
        spaced = lowered.translate(_TO_SPACE)
    tokens = spaced.split()
    if not lowered or lowered[0] in _SEPARATORS or lowered[0].isspace() or lowered[-1] in _SEPARATORS or lowered[-1].isspace():
        tokens.append("")
    return tokens


def _tokens(lowered: str) -> set[str]:
    return set(_token_list(lowered))


#: Characters of lowered text per piece of a grown session's search corpus (`_Lowered`): one
#: `str.find` over a piece holds the interpreter for about a millisecond.
PIECE_CHARS = 4_000_000


def _bases(words: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
    """The words grouped by a shorter word each holds, among them: word -> the one it is searched
    through (`w.` and `w-` through `w`, a path through its tail after a slash), and where in the word
    that one starts (its first place: every place the word is found holds it there). A word with
    none is its own group."""
    known = set(words)
    base_of: dict[str, str] = {}

    def base(w: str) -> str:
        found = base_of.get(w)
        if found is None:
            found = w
            if len(w) > 1 and w[-1] in ".-" and w[:-1] in known:
                found = base(w[:-1])
            else:
                at = w.find("/")
                while at >= 0:
                    if w[at + 1:] in known:
                        found = base(w[at + 1:])
                        break
                    at = w.find("/", at + 1)
            base_of[w] = found
        return found

    groups: dict[str, list[tuple[str, int]]] = {}
    for w in dict.fromkeys(words):
        b = base(w)
        groups.setdefault(b, []).append((w, w.find(b)))
    return groups


class _Lowered:
    """A session's message texts in lower case, joined in pieces, so that a word new to a grown
    session is looked for in every old text by one C-speed search per piece instead of lowering
    each text again. Built the first time a grown session needs it; texts are added as it grows."""

    def __init__(self) -> None:
        self.pieces: list[list[str]] = []  # each piece's texts, joined when searched
        self.joined: list[str | None] = []
        self.starts: list[list[int]] = []  # where each text starts in its joined piece
        self.owners: list[list[int]] = []  # the message position of each text
        self.size = 0  # characters in the last piece

    def _open(self) -> None:
        """Start a new piece."""
        self.pieces.append([])
        self.joined.append(None)
        self.starts.append([])
        self.owners.append([])
        self.size = 0

    def add(self, position: int, lowered: str) -> None:
        if not self.pieces or self.size > PIECE_CHARS:
            self._open()
        self.pieces[-1].append(lowered)
        self.starts[-1].append(self.size)
        self.owners[-1].append(position)
        self.joined[-1] = None
        self.size += len(lowered) + 1

    def extend(self, texts: Iterable[tuple[int, str]]) -> None:
        """`add` of each (position, lowered text) in turn, without a call per text: the first growth
        of a 10,000-message session adds them all."""
        texts = list(texts)
        if not texts:
            return
        if not self.pieces or self.size > PIECE_CHARS:
            self._open()
        piece, starts, owners, size = self.pieces[-1], self.starts[-1], self.owners[-1], self.size
        self.joined[-1] = None
        for position, lowered in texts:
            if size > PIECE_CHARS:
                self._open()
                piece, starts, owners, size = self.pieces[-1], self.starts[-1], self.owners[-1], 0
            piece.append(lowered)
            starts.append(size)
            owners.append(position)
            size += len(lowered) + 1
        self.size = size

    def find(self, words: Iterable[str]) -> dict[int, set[str]]:
        """Message position -> the words it holds as tokens (as `_tokens(lowered text)` would find
        them). The interpreter is let go between pieces (a worker must not starve the window).

        Words that hold a shorter one (`src/a.py`, `a.py`, `a.py.`, `a.py-`: the forms and tails
        of one new file) are found through it (`_bases`): one scan of each piece per group, not
        per word, and each place the shorter word is found is checked for the longer ones there."""
        found: dict[int, set[str]] = {}
        words = [w for w in words if w and TOKEN_SPLIT_RE.search(w) is None]  # one with a separator is never a token
        if not words:
            return found
        seps = _SEPARATORS
        groups = _bases(words)
        for k, texts in enumerate(self.pieces):
            piece = self.joined[k]
            if piece is None:
                piece = self.joined[k] = "\n".join(texts) + "\n"
            starts, owners, end = self.starts[k], self.owners[k], len(piece)
            for base, members in groups.items():
                at = piece.find(base)
                while at >= 0:
                    for w, offset in members:
                        a = at - offset
                        b = a + len(w)
                        if a < 0 or b > end or (offset or len(w) != len(base)) and not piece.startswith(w, a):
                            continue
                        before = piece[a - 1] if a else "\n"
                        after = piece[b] if b < end else "\n"
                        if (before in seps or before.isspace()) and (after in seps or after.isspace()):
                            found.setdefault(owners[bisect_right(starts, a) - 1], set()).add(w)
                    at = piece.find(base, at + 1)
            time.sleep(0)
        return found

    def contain(self, values: Iterable[str]) -> dict[str, set[int]]:
        """Value -> the message positions whose lower-case text contains it (anywhere)."""
        out: dict[str, set[int]] = {v: set() for v in values}
        for k, texts in enumerate(self.pieces):
            piece = self.joined[k]
            if piece is None:
                piece = self.joined[k] = "\n".join(texts) + "\n"
            starts, owners = self.starts[k], self.owners[k]
            for v, where in out.items():
                if "\n" in v or not v:  # could span two texts: each text of the piece on its own
                    where.update(owners[j] for j, text in enumerate(texts) if v in text)
                    continue
                at = piece.find(v)
                while at >= 0:
                    where.add(owners[bisect_right(starts, at) - 1])
                    at = piece.find(v, at + 1)
            time.sleep(0)
        return out


class _Growth:
    """What an index keeps so that the index of its session grown by appended messages (a followed
    log) reads only the new messages: what messages[:covered] said (before anchors are folded), the
    words each holds as tokens, and which words every one of them was searched for. The last few
    messages (`anchors.TAIL`) are left out of it: a loader may still change them (an assistant message a
    streamed line extends). Used up by the index built from it (extended in place)."""

    def __init__(self) -> None:
        self.messages: tuple[Any, ...] = ()  # the session's messages: those before `covered` must be the grown one's
        self.covered = 0
        self.first: dict[tuple[str, str], list[Any]] = {}
        self.opening_done = False
        self.hits: list[Any] = []  # per covered message: words it holds as tokens (None: no text)
        #: Word searched for -> the covered messages (positions) that hold it as a token: what the
        #: grown index's anchors take from the old messages, word by word, without a pass over them.
        self.holders: dict[str, list[int]] = {}
        self.searched: set[str] = set()  # every covered message was searched for each of these words
        self.voices: tuple[str, ...] = ()
        self.texts: list[str] = []  # per covered message: its text
        self.lowered: _Lowered | None = None
        #: Phrase -> the messages[:phrases_upto] whose lower-case text contains it (`_phrases_in`).
        self.phrases: dict[str, set[int]] = {}
        self.phrases_upto = 0




def _grown_hits(growth: _Growth, texts: list[str], n: int, covered: int, wanted: set[str]) -> list[Any]:
    """Each message's words of `wanted` it holds as tokens (and, for messages[:covered], of every
    word searched before): texts[:n] from `growth`, searched only for the words none of them was
    searched for; the others from their text. Brings `growth` up to `covered`."""
    searched = growth.searched | wanted
    new_words = wanted - growth.searched
    hits: list[Any] = growth.hits
    lowered = growth.lowered
    if new_words and n:
        if lowered is None:
            lowered = growth.lowered = _Lowered()
            lowered.extend((p, texts[p].lower()) for p in range(n) if texts[p])
        holders = growth.holders
        for p, words in lowered.find(new_words).items():
            hits[p] = (hits[p] or frozenset()) | words
            for w in words:
                holders.setdefault(w, []).append(p)
    tail: list[Any] = []
    holders_of = growth.holders
    for p in range(n, len(texts)):
        text = texts[p]
        if not text:
            (hits if p < covered else tail).append(None)
        elif p < covered:
            low = text.lower()
            words = searched.intersection(_token_list(low))
            hits.append(words)
            for w in words:
                holders_of.setdefault(w, []).append(p)
            if lowered is not None:
                lowered.add(p, low)
        else:
            tail.append(wanted.intersection(_token_list(text.lower())))
    growth.searched = searched
    return hits + tail


def _phrases_in(growth: _Growth, texts: list[str], n: int, covered: int, phrases: dict[str, list[tuple[int, str]]]) -> dict[str, set[int]]:
    """For each phrase, the messages[:covered] whose lower-case text contains it, kept in `growth`
    per phrase: a phrase met before is looked for only in the messages read since, a new one in
    the old texts by one search per piece (`_Lowered`)."""
    memo = growth.phrases
    values = {v for found in phrases.values() for _, v in found}
    # The texts read since, lowered only when a phrase met before is to be looked for in them (the
    # first growth has none: every phrase is looked for below, in every old text at once).
    new_texts = [(p, texts[p].lower()) for p in range(growth.phrases_upto, covered) if texts[p]] if memo else []
    for v, where in memo.items():
        where.update(p for p, low in new_texts if v in low)
    fresh = [v for v in values if v not in memo]
    if fresh:
        lowered = growth.lowered
        if lowered is None:
            lowered = growth.lowered = _Lowered()
            lowered.extend((p, texts[p].lower()) for p in range(covered) if texts[p])
        memo.update(lowered.contain(fresh))
    growth.phrases_upto = covered
    return memo

