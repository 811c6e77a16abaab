"""`ClearToolUsesEdit` decided in columns: the same plan as `context_editing.plan_records`.

With the approximate counter the request's count is a sum per message, so clearing a tool result
changes the count by the difference between the placeholder's count and the result's, and
everything the edit looks at besides the parameters depends on the session alone: which messages
are tool results, whether each was cleared before, the nearest AI message before it and whether its
call is there, the tool's name. That is kept per session and counting; a re-plan selects the
candidates, the ones not excluded, and (with clear_at_least) where the running sum of what
clearing reclaims first reaches it, in numpy, and builds reasons for the rows someone reads.

`clear_tool_inputs` (which rewrites AI messages one call at a time) and `token_count_method="model"`
are left to `plan_records`. tests/test_context_editing_columns.py checks the two against each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import KEPT, REPLACED, SUMMARIZED, Columns, Rows
from ...session import Message, Session
from ...wording import noun
from ..base import params_dict
from .counting import _record_data, cached_view, count_view, lc_type, summary_message_text, summary_view


class ClearParams(Protocol):
    """What this module reads of `context_editing.ClearToolUsesParams`."""

    trigger: int
    clear_at_least: int
    keep: int
    clear_tool_inputs: bool
    placeholder: str
    token_count_method: str

    @property
    def excluded(self) -> frozenset[str]: ...


def already_cleared(raw: Any) -> bool:
    """`response_metadata["context_editing"]["cleared"]` on a dumped ToolMessage."""
    found = _record_data(raw)
    if found is None:
        return False
    meta = found[1].get("response_metadata")
    entry = meta.get("context_editing") if isinstance(meta, dict) else None
    return bool(entry.get("cleared")) if isinstance(entry, dict) else False


def tool_label(name: str) -> str:
    return f"tool {name!r}" if name else "unnamed tool"


# What the edit finds at a tool result, before the parameters: clearable, or why it skips it.
CLEARABLE, ALREADY_CLEARED, NO_AI, NOT_ON_AI = range(4)
SUMMARY_KEPT = "kept: passed as LangChain's summary HumanMessage; only tool results are cleared"


@dataclass(frozen=True)
class _Request:
    """The request's messages as ClearToolUsesEdit sees them, from the session and its counts alone."""

    covered: np.ndarray  # per message: an earlier summary replaced it (not in the request)
    current: np.ndarray  # per message: its count in the request (0: covered)
    tools: np.ndarray  # positions of the tool results in the request, oldest first
    state: np.ndarray  # per tool result: CLEARABLE, ALREADY_CLEARED, NO_AI or NOT_ON_AI
    ai: tuple[int | None, ...]  # per tool result: the nearest AI message before it
    names: tuple[str, ...]  # per tool result: the tool's name (its own, else its call's)
    name_codes: np.ndarray  # per tool result: its name's position in `distinct`
    distinct: tuple[str, ...]
    summary_tokens: tuple[int, ...]
    lead: int  # where the summaries go: before the first message in the request that is no system message
    tool_at: dict[int, int]  # a tool result's position in `tools`
    #: The placeholder's count in each tool result, per placeholder asked for.
    cleared_counts: dict[str, np.ndarray]


def _request(session: Session, counts: TokenCounts) -> _Request:
    return derived_from_counts(session, counts, "langchain-context-editing", _make_request)


