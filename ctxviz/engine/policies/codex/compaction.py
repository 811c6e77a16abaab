"""Codex CLI's local auto-compaction (openai/codex, codex-rs/core/src/compact.rs at 0100b103,
`run_compact_task_inner` and `build_compacted_history`).

Codex sends the whole history until the last call's reported usage (`last_token_usage.total_tokens`,
input with its cached part plus output) reaches the model's auto-compact limit: the config's
`model_auto_compact_token_limit`, else the model family's, else 90 % of its context window
(models_manager/model_family.rs `auto_compact_token_limit`; a model it does not know has no window
and never compacts). It then asks the model for a summary and replaces the history by:

1. the initial context (developer instructions, AGENTS.md, the environment), rebuilt;
2. the newest real user messages, newest first until `COMPACT_USER_MESSAGE_MAX_TOKENS` (20,000)
   approximate tokens (bytes / 4, rounded up); the first that does not fit is cut to what is left
   (truncate.rs `truncate_text` with `TruncationPolicy::Tokens`: its middle replaced by
   `[…N tokens truncated…]`) and the older ones are dropped;
3. one user message: SUMMARY_PREFIX, a newline, and the summary.

If the compaction request itself overflows the window, Codex removes the oldest history item from
that request and retries (the summary then covers less; the rebuilt history is unchanged).

Developer messages before the conversation go with the instructions; one written later (a changed
sandbox or approval policy, a model switch) is a history item, sent where Codex sent it: moving it
to the front would change every later request's prefix (the replayed cache broke at 41 calls where
the real one held) and the exported context would differ from what Codex sent. A compaction covers
it like any other history item.

The summary is written by the model; ctxviz writes an offline extractive snapshot in its place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session, Summary
from ...tokenizers import CodexApproxTokenizer, Tokenizer
from ...wording import noun
from ..base import Policy, params_dict
from .compaction_columns import KEPT_NO_LIMIT, KEPT_SINCE, KEPT_UNDER, plan_columns, rollout_parts
from .history import (  # noqa: F401 (they lived here before history.py; tests and the replayer read them here)
    APPROX_BYTES_PER_TOKEN,
    COMPACT_USER_MESSAGE_MAX_TOKENS,
    CONTEXT_WINDOW_272K,
    EFFECTIVE_CONTEXT_WINDOW_PERCENT,
    NO_SUMMARY,
    SUMMARY_PREFIX,
    ZONES,
    _covered_messages,
    approx_token_count,
    default_auto_compact_limit,
    family_context_window,
    generated_form,
    initial_context,
    instruction_shares,
    is_initial_context,
    item_tokens,
    leading_system_messages,
    reported_total,
    select_user_messages,
    stand_in_summary,
    truncate_tokens,
    user_item,
    user_message_text,
)

# -- counting -----------------------------------------------------------------------------------

def measure_message(message: Message, tokenizer: Tokenizer) -> int:
    """Codex's estimate of a history item: its JSON bytes / 4 (the rollout's item where the log has
    it); another tokenizer counts the message's text instead."""
    if not isinstance(tokenizer, CodexApproxTokenizer):
        return tokenizer.count(message.text)
    raw = message.raw
    items = raw if isinstance(raw, list) else [raw] if isinstance(raw, dict) else None
    if items:
        return sum(item_tokens(i) for i in items if isinstance(i, dict) and i.get("type") != "ghost_snapshot")
    return item_tokens(message.to_openai())


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class CodexCompaction:
    """Codex's config.toml keys (and the compaction constant), spelled as Codex spells them."""

    model_context_window: int | None = field(default=None, metadata=_help("Context window (default: the model family's; unknown model: none)", unit="tokens", min=1, step=1000))
    model_auto_compact_token_limit: int | None = field(default=None, metadata=_help("Compact at this many tokens (default: 90 % of the window)", unit="tokens", min=1, step=1000))
    compact_user_message_max_tokens: int = field(default=COMPACT_USER_MESSAGE_MAX_TOKENS, metadata=_help(unit="tokens", text=
        "COMPACT_USER_MESSAGE_MAX_TOKENS (a constant in Codex): user messages kept after compaction", min=0, step=1000))

    def __post_init__(self) -> None:
        for name in ("model_context_window", "model_auto_compact_token_limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.compact_user_message_max_tokens < 0:
            raise ValueError(f"compact_user_message_max_tokens must be >= 0, got {self.compact_user_message_max_tokens}")


def _limits(session: Session, params: CodexCompaction) -> tuple[int | None, int | None]:
    window = params.model_context_window if params.model_context_window is not None else family_context_window(session.model)
    limit = params.model_auto_compact_token_limit
    if limit is None and window is not None:
        limit = default_auto_compact_limit(window)
    return window, limit


def plan(session: Session, params: CodexCompaction, counts: TokenCounts) -> Plan:
    """The plan in columns (compaction_columns.py): what depends on the session alone is derived once."""
    window, limit = _limits(session, params)
    return plan_columns(session, params, counts, window, limit, params_dict(params))


def plan_records(session: Session, params: CodexCompaction, counts: TokenCounts) -> Plan:
    """run_compact_task_inner and build_compacted_history step by step, a record per message: the
    reference the column plan is checked against (tests/test_codex_columns.py)."""
    tokens = counts.message_tokens
    window, limit = _limits(session, params)
    budget = window if window is not None else (session.context_window or CONTEXT_WINDOW_272K)
    notes: list[str] = []
    if window is None:
        notes.append(f"Codex does not know the model {session.model or '(none)'!r}: it has no context window, so it never auto-compacts "
                     f"(ctxviz draws a {budget:,}-token window; set model_context_window to compare)")
    # Developer messages before the conversation join the instructions; later ones stay where Codex
    # sent them, in the history (moving them to the front would change the request's prefix).
    system_messages, system_prompt, initial, summary, covered, generated, history = rollout_parts(session)

    decisions: list[MessagePlan | None] = [None] * len(session.messages)

    def decide(m: Message, decision: Decision, zone: str, reason: str, code: str, sent: int | None = None) -> None:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason,
                                         0 if decision in (Decision.DROPPED, Decision.SUMMARIZED) else (t if sent is None else sent), code)

    def retained_for(compacted: list[Message]) -> list[tuple[Message, str]]:
        users = [(m, text) for m in compacted if (text := user_message_text(m)) is not None]
        chosen = select_user_messages([t for _, t in users], params.compact_user_message_max_tokens)
        return [(users[i][0], text) for i, text in chosen]

    # The history as Codex holds it now: after the summary in force, if any.
    retained: list[tuple[Message, str]] = []
    summary_text = ""
    if summary is not None:
        compacted = [m for m in history if m.id in covered]
        if generated:
            retained = retained_for(compacted)
        summary_text = summary.text
    live = [m for m in history if m.id not in covered]

    last_usage = next((m for m in reversed(session.messages) if m.role == "assistant" and reported_total(m) is not None), None)
    retained_tokens = sum(item_tokens(user_item(t)) for _, t in retained)
    summary_tokens = item_tokens(user_item(summary_text)) if summary is not None else 0
    initial_tokens = sum(tokens[m.index] for m in initial)
    instructions_tokens = approx_token_count(system_prompt) if system_prompt else 0
    request_tokens: int | None = None
    if last_usage is not None and not generated and (summary is None or last_usage.id not in covered):
        total = reported_total(last_usage) or 0
        source = f"the usage reported for message #{last_usage.index} (input with cached tokens, plus output)"
        # The next request as the provider counts it: that call's tokens and the items since (their
        # estimate): what the cache prices, where the estimate of the whole history runs 13-93 % low.
        request_tokens = total + sum(tokens[m.index] for m in history if m.id not in covered and m.index > last_usage.index)
    else:
        total = instructions_tokens + initial_tokens + retained_tokens + summary_tokens + sum(tokens[m.index] for m in live)
        source = "Codex's estimate of the history (JSON bytes / 4" + (", as after a compaction)" if generated else "; no usage reported)")

    fires = limit is not None and total >= limit and bool(live)
    new_summary = ""
    trimmed = 0
    if fires:
        new_retained = retained_for(history)
        # The compaction request is the history as held (initial context, the earlier summary and
        # its user messages, the live items); past the window Codex drops the oldest item and retries.
        request: list[tuple[Message | None, int]] = [(None, instructions_tokens)] if instructions_tokens else []
        request += [(m, tokens[m.index]) for m in initial]
        request += [(m, item_tokens(user_item(t))) for m, t in retained]
        request += [(None, summary_tokens)] if summary is not None else []
        request += [(m, tokens[m.index]) for m in live]
        size = sum(t for _, t in request)
        if window is not None:
            while size > window and len(request) > 1:
                size -= request.pop(0)[1]
                trimmed += 1
        kept_ids = {m.id for m, _ in request if m is not None}
        seen = _covered_messages(session, summary) if trimmed == 0 else []
        seen += [m for m in live if m.id in kept_ids]
        new_summary = stand_in_summary(seen)
        for m in history:
            decide(m, Decision.SUMMARIZED, "summarized",
                   f"summarized: Codex compacts when the last call's {total:,} tokens reach model_auto_compact_token_limit {limit:,}", "summarised")
        retained, summary_text = new_retained, new_summary
        live = []
        notes.append(f"auto-compaction fires: {total:,} tokens ({source}) >= model_auto_compact_token_limit {limit:,}; the history becomes "
                     f"the initial context, {len(retained):,} recent user {noun(len(retained), 'message')} and the summary")
        notes.append("the summary text is ctxviz's offline stand-in (an extractive snapshot) after Codex's SUMMARY_PREFIX")
        if trimmed:
            notes.append(f"the compaction request overflows the {window:,}-token window: Codex trims the {trimmed:,} oldest {noun(trimmed, 'item')} from it "
                         "(\"Trimmed N older conversation item(s) before compacting\"), so the summary covers less")
    elif limit is not None:
        notes.append(f"no compaction: {total:,} tokens ({source}) are under model_auto_compact_token_limit {limit:,}")

    shares = instruction_shares(session, system_messages, instructions_tokens)
    for m in system_messages:
        decide(m, Decision.KEPT, "system", "kept: a developer message, sent with the instructions (its tokens sent are its share of the instructions' count)", "system_prompt", sent=shares[m.index])
    for m in initial:
        decide(m, Decision.KEPT, "initial_context", "kept: initial context (instructions, AGENTS.md, environment), which Codex rebuilds after a compaction",
               "initial_context")
    if not fires:
        for m in history:
            if m.id in covered:
                decide(m, Decision.SUMMARIZED, "summarized",
                       "summarized: replaced by the compaction summary" + (" (the compaction recorded in the rollout)" if not generated else ""),
                       "before_compaction")
    for m, text in retained:
        sent = item_tokens(user_item(text))
        if text == user_message_text(m):
            decide(m, Decision.KEPT, "retained_user",
                   f"kept: one of the newest user messages Codex keeps after compacting (within {params.compact_user_message_max_tokens:,} tokens)", "retained", sent)
        else:
            decide(m, Decision.TRUNCATED, "retained_user",
                   f"truncated: the oldest user message Codex keeps, cut to the tokens left of {params.compact_user_message_max_tokens:,}", "truncated", sent)
    for m in live:
        decide(m, Decision.KEPT, "history", "kept: a developer message written during the conversation, sent where Codex sent it"
               if m.role == "system" else KEPT_SINCE if summary is not None else KEPT_UNDER if limit is not None else KEPT_NO_LIMIT,
               "since_compaction" if summary is not None else "under_trigger" if limit is not None else "kept")

    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    context_index: list[int | None] = [None] * len(context)
    for m in initial:
        context.append(m.to_openai())
        context_index.append(m.index)
    for m, text in retained:
        context.append({"role": "user", "content": text})
        context_index.append(m.index)
    summary_plans: list[SummaryPlan] = []
    sent_summary_tokens = 0
    if summary_text:
        sent_summary_tokens = item_tokens(user_item(summary_text))
        context.append({"role": "user", "content": summary_text})
        context_index.append(None)
        reason = ("kept: the new compaction summary, a user message after the kept user messages" if fires
                  else "kept: the compaction summary, sent as a user message after the kept user messages")
        if fires and summary is not None:
            summary_plans.append(SummaryPlan(0, 0, Decision.SUMMARIZED, "summarized: absorbed by the new compaction", summary.text))
        summary_plans.append(SummaryPlan(len(session.summaries) - (0 if fires else 1), sent_summary_tokens, Decision.KEPT, reason, summary_text))
    for m in live:
        context.append(m.to_openai())
        context_index.append(m.index)

    messages = tuple(decisions)  # type: ignore[arg-type]
    retained_sent = sum(m.sent_tokens for m in messages if m.zone == "retained_user")
    history_sent = sum(m.sent_tokens for m in messages if m.zone == "history")
    used = instructions_tokens + initial_tokens + retained_sent + sent_summary_tokens + history_sent
    allocation = {"instructions": instructions_tokens, "initial_context": initial_tokens, "retained_user": retained_sent, "summary": sent_summary_tokens,
                  "history": budget - instructions_tokens - initial_tokens - retained_sent - sent_summary_tokens}
    usage = {"instructions": instructions_tokens, "initial_context": initial_tokens, "retained_user": retained_sent, "summary": sent_summary_tokens, "history": history_sent}
    sent_plans = [m for m in messages if m.sent]
    totals = Totals(budget=budget, used=used, kept=sum(m.tokens for m in sent_plans), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=used <= budget, kept_messages=len(sent_plans), dropped_messages=len(messages) - len(sent_plans))
    return Plan(
        policy=POLICY_NAME, params={**params_dict(params), "model_context_window": window, "model_auto_compact_token_limit": limit},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=system_prompt, messages=messages,
        context=tuple(context), context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans), zones=ZONES,
        notes=tuple(notes),
        extra={"total_usage_tokens": total, "token_source": "reported" if "reported" in source else "estimate",
               "auto_compact_token_limit": limit, "compacts": fires, "summary_text": new_summary, "trimmed_items": trimmed,
               "effective_context_window": (window * EFFECTIVE_CONTEXT_WINDOW_PERCENT) // 100 if window is not None else None,
               "retained_ids": [m.id for m, _ in retained],
               **({"request_tokens": request_tokens} if request_tokens is not None and not fires else {})},
    )


