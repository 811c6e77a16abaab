"""LangChain's `ContextEditingMiddleware` with `ClearToolUsesEdit`
(langchain/agents/middleware/context_editing.py, langchain 1.5.0).

Before each model call, on a copy of the request's messages (the system prompt is not among them
and the approximate counter does not count it): when `count_tokens_approximately(messages)` is
above `trigger`, the tool results other than the newest `keep` are replaced by `placeholder`,
oldest first, skipping results already cleared, results whose call is not on the nearest
preceding AI message, and tools named in `exclude_tools`; `clear_tool_inputs` also empties the
call's `args`; with `clear_at_least` > 0 it stops as soon as that many tokens are reclaimed.
Nothing is stored: the next call starts again from the full history.

`token_count_method="model"` counts with the chat model's `get_num_tokens_from_messages` over the
system message and the messages instead: ctxviz reproduces ChatOpenAI's (model_count.py)
and says in one line why it cannot for other models (ChatAnthropic asks Anthropic's API).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session
from ...wording import noun
from ..base import Policy, params_dict
from .context_editing_columns import already_cleared, plan_columns, tool_label
from .counting import (
    APPROX,
    LCMessage,
    cached_view,
    count_view,
    lc_type,
    measure,
    summary_message_text,
    summary_view,
)
from .model_count import PRIMING, message_tokens, model_counter

VERSION = "langchain 1.5.0"
#: ContextEditingMiddleware's `token_count_method` values.
TOKEN_COUNT_METHODS = ("approximate", "model")
DEFAULT_TOOL_PLACEHOLDER = "[cleared]"


@dataclass(frozen=True)
class ClearToolUsesParams:
    trigger: int = field(default=100_000, metadata={"unit": "tokens", "help": "Token count above which tool results are cleared "
                                                    "(a negative one always fires, as in LangChain)", "step": 1000})
    clear_at_least: int = field(default=0, metadata={"help": "Stop clearing once this many tokens are reclaimed (0 or less: clear every candidate)", "step": 100})
    keep: int = field(default=3, metadata={"unit": "tool_results", "help": "Newest tool results that are never cleared; a negative "
                                            "keep is LangChain's slice candidates[:-keep]: keep=-1 clears only the first result", "max": 1000})
    clear_tool_inputs: bool = field(default=False, metadata={"help": "Also clear the call's arguments on the AI message"})
    exclude_tools: str = field(default="", metadata={"help": "Tool names never cleared, comma-separated"})
    placeholder: str = field(default=DEFAULT_TOOL_PLACEHOLDER, metadata={"help": "Text that replaces a cleared tool result"})
    token_count_method: str = field(default="approximate", metadata={
        "help": "'approximate': count_tokens_approximately over the messages (the system prompt is not counted); 'model': the chat "
                "model's get_num_tokens_from_messages over the system prompt and the messages, as ChatOpenAI counts it (OpenAI models)"})
    model: str = field(default="", metadata={"help": "The agent's chat model that token_count_method=model counts with (empty: the session's)"})

    def __post_init__(self) -> None:
        if self.token_count_method not in TOKEN_COUNT_METHODS:
            raise ValueError(f"token_count_method must be 'approximate' or 'model', got {self.token_count_method!r}")

    @property
    def needs_full_replay(self) -> bool:
        """`simulate` plans every prefix from scratch: its incremental replayer expects keep and trigger >= 0
        and the approximate count ctxviz caches per message."""
        return self.keep < 0 or self.trigger < 0 or self.token_count_method != "approximate"

    @property
    def excluded(self) -> frozenset[str]:
        return frozenset(t.strip() for t in self.exclude_tools.split(",") if t.strip())


def plan(session: Session, params: ClearToolUsesParams, counts: TokenCounts) -> Plan:
    """In columns where the count is a sum per message and only tool results change (context_editing_columns.py);
    else message by message."""
    return plan_columns(session, params, counts) or plan_records(session, params, counts)


def plan_records(session: Session, params: ClearToolUsesParams, counts: TokenCounts) -> Plan:
    """ClearToolUsesEdit step by step over the messages, one record each: what the columns are checked against."""
    tokenizer = counts.tokenizer
    messages = session.messages
    counter = model_counter(params.model or session.model) if params.token_count_method == "model" else None
    problems: dict[int, list[str]] = {}

    def count_one(view: LCMessage, message: Message | None = None, at: int | None = None) -> int:
        """count_tokens([message])'s share: the approximate count, or the model's without the reply's priming."""
        if counter is None:
            return count_view(view, tokenizer)
        return message_tokens(counter, view, message, problems.setdefault(at, []) if at is not None else None)

    own_tokens = counts.message_tokens if counter is None else [count_one(cached_view(m), m, m.index) for m in messages]
    # The model's count also holds the system message and the reply's priming; the approximate one neither.
    system_tokens = count_one(LCMessage("system", session.system_prompt, role="system")) if counter is not None and session.system_prompt else 0
    fixed = system_tokens + PRIMING if counter is not None else 0
    # Messages an earlier summary covers are not in the request; the summary is, as LangChain's
    # summary HumanMessage (it is never a tool result, nor an AI message a result could belong to).
    covered = {c for s in session.summaries for c in s.covers}
    summary_tokens = [count_one(summary_view(s.text)) for s in session.summaries]
    current = [0 if m.id in covered else t for m, t in zip(messages, own_tokens, strict=True)]
    tokens = fixed + sum(current) + sum(summary_tokens)
    types = ["" if m.id in covered else lc_type(m) for m in messages]
    views: dict[int, LCMessage] = {}
    cleared: dict[int, str] = {}
    inputs_cleared: dict[int, list[str]] = {}
    skipped: dict[int, str] = {}
    reclaimed = 0
    running = tokens  # count_tokens(messages) after each clearing: the approximate count is a sum per message
    fired = tokens > params.trigger
    candidates: list[int] = []
    stopped_at: int | None = None
    if fired:
        candidates = [i for i, t in enumerate(types) if t == "tool"]
        if params.keep >= len(candidates):
            candidates = []
        elif params.keep:
            candidates = candidates[: -params.keep]
        for idx in candidates:
            if already_cleared(messages[idx].raw):
                skipped[idx] = "kept: already cleared by an earlier edit (response_metadata.context_editing.cleared)"
                continue
            ai = next((j for j in range(idx - 1, -1, -1) if types[j] == "ai"), None)
            if ai is None:
                skipped[idx] = "kept: no AI message precedes it, so ClearToolUsesEdit skips it"
                continue
            tool_view = views.get(idx) or cached_view(messages[idx])
            ai_view = views.get(ai) or cached_view(messages[ai])
            call = next((c for c in ai_view.tool_calls if c.get("id") == tool_view.tool_call_id), None)
            if call is None:
                # LangChain looks only at the nearest preceding AI message for the call.
                skipped[idx] = f"kept: its call is not on the nearest preceding AI message (#{ai}), so ClearToolUsesEdit skips it"
                continue
            tool_name = tool_view.name or call["name"]
            if tool_name in params.excluded:
                skipped[idx] = f"kept: tool {tool_name!r} is in exclude_tools"
                continue
            views[idx] = tool_view._replace(content=params.placeholder)
            running -= current[idx]
            current[idx] = count_one(views[idx], messages[idx])
            running += current[idx]
            cleared[idx] = tool_name
            if params.clear_tool_inputs:
                calls = tuple({**c, "args": {}} if c.get("id") == tool_view.tool_call_id else c for c in ai_view.tool_calls)
                views[ai] = ai_view._replace(tool_calls=calls)
                running -= current[ai]
                current[ai] = count_one(views[ai], messages[ai])
                running += current[ai]
                inputs_cleared.setdefault(ai, []).append(tool_view.tool_call_id)
            if params.clear_at_least > 0:
                reclaimed = max(0, tokens - running)
                if reclaimed >= params.clear_at_least:
                    stopped_at = idx
                    break
    reclaimed = max(0, tokens - fixed - sum(current) - sum(summary_tokens))
    protected = set(i for i, t in enumerate(types) if t == "tool") - set(candidates)
    decisions: list[MessagePlan] = []
    context: list[dict[str, Any]] = []
    context_index: list[int | None] = []
    if session.system_prompt:
        context.append({"role": "system", "content": session.system_prompt})
        context_index.append(None)
    lead = next((m.index for m in messages if m.id not in covered and types[m.index] != "system"), len(messages))
    summary_plans = []
    for m in messages:
        i = m.index
        t = own_tokens[i]
        if i == lead:
            for k, summary in enumerate(session.summaries):
                context.append({"role": "user", "content": summary_message_text(summary.text)})
                context_index.append(None)
                summary_plans.append(SummaryPlan(k, summary_tokens[k], Decision.KEPT,
                                                 "kept: passed as LangChain's summary HumanMessage; only tool results are cleared", summary.text))
        if m.id in covered:
            decisions.append(MessagePlan(i, m.id, m.role, m.category, t, Decision.SUMMARIZED, "summarized",
                                         "summarized: an earlier summary replaced it; the summary is passed in its place", 0, "summarised"))
            continue
        code = "kept"  # skipped by ClearToolUsesEdit, or not a tool result
        if i in cleared:
            code = "cleared"
            decision, reason = Decision.REPLACED, (f"replaced: tool result cleared to {params.placeholder!r} ({tool_label(cleared[i])}): "
                                                  f"{tokens:,} tokens > trigger {params.trigger:,}, and "
                                                  + (f"it is older than the newest {params.keep}" if params.keep >= 0 else
                                                     f"it is among the first {-params.keep} (keep={params.keep})"))
        elif i in inputs_cleared:
            code = "inputs_cleared"
            decision, reason = Decision.TRUNCATED, f"truncated: clear_tool_inputs set the arguments of {', '.join(inputs_cleared[i])} to {{}}"
        elif i in skipped:
            decision, reason = Decision.KEPT, skipped[i]
        elif types[i] == "tool" and fired and i in protected:
            code = "fresh_tail"
            decision, reason = Decision.KEPT, (f"kept: among the newest {params.keep} tool results (keep={params.keep})" if params.keep >= 0 else
                                               f"kept: keep={params.keep} makes only the first {-params.keep:,} tool {noun(-params.keep, 'result')} candidates "
                                               "(LangChain slices candidates[:-keep])")
        elif types[i] == "tool" and fired and stopped_at is not None:
            decision, reason = Decision.KEPT, f"kept: clear_at_least={params.clear_at_least:,} was reached after #{stopped_at}"
        elif fired:
            decision, reason = Decision.KEPT, "kept: ClearToolUsesEdit only clears tool results"
        else:
            code = "under_trigger"
            decision, reason = Decision.KEPT, f"kept: the messages' {tokens:,} tokens are not above trigger {params.trigger:,}"
        decisions.append(MessagePlan(i, m.id, m.role, m.category, t, decision, "history", reason, current[i], code))
        item = m.to_openai()
        if i in views:
            view = views[i]
            if i in cleared:
                item["content"] = view.content
            if i in inputs_cleared:
                item["tool_calls"] = [{**c, "function": {**c["function"], "arguments": "{}"}} if c["id"] in inputs_cleared[i] else c
                                      for c in item.get("tool_calls", [])]
        context.append(item)
        context_index.append(i)
    if lead == len(messages):
        for k, summary in enumerate(session.summaries):
            context.append({"role": "user", "content": summary_message_text(summary.text)})
            context_index.append(None)
            summary_plans.append(SummaryPlan(k, summary_tokens[k], Decision.KEPT,
                                             "kept: passed as LangChain's summary HumanMessage; only tool results are cleared", summary.text))
    used = fixed + sum(current) + sum(summary_tokens)
    notes = []
    if session.summaries:
        notes.append(f"the session's {len(session.summaries):,} earlier {noun(len(session.summaries), 'summary', 'summaries')} {'is' if len(session.summaries) == 1 else 'are'} passed as LangChain's summary HumanMessage "
                     "in place of the messages they cover")
    if counter is not None:
        notes.append(f"token_count_method=model: counted as ChatOpenAI.get_num_tokens_from_messages counts for {counter.model} "
                     f"({counter.encoding}), with the system prompt ({system_tokens:,} tokens) and the reply's priming ({PRIMING})")
        notes += problem_notes(problems)
    elif session.system_prompt:
        notes.append("the system prompt is sent but not counted: it is not among the request's messages, which the approximate counter counts")
    if fired:
        notes.append(f"{tokens:,} tokens > trigger {params.trigger:,}: cleared {len(cleared):,} tool {noun(len(cleared), 'result')}, reclaiming {reclaimed:,} tokens")
    out = tuple(decisions)
    sent = [m for m in out if m.sent]
    totals = Totals(budget=params.trigger, used=used, kept=sum(m.tokens for m in sent), dropped=sum(m.tokens for m in out if not m.sent),
                    fits=used <= params.trigger, kept_messages=len(sent), dropped_messages=len(out) - len(sent))
    return Plan(
        policy="langchain-context-editing", params=params_dict(params),
        tokenizer=counts.scheme.label if counter is None else f"chatopenai-message/{counter.encoding}",
        allocation={"summary": min(sum(summary_tokens), params.trigger), "history": params.trigger - min(sum(summary_tokens), params.trigger)},
        usage={"summary": sum(summary_tokens), "history": used - sum(summary_tokens)}, system_prompt=session.system_prompt, messages=out,
        context=tuple(context), context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans),
        zones=("summarized", "history"), notes=tuple(notes),
        extra={"tokens_before": tokens, "fired": fired, "cleared_ids": [messages[i].id for i in sorted(cleared)],
               "cleared_tokens": reclaimed, "trimmed": bool(cleared)},
    )


