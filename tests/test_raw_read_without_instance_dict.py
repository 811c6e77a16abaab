"""Reading a message's `raw` leaves the message as it was built.

On CPython 3.11 an object's attributes are kept as values inside the object until something asks
for its `__dict__`; from then on it has a dict of its own, which costs memory and makes every later
attribute read of that object slower. `stored_raw` once read `message.__dict__`, so any policy that
looked at `raw` (LangChain's counter does, for every message) gave every message of the session a
dict, and every later plan of that session ran slower: supyagent's plan of 4,000 messages took
4.2 ms before and 5.2 ms after. The memory is what a test can see without timing anything.
"""

from __future__ import annotations

import sys
import tracemalloc

import pytest

from ctxviz.engine.session import Category, Message, TextPart, stored_raw

pytestmark = pytest.mark.skipif(sys.version_info < (3, 11) or sys.implementation.name != "cpython",
                                reason="values kept inside the object are CPython 3.11's")


def messages(n: int) -> list[Message]:
    return [Message(id=f"m{i}", index=i, role="user", parts=(TextPart(f"text {i}"),), category=Category.DIALOG) for i in range(n)]


def grown_by_reading(read) -> int:  # noqa: ANN001
    built = messages(2_000)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for m in built:
            read(m)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def test_reading_raw_gives_no_message_a_dict() -> None:
    assert grown_by_reading(lambda m: m.raw) < 2_000 * 16
    assert grown_by_reading(stored_raw) < 2_000 * 16


def test_asking_for_the_dict_would_show() -> None:
    """What the first test would see if `raw` were read through `__dict__` (so it can fail)."""
    assert grown_by_reading(lambda m: m.__dict__.get("_raw")) > 2_000 * 48
