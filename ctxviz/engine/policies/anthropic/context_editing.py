"""Anthropic API context editing (beta `context-management-2025-06-27`), as documented at
docs.claude.com/en/docs/build-with-claude/context-editing (November 2025) and typed by the SDKs'
`BetaClearToolUses20250919Edit` / `BetaClearThinking20251015Edit` models.

Context editing runs on Anthropic's servers, before the prompt reaches the model, on every request;
the client keeps sending its full history. So each plan here is one request, judged afresh:

- `clear_tool_uses_20250919`: once the prompt exceeds `trigger` (default 100,000 input tokens; or
  a number of tool uses), the oldest tool results are cleared, keeping the newest `keep` tool uses
  (default 3); `exclude_tools` are never cleared; with `clear_tool_inputs` the tool calls' inputs
  go too; with `clear_at_least`, nothing is cleared unless at least that many tokens would be.
  A cleared result stays in the prompt as placeholder text that tells the model it was removed.
- `clear_thinking_20251015`: thinking blocks of all but the newest `keep` assistant turns are
  removed (a turn: the assistant's messages answering one user message, tool calls included) (default 1 turn, the API's behaviour even without the strategy; `all`
  keeps every one).

Clearing changes the prompt, so the cached prefix is invalid from the first cleared block on
(the docs say so, and recommend `clear_at_least` to make that worthwhile).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session, TextPart, ThinkingPart
from ...wording import noun
from ..base import Policy, params_dict
from ..common import base_system_prompt, tools_json
from . import columns
from .blocks import BETA, ToolUse, assistant_turns, measure_message, part_tokens, prompt_input_tokens, tool_uses  # noqa: F401 (their home before blocks.py)

DEFAULT_TRIGGER_INPUT_TOKENS = 100_000
DEFAULT_KEEP_TOOL_USES = 3
#: The docs say only that "placeholder text" replaces a cleared result, not which: ctxviz uses the
#: text LangChain's mirror of this strategy inserts (a parameter, so it can be changed).
DEFAULT_PLACEHOLDER = "[cleared]"
CONTEXT_WINDOW = 200_000


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


def parse_amount(name: str, text: str, kinds: tuple[str, ...]) -> tuple[str, int]:
    """`{type, value}` spelled `type:value` (or a bare number: the first type)."""
    raw = text.strip()
    kind, _, value = raw.partition(":") if ":" in raw else (kinds[0], "", raw)
    kind = kind.strip()
    if kind not in kinds:
        raise ValueError(f"{name}: type must be {' or '.join(kinds)} (spelled type:value, e.g. {kinds[0]}:100000), got {kind!r}")
    try:
        number = int(value.strip().replace(",", "").replace("_", ""))
    except ValueError:
        raise ValueError(f"{name}: value must be a whole number (spelled type:value, e.g. {kinds[0]}:100000), got {value.strip()!r}") from None
    if number < 0:
        raise ValueError(f"{name}: value must be >= 0, got {number}")
    return kind, number


def clear_tool_uses_trigger_level(params: ClearToolUses20250919, session: Session) -> int | None:
    kind, number = parse_amount("trigger", params.trigger, ("input_tokens", "tool_uses"))
    return number if kind == "input_tokens" else None


def clear_tool_uses_align(params: ClearToolUses20250919, session: Session, trigger_tokens: int | None, keep_messages: int | None,
                          keep_tokens: int | None) -> tuple[ClearToolUses20250919, list[str]]:
    """The API's own spelling: trigger {type: input_tokens, value: N}; it keeps tool uses, not messages or tokens."""
    skipped = [f"anthropic-clear-tool-uses: it keeps the newest tool uses ({params.keep}), not a number of {unit}"
               for unit, wanted in (("messages", keep_messages), ("tokens", keep_tokens)) if wanted is not None]
    return (replace(params, trigger=f"input_tokens:{trigger_tokens}") if trigger_tokens is not None else params), skipped


def clear_thinking_align(params: Any, session: Session, trigger_tokens: int | None, keep_messages: int | None,
                         keep_tokens: int | None) -> tuple[Any, list[str]]:
    skipped = ["anthropic-clear-thinking: it acts on every request (no trigger)"] if trigger_tokens is not None else []
    skipped += [f"anthropic-clear-thinking: it keeps thinking turns ({params.keep}), not a number of {unit}"
                for unit, wanted in (("messages", keep_messages), ("tokens", keep_tokens)) if wanted is not None]
    return params, skipped