def problem_notes(problems: dict[int, list[str]]) -> list[str]:
    """One note per thing ChatOpenAI's count raises on or cannot do offline, with the messages it concerns."""
    where: dict[str, list[int]] = {}
    for index, said in sorted(problems.items()):
        for problem in dict.fromkeys(said):
            where.setdefault(problem, []).append(index)
    return [f"{', '.join(f'#{i}' for i in indices[:10])}{' and more' if len(indices) > 10 else ''}: {problem}"
            for problem, indices in where.items()]


POLICY = Policy(
    reason_codes=("cleared", "inputs_cleared", "fresh_tail", "under_trigger", "kept", "summarised"),
    name="langchain-context-editing",
    schedule='ContextEditingMiddleware.wrap_model_call: on every model call',
    title="LangChain ContextEditingMiddleware (ClearToolUsesEdit)",
    params_type=ClearToolUsesParams,
    measure_name="langchain-approx-message",
    measure=measure,
    default_tokenizer=APPROX,
    plan=plan,
    # A pinned message a recorded summary covers (zone "summarized") is history, not the summary.
    zone_parts={"history": "history"},
    description="Above trigger tokens, replace all but the newest keep tool results with a placeholder, oldest first.",
    framework="LangChain",
    framework_version=VERSION,
    source="langchain/agents/middleware/context_editing.py ClearToolUsesEdit.apply",
    counter="count_tokens_approximately: ceil(characters / 4) + 3 per message, 85 per image",
    trigger=("trigger",),
    keep=("keep",),
)
