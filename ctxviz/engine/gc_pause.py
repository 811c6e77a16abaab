"""The cycle collector paused while a function builds many objects that form no cycles.

CPython's collector makes a pass over the objects it tracks each time enough container objects
(tuples, lists, dicts, sets) have been allocated since the last one, and every so often a pass over
all of them. Building a 10,000-message session's anchor index allocates a few hundred thousand such
objects, none in a reference cycle, and the passes this set off took about a tenth of the build
(measured in one process, alternating with and without). Pausing the collector changes when
cyclic garbage is freed, never what is computed; reference counting frees everything else as usual.

`without_gc` pauses for one function and leaves what it built to the collector's later passes;
`frozen_after` also moves what the block built out of the collector's generations, which only the
code that owns the process decides (the loader for its session, the command line).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def without_gc(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn` run with the cycle collector paused, and resumed after it. When it is paused already
    (by the caller, or by another thread inside such a function) it is left as it is: whoever
    paused it resumes it, so it is never left paused (another thread's call may then finish with
    the collector running, which costs time, not correctness)."""

    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused


@contextmanager
def frozen_after() -> Iterator[None]:
    """The cycle collector paused for the block, and everything alive when it ends moved out of the
    collector's generations (`gc.freeze`): what the block built (a loaded session, a plan's
    per-message views, a replay's turns, an anchor index) lives until the process ends and holds no
    cycles, and paused alone it would be walked once more by the next pass (0.5-0.8 s after a
    100,000-message plan). Freezing is a decision for the whole process, so only the code that owns
    the process makes it: the loader for the session it returns, the command line (cli/), never a
    policy. Only where the collector was running: a caller that holds it off (the app, whose GUI
    thread collects on its own: gui/threads.py) may have cyclic garbage pending, which a freeze would
    keep forever."""
    running = gc.isenabled()
    gc.disable()
    try:
        yield
        if running:
            gc.freeze()
    finally:
        if running:
            gc.enable()
