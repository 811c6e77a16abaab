"""A session's anchor index built ahead, in a forked child process, while the caller replays.

`ctxviz simulate` with retention needs two things that do not depend on each other: the replay
(with the turns retention plans to check its model) and the session's anchor index
(engine/anchors.py). On a long session read for the first time the index is the larger part of
retention's cost (10,000 messages of a coding agent: about 2 s, as long as the whole replay), so
`start(session)` forks a child that builds it with the same `build_index` (keeping nothing to grow
from, `grows=False`: the parent's session never grows) and sends it back through a pipe as plain
data (tuples, dicts and `Anchor`s, pickled), and `AnchorsAhead.index()` takes it when the caller is
ready for it. `simulate` starts it as soon as the session is read, before it imports the replay's
modules (cli/simulate.py). Both cores extract: right after the fork this process reads the last
`PARENT_SHARE` of the messages itself (`_hand_over`) while the child reads the others, and hands
what they say to the child through a memory file; the child folds them all into the index.

The index is built in this process instead (`anchors_of`, the same answer) when no child can run:
no `os.fork` (Windows), not Linux (macOS forks badly once system frameworks are loaded), threads
running (a forked child holds only the forking thread, and a lock another thread held stays held),
a small session (fork costs more than it saves), every core busy (`_idle_core`: the child would
only compete with the replay, and the fork's own cost makes the command slower), `CTXVIZ_FORK=0`,
or a child that failed.

The child's index is the one the parent would have built: same code, same session, same hash seed
(a forked child inherits it), so the same anchors in the same order (tests/test_anchors_ahead.py
compares them field by field, and `simulate`'s output with and without the fork byte for byte).
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
import threading
from typing import Any

from .anchor_cache import MESSAGE_STORE
from .anchor_extract import said_in
from .anchors import ANCHOR_FIELDS as _FIELDS
from .anchors import AnchorIndex, anchors_of, build_index, make_anchor, said_keys
from .gc_pause import without_gc
from .session import Session

#: Sessions with fewer messages are indexed in this process: the fork and the pipe cost more than
#: the extraction they would overlap.
MIN_MESSAGES = 500
#: The share of the session's messages (its last ones) whose anchors the parent reads itself right
#: after the fork, while the child reads the others, and hands to the child: the parent's own work
#: until it waits for the index (the replay, the plans retention checks) is shorter than the child's
#: (10,000 messages, missy: about 0.4 s against 1.0 s of CPU), so both cores extract. A replay
#: slower than the index pays this share on its own path (a few tenths of a second on a run of
#: several seconds). 0.46 since the child builds its index from what it read and was handed: its
#: work after extracting (about 0.4 s) outlasts the parent's after the fork; the ratio to
#: `--retention off` at 10,000 messages (bench_retention.py, three runs each, interleaved) was 2.46x
#: at 0.4, 2.30x at 0.46, 2.28x at 0.52.
PARENT_SHARE = 0.46
#: This environment variable set to 0 keeps the index in this process; set to 1 it forks even when
#: every core looks busy (unset: fork when a core is free).
ENV = "CTXVIZ_FORK"

_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def can_fork() -> bool:
    """Whether a child can build the index safely here (see the module docstring)."""
    choice = os.environ.get(ENV, "")
    return (hasattr(os, "fork") and sys.platform.startswith("linux") and choice != "0" and not _other_threads()
            and (choice == "1" or _idle_core()))


def _other_threads() -> bool:
    return threading.active_count() > 1


def _idle_core() -> bool:
    """Whether a core is free for the child: the last minute's load average leaves one. On a machine
    whose cores are all busy the child only competes with the replay, and the fork's own cost (pages
    copied as the child touches them, the pipe) can make the command slower (measured on 2 cores at a
    load of 5-7: no faster in three interleaved rounds, slower in another)."""
    try:
        return os.getloadavg()[0] < (os.cpu_count() or 1) - 0.5
    except OSError:
        return False


class AnchorsAhead:
    """The index of one session, being built in a child (`pid`, read from `fd`) or not yet built."""

    def __init__(self, session: Session, pid: int | None = None, fd: int | None = None) -> None:
        self.session = session
        self.pid = pid
        self.fd = fd
        self._index: AnchorIndex | None = None
        #: Whether the index came from the child (a test reads it).
        self.forked = False
        #: A child that sent its index and had not exited when it was read: `close()` reaps it.
        self.exiting: int | None = None

    def index(self) -> AnchorIndex:
        """The session's anchor index: the child's, or built here when there is none. The collector
        is paused meanwhile: unpickling the child's index makes some 100,000 objects, and the passes
        that set off each walked the whole heap the replay had grown (10,000 messages: 0.116 s ->
        0.047 s). It is left as it was found: whether to move the index out of the collector's
        generations for good (`gc.freeze`, a decision for the whole process) is the caller's; the
        CLI's `simulate` does (cli/retention.py)."""
        if self._index is None:
            running = gc.isenabled()
            gc.disable()
            try:
                state = self._receive()
                if state is not None:
                    self._index = _rebuild(self.session, state)
                    self.forked = True
                else:
                    self._index = anchors_of(self.session)
            finally:
                if running:
                    gc.enable()
        return self._index

    def _receive(self) -> dict[str, Any] | None:
        """The child's state, read to the end of the pipe. The child is not waited for here: it
        closes the pipe only after writing everything, then exits, and the kernel's tearing down of
        a process that size (10,000 messages: 10-30 ms) would be spent waiting. A child that failed
        wrote nothing, or stopped mid-write and left a pickle that does not load; either way the
        index is built here. It is reaped at once if it is gone, else by `close()`."""
        if self.pid is None or self.fd is None:
            return None
        fd, pid = self.fd, self.pid
        self.fd = self.pid = None
        try:
            with os.fdopen(fd, "rb") as pipe:
                data = pipe.read()
        except OSError:
            data = b""
        self._reap(pid)
        if not data:
            return None
        try:
            state = pickle.loads(data)
        except Exception:  # a child killed mid-write: build it here
            return None
        return state if isinstance(state, dict) else None

    def _reap(self, pid: int) -> None:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except OSError:  # reaped already (ChildProcessError)
            return
        if not done:
            self.exiting = pid

    def close(self) -> None:
        """Stop a child whose index nobody will read (the command failed before it needed it), and
        reap one that sent its index and was still exiting when it was read."""
        if self.exiting is not None:
            try:
                os.waitpid(self.exiting, 0)
            except OSError:
                pass
            self.exiting = None
        if self.pid is not None:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = None
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


