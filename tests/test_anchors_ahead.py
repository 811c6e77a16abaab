"""The anchor index a forked child builds while `simulate` replays is the index this process builds:
same anchors, same lists, same `simulate` output byte for byte (engine/anchors_ahead.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxviz.engine import anchor_extract, anchors, anchors_ahead
from ctxviz.engine.anchor_cache import MessageAnchors
from ctxviz.engine.anchor_extract import extract
from ctxviz.engine.anchors import build_index
from ctxviz.engine.policies import get_policy
from ctxviz.engine.retention_timeline import planned_views, timeline_retention
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart
from ctxviz.engine.simulate import simulate

ROOT = Path(__file__).resolve().parent.parent
needs_fork = pytest.mark.skipif(not hasattr(os, "fork") or not sys.platform.startswith("linux") or os.environ.get(anchors_ahead.ENV) == "0",
                                reason="no fork on this platform")


@pytest.fixture(autouse=True)
def _only_the_timeout_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-timeout's thread waits on a timer the whole test (a real `simulate` has no other
    thread): it holds no lock a child could need, so a fork is as safe here as in the command."""
    monkeypatch.setattr(anchors_ahead, "_other_threads", lambda: False)
    monkeypatch.setattr(anchors_ahead, "_idle_core", lambda: True)  # the machine's load is not the test's

WORDS = ("auth", "session", "billing", "router", "cache", "parser", "queue", "worker", "schema", "client")


def coding_session(n: int) -> Session:
    """A coding agent's session with every text unique: requests and rules, tool calls, outputs
    naming files, lines, errors, ids, commits and quantities (the anchors retention tracks)."""
    messages: list[Message] = [Message(id="m0", index=0, role="system", parts=(TextPart("You are a coding agent. Never push to main."),))]
    call = 0
    while len(messages) < n:
        i = len(messages)
        w = WORDS[i % len(WORDS)]
        messages.append(Message(id=f"m{i}", index=i, role="user", parts=(TextPart(
            f"Fix the {w} bug in src/{w}/handler_{i % 37}.py (ticket ORD-{1000 + i}); make sure tests pass and keep latency under {i % 90 + 10} ms."),)))
        for _ in range(1 + i % 3):
            call += 1
            cid = f"call_{call}"
            k = len(messages)
            messages.append(Message(id=f"m{k}", index=k, role="assistant",
                                    parts=(ToolCallPart(cid, "shell", json.dumps({"cmd": f"pytest tests/test_{w}.py", "step": k})),)))
            messages.append(Message(id=f"m{k + 1}", index=k + 1, role="tool", tool_call_id=cid, parts=(ToolResultPart(cid, "\n".join(
                [f"src/{WORDS[(k + j) % len(WORDS)]}/mod_{j}.py:{j * 7 + k % 50}: ValueError: bad {w} value in `{w}_{j}`" for j in range(6)]
                + [f"commit {k:07x}a1 (step {k})", "E   AssertionError: expected 200, got 500"])),)))
        k = len(messages)
        messages.append(Message(id=f"m{k}", index=k, role="assistant",
                                parts=(TextPart(f"Edited lines {k % 300}-{k % 300 + 12} of src/{w}/handler_{k % 37}.py; see #{k} (step {k})."),)))
    return Session(messages=tuple(messages[:n]), source="<test>", format="test")


def same_index(a: anchors.AnchorIndex, b: anchors.AnchorIndex) -> None:
    assert b.session is a.session
    for name, value in vars(a).items():
        if name in ("session", "_lock", "_growth"):  # the state kept to grow is not sent (anchors_ahead._state)
            continue
        assert getattr(b, name) == value, name
        if isinstance(value, dict):
            assert list(getattr(b, name)) == list(value), f"{name}: same keys in the same order"
    assert set(vars(a)) == set(vars(b))


@needs_fork
def test_the_forked_index_is_the_one_built_here() -> None:
    session = coding_session(700)
    ahead = anchors_ahead.start(session, min_messages=0)
    here = build_index(session, MessageAnchors())
    got = ahead.index()
    assert ahead.forked
    assert len(got.anchors) > 500
    same_index(here, got)
    assert got.ids_in_text("see src/auth/handler_1.py") == here.ids_in_text("see src/auth/handler_1.py")
    with got._lock:  # a working lock, not the child's
        pass


