"""`without_gc` pauses the cycle collector for a build and always gives it back as it found it;
`frozen_after` also freezes what the block built, only where the collector was running."""

from __future__ import annotations

import gc

import pytest

from ctxviz.engine.gc_pause import frozen_after, without_gc


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


def test_frozen_after_freezes_what_the_block_built_and_resumes() -> None:
    frozen = gc.get_freeze_count()
    try:
        with frozen_after():
            assert not gc.isenabled()
            built = [[k] for k in range(1000)]  # containers the collector tracks
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(built)
    finally:
        gc.unfreeze()


def test_frozen_after_freezes_nothing_for_a_caller_that_holds_the_collector_off() -> None:
    gc.disable()
    frozen = gc.get_freeze_count()
    try:
        with frozen_after():
            _ = [[k] for k in range(1000)]
        assert not gc.isenabled()
        assert gc.get_freeze_count() <= frozen  # (frozen objects freed since may lower it)
    finally:
        gc.enable()


def test_a_failing_block_resumes_the_collector_and_freezes_nothing() -> None:
    frozen = gc.get_freeze_count()
    with pytest.raises(ValueError), frozen_after():
        _ = [[k] for k in range(1000)]
        raise ValueError("boom")
    assert gc.isenabled()
    assert gc.get_freeze_count() <= frozen
