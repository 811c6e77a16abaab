"""Writes bench/run.py's summary into README.md between two marker comments, so the README's table is
by construction what run.py printed (`python bench/run.py --write-readme`).

Only the text between `<!-- bench:start -->` and `<!-- bench:end -->` changes; the file is written
to a temporary file beside it and moved over it, so a run stopped half-way leaves the old README whole.
"""

from __future__ import annotations

import os
import tempfile

START = "<!-- bench:start -->"
END = "<!-- bench:end -->"


class MarkersError(ValueError):
    """README.md lacks the markers, has more than one pair, or has them in the wrong order."""


def replace_between(text: str, block: str) -> str:
    """`text` with what lies between the markers replaced by `block` (the markers kept, each on its own line)."""
    if text.count(START) != 1 or text.count(END) != 1:
        raise MarkersError(f"expected one {START} and one {END}, found {text.count(START)} and {text.count(END)}")
    head, rest = text.split(START)
    if END in head:
        raise MarkersError(f"{END} comes before {START}")
    _, tail = rest.split(END)
    return f"{head}{START}\n{block.strip()}\n{END}{tail}"


def write_readme(path: str, block: str) -> None:
    """Replace the marked block of the file at `path`, atomically (temporary file, then os.replace)."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    new = replace_between(text, block)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".README.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(new)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
