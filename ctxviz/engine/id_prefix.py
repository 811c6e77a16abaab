"""A summary's covers as the first `n` ids of a list that only grows at the end.

Covers that are ever longer prefixes of one history (a long Claude Code log's compactions each
cover every message before them; supyagent re-summarises from message 0 on nearly every turn)
total the square of the history's length when each is copied into a tuple: 590,000 ids for a
4,000-message log. A view costs its length, an int, and says which list it is a prefix of, so
a reader that only needs "the file's first n messages" (`Session.summaries_cover_first`) compares
each list once, not each summary's covers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any


class IdPrefix(Sequence[str]):
    """The first `n` ids of `ids` (a list that only grows at the end), as a read-only tuple-like
    view: it compares, hashes, pickles and prints as the tuple it stands for."""

    __slots__ = ("_ids", "_n")

    def __init__(self, ids: list[str], n: int) -> None:
        self._ids = ids
        self._n = n

    @property
    def base(self) -> list[str]:
        """The list this is a prefix of (it may have grown past `len(self)`): views of one list
        are compared with a session's ids once, not one by one."""
        return self._ids

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            start, stop, step = k.indices(self._n)
            if step > 0:  # a slice of the list itself: the prefix is not copied first
                return tuple(self._ids[start:stop:step])
            return tuple(self._ids[: self._n][k])
        if k < 0:
            k += self._n
        if not 0 <= k < self._n:
            raise IndexError("IdPrefix index out of range")
        return self._ids[k]

    def __iter__(self) -> Iterator[str]:
        return islice(self._ids, self._n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdPrefix):
            n = self._n
            return other._n == n and (other._ids is self._ids or other._ids[:n] == self._ids[:n])
        if isinstance(other, tuple):
            return len(other) == self._n and tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(self) + tuple(other)

    def __radd__(self, other: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(other) + tuple(self)

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))

    def __copy__(self) -> IdPrefix:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)
