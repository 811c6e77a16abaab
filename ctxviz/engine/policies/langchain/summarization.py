"""LangChain's `SummarizationMiddleware` (langchain/agents/middleware/summarization.py, langchain 1.5.0).

One `before_model` pass over the agent state's messages (the system prompt is not among them):

- `total_tokens` is `count_tokens_approximately(messages, use_usage_metadata_scaling=True)`
  (3.3 characters per token for Anthropic chat models): scaled up, at most x1.25, by the last AI
  message's reported `usage_metadata.total_tokens` when every AI message names one provider.
- `trigger` is a list of clauses, met if any is (OR); a clause is met if all its thresholds are
  (AND): `messages` >= n; `tokens` >= n, or the last AI message's reported total >= n from the
  model's own provider; `fraction` likewise of `int(max_input_tokens * f)` (never fires without
  the model profile). None never fires.
- the cutoff keeps `keep`: the last n messages, or (tokens / fraction) the shortest suffix within
  the target found by binary search on the unscaled count (none at all if everything fits), then
  moved so that no ToolMessage is separated from the AIMessage that called it
  (`_find_safe_cutoff_point`: back to that AIMessage, or forward past the ToolMessages).
- everything before the cutoff is replaced by one HumanMessage, "Here is a summary of the
  conversation to date:\\n\\n" + the summary of those messages, trimmed first to
  `trim_tokens_to_summarize` (trim_messages, last, start_on human, partial, include_system).

ctxviz writes the summary with its offline stand-in (an extractive snapshot) where LangChain
calls the model; the LangChain fallback texts ("Previous conversation was too long to
summarize.") are its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Category, Message, Session, Summary, TextPart
from ...wording import noun
from ..base import Policy, params_dict
from .counting import (
    APPROX,
    SUMMARY_POS,
    SUMMARY_PREFIX,
    LCMessage,
    cached_view,
    count_view,
    lc_type,
    max_input_tokens,
    measure,
    model_provider,
    scaled_total,
    summary_message_text,
    summary_view,
    text_message_tokens,
    tokenizer_for_model,
)
from .summarization_columns import PlanFields, plan_columns, state_of
from .trim import Entry, default_text_splitter, trim

VERSION = "langchain 1.5.0"
NO_HISTORY = "No previous conversation history."
TOO_LONG = "Previous conversation was too long to summarize."
DEFAULT_MESSAGES_TO_KEEP = 20
FALLBACK_MESSAGE_COUNT = 15
#: summarization._LS_PROVIDER_ALIASES: message providers accepted for a model's ls_provider.
LS_PROVIDER_ALIASES = {"amazon_bedrock": {"bedrock", "bedrock_converse"}, "openai-mantle": {"openai"}, "anthropic-mantle": {"anthropic"}}
KINDS = ("tokens", "messages", "fraction")


def _context_size(kind: str, raw: str, field_name: str) -> tuple[str, float | int]:
    """_validate_context_size, with LangChain's messages (the dict form's integer rule included)."""
    if kind not in KINDS:
        raise ValueError(f"{field_name}: unsupported context size type {kind!r} (use tokens=N, messages=N or fraction=F)")
    try:
        value: float | int = float(raw) if kind == "fraction" else int(raw.replace("_", "").replace(",", ""))
    except ValueError:
        need = "a number" if kind == "fraction" else "an integer"
        raise ValueError(f"{field_name}: {kind} needs {need}, got {raw!r}") from None
    if kind == "fraction":
        if not 0 < value <= 1:
            raise ValueError(f"{field_name}: fractional values must be between 0 and 1, got {value}")
    elif value <= 0:
        raise ValueError(f"{field_name}: {kind} thresholds must be greater than 0, got {value}")
    return kind, value


def parse_trigger(text: str) -> list[dict[str, float | int]]:
    """`"tokens=4000"`, `"tokens=4000,messages=10"` (AND), `"fraction=0.8|messages=100"` (OR); "" is None."""
    clauses: list[dict[str, float | int]] = []
    for clause_text in (c.strip() for c in text.split("|")) if text.strip() else ():
        if not clause_text:
            raise ValueError("trigger: an empty clause between '|' (write e.g. 'fraction=0.8|messages=100')")
        clause: dict[str, float | int] = {}
        for item in (i.strip() for i in clause_text.split(",")):
            kind, sep, raw = item.partition("=")
            if not sep:
                raise ValueError(f"trigger: expected kind=value (tokens, messages or fraction), got {item!r}")
            kind, value = _context_size(kind.strip(), raw.strip(), "trigger")
            if kind in clause:
                raise ValueError(f"trigger: {kind} appears twice in the clause {clause_text!r}")
            clause[kind] = value
        clauses.append(clause)
    return clauses


def parse_keep(text: str) -> tuple[str, float | int]:
    kind, sep, raw = text.strip().partition("=")
    if not sep:
        raise ValueError(f"keep: expected messages=N, tokens=N or fraction=F, got {text!r}")
    return _context_size(kind.strip(), raw.strip(), "keep")


@dataclass(frozen=True)
class SummarizationParams:
    trigger: str = field(default="", metadata={
        "help": "When to summarise: tokens=N, messages=N, fraction=F; ',' joins thresholds that must all be met, "
                "'|' alternatives (LangChain's list); empty: never (LangChain's None)"})
    keep: str = field(default="messages=20", metadata={"help": "What survives: messages=N, tokens=N or fraction=F of max_input_tokens"})
    trim_tokens_to_summarize: int | None = field(default=4000, metadata={
        "help": "Tokens of history the summarizer is given (trim_messages); empty: all", "min": 1, "step": 500})
    max_input_tokens: int = field(default=0, metadata={
        "help": "The model profile's max_input_tokens, for fraction=; 0: LangChain's profile of the session's model "
                "(ctxviz's catalogue window for models without one)",
        "min": 0, "step": 1000})
    model_provider: str = field(default="", metadata={
        "help": "The model's LangChain provider (ls_provider: openai, anthropic...): reported usage triggers only from its own "
                "messages; empty: the catalogue's provider of the session's model (AI messages of non-LangChain logs are taken as its own)"})

    def __post_init__(self) -> None:
        parse_trigger(self.trigger)
        parse_keep(self.keep)
        if self.trim_tokens_to_summarize is not None and self.trim_tokens_to_summarize < 0:
            raise ValueError(f"trim_tokens_to_summarize must be >= 0 or empty, got {self.trim_tokens_to_summarize}")
        if self.max_input_tokens < 0:
            raise ValueError(f"max_input_tokens must be >= 0, got {self.max_input_tokens}")


def trigger_level(params: SummarizationParams, session: Session) -> int | None:
    """The lowest token level any trigger clause names (a fraction of max_input_tokens in tokens)."""
    levels: list[int] = []
    for clause in parse_trigger(params.trigger):
        if "tokens" in clause:
            levels.append(int(clause["tokens"]))
        elif "fraction" in clause:
            window = max_input_tokens(session.model, params.max_input_tokens)
            if window:
                levels.append(int(clause["fraction"] * window))
    return min(levels) if levels else None


def align(params: SummarizationParams, session: Session, trigger_tokens: int | None, keep_messages: int | None,
          keep_tokens: int | None) -> tuple[SummarizationParams, list[str]]:
    """LangChain's own spellings: trigger=("tokens", N), keep=("messages", K) or ("tokens", T)."""
    changes: dict[str, str] = {}
    if trigger_tokens is not None:
        changes["trigger"] = f"tokens={trigger_tokens}"
    if keep_tokens is not None:
        changes["keep"] = f"tokens={keep_tokens}"
    elif keep_messages is not None:
        changes["keep"] = f"messages={keep_messages}"
    return replace(params, **changes), []


