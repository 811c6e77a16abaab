"""Per-message token counts, computed once per (session, counting scheme) and then only read.

A counting scheme pairs a framework's way of measuring a message (missy counts only
`str(content)`, supyagent adds every field and 4 per message...) with a tokenizer. Re-planning
after a parameter change reuses the cached counts; nothing is re-tokenized.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from .growth import same_prefix
from .session import Message, Session, same_raw
from .tokenizers import Tokenizer

T = TypeVar("T")

MessageMeasure = Callable[[Message, Tokenizer], int]
#: For a framework whose unit is not ctxviz's message (mnesis keeps a tool call and its output in
#: one part of one message): the whole session's per-message counts at once.
SessionMeasure = Callable[[Session, Tokenizer], Sequence[int]]
ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class CountingScheme:
    """How one policy measures a message, with which tokenizer."""

    measure_name: str
    measure: MessageMeasure = field(compare=False)
    tokenizer: Tokenizer = field(compare=False)
    measure_session: SessionMeasure | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.measure_name, self.tokenizer.name)

    @property
    def label(self) -> str:
        return f"{self.measure_name}/{self.tokenizer.name}"


class TokenCounts:
    """The counts of one session under one scheme; `text()` memoises extra texts (summaries, memory)."""

    def __init__(self, session: Session, scheme: CountingScheme, message_tokens: Sequence[int]) -> None:
        self.session = session
        self.scheme = scheme
        self.message_tokens: tuple[int, ...] = tuple(message_tokens)
        self._texts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._array: tuple[tuple[int, ...], np.ndarray] | None = None

    @property
    def tokenizer(self) -> Tokenizer:
        return self.scheme.tokenizer

    def __getitem__(self, index: int) -> int:
        return self.message_tokens[index]

    @property
    def token_array(self) -> np.ndarray:
        """The message counts as a read-only int64 array, made once: a policy that decides in
        columns (engine/plan_rows.py) sums and cuts on it at C speed on every re-plan."""
        made = self._array
        if made is None or made[0] is not self.message_tokens:
            array = np.fromiter(self.message_tokens, dtype=np.int64, count=len(self.message_tokens))
            array.flags.writeable = False
            made = self._array = (self.message_tokens, array)
        return made[1]

    def text(self, text: str) -> int:
        cached = self._texts.get(text)
        if cached is None:
            cached = self.scheme.tokenizer.count(text)
            with self._lock:
                self._texts[text] = cached
        return cached


def derived_from_counts(session: Session, counts: TokenCounts, key: Hashable, make: Callable[[Session, TokenCounts], T]) -> T:
    """`make(session, counts)`, made once per session, key and counting scheme and kept in
    `Session.derived` (made again when the counts changed): what a policy derives from the session
    alone, which every re-plan after a parameter change reuses."""
    full = (key, counts.scheme.key)
    found = session.derived.get(full)
    if found is not None and found[0] is counts.message_tokens:
        return found[1]
    made = make(session, counts)
    session.derived[full] = (counts.message_tokens, made)
    return made



#: How many parameter settings `remember` keeps per cache: a slider moves among a few.
REMEMBERED = 8


def remember(cache: OrderedDict[Hashable, T], key: Hashable, make: Callable[[], T], keep: int = REMEMBERED) -> T:
    """`make()`, kept in `cache` under `key` with the `keep` most recently used: what a policy
    derives for one setting of a parameter (a budget) inside what `derived_from_counts` keeps for
    the session, so moving a slider back and forth recomputes nothing."""
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = make()
        while len(cache) > keep:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return hit


def count_session(session: Session, scheme: CountingScheme, progress: ProgressCallback | None = None) -> TokenCounts:
    """Measure every message once. `progress(done, total)` lets the GUI show a progress bar."""
    total = len(session.messages)
    if scheme.measure_session is not None:
        counts = TokenCounts(session, scheme, scheme.measure_session(session, scheme.tokenizer))
        if progress is not None and total:
            progress(total, total)
        return counts
    tokens: list[int] = []
    step = max(1, total // 100)
    for i, message in enumerate(session.messages):
        tokens.append(scheme.measure(message, scheme.tokenizer))
        if progress is not None and (i % step == 0 or i == total - 1):
            progress(i + 1, total)
    return TokenCounts(session, scheme, tokens)


def extend_counts(previous: TokenCounts, session: Session, progress: ProgressCallback | None = None) -> TokenCounts:
    """The counts of `session`, a later state of `previous.session` (a log that grew), measuring only
    the messages that are new or changed.

    A message is measured from itself alone (`MessageMeasure`: its fields and, for some schemes, the
    record it was read from, `raw`), so one equal to the message at the same position before, record
    included, has the same count; a loader that re-reads a growing log rebuilds equal
    messages, and a message it changes (Gemini CLI fills in a tool call's result, Claude Code clears a
    tool result) is measured again. Comparing is far cheaper than tokenizing. A scheme that measures
    the whole session at once (`measure_session`, mnesis) is measured again whole. The memo of
    extra texts (summaries, the system prompt) carries over.
    """
    scheme = previous.scheme
    if scheme.measure_session is not None:
        return count_session(session, scheme, progress)
    old_messages, old_tokens = previous.session.messages, previous.message_tokens
    kept = len(old_messages)
    measure, tokenizer = scheme.measure, scheme.tokenizer
    total = len(session.messages)
    same = same_prefix(old_messages, session.messages)  # the same objects: counted before (compared at C speed)
    tokens: list[int] = list(old_tokens[:same])
    for i in range(same, total):
        message = session.messages[i]
        old = old_messages[i] if i < kept else None
        if old is not None and (old is message or (old == message and same_raw(old, message))):
            tokens.append(old_tokens[i])
        else:
            tokens.append(measure(message, tokenizer))
    if progress is not None and total:
        progress(total, total)
    counts = TokenCounts(session, scheme, tokens)
    counts._texts = dict(previous._texts)
    return counts


class CountStore:
    """Keeps each session's counts per scheme so that a re-plan never re-tokenizes.

    Keyed by the session object's identity (sessions are immutable and can hold 100,000 messages,
    so hashing them would cost as much as counting); the entry keeps the session alive so the
    identity cannot be reused.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple[int, tuple[str, str]], TokenCounts] = {}
        self._lock = threading.Lock()

    def get(self, session: Session, scheme: CountingScheme, progress: ProgressCallback | None = None) -> TokenCounts:
        key = (id(session), scheme.key)
        with self._lock:
            found = self._entries.get(key)
        if found is not None and found.session is session:
            return found
        counts = count_session(session, scheme, progress)
        with self._lock:
            self._entries[key] = counts
        return counts

    def find(self, session: Session, scheme: CountingScheme) -> TokenCounts | None:
        """The counts held for `session` under `scheme`, or None: never counts (a follower asks
        which counts to carry forward to the log's next state)."""
        with self._lock:
            found = self._entries.get((id(session), scheme.key))
        return found if found is not None and found.session is session else None

    def put(self, counts: TokenCounts) -> None:
        """Keep counts made elsewhere (`extend_counts` for a log that grew), so plans of their session reuse them."""
        with self._lock:
            self._entries[(id(counts.session), counts.scheme.key)] = counts

    def forget(self, session: Session) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == id(session)]:
                del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)