@dataclass
class _Build:
    """What the two strategies share: the decisions and the prompt as sent."""

    session: Session
    counts: TokenCounts
    system_prompt: str
    system_tokens: int
    decisions: list[MessagePlan | None]
    summary_text: str = ""
    summary_tokens: int = 0
    covered: frozenset[str] = frozenset()

    def decide(self, m: Message, decision: Decision, zone: str, reason: str, code: str, sent: int | None = None) -> None:
        t = self.counts.message_tokens[m.index]
        sent_tokens = 0 if decision in (Decision.DROPPED, Decision.SUMMARIZED) else t if sent is None else sent
        self.decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, decision, zone, reason, sent_tokens, code)


def _start(session: Session, counts: TokenCounts) -> _Build:
    system_messages = [m for m in session.messages if m.role == "system"]
    system_prompt = base_system_prompt(session, system_messages)
    tools = tools_json(session)
    system_tokens = (counts.text(system_prompt) if system_prompt else 0) + (counts.text(tools) if tools else 0)
    build = _Build(session, counts, system_prompt, system_tokens, [None] * len(session.messages))
    for m in system_messages:
        build.decide(m, Decision.KEPT, "system", "kept: part of the system prompt, which context editing never clears", "system_prompt")
    if session.summaries:
        # The API edits what the client sends; a client that compacted sends its summary instead.
        summary = session.summaries[-1]
        build.summary_text, build.summary_tokens, build.covered = summary.text, counts.text(summary.text), frozenset(summary.covers)
        for m in session.messages:
            if m.id in build.covered and m.role != "system":
                build.decide(m, Decision.SUMMARIZED, "summarized", "summarized: the client sends its compaction summary in its place "
                                                                     "(the session's recorded summary), so the API never sees it",
                             "before_compaction")
    return build


def _finish(build: _Build, policy: str, params: Any, notes: list[str], extra: dict[str, Any], context_window: int,
            texts: dict[int, dict[str, Any]]) -> Plan:
    session, counts = build.session, build.counts
    for m in session.messages:
        if build.decisions[m.index] is None:
            build.decide(m, Decision.KEPT, "history", "kept: context editing leaves it as it is", "kept")
    messages = tuple(build.decisions)  # type: ignore[arg-type]
    history_used = sum(m.sent_tokens for m in messages if m.zone != "system")
    used = build.system_tokens + build.summary_tokens + history_used
    context: list[dict[str, Any]] = [{"role": "system", "content": build.system_prompt}]
    context_index: list[int | None] = [None]
    if build.summary_text:
        context.append({"role": "user", "content": build.summary_text})
        context_index.append(None)
    for m in session.messages:
        if m.role == "system" or m.id in build.covered:
            continue
        context.append(texts.get(m.index) or m.to_openai())
        context_index.append(m.index)
    sent = [m for m in messages if m.sent]
    allocation = {"system": build.system_tokens, "summary": build.summary_tokens,
                  "history": context_window - build.system_tokens - build.summary_tokens}
    usage = {"system": build.system_tokens, "summary": build.summary_tokens, "history": history_used}
    totals = Totals(budget=context_window, used=used, kept=sum(m.tokens for m in sent), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=used <= context_window, kept_messages=len(sent), dropped_messages=len(messages) - len(sent))
    summaries = tuple(SummaryPlan(i, build.summary_tokens if i == len(session.summaries) - 1 else 0,
                                  Decision.KEPT if i == len(session.summaries) - 1 else Decision.DROPPED,
                                  "kept: the client's latest summary, sent as a user message" if i == len(session.summaries) - 1
                                  else "dropped: the latest summary takes its place", s.text) for i, s in enumerate(session.summaries))
    return Plan(policy=policy, params=params_dict(params), tokenizer=counts.scheme.label, allocation=allocation, usage=usage, summaries=summaries,
                system_prompt=build.system_prompt, messages=messages, context=tuple(context), context_index=tuple(context_index),
                totals=totals, zones=("system", "summarized", "history"), notes=tuple(notes), extra=extra)


# -- clear_tool_uses_20250919 --------------------------------------------------------------------