def provider_matches(message_provider: str, ls_provider: str) -> bool:
    if not ls_provider:
        return False
    return message_provider == ls_provider or message_provider in LS_PROVIDER_ALIASES.get(ls_provider, set())


@dataclass
class Pass:
    """What one before_model pass decided."""

    state: list[Entry]
    views: dict[int, LCMessage]
    total_tokens: int
    fired: bool
    why: str
    cutoff: int = 0
    cutoff_why: str = ""
    summary_input: list[Entry] = field(default_factory=list)
    summary_input_note: str = ""
    notes: list[str] = field(default_factory=list)
    #: The reason code of the messages the pass keeps: after the cutoff, under the trigger, or just kept.
    kept_code: str = "kept"


def run_pass(session: Session, params: SummarizationParams, counts: TokenCounts) -> Pass:
    """SummarizationMiddleware.before_model on the session's state, step for step."""
    tokenizer = counts.tokenizer
    ls_provider = params.model_provider or model_provider(session.model)
    limit = max_input_tokens(session.model, params.max_input_tokens)
    covered = {c for s in session.summaries for c in s.covers}
    views: dict[int, LCMessage] = {}
    state: list[Entry] = []
    for k, s in enumerate(session.summaries):
        view = summary_view(s.text)
        views[SUMMARY_POS - k] = view
        state.append(Entry(SUMMARY_POS - k, count_view(view, tokenizer), "human"))
    for m in session.messages:
        if m.id in covered:
            continue
        kind = lc_type(m)
        if kind == "ai":
            view = cached_view(m)
            if view.provider is None and m.raw is None and view.total_tokens is not None:
                # Not a LangChain dump: the AI messages are taken as the session model's own.
                view = view._replace(provider=ls_provider or None)
            views[m.index] = view
        state.append(Entry(m.index, counts.message_tokens[m.index], kind))

    def view_of(pos: int) -> LCMessage:
        if pos not in views:
            views[pos] = cached_view(session.messages[pos])
        return views[pos]

    def scaled(entries: Sequence[Entry]) -> int:
        return scaled_total([e.tokens for e in entries], [(e.view or views.get(e.pos)) if e.type == "ai" else None for e in entries])

    return decide(Pass(state, views, scaled(state), False, ""), session, params, counts, limit, ls_provider, view_of, scaled)


