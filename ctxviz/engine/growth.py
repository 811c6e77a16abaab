"""What a grown session carries over from the session it grew from.

A followed log is read again after every append, and its loader carries its load on: the new
session holds the same message objects as the one before, then new ones (the last few may be
rebuilt: an assistant message a streamed line extends). Whatever is derived from the messages in
order (each message's columns, which carry a reported usage, the tool calls' pairs) is then made
again only for the new messages, not for the 14,000 of a 200 MB log on every append: that work
holds the interpreter, and the window cannot paint meanwhile.

`carried(session, key, full, grow)` keeps a value in `Session.derived` and, for a session grown from
one that holds the same key, asks `grow` for it from the old value and the number of leading
messages both sessions share as the same objects. `grow` must give what `full` gives; each caller's
test compares the two on real logs followed and split at many points.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Session(Protocol):
    """What this module reads of engine.session's Session (which imports it: no cycle)."""

    @property
    def messages(self) -> Sequence[Any]: ...
    @property
    def format(self) -> str: ...
    @property
    def derived(self) -> dict[Any, Any]: ...


S = TypeVar("S", bound=Session)

#: The last messages of a session a loader may still rebuild as its log grows: a session grew from
#: another only if all messages but these are the same objects.
TAIL = 16
#: How many recent sessions are candidates to have grown from (held weakly: a session nobody
#: holds any more is nobody's origin).
RECENT = 8

_recent: list[weakref.ref[Session]] = []
_lock = threading.Lock()
_ORIGIN = ("growth", "origin")


def same_prefix(old: Sequence[Any], new: Sequence[Any]) -> int:
    """How many leading items `new` holds as the same objects as `old` (compared at C speed)."""
    n = min(len(old), len(new))
    if n and old[n - 1] is new[n - 1] and all(map(operator.is_, old[:n], new[:n])):
        return n
    same = list(map(operator.is_, old[:n], new[:n]))
    try:
        return same.index(False)
    except ValueError:
        return n


def _shared(old: Session, new: Session) -> int | None:
    """How many leading messages `new` shares with `old` when it grew from it (all of `old`'s but
    its last `TAIL` are the same objects), else None."""
    a, b = old.messages, new.messages
    sure = len(a) - TAIL
    if old is new or old.format != new.format or sure <= 0 or len(b) < sure or b[sure - 1] is not a[sure - 1]:
        return None
    if not all(map(operator.is_, a[:sure], b)):
        return None
    return sure + same_prefix(a[sure:], b[sure:])


def origin(session: Session) -> tuple[Session, int] | None:
    """The most recent session `session` grew from (one a value was carried for), and how many
    leading messages they share; looked up once per session."""
    found = session.derived.get(_ORIGIN)
    if found is not None:
        old = found[0]()
        return (old, found[1]) if old is not None else None
    with _lock:
        candidates = [s for s in (r() for r in reversed(_recent)) if s is not None]
    for old in candidates:
        k = _shared(old, session)
        if k is not None:
            session.derived[_ORIGIN] = (weakref.ref(old), k)
            return old, k
    session.derived[_ORIGIN] = (lambda: None, 0)
    return None


def _remember(session: Session) -> None:
    with _lock:
        if any(r() is session for r in _recent):
            return
        _recent[:] = [r for r in _recent if r() is not None][-(RECENT - 1):]
        _recent.append(weakref.ref(session))


def carried(session: S, key: Hashable, full: Callable[[S], T], grow: Callable[[S, T, int], T | None]) -> T:
    """`full(session)`, kept in `session.derived[key]`; for a session grown from one that holds the
    key, `grow(session, old_value, shared)` instead (`shared`: how many leading messages both
    hold as the same objects), unless it returns None (it cannot be sure: then `full`)."""
    found = session.derived.get(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    value: T | None = None
    came = origin(session)
    if came is not None:
        old, shared = came
        before = old.derived.get(key)
        if before is not None:
            value = grow(session, before, shared)
    if value is None:
        value = full(session)
    session.derived[key] = value
    _remember(session)
    return value
