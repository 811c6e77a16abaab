"""mnesis' ContextBuilder.build (src/mnesis/context/builder.py at 677d1898).

Seed page 004 and policies.md section 4 are the specification. The documented invariant "the most
recent raw messages are always included" is not enforced by the source; it is the named option
`always_include_latest`, off by default.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from ..counting import TokenCounts
from ..plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ..session import (
    FileRefPart,
    Message,
    Part,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    render_file_ref,
)
from ..tokenizers import HEURISTICS, Tokenizer
from .base import Policy, params_dict
from .common import base_system_prompt

ZONES = ("system", "summarized", "raw")
DEFAULT_COMPACTION_BUFFER = 20_000


@dataclass(frozen=True)
class ModelInfo:
    context_limit: int
    max_output_tokens: int
    encoding: str


def model_info(model: str) -> ModelInfo:
    """ModelInfo.from_model_string: the lowercased name after the first `/`, cases in mnesis' order."""
    name = model.lower().split("/", 1)[-1]
    if "claude-opus" in name or "claude-3-opus" in name:
        return ModelInfo(200_000, 32_000, "claude-heuristic")
    if "claude" in name:
        return ModelInfo(200_000, 8192, "claude-heuristic")
    if any(k in name for k in ("o1", "o2", "o3", "o4")):  # substring test, as mnesis does
        return ModelInfo(200_000, 100_000, "o200k_base")
    if "gpt-4o" in name:
        return ModelInfo(128_000, 16_384, "o200k_base")
    if "gpt-4" in name or "gpt-3" in name:
        return ModelInfo(128_000, 4096, "cl100k_base")
    if "gemini" in name:
        return ModelInfo(1_000_000, 8192, "cl100k_base")
    return ModelInfo(128_000, 4096, "cl100k_base")


def tokenizer_for_model(model: str) -> str:
    """No model: mnesis' len//4 heuristic; otherwise the ModelInfo's encoding."""
    return model_info(model).encoding if model else "mnesis"


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


