"""Parsed JSON records kept small, for `Message.raw`.

A loaded Claude Code log keeps each line's record for the few readers that want it as the file wrote
it (the Anthropic export's original blocks, the cache lifetime the log recorded). As parsed dicts
those records cost more than the messages themselves. Packed, a record is its `marshal` bytes (one
object: no per-value object headers, and made in C, in a fraction of the time a walk over the values
in Python takes), less its *holes*: the texts the message holds anyway (a text block's text, a tool
result's output, a tool call's `input` as its `arguments`), kept as those very strings, not copied.
A `Holes` says where each goes (one object per distinct set of places in a load).

`Message.raw` unpacks a packed record when first read and keeps the plain record from then on (the
policies that read `raw` read it at every turn); `session.record_of` unpacks without keeping, for
readers that read each message once (exports, the cache lifetime a log recorded). Readers see the
plain JSON values they always did. The bytes never leave the process (marshal's format is
Python's own); a pickled message carries them to the same Python.
"""

from __future__ import annotations

import json
import marshal
import threading
from collections.abc import Sequence
from typing import Any

#: What `marshal` writes a packed record with: version 4, the smallest and quickest here (short
#: strings with a one-byte length, a key repeated within a record written once). Equal bytes are
#: equal records; equal records may give different bytes (a value another object also refers to
#: is marked as such, e.g. a usage count a cache of the loader holds), so `same_raw` compares
#: records whose bytes differ unpacked.
MARSHAL_VERSION = 4


class Holes(tuple):
    """Where a packed record's holes are, one `(path, parse)` per hole: `path` the keys and indices
    from the record down to the hole, `parse` whether its string is JSON text of the value (a tool
    call's `input`, kept as its `arguments`) rather than the value itself."""

    __slots__ = ()


class PackedRecord(tuple):
    """A record kept as `Message.raw`: `(bytes, Holes, hole value...)`, the record when read."""

    __slots__ = ()


class PackedLines(tuple):
    """Records kept as `Message.raw` (the lines of a streamed assistant message): a list when read."""

    __slots__ = ()


#: The packed forms a `Message.raw` may hold (anything else is kept and read as it is).
PACKED = (PackedRecord, PackedLines)

_NO_HOLES = Holes()

#: The places holes may be at, and the code of each (`place`): the same for the life of the process.
_PLACES: list[tuple[tuple[Any, ...], bool]] = []
_PLACE_CODES: dict[tuple[tuple[Any, ...], bool], int] = {}


#: Held while a new place is added (two loads on two threads may meet a new place at once;
#: reentrant: a caller adding places in order holds it around `place`).
PLACES_LOCK = threading.RLock()


def place(path: tuple[Any, ...], parse: bool = False) -> int:
    """The code of a hole's place (see `Holes`), for `Packer.record`: a caller looks a place up once
    and passes small ints per record, which are cheaper to look up together than the paths."""
    key = (path, parse)
    code = _PLACE_CODES.get(key)
    if code is None:
        with PLACES_LOCK:
            code = _PLACE_CODES.get(key)
            if code is None:
                _PLACES.append(key)
                code = _PLACE_CODES[key] = len(_PLACES) - 1
    return code


def unpack(value: Any) -> Any:
    """The JSON value `value` packs: dicts and lists, fresh on each call."""
    kind = value.__class__
    if kind is PackedRecord:
        record = marshal.loads(value[0])
        holes = value[1]
        if holes:
            loads = json.loads
            for k, (path, parse) in enumerate(holes, 2):
                at = record
                for key in path[:-1]:
                    at = at[key]
                hole = value[k]
                at[path[-1]] = loads(hole) if parse else hole
        return record
    if kind is PackedLines:
        return [unpack(v) for v in value]
    return value


class Packer:
    """Packs the records of one load, sharing the `Holes` of records whose holes are in the same
    places (most lines of a log have one of a few)."""

    def __init__(self) -> None:
        self.holes: dict[tuple[int, ...], Holes] = {}

    def record(self, skeleton: Any, places: tuple[int, ...] = (), values: Sequence[Any] = ()) -> PackedRecord:
        """The record `skeleton` is, with `values[k]` at the place coded `places[k]` (`place`; where
        the skeleton holds a placeholder, so that the keys keep their order). The skeleton is copied
        (into bytes); the values are kept as they are (strings the message holds anyway)."""
        if not places:
            return PackedRecord((marshal.dumps(skeleton, MARSHAL_VERSION), _NO_HOLES))
        holes = self.holes.get(places)
        if holes is None:
            holes = self.holes[places] = Holes([_PLACES[code] for code in places])
        return PackedRecord((marshal.dumps(skeleton, MARSHAL_VERSION), holes, *values))
