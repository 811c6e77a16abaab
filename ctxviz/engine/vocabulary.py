"""One vocabulary across frameworks: *when* a policy acts (its trigger) and *how much recent history
survives* (its keep).

Every framework spells these two knobs its own way: a token count, a fraction of the model's
window, a number of messages. A policy names its trigger and keep parameters (`Policy.trigger`,
`Policy.keep`) and each such field says its unit in its metadata (`unit`: "tokens", "fraction"
of the model's context window, "messages", or "tool_results" and "share" (of the messages), which no other unit converts to). From that, this module converts both ways: the token
level a policy's trigger stands at (drawn on the timeline), and a policy's parameters set to fire at
N tokens and keep K messages (`compare --trigger-tokens N --keep-messages K` puts two frameworks on
the same footing). A policy whose knobs are not plain numbers supplies `Policy.align` and
`Policy.trigger_level` itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import ParameterError
from .catalog import find_model
from .plan import Plan
from .policies.base import Policy, param_fields
from .session import Session

UNITS = ("tokens", "fraction", "messages", "tool_results", "share")


def _units(policy: Policy[Any]) -> dict[str, str]:
    return {f.name: f.metadata.get("unit", "") for f in param_fields(policy.params_type)}


def model_window(session: Session, params: Any = None) -> int | None:
    """The context window the policy's fractions are of: its own `context_window`/`context_limit`
    parameter when set, else what the log reports, else the catalogue's entry for the session's model."""
    for name in ("context_window", "context_limit", "context_window_limit", "max_input_tokens"):
        value = getattr(params, name, None)
        if isinstance(value, int) and value > 0:
            return value
    if session.context_window:
        return session.context_window
    entry = find_model(session.model) if session.model else None
    return entry.context_window if entry is not None else None


def token_trigger_fields(policy: Policy[Any]) -> list[str]:
    """The trigger parameters that set a token level (the ones a chart's trigger line stands for)."""
    units = _units(policy)
    return [n for n in policy.trigger if units.get(n) in ("tokens", "fraction")]


def trigger_count(policy: Policy[Any], plan: Plan) -> int:
    """The count the policy's trigger compares with its level in this plan (`Policy.trigger_count`,
    else the tokens the plan sends): how far a context is from compacting."""
    return policy.trigger_count(plan) if policy.trigger_count is not None else plan.totals.used


def trigger_level(policy: Policy[Any], params: Any, session: Session) -> int | None:
    """The token count at which the policy acts, or None (it triggers on messages, or is unset)."""
    if policy.trigger_level is not None:
        level: int | None = policy.trigger_level(params, session)
        return level
    units = _units(policy)
    for name in policy.trigger:
        value = getattr(params, name, None)
        if value is None or isinstance(value, bool):
            continue
        if units.get(name) == "tokens":
            return int(value)
        if units.get(name) == "fraction":
            of = next((getattr(params, n) for n in policy.trigger if units.get(n) == "tokens" and getattr(params, n, None)), None)
            window = of or model_window(session, params)
            if window:
                return int(value * window)
    return None


def align(policy: Policy[Any], params: Any, session: Session, trigger_tokens: int | None = None,
          keep_messages: int | None = None, keep_tokens: int | None = None) -> tuple[Any, list[str]]:
    """`params` with the policy's trigger set to fire at `trigger_tokens` and its keep set to
    `keep_messages` messages or `keep_tokens` tokens, in the policy's own units; and one line per
    knob the policy cannot express that way (so a comparison says what it could not align)."""
    if policy.align is not None:
        aligned, skipped = policy.align(params, session, trigger_tokens, keep_messages, keep_tokens)
        return aligned, list(skipped)
    units = _units(policy)
    changes: dict[str, Any] = {}
    skipped: list[str] = []
    if trigger_tokens is not None:
        token_fields = [n for n in policy.trigger if units.get(n) == "tokens"]
        fraction_fields = [n for n in policy.trigger if units.get(n) == "fraction"]
        if fraction_fields:
            base = next((getattr(params, n) for n in token_fields if getattr(params, n, None)), None) or model_window(session, params)
            if not base:
                skipped.append(f"{policy.name}: its trigger {fraction_fields[0]} is a fraction of the model's window, which is unknown here")
            else:
                changes[fraction_fields[0]] = trigger_tokens / base
        elif token_fields:
            changes[token_fields[0]] = trigger_tokens
        else:
            skipped.append(f"{policy.name}: its trigger ({', '.join(policy.trigger) or 'none'}) is not a token level")
    for wanted, unit in ((keep_messages, "messages"), (keep_tokens, "tokens")):
        if wanted is None:
            continue
        fields = [n for n in policy.keep if units.get(n) == unit]
        if fields:
            changes[fields[0]] = wanted
        else:
            skipped.append(f"{policy.name}: it keeps no number of {unit} ({', '.join(policy.keep) or 'it has no keep parameter'})")
    if not changes:
        return params, skipped
    try:
        return dataclasses.replace(params, **changes), skipped
    except ValueError as exc:
        raise ParameterError(f"{policy.name}: aligning {', '.join(f'{k}={v!r}' for k, v in changes.items())}: {exc}") from None
