"""mnesis' ContextBuilder.build (src/mnesis/context/builder.py at 677d1898).

Seed page 004 and policies.md section 4 are the specification. The documented invariant "the most
recent raw messages are always included" is not enforced by the source; it is the named option
`always_include_latest`, off by default.

How a ctxviz session maps onto mnesis' messages (checked against mnesis 0.3.0 itself:
tests/golden/mnesis): a tool message answering the calls of the message before it is no mnesis
message; its output lives in that message's ToolPart (`[Tool: n]\nInput: ...\nOutput: ...\n[/Tool]`),
so the pair is counted, kept and dropped as one (the tool message counts 0 and has no context entry:
`extra["carried_by"]`). Thinking is a ReasoningPart, counted by the length of its pydantic `str()`
/ 4 and sent only when non-empty. A text holding a special token (`<|endoftext|>`) makes mnesis'
tiktoken call raise, and it counts that text as characters / 4; with no model name mnesis' ModelInfo
is its unknown-model default, cl100k_base.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session, Summary
from ...tokenizers import ENCODINGS, HEURISTICS, Tokenizer, load_encoding
from ..base import Policy, params_dict
from ..common import base_system_prompt
from .context_builder_columns import plan_columns
from .messages import (
    ZONES,
    estimate_message,
    measure_session,
    model_info,
    render_message,
    tool_output_tokens,
    tool_parts,
)

DEFAULT_COMPACTION_BUFFER = 20_000


@dataclass(frozen=True)
class MnesisTiktoken:
    """mnesis' TokenEstimator.estimate for a tiktoken encoding: `encoder.encode(text)`, which raises
    on a special token such as `<|endoftext|>`; mnesis catches that and falls back to
    max(1, len // 4) for the whole text."""

    encoding_name: str

    @property
    def name(self) -> str:
        return f"{self.encoding_name} (mnesis)"

    def count(self, text: str) -> int:
        if not text:
            return 0
        encoding = load_encoding(self.encoding_name)
        if any(special in text for special in encoding.special_tokens_set):  # mnesis: encode() raises, the heuristic answers
            return HEURISTICS["mnesis"].count(text)
        return len(encoding.encode_ordinary(text))


def tokenizer_for_model(model: str) -> str | Tokenizer:
    """The ModelInfo's encoding; no model name is an unknown model: mnesis' default, cl100k_base."""
    encoding = model_info(model).encoding
    return MnesisTiktoken(encoding) if encoding in ENCODINGS else encoding


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class MnesisBudget:
    context_limit: int | None = field(default=None, metadata=_help("Model context window (default: mnesis' ModelInfo for the model)", min=0, step=1000))
    reserved_output_tokens: int | None = field(default=None, metadata=_help("Reserved for output (default: the model's max output)", min=0, step=256))
    compaction_buffer: int = field(default=DEFAULT_COMPACTION_BUFFER, metadata=_help("compaction_output_budget, kept free for compaction", min=1000, max=200_000, step=1000))
    always_include_latest: bool = field(default=False, metadata=_help("Enforce the documented 'most recent message always included' (the source does not)"))

    def __post_init__(self) -> None:
        if self.context_limit is not None and self.context_limit < 0:
            raise ValueError(f"context_limit must be >= 0, got {self.context_limit}")
        if self.reserved_output_tokens is not None and self.reserved_output_tokens < 0:
            raise ValueError(f"reserved_output_tokens must be >= 0, got {self.reserved_output_tokens}")
        if not 1000 <= self.compaction_buffer <= 200_000:
            raise ValueError(f"compaction_buffer must be between 1000 and 200000, got {self.compaction_buffer}")


def plan(session: Session, budget: MnesisBudget, counts: TokenCounts) -> Plan:
    """The build in columns (`context_builder_columns`)."""
    return plan_columns(session, budget, counts)


def plan_records(session: Session, budget: MnesisBudget, counts: TokenCounts) -> Plan:
    """ContextBuilder.build step for step, one record per message: the reference the columns are
    checked against (tests/test_mnesis_columns.py)."""
    info = model_info(session.model)
    limit = budget.context_limit if budget.context_limit is not None else info.context_limit
    reserved = budget.reserved_output_tokens if budget.reserved_output_tokens is not None else info.max_output_tokens
    usable = limit - reserved - budget.compaction_buffer  # can be negative
    tokens = counts.message_tokens
    system_messages = [m for m in session.messages if m.role == "system"]
    raw = [m for m in session.messages if m.role != "system"]
    system_prompt = base_system_prompt(session, system_messages)
    system_tokens = counts.text(system_prompt) if system_prompt else 0
    available = usable - system_tokens
    notes: list[str] = []
    if usable <= 0:
        notes.append(f"usable budget is {usable:,} ({limit:,} - {reserved:,} reserved output - {budget.compaction_buffer:,} compaction buffer): no raw message can fit")

    decisions: list[MessagePlan | None] = [None] * len(session.messages)

    def decide(m: Message, decision: Decision, zone: str, reason: str, code: str) -> None:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason, t if decision is Decision.KEPT else 0, code)

    for m in system_messages:
        decide(m, Decision.KEPT, "system", "kept: part of the system prompt, which mnesis counts against the budget", "system_prompt")

    # Summaries replace the messages they cover and are charged unconditionally (no fit check).
    heuristic = HEURISTICS["mnesis"]
    summary_plans: list[SummaryPlan] = []
    summary_tokens = 0
    covered = session.covered_ids
    for i, s in enumerate(session.summaries):
        t = heuristic.count(s.text)  # stored token_count: the heuristic, not the model's encoding
        summary_tokens += t
        summary_plans.append(SummaryPlan(i, t, Decision.KEPT, f"kept: summaries are always sent first and charged without a fit check ({t:,} tokens)", s.text))
    available -= summary_tokens
    raw_candidates = [m for m in raw if m.id not in covered]
    for m in raw:
        if m.id in covered:
            decide(m, Decision.SUMMARIZED, "summarized", "summarized: replaced in context by the summary that covers it", "summarised")

    # mnesis' unit is its message: an assistant message with the tool messages whose outputs its
    # ToolParts hold (counted 0 on their own) is kept or dropped whole.
    parts = tool_parts(session)
    candidate = {m.index for m in raw_candidates}
    units: list[list[Message]] = []
    for m in raw_candidates:
        carrier = parts.carrier[m.index]
        if carrier is None:
            units.append([m])
        elif carrier in candidate:
            units[-1].append(m)
        else:
            # The carrier is covered by a summary (a non-system message that is not a raw candidate):
            # its tool part, this output included, went into that summary.
            decide(m, Decision.DROPPED, "raw", f"dropped: its output belongs to the tool part of #{carrier}, which is not a raw message here", "summarised")

    def label(unit: list[Message]) -> str:
        return f" (with its tool outputs #{', #'.join(str(c.index) for c in unit[1:])})" if len(unit) > 1 else ""

    included: list[Message] = []
    used = 0
    cut: Message | None = None
    for position in range(len(units) - 1, -1, -1):
        unit = units[position]
        m = unit[0]
        t = tokens[m.index]
        if used + t <= available:
            used += t
            included.append(m)
            for c in unit:
                decide(c, Decision.KEPT, "raw", f"kept: {t:,} tokens{label(unit)} fit in the {available - used + t:,} left of the {usable:,} usable (newest first)"
                       if c is m else f"kept: its output is sent inside the tool part of #{m.index}, which mnesis counts there", "fits")
            continue
        if budget.always_include_latest and not included:
            used += t
            included.append(m)
            for c in unit:
                decide(c, Decision.KEPT, "raw", f"kept: the most recent message is always included (option), even though its {t:,} tokens exceed the {max(available, 0):,} left", "fresh_tail")
            continue
        cut = m
        for c in unit:
            decide(c, Decision.DROPPED, "raw", f"dropped: {t:,} tokens{label(unit)} did not fit in the {max(available - used, 0):,} left of the {usable:,} usable"
                   if c is m else f"dropped with #{m.index}: its output is part of that message's tool part", "missed")
        for older in units[:position]:
            for c in older:
                decide(c, Decision.DROPPED, "raw", f"dropped: mnesis stops at the first message that does not fit (#{m.index})", "after_cut")
        break
    if units and not included:
        notes.append("no raw message is included: the newest alone does not fit (mnesis does not enforce its 'most recent always included' invariant)")
    included.reverse()

    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    context += [{"role": "assistant", "content": s.text} for s in session.summaries]
    context += [render_message(m, parts.results.get(m.index)) for m in included]
    context_index = [None] * (1 + len(session.summaries)) + [m.index for m in included]
    token_estimate = system_tokens + summary_tokens + used
    messages = tuple(decisions)  # type: ignore[arg-type]
    sent = [m for m in messages if m.sent]
    allocation = {"reserved_output": reserved, "compaction_buffer": budget.compaction_buffer, "system": system_tokens,
                  "summaries": summary_tokens, "messages": usable - system_tokens - summary_tokens}
    usage = {"reserved_output": 0, "compaction_buffer": 0, "system": system_tokens, "summaries": summary_tokens, "messages": used}
    tool_tokens = tool_output_tokens(included, counts, parts)
    totals = Totals(budget=limit, used=token_estimate, kept=sum(m.tokens for m in sent), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=token_estimate <= usable, kept_messages=len(sent), dropped_messages=len(messages) - len(sent),
                    fits_test="parts")
    return Plan(
        policy="mnesis", params={**params_dict(budget), "context_limit": limit, "reserved_output_tokens": reserved},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=system_prompt, messages=messages,
        context=tuple(context), context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"usable": usable, "has_summary": bool(session.summaries), "token_estimate": token_estimate,
               "summary_token_count": summary_tokens, "raw_message_tokens": used, "tool_output_tokens": tool_tokens,
               "oldest_included_message_id": included[0].id if included else None, "cut_index": cut.index if cut else None,
               # tool messages sent inside an earlier message's tool part (no context entry of their own)
               "carried_by": {i: c for i, c in enumerate(parts.carrier) if c is not None and decisions[i] is not None and decisions[i].sent}},
    )


