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

from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session, Summary
from ...tokenizers import Tokenizer
from ...wording import noun
from ..base import Policy, params_dict
from ..common import history_with_summaries
from .chat_memory_buffer import DEFAULT_TOKEN_LIMIT_RATIO
from .joined import content_str, llama_count, llama_role, prefix_tokens, text_tokens
from .summary_columns import NAME, STAND_IN, ZONES, plan_columns, stand_in_summary
from .summary_input import shown_all

DEFAULT_TOKEN_LIMIT = 2000


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


def measure_content(message: Message, tokenizer: Tokenizer) -> int:
    """`len(tokenizer_fn(str(m.content)))` of one message."""
    return llama_count(tokenizer, content_str(message))


@dataclass(frozen=True)
class ChatSummaryMemoryBufferParams:
    """ChatSummaryMemoryBuffer.from_defaults(...) and get(initial_token_count=...)."""

    token_limit: int | None = field(default=None, metadata=_help(unit="tokens", text=
        "Token limit of the full-text messages (default: 2000, or 0.75 x context_window when an llm's window is given)", min=1, step=100))
    context_window: int | None = field(default=None, metadata=_help(
        "from_defaults(llm=...): the llm's metadata.context_window; the limit becomes int(0.75 x it)", min=1, step=1000))
    llm: bool = field(default=True, metadata=_help(
        "An llm is given, so what no longer fits is summarised (false: llm=None, the from_defaults default, which drops it)"))
    count_initial_tokens: bool = field(default=False, metadata=_help("Count the initial tokens (the system prompt) against token_limit"))
    initial_token_count: int | None = field(default=None, metadata=_help(
        "get(initial_token_count=...), counted only with count_initial_tokens (default: the system prompt's tokens)", min=0, step=100))
    system_messages_in_memory: bool = field(default=False, metadata=_help(
        "System-role messages are in the memory where they stand (memory.put(ChatMessage(role=SYSTEM, ...))): counted, kept as full "
        "text or summarised like any other (a lone one that no longer fits is passed through); off: the chat engine's prefix messages"))

    @property
    def needs_full_replay(self) -> bool:
        """`simulate` plans every prefix from scratch: its incremental replayer keeps system messages apart."""
        return self.system_messages_in_memory

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


def plan(session: Session, params: ChatSummaryMemoryBufferParams, counts: TokenCounts) -> Plan:
    """get() in columns (summary_columns.py): a binary search for the full text, nothing built per message."""
    return plan_columns(session, params, counts)


