"""The policy registry: the CLI and the app discover policies here, by name.

Besides the built-in policies: a user's own, from a file (`get_policy("path/to/file.py:NAME")`,
registered under the policy's own name) or from the `ctxviz.policies` entry-point group of any
installed package (loaded on the first lookup; a plugin that fails to load is left out and its
one-line problem kept in `plugin_problems()`).
"""

from __future__ import annotations

import importlib
from typing import Any

from ...errors import UnknownNameError
from .base import Policy

#: The built-in policies, in the order they are listed: name -> (module, attribute). A module is
#: imported the first time its policy is asked for, so `ctxviz plan` with missy imports missy alone
#: (importing all 21 took longer than planning a sample).
_BUILT_IN: dict[str, tuple[str, str]] = {
    "missy": ("missy.context_manager", "POLICY"),
    "supyagent": ("supyagent.context_manager", "POLICY"),
    "categories": ("penguin.context_window", "POLICY"),
    "missy-consolidator": ("missy.consolidator", "POLICY"),
    "mnesis": ("mnesis.context_builder", "POLICY"),
    "claude-code": ("claude_code.auto_compact", "POLICY"),
    "langchain-trim": ("langchain.trim", "POLICY"),
    "langchain-summarization": ("langchain.summarization", "POLICY"),
    "langchain-context-editing": ("langchain.context_editing", "POLICY"),
    "gemini-cli-compression": ("gemini.compression", "POLICY"),
    "codex-compaction": ("codex.compaction", "POLICY"),
    "anthropic-clear-tool-uses": ("anthropic.context_editing", "POLICY"),
    "anthropic-clear-thinking": ("anthropic.context_editing", "THINKING_POLICY"),
    "strands-sliding-window": ("strands.sliding_window", "POLICY"),
    "strands-summarizing": ("strands.summarizing", "POLICY"),
    "openhands-llm-summarizing": ("openhands.condenser", "POLICY"),
    "llamaindex-chat-memory-buffer": ("llamaindex.chat_memory_buffer", "POLICY"),
    "llamaindex-chat-summary-memory-buffer": ("llamaindex.chat_summary_memory_buffer", "POLICY"),
    "autogen-buffered": ("autogen.buffered", "POLICY"),
    "autogen-head-and-tail": ("autogen.head_and_tail", "POLICY"),
    "autogen-token-limited": ("autogen.token_limited", "POLICY"),
}
_REGISTRY: dict[str, Policy[Any]] = {}
#: `file.py:NAME` specs already loaded, so every later lookup of the same spec is a dict read.
_FILE_SPECS: dict[str, Policy[Any]] = {}
_PLUGIN_PROBLEMS: list[str] = []
_entry_points_loaded = False


def register(policy: Policy[Any]) -> Policy[Any]:
    _REGISTRY[policy.name] = policy
    return policy


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from .plugins import entry_point_policies

    found, problems = entry_point_policies()
    for policy in found:
        if policy.name in _REGISTRY or policy.name in _BUILT_IN:
            problems.append(f"policy plugin {policy.name!r}: a policy of that name exists already; the plugin is left out")
        else:
            register(policy)
    _PLUGIN_PROBLEMS.extend(problems)


def _built_in(name: str) -> Policy[Any]:
    module, attribute = _BUILT_IN[name]
    policy: Policy[Any] = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    if policy.name != name:
        raise RuntimeError(f"built-in policy {name!r} is named {policy.name!r} in its module")
    return register(policy)


def get_policy(name: str) -> Policy[Any]:
    found = _REGISTRY.get(name) or _FILE_SPECS.get(name)
    if found is not None:
        return found
    if name in _BUILT_IN:
        return _built_in(name)
    from .plugins import is_file_spec, load_file_policy

    if is_file_spec(name):
        policy = load_file_policy(name)
        existing = _REGISTRY.get(policy.name) or (_built_in(policy.name) if policy.name in _BUILT_IN else None)
        if existing is not None and existing.plan is not policy.plan and policy.name not in {p.name for p in _FILE_SPECS.values()}:
            from ...errors import PluginError

            raise PluginError(f"policy plugin {name}: its name {policy.name!r} is a built-in policy's; give it another name")
        _FILE_SPECS[name] = register(policy)
        return policy
    _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        names = policy_names(plugins=False)
        close = nearest_policies(name, names)
        hint = f" (did you mean {', '.join(repr(n) for n in close[:-1])}{' or ' if len(close) > 1 else ''}{close[-1]!r}?)" if close else ""
        raise UnknownNameError(f"unknown policy {name!r}{hint}; available: {', '.join(names)} "
                               "(or a file of your own: --policy path/to/file.py:NAME)") from None


def nearest_policies(name: str, names: list[str], limit: int = 3) -> list[str]:
    """The policies a mistyped name most likely meant: the name spelled with dashes (`claude_code`),
    the policies it begins (`codex` for codex-compaction, `langchain` for the langchain ones), else
    the closest by difflib. An unknown name got only the list of 21, where `--set` suggests."""
    wanted = name.strip().lower().replace("_", "-").replace(" ", "-")
    if wanted in names:
        return [wanted]
    begun = [n for n in names if wanted and n.startswith(wanted)]
    if begun:
        return begun[:limit]
    import difflib  # only for a name that is not a policy's

    return difflib.get_close_matches(wanted, names, n=limit, cutoff=0.6)


def policy_names(plugins: bool = True) -> list[str]:
    """Every policy's name; `plugins=False` skips looking for installed plugins (the scan of every
    installed package's metadata costs ~15 ms, too much for building the CLI's help text)."""
    if plugins:
        _load_entry_points()
    return [*_BUILT_IN, *(n for n in _REGISTRY if n not in _BUILT_IN)]


def plugin_problems() -> list[str]:
    """One line for each installed policy plugin that could not be loaded."""
    _load_entry_points()
    return list(_PLUGIN_PROBLEMS)


__all__ = ["Policy", "get_policy", "plugin_problems", "policy_names", "register"]