@dataclass(frozen=True)
class ClearToolUses20250919:
    """The edit's fields as the API spells them; `{type, value}` objects are written `type:value`."""

    trigger: str = field(default=f"input_tokens:{DEFAULT_TRIGGER_INPUT_TOKENS}", metadata=_help(
        "When clearing starts: input_tokens:N (the prompt exceeds N tokens) or tool_uses:N"))
    keep: str = field(default=f"tool_uses:{DEFAULT_KEEP_TOOL_USES}", metadata=_help("The newest tool uses kept: tool_uses:N"))
    clear_at_least: str | None = field(default=None, metadata=_help("input_tokens:N: clear nothing unless at least N tokens would go"))
    exclude_tools: str = field(default="", metadata=_help("Tool names never cleared, comma separated"))
    clear_tool_inputs: str = field(default="false", metadata=_help("Clear the tool calls' inputs too: true, false, or tool names, comma separated"))
    placeholder: str = field(default=DEFAULT_PLACEHOLDER, metadata=_help("ctxviz option: the text a cleared result becomes (the docs do not give it)"))
    context_window: int = field(default=CONTEXT_WINDOW, metadata=_help("The model's context window (ctxviz draws it)", min=1, step=1000))

    def __post_init__(self) -> None:
        parse_amount("trigger", self.trigger, ("input_tokens", "tool_uses"))
        parse_amount("keep", self.keep, ("tool_uses",))
        if self.clear_at_least is not None and self.clear_at_least.strip():
            parse_amount("clear_at_least", self.clear_at_least, ("input_tokens",))
        if self.context_window < 1:
            raise ValueError(f"context_window must be >= 1, got {self.context_window}")

    @property
    def excluded(self) -> set[str]:
        return {t.strip() for t in self.exclude_tools.split(",") if t.strip()}

    def clears_input(self, tool: str) -> bool:
        value = self.clear_tool_inputs.strip()
        if value.lower() in ("true", "yes", "1"):
            return True
        if value.lower() in ("false", "no", "0", ""):
            return False
        return tool in {t.strip() for t in value.split(",")}


def plan_clear_tool_uses(session: Session, params: ClearToolUses20250919, counts: TokenCounts) -> Plan:
    """clear_tool_uses in columns (columns.py): nothing built per message on a re-plan."""
    trigger = parse_amount("trigger", params.trigger, ("input_tokens", "tool_uses"))
    _, keep = parse_amount("keep", params.keep, ("tool_uses",))
    at_least = parse_amount("clear_at_least", params.clear_at_least, ("input_tokens",))[1] if params.clear_at_least and params.clear_at_least.strip() else 0
    return columns.plan_clear_tool_uses(session, params, counts, trigger, keep, at_least, POLICY_TOOLS)