def refresh(plan: Plan, session: Session, counts: TokenCounts | None) -> Plan:
    """After ctxviz dropped messages from the plan (pair safety): the BuiltContext figures in `extra`."""
    included = [session.messages[i] for i in plan.context_index if i is not None]
    extra = {**plan.extra, "token_estimate": plan.totals.used, "raw_message_tokens": plan.usage["messages"],
             "oldest_included_message_id": included[0].id if included else None}
    if counts is not None:
        extra["tool_output_tokens"] = tool_output_tokens(included, counts, tool_parts(session))
    sent = {m.index for m in plan.messages if m.sent}
    extra["carried_by"] = {i: c for i, c in plan.extra.get("carried_by", {}).items() if i in sent}
    return replace(plan, extra=extra)


SOFT_THRESHOLD = 0.6  # mnesis compacts at 60 % of the usable budget (simulate's trigger)


def _usable(budget: MnesisBudget, session: Session) -> tuple[int, int]:
    info = model_info(session.model)
    limit = budget.context_limit if budget.context_limit is not None else info.context_limit
    reserved = budget.reserved_output_tokens if budget.reserved_output_tokens is not None else info.max_output_tokens
    return limit - reserved - budget.compaction_buffer, reserved


def trigger_level(budget: MnesisBudget, session: Session) -> int | None:
    """mnesis' soft compaction threshold, in tokens: 60 % of the usable budget."""
    usable, _ = _usable(budget, session)
    return int(usable * SOFT_THRESHOLD) if usable > 0 else None