def compact(prefix: Session, plan_: Plan, params: CodexCompaction, counts: TokenCounts, summarizer: Any, turn: int, events: list[Any]) -> Summary | None:
    """The compaction the plan shows, in force for the next turns: it covers the whole history but
    the initial context (the user messages it keeps are rebuilt from what it covers)."""
    from ...replay_contract import Event

    extra = plan_.extra
    if not extra.get("compacts"):
        return None
    initial = {m.id for m in initial_context(prefix)} | {m.id for m in leading_system_messages(prefix)}
    covered = [m for m in prefix.messages if m.id not in initial]
    text = stand_in_summary(covered, summarizer.supyagent_snapshot(covered))
    events.append(Event(turn, "compaction", f"Codex auto-compacts: {extra['total_usage_tokens']:,} tokens >= model_auto_compact_token_limit "
                                            f"{extra['auto_compact_token_limit']:,}; {len(extra['retained_ids']):,} user {noun(len(extra['retained_ids']), 'message')} kept"))
    return Summary(text=text, messages_covered=len(covered), covers=tuple(m.id for m in covered),
                   created_at=prefix.messages[-1].timestamp if prefix.messages else "")


POLICY_NAME = "codex-compaction"

def trigger_level(params: CodexCompaction, session: Session) -> int | None:
    return _limits(session, params)[1]