def plan_records(session: Session, params: ChatSummaryMemoryBufferParams, counts: TokenCounts) -> Plan:
    """get() step by step, a record per message: the reference `plan` is checked against
    (tests/test_llamaindex_summary_columns.py)."""
    limit = params.limit
    tokens = counts.message_tokens
    in_memory = params.system_messages_in_memory
    system_messages, rest = ([], list(session.messages)) if in_memory else (list(part) for part in session.system_and_history)
    system_prompt, system_tokens = prefix_tokens(session, counts, system_messages)
    initial = system_tokens if params.initial_token_count is None else params.initial_token_count
    # The chat store as get() sees it: a summary an earlier get() wrote (or the file records) is a
    # SYSTEM message where the messages it covers were. Entries: (message or summary index, role, tokens).
    raw, covered_by, superseded = history_with_summaries(session, with_system=in_memory)
    covered = set(covered_by)
    summaries = session.summaries
    summary_tokens_of = {k: text_tokens(counts, summaries[k].text) for k in range(len(summaries))}
    entries: list[tuple[Message | int, str, int]] = [(e, "system", summary_tokens_of[e]) if isinstance(e, int) else (e, llama_role(e), tokens[e.index])
                                                     for e in raw]
    decisions: list[MessagePlan | None] = [None] * len(session.messages)
    notes: list[str] = []

    def decide(m: Message, decision: Decision, zone: str, reason: str, code: str) -> None:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason, t if decision is Decision.KEPT else 0, code)

    for m in system_messages:
        decide(m, Decision.KEPT, "system", "kept: part of the system prompt, which the chat engine sends before the memory", "system_prompt")

    raised = params.count_initial_tokens and initial > limit
    token_count = initial if params.count_initial_tokens else 0
    full: list[tuple[Message | int, str, int]] = []
    position = len(entries)
    if raised:
        notes.append(f"ChatSummaryMemoryBuffer.get raises 'Initial token count exceeds token limit': {initial:,} initial tokens > token_limit {limit:,}")
        position = 0
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
    full_tokens = sum(e[2] for e in full if isinstance(e[0], Message))

    summary_decisions: dict[int, tuple[Decision, str]] = {k: (Decision.DROPPED, "dropped: superseded by a later summary, which covers "
                                                                               "every message of the file this one covers") for k in superseded}
    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    context_index: list[int | None] = [None] * len(context)
    summary_tokens = 0
    passed_through: Message | int | None = None
    new_summary_text = ""
    summarized_ids: list[str] = []
    for e in full:
        if isinstance(e[0], int):
            summary_tokens += e[2]
            summary_decisions[e[0]] = (Decision.KEPT, f"kept: an earlier summary (a SYSTEM message in the chat store) fits as full text ({e[2]:,} tokens)")
    earlier = [e[0] for e in to_summarize if isinstance(e[0], int)]
    if raised:
        summary_decisions.update({k: (Decision.DROPPED, "dropped: get() raises") for k in earlier})
    elif to_summarize and params.llm and len(to_summarize) == 1 and earlier:
        # LlamaIndex passes a lone SYSTEM message (an earlier summary) through unchanged.
        k = earlier[0]
        summary_tokens += summary_tokens_of[k]
        context.append({"role": "system", "content": summaries[k].text})
        context_index.append(None)
        summary_decisions[k] = (Decision.KEPT, "kept: the earlier summary no longer fits as full text, but LlamaIndex passes a lone SYSTEM "
                                               "message through unsummarised")
    elif to_summarize and params.llm and len(to_summarize) == 1 and to_summarize[0][1] == "system":
        # ... and so a lone system message of the memory's own (system_messages_in_memory).
        passed = to_summarize.pop()
        full.insert(0, passed)
        full_tokens += passed[2]
        passed_through = passed[0]
    elif to_summarize and params.llm:
        absorbed = set(earlier)
        # The messages to summarise, by identity (a scan of to_summarize per message made a plan quadratic).
        summarising = {id(e[0]) for e in to_summarize if not isinstance(e[0], int)}
        covered_messages = [m for m in rest if (m.id in covered and covered_by[m.id] in absorbed) or id(m) in summarising]
        new_summary_text = stand_in_summary(covered_messages)
        summary_tokens += text_tokens(counts, new_summary_text)
        summarized_ids = [m.id for m in covered_messages]
        context.append({"role": "system", "content": new_summary_text})
        context_index.append(None)
        summary_decisions.update({k: (Decision.SUMMARIZED, "summarized: the earlier summary no longer fits as full text, so the llm "
                                                           "summarises it again with the messages that follow it") for k in earlier})
        notes.append(f"{len(to_summarize):,} {noun(len(to_summarize), 'message')} {'no longer fits and is' if len(to_summarize) == 1 else 'no longer fit and are'} summarised into one SYSTEM message "
                     f"({text_tokens(counts, new_summary_text):,} tokens, not counted against token_limit); {STAND_IN}")
    else:
        summary_decisions.update({k: (Decision.DROPPED, "dropped: it no longer fits, and without an llm what no longer fits is removed")
                                  for k in earlier})
    for e in full:
        if isinstance(e[0], int):
            context.append({"role": "system", "content": summaries[e[0]].text})
            context_index.append(None)
        else:
            context.append(e[0].to_openai())
            context_index.append(e[0].index)
    summary_plans = [SummaryPlan(k, summary_tokens_of[k], *summary_decisions.get(k, (Decision.DROPPED, "dropped: not in the chat store")),
                                 summaries[k].text) for k in range(len(summaries))]

    moved_ids = {id(e[0]) for e in to_summarize[len(to_summarize) - moved:]}
    limit_left = limit - (initial if params.count_initial_tokens else 0)
    for m in rest:
        if m.id in covered:
            k = covered_by[m.id]
            fate = {Decision.KEPT: "which is sent in its place", Decision.SUMMARIZED: "which is summarised again",
                    Decision.DROPPED: "which is not sent"}[summary_decisions.get(k, (Decision.DROPPED, ""))[0]]
            decide(m, Decision.SUMMARIZED, "summarized", f"summarized: summary #{k + 1} (written by an earlier get(), or recorded) covers it, {fate}",
                   "summarised")
    for e in to_summarize:
        m = e[0]
        if isinstance(m, int) or raised:
            continue
        verb, zone = (Decision.SUMMARIZED, "summarized") if params.llm else (Decision.DROPPED, "full_text")
        fate = "summarised by the llm" if params.llm else "removed (no llm)"
        # With an llm all of them are summarised; without one, why each is removed.
        if id(m) in moved_ids:
            reason, code = (f"{verb.value}: the full text may not start with {'an' if m.role == 'assistant' else 'a'} {m.role} message, so it is "
                            f"{fate} with the older ones"), "start_rule"
        elif e is misfit:
            reason, code = (f"{verb.value}: its {e[2]:,} tokens did not fit in the {limit - token_count:,} left of token_limit {limit:,} "
                            f"(newest first; stops at the first misfit), so it is {fate}"), "missed"
        else:
            reason, code = f"{verb.value}: older than the first message that did not fit, so it is {fate}", "after_cut"
        decide(m, verb, zone, reason, "summarised" if params.llm else code)
    for e in full:
        if e[0] is passed_through:
            decide(e[0], Decision.KEPT, "full_text", f"kept: its {e[2]:,} tokens no longer fit, but LlamaIndex passes a lone SYSTEM message "
                                                     "through unsummarised", "kept")
        elif isinstance(e[0], Message):
            decide(e[0], Decision.KEPT, "full_text", f"kept: its {e[2]:,} tokens fit in the {limit_left:,}-token full-text budget (newest first)",
                   "fits")
    if raised:
        for m in (e[0] for e in entries if isinstance(e[0], Message)):
            decide(m, Decision.DROPPED, "full_text", f"dropped: get() raises because the {initial:,} initial tokens exceed token_limit {limit:,}",
                   "dropped")

    messages = tuple(decisions)  # type: ignore[arg-type]
    sent = [m for m in messages if m.sent]
    counted_initial = initial if params.count_initial_tokens else 0
    uncounted_system = 0 if params.count_initial_tokens else system_tokens
    usage = {"initial": counted_initial, "system": uncounted_system, "summary": summary_tokens, "full_text": full_tokens}
    # Caps: token_limit bounds the counted initial tokens and the full text; the uncounted system
    # prompt and the summary are sent outside it (their caps are what they use, up to the limit
    # itself: a summary or prompt larger than the whole token_limit is shown over).
    allocation = {"initial": min(counted_initial, limit), "system": min(uncounted_system, limit), "summary": min(summary_tokens, limit),
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
    from ...replay_contract import Event

    by_id = {m.id: m for m in prefix.messages}
    covered = [by_id[i] for i in ids if i in by_id]
    text = summarizer.supyagent_snapshot(shown_all(covered))  # what LlamaIndex's summariser is shown of them
    previous = len(prefix.summaries[-1].covers) if prefix.summaries else 0
    events.append(Event(turn, "summary", f"ChatSummaryMemoryBuffer summarised {len(covered) - previous} more messages "
                                         f"({len(covered)} in all) that no longer fit token_limit {params.limit:,} into one SYSTEM message"))
    return Summary(text=text, messages_covered=len(covered), covers=tuple(ids), created_at=prefix.messages[-1].timestamp)


POLICY = Policy(
    reason_codes=("system_prompt", "fits", "kept", "summarised", "missed", "after_cut", "start_rule", "dropped"),
    name=NAME,
    schedule='memory.get(): once per LLM call, after a user message or a whole batch of tool results (BaseWorkflowAgent.aggregate_tool_results, then memory.aget())',
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
