"""Pins: messages a user says must reach the model, whatever the policy would do with them.

A prompt engineer debugging a forgotten rule wants to know what keeping it would cost. A pin makes a
message sent; to stay within the policy's budget the plan then lets go of the oldest unpinned
messages it was sending (never the system prompt), and every message pushed out says which pin
pushed it. The plan's notes say what the pins cost.

Pin rules (`--pin`, repeatable): `#12` (message index), `id:m12`, `role:user` (every message of a
role), `first-user` / `last-user` (the user's own turns, engine/voices.py; also first-/last-assistant,
tool, system by role), `text:WORDS` (every message whose text contains WORDS, case-insensitive). A
pinned tool result pins its call, and a pinned call its results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ..errors import ParameterError
from .checks import drop_messages, usage_part
from .counting import TokenCounts
from .plan import Decision, Plan
from .policies import get_policy
from .session import Session
from .voices import voices_of
from .wording import noun

ROLES = ("user", "assistant", "tool", "system")


def resolve_pins(session: Session, rules: Sequence[str]) -> dict[int, str]:
    """Message index -> the rule that pins it; a rule that is malformed or matches nothing is one line."""
    pinned: dict[int, str] = {}
    messages = session.messages
    for rule in rules:
        text = rule.strip()
        found: list[int]
        if text.startswith("#") and text[1:].isdigit():
            index = int(text[1:])
            if index >= len(messages):
                raise ParameterError(f"--pin {rule}: the session has messages #0-#{len(messages) - 1}")
            found = [index]
        elif text.startswith("id:"):
            found = [m.index for m in messages if m.id == text[3:]]
        elif text.startswith("role:") and text[5:] in ROLES:
            found = [m.index for m in messages if m.role == text[5:]]
        elif text.partition("-")[0] in ("first", "last") and text.partition("-")[2] in ROLES:
            which, _, role = text.partition("-")
            of_role = [m.index for m in messages if m.role == role]
            if role == "user":  # the user's own words: not a harness's task template or a tool's output sent as a user turn
                voices = voices_of(session)
                own = [i for i in of_role if voices[i] == "user"]
                of_role = own or of_role
            found = of_role[:1] if which == "first" else of_role[-1:]
        elif text.startswith("text:") and text[5:].strip():
            needle = text[5:].strip().lower()
            found = [m.index for m in messages if needle in m.text.lower()]
        else:
            raise ParameterError(f"--pin {rule}: not a pin rule (use #INDEX, id:ID, role:ROLE, first-ROLE, last-ROLE or text:WORDS)")
        if not found:
            raise ParameterError(f"--pin {rule}: matches no message of the session")
        for index in found:
            pinned.setdefault(index, text)
    for index, rule in partners_of(session, pinned).items():
        pinned.setdefault(index, rule)
    return pinned


def partners_of(session: Session, pinned: Mapping[int, str]) -> dict[int, str]:
    """The other halves of pinned tool calls and results (`Session.tool_pairs`): a result is sent
    only with its call (the APIs refuse one without the other), so pinning one pins both. A pinned
    result whose call the policy cut was dropped again by pair safety, after pins had pushed others
    out to make room."""
    found: dict[int, str] = {}
    for call, result in session.tool_pairs:
        if result in pinned:
            found.setdefault(call, f"{pinned[result]}: its tool call")
        if call in pinned:
            found.setdefault(result, f"{pinned[call]}: its tool result")
    return {k: v for k, v in found.items() if k not in pinned}


def apply_pins(plan: Plan, session: Session, pinned: Mapping[int, str], counts: TokenCounts | None = None) -> Plan:
    """The plan with every pinned message sent and, while it no longer fits by the policy's own test,
    the oldest unpinned sent messages (outside the system prompt) dropped to make room."""
    policy = get_policy(plan.policy)
    messages = list(plan.messages)
    usage = dict(plan.usage)
    added = [i for i in sorted(pinned) if not messages[i].sent]
    for i in sorted(pinned):
        m = messages[i]
        if m.sent:
            messages[i] = m._replace(reason=f"{m.reason} (pinned: {pinned[i]})")
            continue
        part = usage_part(policy, m.zone, usage)
        usage[part] = usage.get(part, 0) + m.tokens
        messages[i] = m._replace(decision=Decision.KEPT, sent_tokens=m.tokens, code="pinned",
                                 reason=f"kept: pinned by {pinned[i]}; without it {policy.name} would have {m.decision.value} it: {_why(m.reason)}")
    if not added:
        return dataclasses.replace(plan, messages=tuple(messages))
    extra_tokens = sum(plan.messages[i].tokens for i in added)
    context = list(plan.context.entries)
    context_index = list(plan.context_index)
    for i in added:
        at = next((k for k, idx in enumerate(context_index) if idx is not None and idx > i), len(context))
        context.insert(at, session.messages[i])
        context_index.insert(at, i)
    used = plan.totals.used + extra_tokens
    totals = dataclasses.replace(plan.totals, used=used, kept=plan.totals.kept + extra_tokens, dropped=plan.totals.dropped - extra_tokens,
                                 kept_messages=plan.totals.kept_messages + len(added), dropped_messages=plan.totals.dropped_messages - len(added))
    pinned_plan = dataclasses.replace(plan, messages=tuple(messages), usage=usage, context=tuple(context), context_index=tuple(context_index),
                                      totals=totals)
    # Room for the pins: the oldest unpinned messages sent, while the plan is over its budget because
    # of them (an overflow the policy had already is left as it was).
    added_by_part: dict[str, int] = {}
    for i in added:
        part = usage_part(policy, plan.messages[i].zone, usage)
        added_by_part[part] = added_by_part.get(part, 0) + plan.messages[i].tokens
    if plan.totals.fits_test == "parts":
        over = {part: min(extra, usage[part] - plan.allocation.get(part, usage[part])) for part, extra in added_by_part.items()}
    else:
        over = {"": min(extra_tokens, used - plan.totals.budget)}
    drops: dict[int, str] = {}
    pins_text = ", ".join(f"#{i}" for i in added[:5]) + (" …" if len(added) > 5 else "")
    for m in messages:
        if m.index in pinned or not m.sent or m.zone == "system":
            continue
        part = "" if "" in over else usage_part(policy, m.zone, usage)
        if over.get(part, 0) > 0:
            drops[m.index] = f"dropped: pushed out to make room for the pinned {pins_text}"
            over[part] -= m.sent_tokens
    still_over = any(v > 0 for v in over.values())  # (the pins alone need more than the policy can free)
    pushed = f"pushed out {len(drops):,} {noun(len(drops), 'message')} ({sum(messages[i].sent_tokens for i in drops):,} tokens)"
    note = (f"pins added {len(added):,} {noun(len(added), 'message')} ({extra_tokens:,} tokens) that {policy.name} would not send" +
            ("" if not drops else f", and {pushed} to make room" + ("; the plan is still over its budget" if still_over else " within its budget")))
    if not drops:
        plan = dataclasses.replace(pinned_plan, notes=(*pinned_plan.notes, note))
        plan = dataclasses.replace(plan, totals=dataclasses.replace(plan.totals, fits=_fits(plan)))
        return policy.refresh(plan, session, counts) if policy.refresh is not None else plan
    return drop_messages(pinned_plan, drops, note, session, counts, code="pushed_out")


def _why(reason: str) -> str:
    """A reason without its decision word ("dropped: missy stops ..." -> "missy stops ..."), for a
    sentence that names the decision already."""
    head, sep, rest = reason.partition(": ")
    return rest if sep and " " not in head else reason


def _fits(plan: Plan) -> bool:
    if plan.totals.fits_test == "parts":
        return all(plan.usage.get(p, 0) <= a for p, a in plan.allocation.items())
    return plan.totals.used <= plan.totals.budget
