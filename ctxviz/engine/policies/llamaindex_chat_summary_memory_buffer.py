"""LlamaIndex's ChatSummaryMemoryBuffer.get (llama_index/core/memory/chat_summary_memory_buffer.py,
llama-index-core 0.14.25), reproduced decision for decision; tests/golden/llamaindex holds it to the
framework's own class (with a fake LLM).

Unlike ChatMemoryBuffer it counts each message alone (`len(tokenizer_fn(str(m.content)))`), walks
newest first and stops at the first message that does not fit; what is left, plus any assistant or
tool messages that would start the full text, goes to the LLM, whose answer becomes one SYSTEM
message in front. get() rewrites the chat store with that result, so the summary is history from
then on: the next get() counts it like any message and summarises it again when it no longer fits
(alone it is passed through unchanged). The summary is never counted against token_limit in the
get() that writes it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..counting import TokenCounts
from ..plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ..session import Message, Session, Summary
from ..summarizers import supyagent_snapshot
from ..tokenizers import Tokenizer
from .base import Policy, params_dict
from .llamaindex_chat_memory_buffer import (
    DEFAULT_TOKEN_LIMIT_RATIO,
    content_str,
    llama_count,
    prefix_tokens,
    text_tokens,
)

NAME = "llamaindex-chat-summary-memory-buffer"
ZONES = ("system", "summarized", "full_text")
DEFAULT_TOKEN_LIMIT = 2000
STAND_IN = ("ctxviz's offline extractive snapshot stands in for the LLM's answer to LlamaIndex's SUMMARIZE_PROMPT; it is sent "
            "as LlamaIndex sends the answer: one SYSTEM message before the full-text messages")


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


def measure_content(message: Message, tokenizer: Tokenizer) -> int:
    """`len(tokenizer_fn(str(m.content)))` of one message."""
    return llama_count(tokenizer, content_str(message))


@dataclass(frozen=True)
class ChatSummaryMemoryBufferParams:
    """ChatSummaryMemoryBuffer.from_defaults(...) and get(initial_token_count=...)."""

    token_limit: int | None = field(default=None, metadata=_help(
        "Token limit of the full-text messages (default: 2000, or 0.75 x context_window when an llm's window is given)", min=1, step=100))
    context_window: int | None = field(default=None, metadata=_help(
        "from_defaults(llm=...): the llm's metadata.context_window; the limit becomes int(0.75 x it)", min=1, step=1000))
    llm: bool = field(default=True, metadata=_help(
        "An llm is given, so what no longer fits is summarised (false: llm=None, the from_defaults default, which drops it)"))
    count_initial_tokens: bool = field(default=False, metadata=_help("Count the initial tokens (the system prompt) against token_limit"))
    initial_token_count: int | None = field(default=None, metadata=_help(
        "get(initial_token_count=...), counted only with count_initial_tokens (default: the system prompt's tokens)", min=0, step=100))

    def __post_init__(self) -> None:
        if self.context_window is not None and self.context_window < 1:
            raise ValueError(f"context_window must be >= 1, got {self.context_window}")
        if self.limit < 1:
            raise ValueError(f"token_limit: Token limit for full-text messages must be set and greater than 0 (got {self.limit})")
        if self.initial_token_count is not None and self.initial_token_count < 0:
            raise ValueError(f"initial_token_count must be >= 0, got {self.initial_token_count}")

    @property
    def limit(self) -> int:
        if self.context_window is not None:
            return self.token_limit or int(self.context_window * DEFAULT_TOKEN_LIMIT_RATIO)
        return DEFAULT_TOKEN_LIMIT if self.token_limit is None else self.token_limit


_snapshots: OrderedDict[tuple[int, ...], tuple[list[Message], str]] = OrderedDict()
_snapshots_lock = threading.Lock()


def stand_in_summary(messages: list[Message]) -> str:
    """The offline snapshot of the messages to summarise. A slider move re-plans with the same
    messages to summarise most of the time, so the last few snapshots are kept (with the messages,
    so that their ids stay theirs)."""
    key = tuple(map(id, messages))
    with _snapshots_lock:
        hit = _snapshots.get(key)
        if hit is not None:
            _snapshots.move_to_end(key)
            return hit[1]
    text = supyagent_snapshot(messages)
    with _snapshots_lock:
        _snapshots[key] = (messages, text)
        while len(_snapshots) > 8:
            _snapshots.popitem(last=False)
    return text


def plan(session: Session, params: ChatSummaryMemoryBufferParams, counts: TokenCounts) -> Plan:
    limit = params.limit
    tokens = counts.message_tokens
    system_messages, rest = (list(part) for part in session.system_and_history)
    system_prompt, system_tokens = prefix_tokens(session, counts, system_messages)
    initial = system_tokens if params.initial_token_count is None else params.initial_token_count
    carried = session.summaries[-1] if session.summaries else None
    covered = set(carried.covers) if carried is not None else set()
    history = [m for m in rest if m.id not in covered]
    decisions: list[MessagePlan | None] = [None] * len(session.messages)
    notes: list[str] = []

    def decide(m: Message, decision: Decision, zone: str, reason: str) -> None:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason, t if decision is Decision.KEPT else 0)

    for m in system_messages:
        decide(m, Decision.KEPT, "system", "kept: part of the system prompt, which the chat engine sends before the memory")

    # The chat store as get() sees it: the summary an earlier get() wrote (a SYSTEM message), then the rest.
    # Entries: (session message or None for the summary, role, tokens).
    entries: list[tuple[Message | None, str, int]] = []
    carried_tokens = text_tokens(counts, carried.text) if carried is not None else 0
    if carried is not None:
        entries.append((None, "system", carried_tokens))
    entries += [(m, m.role, tokens[m.index]) for m in history]

    raised = params.count_initial_tokens and initial > limit
    token_count = initial if params.count_initial_tokens else 0
    full: list[tuple[Message | None, str, int]] = []
    position = len(entries)
    if raised:
        notes.append(f"ChatSummaryMemoryBuffer.get raises 'Initial token count exceeds token limit': {initial:,} initial tokens > token_limit {limit:,}")
        position = 0
        full = []
    else:
        while position > 0 and token_count + entries[position - 1][2] <= limit:
            token_count += entries[position - 1][2]
            full.insert(0, entries[position - 1])
            position -= 1
    misfit = entries[position - 1] if position > 0 and not raised else None
    to_summarize = entries[:position]
    moved = 0
    # LlamaIndex: the full text may not start with an assistant or tool message; they join the summarised part.
    while full and full[0][1] in ("assistant", "tool"):
        to_summarize.append(full.pop(0))
        moved += 1
    carried_in_full = any(e[0] is None for e in full)  # then it is full[0] and nothing is summarised
    full_tokens = sum(e[2] for e in full if e[0] is not None)

    summary_plans: list[SummaryPlan] = []
    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    context_index: list[int | None] = [None] * len(context)
    summary_tokens = carried_tokens if carried_in_full else 0
    new_summary_text = ""
    summarized_ids: list[str] = []
    carried_text = carried.text if carried is not None else ""
    if carried_in_full:
        summary_plans.append(SummaryPlan(0, carried_tokens, Decision.KEPT, f"kept: the earlier summary (a SYSTEM message in the chat store) "
                                         f"fits as full text ({carried_tokens:,} tokens)", carried_text))
    elif raised:
        if carried is not None:
            summary_plans.append(SummaryPlan(0, carried_tokens, Decision.DROPPED, "dropped: get() raises", carried_text))
    elif to_summarize and params.llm and len(to_summarize) == 1 and to_summarize[0][0] is None:
        # LlamaIndex passes a lone SYSTEM message (the earlier summary) through unchanged.
        summary_tokens = carried_tokens
        context.append({"role": "system", "content": carried_text})
        context_index.append(None)
        summary_plans.append(SummaryPlan(0, carried_tokens, Decision.KEPT, "kept: the earlier summary no longer fits as full text, but "
                                         "LlamaIndex passes a lone SYSTEM message through unsummarised", carried_text))
    elif to_summarize and params.llm:
        covered_messages = [m for m in rest if m.id in covered] + [e[0] for e in to_summarize if e[0] is not None]
        new_summary_text = stand_in_summary(covered_messages)
        summary_tokens = text_tokens(counts, new_summary_text)
        summarized_ids = [m.id for m in covered_messages]
        context.append({"role": "system", "content": new_summary_text})
        context_index.append(None)
        if carried is not None:
            summary_plans.append(SummaryPlan(0, carried_tokens, Decision.SUMMARIZED, "summarized: the earlier summary no longer fits as full "
                                             "text, so the llm summarises it again with the messages that follow it", carried_text))
        notes.append(f"{len(to_summarize)} message(s) no longer fit and are summarised into one SYSTEM message ({summary_tokens:,} tokens, "
                     f"not counted against token_limit); {STAND_IN}")
    elif carried is not None:
        summary_plans.append(SummaryPlan(0, carried_tokens, Decision.DROPPED, "dropped: it no longer fits, and without an llm what no longer "
                                         "fits is removed", carried_text))
    for e in full:
        if e[0] is None:
            context.append({"role": "system", "content": carried_text})
            context_index.append(None)
        else:
            context.append(e[0].to_openai())
            context_index.append(e[0].index)

    moved_ids = {id(e[0]) for e in to_summarize[len(to_summarize) - moved:]}
    limit_left = limit - (initial if params.count_initial_tokens else 0)
    for m in rest:
        if m.id in covered:
            decide(m, Decision.SUMMARIZED, "summarized", "summarized: an earlier get() replaced it with the summary it wrote")
    for e in to_summarize:
        m = e[0]
        if m is None or raised:
            continue
        verb, zone = (Decision.SUMMARIZED, "summarized") if params.llm else (Decision.DROPPED, "full_text")
        fate = "summarised by the llm" if params.llm else "removed (no llm)"
        if id(m) in moved_ids:
            reason = f"{verb.value}: the full text may not start with an {m.role} message, so it is {fate} with the older ones"
        elif e is misfit:
            reason = (f"{verb.value}: its {e[2]:,} tokens did not fit in the {limit - token_count:,} left of token_limit {limit:,} "
                      f"(newest first; stops at the first misfit), so it is {fate}")
        else:
            reason = f"{verb.value}: older than the first message that did not fit, so it is {fate}"
        decide(m, verb, zone, reason)
    for e in full:
        if e[0] is not None:
            decide(e[0], Decision.KEPT, "full_text", f"kept: its {e[2]:,} tokens fit in the {limit_left:,}-token full-text budget (newest first)")
    if raised:
        for m in history:
            decide(m, Decision.DROPPED, "full_text", f"dropped: get() raises because the {initial:,} initial tokens exceed token_limit {limit:,}")

    messages = tuple(decisions)  # type: ignore[arg-type]
    sent = [m for m in messages if m.sent]
    counted_initial = initial if params.count_initial_tokens else 0
    uncounted_system = 0 if params.count_initial_tokens else system_tokens
    usage = {"initial": counted_initial, "system": uncounted_system, "summary": summary_tokens, "full_text": full_tokens}
    # Caps: token_limit bounds the counted initial tokens and the full text; the uncounted system
    # prompt and the summary are sent outside it (their caps are what they use).
    allocation = {"initial": min(counted_initial, limit), "system": uncounted_system, "summary": summary_tokens,
                  "full_text": max(0, limit - counted_initial)}
    used = sum(usage.values())
    totals = Totals(budget=limit, used=used, kept=sum(m.tokens for m in sent), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=all(usage[p] <= a for p, a in allocation.items()), kept_messages=len(sent),
                    dropped_messages=len(messages) - len(sent), fits_test="parts", allocation_kind="caps")
    if summary_tokens and not params.count_initial_tokens:
        notes.append("the summary and the system prompt are sent outside token_limit (count_initial_tokens is off and LlamaIndex never counts the summary it writes)")
    return Plan(
        policy=NAME, params={**params_dict(params), "token_limit": limit, "initial_token_count": initial},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=system_prompt, messages=messages,
        context=tuple(context), context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans),
        zones=ZONES, notes=tuple(notes),
        extra={"token_count": token_count, "summary_text": new_summary_text, "summarized_ids": summarized_ids, "raised": raised},
    )


def compact(prefix: Session, plan: Plan, params: ChatSummaryMemoryBufferParams, counts: TokenCounts, summarizer: Any, turn: int,
            events: list[Any]) -> Summary | None:
    """get() rewrites the chat store: the summary it wrote replaces what it covers from then on. It
    runs before each LLM call, so ctxviz applies it at turns that end on a user or tool message."""
    ids: list[str] = list(plan.extra.get("summarized_ids") or [])
    if not ids or not prefix.messages or prefix.messages[-1].role not in ("user", "tool"):
        return None
    from ..simulate import Event

    by_id = {m.id: m for m in prefix.messages}
    covered = [by_id[i] for i in ids if i in by_id]
    text = summarizer.supyagent_snapshot(covered)
    previous = len(prefix.summaries[-1].covers) if prefix.summaries else 0
    events.append(Event(turn, "summary", f"ChatSummaryMemoryBuffer summarised {len(covered) - previous} more messages "
                                         f"({len(covered)} in all) that no longer fit token_limit {params.limit:,} into one SYSTEM message"))
    return Summary(text=text, messages_covered=len(covered), covers=tuple(ids), created_at=prefix.messages[-1].timestamp)


POLICY = Policy(
    name=NAME,
    title="LlamaIndex ChatSummaryMemoryBuffer",
    params_type=ChatSummaryMemoryBufferParams,
    measure_name="llamaindex-content",
    measure=measure_content,
    default_tokenizer="cl100k_base",
    plan=plan,
    zone_parts={"full_text": "full_text"},
    description="Keeps the newest messages that fit token_limit as full text (stopping at the first misfit) and has the llm summarise "
                "the rest into one SYSTEM message in front.",
    framework="LlamaIndex",
    framework_version="llama-index-core 0.14.25",
    source="llama_index/core/memory/chat_summary_memory_buffer.py ChatSummaryMemoryBuffer.get",
    counter="tiktoken cl100k_base (gpt-3.5-turbo) over each message's text content alone; tool calls and images are not counted, "
            "a message without text counts as 'None'",
    trigger=("token_limit",),
    keep=("token_limit",),
    stand_in=STAND_IN,
    compact=compact,
)