@needs_fork
def test_an_index_from_the_child_grows_like_one_built_here() -> None:
    """The child does not send what an index keeps to grow: a session grown from it is read whole,
    to the same index a from-scratch read gives."""
    session = coding_session(700)
    ahead = anchors_ahead.start(session, min_messages=0)
    got = ahead.index()
    assert ahead.forked and got._growth is None
    grown = Session(messages=session.messages + coding_session(720).messages[700:], source="<test>", format="test")
    same_index(build_index(grown, MessageAnchors()), build_index(grown, MessageAnchors(), previous=got))


def test_a_small_session_is_indexed_here() -> None:
    session = coding_session(120)
    ahead = anchors_ahead.start(session)  # under MIN_MESSAGES
    assert ahead.pid is None
    same_index(build_index(session, MessageAnchors()), ahead.index())
    assert not ahead.forked


def test_the_index_leaves_the_collector_as_it_found_it_and_never_freezes(monkeypatch: pytest.MonkeyPatch) -> None:
    """`index()` pauses the collector while it reads and gives it back as it found it; freezing is a
    decision for the whole process, left to the caller (the CLI's `simulate`: test below)."""
    import gc

    freezes: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(gc.isenabled()))  # counted, not done: the test's objects stay collectable
    was = gc.isenabled()
    try:
        gc.disable()
        held = anchors_ahead.AnchorsAhead(coding_session(60))
        index = held.index()
        assert not gc.isenabled()
        gc.enable()
        running = anchors_ahead.AnchorsAhead(coding_session(60))
        assert running.index() is running.index()  # built once
        assert gc.isenabled()
        assert freezes == []
        same_index(build_index(held.session, MessageAnchors()), index)
    finally:
        if not was:
            gc.disable()


def test_simulate_freezes_the_index_only_where_the_collector_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's `simulate` moves the index it waited for out of the collector's generations (the
    process ends soon after), with the collector paused from before the index is read until the
    freeze; a caller that holds the collector off keeps it off, and nothing is frozen."""
    import gc

    from ctxviz.cli.retention import kept_index, timeline_retention_of

    freezes: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(gc.isenabled()))
    session = coding_session(60)
    was = gc.isenabled()
    try:
        gc.disable()
        held = anchors_ahead.AnchorsAhead(session)
        assert kept_index(held) is held.index()
        assert not gc.isenabled() and freezes == []
        gc.enable()
        timeline = simulate(session, "missy", get_policy("missy").make_params({"total": 12_000, "fresh_tail_count": 8}))
        got = timeline_retention_of(timeline, anchors_ahead.AnchorsAhead(session))
        assert gc.isenabled() and freezes == [False], "frozen once, with the collector paused"
        assert got.to_json(None) == timeline_retention(timeline, build_index(session, MessageAnchors())).to_json(None)
    finally:
        if not was:
            gc.disable()


def test_no_fork_when_turned_off_or_with_threads_running(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(anchors_ahead.ENV, "0")
    assert not anchors_ahead.can_fork()
    assert anchors_ahead.start(coding_session(60), min_messages=0).pid is None
    monkeypatch.delenv(anchors_ahead.ENV)
    monkeypatch.setattr(anchors_ahead, "_other_threads", lambda: True)
    assert anchors_ahead.start(coding_session(60), min_messages=0).pid is None
    monkeypatch.setattr(anchors_ahead, "_other_threads", lambda: False)
    monkeypatch.setattr(anchors_ahead, "_idle_core", lambda: False)
    assert anchors_ahead.start(coding_session(60), min_messages=0).pid is None


@needs_fork
def test_a_child_that_fails_leaves_the_index_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    session = coding_session(80)

    def broken(_session: Session, **_: object) -> anchors.AnchorIndex:
        raise MemoryError("the child ran out")

    monkeypatch.setattr(anchors_ahead, "build_index", broken)  # only the child calls it
    ahead = anchors_ahead.start(session, min_messages=0)
    assert ahead.pid is not None
    got = ahead.index()
    assert not ahead.forked
    same_index(build_index(session, MessageAnchors()), got)


@needs_fork
def test_close_stops_a_child_nobody_reads() -> None:
    ahead = anchors_ahead.start(coding_session(2_000), min_messages=0)
    pid = ahead.pid
    assert pid is not None
    ahead.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no zombie left
    assert ahead.pid is None and ahead.fd is None


@needs_fork
@pytest.mark.parametrize("share", [0.0, 0.4, 1.0])
def test_the_messages_this_process_reads_ahead_give_the_same_index(share: float) -> None:
    """The parent reads the last `share` of the messages itself and hands what they say to the
    child (kept in its own store too), the child reads the others: the index is the one built here
    from nothing, whatever the split."""
    from ctxviz.engine.anchor_cache import MESSAGE_STORE

    session = coding_session(650)
    n = len(session.messages)
    split = n - int(n * share)
    MESSAGE_STORE.clear()  # a cache: what earlier tests read is read again when asked
    before = MESSAGE_STORE.extracted
    ahead = anchors_ahead.start(session, min_messages=0, share=share)
    assert MESSAGE_STORE.extracted - before == n - split  # read here, before start() returned
    got = ahead.index()
    assert ahead.forked
    same_index(build_index(session, MessageAnchors()), got)
    ahead.close()


@needs_fork
def test_a_hand_over_that_fails_leaves_those_messages_to_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the parent hands nothing (its read failed: the hand-over's ends are closed unwritten),
    the child reads every message itself, to the same index."""
    session = coding_session(660)

    def fails(_session: Session, _split: int, handoff: int, ready: int) -> None:
        os.close(handoff)
        os.close(ready)

    monkeypatch.setattr(anchors_ahead, "_hand_over", fails)
    ahead = anchors_ahead.start(session, min_messages=0, share=0.5)
    got = ahead.index()
    assert ahead.forked
    same_index(build_index(session, MessageAnchors()), got)
    ahead.close()


