"""One call from a session and parameters to a Plan, reusing cached counts: what the CLI and app use."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import is_dataclass
from typing import Any

from .checks import PlanOptions, apply_pair_safety, find_orphans, real_count
from .counting import CountStore, ProgressCallback
from .plan import Plan
from .policies import get_policy
from .redaction import redaction_note
from .reported import reported_usage
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
    options: PlanOptions | None = None,
) -> Plan:
    """Plan `session` with the named policy; `params` is the policy's dataclass or a dict of overrides.

    Every plan flags broken tool-call pairs; `options` adds pair safety and the real-count check.
    """
    pol = get_policy(policy)
    if params is None:
        resolved = pol.default_params()
    elif is_dataclass(params) and not isinstance(params, type):
        resolved = params
    else:
        resolved = pol.make_params(params)
    store = store if store is not None else _default_store  # an empty store is falsy (it has __len__)
    counts = store.get(session, pol.scheme(tokenizer, session.model), progress)
    plan = pol.plan(session, resolved, counts)
    options = options or PlanOptions()
    if options.pins:
        from .pins import apply_pins, resolve_pins

        plan = apply_pins(plan, session, resolve_pins(session, options.pins), counts)
    if options.pair_safe:
        plan = apply_pair_safety(plan, session, counts)
    plan = dataclasses.replace(plan, orphans=tuple(find_orphans(session, plan.messages)))
    reported = reported_usage(session)
    if reported is not None:
        plan = dataclasses.replace(plan, reported=reported, notes=(*plan.notes, reported.unseen_note()) if reported.unseen else plan.notes)
    if options.real_count:
        plan = dataclasses.replace(plan, real=real_count(plan, session, options.model or session.model, store))
    redacted = redaction_note(session)  # (a sanitised log: its counts are the markers', engine/redaction.py)
    if session.notes or redacted:  # what the loader changed or left out belongs with every plan of the session
        plan = dataclasses.replace(plan, notes=(*session.notes, *((redacted,) if redacted else ()), *plan.notes))
    return plan
