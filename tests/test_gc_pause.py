"""`without_gc` pauses the cycle collector for a build and always gives it back as it found it."""

from __future__ import annotations

import gc

import pytest

from ctxviz.engine.gc_pause import without_gc


@without_gc
def _state() -> bool:
    return gc.isenabled()


@without_gc
def _fails() -> None:
    raise ValueError("boom")


def test_the_collector_is_paused_inside_and_running_after() -> None:
    assert gc.isenabled()
    assert _state() is False
    assert gc.isenabled()


def test_a_failing_build_resumes_the_collector() -> None:
    with pytest.raises(ValueError):
        _fails()
    assert gc.isenabled()


def test_a_collector_paused_by_the_caller_stays_paused() -> None:
    gc.disable()
    try:
        assert _state() is False
        assert not gc.isenabled()
    finally:
        gc.enable()