def plan_clear_tool_uses_records(session: Session, params: ClearToolUses20250919, counts: TokenCounts) -> Plan:
    """clear_tool_uses step by step, a record per message: the reference the column plan is checked
    against (tests/test_anthropic_columns.py)."""
    build = _start(session, counts)
    tokens = counts.message_tokens
    trigger_kind, trigger_value = parse_amount("trigger", params.trigger, ("input_tokens", "tool_uses"))
    _, keep = parse_amount("keep", params.keep, ("tool_uses",))
    at_least = parse_amount("clear_at_least", params.clear_at_least, ("input_tokens",))[1] if params.clear_at_least and params.clear_at_least.strip() else 0
    uses = [u for u in tool_uses(session) if u.call_message.id not in build.covered]
    input_tokens, source = prompt_input_tokens(session, counts, build.system_tokens)
    notes: list[str] = []
    texts: dict[int, dict[str, Any]] = {}
    measured = input_tokens if trigger_kind == "input_tokens" else len(uses)
    what = f"{input_tokens:,} input tokens ({source})" if trigger_kind == "input_tokens" else f"{len(uses):,} tool uses"
    fires = measured > trigger_value  # "once the prompt exceeds this threshold"
    placeholder_tokens = counts.text(params.placeholder)
    excluded = params.excluded
    eligible = [u for u in uses if u.call.name not in excluded]
    to_clear = eligible[: max(0, len(eligible) - keep)] if fires else []
    cleared_results = [u for u in to_clear if u.result is not None]
    cleared_inputs = [u for u in to_clear if params.clears_input(u.call.name)]
    freed = sum(max(0, tokens[u.result.index] - placeholder_tokens) for u in cleared_results if u.result is not None)
    freed += sum(part_tokens(u.call, counts.text) for u in cleared_inputs)
    applied = fires and bool(cleared_results or cleared_inputs) and freed >= at_least
    if fires and (cleared_results or cleared_inputs) and not applied:
        notes.append(f"not applied: clearing would free {freed:,} tokens, fewer than clear_at_least {at_least:,}")
    if not fires:
        notes.append(f"not triggered: {what} do not exceed the trigger {params.trigger}")
    extra: dict[str, Any] = {"beta": BETA, "input_tokens": input_tokens, "triggered": fires, "applied": applied,
                             "cleared_tool_uses": len(to_clear) if applied else 0, "cleared_input_tokens": freed if applied else 0}
    if applied:
        why = f"{what} exceed the trigger {params.trigger}"
        for u in cleared_results:
            assert u.result is not None
            build.decide(u.result, Decision.REPLACED, "history",
                         f"replaced: tool result cleared by clear_tool_uses_20250919 ({why}; it is older than the newest {keep} tool uses)",
                         "cleared", placeholder_tokens)
            texts[u.result.index] = {**u.result.to_openai(), "content": params.placeholder}
        by_message: dict[int, list[ToolUse]] = {}
        for u in cleared_inputs:
            by_message.setdefault(u.call_message.index, []).append(u)
        for index, group in by_message.items():
            m = session.messages[index]
            cut = sum(counts.text(u.call.arguments or "{}") - counts.text("{}") for u in group)
            build.decide(m, Decision.REPLACED, "history",
                         f"replaced: the input of {len(group):,} tool {noun(len(group), 'call')} cleared (clear_tool_inputs; {why})", "replaced",
                         max(0, tokens[index] - cut))
            sent = m.to_openai()
            ids = {u.call.id for u in group}
            sent["tool_calls"] = [{**c, "function": {**c["function"], "arguments": "{}"}} if c["id"] in ids else c for c in sent.get("tool_calls", [])]
            texts[index] = sent
        first = min([u.result.index for u in cleared_results if u.result is not None] + list(by_message))
        notes.append(f"clear_tool_uses_20250919 clears {len(to_clear):,} tool {noun(len(to_clear), 'use')}, about {freed:,} tokens ({why}); "
                     f"the newest {keep} are kept" + (f", and {', '.join(sorted(excluded))} never cleared" if excluded else ""))
        notes.append(f"clearing invalidates the cached prompt prefix from message #{first} on (Anthropic's docs); "
                     "clear_at_least makes each invalidation worth it")
        notes.append("the placeholder text is ctxviz's (the docs do not quote it); set placeholder to change it")
        extra["cache_invalidated_from"] = first
    for u in uses:
        if u.call.name in excluded and u.result is not None and build.decisions[u.result.index] is None:
            build.decide(u.result, Decision.KEPT, "history", f"kept: {u.call.name} is in exclude_tools, never cleared", "excluded_tool")
    kept_uses = eligible[len(to_clear):] if applied else []
    for u in kept_uses:
        if u.result is not None and build.decisions[u.result.index] is None:
            build.decide(u.result, Decision.KEPT, "history", f"kept: one of the newest {keep} tool uses", "fresh_tail")
    return _finish(build, POLICY_TOOLS, params, notes, extra, params.context_window, texts)


# -- clear_thinking_20251015 ---------------------------------------------------------------------

@dataclass(frozen=True)
class ClearThinking20251015:
    """`keep`: `thinking_turns:N` or `all`."""

    keep: str = field(default="thinking_turns:1", metadata=_help("Assistant turns whose thinking is kept: thinking_turns:N, or all"))
    context_window: int = field(default=CONTEXT_WINDOW, metadata=_help("The model's context window (ctxviz draws it)", min=1, step=1000))

    def __post_init__(self) -> None:
        if self.keep.strip().lower() != "all":
            _, n = parse_amount("keep", self.keep, ("thinking_turns",))
            if n < 1:
                raise ValueError(f"keep: thinking_turns must be at least 1 (or keep all), got {n}")
        if self.context_window < 1:
            raise ValueError(f"context_window must be >= 1, got {self.context_window}")


def plan_clear_thinking(session: Session, params: ClearThinking20251015, counts: TokenCounts) -> Plan:
    """clear_thinking in columns (columns.py): nothing built per message on a re-plan."""
    keep_all = params.keep.strip().lower() == "all"
    keep = 0 if keep_all else parse_amount("keep", params.keep, ("thinking_turns",))[1]
    return columns.plan_clear_thinking(session, params, counts, keep_all, keep, POLICY_THINKING)


