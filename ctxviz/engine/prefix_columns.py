"""A replay's prefix session takes its per-message columns from the whole session's.

`Timeline.plan_at` plans the session as it stood at a step: a new `Session` over the first messages
of the same message objects. Each such session derived its columns (which messages are system-role,
every message's id, role and category) again in Python, message by message: pricing every step of
a 6,000-message chat (`simulate --cost`) spent a third of its time there, work that grows with the
prefix at every step. The whole session has them already; a prefix's are their first part.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

import numpy as np

from .session import Session

#: Where the whole session keeps the positions of its system-role and other messages.
_POSITIONS = ("prefix-columns", "positions")
#: Where a session keeps `history_index_array`.
_HISTORY_AT = ("prefix-columns", "history-at")
#: Where a prefix keeps the whole session's messages and its length (`prefix_source`).
_SOURCE = ("prefix-columns", "source")


def _positions(session: Session) -> tuple[list[int], list[int]]:
    system = [k for k, m in enumerate(session.messages) if m.role == "system"]
    others = [k for k, m in enumerate(session.messages) if m.role != "system"]
    return system, others


def seed_prefix_columns(full: Session, prefix: Session) -> None:
    """Give `prefix` (whose messages are the first of `full`'s, the same objects) the columns
    `Session.system_and_history`, `Session.history_columns` and `Session.message_columns` would derive, sliced from `full`'s:
    the same tuples of the same objects, made at C speed."""
    n = len(prefix.messages)
    if not n or n > len(full.messages) or prefix.messages[n - 1] is not full.messages[n - 1]:
        return
    system_at, others_at = full.derive(_POSITIONS, _positions)
    system, history = full.system_and_history
    k = bisect_left(others_at, n)
    prefix.__dict__["system_and_history"] = (system[: bisect_left(system_at, n)], history[:k])
    prefix.__dict__["history_columns"] = tuple(column[:k] for column in full.history_columns) if history else ((), (), (), ())
    prefix.derived[_HISTORY_AT] = history_index_array(full)[:k]
    prefix.derived[_SOURCE] = (full.messages, n)
    ids, roles, categories = full.message_columns
    prefix.__dict__["message_columns"] = (ids[:n], roles[:n], categories[:n])


def history_index_array(session: Session) -> np.ndarray:
    """The indices of the session's non-system messages (`Session.history_columns`'s first) as a
    read-only int64 array: a prefix's is a view of the whole session's."""
    return session.derive(_HISTORY_AT, _history_at)


def _history_at(session: Session) -> np.ndarray:
    array = np.array(session.history_columns[0], dtype=np.int64)
    array.flags.writeable = False
    return array


def prefix_source(session: Session) -> tuple[tuple[Any, ...], int]:
    """(messages, n): the session's messages are `messages[:n]`. For a replay's prefix, the whole
    session's messages, so that what is counted once over them answers each prefix without
    comparing the prefix with them; for any other session, its own."""
    found = session.derived.get(_SOURCE)
    return found if found is not None else (session.messages, len(session.messages))
