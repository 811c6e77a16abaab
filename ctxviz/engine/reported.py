"""What the provider reported, beside what ctxviz replays.

Logs with usage (Claude Code, Codex `token_count`, Gemini `tokens`, OpenTelemetry, API responses)
say how many tokens each call really put in the window, normalised by the loaders to
input + cache read + cache write. Two facts follow that no replay can know: the last call's real
fill, and, when the log records no system prompt or tool definitions, roughly how large those
were (the first call's input minus what the log shows before it).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

from .provider_count import tools_tokens
from .session import Session
from .tokenizers import TiktokenTokenizer, count_openai_chat

#: A gap smaller than this between the first call's input and the visible messages is estimation
#: noise, not an unseen prompt.
UNSEEN_THRESHOLD = 1000
#: The first call must come early for the estimate to be cheap and meaningful.
FIRST_CALL_LIMIT = 200


@dataclass(frozen=True)
class Reported:
    first_index: int
    first_window_fill: int
    last_index: int
    last_window_fill: int
    calls: int
    #: o200k count of what the log shows before the first call (its messages, system prompt, tools).
    visible_before_first: int
    #: About how many tokens of system prompt and tool definitions the log lacks (0: none missing).
    unseen: int

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "first_call": {"message": self.first_index, "window_fill": self.first_window_fill},
                "last_call": {"message": self.last_index, "window_fill": self.last_window_fill},
                "visible_before_first_call": self.visible_before_first, "unseen_estimate": self.unseen}

    def unseen_note(self) -> str:
        return (f"the log has no system prompt or tool definitions; the first call (#{self.first_index}) reported {self.first_window_fill:,} "
                f"input tokens where the log shows about {self.visible_before_first:,}, which suggests about {self.unseen:,} tokens of them "
                "(counted in the real count)")


_cache: dict[int, tuple[weakref.ref[Session], Reported | None]] = {}
_lock = threading.Lock()


def reported_usage(session: Session) -> Reported | None:
    """The provider's figures for a session, or None when its log has no usage; cached per session."""
    key = id(session)
    with _lock:
        found = _cache.get(key)
    if found is not None and found[0]() is session:
        return found[1]
    value = _measure(session)
    with _lock:
        _cache[key] = (weakref.ref(session, lambda _ref, key=key: _cache.pop(key, None)), value)
    return value


def _measure(session: Session) -> Reported | None:
    calls = [m for m in session.messages if m.usage is not None and m.usage.window_fill > 0]
    if not calls:
        return None
    first, last = calls[0], calls[-1]
    visible = unseen = 0
    if first.index <= FIRST_CALL_LIMIT:
        tokenizer = TiktokenTokenizer("o200k_base")
        before = [m.to_openai() for m in session.messages[: first.index]]
        if session.system_prompt:
            before.insert(0, {"role": "system", "content": session.system_prompt})
        visible = count_openai_chat(before, tokenizer=tokenizer) if before else 0
        if session.tools:
            visible += tools_tokens(session, tokenizer)  # as the cache model prices them
        gap = first.usage.window_fill - visible  # type: ignore[union-attr]
        if not session.system_prompt and not session.tools and gap >= UNSEEN_THRESHOLD:
            unseen = round(gap, -2)
    return Reported(first.index, first.usage.window_fill, last.index, last.usage.window_fill, len(calls), visible, unseen)  # type: ignore[union-attr]
