"""Gemini CLI's chat compression (google-gemini/gemini-cli at 5411f11,
packages/core/src/context/chatCompressionService.ts `ChatCompressionService.compress`).

Gemini CLI sends the whole history until the last reported prompt size (`promptTokenCount` of the
latest response, `getLastPromptTokenCount`) reaches `compressionThreshold` (0.5) of the model's
`tokenLimit` (core/tokenLimits.ts). Then, before the next request:

1. `truncateHistoryToBudget`: newest first, function responses share a 50,000-token budget
   (COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET, counted with estimateTokenCountSync); each one past
   it becomes `{output: formatTruncatedToolOutput(...)}` (the first 20 % and last 80 % of
   `truncateToolOutputThreshold` characters, the whole output saved to a file);
2. `findCompressSplitPoint(history, 1 - 0.3)`: the oldest ~70 % of the history by
   `JSON.stringify(content).length`, cut only before a user Content that is not function responses;
3. the part before the split is replaced by the summary the model writes, sent as a user turn,
   followed by the model turn "Got it. Thanks for the additional context!"; the rest is kept (with
   its truncated outputs). If the new history's estimate exceeds the original count, the
   compression is abandoned (COMPRESSION_FAILED_INFLATED_TOKEN_COUNT).

The summary is written by an LLM; ctxviz writes an offline extractive snapshot in its place,
wrapped in `<state_snapshot>` as Gemini CLI's prompt asks the model to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session, Summary
from ...tokenizers import GeminiCliEstimator, Tokenizer
from ...wording import noun
from ..base import Policy, params_dict
from ..common import base_system_prompt
from .compression_columns import KEPT_OVER, KEPT_SINCE, KEPT_UNDER, compressed_reason, plan_columns
from .history import (
    Content,
    build_contents,
    estimate_part,
    own_parts,
    text_content,
)
from .service import (  # noqa: F401 (the steps lived here before service.py; tests and the replayer read them here)
    ACK_TEXT,
    COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET,
    COMPRESSION_PRESERVE_THRESHOLD,
    DEFAULT_COMPRESSION_TOKEN_THRESHOLD,
    DEFAULT_TOKEN_LIMIT,
    DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD,
    GEMMA_4_TOKEN_LIMIT,
    TOKEN_LIMITS,
    TOOL_OUTPUT_DIR,
    ZONES,
    Truncation,
    _content_length,
    _max_chars,
    _part_after,
    _part_owner,
    _summarized_before,
    _unchanged,
    find_compress_split_point,
    format_truncated_tool_output,
    reported_prompt_tokens,
    stand_in_summary,
    token_limit,
    truncate_history_to_budget,
    truncate_parts,
    truncated_part,
)


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class GeminiCompression:
    """Gemini CLI's settings (`model.compressionThreshold`, `tools.truncateToolOutputThreshold`), spelled as it spells them."""

    compressionThreshold: float = field(default=DEFAULT_COMPRESSION_TOKEN_THRESHOLD,  # noqa: N815 (Gemini CLI's spelling)
                                        metadata=_help("Compress when the prompt reaches this fraction of the token limit", unit="fraction", min=0.01, max=1.0, step=0.05))
    tokenLimit: int | None = field(default=None,  # noqa: N815
                                   metadata=_help("The model's token limit (default: Gemini CLI's tokenLimit table for the model)", unit="tokens", min=1, step=1000))
    truncateToolOutputThreshold: int = field(default=DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD,  # noqa: N815
                                             metadata=_help("Characters a truncated tool output keeps (20 % head, 80 % tail)", min=0, step=1000))

    def __post_init__(self) -> None:
        if not 0 < self.compressionThreshold <= 1:
            raise ValueError(f"compressionThreshold must be in (0, 1], got {self.compressionThreshold}")
        if self.tokenLimit is not None and self.tokenLimit < 1:
            raise ValueError(f"tokenLimit must be >= 1, got {self.tokenLimit}")
        if self.truncateToolOutputThreshold < 0:
            raise ValueError(f"truncateToolOutputThreshold must be >= 0, got {self.truncateToolOutputThreshold}")


