"""User-facing errors: each renders as the one line the CLI prints and the GUI shows."""

from __future__ import annotations


class CtxvizError(Exception):
    """An error caused by the user's input, reported as one line, never as a traceback."""


class LoadError(CtxvizError):
    """A session or config file that cannot be read: `FILE:LINE: field: what is wrong`."""

    def __init__(self, path: str, message: str, line: int | None = None, field: str = "") -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else f"{self.path}"
        what = f"{self.field}: {self.message}" if self.field else self.message
        return f"{where}: {what}"


class ParameterError(CtxvizError):
    """A policy parameter that is unknown or invalid; the message is the framework's own when it has one."""


class UnknownNameError(CtxvizError):
    """An unknown policy, tokenizer, format or exporter name."""


class EndpointError(CtxvizError):
    """A summariser endpoint that cannot be reached or answers nonsense: its fault, not the session's."""


class PluginError(CtxvizError):
    """A user's own policy (a file or an installed entry point) that cannot be loaded or that raised:
    one line naming the plugin and what it raised, never the plugin's traceback."""
