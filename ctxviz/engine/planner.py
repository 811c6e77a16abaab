"""One call from a session and parameters to a Plan, reusing cached counts: what the CLI and app use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import is_dataclass
from typing import Any

from .counting import CountStore, ProgressCallback
from .plan import Plan
from .policies import get_policy
from .session import Session
from .tokenizers import Tokenizer

_default_store = CountStore()


def plan_session(
    session: Session,
    policy: str = "missy",
    params: Mapping[str, Any] | Any = None,
    tokenizer: Tokenizer | str | None = None,
    store: CountStore | None = None,
    progress: ProgressCallback | None = None,
) -> Plan:
    """Plan `session` with the named policy; `params` is the policy's dataclass or a dict of overrides."""
    pol = get_policy(policy)
    if params is None:
        resolved = pol.default_params()
    elif is_dataclass(params) and not isinstance(params, type):
        resolved = params
    else:
        resolved = pol.make_params(params)
    counts = (store or _default_store).get(session, pol.scheme(tokenizer, session.model), progress)
    return pol.plan(session, resolved, counts)