# -- counting -----------------------------------------------------------------------------------

def measure_message(message: Message, tokenizer: Tokenizer) -> int:
    """estimateTokenCountSync over the message's Gemini parts; another tokenizer counts the text parts."""
    text_counter = None if isinstance(tokenizer, GeminiCliEstimator) else tokenizer
    return math.floor(sum(estimate_part(p, text_counter) for p in own_parts(message, message.name)))


# -- the plan -----------------------------------------------------------------------------------

def plan(session: Session, params: GeminiCompression, counts: TokenCounts) -> Plan:
    """The plan in columns (compression_columns.py): what depends on the session alone is derived once."""
    return plan_columns(session, params, counts)


def plan_records(session: Session, params: GeminiCompression, counts: TokenCounts) -> Plan:
    """ChatCompressionService.compress step by step, a record per message: the reference the column
    plan is checked against (tests/test_gemini_columns.py)."""
    tokens = counts.message_tokens
    limit = params.tokenLimit if params.tokenLimit is not None else token_limit(session.model)
    system_messages = [m for m in session.messages if m.role == "system"]
    history = [m for m in session.messages if m.role != "system"]
    system_prompt = base_system_prompt(session, system_messages)
    system_tokens = counts.text(system_prompt) if system_prompt else 0
    notes: list[str] = []
    call_names = {c.id: c.name for m in history for c in m.tool_calls if c.id}

    summary = session.summaries[-1] if session.summaries else None
    covered = set(summary.covers) if summary is not None else set()
    rest = [m for m in history if m.id not in covered]
    contents = build_contents(rest, call_names)
    prefix: list[Content] = []
    if summary is not None:
        prefix = [text_content("user", summary.text), text_content("model", ACK_TEXT)]
    # The request being sent (a user message or function responses) joins the history after compression.
    pending = contents.pop() if contents and contents[-1].role == "user" else None
    held: list[Content] = prefix + contents

    truncations: dict[tuple[int, int], Truncation] = {}
    if summary is not None and summary.held_until:
        # The outputs Gemini CLI truncated when it wrote the summary stay truncated.
        ids = [m.id for c in held for m in c.messages]
        if summary.held_until in ids:
            upto = next(i for i, c in enumerate(held) if any(m.id == summary.held_until for m in c.messages))
            for t in truncate_history_to_budget(held[: upto + 1], _max_chars(params, limit, None)):
                truncations[(t.content, t.part)] = t

    reported = None
    last_with_usage = next((m for m in reversed(history) if m.role == "assistant" and reported_prompt_tokens(m) is not None), None)
    if summary is None and last_with_usage is not None:
        reported = reported_prompt_tokens(last_with_usage)
    # The outputs truncated at the last compression count as truncated.
    estimate = math.floor(sum(c.estimate for c in held) + sum(
        estimate_part(truncated_part(held[t.content].parts[t.part], t.output)) - estimate_part(held[t.content].parts[t.part])
        for t in truncations.values()))
    prompt_tokens = reported if reported is not None else estimate
    source = (f"the promptTokenCount reported for message #{last_with_usage.index}" if reported is not None and last_with_usage is not None
              else "Gemini CLI's estimate of the history (no usage reported" + (" since the summary)" if summary is not None else ")"))
    threshold = params.compressionThreshold * limit

    status = "NOOP"
    split: int | None = None
    new_summary_text = ""
    compressed_truncations: dict[tuple[int, int], Truncation] = {}
    if held and prompt_tokens >= threshold:
        max_chars = _max_chars(params, limit, prompt_tokens)
        compressed_truncations = {(t.content, t.part): t for t in truncate_history_to_budget(held, max_chars)}
        lengths = [_content_length(c, ci, compressed_truncations) for ci, c in enumerate(held)]
        splittable = [c.role == "user" and not c.has_function_response for c in held]
        last = held[-1]
        split = find_compress_split_point(lengths, splittable, last.role == "model" and not last.has_function_call, 1 - COMPRESSION_PRESERVE_THRESHOLD)
        if split == 0:
            notes.append(f"the prompt ({prompt_tokens:,} tokens) reached {params.compressionThreshold:g} x {limit:,} = {threshold:,.0f}, "
                         "but findCompressSplitPoint found nothing to compress (no user message to split before): nothing changes")
        else:
            compress_messages = [m for c in held[:split] for m in c.messages]
            new_summary_text = stand_in_summary([*_summarized_before(session, summary), *compress_messages])
            kept = held[split:]
            new_parts = [{"text": new_summary_text}, {"text": ACK_TEXT}]
            for ci, c in enumerate(kept, start=split):
                new_parts += [_part_after(c, ci, pi, compressed_truncations) for pi in range(len(c.parts))]
            new_count = math.floor(sum(estimate_part(p) for p in new_parts))
            if new_count > prompt_tokens:
                status = "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT"
                notes.append(f"compression would fail: the compressed history's estimate ({new_count:,}) exceeds the original count "
                             f"({prompt_tokens:,}), so Gemini CLI keeps the history as it is (and then only truncates)")
                split = None
            else:
                status = "COMPRESSED"
                truncations = compressed_truncations
    elif held:
        notes.append(f"no compression: the prompt ({prompt_tokens:,} tokens, {source}) is under compressionThreshold "
                     f"{params.compressionThreshold:g} x tokenLimit {limit:,} = {threshold:,.0f}")

    # -- decisions ------------------------------------------------------------------------------
    decisions: list[MessagePlan | None] = [None] * len(session.messages)

    def decide(m: Message, decision: Decision, zone: str, reason: str, code: str, sent: int | None = None) -> None:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason,
                                         0 if decision in (Decision.DROPPED, Decision.SUMMARIZED) else (t if sent is None else sent), code)

    for m in system_messages:
        decide(m, Decision.KEPT, "system", "kept: part of the system instruction, which Gemini CLI sends with every request", "system_prompt")
    for m in history:
        if m.id in covered:
            decide(m, Decision.SUMMARIZED, "summarized", "summarized: replaced by the summary turn (an earlier compression, or the summary the session records)",
                   "before_compaction")

    compressed_ids: list[str] = []
    summary_plans: list[SummaryPlan] = []
    if status == "COMPRESSED" and split is not None:
        for c in held[:split]:
            for m in c.messages:
                compressed_ids.append(m.id)
                decide(m, Decision.SUMMARIZED, "summarized", compressed_reason(split == len(held), prompt_tokens, params.compressionThreshold, limit),
                       "summarised")
        if summary is not None:
            summary_plans.append(SummaryPlan(0, 0, Decision.SUMMARIZED, "summarized: the earlier summary turn is inside the part compressed again", summary.text))
        kept_contents = held[split:]
        sent_summary = new_summary_text
    else:
        kept_contents = held
        sent_summary = summary.text if summary is not None else ""
        if summary is not None:
            summary_plans.append(SummaryPlan(0, counts.text(summary.text), Decision.KEPT,
                                             "kept: sent as a user turn, followed by the model's acknowledgement", summary.text))
    kept_contents = [c for c in kept_contents if c.messages]  # the summary turn and its acknowledgement are sent above
    if pending is not None:
        kept_contents = [*kept_contents, pending]
    pending_index = len(held)
    all_contents = held + ([pending] if pending is not None else [])

    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}]
    context_index: list[int | None] = [None]
    summary_tokens = 0
    if sent_summary:
        summary_tokens = counts.text(sent_summary) + counts.text(ACK_TEXT)
        context += [{"role": "user", "content": sent_summary}, {"role": "assistant", "content": ACK_TEXT}]
        context_index += [None, None]
    if status == "COMPRESSED":
        summary_plans.append(SummaryPlan(len(session.summaries), counts.text(new_summary_text), Decision.KEPT,
                                         "kept: the new summary (ctxviz's offline stand-in for the model's <state_snapshot>), "
                                         "sent as a user turn with the model's acknowledgement", new_summary_text))

    history_tokens = 0
    truncated_ids: list[str] = []
    position = {id(c): k for k, c in enumerate(all_contents)}  # `list.index` compared contents field by field: quadratic
    by_content: dict[int, list[Truncation]] = {}
    for (tc, _), t in truncations.items():
        by_content.setdefault(tc, []).append(t)
    for c in kept_contents:
        ci = pending_index if c is pending else position[id(c)]
        for m in c.messages:
            hits = [t for t in by_content.get(ci, ()) if _part_owner(c, t.part, m)]
            if hits:
                sent = math.floor(sum(estimate_part(truncated_part(c.parts[t.part], t.output)) for t in hits)
                                  + sum(estimate_part(p) for p in own_parts(m, m.name) if "functionResponse" not in p))
                truncated_ids.append(m.id)
                decide(m, Decision.TRUNCATED, "history",
                       f"truncated: past the {COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET:,}-token budget for function responses (counted newest "
                       f"first), so Gemini CLI keeps the first and last of its characters ({params.truncateToolOutputThreshold:,} at most) "
                       "and saves the whole output to a file", "truncated", sent)
                text = hits[0].output
                history_tokens += sent
            else:
                if c is pending:
                    reason, code = "kept: the request being sent, added to the history after any compression", "new_message"
                elif status == "COMPRESSED":
                    reason = f"kept: after the split point, in the newest ~{COMPRESSION_PRESERVE_THRESHOLD:.0%} of the history by JSON characters"
                    code = "fresh_tail"  # the part compression preserves
                elif summary is not None:
                    reason, code = KEPT_SINCE, "since_compaction"
                elif held and prompt_tokens >= threshold:  # reached the threshold, compressed nothing
                    reason, code = KEPT_OVER, "kept"
                else:
                    reason, code = KEPT_UNDER, "under_trigger"
                decide(m, Decision.KEPT, "history", reason, code)
                text = None
                history_tokens += tokens[m.index]
            msg = m.to_openai()
            if text is not None:
                msg["content"] = text
            context.append(msg)
            context_index.append(m.index)

    if status == "COMPRESSED":
        notes.append(f"compression fires: the prompt ({prompt_tokens:,} tokens, {source}) reached compressionThreshold "
                     f"{params.compressionThreshold:g} x tokenLimit {limit:,} = {threshold:,.0f}; {len(compressed_ids):,} {noun(len(compressed_ids), 'message')} {'is' if len(compressed_ids) == 1 else 'are'} "
                     "replaced by a summary turn")
        notes.append("the summary text is ctxviz's offline stand-in (an extractive snapshot); Gemini CLI asks the model for a <state_snapshot> "
                     "and has it verified in a second call")
    if truncations:
        notes.append(f"{len(truncated_ids):,} tool {noun(len(truncated_ids), 'output')} truncated past the {COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET:,}-token function-response "
                     f"budget; the file path is a stand-in ({TOOL_OUTPUT_DIR}/...)")

    messages = tuple(decisions)  # type: ignore[arg-type]
    used = system_tokens + summary_tokens + history_tokens
    # The next request as the provider counts it, for the cache's price: the last reported prompt
    # and what was added since, as sent (the answer itself included), where nothing was compressed.
    request_tokens = None
    if reported is not None and last_with_usage is not None and status != "COMPRESSED":
        request_tokens = reported + sum(m.sent_tokens for m in messages if m.index >= last_with_usage.index)
    sent_plans = [m for m in messages if m.sent]
    allocation = {"system": system_tokens, "summary": summary_tokens, "history": limit - system_tokens - summary_tokens}
    usage = {"system": system_tokens, "summary": summary_tokens, "history": history_tokens}
    totals = Totals(budget=limit, used=used, kept=sum(m.tokens for m in sent_plans), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=used <= limit, kept_messages=len(sent_plans), dropped_messages=len(messages) - len(sent_plans))
    held_until = held[-1].messages[-1].id if held and held[-1].messages else (summary.held_until if summary else "")
    return Plan(
        policy=POLICY_NAME, params={**params_dict(params), "tokenLimit": limit}, tokenizer=counts.scheme.label,
        allocation=allocation, usage=usage, system_prompt=system_prompt, messages=messages, context=tuple(context),
        context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"prompt_token_count": prompt_tokens, "prompt_token_source": "reported" if reported is not None else "estimate",
               "history_estimate": estimate, "threshold_tokens": threshold, "compression_status": status,
               "split_point": split, "compressed_ids": compressed_ids, "summary_text": new_summary_text,
               "held_until": held_until, "truncated_ids": truncated_ids,
               **({"request_tokens": request_tokens} if request_tokens else {})},
    )