def plan_clear_thinking_records(session: Session, params: ClearThinking20251015, counts: TokenCounts) -> Plan:
    """clear_thinking step by step, a record per message: the reference the column plan is checked
    against (tests/test_anthropic_columns.py)."""
    build = _start(session, counts)
    tokens = counts.message_tokens
    keep_all = params.keep.strip().lower() == "all"
    keep = 0 if keep_all else parse_amount("keep", params.keep, ("thinking_turns",))[1]
    # "Number of most recent assistant turns to keep thinking blocks for" (the SDK's BetaClearThinking20251015Edit)
    turns = [t for t in ([m for m in t if m.id not in build.covered] for t in assistant_turns(session)) if t]
    older = [] if keep_all else turns[: max(0, len(turns) - keep)]
    cleared_turns = [t for t in older if any(isinstance(p, ThinkingPart) for m in t for p in m.parts)]
    notes: list[str] = []
    texts: dict[int, dict[str, Any]] = {}
    freed = 0
    first: int | None = None
    for turn in cleared_turns:
        for m in turn:
            thinking = [p for p in m.parts if isinstance(p, ThinkingPart)]
            if not thinking:
                continue
            cut = sum(counts.text(p.text) for p in thinking)
            freed += cut
            first = m.index if first is None else first
            build.decide(m, Decision.TRUNCATED, "history",
                         f"truncated: its thinking cleared by clear_thinking_20251015 (only the newest {keep:,} assistant {noun(keep, 'turn')} {'keeps its' if keep == 1 else 'keep theirs'})",
                         "thinking_cleared", max(0, tokens[m.index] - cut))
            rest = [p for p in m.parts if not isinstance(p, ThinkingPart)]
            texts[m.index] = {**m.to_openai(), "content": "\n".join(p.text for p in rest if isinstance(p, TextPart)) or None}
    if cleared_turns:
        notes.append(f"clear_thinking_20251015 removes the thinking of {len(cleared_turns):,} older assistant {noun(len(cleared_turns), 'turn')}, about {freed:,} tokens")
        notes.append(f"clearing thinking invalidates the cached prompt prefix from message #{first} on (Anthropic's docs); keep: all preserves the cache")
    elif keep_all:
        notes.append("keep: all: every thinking block stays (the cache is preserved)")
    extra = {"beta": BETA, "cleared_thinking_turns": len(cleared_turns), "cleared_input_tokens": freed, "cache_invalidated_from": first}
    return _finish(build, POLICY_THINKING, params, notes, extra, params.context_window, texts)


POLICY_TOOLS = "anthropic-clear-tool-uses"
POLICY_THINKING = "anthropic-clear-thinking"
DOC = "docs.claude.com/en/docs/build-with-claude/context-editing"
COUNTER = ("the prompt's input tokens as the API reports them for the last call, plus that call's output and what came after; "
           "without usage, o200k_base as a stand-in (Anthropic's tokenizer is not public)")

POLICY = Policy(
    reason_codes=("system_prompt", "kept", "fresh_tail", "excluded_tool", "cleared", "replaced", "before_compaction"),
    name=POLICY_TOOLS,
    title="Anthropic API context editing: clear_tool_uses_20250919",
    params_type=ClearToolUses20250919,
    measure_name="anthropic-blocks",
    measure=measure_message,
    default_tokenizer="o200k_base",
    plan=plan_clear_tool_uses,
    zone_parts={"history": "history", "system": "system"},
    description="Server-side: once the prompt exceeds the trigger, older tool results become a placeholder; the newest 3 tool uses stay.",
    framework="Anthropic API",
    framework_version=f"{BETA} beta, docs of November 2025",
    source=f"{DOC} (clear_tool_uses_20250919); SDK BetaClearToolUses20250919Edit",
    counter=COUNTER,
    trigger=("trigger", "clear_at_least"),
    keep=("keep", "exclude_tools"),
    trigger_level=clear_tool_uses_trigger_level,
    trigger_count=lambda plan: int(plan.extra.get("input_tokens", plan.totals.used)),
    align=clear_tool_uses_align,
)

THINKING_POLICY = Policy(
    reason_codes=("system_prompt", "kept", "thinking_cleared", "before_compaction"),
    name=POLICY_THINKING,
    title="Anthropic API context editing: clear_thinking_20251015",
    params_type=ClearThinking20251015,
    measure_name="anthropic-blocks",
    measure=measure_message,
    default_tokenizer="o200k_base",
    plan=plan_clear_thinking,
    zone_parts={"history": "history", "system": "system"},
    description="Server-side: thinking blocks of all but the newest assistant turn(s) are removed.",
    framework="Anthropic API",
    framework_version=f"{BETA} beta, docs of November 2025",
    source=f"{DOC} (clear_thinking_20251015); SDK BetaClearThinking20251015Edit",
    counter=COUNTER,
    trigger=(),
    keep=("keep",),
    align=clear_thinking_align,
)