@needs_fork
def test_a_child_that_sent_its_index_is_reaped_by_close() -> None:
    """`index()` reads the child's index without waiting for the child to exit; by `close()` it is
    reaped (no zombie left), whether it had exited when it was read or not."""
    ahead = anchors_ahead.start(coding_session(700), min_messages=0)
    pid = ahead.pid
    assert pid is not None
    ahead.index()
    assert ahead.forked and ahead.pid is None
    ahead.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert ahead.exiting is None


def test_plans_made_ahead_give_the_same_retention() -> None:
    session = coding_session(400)
    pol = get_policy("missy")
    timeline = simulate(session, "missy", pol.make_params({"total": 12_000, "fresh_tail_count": 8}))
    index = anchors.anchors_of(session)
    for kwargs in ({}, {"exact_work": 0, "samples": 9}):
        views = planned_views(timeline, **kwargs)
        before = views.plans
        ahead = timeline_retention(timeline, index, views=views, **kwargs)
        cold = timeline_retention(timeline, index, **kwargs)
        assert ahead.to_json(None) == cold.to_json(None)
        assert ahead.plans == cold.plans
        if kwargs:
            assert before > 0 and views.plans == before, "every plan retention checks was made ahead"


def test_a_path_judged_before_is_judged_the_same() -> None:
    """Path verdicts are kept per run of path characters: a run met again (in another text, after
    other texts) gives what it gave the first time, and the character before the run still counts."""
    texts = ["see src/auth/session.py and 1/2 of it", "user@host:src/auth/session.py", "a/b", "and/or src/auth/session.py.",
             "</command-name> ./run.sh", "~/notes/todo.md, 2024/01/02"]
    cold = []
    for t in texts:
        anchor_extract._PATH_VERDICTS.clear()
        cold.append(extract(t, "user"))
    anchor_extract._PATH_VERDICTS.clear()
    warm = [extract(t, "user") for t in texts + texts]
    assert warm == cold + cold
    assert ("path", "src/auth/session.py", "src/auth/session.py") in cold[0]
    assert not any(kind == "path" for kind, _, _ in cold[1])  # user@host:path is no file path


def write_jsonl(path: Path, session: Session) -> None:
    with path.open("w", encoding="utf-8") as f:
        for m in session.messages:
            f.write(json.dumps(m.to_openai()) + "\n")


def run_simulate(path: Path, fork: str, *extra: str) -> bytes:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), anchors_ahead.ENV: fork}
    done = subprocess.run([sys.executable, "-m", "ctxviz", "simulate", str(path), "--policy", "missy", "--retention", "on", *extra],
                          capture_output=True, check=True, cwd=ROOT, env=env)
    assert not done.stderr
    return done.stdout


@needs_fork
def test_simulate_prints_the_same_with_and_without_the_fork(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    write_jsonl(path, coding_session(900))  # above EXACT_WORK: sampled plans, made ahead
    for extra in ((), ("--json",)):
        forked, here = run_simulate(path, "1", *extra), run_simulate(path, "0", *extra)
        assert forked == here
    doc = json.loads(forked)
    assert doc["retention"]["plans"] > 1 and "checked against" in doc["retention"]["method"]