def compact(prefix: Session, plan_: Plan, params: GeminiCompression, counts: TokenCounts, summarizer: Any, turn: int, events: list[Any]) -> Summary | None:
    """The compression the plan shows, put in force for the next turns (the new summary absorbs the old)."""
    from ...replay_contract import Event

    extra = plan_.extra
    if extra.get("compression_status") != "COMPRESSED":
        if extra.get("split_point") == 0:  # tried, and nothing could be compressed: said, not silent
            events.append(Event(turn, "compression_noop",
                                f"Gemini CLI tries to compress (prompt {extra['prompt_token_count']:,} tokens >= {extra['threshold_tokens']:,.0f}) "
                                "but frees nothing: findCompressSplitPoint splits only before a user message, and there is none "
                                "in the older 70 % of the history (a long tool loop); the history stays whole until one is"))
        return None
    previous = prefix.summaries[-1] if prefix.summaries else None
    covered = [*(previous.covers if previous is not None else ()), *extra["compressed_ids"]]
    position = {m.id: m for m in prefix.messages}
    covered_messages = [position[i] for i in covered if i in position]
    text = stand_in_summary(covered_messages, summarizer.supyagent_snapshot(covered_messages))
    events.append(Event(turn, "compaction",
                        f"Gemini CLI compresses the chat: prompt {extra['prompt_token_count']:,} tokens ({extra['prompt_token_source']}) >= "
                        f"{extra['threshold_tokens']:,.0f}; {len(extra['compressed_ids']):,} {noun(len(extra['compressed_ids']), 'message')} replaced by a summary turn"))
    return Summary(text=text, messages_covered=len(covered), covers=tuple(covered),
                   created_at=prefix.messages[-1].timestamp if prefix.messages else "", held_until=extra["held_until"])


