"""Per-message token counts, computed once per (session, counting scheme) and then only read.

A counting scheme pairs a framework's way of measuring a message (missy counts only
`str(content)`, supyagent adds every field and 4 per message...) with a tokenizer. Re-planning
after a parameter change reuses the cached counts; nothing is re-tokenized.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from .session import Message, Session
from .tokenizers import Tokenizer

MessageMeasure = Callable[[Message, Tokenizer], int]
#: For a framework whose unit is not ctxviz's message (mnesis keeps a tool call and its output in
#: one part of one message): the whole session's per-message counts at once.
SessionMeasure = Callable[[Session, Tokenizer], list[int]]
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

    def __init__(self, session: Session, scheme: CountingScheme, message_tokens: list[int]) -> None:
        self.session = session
        self.scheme = scheme
        self.message_tokens: tuple[int, ...] = tuple(message_tokens)
        self._texts: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def tokenizer(self) -> Tokenizer:
        return self.scheme.tokenizer

    def __getitem__(self, index: int) -> int:
        return self.message_tokens[index]

    def text(self, text: str) -> int:
        cached = self._texts.get(text)
        if cached is None:
            cached = self.scheme.tokenizer.count(text)
            with self._lock:
                self._texts[text] = cached
        return cached


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

    def forget(self, session: Session) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == id(session)]:
                del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)
