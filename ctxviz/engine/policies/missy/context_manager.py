"""missy's ContextManager.build_messages (missy/agent/context.py), reproduced decision for decision.

Seed page 000 and policies.md section 1 are the specification; comments mark the framework's
quirks that are reproduced on purpose.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import repeat
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session
from ...tokenizers import Tokenizer
from ..base import Policy, params_dict
from ..common import base_system_prompt, recorded_covers, split_new_message, tools_json
from .context_manager_columns import plan_columns
from .parts import ZONES, enrich_system_prompt, format_summary, fresh_tail_reason, invisible_call_notes

__all__ = ["ZONES", "TokenBudget", "enrich_system_prompt", "format_summary", "invisible_call_notes", "plan", "plan_records"]



def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class TokenBudget:
    """missy's TokenBudget: same field names, defaults and validation messages."""

    total: int = field(default=30_000, metadata=_help("Total token budget for the context window", unit="tokens", min=0, step=1000))
    system_reserve: int = field(default=2_000, metadata=_help("Tokens reserved for the system prompt itself", min=0, step=100))
    tool_definitions_reserve: int = field(default=2_000, metadata=_help("Tokens reserved for tool schemas", min=0, step=100))
    memory_fraction: float = field(default=0.15, metadata=_help("Share of the available budget for memory", min=0.0, max=1.0, step=0.01))
    learnings_fraction: float = field(default=0.05, metadata=_help("Share of the available budget for learnings", min=0.0, max=1.0, step=0.01))
    fresh_tail_count: int = field(default=16, metadata=_help("Most recent messages always included", unit="messages", min=0, step=1))
    trim_protected_tail: bool = field(default=False, metadata=_help("ctxviz option: trim an oversized fresh tail oldest-first instead of overflowing (missy overflows)"))

    def __post_init__(self) -> None:
        if self.total < 0:
            raise ValueError(f"total must be >= 0, got {self.total}")
        if not 0.0 <= self.memory_fraction <= 1.0:
            raise ValueError(f"memory_fraction must be 0.0-1.0, got {self.memory_fraction}")
        if not 0.0 <= self.learnings_fraction <= 1.0:
            raise ValueError(f"learnings_fraction must be 0.0-1.0, got {self.learnings_fraction}")
        if self.fresh_tail_count < 0:
            raise ValueError(f"fresh_tail_count must be >= 0, got {self.fresh_tail_count}")
        reserves = self.system_reserve + self.tool_definitions_reserve
        if reserves > self.total:
            raise ValueError(f"system_reserve + tool_definitions_reserve ({reserves}) exceeds total ({self.total})")

    @property
    def available(self) -> int:
        return self.total - self.system_reserve - self.tool_definitions_reserve

    @property
    def memory_budget(self) -> int:
        return int(self.available * self.memory_fraction)

    @property
    def learnings_budget(self) -> int:
        return int(self.available * self.learnings_fraction)

    @property
    def history_budget(self) -> int:
        return self.available - self.memory_budget - self.learnings_budget


def measure_content(message: Message, tokenizer: Tokenizer) -> int:
    # missy counts str(msg.get("content", "")) only: no role, name, tool_calls or per-message
    # overhead; a part list is counted from its Python repr, and None content as "None".
    return tokenizer.count(str(message.openai_content()))


def plan(session: Session, budget: TokenBudget, counts: TokenCounts) -> Plan:
    """build_messages in columns (`context_manager_columns`): what the CLI and the app plan with."""
    return plan_columns(session, budget, counts)


