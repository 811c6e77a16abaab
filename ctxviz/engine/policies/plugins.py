"""Policies users bring: `--policy path/to/file.py:NAME` and the `ctxviz.policies` entry-point group.

A plugin's failures are the plugin's, not ctxviz's: loading it, or any call into it (its measure,
plan, compaction trigger, parameter defaults), that raises becomes one `PluginError` line naming the
plugin, so the CLI prints one line and the app shows one message instead of a traceback or a dead
window.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import CtxvizError, PluginError
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
            loaded = ep.load()
        except Exception as exc:
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
        policy.default_params()
    except Exception as exc:
        raise PluginError(f"{where}: its parameters cannot be built with their defaults ({_one_line(exc)})") from None
    label = f"policy plugin {policy.name!r} ({where.removeprefix('policy plugin ')})"
    changes: dict[str, Any] = {"plan": _guard(policy.plan, label, "plan"), "measure": _guard(policy.measure, label, "measure")}
    for name in ("compact", "refresh", "tokenizer_for_model"):
        fn = getattr(policy, name)
        if fn is not None:
            changes[name] = _guard(fn, label, name)
    return dataclasses.replace(policy, **changes)


def _guard(fn: Callable[..., Any], label: str, what: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CtxvizError:
            raise
        except Exception as exc:
            raise PluginError(f"{label}: its {what} raised {_one_line(exc)}") from None

    return call