def _make_request(session: Session, counts: TokenCounts) -> _Request:
    messages = session.messages
    covered_ids = {c for s in session.summaries for c in s.covers}
    n = len(messages)
    covered = (np.fromiter((i in covered_ids for i in session.message_columns[0]), dtype=bool, count=n) if covered_ids
               else np.zeros(n, dtype=bool))
    types = ["" if covered[m.index] else lc_type(m) for m in messages]
    tools = [i for i, t in enumerate(types) if t == "tool"]
    state: list[int] = []
    ais: list[int | None] = []
    names: list[str] = []
    last_ai: int | None = None
    at = 0
    for i, t in enumerate(types):
        if t == "ai":
            last_ai = i
        if at < len(tools) and tools[at] == i:
            at += 1
            ais.append(last_ai)
            name = ""
            if already_cleared(messages[i].raw):
                state.append(ALREADY_CLEARED)
            elif last_ai is None:
                state.append(NO_AI)
            else:
                tool_view = cached_view(messages[i])
                call = next((c for c in cached_view(messages[last_ai]).tool_calls if c.get("id") == tool_view.tool_call_id), None)
                if call is None:
                    state.append(NOT_ON_AI)
                else:
                    state.append(CLEARABLE)
                    name = tool_view.name or call["name"]
            names.append(name)
    distinct = tuple(dict.fromkeys(names))
    where = {name: k for k, name in enumerate(distinct)}
    tokens = counts.token_array
    made = _Request(covered, np.where(covered, 0, tokens), np.array(tools, dtype=np.int64), np.array(state, dtype=np.int8), tuple(ais),
                    tuple(names), np.fromiter((where[name] for name in names), dtype=np.int32, count=len(names)), distinct,
                    tuple(count_view(summary_view(s.text), counts.tokenizer) for s in session.summaries),
                    next((m.index for m in messages if not covered[m.index] and types[m.index] != "system"), n),
                    {t: k for k, t in enumerate(tools)}, {})
    return made


def _cleared_counts(session: Session, request: _Request, placeholder: str, counts: TokenCounts) -> np.ndarray:
    """Each tool result's count once its content is the placeholder (kept per placeholder)."""
    found = request.cleared_counts.get(placeholder)
    if found is None:
        messages, tokenizer = session.messages, counts.tokenizer
        found = request.cleared_counts[placeholder] = np.fromiter(
            (count_view(cached_view(messages[i])._replace(content=placeholder), tokenizer) for i in request.tools.tolist()),
            dtype=np.int64, count=len(request.tools))
    return found


class Cleared:
    """A tool result sent with its content replaced by the placeholder: built when read (plan.Context)."""

    __slots__ = ("message", "placeholder")

    def __init__(self, message: Message, placeholder: str) -> None:
        self.message, self.placeholder = message, placeholder

    def to_openai(self) -> dict[str, Any]:
        return {**self.message.to_openai(), "content": self.placeholder}


_ZONES = ("history", "summarized")
_CODES = ("kept", "cleared", "fresh_tail", "under_trigger", "summarised")
K_KEPT, K_CLEARED, K_FRESH, K_UNDER, K_SUMMARISED = range(len(_CODES))
class _Why:
    """The reason sentence of message i, as `plan_records` words it."""

    def __init__(self, params: ClearParams, request: _Request, code: np.ndarray, examined: int, tokens: int, stopped_at: int | None) -> None:
        self.params, self.request, self.code, self.examined = params, request, code, examined
        self.tokens, self.stopped_at = tokens, stopped_at

    def __call__(self, i: int) -> str:
        p, code, r = self.params, self.code[i], self.request
        if code == K_SUMMARISED:
            return "summarized: an earlier summary replaced it; the summary is passed in its place"
        if code == K_CLEARED:
            return (f"replaced: tool result cleared to {p.placeholder!r} ({tool_label(r.names[r.tool_at[i]])}): "
                    f"{self.tokens:,} tokens > trigger {p.trigger:,}, and "
                    + (f"it is older than the newest {p.keep}" if p.keep >= 0 else f"it is among the first {-p.keep} (keep={p.keep})"))
        if code == K_FRESH:
            return (f"kept: among the newest {p.keep} tool results (keep={p.keep})" if p.keep >= 0 else
                    f"kept: keep={p.keep} makes only the first {-p.keep:,} tool {noun(-p.keep, 'result')} candidates (LangChain slices candidates[:-keep])")
        if code == K_UNDER:
            return f"kept: the messages' {self.tokens:,} tokens are not above trigger {p.trigger:,}"
        k = r.tool_at.get(i)
        if k is None:
            return "kept: ClearToolUsesEdit only clears tool results"
        if k >= self.examined:  # a candidate the edit never reached
            return f"kept: clear_at_least={p.clear_at_least:,} was reached after #{self.stopped_at}"
        state = int(r.state[k])  # a candidate it skipped
        if state == ALREADY_CLEARED:
            return "kept: already cleared by an earlier edit (response_metadata.context_editing.cleared)"
        if state == NO_AI:
            return "kept: no AI message precedes it, so ClearToolUsesEdit skips it"
        if state == NOT_ON_AI:
            return f"kept: its call is not on the nearest preceding AI message (#{r.ai[k]}), so ClearToolUsesEdit skips it"
        return f"kept: tool {r.names[k]!r} is in exclude_tools"