def start(session: Session, min_messages: int = MIN_MESSAGES, share: float = PARENT_SHARE) -> AnchorsAhead:
    """Begin building the session's anchor index in a child process when that can help; the caller
    takes it with `.index()` (and calls `.close()` if it never does). This process first reads the
    last `share` of the messages itself and hands what they say to the child (`_hand_over`), which
    reads the others meanwhile; a hand-over that fails leaves them to the child."""
    if len(session.messages) < min_messages or not can_fork():
        return AnchorsAhead(session)
    n = len(session.messages)
    split = n - int(n * share)
    handoff = ready_r = ready_w = -1
    if split < n and hasattr(os, "memfd_create"):
        try:
            handoff = os.memfd_create("ctxviz-anchors")
            ready_r, ready_w = os.pipe()
        except OSError:
            _close(handoff, ready_r, ready_w)
            handoff = ready_r = ready_w = -1
    if handoff < 0:
        split = n
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        _close(read, write, handoff, ready_r, ready_w)
        return AnchorsAhead(session)
    if pid == 0:  # the child: build, send, leave without running the parent's exit handlers
        code = 1
        # The child frees nothing before it leaves: the collector only walked the index it was
        # building, when `_state` and `pickle.dumps` made their tuples (10,000 messages: 30-40 ms).
        gc.disable()
        try:
            _close(read, ready_w)
            said = _said_in(session, 0, split)  # its share, while the parent reads the rest
            if split < n:
                theirs = _handed(handoff, ready_r)
                said += theirs if theirs is not None and len(theirs) == n - split else _said_in(session, split, n)
            # Built from what was read here and handed over, not through the store: the store's
            # bookkeeping (each text's entry, kept for an index that grows) dies with this process.
            data = pickle.dumps(_state(build_index(session, grows=False, said=said)), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write, "wb") as pipe:
                pipe.write(data)
            code = 0
        except BaseException:  # noqa: BLE001 (the parent builds the index itself on any failure)
            pass
        finally:
            os._exit(code)
    _close(write, ready_r)
    if split < n:
        _hand_over(session, split, handoff, ready_w)
    return AnchorsAhead(session, pid, read)