def decide(result: Pass, session: Session, params: SummarizationParams, counts: TokenCounts, limit: int | None, ls_provider: str,
           view_of: Any, scaled: Any, suffix: Sequence[int] | None = None, trim_count: Any = None) -> Pass:
    """The rest of before_model once the state is built and counted: the trigger, the cutoff and
    what the summarizer is given. The columns plan hands over the state's suffix sums (the cutoff's
    binary search) and a count that stops once a list is over the summarizer's budget."""
    tokenizer = counts.tokenizer
    state, total = result.state, result.total_tokens
    clauses = parse_trigger(params.trigger)
    if not clauses:
        result.why = "trigger is None (empty): SummarizationMiddleware never summarises"
        return result
    last_ai = next((view_of(e.pos) for e in reversed(state) if e.type == "ai"), None)

    def reported(threshold: float) -> bool:
        return bool(last_ai is not None and last_ai.total_tokens and last_ai.total_tokens >= threshold
                    and last_ai.provider and provider_matches(last_ai.provider, ls_provider))

    if any("fraction" in c for c in clauses) or parse_keep(params.keep)[0] == "fraction":
        if limit is None:
            result.notes.append(f"fraction= needs the model's max_input_tokens, unknown for model {session.model or '(none)'!r}: "
                                "LangChain refuses to build the middleware; set max_input_tokens")
    met_why = ""
    for clause in clauses:
        reasons = []
        met = True
        for kind, value in clause.items():
            if kind == "messages":
                if len(state) < value:
                    met = False
                    break
                reasons.append(f"{len(state)} messages >= {value}")
            elif kind in ("tokens", "fraction"):
                if kind == "fraction":
                    if limit is None:
                        met = False
                        break
                    threshold = int(limit * value)
                    if threshold <= 0:
                        threshold = 1
                    label = f"fraction {value} of {limit:,} = {threshold:,}"
                else:
                    threshold = int(value)
                    label = f"{threshold:,}"
                if total >= threshold:
                    reasons.append(f"{total:,} tokens >= {label}")
                elif reported(float(threshold)):
                    reasons.append(f"the last AI message reports {last_ai.total_tokens:,} tokens >= {label}")  # type: ignore[union-attr]
                else:
                    met = False
                    break
        if met:
            met_why = " and ".join(reasons)
            break
    if not met_why:
        result.why = f"trigger {params.trigger!r} not met ({total:,} tokens, {len(state)} messages)"
        result.kept_code = "under_trigger"
        return result
    cutoff, cutoff_why = determine_cutoff(state, params, limit, total, view_of, suffix)
    result.cutoff, result.cutoff_why = cutoff, cutoff_why
    if cutoff <= 0:
        result.why = f"trigger met ({met_why}), but {cutoff_why}: nothing to summarise"
        return result
    result.fired = True
    result.why = f"trigger met ({met_why})"
    result.kept_code = "fresh_tail"
    to_summarize = state[:cutoff]
    if params.trim_tokens_to_summarize is None:
        result.summary_input = to_summarize
        result.summary_input_note = "all of them (trim_tokens_to_summarize is None)"
    else:
        trimmed, _ = trim(to_summarize, max_tokens=params.trim_tokens_to_summarize, count=trim_count or scaled,
                          count_one=lambda v: count_view(v, tokenizer), view_of=view_of, strategy="last", allow_partial=True,
                          start_on=("human",), include_system=True, text_splitter=default_text_splitter)
        result.summary_input = trimmed
        result.summary_input_note = f"the newest that fit trim_tokens_to_summarize={params.trim_tokens_to_summarize:,} ({len(trimmed)} messages)"
    return result


