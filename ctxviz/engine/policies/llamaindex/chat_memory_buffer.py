"""LlamaIndex's ChatMemoryBuffer.get (llama_index/core/memory/chat_memory_buffer.py, llama-index-core
0.14.25), reproduced decision for decision; tests/golden/llamaindex holds it to the framework's own class.

The buffer tokenises `" ".join(str(m.content) for m in window)` with tiktoken's gpt-3.5-turbo
encoding (cl100k_base), over the whole candidate window each time. BPE never merges across the
encoder's regex chunks, and a joining space always starts a new chunk unless whitespace meets
whitespace across the join, so the window's count is each message's count *as it stands after a
joining space* (the per-message measure), with the window's first message counted without that
space, plus an exact recount of the rare runs of messages where whitespace meets whitespace across
a join. Nothing is re-tokenised per re-plan beyond those (memoised) texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session
from ..base import Policy, params_dict
from ..common import history_with_summaries, with_system_messages
from .buffer_columns import NAME, ZONES, plan_columns, raise_note
from .joined import (
    Entry,
    JoinedCounter,
    _drop_reason,
    _start_rule,
    content_str,
    entry_role,
    joined_counter,
    llama_count,
    llama_role,
    measure_joined,
    prefix_tokens,
    text_tokens,
)

# What the buffer's replayer and older callers read from here (moved to joined.py, which both plans share).
__all__ = ["NAME", "POLICY", "ZONES", "ChatMemoryBufferParams", "Entry", "JoinedCounter", "content_str", "joined_counter", "llama_count",
           "llama_role", "plan", "plan_records", "prefix_tokens", "text_tokens"]

DEFAULT_TOKEN_LIMIT = 3000
DEFAULT_TOKEN_LIMIT_RATIO = 0.75


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


def parse_token_limit(value: int | None, context_window: int | None) -> int:
    """from_defaults: `token_limit or int(context_window * 0.75)` with an llm, else the default."""
    if context_window is not None:
        return value or int(context_window * DEFAULT_TOKEN_LIMIT_RATIO)
    return DEFAULT_TOKEN_LIMIT if value is None else value


@dataclass(frozen=True)
class ChatMemoryBufferParams:
    """ChatMemoryBuffer.from_defaults(token_limit=..., llm=...) and get(initial_token_count=...)."""

    token_limit: int | None = field(default=None, metadata=_help(unit="tokens", text=
        "Token limit of the buffer (default: 3000, or 0.75 x context_window when an llm's window is given)", min=1, step=100))
    context_window: int | None = field(default=None, metadata=_help(
        "from_defaults(llm=...): the llm's metadata.context_window; the limit becomes int(0.75 x it)", min=1, step=1000))
    initial_token_count: int | None = field(default=None, metadata=_help(
        "get(initial_token_count=...): tokens counted before the history (default: the system prompt, as LlamaIndex's chat "
        "engines count their prefix messages)", min=0, step=100))

    system_messages_in_memory: bool = field(default=False, metadata=_help(
        "System-role messages are in the memory where they stand (memory.put(ChatMessage(role=SYSTEM, ...))), counted and "
        "trimmed like any other; off: the chat engine's prefix messages, sent before the memory and never trimmed"))

    @property
    def needs_full_replay(self) -> bool:
        """`simulate` plans every prefix from scratch: its incremental replayer keeps system messages apart."""
        return self.system_messages_in_memory

    def __post_init__(self) -> None:
        if self.context_window is not None and self.context_window < 1:
            raise ValueError(f"context_window must be >= 1, got {self.context_window}")
        limit = parse_token_limit(self.token_limit, self.context_window)
        if limit < 1:
            # LlamaIndex's own validator message.
            raise ValueError(f"token_limit: Token limit must be set and greater than 0 (got {limit})")
        if self.initial_token_count is not None and self.initial_token_count < 0:
            raise ValueError(f"initial_token_count must be >= 0, got {self.initial_token_count}")

    @property
    def limit(self) -> int:
        return parse_token_limit(self.token_limit, self.context_window)


def plan(session: Session, params: ChatMemoryBufferParams, counts: TokenCounts) -> Plan:
    """get() in columns (`buffer_columns`): what the CLI and the app plan with."""
    return plan_columns(session, params, counts)


def plan_records(session: Session, params: ChatMemoryBufferParams, counts: TokenCounts) -> Plan:
    """get() step for step, one record per message: the reference the columns plan is checked
    against (tests/test_llamaindex_buffer_columns.py)."""
    limit = params.limit
    tokens = counts.message_tokens
    in_memory = params.system_messages_in_memory
    system_messages = [] if in_memory else list(session.system_and_history[0])
    system_prompt, system_tokens = prefix_tokens(session, counts, system_messages)
    initial = system_tokens if params.initial_token_count is None else params.initial_token_count
    decisions: list[MessagePlan | None] = [None] * len(session.messages)
    notes: list[str] = []
    for m in system_messages:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "system",
                                         "kept: part of the system prompt, which the chat engine sends before the memory", t, "system_prompt")

    # Recorded summaries stand in the chat store where the messages they cover were, as SYSTEM messages.
    entries, covered, superseded = history_with_summaries(session)
    if in_memory and session.system_and_history[0]:
        entries = with_system_messages(entries, session.system_and_history[0])
    roles = [entry_role(e) for e in entries]
    counter = joined_counter(session, entries, counts, in_memory)
    n = len(entries)
    start = n  # index into entries of the first sent one (n: none)
    window_tokens = 0
    shares: list[int] = []
    cut_reason = ""
    raised = initial > limit
    if raised:
        notes.append(raise_note(params.initial_token_count, initial, limit))
    elif n:
        message_count = n
        token_count = counter.window_total(0) + initial
        while token_count > limit and message_count > 1:
            message_count -= 1
            # LlamaIndex: the history may not start with an assistant or tool message.
            while message_count > 1 and roles[n - message_count] in ("tool", "assistant"):
                message_count -= 1
            token_count = counter.window_total(n - message_count) + initial
        if token_count > limit:
            # LlamaIndex returns the last message alone, however large, so the LLM raises the error.
            start = n - 1
            cut_reason = "last"
        else:
            start = n - message_count
        window_tokens, shares = counter.window(start)
    total = initial + window_tokens
    if cut_reason == "last":
        notes.append(f"even the newest message alone ({window_tokens:,} tokens, plus {initial:,} initial) exceeds token_limit {limit:,}: "
                     "ChatMemoryBuffer returns it anyway, so the LLM call fails loudly")
    kept_code = "fits"
    if cut_reason == "last":
        kept_code = "fresh_tail"  # LlamaIndex always returns the newest message
        kept_reason = (f"kept: the newest message is returned alone even though the window ({window_tokens:,} tokens + {initial:,} initial) "
                       f"exceeds token_limit {limit:,} (LlamaIndex lets the LLM raise the error)")
    else:
        kept_reason = f"kept: the newest {n - start} messages join to {window_tokens:,} tokens, within token_limit {limit:,} with {initial:,} initial"
    summary_decisions: dict[int, tuple[Decision, str]] = {k: (Decision.DROPPED, "dropped: superseded by a later recorded summary, which "
                                                                               "covers every message of the file this one covers")
                                                          for k in superseded}
    # The newest entry left out that the window could not take (older ones go with it): the one
    # _drop_reason does not put down to the start rule.
    missed_at = next((k for k in range(start - 1, -1, -1) if not _start_rule(roles, k)), -1)
    for k, entry in enumerate(entries):
        if isinstance(entry, int):
            if k >= start:
                summary_decisions[entry] = (Decision.KEPT, "kept: a recorded summary, in the chat store as a SYSTEM message where the messages "
                                                           f"it covers were; {kept_reason.removeprefix('kept: ')}")
            elif raised:
                summary_decisions[entry] = (Decision.DROPPED, f"dropped: get() raises because the {initial:,} initial tokens exceed token_limit {limit:,}")
            else:
                summary_decisions[entry] = (Decision.DROPPED, "dropped: a recorded summary (a SYSTEM message in the chat store); "
                                            + _drop_reason(roles, k, counter, initial, limit, cut_reason, missed_at)[0].removeprefix("dropped: "))
            continue
        m = entry
        t = tokens[m.index]
        if k >= start:
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "history", kept_reason, shares[k - start],
                                             kept_code)
        elif raised:
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.DROPPED, "history",
                                             f"dropped: get() raises because the {initial:,} initial tokens exceed token_limit {limit:,}",
                                             0, "dropped")
        else:
            reason, code = _drop_reason(roles, k, counter, initial, limit, cut_reason, missed_at)
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.DROPPED, "history", reason, 0, code)
    summary_plans = []
    for k, summary in enumerate(session.summaries):
        decision, reason = summary_decisions.get(k, (Decision.DROPPED, "dropped: not in the chat store"))
        summary_plans.append(SummaryPlan(k, text_tokens(counts, summary.text), decision, reason, summary.text))
    for m in session.system_and_history[1]:
        if m.id in covered:
            k = covered[m.id]
            sent = summary_decisions[k][0] is Decision.KEPT
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, tokens[m.index], Decision.SUMMARIZED, "summarized",
                                             f"summarized: recorded summary #{k + 1} covers it"
                                             + (" and is sent in its place" if sent else "; the summary itself is not sent"), 0, "summarised")

    messages = tuple(decisions)  # type: ignore[arg-type]
    sent_messages = [m for m in messages if m.sent]
    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    context_index: list[int | None] = [None] * len(context)
    for entry in entries[start:]:
        if isinstance(entry, int):
            context.append({"role": "system", "content": session.summaries[entry].text})
            context_index.append(None)
        else:
            context.append(entry.to_openai())
            context_index.append(entry.index)
    allocation = {"initial": min(initial, limit), "history": max(0, limit - initial)}
    usage = {"initial": initial, "history": window_tokens}
    totals = Totals(budget=limit, used=total, kept=sum(m.tokens for m in sent_messages), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=total <= limit and not raised, kept_messages=len(sent_messages), dropped_messages=len(messages) - len(sent_messages),
                    fits_test="parts")
    first_sent = entries[start] if start < n else None
    return Plan(
        policy=NAME, params={**params_dict(params), "token_limit": limit, "initial_token_count": initial},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=system_prompt, messages=messages,
        context=tuple(context), context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans),
        zones=ZONES + (("summarized",) if covered else ()), notes=tuple(notes),
        extra={"token_count": total, "start_index": first_sent.index if isinstance(first_sent, Message) else None, "raised": raised,
               "last_message_only": cut_reason == "last"},
    )


POLICY = Policy(
    reason_codes=("system_prompt", "fits", "fresh_tail", "missed", "after_cut", "start_rule", "summarised", "dropped"),
    name=NAME,
    schedule='memory.get(): once per LLM call, after a user message or a whole batch of tool results',
    title="LlamaIndex ChatMemoryBuffer",
    params_type=ChatMemoryBufferParams,
    measure_name="llamaindex-joined-content",
    measure=measure_joined,
    default_tokenizer="cl100k_base",
    plan=plan,
    zone_parts={"history": "history"},
    description="Drops the oldest messages until the joined history fits token_limit; never starts on an assistant or tool message; "
                "returns the newest message alone if nothing else fits.",
    framework="LlamaIndex",
    framework_version="llama-index-core 0.14.25",
    source="llama_index/core/memory/chat_memory_buffer.py ChatMemoryBuffer.get",
    counter="tiktoken cl100k_base (gpt-3.5-turbo) over the messages' text contents joined by spaces; tool calls and images are "
            "not counted, a message without text counts as 'None'",
    trigger=("token_limit",),
    keep=("token_limit",),
)
