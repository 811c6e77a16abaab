"""LangChain's `trim_messages` (langchain_core/messages/utils.py, langchain-core 1.8.2).

`trim_messages(messages, max_tokens=..., token_counter=count_tokens_approximately,
strategy="last", allow_partial=False, end_on=None, start_on=None, include_system=False,
text_splitter=None)` keeps the longest prefix ("first") or suffix ("last") of the messages whose
count fits `max_tokens`, found by LangChain's own binary search; `allow_partial` then fits part
of the next message (first dropping whole content blocks, then whole pieces of its text as the
text splitter cuts it); `end_on` / `start_on` drop messages from the end / start until one of the
named types; `include_system` keeps a leading system message whatever it costs. ctxviz runs the
same steps on the messages LangChain would hold (`counting.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Session
from ...tokenizers import Tokenizer
from ...wording import noun
from ..base import Policy, params_dict
from .counting import (
    APPROX,
    SUMMARY_POS,
    TOKENS_PER_IMAGE,
    LCMessage,
    cached_view,
    chars_per_token,
    count_view,
    counted_text,
    measure,
    summary_view,
)
from .entries import Entry, base_type, parse_types, session_entries
from .trim_columns import SUMMARY_CUT, SUMMARY_SENT, missed_reason, plan_columns, unsent_covers

VERSION = "langchain-core 1.8.2"


ListCounter = Callable[[Sequence[Entry]], int]


def additive(entries: Sequence[Entry]) -> int:
    """count_tokens_approximately without usage scaling: the sum of the per-message counts."""
    return sum([e.tokens for e in entries])


def default_text_splitter(text: str) -> list[str]:
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def separator_splitter(separator: str) -> Callable[[str], list[str]]:
    """A text splitter of the default's shape on another separator (pieces keep it); `\\n` and
    `\\t` typed on a command line mean a newline and a tab."""
    separator = separator.replace("\\n", "\n").replace("\\t", "\t")
    if not separator:
        return default_text_splitter

    def split(text: str) -> list[str]:
        splits = text.split(separator)
        return [s + separator for s in splits[:-1]] + splits[-1:]
    return split


@dataclass
class TrimTrace:
    """Why each dropped entry went: the positions cut by end_on, by start_on, and by the budget."""

    end_on: set[int] = field(default_factory=set)
    start_on: set[int] = field(default_factory=set)
    budget: set[int] = field(default_factory=set)
    system_kept: int | None = None
    partial: int | None = None
    #: The first entry the budget could not take whole (the newest for 'last'): the cut.
    cut: int | None = None


def _first_max_tokens(messages: list[Entry], max_tokens: int, count: ListCounter, count_one: Callable[[LCMessage], int],
                      view_of: Callable[[int], LCMessage], text_splitter: Callable[[str], list[str]],
                      partial_strategy: str | None, end_on: Sequence[str], trace: TrimTrace, end_set: set[int]) -> list[Entry]:
    """utils._first_max_tokens, step for step; `end_set` collects what end_on removes."""
    messages = list(messages)
    if not messages:
        return messages
    if count(messages) <= max_tokens:
        if end_on:
            for _ in range(len(messages)):
                if messages[-1].type not in end_on:
                    end_set.add(messages.pop().pos)
                else:
                    break
        return messages
    left, right = 0, len(messages)
    for _ in range(len(messages).bit_length()):
        if left >= right:
            break
        mid = (left + right + 1) // 2
        if count(messages[:mid]) <= max_tokens:
            left = mid
        else:
            right = mid - 1
    idx = left
    if idx < len(messages):
        trace.cut = messages[idx].pos
    if partial_strategy and idx < len(messages):
        included_partial = False
        target = messages[idx]
        excluded = view_of(target.pos)
        if isinstance(excluded.content, list):
            content = list(excluded.content)
            num_block = len(content)
            if partial_strategy == "last":
                content = list(reversed(content))
            for _ in range(1, num_block):
                content = content[:-1]
                candidate = excluded._replace(content=content)
                entry = Entry(target.pos, count_one(candidate), target.type, candidate)
                if count([*messages[:idx], entry]) <= max_tokens:
                    messages = [*messages[:idx], entry]
                    idx += 1
                    included_partial = True
                    break
            if included_partial and partial_strategy == "last":
                content = list(reversed(content))
                entry = Entry(target.pos, count_one(excluded._replace(content=content)), target.type, excluded._replace(content=content))
                messages[idx - 1] = entry
            # LangChain keeps cutting the same copy: without a fit, one block is left (the last for "last").
            excluded = excluded._replace(content=content)
        if not included_partial:
            text: Any = None
            if isinstance(excluded.content, str):
                text = excluded.content
            elif isinstance(excluded.content, list) and excluded.content:
                for block in excluded.content:
                    if isinstance(block, str):
                        text = block
                        break
                    if isinstance(block, dict) and block.get("type") == "text":
                        text = block.get("text")
                        break
            if text:
                split_texts = text_splitter(text)
                base = count(messages[:idx])
                if partial_strategy == "last":
                    split_texts = list(reversed(split_texts))
                left, right = 0, len(split_texts)
                for _ in range(len(split_texts).bit_length()):
                    if left >= right:
                        break
                    mid = (left + right + 1) // 2
                    candidate = excluded._replace(content="".join(split_texts[:mid]))
                    if base + count([Entry(target.pos, count_one(candidate), target.type, candidate)]) <= max_tokens:
                        left = mid
                    else:
                        right = mid - 1
                if left > 0:
                    pieces = split_texts[:left]
                    if partial_strategy == "last":
                        pieces = list(reversed(pieces))
                    candidate = excluded._replace(content="".join(pieces))
                    messages = [*messages[:idx], Entry(target.pos, count_one(candidate), target.type, candidate)]
                    idx += 1
        if idx > 0 and messages[idx - 1].view is not None:
            trace.partial = messages[idx - 1].pos
    trace.budget.update(e.pos for e in messages[idx:] if e.pos != trace.partial)
    if end_on:
        for _ in range(idx):
            if idx > 0 and messages[idx - 1].type not in end_on:
                idx -= 1
                end_set.add(messages[idx].pos)
            else:
                break
    return messages[:idx]


def trim(entries: Sequence[Entry], *, max_tokens: int, count: ListCounter, count_one: Callable[[LCMessage], int],
         view_of: Callable[[int], LCMessage], strategy: str = "last", allow_partial: bool = False, end_on: Sequence[str] = (),
         start_on: Sequence[str] = (), include_system: bool = False,
         text_splitter: Callable[[str], list[str]] = default_text_splitter) -> tuple[list[Entry], TrimTrace]:
    """trim_messages: the entries it returns (a cut message carries its new `view`) and why the others went."""
    trace = TrimTrace()
    if start_on and strategy == "first":
        raise ValueError("start_on parameter is only valid with strategy='last'")
    if include_system and strategy == "first":
        raise ValueError("include_system parameter is only valid with strategy='last'")
    messages = list(entries)
    if strategy == "first":
        kept = _first_max_tokens(messages, max_tokens, count, count_one, view_of, text_splitter,
                                 "first" if allow_partial else None, end_on, trace, trace.end_on)
        return kept, trace
    if not messages:
        return [], trace
    if end_on:
        for _ in range(len(messages)):
            if messages[-1].type not in end_on:
                trace.end_on.add(messages.pop().pos)
            else:
                break
    system: Entry | None = None
    if include_system and messages and base_type(messages[0].type) == "system":  # isinstance(SystemMessage): chunks too
        system, messages = messages[0], messages[1:]
        trace.system_kept = system.pos
    remaining = max_tokens
    if system is not None:
        remaining = max(0, max_tokens - count([system]))
    kept = _first_max_tokens(messages[::-1], remaining, count, count_one, view_of, text_splitter,
                             "last" if allow_partial else None, start_on, trace, trace.start_on)
    result = kept[::-1]
    return ([system, *result] if system is not None else result), trace


#: `token_counter` values: LangChain's "approximate" (count_tokens_approximately) and `len`.
TOKEN_COUNTERS = ("approximate", "len")


@dataclass(frozen=True)
class TrimParams:
    max_tokens: float = field(default=4000, metadata={"unit": "tokens",
        "help": "Most tokens the trimmed history may count (LangChain requires it; no default there). Counts are whole, so a "
                "fraction acts as its floor and a negative value keeps nothing, as in LangChain", "step": 100})
    strategy: str = field(default="last", metadata={"help": "'last' keeps the newest messages, 'first' the oldest",
                                                     "choices": ("last", "first")})
    allow_partial: bool = field(default=False, metadata={
        "help": "Fit part of the next message: whole content blocks first, then pieces of its text"})
    end_on: str = field(default="", metadata={
        "help": "Message type(s) the result must end on, comma-separated (human, ai, system, tool, function, chat; a chunk's "
                "type is its class name, AIMessageChunk); empty: none"})
    start_on: str = field(default="", metadata={
        "help": "Message type(s) the result must start on (strategy 'last' only), comma-separated; empty: none"})
    include_system: bool = field(default=False, metadata={
        "help": "Always keep a leading system message (strategy 'last' only)"})
    text_splitter: str = field(default="", metadata={
        "help": "Separator the partial text is cut at, kept on each piece (\\n for a newline); empty: LangChain's default (newlines)"})
    token_counter: str = field(default="approximate", metadata={
        "help": "'approximate': count_tokens_approximately; 'len': token_counter=len, every message counts 1 (max_tokens is then "
                "a number of messages)", "choices": TOKEN_COUNTERS})
    chars_per_token: float = field(default=4.0, metadata={
        "help": "count_tokens_approximately(chars_per_token=...): characters per token (with the approximate counter)", "step": 0.1})
    extra_tokens_per_message: float = field(default=3.0, metadata={
        "help": "count_tokens_approximately(extra_tokens_per_message=...): tokens added per message; a fraction is summed "
                "over the list and rounded up once", "step": 0.5})

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, float) and self.max_tokens.is_integer():
            object.__setattr__(self, "max_tokens", int(self.max_tokens))
        if self.strategy not in ("first", "last"):
            raise ValueError(f"strategy must be 'first' or 'last', got {self.strategy!r}")
        parse_types(self.end_on, "end_on")
        if parse_types(self.start_on, "start_on") and self.strategy == "first":
            raise ValueError("start_on is only valid with strategy='last' (LangChain raises the same)")
        if self.include_system and self.strategy == "first":
            raise ValueError("include_system is only valid with strategy='last' (LangChain raises the same)")
        if self.token_counter not in TOKEN_COUNTERS:
            raise ValueError(f"token_counter must be 'approximate' or 'len', got {self.token_counter!r}")
        if not self.chars_per_token > 0:
            raise ValueError(f"chars_per_token must be greater than 0, got {self.chars_per_token}")
        if self.extra_tokens_per_message < 0:
            raise ValueError(f"extra_tokens_per_message must be >= 0, got {self.extra_tokens_per_message}")

    @property
    def default_counter(self) -> bool:
        """count_tokens_approximately with its defaults: per-message counts add up (ctxviz's cached ones)."""
        return self.token_counter == "approximate" and self.chars_per_token == 4.0 and self.extra_tokens_per_message == 3.0

    @property
    def budget(self) -> int:
        """The whole-token bound the counts are held to: `count <= max_tokens` is `count <= floor(max_tokens)`."""
        return math.floor(self.max_tokens)

    @property
    def needs_full_replay(self) -> bool:
        """`simulate` plans every prefix from scratch: its incremental replayer adds cached counts against an integer budget."""
        return not self.default_counter or not isinstance(self.max_tokens, int) or self.max_tokens < 0


class Counter(NamedTuple):
    """A list token counter as trim_messages calls it, and each message's own count.

    With the approximate counter, `Entry.tokens` holds a message's characters / chars_per_token
    (rounded up) plus its images, and a list counts `ceil(sum + extra_tokens_per_message x n)`,
    as count_tokens_approximately accumulates; with `len` every entry is 1."""

    count: ListCounter
    one: Callable[[LCMessage], int]  # Entry.tokens of a message
    alone: Callable[[LCMessage], int]  # count([message])


def make_counter(params: TrimParams, tokenizer: Tokenizer) -> Counter:
    if params.token_counter == "len":
        return Counter(len, lambda _view: 1, lambda _view: 1)
    extra = params.extra_tokens_per_message
    chars = params.chars_per_token

    def one(view: LCMessage) -> int:
        text, images = counted_text(view)
        text_tokens = math.ceil(len(text) / chars) if chars_per_token(tokenizer) is not None else tokenizer.count(text)
        return text_tokens + TOKENS_PER_IMAGE * images

    def count(entries: Sequence[Entry]) -> int:
        return math.ceil(sum([e.tokens for e in entries]) + extra * len(entries))

    return Counter(count, one, lambda view: math.ceil(one(view) + extra))


def view_getter(session: Session) -> Callable[[int], LCMessage]:
    def view_of(pos: int) -> LCMessage:
        if pos == -1:
            return LCMessage("system", session.system_prompt, role="system")
        if pos <= SUMMARY_POS:
            return summary_view(session.summaries[SUMMARY_POS - pos].text)
        return cached_view(session.messages[pos])
    return view_of


def sent_content(view: LCMessage) -> Any:
    return view.content


def plan(session: Session, params: TrimParams, counts: TokenCounts) -> Plan:
    """The plan in columns where it can be (`trim_columns`), else LangChain's steps one by one."""
    fast = plan_columns(session, params, counts)
    return fast if fast is not None else plan_records(session, params, counts)



def plan_records(session: Session, params: TrimParams, counts: TokenCounts) -> Plan:
    """trim_messages step for step over one record per message: the reference `trim_columns` is
    checked against, and the plan of another counter or of allow_partial."""
    entries, prompt_tokens = session_entries(session, counts)
    tokenizer = counts.tokenizer
    view_of = view_getter(session)
    message_tokens: Sequence[int] = counts.message_tokens
    count: ListCounter = additive
    count_one: Callable[[LCMessage], int] = lambda v: count_view(v, tokenizer)  # noqa: E731
    if not params.default_counter:  # another counter: each entry recounted, lists counted as LangChain counts them
        counter = make_counter(params, tokenizer)
        entries = [e._replace(tokens=counter.one(view_of(e.pos))) for e in entries]
        count, count_one = counter.count, counter.one
        message_tokens = [counter.alone(cached_view(m)) for m in session.messages]
        prompt_tokens = counter.alone(view_of(-1)) if session.system_prompt else 0
    budget = max(0, params.budget)
    end_on, start_on = parse_types(params.end_on, "end_on"), parse_types(params.start_on, "start_on")
    kept, trace = trim(entries, max_tokens=params.budget, count=count, count_one=count_one,
                       view_of=view_of, strategy=params.strategy, allow_partial=params.allow_partial,
                       end_on=end_on, start_on=start_on, include_system=params.include_system,
                       text_splitter=separator_splitter(params.text_splitter))
    by_pos = {e.pos: e for e in kept}
    types_note = lambda names: " or ".join(repr(t) for t in names)  # noqa: E731
    side = "newest" if params.strategy == "last" else "oldest"
    decisions: list[MessagePlan] = []
    usage = {"system": 0, "history": 0}
    covered = {c for s in session.summaries for c in s.covers}
    cut_covers = unsent_covers(session, {k for k in range(len(session.summaries)) if SUMMARY_POS - k in by_pos})
    for m in session.messages:
        t = message_tokens[m.index]
        e = by_pos.get(m.index)
        zone = "system" if trace.system_kept == m.index else "history"
        if m.id in covered:
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.SUMMARIZED, "summarized",
                                         SUMMARY_CUT if m.id in cut_covers else SUMMARY_SENT, 0, "summarised"))
        elif e is not None and e.view is None:
            reason, code = (("kept: include_system keeps the leading system message whatever it costs", "system_prompt") if zone == "system"
                            else (f"kept: among the {side} messages that fit max_tokens={params.max_tokens:,} (strategy={params.strategy!r})", "fits"))
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, zone, reason, t, code))
        elif e is not None:
            cut = "its newest" if params.strategy == "last" else "its first"
            cut_tokens = count([e])
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.TRUNCATED, zone,
                                         f"truncated: allow_partial keeps {cut} content that fits ({cut_tokens:,} of {t:,} tokens)", cut_tokens,
                                         "truncated"))
        else:
            if m.index in trace.end_on:
                reason, code = f"dropped: end_on={params.end_on!r}: the result must end on a {types_note(end_on)} message", "start_rule"
            elif m.index in trace.start_on:
                reason, code = f"dropped: start_on={params.start_on!r}: the result must start on a {types_note(start_on)} message", "start_rule"
            elif m.index == trace.partial:
                reason, code = "dropped: allow_partial found no part of it that fits", "missed"
            elif m.index == trace.cut:  # the first message the budget could not take; the ones beyond go with it (one unbroken run is kept)
                reason, code = missed_reason(params.strategy, params.max_tokens), "missed"
            else:
                older = "older than" if params.strategy == "last" else "after"
                reason = f"dropped: {older} the {side} messages that fit max_tokens={params.max_tokens:,} (strategy={params.strategy!r})"
                code = "after_cut"
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.DROPPED, zone, reason, 0, code))
    notes: list[str] = []
    prompt_entry = by_pos.get(-1)
    context: list[dict[str, Any]] = []
    context_index: list[int | None] = []
    # The list as LangChain counts it (a fractional extra_tokens_per_message is rounded up once, over the list).
    usage["system"] = count([e for e in kept if e.pos == trace.system_kept])
    usage["history"] = count(kept) - usage["system"]
    for e in kept:
        if e.pos == -1:
            context.append({"role": "system", "content": e.view.content if e.view else session.system_prompt})
            context_index.append(None)
            continue
        if e.pos <= SUMMARY_POS:
            context.append({"role": "user", "content": (e.view or view_getter(session)(e.pos)).content})
            context_index.append(None)
            continue
        message = session.messages[e.pos]
        item = message.to_openai()
        if e.view is not None:
            item["content"] = sent_content(e.view)
        context.append(item)
        context_index.append(e.pos)
    if session.system_prompt:
        where = "kept" if prompt_entry is not None else "dropped"
        notes.append(f"the session's system prompt is passed first as a SystemMessage ({prompt_tokens:,} tokens): {where}")
    if params.allow_partial and trace.partial is None:
        notes.append("allow_partial: no message was cut (everything fit, or nothing of the next message fit)")
    summary_plans = []
    for k, summary in enumerate(session.summaries):
        pos = SUMMARY_POS - k
        entry = next(e for e in entries if e.pos == pos)
        got = by_pos.get(pos)
        if got is None:
            summary_plans.append(SummaryPlan(k, count([entry]), Decision.DROPPED, "dropped: trim_messages cut it like any message", summary.text))
        else:
            how = "kept" if got.view is None else f"truncated to {count([got]):,} tokens"
            summary_plans.append(SummaryPlan(k, count([entry]), Decision.KEPT if got.view is None else Decision.TRUNCATED,
                                             f"{how}: passed as LangChain's summary HumanMessage, trimmed like any message", summary.text))
    if session.summaries:
        notes.append(f"the session's {len(session.summaries):,} earlier {noun(len(session.summaries), 'summary', 'summaries')} {'is' if len(session.summaries) == 1 else 'are'} passed as LangChain's summary HumanMessage "
                     "in place of the messages they cover")
    messages = tuple(decisions)
    sent = [m for m in messages if m.sent]
    used = usage["system"] + usage["history"]
    system_allot = min(prompt_tokens if trace.system_kept == -1 else
                       (message_tokens[trace.system_kept] if trace.system_kept is not None else 0), budget)
    allocation = {"system": system_allot, "history": budget - system_allot}
    totals = Totals(budget=budget, used=used, kept=sum(m.tokens for m in sent), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=used <= budget, kept_messages=len(sent), dropped_messages=len(messages) - len(sent))
    if params.token_counter == "len":
        notes.append("token_counter=len: trim_messages counts messages, so max_tokens and every figure of this plan are numbers of messages")
    elif not params.default_counter:
        notes.append(f"count_tokens_approximately(chars_per_token={params.chars_per_token:g}, extra_tokens_per_message="
                     f"{params.extra_tokens_per_message:g}): a list counts ceil(its messages' characters / {params.chars_per_token:g}, "
                     f"each rounded up, + {params.extra_tokens_per_message:g} per message)")
    if params.max_tokens != budget:
        notes.append(f"max_tokens={params.max_tokens:g}: counts are whole numbers, so LangChain keeps what fits {budget:,}"
                     + (" (a negative max_tokens keeps nothing)" if params.max_tokens < 0 else ""))
    return Plan(
        policy="langchain-trim", params=params_dict(params), tokenizer=counts.scheme.label, allocation=allocation, usage=usage,
        system_prompt=session.system_prompt, messages=messages, context=tuple(context), context_index=tuple(context_index),
        totals=totals, summaries=tuple(summary_plans), zones=("system", "history", "summarized"), notes=tuple(notes),
        extra={"kept_ids": [session.messages[e.pos].id for e in kept if e.pos >= 0], "partial_index": trace.partial,
               "trimmed": len(sent) < len(messages)},
    )


