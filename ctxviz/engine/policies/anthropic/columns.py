"""Anthropic's context editing decided in columns: the same plans as `context_editing`'s step-by-step ones.

Both edits leave every message in place and rewrite a few: clear_thinking strips the thinking of
the older assistant turns, clear_tool_uses replaces the older tool results (and inputs) with a
placeholder. What a plan shares whatever the parameters (the system prompt, the client's summary,
which message is where in the request, the input tokens, the tool uses and assistant turns with
their counts) is derived once per session and counts; a re-plan writes the rewritten rows into
copies of the base columns and builds a rewritten request entry only when someone reads it.

tests/test_anthropic_columns.py checks both against `context_editing.plan_*_records`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import KEPT, REPLACED, SUMMARIZED, TRUNCATED, Columns, Rows
from ...session import Message, Session, TextPart, ThinkingPart
from ...wording import noun
from ..base import params_dict
from ..common import base_system_prompt, tools_json
from .blocks import BETA, assistant_turns, part_tokens, prompt_input_tokens, tool_uses

ZONES = ("system", "summarized", "history")
SYSTEM_ZONE, SUMMARIZED_ZONE, HISTORY_ZONE = range(3)
CODES = ("system_prompt", "kept", "before_compaction", "thinking_cleared", "cleared", "replaced", "excluded_tool", "fresh_tail")
SYSTEM_PROMPT, KEPT_CODE, BEFORE_COMPACTION, THINKING_CLEARED, CLEARED, INPUTS_CLEARED, EXCLUDED_TOOL, FRESH_TAIL = range(len(CODES))
_FIXED_REASONS = {
    SYSTEM_PROMPT: "kept: part of the system prompt, which context editing never clears",
    KEPT_CODE: "kept: context editing leaves it as it is",
    BEFORE_COMPACTION: "summarized: the client sends its compaction summary in its place (the session's recorded summary), so the API never sees it",
}


@dataclass(frozen=True)
class _Base:
    """Every plan's starting point: the prompt, the client's summary, and each message as sent unedited."""

    system_prompt: str
    system_tokens: int
    summary_text: str
    summary_tokens: int
    covered: frozenset[str]
    decision: np.ndarray
    zone: np.ndarray
    code: np.ndarray
    sent_tokens: np.ndarray
    head: tuple[Any, ...]
    entries: tuple[Any, ...]  # the request's messages after the head (the session's, unedited)
    entry_of: np.ndarray  # per message: its position in `entries` (-1: not sent as a message)
    context_index: tuple[int | None, ...]
    input_tokens: int
    input_source: str
    summaries: tuple[SummaryPlan, ...]


def base_of(session: Session, counts: TokenCounts) -> _Base:
    return _derived(session, counts, "base", _base)


def _derived(session: Session, counts: TokenCounts, what: str, make: Any) -> Any:
    return derived_from_counts(session, counts, ("anthropic-context-editing", what), make)


def _base(session: Session, counts: TokenCounts) -> _Base:
    """`context_editing._start` and the parts of `_finish` that do not depend on the edit."""
    tokens = counts.token_array
    n = len(tokens)
    system_messages = [m for m in session.messages if m.role == "system"]
    system_prompt = base_system_prompt(session, system_messages)
    tools = tools_json(session)
    system_tokens = (counts.text(system_prompt) if system_prompt else 0) + (counts.text(tools) if tools else 0)
    system = np.zeros(n, dtype=bool)
    system[[m.index for m in system_messages]] = True
    summary_text, summary_tokens, covered = "", 0, frozenset[str]()
    if session.summaries:
        summary = session.summaries[-1]
        summary_text, summary_tokens, covered = summary.text, counts.text(summary.text), frozenset(summary.covers)
    ids, roles, _categories = session.message_columns
    covered_mask = np.fromiter((i in covered for i in ids), dtype=bool, count=n) & ~system
    decision = np.where(covered_mask, np.int8(SUMMARIZED), np.int8(KEPT)).astype(np.int8)
    zone = np.full(n, HISTORY_ZONE, dtype=np.int16)
    zone[system] = SYSTEM_ZONE
    zone[covered_mask] = SUMMARIZED_ZONE
    code = np.full(n, KEPT_CODE, dtype=np.int16)
    code[system] = SYSTEM_PROMPT
    code[covered_mask] = BEFORE_COMPACTION
    sent_tokens = np.where(covered_mask, 0, tokens)
    head: tuple[Any, ...] = ({"role": "system", "content": system_prompt},)
    if summary_text:
        head += ({"role": "user", "content": summary_text},)
    in_request = ~(system | np.fromiter((i in covered for i in ids), dtype=bool, count=n))
    at = np.flatnonzero(in_request)
    entry_of = np.full(n, -1, dtype=np.int64)
    entry_of[at] = np.arange(len(at))
    messages = session.messages
    input_tokens, source = prompt_input_tokens(session, counts, system_tokens)
    last = len(session.summaries) - 1
    summaries = tuple(SummaryPlan(i, summary_tokens if i == last else 0, Decision.KEPT if i == last else Decision.DROPPED,
                                  "kept: the client's latest summary, sent as a user message" if i == last
                                  else "dropped: the latest summary takes its place", s.text) for i, s in enumerate(session.summaries))
    return _Base(system_prompt, system_tokens, summary_text, summary_tokens, covered, decision, zone, code, sent_tokens, head,
                 tuple(messages[i] for i in at.tolist()), entry_of, (None,) * len(head) + tuple(at.tolist()), input_tokens, source, summaries)


def _finish(base: _Base, session: Session, counts: TokenCounts, policy: str, params: Any, notes: list[str], extra: dict[str, Any],
            context_window: int, decision: np.ndarray, zone: np.ndarray, code: np.ndarray, sent_tokens: np.ndarray, reason: Any,
            entries: tuple[Any, ...]) -> Plan:
    """`context_editing._finish` over columns."""
    tokens = counts.token_array
    n = len(tokens)
    history_used = int(sent_tokens[zone != SYSTEM_ZONE].sum())
    used = base.system_tokens + base.summary_tokens + history_used
    sent = decision != SUMMARIZED
    kept = int(tokens[sent].sum())
    kept_messages = int(sent.sum())
    allocation = {"system": base.system_tokens, "summary": base.summary_tokens,
                  "history": context_window - base.system_tokens - base.summary_tokens}
    usage = {"system": base.system_tokens, "summary": base.summary_tokens, "history": history_used}
    totals = Totals(budget=context_window, used=used, kept=kept, dropped=int(tokens.sum()) - kept,
                    fits=used <= context_window, kept_messages=kept_messages, dropped_messages=n - kept_messages)
    columns = Columns(session, decision, tokens, sent_tokens, zone, ZONES, code, CODES, reason)
    return Plan(policy=policy, params=params_dict(params), tokenizer=counts.scheme.label, allocation=allocation, usage=usage,
                summaries=base.summaries, system_prompt=base.system_prompt, messages=Rows(columns), context=Context(base.head + entries),
                context_index=base.context_index, totals=totals, zones=ZONES, notes=tuple(notes), extra=extra)


# -- clear_thinking_20251015 ---------------------------------------------------------------------

class _ThinkingCleared:
    """An assistant message with its thinking removed, as the request sends it (built when read)."""

    __slots__ = ("message",)

    def __init__(self, message: Message) -> None:
        self.message = message

    def to_openai(self) -> dict[str, Any]:
        m = self.message
        rest = [p for p in m.parts if not isinstance(p, ThinkingPart)]
        return {**m.to_openai(), "content": "\n".join(p.text for p in rest if isinstance(p, TextPart)) or None}


@dataclass(frozen=True)
class _Turns:
    """The assistant turns the API sees, and the messages in them that carry thinking, in order."""

    turns: int
    thinking: np.ndarray  # the messages with thinking
    turn: np.ndarray  # each one's turn
    freed: np.ndarray  # freed[k]: the thinking tokens of the first k
    turns_before: np.ndarray  # turns_before[k]: how many turns the first k are in
    cleared_entries: tuple[Any, ...]  # the request's messages with every thinking cleared


def _turns(session: Session, counts: TokenCounts) -> _Turns:
    base = base_of(session, counts)
    turns = [t for t in ([m for m in t if m.id not in base.covered] for t in assistant_turns(session)) if t]
    thinking: list[int] = []
    turn: list[int] = []
    cut: list[int] = []
    for k, t in enumerate(turns):
        for m in t:
            parts = [p for p in m.parts if isinstance(p, ThinkingPart)]
            if parts:
                thinking.append(m.index)
                turn.append(k)
                cut.append(sum(counts.text(p.text) for p in parts))
    freed = np.zeros(len(cut) + 1, dtype=np.int64)
    np.cumsum(np.array(cut, dtype=np.int64), out=freed[1:])
    turn_array = np.array(turn, dtype=np.int64)
    turns_before = np.zeros(len(turn) + 1, dtype=np.int64)
    np.cumsum(np.diff(np.concatenate(([-1], turn_array))) > 0, out=turns_before[1:])
    cleared = list(base.entries)
    for i in thinking:
        cleared[int(base.entry_of[i])] = _ThinkingCleared(session.messages[i])
    return _Turns(len(turns), np.array(thinking, dtype=np.int64), turn_array, freed, turns_before, tuple(cleared))


class ClearThinkingParams(Protocol):
    keep: str
    context_window: int


def plan_clear_thinking(session: Session, params: ClearThinkingParams, counts: TokenCounts, keep_all: bool, keep: int, policy: str) -> Plan:
    """`context_editing.plan_clear_thinking_records`: the older turns' thinking messages are a prefix of them all."""
    base = base_of(session, counts)
    t = _derived(session, counts, "turns", _turns)
    cutoff = 0 if keep_all else max(0, t.turns - keep)
    k = int(np.searchsorted(t.turn, cutoff, side="left"))
    cleared_turns = int(t.turns_before[k])
    freed = int(t.freed[k])
    first = int(t.thinking[0]) if k else None
    decision, code, sent_tokens = base.decision.copy(), base.code.copy(), base.sent_tokens.copy()
    truncated = t.thinking[:k]
    decision[truncated] = TRUNCATED
    code[truncated] = THINKING_CLEARED
    sent_tokens[truncated] = np.maximum(0, counts.token_array[truncated] - np.diff(t.freed[: k + 1]))
    entries = base.entries
    if k:
        p = int(base.entry_of[int(t.thinking[k - 1])]) + 1
        entries = t.cleared_entries[:p] + entries[p:]
    notes: list[str] = []
    if cleared_turns:
        notes.append(f"clear_thinking_20251015 removes the thinking of {cleared_turns:,} older assistant {noun(cleared_turns, 'turn')}, about {freed:,} tokens")
        notes.append(f"clearing thinking invalidates the cached prompt prefix from message #{first} on (Anthropic's docs); keep: all preserves the cache")
    elif keep_all:
        notes.append("keep: all: every thinking block stays (the cache is preserved)")
    extra = {"beta": BETA, "cleared_thinking_turns": cleared_turns, "cleared_input_tokens": freed, "cache_invalidated_from": first}
    why = f"truncated: its thinking cleared by clear_thinking_20251015 (only the newest {keep:,} assistant {noun(keep, 'turn')} {'keeps its' if keep == 1 else 'keep theirs'})"
    return _finish(base, session, counts, policy, params, notes, extra, params.context_window, decision, base.zone, code, sent_tokens,
                   partial(_reason, code, {THINKING_CLEARED: why}), entries)