def render_part(part: Part, tool_name: str, for_estimate: bool = False) -> str | None:
    """_convert_message's rendering of one part; None where mnesis omits the part."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return _render_call(part.name, part.arguments)
    if isinstance(part, ToolResultPart):
        return _render_result(tool_name or "tool", part.text, part.is_error, part.compacted_at)
    if isinstance(part, FileRefPart):
        if for_estimate:  # mnesis' estimator renders Tokens without the thousands separator (a quirk)
            return render_file_ref(part).replace(f"Tokens: {part.token_count:,}", f"Tokens: {part.token_count}")
        return render_file_ref(part)
    if isinstance(part, ThinkingPart):
        return part.text
    return None


# Re-plans render every included message again (for the context and the tool-output figure): the
# same call or result renders to the same string object, whose hash and count are then reused.
@lru_cache(maxsize=1 << 17)
def _render_call(name: str, arguments: str) -> str:
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        parsed = arguments
    return f"[Tool: {name}]\nInput: {json.dumps(parsed, indent=2)}\n[/Tool]"


@lru_cache(maxsize=1 << 17)
def _render_result(name: str, text: str, is_error: bool, compacted_at: int) -> str:
    if compacted_at:
        return f"[Tool '{name}' output compacted at {compacted_at}]"
    body = f"Error: {text}" if is_error else f"Output: {text}"
    return f"[Tool: {name}]\n{body}\n[/Tool]" if text else f"[Tool: {name}]\n[/Tool]"


def estimate_message(message: Message, tokenizer: Tokenizer) -> int:
    """estimate_message: 4 for the role, plus each part's estimate (other parts by their repr)."""
    total = 4
    for part in message.parts:
        if isinstance(part, (TextPart, ToolCallPart, ToolResultPart, FileRefPart)):
            total += tokenizer.count(render_part(part, message.name, for_estimate=True) or "")
        else:
            total += max(1, len(repr(part)) // 4)
    return total


def render_message(message: Message) -> dict[str, Any]:
    rendered = [text for p in message.parts if (text := render_part(p, message.name)) is not None]
    role = "user" if message.role == "user" else "assistant"  # mnesis stores tool parts in assistant messages
    return {"role": role, "content": "\n".join(rendered)}


def plan(session: Session, budget: MnesisBudget, counts: TokenCounts) -> Plan:
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

    def decide(m: Message, decision: Decision, zone: str, reason: str) -> None:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason, t if decision is Decision.KEPT else 0)

    for m in system_messages:
        decide(m, Decision.KEPT, "system", "kept: part of the system prompt, which mnesis counts against the budget")

    # Summaries replace the messages they cover and are charged unconditionally (no fit check).
    heuristic = HEURISTICS["mnesis"]
    summary_plans: list[SummaryPlan] = []
    summary_tokens = 0
    covered: set[str] = set()
    for i, s in enumerate(session.summaries):
        t = heuristic.count(s.text)  # stored token_count: the heuristic, not the model's encoding
        summary_tokens += t
        covered.update(s.covers)
        summary_plans.append(SummaryPlan(i, t, Decision.KEPT, f"kept: summaries are always sent first and charged without a fit check ({t:,} tokens)", s.text))
    available -= summary_tokens
    raw_candidates = [m for m in raw if m.id not in covered]
    for m in raw:
        if m.id in covered:
            decide(m, Decision.SUMMARIZED, "summarized", "summarized: replaced in context by the summary that covers it")

    included: list[Message] = []
    used = 0
    cut: Message | None = None
    for position in range(len(raw_candidates) - 1, -1, -1):
        m = raw_candidates[position]
        t = tokens[m.index]
        if used + t <= available:
            used += t
            included.append(m)
            decide(m, Decision.KEPT, "raw", f"kept: {t:,} tokens fit in the {available - used + t:,} left of the {usable:,} usable (newest first)")
            continue
        if budget.always_include_latest and not included:
            used += t
            included.append(m)
            decide(m, Decision.KEPT, "raw", f"kept: the most recent message is always included (option), even though its {t:,} tokens exceed the {max(available, 0):,} left")
            continue
        cut = m
        decide(m, Decision.DROPPED, "raw", f"dropped: {t:,} tokens did not fit in the {max(available - used, 0):,} left of the {usable:,} usable")
        for older in raw_candidates[:position]:
            decide(older, Decision.DROPPED, "raw", f"dropped: mnesis stops at the first message that does not fit (#{m.index})")
        break
    if raw_candidates and not included:
        notes.append("no raw message is included: the newest alone does not fit (mnesis does not enforce its 'most recent always included' invariant)")
    included.reverse()

    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    context += [{"role": "assistant", "content": s.text} for s in session.summaries]
    context += [render_message(m) for m in included]
    context_index = [None] * (1 + len(session.summaries)) + [m.index for m in included]
    token_estimate = system_tokens + summary_tokens + used
    messages = tuple(decisions)  # type: ignore[arg-type]
    sent = [m for m in messages if m.sent]
    allocation = {"reserved_output": reserved, "compaction_buffer": budget.compaction_buffer, "system": system_tokens,
                  "summaries": summary_tokens, "messages": usable - system_tokens - summary_tokens}
    usage = {"reserved_output": 0, "compaction_buffer": 0, "system": system_tokens, "summaries": summary_tokens, "messages": used}
    tool_tokens = tool_output_tokens(included, counts)
    totals = Totals(budget=limit, used=token_estimate, kept=sum(m.tokens for m in sent), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=token_estimate <= usable, kept_messages=len(sent), dropped_messages=len(messages) - len(sent),
                    fits_test="parts")
    return Plan(
        policy="mnesis", params={**params_dict(budget), "context_limit": limit, "reserved_output_tokens": reserved},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=system_prompt, messages=messages,
        context=tuple(context), context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"usable": usable, "has_summary": bool(session.summaries), "token_estimate": token_estimate,
               "summary_token_count": summary_tokens, "raw_message_tokens": used, "tool_output_tokens": tool_tokens,
               "oldest_included_message_id": included[0].id if included else None, "cut_index": cut.index if cut else None},
    )


def tool_output_tokens(included: list[Message], counts: TokenCounts) -> int:
    return sum(counts.text(render_part(p, m.name) or "") for m in included for p in m.parts if isinstance(p, (ToolCallPart, ToolResultPart)))


def refresh(plan: Plan, session: Session, counts: TokenCounts | None) -> Plan:
    """After ctxviz dropped messages from the plan (pair safety): the BuiltContext figures in `extra`."""
    included = [session.messages[i] for i in plan.context_index if i is not None]
    extra = {**plan.extra, "token_estimate": plan.totals.used, "raw_message_tokens": plan.usage["messages"],
             "oldest_included_message_id": included[0].id if included else None}
    if counts is not None:
        extra["tool_output_tokens"] = tool_output_tokens(included, counts)
    return replace(plan, extra=extra)


POLICY = Policy(
    name="mnesis",
    title="mnesis ContextBuilder",
    params_type=MnesisBudget,
    measure_name="mnesis-message",
    measure=estimate_message,
    default_tokenizer="mnesis",
    tokenizer_for_model=tokenizer_for_model,
    plan=plan,
    zone_parts={"raw": "messages"},
    refresh=refresh,
    description="Summaries first, charged without a fit check; raw messages newest first, stopping at the first misfit.",
    framework='mnesis',
    framework_version='677d1898',
    source='src/mnesis/context/builder.py ContextBuilder.build',
    counter="mnesis' estimator: the model's tiktoken encoding, or characters / 4",
    trigger=('context_limit', 'compaction_buffer'),
    keep=(),
    stand_in="Level 3 deterministic summary (mnesis' own fallback)",
)