def determine_cutoff(state: list[Entry], params: SummarizationParams, limit: int | None, total: int, view_of: Any,
                     suffix: Sequence[int] | None = None) -> tuple[int, str]:
    """_determine_cutoff_index; `suffix[i]`, the count of state[i:], is summed here unless given."""
    kind, value = parse_keep(params.keep)
    if kind in ("tokens", "fraction"):
        if kind == "fraction" and limit is None:
            return safe_cutoff(state, DEFAULT_MESSAGES_TO_KEEP, view_of), "keep falls back to the last 20 messages (no max_input_tokens)"
        if not state:
            return 0, "no messages"
        target = int(limit * value) if kind == "fraction" else int(value)  # type: ignore[operator]
        if target <= 0:
            target = 1
        if total <= target:
            return 0, f"all {total:,} tokens fit keep's {target:,}"
        n = len(state)
        if suffix is None:
            suffix = [0] * (n + 1)
            for i in range(n - 1, -1, -1):
                suffix[i] = suffix[i + 1] + state[i].tokens
        left, right = 0, n
        candidate = n
        for _ in range(n.bit_length() + 1):
            if left >= right:
                break
            mid = (left + right) // 2
            if suffix[mid] <= target:
                candidate = mid
                right = mid
            else:
                left = mid + 1
        if candidate == n:
            candidate = left
        if candidate >= n:
            if n == 1:
                return 0, "the only message does not fit keep, and LangChain keeps it"
            candidate = n - 1
        return safe_cutoff_point(state, candidate, view_of), f"keep={params.keep}: the newest messages within {target:,} tokens"
    count = int(value)
    return safe_cutoff(state, count, view_of), f"keep={params.keep}"


def safe_cutoff(state: list[Entry], messages_to_keep: int, view_of: Any) -> int:
    if len(state) <= messages_to_keep:
        return 0
    return safe_cutoff_point(state, len(state) - messages_to_keep, view_of)


def safe_cutoff_point(state: list[Entry], cutoff: int, view_of: Any) -> int:
    """_find_safe_cutoff_point: never leave a ToolMessage at the cut without the AIMessage that called it."""
    if cutoff >= len(state) or state[cutoff].type != "tool":
        return cutoff
    ids: set[str] = set()
    idx = cutoff
    while idx < len(state) and state[idx].type == "tool":
        call_id = view_of(state[idx].pos).tool_call_id
        if call_id:
            ids.add(call_id)
        idx += 1
    for i in range(cutoff - 1, -1, -1):
        if state[i].type == "ai":
            calls = view_of(state[i].pos).tool_calls
            if calls and ids & {c.get("id") for c in calls if c.get("id")}:
                return i
    return idx


def summary_sources(session: Session, entries: Sequence[Entry]) -> list[Message]:
    """The session messages (and carried summaries, as user messages) the summarizer is given."""
    out: list[Message] = []
    for e in entries:
        if e.pos >= 0:
            out.append(session.messages[e.pos])
        else:
            k = SUMMARY_POS - e.pos
            out.append(Message(id=f"summary-{k}", index=-1, role="user", parts=(TextPart(session.summaries[k].text),), category=Category.CONTEXT))
    return out


def summary_text(session: Session, run: Pass, write: Any = None) -> str:
    """LangChain's own texts where it has them, else the stand-in on what the summarizer is given."""
    if write is None:
        from ...summarizers import supyagent_snapshot as write  # lazily: summarizers imports urllib
    if run.cutoff <= 0:
        return NO_HISTORY
    if not run.summary_input:
        return TOO_LONG
    return str(write(summary_sources(session, run.summary_input))).strip()


