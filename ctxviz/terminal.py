"""Text for a terminal: what a session holds is shown, never obeyed.

Session text is untrusted: an escape sequence in a message (`ESC]0;TITLE BEL` retitles the window,
`ESC[2J` clears the screen) must reach the reader as visible text, not as a command to the terminal.
Every command that prints text for people writes through `TerminalText`; machine outputs (`--json`,
whose encoder escapes control characters itself, and exports, which are data) are left exact.
"""

from __future__ import annotations

import io
import re
from typing import Any, TextIO

#: C0 controls other than newline and tab, DEL and the C1 controls (0x9b is a one-byte CSI), each
#: shown the way Python writes it in a string literal.
_VISIBLE = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if c not in (0x0A, 0x09)}


def visible(text: str) -> str:
    """`text` with every control character that could steer a terminal spelled out."""
    return text.translate(_VISIBLE)


class TerminalText(io.TextIOBase):
    """A text stream that spells out control characters before they reach `stream`. Bytes written
    to `.buffer` (a PNG or an export to `/dev/stdout`) are data and pass through unchanged."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(visible(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def buffer(self) -> Any:
        return getattr(self.stream, "buffer", None)

    @property
    def closed(self) -> bool:  # type: ignore[override]
        return self.stream.closed

    def reconfigure(self, **kwargs: Any) -> None:
        reconfigure = getattr(self.stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(**kwargs)


#: A long quoted value: its opening quote stands after no letter or digit (the closing quote of a
#: short value before it, as in "plugin 'x' (a long path): 'y'", opens nothing), its closing one
#: before none.
_QUOTED = re.compile(r"""(?<![\w'"])(['"])([^'"\n]{120,}?)\1(?!\w)""")
#: The longest error line printed: a message quoting a 400 KB value is cut, not printed whole.
LINE_LIMIT = 1000


def one_line(message: str) -> str:
    """An error message as one readable line: whitespace collapsed, controls spelled out, a long
    quoted value cut to its start and end, and the whole line capped."""
    text = visible(" ".join(message.split()))
    text = _QUOTED.sub(lambda m: f"{m[1]}{m[2][:60]}…{m[2][-20:]}{m[1]} ({len(m[2]):,} characters)", text)
    if len(text) > LINE_LIMIT:
        text = text[: LINE_LIMIT - 30] + f"… ({len(text):,} characters in all)"
    return text