def plan_columns(session: Session, params: ClearParams, counts: TokenCounts) -> Plan | None:
    """The plan in columns, or None where only `plan_records` can say (clear_tool_inputs, the model's count)."""
    if params.clear_tool_inputs or params.token_count_method != "approximate":
        return None
    r = _request(session, counts)
    messages = session.messages
    n = len(messages)
    own = counts.token_array
    summary_total = sum(r.summary_tokens)
    tokens = int(r.current.sum()) + summary_total
    fired = tokens > params.trigger
    current = r.current
    code = np.full(n, K_KEPT if fired else K_UNDER, dtype=np.int16)
    stopped_at: int | None = None
    cleared = np.zeros(0, dtype=np.int64)
    examined = 0
    if fired:
        count = len(r.tools)
        if params.keep >= count:
            upto = 0
        elif params.keep:
            upto = len(range(count)[: -params.keep])
        else:
            upto = count
        code[r.tools[upto:]] = K_FRESH  # never candidates
        clearable = r.state[:upto] == CLEARABLE
        if params.excluded and clearable.any():
            excluded = [k for k, name in enumerate(r.distinct) if name in params.excluded]
            clearable &= ~np.isin(r.name_codes[:upto], excluded)
        chosen = np.flatnonzero(clearable)  # candidate numbers, oldest first
        after_counts = _cleared_counts(session, r, params.placeholder, counts)[chosen]
        cleared = r.tools[chosen]
        examined = upto  # the candidates the edit looked at
        if params.clear_at_least > 0 and len(chosen):
            # The edit stops after the first clearing that makes max(0, tokens - running) >= clear_at_least.
            reached = np.flatnonzero(np.cumsum(current[cleared] - after_counts) >= params.clear_at_least)
            if len(reached):
                last = int(reached[0])
                chosen, after_counts, cleared = chosen[: last + 1], after_counts[: last + 1], cleared[: last + 1]
                stopped_at = int(cleared[-1])
                examined = int(chosen[-1]) + 1
        if len(cleared):
            current = current.copy()
            current[cleared] = after_counts
            code[cleared] = K_CLEARED
    code[r.covered] = K_SUMMARISED
    decision = np.full(n, KEPT, dtype=np.int8)
    decision[cleared] = REPLACED
    decision[r.covered] = SUMMARIZED
    zone = r.covered.astype(np.int16)
    columns = Columns(session, decision, own, current, zone, _ZONES, code, _CODES,
                      partial(_reason, _Why(params, r, code, examined, tokens, stopped_at)))

    used = int(current.sum()) + summary_total
    reclaimed_total = max(0, tokens - used)
    context: list[Any] = []
    context_index: list[int | None] = []
    if session.system_prompt:
        context.append({"role": "system", "content": session.system_prompt})
        context_index.append(None)
    summary_entries = [{"role": "user", "content": summary_message_text(s.text)} for s in session.summaries]
    summary_plans = tuple(SummaryPlan(k, r.summary_tokens[k], Decision.KEPT, SUMMARY_KEPT, s.text) for k, s in enumerate(session.summaries))
    sent = _sent(session, counts)
    context += sent.head
    context_index += sent.head_index
    context += summary_entries
    context_index += [None] * len(summary_entries)
    if len(cleared):
        rest = sent.rest_array.copy()
        rest[sent.position[cleared]] = sent.cleared(session, r, params.placeholder)[chosen]
        context += rest.tolist()
    else:
        context += sent.rest
    context_index += sent.rest_index

    notes = []
    if session.summaries:
        notes.append(f"the session's {len(session.summaries):,} earlier {noun(len(session.summaries), 'summary', 'summaries')} {'is' if len(session.summaries) == 1 else 'are'} passed as LangChain's summary HumanMessage "
                     "in place of the messages they cover")
    if session.system_prompt:
        notes.append("the system prompt is sent but not counted: it is not among the request's messages, which the approximate counter counts")
    if fired:
        notes.append(f"{tokens:,} tokens > trigger {params.trigger:,}: cleared {len(cleared):,} tool {noun(len(cleared), 'result')}, reclaiming {reclaimed_total:,} tokens")
    sent_mask = ~r.covered
    kept = int(own[sent_mask].sum())
    kept_messages = int(sent_mask.sum())
    summary_allot = min(summary_total, params.trigger)
    ids = session.message_columns[0]
    return Plan(
        policy="langchain-context-editing", params=params_dict(params), tokenizer=counts.scheme.label,
        allocation={"summary": summary_allot, "history": params.trigger - summary_allot},
        usage={"summary": summary_total, "history": used - summary_total}, system_prompt=session.system_prompt, messages=Rows(columns),
        context=Context(context), context_index=tuple(context_index),
        totals=Totals(budget=params.trigger, used=used, kept=kept, dropped=int(own.sum()) - kept, fits=used <= params.trigger,
                      kept_messages=kept_messages, dropped_messages=n - kept_messages),
        summaries=summary_plans, zones=("summarized", "history"), notes=tuple(notes),
        extra={"tokens_before": tokens, "fired": fired, "cleared_ids": [ids[i] for i in sorted(cleared.tolist())],
               "cleared_tokens": reclaimed_total, "trimmed": bool(len(cleared))},
    )


