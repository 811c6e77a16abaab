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

import json
from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session, Summary, TextPart
from ...tokenizers import CodexApproxTokenizer, Tokenizer
from ..base import Policy, params_dict
from ..common import base_system_prompt

ZONES = ("system", "initial_context", "summarized", "retained_user", "summary", "history")
COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
APPROX_BYTES_PER_TOKEN = 4
#: templates/compact/summary_prefix.md (two spaces before "assist" are Codex's).
SUMMARY_PREFIX = ("Another language model started to solve this problem and produced a summary of its thinking process. You also have "
                  "access to the state of the tools that were used by that language model. Use this to build on the work that has "
                  "already been done and avoid duplicating work. Here is the summary produced by the other language model, use the "
                  "information in this summary to  assist with your own analysis:")
NO_SUMMARY = "(no summary available)"
CONTEXT_WINDOW_272K = 272_000
EFFECTIVE_CONTEXT_WINDOW_PERCENT = 95


def family_context_window(slug: str) -> int | None:
    """find_family_for_model's context window, by slug prefix in its order (None: an unknown model)."""
    for prefix, window in (("o3", 200_000), ("o4-mini", 200_000), ("codex-mini-latest", 200_000), ("gpt-4.1", 1_047_576),
                           ("gpt-oss", 96_000), ("openai/gpt-oss", 96_000), ("gpt-4o", 128_000), ("gpt-3.5", 16_385)):
        if slug.startswith(prefix):
            return window
    if slug.startswith(("test-gpt-5", "exp-", "codex-", "gpt-5")):
        return CONTEXT_WINDOW_272K
    return None


def default_auto_compact_limit(context_window: int) -> int:
    """ModelFamily::default_auto_compact_limit: (context_window * 9) / 10, in integers."""
    return (context_window * 9) // 10


def approx_token_count(text: str) -> int:
    """truncate.rs approx_token_count: UTF-8 bytes / 4, rounded up."""
    return (len(text.encode("utf-8")) + APPROX_BYTES_PER_TOKEN - 1) // APPROX_BYTES_PER_TOKEN


# -- truncate.rs (the version with TruncationSource) -------------------------------------------

def _prefix_end(data: bytes, left_budget: int) -> int:
    head = data[:left_budget]
    i = head.rfind(b"\n")
    if i >= 0 and _boundary(data, left_budget):
        return i + 1
    end = min(left_budget, len(data))
    while end > 0 and not _boundary(data, end):
        end -= 1
    return end


def _suffix_start(data: bytes, right_budget: int) -> int:
    start = max(0, len(data) - right_budget)
    if _boundary(data, start):
        i = data.find(b"\n", start)
        if i >= 0:
            return i + 1
    idx = start
    while idx < len(data) and not _boundary(data, idx):
        idx += 1
    return idx


def _boundary(data: bytes, i: int) -> bool:
    """str::is_char_boundary on UTF-8 bytes (Rust's `s.get(..i)` is None off a boundary)."""
    return i <= 0 or i >= len(data) or (data[i] & 0xC0) != 0x80