def trigger_count(plan: Plan) -> int:
    """What Codex compares with model_auto_compact_token_limit: the last call's reported tokens (or
    its estimate), not what the plan sends; once the plan compacted, the compacted history."""
    if plan.extra.get("compacts"):
        return plan.totals.used
    return int(plan.extra.get("total_usage_tokens", plan.totals.used))


POLICY = Policy(
    reason_codes=("system_prompt", "initial_context", "since_compaction", "under_trigger", "kept", "retained", "truncated", "summarised", "before_compaction"),
    name=POLICY_NAME,
    schedule='auto-compaction is checked before each model request (after the reported token_count)',
    title="Codex local auto-compaction",
    params_type=CodexCompaction,
    measure_name="codex-item",
    measure=measure_message,
    default_tokenizer="codex",
    plan=plan,
    zone_parts={"history": "history", "initial_context": "initial_context", "retained_user": "retained_user", "system": "instructions"},
    description="The whole history until the last call's tokens reach 90 % of the window; then initial context + recent user messages + a summary.",
    framework="Codex",
    framework_version="0100b103",
    source="codex-rs/core/src/compact.rs run_compact_task_inner, build_compacted_history",
    counter="the last call's reported tokens (input with its cached part, plus output); without usage, Codex's estimate: "
            "each history item's JSON bytes / 4, rounded up",
    trigger=("model_auto_compact_token_limit", "model_context_window"),
    trigger_level=trigger_level,
    trigger_count=trigger_count,
    keep=("compact_user_message_max_tokens",),
    stand_in="offline extractive snapshot after Codex's SUMMARY_PREFIX in place of the model's summary",
    compact=compact,
)
