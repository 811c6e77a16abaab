"""The Qt binding must not corrupt Python's reference counts, or the app aborts after enough re-plans.

PySide6 6.12.0 drops one reference to True/False on every signal emitted with a bool argument. On
Python 3.11 (where True is not immortal) that walks True's count to zero: after a few hundred slider
moves the process dies with "Fatal Python error: bool_dealloc". pyproject.toml excludes that release;
this test catches the pin being loosened onto a broken release.
"""

import sys

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QObject, Signal  # noqa: E402


class _Emitter(QObject):
    flag = Signal(bool)
    anything = Signal(object)


def test_emitting_bools_keeps_their_reference_counts(qapp):
    emitter = _Emitter()
    seen: list[bool] = []
    emitter.flag.connect(lambda value: seen.append(value))
    emitter.anything.connect(lambda value: None)
    before = sys.getrefcount(True), sys.getrefcount(False)
    for _ in range(200):
        emitter.flag.emit(True)
        emitter.anything.emit(False)
    seen.clear()
    after = sys.getrefcount(True), sys.getrefcount(False)
    # Other threads may take or drop a handful of references meanwhile; a leak here is 200.
    assert abs(after[0] - before[0]) < 50 and abs(after[1] - before[1]) < 50, (before, after)


def test_the_app_collects_garbage_less_often_than_cpython_by_default(qapp):
    """Re-plans of long sessions allocate tens of thousands of surviving records; the default
    young-generation threshold (700) doubled plan times and caused pauses while dragging."""
    import gc

    from ctxviz.gui.app import GC_THRESHOLD, application

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        application()
        assert gc.get_threshold()[0] >= GC_THRESHOLD[0]
    finally:
        gc.set_threshold(*before)