@dataclass(frozen=True)
class _Sent:
    """The messages the request sends, in order, around where the summaries go: the same for every
    parameter (a tool result cleared is put in its place)."""

    head: tuple[Message, ...]
    head_index: tuple[int, ...]
    rest: tuple[Message, ...]
    rest_index: tuple[int, ...]
    position: np.ndarray  # per message: its position in `rest` (-1: not there)
    rest_array: np.ndarray  # `rest` as an object array, copied and changed where tool results are cleared
    #: Per placeholder, every tool result cleared to it (in the order of `_Request.tools`): made once,
    #: so a re-plan that clears 35,000 of them makes no object (and starts no garbage collection).
    by_placeholder: dict[str, np.ndarray] = field(default_factory=dict)

    def cleared(self, session: Session, r: _Request, placeholder: str) -> np.ndarray:
        found = self.by_placeholder.get(placeholder)
        if found is None:
            found = np.empty(len(r.tools), dtype=object)
            found[:] = [Cleared(session.messages[i], placeholder) for i in r.tools.tolist()]
            self.by_placeholder[placeholder] = found
        return found


def _sent(session: Session, counts: TokenCounts) -> _Sent:
    return derived_from_counts(session, counts, "langchain-context-editing sent", _make_sent)


def _make_sent(session: Session, counts: TokenCounts) -> _Sent:
    r = _request(session, counts)
    sent = np.flatnonzero(~r.covered).tolist()
    head = [i for i in sent if i < r.lead]
    rest = sent[len(head):]
    position = np.full(len(session.messages), -1, dtype=np.int64)
    position[rest] = np.arange(len(rest), dtype=np.int64)
    messages = session.messages
    rest_array = np.empty(len(rest), dtype=object)
    rest_array[:] = [messages[i] for i in rest]
    return _Sent(tuple(messages[i] for i in head), tuple(head), tuple(messages[i] for i in rest), tuple(rest), position, rest_array)


def _reason(why: _Why, i: int) -> str:
    return why(i)
