"""What is derived from an immutable object, kept while the object lives and found by its identity.

Not a WeakKeyDictionary: that hashes and compares the frozen object's every field on each lookup
(about 3 µs for a message), which was most of a 100,000-message re-plan's summary. An entry is keyed
by `id(obj)` with a weak reference that forgets it when the object goes (and is checked on lookup, as
a new object may take a gone one's id). The derived value must not refer to its object, or the
object never goes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Kept(weakref.ref):  # type: ignore[type-arg]
    """A weak reference to an object whose value is kept, holding its key for the cache's `_gone`.
    Its constructor is weakref's own (the key is set after it): `weakref.KeyedRef` builds in Python,
    and a `functools.partial` binding the key cost as much again as the reference."""

    __slots__ = ("key",)


class KeptByIdentity(Generic[T]):
    """`get(obj, make)`: the value kept for `obj`, made by `make(obj)` when there is none.
    `entries` is open to a caller whose loop looks up thousands in a row (`summarizers.features_of`)."""

    def __init__(self) -> None:
        self.entries: dict[int, tuple[Kept, T]] = {}

    def _gone(self, ref: Kept) -> None:
        """An object with a value kept has gone: forget it (unless its id already holds another's)."""
        entry = self.entries.get(ref.key)
        if entry is not None and entry[0] is ref:
            del self.entries[ref.key]

    def get(self, obj: Any, make: Callable[[Any], T]) -> T:
        key = id(obj)
        entry = self.entries.get(key)
        if entry is not None and entry[0]() is obj:
            return entry[1]
        return self.put(obj, make(obj))

    def put(self, obj: Any, value: T) -> T:
        ref = Kept(obj, self._gone)
        ref.key = id(obj)
        self.entries[ref.key] = (ref, value)
        return value

    def clear(self) -> None:
        self.entries.clear()

    def __len__(self) -> int:
        return len(self.entries)
