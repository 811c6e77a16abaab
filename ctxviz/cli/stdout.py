"""Standard output that fails as one line: a closed, full or broken stream is a user error, not a traceback."""

from __future__ import annotations

import errno
import os
import sys

from ..errors import CtxvizError


def write_stdout(text: str) -> None:
    """Write to standard output, turning a closed or full stream into one line (not an exit-time
    'Exception ignored' message)."""
    out = sys.stdout
    if out is None or out.closed:
        raise CtxvizError("cannot write to standard output: it is closed")
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        _silence_stdout()
        raise CtxvizError(f"cannot write to standard output ({getattr(exc, 'strerror', None) or exc})") from None


_STDOUT_ERRNOS = {errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT, errno.EFBIG}


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null so the interpreter's last flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass

