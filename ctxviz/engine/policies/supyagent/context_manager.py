"""supyagent's ContextManager.build_messages_for_llm (supyagent/core/context_manager.py at 55374eac).

Seed page 001 and policies.md section 2 are the specification. Counting follows
supyagent/core/tokens.py: cl100k_base for every model, 4 per message plus every string field,
765 per image part, the Python repr of tool_calls, and 3 per message list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session, Summary
from ...tokenizers import Tokenizer
from ..base import Policy, params_dict
from ..common import base_system_prompt, tools_json
from .context_manager_columns import plan_columns
from .messages import (
    SUMMARY_SHARE,
    ZONES,
    count_message_dict,
    get_context_limit,
    llm_dict,
    measure_message,
    summary_last_index,
    summary_message,
    trigger_status,
)
from .summary_input import SummaryInput, head_note


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class ContextSettings:
    """supyagent's ContextSettings (agent YAML `context:`), plus the model's context limit."""

    auto_summarize: bool = field(default=True, metadata=_help("Summarise automatically when a trigger fires"))
    max_messages_before_summary: int = field(default=30, metadata=_help("N: messages since the last summary that trigger one", unit="messages", min=1))
    max_tokens_before_summary: int = field(default=128_000, metadata=_help("K: total message tokens that trigger a summary", unit="tokens", min=1, step=1000))
    min_recent_messages: int = field(default=6, metadata=_help("Recent messages always included, even over budget", unit="messages", min=0))
    response_reserve: int = field(default=4096, metadata=_help("Tokens reserved for the model's response", min=0, step=256))
    context_limit: int | None = field(default=None, metadata=_help("Model context window (default: supyagent's table for the model)", min=1, step=1000))
    trim_protected_tail: bool = field(default=False, metadata=_help("ctxviz option: drop the oldest of the min_recent_messages when they alone overflow (supyagent overflows)"))

    def __post_init__(self) -> None:
        if self.max_messages_before_summary < 1:
            raise ValueError(f"max_messages_before_summary must be >= 1, got {self.max_messages_before_summary}")
        if self.max_tokens_before_summary < 1:
            raise ValueError(f"max_tokens_before_summary must be >= 1, got {self.max_tokens_before_summary}")
        if self.min_recent_messages < 0:
            raise ValueError(f"min_recent_messages must be >= 0, got {self.min_recent_messages}")
        if self.response_reserve < 0:
            raise ValueError(f"response_reserve must be >= 0, got {self.response_reserve}")
        if self.context_limit is not None and self.context_limit < 1:
            raise ValueError(f"context_limit must be >= 1, got {self.context_limit}")


def strip_images(content: Any) -> Any:
    """supyagent's strip_images: text parts kept, each image becomes `[image]`, joined with spaces."""
    if not isinstance(content, list):
        return content
    out = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image_url":
            out.append("[image]")
        elif isinstance(part, dict) and part.get("type") == "text":
            out.append(str(part.get("text", "")))
    return " ".join(out)


def middle_truncate(text: str) -> str:
    return text[:1000] + "\n...[truncated]...\n" + text[-500:]


def plan(session: Session, settings: ContextSettings, counts: TokenCounts) -> Plan:
    """The build in columns (`context_manager_columns`) where it can be, else supyagent's steps one by one."""
    fast = plan_columns(session, settings, counts)
    return fast if fast is not None else plan_records(session, settings, counts)


def plan_records(session: Session, settings: ContextSettings, counts: TokenCounts) -> Plan:
    """build_messages_for_llm step for step, one record per message: the reference the columns are
    checked against (tests/test_supyagent_columns.py), and the plan when emergency truncation
    changes a message."""
    tok = counts.tokenizer
    tokens = counts.message_tokens
    limit = settings.context_limit or get_context_limit(session.model)
    system_messages = [m for m in session.messages if m.role == "system"]
    history = [m for m in session.messages if m.role != "system"]
    system_prompt = base_system_prompt(session, system_messages)
    notes: list[str] = []

    tools = tools_json(session)
    tools_tokens = counts.text(tools) if tools else 0
    available = limit - settings.response_reserve - tools_tokens
    system_msg = {"role": "system", "content": system_prompt}
    system_tokens = 3 + count_message_dict(system_msg, tok)
    available -= system_tokens
    result: list[dict[str, Any]] = [system_msg]
    result_tokens = [system_tokens - 3]

    decisions: list[MessagePlan | None] = [None] * len(session.messages)

    def decide(m: Message, decision: Decision, zone: str, reason: str, code: str, sent: int = -1) -> None:
        # A sent message costs its own count in the final total (count_messages_tokens(result)
        # adds the list's 3 once); only the fitting loop below charges it 3 more.
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason,
                                         (t if sent < 0 else sent) if decision is not Decision.DROPPED and decision is not Decision.SUMMARIZED else 0,
                                         code)

    def charged(m: Message) -> str:
        return (f"{tokens[m.index] + 3:,} tokens as supyagent charges it (its {tokens[m.index]:,} plus 3: "
                "it measures each message as a one-message list)")

    for m in system_messages:
        decide(m, Decision.KEPT, "system", "kept: part of the system prompt, which supyagent always sends first", "system_prompt")

    summary = session.summaries[-1] if session.summaries else None
    summary_idx = summary_last_index(summary, history) if summary else None
    summary_plans: list[SummaryPlan] = []
    summary_tokens = 0
    summary_size = count_message_dict(summary_message(summary), tok) if summary is not None else 0
    start = 0
    if summary is not None and summary_idx is not None and summary_idx < len(history):
        msg = summary_message(summary)
        t = 3 + summary_size  # count_messages_tokens([summary_msg])
        share = available * SUMMARY_SHARE
        charge = f"{t:,} tokens as supyagent charges it (its {summary_size:,} plus 3 for the one-message list)"
        if t < share:  # strict
            available -= t
            start = summary_idx + 1
            summary_tokens = t
            result.append(msg)
            result_tokens.append(summary_size)
            summary_plans.append(SummaryPlan(len(session.summaries) - 1, summary_size, Decision.KEPT, f"kept: {charge} are under 30 % of the {max(0, available + t):,} available ({share:,.0f})", msg["content"]))
        else:
            summary_plans.append(SummaryPlan(len(session.summaries) - 1, summary_size, Decision.DROPPED, f"dropped: {charge} are not under 30 % of the {max(0, available):,} available ({share:,.0f})", msg["content"]))
    for i, s in enumerate(session.summaries[:-1]):
        summary_plans.insert(i, SummaryPlan(i, 0, Decision.DROPPED, "dropped: supyagent keeps only the latest summary", s.text))
    for m in history[:start]:
        decide(m, Decision.SUMMARIZED, "summarized", f"summarized: covered by the summary of {summary.messages_covered if summary else 0} messages sent in its place",
               "summarised")

    recent: list[Message] = []
    cut: Message | None = None
    position = len(history) - 1
    while position >= start:
        m = history[position]
        t = tokens[m.index] + 3  # count_messages_tokens([msg]) charges the list overhead per message
        if t <= available or (len(recent) < settings.min_recent_messages and not settings.trim_protected_tail):
            forced = t > available
            zone = "recent" if len(recent) < settings.min_recent_messages else "evictable"
            reason = (f"kept: one of the {settings.min_recent_messages} most recent messages, always included"
                      + (f" even though the {charged(m)} exceed the {max(available, 0):,} left" if forced else ""))
            code = "fresh_tail"
            if zone == "evictable":
                reason, code = f"kept: the {charged(m)} fit in the {available:,} left (filled newest first)", "fits"
            decide(m, Decision.KEPT, zone, reason, code)
            recent.append(m)
            available -= t
            position -= 1
            continue
        cut = m
        decide(m, Decision.DROPPED, "evictable", f"dropped: the {charged(m)} did not fit in the {max(available, 0):,} left of the {limit:,}-token context limit after reserves", "missed")
        break
    if cut is not None:
        older = f"dropped: supyagent stops at the first message that does not fit (#{cut.index})"
        for m in history[start:position]:
            decide(m, Decision.DROPPED, "evictable", older, "after_cut")
    recent.reverse()
    result += [llm_dict(m) for m in recent]
    result_tokens += [tokens[m.index] for m in recent]
    sources: list[Message | None] = [None] + ([None] if summary_tokens else []) + recent  # aligned with `result`

    # Safety check, then PANIC mode (emergency truncation) if the list is still too big.
    target = limit - settings.response_reserve
    total = 3 + sum(result_tokens) + tools_tokens
    emergency = total > target
    if emergency:
        notes.append(f"emergency truncation: {total:,} tokens exceed the {target:,} left after the response reserve")
        result, result_tokens, sources, outcome = emergency_truncate(result, result_tokens, sources, target - tools_tokens, settings, tok, counts)
        for index, (decision, sent, reason, code) in outcome.items():
            decide(session.messages[index], decision, decisions[index].zone, reason, code, sent)  # type: ignore[union-attr]
        total = 3 + sum(result_tokens) + tools_tokens
        if total > target:
            notes.append(f"still {total - target:,} tokens over after emergency truncation: the protected messages alone are too big")

    status = trigger_status(history, tokens, summary_idx, settings)
    messages = tuple(decisions)  # type: ignore[arg-type]
    # The parts of the final count, count_messages_tokens(result) + tools: the list's 3 goes with
    # the system prompt (as supyagent charges it there), the summary and each message count once.
    system_used = 3 + result_tokens[0]
    summary_used = sum(t for t, m in zip(result_tokens[1:], sources[1:], strict=True) if m is None)
    history_used = sum(t for t, m in zip(result_tokens, sources, strict=True) if m is not None)
    allocation = {
        "response_reserve": settings.response_reserve,
        "tool_definitions": tools_tokens,
        "system": system_used,
        "summary": summary_used,
        "history": limit - settings.response_reserve - tools_tokens - system_used - summary_used,
    }
    usage = {"response_reserve": 0, "tool_definitions": tools_tokens, "system": system_used, "summary": summary_used, "history": history_used}
    sent = [m for m in messages if m.sent]
    totals = Totals(
        budget=limit, used=total, kept=sum(m.tokens for m in sent), dropped=sum(m.tokens for m in messages if not m.sent),
        fits=total <= target, kept_messages=len(sent), dropped_messages=len(messages) - len(sent), fits_test="parts",
    )
    return Plan(
        policy="supyagent", params={**params_dict(settings), "context_limit": limit}, tokenizer=counts.scheme.label,
        allocation=allocation, usage=usage, system_prompt=system_prompt, messages=messages, context=tuple(result),
        context_index=tuple(m.index if m is not None else None for m in sources),
        totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"context_limit": limit, "trigger": status.to_json(), "emergency_truncation": emergency,
               "tools": len(session.tools), "tool_tokens": tools_tokens, "summary_tokens": summary_size,
               "summary_messages": summary.messages_covered if summary else 0,
               "summary_created": summary.created_at if summary else ""},
    )


def emergency_truncate(result: list[dict[str, Any]], result_tokens: list[int], sources: list[Message | None], target: int,
                       settings: ContextSettings, tok: Tokenizer, counts: TokenCounts
                       ) -> tuple[list[dict[str, Any]], list[int], list[Message | None], dict[int, tuple[Decision, int, str, str]]]:
    """_emergency_truncate: index 0 and 1 protected (1 even when it is no summary: supyagent's quirk),
    the last min_recent_messages protected; strip images and middle-cut long texts in between, then
    drop the oldest unprotected messages one by one until the list fits. Each outcome: (decision,
    tokens sent, reason, reason code)."""
    result, result_tokens, sources = list(result), list(result_tokens), list(sources)
    outcome: dict[int, tuple[Decision, int, str, str]] = {}
    protected_start = 2 if len(result) > 2 else 1
    protected_end = min(settings.min_recent_messages, len(result) - protected_start)

    def total() -> int:
        return 3 + sum(result_tokens)

    for i in range(protected_start, len(result) - protected_end):
        msg = result[i]
        content = msg.get("content")
        changed = None
        if isinstance(content, list):
            content = strip_images(content)
            changed = Decision.REPLACED
        if isinstance(content, str) and len(content) > 2000:
            content = middle_truncate(content)
            changed = Decision.TRUNCATED
        if changed is not None:
            new = {**msg, "content": content}
            result[i] = new
            result_tokens[i] = count_message_dict(new, tok)
            source = sources[i]
            if source is not None:
                what = "its images replaced by [image]" if changed is Decision.REPLACED else "cut to its first 1,000 and last 500 characters"
                outcome[source.index] = (changed, result_tokens[i], f"{changed.value}: emergency truncation, {what} ({result_tokens[i]:,} tokens sent)",
                                         changed.value)  # the decision's own code: "replaced" or "truncated"
    if total() <= target:
        return result, result_tokens, sources, outcome
    while total() > target and len(result) > protected_start + protected_end:
        result.pop(protected_start)
        result_tokens.pop(protected_start)
        source = sources.pop(protected_start)
        if source is not None:
            outcome[source.index] = (Decision.DROPPED, 0, "dropped: emergency truncation removes the oldest unprotected messages until the list fits", "dropped")
    return result, result_tokens, sources, outcome