def _reason(code: np.ndarray, reasons: dict[int, Any], i: int) -> str:
    c = int(code[i])
    why = _FIXED_REASONS.get(c)
    if why is None:
        why = reasons[c]
    return why if isinstance(why, str) else why(i)


# -- clear_tool_uses_20250919 --------------------------------------------------------------------

class _ResultCleared:
    """A tool result replaced by the placeholder (built when read)."""

    __slots__ = ("message", "placeholder")

    def __init__(self, message: Message, placeholder: str) -> None:
        self.message, self.placeholder = message, placeholder

    def to_openai(self) -> dict[str, Any]:
        return {**self.message.to_openai(), "content": self.placeholder}


class _InputsCleared:
    """An assistant message whose named tool calls' inputs are cleared to {} (built when read)."""

    __slots__ = ("message", "ids")

    def __init__(self, message: Message, ids: frozenset[str]) -> None:
        self.message, self.ids = message, ids

    def to_openai(self) -> dict[str, Any]:
        sent = self.message.to_openai()
        sent["tool_calls"] = [{**c, "function": {**c["function"], "arguments": "{}"}} if c["id"] in self.ids else c for c in sent.get("tool_calls", [])]
        return sent


@dataclass(frozen=True)
class _Uses:
    """The tool uses the API sees (their call not summarised), as columns."""

    call_message: np.ndarray
    result: np.ndarray  # the result's message (-1: none)
    name: np.ndarray  # position in `names`
    names: tuple[str, ...]
    call_ids: tuple[str, ...]
    call_tokens: np.ndarray  # part_tokens of the call
    input_cut: np.ndarray  # what clearing its input saves


