"""A complete Plan from per-message decisions: what a small policy (a plugin) needs to write.

The seed policies build their plans by hand because each lays out its own zones and reserves. A
policy that only decides, message by message, what is sent should not have to know how the
context, the totals and the usage figures are assembled; `plan_from_decisions` does that, with
the invariants every view relies on (usage parts add up to `used`, kept plus dropped add up to the
session's tokens).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ..counting import TokenCounts
from ..plan import SENT_DECISIONS, Decision, MessagePlan, Plan, SummaryPlan, Totals
from ..session import Session


def plan_from_decisions(
    policy: str,
    session: Session,
    params: Any,
    counts: TokenCounts,
    decisions: Sequence[Decision],
    reasons: Sequence[str],
    budget: int,
    *,
    zones: Sequence[str] | None = None,
    sent_tokens: Mapping[int, int] | None = None,
    system_tokens: int | None = None,
    notes: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
    codes: Sequence[str] | None = None,
) -> Plan:
    """Build the Plan of `session` in which message i gets `decisions[i]` for `reasons[i]`.

    The system prompt is counted with the policy's tokenizer (or `system_tokens`) and sent first;
    a sent message costs its counted tokens unless `sent_tokens` gives what its truncated or
    replaced version costs. The plan fits when everything sent is within `budget`. Summaries the
    session carries are listed as not sent: a policy that sends them builds its Plan itself.
    """
    n = len(session.messages)
    if len(decisions) != n or len(reasons) != n:
        raise ValueError(f"{policy}: {len(decisions)} decisions and {len(reasons)} reasons for {n} messages")
    zone_names = list(zones) if zones is not None else ["messages"] * n
    sent_tokens = sent_tokens or {}
    system = session.system_prompt
    system_cost = system_tokens if system_tokens is not None else (counts.text(system) if system else 0)
    messages: list[MessagePlan] = []
    context: list[Any] = [{"role": "system", "content": system}] if system else []
    context_index: list[int | None] = [None] if system else []
    used_messages = kept = dropped = kept_n = 0
    code_of = list(codes) if codes is not None else [""] * n  # reason codes (engine/reason_codes.py); "" is the decision's
    for m, decision, reason, zone, tokens, code in zip(session.messages, decisions, reasons, zone_names, counts.message_tokens, code_of, strict=True):
        decision = Decision(decision)
        sent = decision in SENT_DECISIONS
        cost = sent_tokens.get(m.index, tokens) if sent else 0
        messages.append(MessagePlan(m.index, m.id, m.role, m.category, tokens, decision, zone, reason, cost, code))
        if sent:
            kept += tokens
            kept_n += 1
            used_messages += cost
            context.append(m)
            context_index.append(m.index)
        else:
            dropped += tokens
    used = system_cost + used_messages
    usage = {"system": system_cost, "messages": used_messages}
    allocation = {"system": min(system_cost, budget), "messages": max(0, budget - min(system_cost, budget))}
    totals = Totals(budget=budget, used=used, kept=kept, dropped=dropped, fits=used <= budget,
                    kept_messages=kept_n, dropped_messages=n - kept_n)
    params_map = dataclasses.asdict(params) if dataclasses.is_dataclass(params) and not isinstance(params, type) else dict(params or {})
    return Plan(policy=policy, params=params_map, tokenizer=counts.tokenizer.name, allocation=allocation, usage=usage,
                system_prompt=system, messages=tuple(messages), context=tuple(context), totals=totals,
                context_index=tuple(context_index),
                summaries=tuple(SummaryPlan(k, counts.text(s.text), Decision.DROPPED, f"not sent: {policy} does not send summaries", s.text)
                                for k, s in enumerate(session.summaries)),
                zones=tuple(dict.fromkeys(zone_names)) or ("messages",),
                notes=tuple(notes), extra=dict(extra or {}))