def align(budget: MnesisBudget, session: Session, trigger_tokens: int | None, keep_messages: int | None,
          keep_tokens: int | None) -> tuple[MnesisBudget, list[str]]:
    """mnesis has no trigger parameter of its own: the soft threshold follows the context limit, so
    firing at N tokens means a limit of N / 0.6 plus the reserves. It keeps no fixed tail."""
    skipped = [f"mnesis: it keeps no fixed number of {unit} (raw messages fill what the summaries leave)"
               for unit, wanted in (("messages", keep_messages), ("tokens", keep_tokens)) if wanted is not None]
    if trigger_tokens is None:
        return budget, skipped
    _, reserved = _usable(budget, session)
    limit = -(-trigger_tokens * 10 // 6) + reserved + budget.compaction_buffer  # the smallest limit whose 60 % reaches N
    return replace(budget, context_limit=limit), skipped


def compact(prefix: Session, plan: Plan, budget: MnesisBudget, counts: TokenCounts, summarizer: Any, i: int,
            events: list[Any]) -> Summary | None:
    """mnesis' soft (60 % of usable) and hard thresholds: everything before the second-to-last user
    message is condensed, merged with the earlier node, into the Level 3 deterministic summary."""
    from ...replay_contract import Event
    from ...summarizers import mnesis_fallback

    messages = prefix.messages
    usable = plan.extra["usable"]
    estimate = plan.extra["token_estimate"]
    soft = int(usable * SOFT_THRESHOLD)
    if not (usable > 0 and estimate >= soft):
        return None
    users = [m for m in messages if m.role == "user"]
    if len(users) <= 2:
        return None
    covered_ids = prefix.covered_ids
    boundary = users[-2].index
    new = [m for m in messages[:boundary] if m.id not in covered_ids and m.role != "system"]
    if not new:
        return None
    kind = "hard_threshold" if estimate >= usable else "compaction"
    events.append(Event(i, kind, f"{estimate:,} tokens >= the {'hard' if kind == 'hard_threshold' else 'soft'} threshold "
                                 f"({usable if kind == 'hard_threshold' else soft:,}): {len(new)} messages compacted"))
    covered = [m for m in messages[:boundary] if m.id in covered_ids or m in new]
    text = mnesis_fallback(covered, max(1, usable // 10))
    return Summary(text=text, messages_covered=len(covered), covers=tuple(m.id for m in covered if m.role != "system"))


POLICY = Policy(
    reason_codes=("system_prompt", "summarised", "fits", "fresh_tail", "missed", "after_cut"),
    name="mnesis",
    title="mnesis ContextBuilder",
    params_type=MnesisBudget,
    measure_name="mnesis-message",
    measure=estimate_message,
    measure_session=measure_session,
    default_tokenizer="cl100k_base",
    tokenizer_for_model=tokenizer_for_model,
    plan=plan,
    compact=compact,
    zone_parts={"raw": "messages"},
    refresh=refresh,
    description="Summaries first, charged without a fit check; raw messages newest first, stopping at the first misfit.",
    framework='mnesis',
    framework_version='0.3.0 (677d1898)',
    source='src/mnesis/context/builder.py ContextBuilder.build',
    counter="mnesis' TokenEstimator: the model's tiktoken encoding (cl100k_base when none is named), characters / 3 for Claude, characters / 4 when the text holds a special token",
    trigger=('context_limit', 'compaction_buffer'),
    trigger_level=trigger_level,
    align=align,
    keep=(),
    stand_in="Level 3 deterministic summary (mnesis' own fallback)",
)