def refresh(plan_: Plan, session: Session, counts: TokenCounts | None) -> Plan:
    """After ctxviz dropped messages from the plan (pair safety): the kept ids in `extra`."""
    kept = [session.messages[i].id for i in plan_.context_index if i is not None]
    return replace(plan_, extra={**plan_.extra, "kept_ids": kept})


POLICY = Policy(
    reason_codes=("system_prompt", "fits", "truncated", "missed", "after_cut", "start_rule", "summarised"),
    name="langchain-trim",
    schedule='trim_messages wherever the agent calls it: ctxviz replays it before each model call',
    title="LangChain trim_messages",
    params_type=TrimParams,
    measure_name="langchain-approx-message",
    measure=measure,
    default_tokenizer=APPROX,
    plan=plan,
    refresh=refresh,
    # A pinned message a recorded summary covers (zone "summarized") is history, not the prompt.
    zone_parts={"history": "history"},
    description="Keep the newest (or oldest) messages that fit max_tokens; optionally part of the next, start/end on given types, keep the system message.",
    framework="LangChain",
    framework_version=VERSION,
    source="langchain_core/messages/utils.py trim_messages",
    counter="count_tokens_approximately: ceil(characters / 4) + 3 per message, 85 per image",
    trigger=("max_tokens",),
    keep=("max_tokens",),
)
