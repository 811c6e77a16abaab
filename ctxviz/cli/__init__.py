"""The headless face of ctxviz: plan, export and count from the command line.

Every user error prints one line (`FILE:LINE: what is wrong` for files) and exits 2; the numbers are
the engine's, so they match the app's.

One module per command (`plan.py`, `export.py`, ...), each with its `add_parser(subparsers)` and its
`run(args) -> int`; what several commands share is in `options.py` (argparse pieces), `params.py`
(policy parameters), `session.py` (reading and planning the session), `retention.py`, `cost.py`,
`stdout.py` and `exits.py`.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from .. import __version__
from ..errors import CtxvizError
from ..terminal import TerminalText, one_line
from .exits import EXIT_OK, EXIT_USAGE
from .stdout import _STDOUT_ERRNOS, _silence_stdout

# The command modules import the engine and the loaders, so this module imports them only after
# `--version` has been answered: `ctxviz --version` starts as fast as Python. Each command still
# imports inside `run` what only it uses (the simulator, the summarizers' HTTP client, YAML presets,
# the model catalogue, Qt).


#: Every command, in the order `ctxviz --help` lists them; each is the module of the same name here.
COMMANDS: tuple[str, ...] = ("plan", "export", "count", "simulate", "compare", "why", "where", "gui", "report", "info", "sweep", "check",
                             "policies", "verify", "calibrate", "sessions", "watch")


def command(name: str) -> ModuleType:
    """One command's module (imported the first time it is asked for)."""
    import importlib

    return importlib.import_module(f"{__name__}.{name}")


def commands() -> dict[str, ModuleType]:
    """Every command's module, in the order `ctxviz --help` lists them."""
    return {name: command(name) for name in COMMANDS}


def _load() -> None:
    """Import the command modules (and with them the engine and the loaders). Kept for tests and
    tools written when the command line was one module that imported its engine here."""
    commands()


#: Names tests and tools import from `ctxviz.cli`, and the module that now holds each.
_MOVED = {"_parse_sets": "params", "unquote": "params", "resolve_params": "params", "check_model": "params",
          "reported_per_turn": "simulate", "sweep_files": "session", "loader_names": "options", "write_stdout": "stdout"}


def __getattr__(name: str) -> Any:
    """A name `ctxviz.cli` had before its commands became modules, imported when first asked for."""
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser, built once per process: building it costs more than most commands' own work
    (tests and tools that call `main` in-process call it thousands of times). With `only`, the
    parser of that one command: what `main` uses when the command line starts with a command's
    name, so `ctxviz plan` does not import the other sixteen commands' modules. Its answers are
    the whole parser's (a command's options are its own; the top-level usage never prints, as
    `_Parser.error` writes one line)."""
    return _build_parser(only)


def _build_parser(only: str | None = None) -> argparse.ArgumentParser:
    from .options import _Parser

    parser = _Parser(prog="ctxviz", description="See and tune how agent context managers trim a conversation.")
    parser.add_argument("--version", action="version", version=f"ctxviz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in (only,) if only is not None else COMMANDS:
        command(name).add_parser(sub)
    return parser


def _terminate_cleanly() -> None:
    """SIGTERM unwinds like Ctrl+C, so an export in progress removes its temporary file."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _one_blas_thread() -> None:
    """Before numpy is first imported: ctxviz does no linear algebra, and OpenBLAS starting a thread
    per core at import cost about 50 ms of every command's start. A user's own setting stands, and
    a process that imported numpy before (a test, a notebook) is left as it is."""
    if "numpy" not in sys.modules:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
            os.environ.setdefault(name, "1")


def main(argv: Sequence[str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:  # without importing the engine
        print(f"ctxviz {__version__}")
        return EXIT_OK
    words = list(sys.argv[1:] if argv is None else argv)
    _one_blas_thread()
    parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    _terminate_cleanly()
    writes_stdout = args.command not in ("gui", "report") and getattr(args, "output", "-") == "-"
    if writes_stdout and (sys.stdout is None or sys.stdout.closed):
        print(f"ctxviz {args.command}: cannot write to standard output: it is closed", file=sys.stderr)
        return EXIT_USAGE
    if sys.stdout is not None and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")  # text that is not valid Unicode never aborts a report
    plain = sys.stdout
    if plain is not None and not getattr(args, "json", False) and args.command not in ("export", "count"):
        sys.stdout = TerminalText(plain)  # session text is shown, never obeyed by the terminal
    try:
        code = command(args.command).run(args)
        if sys.stdout is not None:
            sys.stdout.flush()
        return code
    except CtxvizError as exc:
        print(one_line(str(exc)), file=sys.stderr)  # one line, whatever the message holds
        return EXIT_USAGE
    except BrokenPipeError:  # `ctxviz plan x | head`: the reader has what it wanted
        _silence_stdout()
        return EXIT_OK
    except OSError as exc:  # print() into a full or closed standard output
        if exc.errno in _STDOUT_ERRNOS and not exc.filename:
            _silence_stdout()
            print(f"ctxviz {args.command}: cannot write to standard output ({exc.strerror or exc})", file=sys.stderr)
            return EXIT_USAGE
        return _internal_error(args, exc)
    except KeyboardInterrupt:
        return 130
    except RecursionError:
        print(f"ctxviz {args.command}: the input is nested too deeply to process", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        return _internal_error(args, exc)
    finally:
        if sys.stdout is not plain and isinstance(sys.stdout, TerminalText):
            sys.stdout = plain


def _internal_error(args: argparse.Namespace, exc: Exception) -> int:
    if os.environ.get("CTXVIZ_DEBUG"):
        raise exc
    print(f"ctxviz {args.command}: internal error {type(exc).__name__}: {one_line(str(exc))} (set CTXVIZ_DEBUG=1 for a traceback)", file=sys.stderr)
    return EXIT_USAGE