POLICY_NAME = "gemini-cli-compression"

def trigger_level(params: GeminiCompression, session: Session) -> int:
    limit = params.tokenLimit if params.tokenLimit is not None else token_limit(session.model)
    return int(params.compressionThreshold * limit)


def trigger_count(plan: Plan) -> int:
    """What Gemini CLI compares with its threshold: the prompt it last reported (or its estimate), not
    the estimate of what the plan sends; once the plan compressed, the compressed history."""
    if plan.extra.get("compression_status") == "COMPRESSED":
        return plan.totals.used
    return int(plan.extra.get("prompt_token_count", plan.totals.used))


POLICY = Policy(
    reason_codes=("system_prompt", "since_compaction", "under_trigger", "kept", "fresh_tail", "new_message", "truncated", "summarised",
                  "before_compaction"),
    name=POLICY_NAME,
    schedule='chat compression is tried before each request (sendMessageStream)',
    title="Gemini CLI chat compression",
    params_type=GeminiCompression,
    measure_name="gemini-cli-content",
    measure=measure_message,
    default_tokenizer="gemini-cli",
    plan=plan,
    zone_parts={"history": "history", "system": "system"},
    description="The whole history until the prompt reaches half the token limit; then the oldest ~70 % (by JSON characters) becomes a summary turn.",
    framework="Gemini CLI",
    framework_version="5411f11",
    source="packages/core/src/context/chatCompressionService.ts ChatCompressionService.compress",
    counter="the promptTokenCount Gemini reported for the last response; without one, Gemini CLI's estimate (1/4 token per ASCII character, "
            "1.5 per other character, JSON length / 4 for tool calls and responses)",
    trigger=("compressionThreshold", "tokenLimit"),
    trigger_level=trigger_level,
    trigger_count=trigger_count,
    keep=(),
    stand_in="offline extractive snapshot in place of the model's <state_snapshot>",
    compact=compact,
)