def plan(session: Session, params: SummarizationParams, counts: TokenCounts) -> Plan:
    """The plan in columns: the state LangChain holds, its counts and scaled total are derived once
    per session (`summarization_columns`), the pass decides on them (`decide`), and no record is
    built per message. `plan_records` is the same plan step by step, its reference."""
    ls_provider = params.model_provider or model_provider(session.model)
    limit = max_input_tokens(session.model, params.max_input_tokens)
    held = state_of(session, counts, ls_provider)
    trim_count = held.bounded_count(params.trim_tokens_to_summarize) if params.trim_tokens_to_summarize is not None else None
    run = decide(Pass(held.state, held.views, held.total, False, ""), session, params, counts, limit, ls_provider, held.view_of,
                 held.scaled, held.suffix, trim_count)
    new_text = summary_text(session, run) if run.fired else ""
    summary_plans, head, summary_usage = _head(session, run, new_text, counts)
    return plan_columns(session, counts, run, held, head, summary_usage, _notes(session, run, new_text), PlanFields(
        params={**params_dict(params), "max_input_tokens": limit or 0}, limit=limit, summaries=tuple(summary_plans), summary_text=new_text))


def _head(session: Session, run: Pass, new_text: str, counts: TokenCounts) -> tuple[list[SummaryPlan], list[dict[str, Any]], int]:
    """What stands before the messages: the system prompt (sent, not counted), the new summary
    message, the earlier summaries the cutoff left; their plans and the summary tokens sent."""
    # The earlier summaries stand first in the state: those before the cutoff are folded in.
    cut = {e.pos for e in run.state[: min(run.cutoff, len(session.summaries))]} if run.fired else set()
    head: list[dict[str, Any]] = []
    usage = 0
    if session.system_prompt:
        head.append({"role": "system", "content": session.system_prompt})
    if run.fired:
        wrapper = summary_message_text(new_text)
        usage = text_message_tokens(wrapper, "human", counts.tokenizer)
        head.append({"role": "user", "content": wrapper})
    summary_plans: list[SummaryPlan] = []
    for k, s in enumerate(session.summaries):
        pos = SUMMARY_POS - k
        t = next(e.tokens for e in run.state if e.pos == pos)
        if pos in cut:
            summary_plans.append(SummaryPlan(k, t, Decision.SUMMARIZED, "summarized: folded into the new summary (it is before the cutoff)", s.text))
        else:
            summary_plans.append(SummaryPlan(k, t, Decision.KEPT, "kept: the earlier summary message stays first in the state", s.text))
            usage += t
            head.append({"role": "user", "content": summary_message_text(s.text)})
    return summary_plans, head, usage


def _notes(session: Session, run: Pass, new_text: str) -> list[str]:
    notes = list(run.notes)
    if run.fired:
        notes.append(f"SummarizationMiddleware fires: {run.why}; {run.cutoff:,} {noun(run.cutoff, 'message')} replaced by one HumanMessage "
                     f"'{SUMMARY_PREFIX.strip()} ...'; the summarizer is given {run.summary_input_note}")
        if new_text not in (NO_HISTORY, TOO_LONG):
            notes.append("the summary text is ctxviz's offline stand-in (an extractive snapshot), where LangChain calls the model")
    else:
        notes.append(f"no summarization: {run.why}")
    if session.system_prompt:
        notes.append("the system prompt is sent but not counted: the middleware counts the state's messages only")
    if session.summaries:
        notes.append(f"the session's {len(session.summaries):,} earlier {noun(len(session.summaries), 'summary', 'summaries')} {'stands' if len(session.summaries) == 1 else 'stand'} first in the state as LangChain's summary "
                     "HumanMessage, replacing the messages they cover")
    return notes