def compact(prefix: Session, plan: Plan, settings: ContextSettings, counts: TokenCounts, summarizer: Any, i: int,
            events: list[Any]) -> Summary | None:
    """supyagent's trigger after a build: N messages or K tokens since the last summary; it always
    re-summarises the history from index 0 up to the recent messages it keeps."""
    from ...replay_contract import Event

    messages = prefix.messages
    history = [m for m in messages if m.role != "system"]
    previous = prefix.summaries[-1] if prefix.summaries else None
    idx = summary_last_index(previous, history) if previous else None
    status = trigger_status(history, counts.message_tokens, idx, settings)
    if not (settings.auto_summarize and status.will_trigger):
        return None
    up_to = max(0, len(history) - settings.min_recent_messages - 1)
    covered = history[: up_to + 1]
    shown = SummaryInput(settings.context_limit or get_context_limit(prefix.model), counts.tokenizer)
    shown.add(covered)
    text = summarizer.supyagent_snapshot(shown.messages())
    why = (f"{status.messages_since_summary} messages since the last summary >= {settings.max_messages_before_summary}"
           if status.messages_since_summary >= settings.max_messages_before_summary
           else f"the history's {status.total_tokens:,} tokens >= max_tokens_before_summary {settings.max_tokens_before_summary:,}")
    events.append(Event(i, "summary", f"summarised messages 0-{covered[-1].index} ({why}){head_note(shown)}"))
    return Summary(text=text, messages_covered=len(covered), covers=tuple(m.id for m in covered), created_at=messages[-1].timestamp)


POLICY = Policy(
    # Emergency truncation's codes are the generic ones (replaced, truncated, dropped) and are not
    # declared: in a build only the protected messages can overflow, so it never changes a message.
    reason_codes=("system_prompt", "summarised", "fresh_tail", "fits", "missed", "after_cut"),
    name="supyagent",
    title="supyagent ContextManager",
    params_type=ContextSettings,
    measure_name="supyagent-message",
    measure=measure_message,
    default_tokenizer="cl100k_base",
    plan=plan,
    compact=compact,
    zone_parts={"evictable": "history", "recent": "history"},
    description="Summary if under 30 % of what is left; newest messages while they fit, at least min_recent_messages; emergency truncation.",
    framework='supyagent',
    framework_version='55374eac',
    source='supyagent/core/context_manager.py ContextManager.build_messages_for_llm',
    counter='tiktoken cl100k_base per message (+ 765 per image)',
    trigger=('max_messages_before_summary', 'max_tokens_before_summary'),
    keep=('min_recent_messages',),
    stand_in="snapshot summary written offline in supyagent's section format, of what its summariser is shown (its transcript, "
             "tool results cut to 500 characters, and past 80 % of the limit only the transcript's head)",
)
