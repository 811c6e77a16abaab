"""Parsed JSON records kept small, for `Message.raw`.

A loaded Claude Code log keeps each line's record for the few readers that want it as the file wrote
it (the Anthropic export's original blocks, the cache lifetime the log recorded). As parsed dicts
those records cost more than the messages themselves. Packed, an object is a tuple of its key tuple
(a `Shape`, one per set of keys in a load: the key names cost nothing per record) and its values; an
array is a tuple; repeated short strings and ints are shared within one load; a value the message
already holds as JSON text (a tool call's `input`, as its `arguments`) is that text, parsed again
when the record is read.

`Message.raw` unpacks a packed record when first read and keeps the plain record from then on (the
policies that read `raw` read it at every turn); `session.record_of` unpacks without keeping, for
readers that read each message once (exports, the cache lifetime a log recorded). Readers see the
plain JSON values they always did.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any


class Shape(tuple):
    """An object's keys, in order: the first item of a packed object (no JSON value is a Shape, so a
    tuple starting with one is an object, any other tuple an array)."""

    __slots__ = ()


class PackedRecord(tuple):
    """A record kept as `Message.raw`: a packed object (`(Shape, value...)`), a dict when read."""

    __slots__ = ()


class PackedLines(tuple):
    """Records kept as `Message.raw` (the lines of a streamed assistant message): a list when read."""

    __slots__ = ()


class PackedText(tuple):
    """A JSON value kept as its JSON text, `(text,)`: text the message holds anyway, parsed when read."""

    __slots__ = ()


#: The packed forms a `Message.raw` may hold (anything else is kept and read as it is).
PACKED = (PackedRecord, PackedLines)
_CONTAINERS = frozenset((tuple, PackedRecord, PackedLines, PackedText))


def unpack(value: Any) -> Any:
    """The JSON value `value` packs: dicts and lists, fresh on each call."""
    kind = value.__class__
    if kind is tuple or kind is PackedRecord:
        if value and value[0].__class__ is Shape:
            values = iter(value)
            shape = next(values)
            return dict(zip(shape, [v if v.__class__ not in _CONTAINERS else unpack(v) for v in values], strict=True))
        return [v if v.__class__ not in _CONTAINERS else unpack(v) for v in value]
    if kind is PackedLines:
        return [unpack(v) for v in value]
    if kind is PackedText:
        return json.loads(value[0])
    return value


#: Strings up to this long are shared within a load (ids, times, types, model names, versions);
#: longer ones are texts, seldom repeated and costly to hash.
SHARED_STRING = 64


class Packer:
    """Packs the records of one load, sharing repeated short strings, ints and shapes between them.
    `strings` may be the load's own table of shared strings (a line's uuid is then the same object
    as its message's id)."""

    def __init__(self, strings: dict[str, str] | None = None) -> None:
        self.strings: dict[str, str] = {} if strings is None else strings
        self.ints: dict[int, int] = {}
        self.shapes: dict[tuple[str, ...], Shape] = {}
        self.value, self._object = self._packers()

    def record(self, record: dict[str, Any], packed: dict[str, Any] | None = None, drop: Iterable[str] = ()) -> PackedRecord:
        """`record` packed, less the keys in `drop`; the values of the keys in `packed` are taken as
        they are (packed by the caller: `object`, a tuple of packed values, a `PackedText`)."""
        return PackedRecord(self.object(record, packed, drop))

    def object(self, record: dict[str, Any], packed: dict[str, Any] | None = None, drop: Iterable[str] = ()) -> tuple[Any, ...]:
        """A nested object, as `record` packs it."""
        if packed or drop:
            record = record.copy()
            if packed:
                record.update(packed)
            for key in drop:
                record.pop(key, None)
        return self._object(record)

    def _packers(self) -> tuple[Callable[[Any], Any], Callable[[dict[str, Any]], tuple[Any, ...]]]:
        """(pack any value, pack an object): closures over the tables (every value of a large log goes
        through this loop: a method call or a comprehension per value costs a tenth or more)."""
        strings, ints, shapes = self.strings, self.ints, self.shapes
        shared, known = strings.setdefault, ints.setdefault

        def pack_values(values: Iterable[Any], out: list[Any]) -> tuple[Any, ...]:
            append = out.append
            for v in values:
                kind = v.__class__
                if kind is str:
                    if len(v) <= SHARED_STRING:
                        v = shared(v, v)
                elif kind is int:
                    v = known(v, v)
                elif kind is dict:
                    v = pack_object(v)
                elif kind is list:
                    v = pack_values(v, [])
                append(v)  # JSON's other scalars, and what a caller packed (tuples, PackedText)
            return tuple(out)

        def pack_object(record: dict[str, Any]) -> tuple[Any, ...]:
            keys = tuple(record)
            shape = shapes.get(keys)
            if shape is None:
                shape = shapes[keys] = Shape(keys)
            return pack_values(record.values(), [shape])

        def pack_value(value: Any) -> Any:
            return pack_values((value,), [])[0]

        return pack_value, pack_object
