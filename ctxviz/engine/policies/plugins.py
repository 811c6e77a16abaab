"""Policies users bring: `--policy path/to/file.py:NAME` and the `ctxviz.policies` entry-point group.

A plugin's failures are the plugin's, not ctxviz's: loading it, or any call into it (its measure,
plan, compaction trigger, parameter defaults), that raises (SystemExit included) or returns what
ctxviz cannot use (no Plan, a negative, fractional or NaN token count) becomes one `PluginError`
line naming the plugin, so the CLI prints one line and the app shows one message instead of a
traceback, a silent exit or a wrong total. While its code runs, what it prints goes to standard
error: `plan --json`, `export -o -` and the other machine outputs stay clean.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import CtxvizError, PluginError
from ..plan import Plan
from .base import Policy

ENTRY_POINT_GROUP = "ctxviz.policies"


def is_file_spec(name: str) -> bool:
    """`path/to/file.py:NAME` (the colon after `.py`); a registered name never looks like that."""
    path, sep, attr = name.rpartition(":")
    return bool(sep) and path.endswith(".py") and bool(attr)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    return f"{type(exc).__name__}: {text[:300]}"


def load_file_policy(spec: str) -> Policy[Any]:
    """Import `file.py` as a module of its own and return its `NAME`, which must be a Policy."""
    path_text, _, attr = spec.rpartition(":")
    path = Path(path_text).expanduser()
    where = f"policy plugin {spec}"
    if not path.is_file():
        raise PluginError(f"{where}: no such file {str(path)!r}")
    module_name = "ctxviz_plugin_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    module = sys.modules.get(module_name)
    if module is None:
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise PluginError(f"{where}: cannot be imported as Python")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module  # dataclasses look their module up while the file runs
        try:
            with contextlib.redirect_stdout(sys.stderr):
                module_spec.loader.exec_module(module)
        except BaseException as exc:  # a plugin may raise anything, SystemExit included
            del sys.modules[module_name]
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise PluginError(f"{where}: importing {path.name} raised {_one_line(exc)}") from None
    try:
        policy = getattr(module, attr)
    except AttributeError:
        found = sorted(k for k, v in vars(module).items() if isinstance(v, Policy))
        raise PluginError(f"{where}: {path.name} has no {attr!r}" + (f" (its policies: {', '.join(found)})" if found else
                                                                      " (define NAME = ctxviz.api.Policy(...))")) from None
    return guarded(policy, where)


def entry_point_policies() -> tuple[list[Policy[Any]], list[str]]:
    """Every installed `ctxviz.policies` entry point: (the policies, one line per plugin that failed)."""
    policies: list[Policy[Any]] = []
    problems: list[str] = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"policy plugin {ep.name} ({ep.value}, entry point of {ep.dist.name if ep.dist else 'an installed package'})"
        try:
            with contextlib.redirect_stdout(sys.stderr):
                loaded = ep.load()
        except (Exception, SystemExit) as exc:
            problems.append(f"{where}: loading raised {_one_line(exc)}")
            continue
        try:
            policies.append(guarded(loaded, where))
        except PluginError as exc:
            problems.append(str(exc))
    return policies, problems


def guarded(policy: Any, where: str) -> Policy[Any]:
    """The plugin's Policy with every call into its code turned into a one-line PluginError."""
    if not isinstance(policy, Policy):
        raise PluginError(f"{where}: is a {type(policy).__name__}, not a ctxviz.api.Policy")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            policy.default_params()
    except (Exception, SystemExit) as exc:
        raise PluginError(f"{where}: its parameters cannot be built with their defaults ({_one_line(exc)})") from None
    label = f"policy plugin {policy.name!r} ({where.removeprefix('policy plugin ')})"
    changes: dict[str, Any] = {"plan": _guard(policy.plan, label, "plan", _a_plan),
                               "measure": _guard(policy.measure, label, "measure", _a_count)}
    for name, check in (("compact", None), ("refresh", _a_plan), ("tokenizer_for_model", None), ("measure_session", _counts)):
        fn = getattr(policy, name)
        if fn is not None:
            changes[name] = _guard(fn, label, name, check)
    return dataclasses.replace(policy, **changes)


def _a_plan(value: Any) -> str:
    if not isinstance(value, Plan):
        return f"returned {_what(value)}, not a ctxviz Plan"
    for name in ("used", "budget"):
        if problem := _a_count(getattr(value.totals, name)):
            return f"returned a plan whose {name} total {problem.removeprefix('returned the token count ')}"
    return ""


def _a_count(value: Any) -> str:
    """A token count ctxviz can add up: a whole number, 0 or more (bool is no count)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"returned {_what(value)}, not a token count"
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value) or not value.is_integer()):
        return f"returned the token count {value!r}; a count is a whole number"
    if value < 0:
        return f"returned the token count {value!r}; a count is 0 or more"
    return ""


def _counts(value: Any) -> str:
    if not isinstance(value, list | tuple):
        return f"returned {_what(value)}, not a list of token counts"
    return next((f"message #{i}: {problem}" for i, v in enumerate(value) if (problem := _a_count(v))), "")


def _what(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _guard(fn: Callable[..., Any], label: str, what: str, check: Callable[[Any], str] | None = None) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            with contextlib.redirect_stdout(sys.stderr):  # a plugin's print() never lands in machine output
                result = fn(*args, **kwargs)
        except CtxvizError:
            raise
        except (Exception, SystemExit) as exc:  # sys.exit() in a plugin is the plugin's failure, not a silent exit
            raise PluginError(f"{label}: its {what} raised {_one_line(exc)}") from None
        problem = check(result) if check is not None else ""
        if problem:
            raise PluginError(f"{label}: its {what} {problem}")
        return int(result) if check is _a_count else result

    return call