def plan_records(session: Session, params: SummarizationParams, counts: TokenCounts) -> Plan:
    """before_model step for step over one record per message: the reference `plan` is checked against."""
    run = run_pass(session, params, counts)
    limit = max_input_tokens(session.model, params.max_input_tokens)
    cut = {e.pos for e in run.state[: run.cutoff]} if run.fired else set()
    covered = {c for s in session.summaries for c in s.covers}
    decisions: list[MessagePlan] = []
    new_text = summary_text(session, run) if run.fired else ""
    summary_plans, head, summary_usage = _head(session, run, new_text, counts)
    usage = {"summary": summary_usage, "messages": 0}
    context: list[dict[str, Any]] = list(head)
    context_index: list[int | None] = [None] * len(head)
    for m in session.messages:
        t = counts.message_tokens[m.index]
        if m.id in covered:
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.SUMMARIZED, "summarized",
                                         "summarized: an earlier pass replaced it with the summary message", 0, "summarised"))
        elif m.index in cut:
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.SUMMARIZED, "summarized",
                                         f"summarized: before the cutoff ({run.cutoff_why}); {run.why}", 0, "summarised"))
        else:
            reason = f"kept: after the cutoff ({run.cutoff_why})" if run.fired else f"kept: no summarization ({run.why})"
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "recent", reason, t, run.kept_code))
            usage["messages"] += t
            context.append(m.to_openai())
            context_index.append(m.index)
    notes = _notes(session, run, new_text)
    used = usage["summary"] + usage["messages"]
    budget = limit if limit is not None else max(used, run.total_tokens)
    summary_allot = min(usage["summary"], budget)
    messages = tuple(decisions)
    sent = [m for m in messages if m.sent]
    totals = Totals(budget=budget, used=used, kept=sum(m.tokens for m in sent), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=used <= budget, kept_messages=len(sent), dropped_messages=len(messages) - len(sent))
    return Plan(
        policy="langchain-summarization", params={**params_dict(params), "max_input_tokens": limit or 0},
        tokenizer=counts.scheme.label, allocation={"summary": summary_allot, "messages": budget - summary_allot}, usage=usage,
        system_prompt=session.system_prompt, messages=messages, summaries=tuple(summary_plans), context=tuple(context),
        context_index=tuple(context_index), totals=totals, zones=("summarized", "recent"), notes=tuple(notes),
        extra={"fired": run.fired, "total_tokens": run.total_tokens, "cutoff": run.cutoff,
               "summarized_ids": [session.messages[e.pos].id for e in run.state[: run.cutoff] if e.pos >= 0] if run.fired else [],
               "summary_input_ids": [session.messages[e.pos].id for e in run.summary_input if e.pos >= 0],
               "summary_text": new_text},
    )


def compact(prefix: Session, plan_: Plan, params: SummarizationParams, counts: TokenCounts, summarizer: Any, turn: int, events: list[Any]) -> Summary | None:
    """Fire the middleware at this turn as its plan did; the summary covers everything it replaced."""
    if not plan_.extra.get("fired"):
        return None
    from ...replay_contract import Event

    run = run_pass(prefix, params, counts)
    text = summary_text(prefix, run, summarizer.supyagent_snapshot)
    earlier = [c for s in prefix.summaries for c in s.covers]
    new = [prefix.messages[e.pos].id for e in run.state[: run.cutoff] if e.pos >= 0]
    covers = tuple(dict.fromkeys([*earlier, *new]))
    again = " with the earlier summary message" if any(e.pos < 0 for e in run.state[: run.cutoff]) else ""
    events.append(Event(turn, "summary", f"SummarizationMiddleware: {run.why}; {len(new):,} {noun(len(new), 'message')} summarised{again} ({run.cutoff_why})"))
    return Summary(text=text, messages_covered=len(covers), covers=covers, created_at=prefix.messages[-1].timestamp if prefix.messages else "")


POLICY = Policy(
    reason_codes=("fresh_tail", "under_trigger", "kept", "summarised"),
    name="langchain-summarization",
    schedule='SummarizationMiddleware.before_model: before each model call of the agent loop (never between parallel tool results)',
    title="LangChain SummarizationMiddleware",
    params_type=SummarizationParams,
    measure_name="langchain-approx-message",
    measure=measure,
    default_tokenizer=APPROX,
    tokenizer_for_model=tokenizer_for_model,
    plan=plan,
    zone_parts={"recent": "messages"},
    description="When the trigger is met, replace everything before the kept tail (never splitting a tool call from its results) "
                "with one summary HumanMessage.",
    framework="LangChain",
    framework_version=VERSION,
    source="langchain/agents/middleware/summarization.py SummarizationMiddleware.before_model",
    counter="count_tokens_approximately with usage-metadata scaling: ceil(characters / 4, or 3.3 for Anthropic) + 3 per message, "
            "85 per image, x up to 1.25 by the last reported usage",
    trigger=("trigger",),
    keep=("keep",),
    trigger_level=trigger_level,
    align=align,
    stand_in="extractive snapshot written offline, in LangChain's summary message",
    compact=compact,
)