def plan_records(session: Session, budget: TokenBudget, counts: TokenCounts) -> Plan:
    """build_messages step for step, one record per message: the reference the columns plan is
    checked against (tests/test_missy_columns.py)."""
    count = counts.text
    system_messages, history, new_message = split_new_message(session)
    # Messages a recorded summary covers are not history any more: the summary goes in their place.
    covered, superseded = recorded_covers(session)
    if covered and new_message is not None and new_message.id in covered:
        history.append(new_message)  # decided as summarized below, with the rest
        new_message = None
    base_system = base_system_prompt(session, system_messages)
    enriched, memory_tokens, learnings_tokens, notes = enrich_system_prompt(
        base_system, session.memory, session.learnings, budget, count
    )
    history_budget = budget.history_budget

    summarized = [m for m in history if m.id in covered]
    if summarized:
        history = [m for m in history if m.id not in covered]
    n = budget.fresh_tail_count
    if n <= 0:
        evictable, fresh_tail = list(history), []
    elif len(history) > n:
        evictable, fresh_tail = history[:-n], history[-n:]
    else:
        evictable, fresh_tail = [], list(history)

    tokens = counts.message_tokens
    decisions: list[MessagePlan | None] = [None] * len(session.messages)
    KEPT, DROPPED = Decision.KEPT, Decision.DROPPED

    def decide(m: Message, decision: Decision, zone: str, reason: str, code: str) -> None:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason, t if decision is KEPT else 0, code)

    for m in system_messages:
        decide(m, KEPT, "system", f"kept: part of the system prompt (missy never measures it; the {budget.system_reserve:,}-token system reserve stands in for it)", "system_prompt")

    # With no new user message ctxviz charges nothing for it (missy would charge 1 for "").
    used = tokens[new_message.index] if new_message else 0
    used += sum(tokens[m.index] for m in fresh_tail)
    tail_over = used > history_budget
    if tail_over and budget.trim_protected_tail:
        while fresh_tail and used > history_budget:
            oldest = fresh_tail.pop(0)
            used -= tokens[oldest.index]
            decide(oldest, DROPPED, "fresh_tail", f"dropped: trim_protected_tail removes the oldest fresh-tail messages until the tail fits the {history_budget:,}-token history budget", "missed")
        notes.append(f"trim_protected_tail dropped the oldest fresh-tail messages; {used:,} of {history_budget:,} history tokens remain")
        tail_over = used > history_budget
    tail_reason = fresh_tail_reason(n, used, history_budget, tail_over, notes)
    for m in fresh_tail:
        decide(m, KEPT, "fresh_tail", tail_reason, "fresh_tail")

    summary_plans: list[SummaryPlan] = []
    summary_messages: list[dict[str, Any]] = []
    for i, summary in enumerate(session.summaries):
        text = format_summary(summary)
        t = count(text)
        if i in superseded:
            summary_plans.append(SummaryPlan(i, t, DROPPED, "dropped: superseded by a later recorded summary, which covers every message of the file this one covers", text))
            continue
        if used + t > history_budget:
            # `continue`, not `break`: an oversized summary must not starve later ones (missy 441af04).
            summary_plans.append(SummaryPlan(i, t, DROPPED, f"dropped: {t:,} tokens did not fit in the {max(0, history_budget - used):,} left of the {history_budget:,}-token history budget", text))
            continue
        summary_messages.append({"role": "user", "content": text})
        used += t
        summary_plans.append(SummaryPlan(i, t, KEPT, f"kept: {t:,} tokens fit in the {history_budget - used + t:,} left of the {history_budget:,}-token history budget", text))

    for m in summarized:
        k = covered[m.id]
        sent_instead = summary_plans[k].decision is KEPT
        decide(m, Decision.SUMMARIZED, "summarized", f"summarized: recorded summary #{k + 1} covers it"
               + (" and is sent in its place" if sent_instead else f"; the summary itself is not sent ({summary_plans[k].reason})"), "summarised")

    remaining = max(0, history_budget - used)
    kept_evictable: list[Message] = []
    cut: Message | None = None
    position = len(evictable) - 1
    while position >= 0:
        m = evictable[position]
        t = tokens[m.index]
        if t > remaining:
            cut = m
            decide(m, DROPPED, "evictable", f"dropped: {t:,} tokens did not fit in the {remaining:,} left of the {history_budget:,}-token history budget", "missed")
            break
        decide(m, KEPT, "evictable", f"kept: {t:,} tokens fit in the {remaining:,} left of the {history_budget:,}-token history budget (filled newest first)", "fits")
        kept_evictable.append(m)
        remaining -= t
        used += t
        position -= 1
    if cut is not None and covered:
        # Not a prefix of the session's history (the covered messages are out): no cached columns.
        for m in evictable[:position]:
            decide(m, DROPPED, "evictable", f"dropped: missy stops at the first message that does not fit (#{cut.index}), so older messages are not considered", "after_cut")
    elif cut is not None:
        # missy `break`s at the first misfit: older, smaller messages are never looked at.
        older = _older_records(session, position, cut.index, tokens)
        if older and older[-1].index - older[0].index == len(older) - 1:  # no system message in between
            decisions[older[0].index : older[-1].index + 1] = older
        else:
            for record in older:
                decisions[record.index] = record
    kept_evictable.reverse()

    if new_message is not None:
        decide(new_message, KEPT, "new_message", "kept: the new user message is always sent last", "new_message")

    messages = tuple(decisions)  # type: ignore[arg-type]
    context: list[dict[str, Any]] = [{"role": "system", "content": enriched}]
    context += summary_messages
    context += [m.to_openai() for m in kept_evictable + fresh_tail]
    context_index: list[int | None] = [None] * (1 + len(summary_messages)) + [m.index for m in kept_evictable + fresh_tail]
    if new_message is not None:
        context.append({"role": "user", "content": new_message.openai_content()})
        context_index.append(new_message.index)

    tools = tools_json(session)
    usage = {
        "system_reserve": count(base_system) if base_system else 0,
        "tool_definitions_reserve": count(tools) if tools else 0,
        "memory": memory_tokens,
        "learnings": learnings_tokens,
        "history": used,
    }
    allocation = {
        "system_reserve": budget.system_reserve,
        "tool_definitions_reserve": budget.tool_definitions_reserve,
        "memory": budget.memory_budget,
        "learnings": budget.learnings_budget,
        "history": history_budget,
    }
    total_used = sum(usage.values())
    # missy only keeps or drops, so what is sent is exactly the messages kept above.
    kept = system_messages + kept_evictable + fresh_tail + ([new_message] if new_message is not None else [])
    kept_tokens = sum(tokens[m.index] for m in kept)
    totals = Totals(
        budget=budget.total,
        used=total_used,
        kept=kept_tokens,
        dropped=sum(tokens) - kept_tokens,
        # missy's reserves are not lent to other parts, so the context fits only if every part fits.
        fits=all(usage[part] <= allocation[part] for part in allocation),
        kept_messages=len(kept),
        dropped_messages=len(messages) - len(kept),
        fits_test="parts",
    )
    return Plan(
        policy="missy",
        params=params_dict(budget),
        tokenizer=counts.scheme.label,
        allocation=allocation,
        usage=usage,
        system_prompt=enriched,
        messages=messages,
        context=tuple(context),
        context_index=tuple(context_index),
        totals=totals,
        summaries=tuple(summary_plans),
        zones=ZONES + (("summarized",) if covered else ()),
        notes=(*notes, *invisible_call_notes(session)),
        extra={
            "history_budget": history_budget,
            "history_used": used,
            "fresh_tail_start": fresh_tail[0].index if fresh_tail else None,
            "cut_index": cut.index if cut else None,
            "new_message_index": new_message.index if new_message else None,
        },
    )


