"""Each message's anchors, extracted once and reused by every session that holds the message.

Building a session's `AnchorIndex` (engine/anchors.py) reads every message twice: once to extract
its anchors, once to find the tokens that name an anchor in another form. Both depend only on the
message's own text (and, for extraction, on its voice, role and whether the session is a
SWE-agent's), so they are kept here per text, not per session. A re-plan, a turn of a replay, a
`where`, a forecast, and a followed log that grows (a new `Session` holding the same messages and
new ones, or a log re-read whole into new `Message` objects) read the old messages from here and
only the new ones from their text. Keys hold the text itself, so a message whose text changed (same
id, other words) is a new key and is never served an old answer.

Token hits are kept against a growing vocabulary (`Vocabulary`): every single-token form and
phrase trigger any index asked about. A message's hits were found for the vocabulary as it was
then; when new words join it (a grown session names new files), only those words are looked for
in the old texts, by substring first and by token only where a substring is found.

Pure, no Qt; thread-safe (the app builds indexes on worker threads).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

#: What one message's extraction yields: per voice that said them (the message's own, then the
#: harness's template around a coding agent's issue), every (kind, key, value); and whether the
#: message is a user turn that said a request or instruction (the opening request is its first).
#: Grouped by voice, not a voice in every triple: a 10,000-message session says 100,000 of them.
Said = tuple[tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...], bool]
#: (voice, role, swe, text): everything a message's extraction depends on.
SaidKey = tuple[str, str, bool, str]

#: Characters of message text the store keeps answers for before it forgets the least recently used
#: (about 1.5 x that in memory with the answers: a 200 MB followed log fits).
LIMIT_CHARS = 256_000_000
#: New vocabulary words looked for by substring in each old text; more than this re-splits the text.
SUBSTRING_WORDS = 24


class Vocabulary:
    """Every word an index has asked about, in the order they joined (a message's hits name how far
    along this list they were found)."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.known: set[str] = set()

    def add(self, words: Iterable[str]) -> None:
        for w in words:
            if w not in self.known:
                self.known.add(w)
                self.words.append(w)


class MessageAnchors:
    """Per text: its extraction (by voice, role and format) and the vocabulary words it holds as
    tokens. Least recently used texts are forgotten past `limit_chars` (counted per table)."""

    def __init__(self, limit_chars: int = LIMIT_CHARS) -> None:
        self.limit_chars = limit_chars
        self._said: dict[SaidKey, Said] = {}
        #: text -> [vocabulary length when last brought up to date, the vocabulary words it holds].
        self._hits: dict[str, list[Any]] = {}
        self._said_chars = 0
        self._hits_chars = 0
        self.vocabulary = Vocabulary()
        self._lock = threading.RLock()
        #: Texts extracted, and texts tokenized against the whole vocabulary (not only its new words):
        #: what a test counts.
        self.extracted = 0
        self.split = 0

    def clear(self) -> None:
        with self._lock:
            self._said.clear()
            self._hits.clear()
            self._said_chars = self._hits_chars = 0
            self.vocabulary = Vocabulary()

    def __len__(self) -> int:
        return len(self._said)

    def said(self, keys: Sequence[SaidKey], compute: Callable[[str, str, str, bool], Said]) -> list[Said]:
        """Each key's extraction: kept ones reused, the others computed (`compute(text, voice, role, swe)`)."""
        out: list[Said] = []
        table = self._said
        with self._lock:
            for key in keys:
                found = table.pop(key, None)  # popped and put back: the most recently used stay
                if found is None:
                    voice, role, swe, text = key
                    found = compute(text, voice, role, swe)
                    self.extracted += 1
                    self._said_chars += len(text)
                table[key] = found
                out.append(found)
            while table and self._said_chars > self.limit_chars:
                oldest = next(iter(table))
                table.pop(oldest)
                self._said_chars -= len(oldest[3])
        return out

    def put(self, keys: Sequence[SaidKey], saids: Sequence[Said]) -> None:
        """Keep extractions computed elsewhere (`said` would compute the same for each key: the
        caller guarantees it, as `engine/anchors_ahead.py` does with what the parent process read
        for its forked child). A key already kept keeps its answer."""
        table = self._said
        with self._lock:
            for key, found in zip(keys, saids, strict=True):
                if key not in table:
                    table[key] = found
                    self._said_chars += len(key[3])

    def token_hits(self, texts: Sequence[str], wanted: set[str], split: Callable[[str], Iterable[str]]) -> list[frozenset[str]]:
        """For each text, the vocabulary words it holds as tokens (`split(lowered text)` gives a
        text's tokens, a set or a list; the caller keeps those it wants). `wanted` joins the vocabulary first; a text
        met before is only searched for the words that joined since."""
        with self._lock:
            vocab = self.vocabulary
            vocab.add(wanted - vocab.known)  # in any order: a text's entry counts how many it was searched for
            words, known, size = vocab.words, vocab.known, len(vocab.words)
            hits = self._hits
            out: list[frozenset[str]] = []
            for text in texts:
                entry = hits.pop(text, None)
                if entry is None:
                    entry = [size, frozenset(known.intersection(split(text.lower())))]
                    self.split += 1
                    self._hits_chars += len(text)
                elif entry[0] < size:
                    new = words[entry[0]:size]
                    lowered = text.lower()
                    if len(new) <= SUBSTRING_WORDS:
                        present = {w for w in new if w in lowered}  # a token is a substring first
                        if present:
                            entry[1] = entry[1] | present.intersection(split(lowered))
                    else:
                        entry[1] = entry[1] | set(new).intersection(split(lowered))
                        self.split += 1
                    entry[0] = size
                hits[text] = entry
                out.append(entry[1])
            while hits and self._hits_chars > self.limit_chars:
                text = next(iter(hits))
                hits.pop(text)
                self._hits_chars -= len(text)
        return out


#: The store every index reads unless given another.
MESSAGE_STORE = MessageAnchors()
