"""Writing what ctxviz produces without ever damaging what is already there.

Every output path of every command and of the app goes through this module (`write_output`, or
`open_append` for the sweep's results file): exports, reports, sweep tables, charts and results,
JUnit files, screenshots and presets. An output goes to a regular file or a new path, never onto a
device, FIFO, socket or directory (as root, replacing `/dev/null` with a file breaks the system; a
FIFO with no reader would block for ever), never over a read-only file, and never over an input it
was made from, whatever path or link names it. A symlink is followed and its target replaced. The
bytes reach the target atomically: they are written to an unnamed file in the target's folder
(Linux `O_TMPFILE`) that only gets a name once complete, then renamed over the target, so a reader
sees the old file or the new one, and a process killed mid-write leaves nothing behind.

`-`, `/dev/stdout` (and `/dev/stderr`) name the process's own streams: the bytes are written to
the stream, so `-o /dev/stdout >> ci.log` appends to the log as the shell says, instead of replacing
the file the stream happens to point at.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from typing import IO

from ..errors import CtxvizError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


#: Names of the process's own output streams: writing to them writes to the stream (appending where
#: the shell opened it so), never replaces the file the stream points at.
STREAM_NAMES = {"-": 1, "/dev/stdout": 1, "/dev/fd/1": 1, "/proc/self/fd/1": 1,
                "/dev/stderr": 2, "/dev/fd/2": 2, "/proc/self/fd/2": 2}
#: Files a folder given as input contributes (the sweep and check read every session in a folder).
SESSION_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml", ".traj")


class OutputError(CtxvizError):
    """An output path ctxviz refuses to write, or a write that failed."""


def stream_of(path: str | os.PathLike[str]) -> int | None:
    """1 or 2 when `path` names standard output or standard error, else None."""
    return STREAM_NAMES.get(os.fspath(path))


def check_output_path(path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = ()) -> str:
    """The file an output to `path` will replace (symlinks resolved), `-` for a standard stream, or
    OutputError saying why not. `inputs` are the files (or folders of them) the output is made from."""
    given = os.fspath(path)
    if not given:
        raise OutputError("the output path is empty")
    if stream_of(given) is not None:
        return "-"
    target = os.path.realpath(given)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"{given}: cannot write here ({exc.strerror or exc})") from None
    if mode is None:  # a new file
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            raise OutputError(f"{given}: no such directory {folder!r}")
        if not os.access(folder, os.W_OK):
            raise OutputError(f"{given}: cannot write in {folder!r} (permission denied)")
        _refuse_inputs(given, target, inputs)
        return target
    if not stat.S_ISREG(mode):
        what = next((text for test, text in _KINDS if test(mode)), "not a regular file")
        link = f" (the link points at {target})" if target != os.path.abspath(given) else ""
        raise OutputError(f"{given}: is {what}{link}; ctxviz writes only to a regular file or a new path")
    _refuse_inputs(given, target, inputs)
    # As root, access() says yes to everything: the permission bits are what the user set.
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise OutputError(f"{given}: is read-only; ctxviz does not replace it (make it writable or choose another output file)")
    if not os.access(os.path.dirname(target), os.W_OK):
        raise OutputError(f"{given}: cannot replace it: its folder is not writable")
    return target


def _refuse_inputs(given: str, target: str, inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Refuse a target that is an input, through any path or link, or a session file inside a
    folder given as input (which the next run would read)."""
    for source in inputs:
        name = os.fspath(source)
        if not name or stream_of(name) is not None:
            continue
        with contextlib.suppress(OSError):
            if os.path.isdir(name):
                folder = os.path.realpath(name)
                if target.startswith(folder + os.sep) and target.endswith(SESSION_SUFFIXES):
                    raise OutputError(f"{given}: is inside the input folder {name}, where it would be read as a session "
                                      "(choose another output file)")
            elif os.path.samefile(target, name) if os.path.exists(target) else os.path.realpath(name) == target:
                same = os.path.abspath(name) == os.path.abspath(given)
                raise OutputError(f"{given}: is the input session{'' if same else f' {name}'}; writing there would destroy it "
                                  "(choose another output file)")