def _uses(session: Session, counts: TokenCounts) -> _Uses:
    base = base_of(session, counts)
    uses = [u for u in tool_uses(session) if u.call_message.id not in base.covered]
    names = tuple(dict.fromkeys(u.call.name for u in uses))
    where = {name: k for k, name in enumerate(names)}
    empty = counts.text("{}")
    return _Uses(np.fromiter((u.call_message.index for u in uses), dtype=np.int64, count=len(uses)),
                 np.fromiter((u.result.index if u.result is not None else -1 for u in uses), dtype=np.int64, count=len(uses)),
                 np.fromiter((where[u.call.name] for u in uses), dtype=np.int64, count=len(uses)), names, tuple(u.call.id for u in uses),
                 np.fromiter((part_tokens(u.call, counts.text) for u in uses), dtype=np.int64, count=len(uses)),
                 np.fromiter((counts.text(u.call.arguments or "{}") - empty for u in uses), dtype=np.int64, count=len(uses)))


class ClearToolUsesParams(Protocol):
    trigger: str
    keep: str
    placeholder: str
    context_window: int

    @property
    def excluded(self) -> set[str]: ...

    def clears_input(self, tool: str) -> bool: ...


def plan_clear_tool_uses(session: Session, params: ClearToolUsesParams, counts: TokenCounts, trigger: tuple[str, int], keep: int, at_least: int,
                         policy: str) -> Plan:
    """`context_editing.plan_clear_tool_uses_records`: the uses cleared are the oldest of those not excluded."""
    base = base_of(session, counts)
    u = _derived(session, counts, "uses", _uses)
    tokens = counts.token_array
    trigger_kind, trigger_value = trigger
    input_tokens, source = base.input_tokens, base.input_source
    uses = len(u.result)
    measured = input_tokens if trigger_kind == "input_tokens" else uses
    what = f"{input_tokens:,} input tokens ({source})" if trigger_kind == "input_tokens" else f"{uses:,} tool uses"
    fires = measured > trigger_value  # "once the prompt exceeds this threshold"
    placeholder_tokens = counts.text(params.placeholder)
    excluded = params.excluded
    excluded_name = np.array([name in excluded for name in u.names], dtype=bool)
    clears_input = np.array([params.clears_input(name) for name in u.names], dtype=bool)
    eligible = np.flatnonzero(~excluded_name[u.name]) if uses else np.zeros(0, dtype=np.int64)
    n_clear = max(0, len(eligible) - keep) if fires else 0
    to_clear = eligible[:n_clear]
    results = u.result[to_clear]
    cleared_results = results[results >= 0]
    cleared_inputs = to_clear[clears_input[u.name[to_clear]]]
    freed = int(np.maximum(0, tokens[cleared_results] - placeholder_tokens).sum()) + int(u.call_tokens[cleared_inputs].sum())
    applied = fires and bool(len(cleared_results) or len(cleared_inputs)) and freed >= at_least
    notes: list[str] = []
    if fires and (len(cleared_results) or len(cleared_inputs)) and not applied:
        notes.append(f"not applied: clearing would free {freed:,} tokens, fewer than clear_at_least {at_least:,}")
    if not fires:
        notes.append(f"not triggered: {what} do not exceed the trigger {params.trigger}")
    extra: dict[str, Any] = {"beta": BETA, "input_tokens": input_tokens, "triggered": fires, "applied": applied,
                             "cleared_tool_uses": n_clear if applied else 0, "cleared_input_tokens": freed if applied else 0}
    decision, zone, code, sent_tokens = base.decision.copy(), base.zone, base.code.copy(), base.sent_tokens.copy()
    entries = base.entries
    reasons: dict[int, Any] = {}
    messages = session.messages
    if applied:
        why = f"{what} exceed the trigger {params.trigger}"
        decision[cleared_results] = REPLACED
        zone = zone.copy()
        zone[cleared_results] = HISTORY_ZONE  # a result the client's summary covers too is still cleared
        code[cleared_results] = CLEARED
        sent_tokens[cleared_results] = placeholder_tokens
        reasons[CLEARED] = f"replaced: tool result cleared by clear_tool_uses_20250919 ({why}; it is older than the newest {keep} tool uses)"
        changed = list(entries)
        placed = base.entry_of[cleared_results]
        for at, r in zip(placed[placed >= 0].tolist(), cleared_results[placed >= 0].tolist(), strict=True):
            changed[at] = _ResultCleared(messages[r], params.placeholder)
        # The cleared inputs, grouped by the message that makes the calls (in the order they are first met).
        groups: dict[int, list[int]] = {}
        for use in cleared_inputs.tolist():
            groups.setdefault(int(u.call_message[use]), []).append(use)
        group_sizes: dict[int, int] = {}
        for index, group in groups.items():
            cut = int(u.input_cut[group].sum())
            decision[index] = REPLACED
            code[index] = INPUTS_CLEARED
            sent_tokens[index] = max(0, int(tokens[index]) - cut)
            group_sizes[index] = len(group)
            at = int(base.entry_of[index])
            if at >= 0:
                changed[at] = _InputsCleared(messages[index], frozenset(u.call_ids[g] for g in group))
        entries = tuple(changed)
        reasons[INPUTS_CLEARED] = partial(_inputs_reason, group_sizes, why)
        first = min(cleared_results.tolist() + list(groups))
        notes.append(f"clear_tool_uses_20250919 clears {n_clear:,} tool {noun(n_clear, 'use')}, about {freed:,} tokens ({why}); "
                     f"the newest {keep} are kept" + (f", and {', '.join(sorted(excluded))} never cleared" if excluded else ""))
        notes.append(f"clearing invalidates the cached prompt prefix from message #{first} on (Anthropic's docs); "
                     "clear_at_least makes each invalidation worth it")
        notes.append("the placeholder text is ctxviz's (the docs do not quote it); set placeholder to change it")
        extra["cache_invalidated_from"] = first
    # A result is kept for the first reason met: its tool excluded, else one of the newest tool uses.
    undecided = (code == KEPT_CODE)
    excluded_by: dict[int, str] = {}
    if excluded_name.any():
        for use in np.flatnonzero(excluded_name[u.name] & (u.result >= 0)).tolist():
            r = int(u.result[use])
            if undecided[r]:
                undecided[r] = False
                code[r] = EXCLUDED_TOOL
                excluded_by[r] = u.names[u.name[use]]
        reasons[EXCLUDED_TOOL] = partial(_excluded_reason, excluded_by)
    if applied:
        for r in u.result[eligible[n_clear:]].tolist():
            if r >= 0 and undecided[r]:
                undecided[r] = False
                code[r] = FRESH_TAIL
        reasons[FRESH_TAIL] = f"kept: one of the newest {keep} tool uses"
    return _finish(base, session, counts, policy, params, notes, extra, params.context_window, decision, zone, code, sent_tokens,
                   partial(_reason, code, reasons), entries)


def _inputs_reason(group_sizes: dict[int, int], why: str, i: int) -> str:
    return f"replaced: the input of {group_sizes[i]:,} tool {noun(group_sizes[i], 'call')} cleared (clear_tool_inputs; {why})"


def _excluded_reason(excluded_by: dict[int, str], i: int) -> str:
    return f"kept: {excluded_by[i]} is in exclude_tools, never cleared"
