"""The policy registry: the CLI and the app discover policies here, by name."""

from __future__ import annotations

from typing import Any

from ...errors import UnknownNameError
from . import (
    autogen_buffered,
    autogen_head_and_tail,
    autogen_token_limited,
    categories,
    consolidator,
    llamaindex_chat_memory_buffer,
    llamaindex_chat_summary_memory_buffer,
    missy,
    mnesis,
    supyagent,
)
from .base import Policy

_REGISTRY: dict[str, Policy[Any]] = {}


def register(policy: Policy[Any]) -> Policy[Any]:
    _REGISTRY[policy.name] = policy
    return policy


def get_policy(name: str) -> Policy[Any]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNameError(f"unknown policy {name!r}; available: {', '.join(_REGISTRY)}") from None


def policy_names() -> list[str]:
    return list(_REGISTRY)


register(missy.POLICY)
register(supyagent.POLICY)
register(categories.POLICY)
register(consolidator.POLICY)
register(mnesis.POLICY)
register(llamaindex_chat_memory_buffer.POLICY)
register(llamaindex_chat_summary_memory_buffer.POLICY)
register(autogen_buffered.POLICY)
register(autogen_head_and_tail.POLICY)
register(autogen_token_limited.POLICY)

__all__ = ["Policy", "get_policy", "policy_names", "register"]