def write_output(path: str | os.PathLike[str], data: str | bytes, inputs: Iterable[str | os.PathLike[str]] = ()) -> str:
    """Write `data` to `path`: to the stream itself for `-` or `/dev/stdout`, otherwise atomically
    after `check_output_path`. Returns what was written ("standard output" or the file)."""
    stream = stream_of(path)
    if stream is None:
        return write_atomic(path, data, inputs)
    payload = data.encode("utf-8", "replace") if isinstance(data, str) else data
    out = sys.stdout if stream == 1 else sys.stderr
    try:
        if out is None:
            raise OSError("it is closed")
        out.flush()
        buffer = getattr(out, "buffer", None)
        if buffer is not None:
            buffer.write(payload)
            buffer.flush()
        else:  # a text stream without bytes underneath (a test's capture): text is what it takes
            out.write(payload.decode("utf-8", "replace"))
            out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        name = "standard output" if stream == 1 else "standard error"
        raise OutputError(f"cannot write to {name} ({getattr(exc, 'strerror', None) or exc})") from None
    return "standard output" if stream == 1 else "standard error"


def open_append(path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = ()) -> IO[str]:
    """A file to append lines to (the sweep's results, kept as each replay finishes), checked as any
    output is: never a FIFO, device, directory, read-only file or input."""
    if stream_of(path) is not None:
        raise OutputError(f"{os.fspath(path)}: a results file must be a file (it is read back to resume)")
    target = check_output_path(path, inputs)
    try:
        return open(target, "a", encoding="utf-8")  # noqa: SIM115 (the caller closes it)
    except OSError as exc:
        raise OutputError(f"{os.fspath(path)}: cannot write ({exc.strerror or exc})") from None


def _mode_for(target: str) -> int:
    """Keep the permissions of the file being replaced; a new file gets the usual ones."""
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str | os.PathLike[str], data: str | bytes, inputs: Iterable[str | os.PathLike[str]] = ()) -> str:
    """Write `data` to `path` atomically after `check_output_path`; returns the file written."""
    if stream_of(path) is not None:
        return write_output(path, data, inputs)
    target = check_output_path(path, inputs)
    payload = data.encode("utf-8", "replace") if isinstance(data, str) else data  # a stray surrogate never aborts a write
    folder = os.path.dirname(target)
    mode = _mode_for(target)
    try:
        try:
            _write_unnamed(folder, target, payload, mode)
        except _NoUnnamedFiles:
            _write_named(folder, target, payload, mode)
    except OSError as exc:
        raise OutputError(f"{os.fspath(path)}: cannot write ({exc.strerror or exc})") from None
    return target


class _NoUnnamedFiles(Exception):
    pass


def _write_unnamed(folder: str, target: str, payload: bytes, mode: int) -> None:
    """O_TMPFILE: the data has no name until it is complete, so no crash can leave a stray file."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        raise _NoUnnamedFiles
    try:
        fd = os.open(folder, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:  # the filesystem does not support it (EOPNOTSUPP, EISDIR on old kernels...)
        if isinstance(exc, PermissionError):
            raise
        raise _NoUnnamedFiles from None
    try:
        os.fchmod(fd, mode)
        _write_all(fd, payload)
        os.fsync(fd)
        tmp = _unused_name(folder)
        try:
            os.link(f"/proc/self/fd/{fd}", tmp, follow_symlinks=True)
        except OSError:
            raise _NoUnnamedFiles from None
        try:
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    finally:
        os.close(fd)


def _write_named(folder: str, target: str, payload: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".ctxviz-", suffix=".tmp", dir=folder)
    try:
        try:
            os.fchmod(fd, mode)
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view[: 1 << 24])
        view = view[written:]


def _unused_name(folder: str) -> str:
    return os.path.join(folder, f".ctxviz-{os.getpid()}-{os.urandom(6).hex()}.tmp")
