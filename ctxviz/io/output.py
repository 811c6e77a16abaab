"""Writing what ctxviz produces without ever damaging what is already there.

An export goes to a regular file or a new path, never onto a device, FIFO, socket or directory
(as root, replacing `/dev/null` with a file breaks the system), and never over the session it was
made from. A symlink is followed and its target replaced. The bytes reach the target atomically:
they are written to an unnamed file in the target's folder (Linux `O_TMPFILE`) that only gets a
name once complete, then renamed over the target, so a reader sees the old file or the new one,
and a process killed mid-write leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable

from ..errors import CtxvizError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class OutputError(CtxvizError):
    """An output path ctxviz refuses to write, or a write that failed."""


def check_output_path(path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = ()) -> str:
    """The file an export to `path` will replace (symlinks resolved), or OutputError saying why not."""
    given = os.fspath(path)
    if not given:
        raise OutputError("the output path is empty")
    target = os.path.realpath(given)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            raise OutputError(f"{given}: no such directory {folder!r}") from None
        return target
    except OSError as exc:
        raise OutputError(f"{given}: cannot write here ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        what = next((text for test, text in _KINDS if test(mode)), "not a regular file")
        link = f" (the link points at {target})" if target != os.path.abspath(given) else ""
        raise OutputError(f"{given}: is {what}{link}; ctxviz writes only to a regular file or a new path")
    for source in inputs:
        with contextlib.suppress(OSError):
            if os.path.samefile(target, os.fspath(source)):
                raise OutputError(f"{given}: is the input session; writing there would destroy it (choose another output file)")
    return target


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