def _said_in(session: Session, start: int, stop: int) -> list[Any]:
    """What messages[start:stop] say (`said_in` of each), read without the store; a message that
    repeats another's text, voice and role (a log's "ok", a file read twice) is read once, as the
    store would."""
    seen: dict[tuple[str, str, bool, str], Any] = {}
    out = []
    for key in said_keys(session, start, stop):
        found = seen.get(key)
        if found is None:
            voice, role, swe, text = key
            found = seen[key] = said_in(text, voice, role, swe)
        out.append(found)
    return out


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


@without_gc
def _hand_over(session: Session, split: int, handoff: int, ready: int) -> None:
    """Read what messages[split:] say (kept in this process's store too: an index built here after
    all reuses them) and hand it to the child: pickled into `handoff` (a memory file, so writing
    never waits for the child), then its size written to `ready`, which the child waits on. On any
    failure the child reads the end of `ready` and extracts those messages itself."""
    try:
        said = MESSAGE_STORE.said(said_keys(session, split, len(session.messages)), said_in)
        payload = memoryview(pickle.dumps(said, protocol=pickle.HIGHEST_PROTOCOL))
        done = 0
        while done < len(payload):
            done += os.write(handoff, payload[done:])
        os.write(ready, len(payload).to_bytes(8, "little"))
    except Exception:  # noqa: BLE001 (the child extracts them itself)
        pass
    finally:
        _close(handoff, ready)


def _handed(handoff: int, ready: int) -> list[Any] | None:
    """In the child: what the parent read of its share (`_hand_over`), or None when it handed nothing."""
    try:
        head = os.read(ready, 8)
        if len(head) != 8:
            return None
        size = int.from_bytes(head, "little")
        chunks: list[bytes] = []
        got = 0
        while got < size:
            chunk = os.pread(handoff, size - got, got)
            if not chunk:
                return None
            chunks.append(chunk)
            got += len(chunk)
        said = pickle.loads(b"".join(chunks))
        return said if isinstance(said, list) else None
    except Exception:  # noqa: BLE001
        return None
    finally:
        _close(handoff, ready)


#: Attributes sent as each anchor's fields (`_FIELDS`) and made into `Anchor`s again by the parent:
#: pickling a frozen dataclass goes through its `__reduce_ex__` and sets each field on load, about
#: three times the cost of a tuple of tuples for the 8,000 anchors of 10,000 messages, and the
#: parent waits for it. `user_anchors` is rebuilt from the same objects, as the index holds them.
_ANCHOR_LISTS = ("anchors", "user_anchors")


def _state(index: AnchorIndex) -> dict[str, Any]:
    """The index as plain data: every attribute but the session (the parent has it), its locks, and
    what it keeps to grow (`_growth`: a copy of every text in lower case, as large as the session's
    text; `simulate` never grows its session, and an index without it is read whole if one does).
    The anchors go as their fields; `user_anchors` as their ids."""
    state = {k: (_LockMark(type(v) is _LOCK_TYPES[1]) if isinstance(v, _LOCK_TYPES) else None if k == "_growth" else v)
             for k, v in vars(index).items() if k != "session"}
    state["anchors"] = _Fields([tuple(map(a.__dict__.__getitem__, _FIELDS)) for a in index.anchors])
    state["user_anchors"] = _Ids([a.id for a in index.user_anchors])
    return state


class _Fields(list):  # type: ignore[type-arg]
    """Each anchor's fields in `_FIELDS` order (a plain list would be taken for the attribute itself)."""


class _Ids(list):  # type: ignore[type-arg]
    """Anchor ids that stand for the anchors of the same index."""


class _LockMark:
    """Stands for a lock in the sent state (locks cannot be pickled); the parent makes a new one."""

    def __init__(self, reentrant: bool) -> None:
        self.reentrant = reentrant


def _rebuild(session: Session, state: dict[str, Any]) -> AnchorIndex:
    index = AnchorIndex.__new__(AnchorIndex)
    anchors = tuple(make_anchor(*fields) for fields in state["anchors"])
    for k, v in state.items():
        if isinstance(v, _LockMark):
            v = threading.RLock() if v.reentrant else threading.Lock()
        elif isinstance(v, _Fields):
            v = anchors
        elif isinstance(v, _Ids):
            v = tuple(anchors[i] for i in v)
        setattr(index, k, v)
    index.session = session
    return index
