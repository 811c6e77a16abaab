"""The policy registry: the CLI and the app discover policies here, by name.

Besides the built-in policies: a user's own, from a file (`get_policy("path/to/file.py:NAME")`,
registered under the policy's own name) or from the `ctxviz.policies` entry-point group of any
installed package (loaded on the first lookup; a plugin that fails to load is left out and its
one-line problem kept in `plugin_problems()`).
"""

from __future__ import annotations

from typing import Any

from ...errors import UnknownNameError
from . import (
    anthropic_editing,
    autogen_buffered,
    autogen_head_and_tail,
    autogen_token_limited,
    categories,
    claude_code,
    codex,
    consolidator,
    gemini_cli,
    langchain_context_editing,
    langchain_summarization,
    langchain_trim,
    llamaindex_chat_memory_buffer,
    llamaindex_chat_summary_memory_buffer,
    missy,
    mnesis,
    openhands_condenser,
    strands_sliding,
    strands_summarizing,
    supyagent,
)
from .base import Policy

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
        if policy.name in _REGISTRY:
            problems.append(f"policy plugin {policy.name!r}: a policy of that name exists already; the plugin is left out")
        else:
            register(policy)
    _PLUGIN_PROBLEMS.extend(problems)


def get_policy(name: str) -> Policy[Any]:
    found = _REGISTRY.get(name) or _FILE_SPECS.get(name)
    if found is not None:
        return found
    from .plugins import is_file_spec, load_file_policy

    if is_file_spec(name):
        policy = load_file_policy(name)
        existing = _REGISTRY.get(policy.name)
        if existing is not None and existing.plan is not policy.plan and policy.name not in {p.name for p in _FILE_SPECS.values()}:
            from ...errors import PluginError

            raise PluginError(f"policy plugin {name}: its name {policy.name!r} is a built-in policy's; give it another name")
        _FILE_SPECS[name] = register(policy)
        return policy
    _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError(f"unknown policy {name!r}; available: {', '.join(_REGISTRY)} "
                               "(or a file of your own: --policy path/to/file.py:NAME)") from None


def policy_names(plugins: bool = True) -> list[str]:
    """Every policy's name; `plugins=False` skips looking for installed plugins (the scan of every
    installed package's metadata costs ~15 ms, too much for building the CLI's help text)."""
    if plugins:
        _load_entry_points()
    return list(_REGISTRY)


def plugin_problems() -> list[str]:
    """One line for each installed policy plugin that could not be loaded."""
    _load_entry_points()
    return list(_PLUGIN_PROBLEMS)


register(missy.POLICY)
register(supyagent.POLICY)
register(categories.POLICY)
register(consolidator.POLICY)
register(mnesis.POLICY)
register(claude_code.POLICY)
register(langchain_trim.POLICY)
register(langchain_summarization.POLICY)
register(langchain_context_editing.POLICY)
register(gemini_cli.POLICY)
register(codex.POLICY)
register(anthropic_editing.POLICY)
register(anthropic_editing.THINKING_POLICY)
register(strands_sliding.POLICY)
register(strands_summarizing.POLICY)
register(openhands_condenser.POLICY)
register(llamaindex_chat_memory_buffer.POLICY)
register(llamaindex_chat_summary_memory_buffer.POLICY)
register(autogen_buffered.POLICY)
register(autogen_head_and_tail.POLICY)
register(autogen_token_limited.POLICY)

__all__ = ["Policy", "get_policy", "plugin_problems", "policy_names", "register"]