def truncate_tokens(text: str, max_tokens: int) -> str:
    """truncate_text(text, TruncationPolicy::Tokens(max_tokens)): truncate_with_token_budget."""
    if not text:
        return ""
    data = text.encode("utf-8")
    if max_tokens > 0:
        small = (max_tokens // 4) * APPROX_BYTES_PER_TOKEN
        if small > 0 and len(data) <= small:
            return text
    max_bytes = max_tokens * APPROX_BYTES_PER_TOKEN
    if max_bytes == 0:
        return f"[…{(len(data) + 3) // 4} tokens truncated…]"
    if len(data) <= max_bytes:
        return text
    removed = len(data) - max_bytes
    marker = f"[…{(removed + 3) // 4} tokens truncated…]".encode()
    if len(marker) >= max_bytes:
        cut = max_bytes
        while cut > 0 and not _boundary(marker, cut):
            cut -= 1
        return marker[:cut].decode("utf-8")
    keep = max_bytes - len(marker)
    left = keep // 2
    right = keep - left
    prefix_end = _prefix_end(data, left)
    suffix_start = max(_suffix_start(data, right), prefix_end)
    out = data[:prefix_end] + marker + b"\n" + data[suffix_start:]
    if len(out) > max_bytes:
        cut = max_bytes
        while cut > 0 and not _boundary(out, cut):
            cut -= 1
        out = out[:cut]
    return out.decode("utf-8")


# -- what Codex counts as a user message -------------------------------------------------------

def user_message_text(message: Message) -> str | None:
    """event_mapping parse_user_message + UserMessageItem::message: the texts joined with nothing;
    None for what is not the user's own words (AGENTS.md, the environment, skills, shell commands)."""
    if message.role != "user":
        return None
    texts = [p.text for p in message.parts if isinstance(p, TextPart)]
    if texts and (texts[0].startswith(("# AGENTS.md instructions for ", "<user_instructions>", "<skill"))):
        return None
    for t in texts:
        lowered = t.lstrip().lower()
        if lowered.startswith(("<environment_context>", "<user_shell_command>")):
            return None
    text = "".join(texts)
    if text.startswith(f"{SUMMARY_PREFIX}\n"):
        return None  # is_summary_message
    return text


def is_initial_context(message: Message) -> bool:
    """Developer messages and the injected user messages build_initial_context writes again."""
    return message.role == "system" or (message.role == "user" and user_message_text(message) is None)


def initial_context(session: Session) -> list[Message]:
    """The injected user messages before the first real one (developer messages join the
    instructions): what build_initial_context writes again after a compaction."""
    first_user = next((m.index for m in session.messages if m.role == "user" and user_message_text(m) is not None), len(session.messages))
    return [m for m in session.messages[:first_user] if m.role == "user" and is_initial_context(m)]


def select_user_messages(texts: list[str], max_tokens: int) -> list[tuple[int, str]]:
    """build_compacted_history_with_limit's selection: (position, text sent), oldest first."""
    selected: list[tuple[int, str]] = []
    if max_tokens > 0:
        remaining = max_tokens
        for i in range(len(texts) - 1, -1, -1):
            if remaining == 0:
                break
            tokens = approx_token_count(texts[i])
            if tokens <= remaining:
                selected.append((i, texts[i]))
                remaining -= tokens
            else:
                selected.append((i, truncate_tokens(texts[i], remaining)))
                break
        selected.reverse()
    return selected


def user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def item_tokens(item: Any) -> int:
    """approx_token_count(serde_json::to_string(item))."""
    return approx_token_count(json.dumps(item, ensure_ascii=False, separators=(",", ":")))


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


def reported_total(message: Message) -> int | None:
    """last_token_usage.total_tokens: input (with its cached part) plus output."""
    u = message.usage
    if u is None:
        return None
    return u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens + u.output_tokens


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


def stand_in_summary(messages: list[Message], text: str | None = None) -> str:
    from ...summarizers import supyagent_snapshot  # lazily: it imports urllib, which ctxviz loads only to summarise

    suffix = text if text is not None else supyagent_snapshot(messages)
    return f"{SUMMARY_PREFIX}\n{suffix}"


def _limits(session: Session, params: CodexCompaction) -> tuple[int | None, int | None]:
    window = params.model_context_window if params.model_context_window is not None else family_context_window(session.model)
    limit = params.model_auto_compact_token_limit
    if limit is None and window is not None:
        limit = default_auto_compact_limit(window)
    return window, limit


def plan(session: Session, params: CodexCompaction, counts: TokenCounts) -> Plan:
    tokens = counts.message_tokens
    window, limit = _limits(session, params)
    budget = window if window is not None else (session.context_window or CONTEXT_WINDOW_272K)
    notes: list[str] = []
    if window is None:
        notes.append(f"Codex does not know the model {session.model or '(none)'!r}: it has no context window, so it never auto-compacts "
                     f"(ctxviz draws a {budget:,}-token window; set model_context_window to compare)")
    # Developer messages before the conversation join the instructions; later ones stay where Codex
    # sent them, in the history (moving them to the front would change the request's prefix).
    system_messages = leading_system_messages(session)
    system_prompt = base_system_prompt(session, system_messages)
    initial = initial_context(session)
    initial_ids = {m.id for m in initial} | {m.id for m in system_messages}
    summary = session.summaries[-1] if session.summaries else None
    covered = set(summary.covers) if summary is not None else set()
    generated = summary is not None and summary.text.startswith(f"{SUMMARY_PREFIX}\n")
    if summary is not None and not generated:
        # A compaction recorded in the rollout: its replacement history holds the initial context too.
        initial = [m for m in initial if m.id not in covered]
        initial_ids = {m.id for m in initial} | {m.id for m in system_messages}
    history = [m for m in session.messages if m.id not in initial_ids]

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
                     f"the initial context, {len(retained)} recent user message(s) and the summary")
        notes.append("the summary text is ctxviz's offline stand-in (an extractive snapshot) after Codex's SUMMARY_PREFIX")
        if trimmed:
            notes.append(f"the compaction request overflows the {window:,}-token window: Codex trims the {trimmed} oldest item(s) from it "
                         "(\"Trimmed N older conversation item(s) before compacting\"), so the summary covers less")
    elif limit is not None:
        notes.append(f"no compaction: {total:,} tokens ({source}) are under model_auto_compact_token_limit {limit:,}")

    for m in system_messages:
        decide(m, Decision.KEPT, "system", "kept: a developer message, sent with the instructions", "system_prompt")
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
               if m.role == "system" else "kept: Codex sends the whole history until auto-compaction fires", "since_compaction")

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


def leading_system_messages(session: Session) -> list[Message]:
    """The system (developer) messages before the first other message: the ones Codex sends with
    its instructions, at the front of every request. A developer message written later (a changed
    sandbox or approval policy, a model switch) is a history item, sent in its place."""
    first_other = next((m.index for m in session.messages if m.role != "system"), len(session.messages))
    return [m for m in session.messages[:first_other] if m.role == "system"]


def _covered_messages(session: Session, summary: Summary | None) -> list[Message]:
    if summary is None:
        return []
    ids = set(summary.covers)
    return [m for m in session.messages if m.id in ids]


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
                                            f"{extra['auto_compact_token_limit']:,}; {len(extra['retained_ids'])} user message(s) kept"))
    return Summary(text=text, messages_covered=len(covered), covers=tuple(m.id for m in covered),
                   created_at=prefix.messages[-1].timestamp if prefix.messages else "")


POLICY_NAME = "codex-compaction"

def trigger_level(params: CodexCompaction, session: Session) -> int | None:
    return _limits(session, params)[1]


POLICY = Policy(
    reason_codes=("system_prompt", "initial_context", "since_compaction", "retained", "truncated", "summarised", "before_compaction"),
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
    keep=("compact_user_message_max_tokens",),
    stand_in="offline extractive snapshot after Codex's SUMMARY_PREFIX in place of the model's summary",
    compact=compact,
)