def refresh(plan: Plan, session: Session, counts: TokenCounts | None) -> Plan:
    """After ctxviz dropped messages from the plan (pair safety): the history figure in `extra`."""
    return replace(plan, extra={**plan.extra, "history_used": plan.usage["history"]})


POLICY = Policy(
    reason_codes=("system_prompt", "fresh_tail", "new_message", "fits", "missed", "after_cut", "summarised"),
    name="missy",
    title="missy ContextManager",
    params_type=TokenBudget,
    measure_name="missy-content",
    measure=measure_content,
    default_tokenizer="missy",
    plan=plan,
    zone_parts={"system": "system_reserve", "evictable": "history", "fresh_tail": "history", "new_message": "history"},
    refresh=refresh,
    description="Fresh tail always kept; summaries if they fit; evictable prefix filled newest first, stopping at the first misfit.",
    framework='missy',
    framework_version='v0.1.0 (5632c314)',
    source='missy/agent/context.py ContextManager.build_messages',
    counter="missy's estimator: characters / 4 per message",
    trigger=('total',),
    keep=('fresh_tail_count',),
)


# The records of the messages older than the cut depend only on the session, the counts and where
# the cut falls. Dragging a slider re-plans many times with the cut in the same place, and on a
# long session those thousands of identical records were most of the plan's cost; they are
# immutable, so plans may share them.
_OLDER_CACHE: OrderedDict[tuple[int, int, int, int], tuple[weakref.ref[Session], tuple[int, ...], tuple[MessagePlan, ...]]] = OrderedDict()
_OLDER_LOCK = threading.Lock()
_OLDER_CACHE_SIZE = 8


def _older_records(session: Session, position: int, cut_index: int, tokens: tuple[int, ...]) -> tuple[MessagePlan, ...]:
    """Records for the session history's first `position` messages (the evictable prefix older
    than the cut at `cut_index`)."""
    key = (id(session), id(tokens), cut_index, position)
    with _OLDER_LOCK:
        hit = _OLDER_CACHE.get(key)
        if hit is not None and hit[0]() is session and hit[1] is tokens:
            _OLDER_CACHE.move_to_end(key)
            return hit[2]
    reason = f"dropped: missy stops at the first message that does not fit (#{cut_index}), so older messages are not considered"
    # The evictable prefix is a prefix of the session's history: build the records from its cached
    # columns with C-level loops only.
    indices, ids, roles, categories = (column[:position] for column in session.history_columns)
    make = partial(tuple.__new__, MessagePlan)  # skips the NamedTuple constructor's Python frame
    records = tuple(map(make, zip(indices, ids, roles, categories, map(tokens.__getitem__, indices), repeat(Decision.DROPPED),
                                  repeat("evictable"), repeat(reason), repeat(0), repeat("after_cut"), strict=False)))
    with _OLDER_LOCK:
        # Entries of sessions that are gone would only hold memory (a 100,000-message session's
        # records are tens of megabytes): drop them first, then the least recently used.
        for dead in [k for k, (ref, _, _) in _OLDER_CACHE.items() if ref() is None]:
            del _OLDER_CACHE[dead]
        _OLDER_CACHE[key] = (weakref.ref(session), tokens, records)
        while len(_OLDER_CACHE) > _OLDER_CACHE_SIZE:
            _OLDER_CACHE.popitem(last=False)
    return records
