"""AutoGen's model context as columns, and a plan from one decision per LLMMessage.

`messages.build_plan` builds a record, a reason sentence and a request dict for every message on
every re-plan. What it derives from the session alone (the LLMMessages and their counts, which
message is in which, the system part, the client's notes) is kept here per session and counts, so
a policy that decides per LLMMessage (TokenLimited pops a run from the middle) re-plans with a few
array operations; a message's reason is built when its row is read (engine/plan_rows.py).

tests/test_autogen_columns.py checks the plans against `build_plan`'s on random sessions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, SUMMARIZED, Columns, Rows
from ...session import Message, Session
from ...wording import noun
from ..base import params_dict
from ..common import history_with_summaries
from .messages import (
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    Unit,
    client_model,
    client_notes,
    divide,
    family_kind,
    model_context,
    model_family,
    passed_over,
    placeholder_tokens,
    source_name,
    spells_special_token,
    summary_tokens,
    system_over_note,
    system_part,
)

SYSTEM_REASON = "kept: a SystemMessage, which the agent prepends to what the model context returns"
SPECIAL_NOTE = ("a message spells a special token (such as <|endoftext|>): autogen-ext's count_tokens raises ValueError on it "
                "(tiktoken's disallowed special token); ctxviz counts it as plain text")
ZONE_NAMES = ("system", "context", "summarized")
SYSTEM_ZONE, CONTEXT_ZONE, SUMMARIZED_ZONE = range(3)
#: The codes every AutoGen plan has; a policy's own codes follow them (`unit_code` counts from 0 after these).
COMMON_CODES = ("system_prompt", "summarised")


class _Named:
    """A user message as AutoGen sends it: its chat form with the source `name` (built when read)."""

    __slots__ = ("message",)

    def __init__(self, message: Message) -> None:
        self.message = message

    def to_openai(self) -> dict[str, Any]:
        msg = self.message.to_openai()
        msg["name"] = source_name(self.message)
        return msg


@dataclass(frozen=True)
class ModelContext:
    """The session's model context as columns: what every plan of it shares, whatever the parameters."""

    units: tuple[Unit, ...]
    sizes: np.ndarray  # per unit: its count (3 per LLMMessage + its messages; a summary's SystemMessage)
    total: int
    kinds: tuple[str, ...]
    unit_first: np.ndarray  # per unit: its first message's index (-1 for a summary)
    unit_summary: np.ndarray  # per unit: the summary it sends (-1 for messages)
    entries: tuple[Any, ...]  # every unit's context entries, unit after unit
    entry_index: tuple[int | None, ...]
    entry_start: np.ndarray  # per unit (and one past the last): its first entry
    unit_of: np.ndarray  # per message: its unit (-1: a SystemMessage the agent prepends, or summarised)
    first_in_unit: np.ndarray  # per message: it opens its unit (and carries the unit's 3 tokens)
    outside: np.ndarray  # per message: a SystemMessage the agent prepends
    covered_by: np.ndarray  # per message: the recorded summary in its place (-1: none)
    superseded: frozenset[int]
    has_covered: bool  # a recorded summary covers a message of the file
    passed: np.ndarray  # messages Claude's transformers leave out, in order
    prompt: str
    system_tokens: int
    head: tuple[dict[str, Any], ...]  # the system prompt's entry
    notes: tuple[str, ...]  # the client's notes that do not depend on what is sent
    kind_note: tuple[str, ...]


def model_context_columns(session: Session, counts: TokenCounts, system_in_context: bool) -> ModelContext:
    """The session's `ModelContext`, derived once per session, counts and `system_in_context`."""
    return derived_from_counts(session, counts, ("autogen-context", system_in_context), lambda s, c: _derive(s, c, system_in_context))


def _derive(session: Session, counts: TokenCounts, system_in_context: bool) -> ModelContext:
    system, units = model_context(session, system_in_context)
    tokens = counts.message_tokens
    n = len(session.messages)
    sizes = np.fromiter((summary_tokens(session, u.summary, counts) if u.kind == "summary"
                         else TOKENS_PER_MESSAGE + sum(tokens[m.index] for m in u.messages) for u in units), dtype=np.int64, count=len(units))
    unit_of = np.full(n, -1, dtype=np.int64)
    first_in_unit = np.zeros(n, dtype=bool)
    entries: list[Any] = []
    entry_index: list[int | None] = []
    entry_start = np.zeros(len(units) + 1, dtype=np.int64)
    for p, u in enumerate(units):
        entry_start[p] = len(entries)
        if u.kind == "summary":
            entries.append({"role": "system", "content": session.summaries[u.summary].text})
            entry_index.append(None)
            continue
        for m in u.messages:
            unit_of[m.index] = p
            entries.append(_Named(m) if m.role == "user" else m)
            entry_index.append(m.index)
        first_in_unit[u.messages[0].index] = True
    entry_start[len(units)] = len(entries)
    outside = np.zeros(n, dtype=bool)
    outside[[m.index for m in system]] = True
    _entries, covered, superseded = history_with_summaries(session)
    covered_by = np.full(n, -1, dtype=np.int64)
    for m in session.system_and_history[1]:
        if m.id in covered:
            covered_by[m.index] = covered[m.id]
    prompt, system_tokens, _ = system_part(session, system, counts)
    kind = family_kind(model_family(client_model(session)))
    passed = np.array([m.index for u in units for m in u.messages if passed_over(m, kind)], dtype=np.int64)
    # client_notes with nothing sent: the notes that depend on the session alone, the family's note last.
    fixed = client_notes(session, [])
    kind_note = tuple(fixed[-1:]) if kind != "openai" else ()
    fixed = fixed[: len(fixed) - len(kind_note)]
    notes = ((SPECIAL_NOTE,) if spells_special_token(session) else ()) + tuple(fixed)
    return ModelContext(
        units=units, sizes=sizes, total=int(sizes.sum()), kinds=tuple(u.kind for u in units),
        unit_first=np.fromiter((u.first for u in units), dtype=np.int64, count=len(units)),
        unit_summary=np.fromiter((u.summary for u in units), dtype=np.int64, count=len(units)),
        entries=tuple(entries), entry_index=tuple(entry_index), entry_start=entry_start, unit_of=unit_of, first_in_unit=first_in_unit,
        outside=outside, covered_by=covered_by, superseded=superseded, has_covered=bool(covered), passed=passed, prompt=prompt, system_tokens=system_tokens,
        head=({"role": "system", "content": prompt},) if prompt else (), notes=notes, kind_note=kind_note)


class _Why:
    """Message i's reason, as `build_plan` words it: the policy says why for its LLMMessages."""

    def __init__(self, mc: ModelContext, unit_reason: Callable[[int], str], sent_summaries: frozenset[int]) -> None:
        self.mc, self.unit_reason, self.sent_summaries = mc, unit_reason, sent_summaries

    def __call__(self, i: int) -> str:
        mc = self.mc
        if mc.outside[i]:
            return SYSTEM_REASON
        k = int(mc.covered_by[i])
        if k >= 0:
            return (f"summarized: recorded summary #{k + 1} covers it"
                    + (" and is sent in its place" if k in self.sent_summaries else "; the summary itself is not sent"))
        return self.unit_reason(int(mc.unit_of[i]))


def _sent_runs(unit_sent: np.ndarray) -> list[tuple[int, int]]:
    """The runs [start, end) of sent units."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], unit_sent, [False])).astype(np.int8)))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def plan_from_units(name: str, session: Session, params: Any, counts: TokenCounts, mc: ModelContext, unit_sent: np.ndarray,
                    unit_code: np.ndarray, codes: Sequence[str], unit_reason: Callable[[int], str], budget: int, notes: Sequence[str],
                    extra: dict[str, Any], tools_tokens: int = 0, placeholder: tuple[int, str] | None = None) -> Plan:
    """`build_plan` for a policy that sends whole LLMMessages, in order: `unit_sent` says which,
    `unit_code` each one's code (a position in `codes`), `unit_reason(p)` the reason of unit p's
    messages; `placeholder` (position, text): a UserMessage named System inserted before the sent
    units from that position on (HeadAndTail's "Skipped N messages.")."""
    tokens = counts.token_array
    n = len(tokens)
    in_unit = mc.unit_of >= 0
    where = np.where(in_unit, mc.unit_of, 0)
    sent_units = unit_sent[where] & in_unit if len(unit_sent) else np.zeros(n, dtype=bool)
    covered = mc.covered_by >= 0
    decision = np.full(n, DROPPED, dtype=np.int8)
    decision[sent_units | mc.outside] = KEPT
    decision[covered] = SUMMARIZED
    code = (unit_code[where].astype(np.int16) + len(COMMON_CODES)) if len(unit_code) else np.zeros(n, dtype=np.int16)
    code[mc.outside] = 0
    code[covered] = 1
    zone = np.full(n, CONTEXT_ZONE, dtype=np.int16)
    zone[mc.outside] = SYSTEM_ZONE
    zone[covered] = SUMMARIZED_ZONE
    sent_tokens = np.where(sent_units, tokens + TOKENS_PER_MESSAGE * mc.first_in_unit, 0)
    sent_tokens[mc.outside] = tokens[mc.outside] + TOKENS_PER_MESSAGE
    sent_summaries = frozenset(mc.unit_summary[unit_sent & (mc.unit_summary >= 0)].tolist())
    columns = Columns(session, decision, tokens, sent_tokens, zone, ZONE_NAMES, code, (*COMMON_CODES, *codes),
                      partial(_reason, _Why(mc, unit_reason, sent_summaries)))

    context: tuple[Any, ...] = mc.head
    context_index: tuple[int | None, ...] = (None,) * len(mc.head)
    placeholder_entry: tuple[Any, ...] = ()
    placeholder_tokens_ = 0
    if placeholder is not None:
        placeholder_entry = ({"role": "user", "name": "System", "content": placeholder[1]},)
        placeholder_tokens_ = placeholder_tokens(placeholder[1], counts)
    for a, b in _sent_runs(unit_sent):
        if placeholder_entry and a >= placeholder[0]:  # type: ignore[index]
            context += placeholder_entry
            context_index += (None,)
            placeholder_entry = ()
        lo, hi = int(mc.entry_start[a]), int(mc.entry_start[b])
        context += mc.entries[lo:hi]
        context_index += mc.entry_index[lo:hi]
    summary_plans = []
    for k, summary in enumerate(session.summaries):
        if k in sent_summaries:
            decision_k, why = Decision.KEPT, "kept: a recorded summary, in the model context as a SystemMessage where the messages it covers were"
        elif k in mc.superseded:
            decision_k, why = Decision.DROPPED, "dropped: superseded by a later recorded summary, which covers every message of the file this one covers"
        else:
            decision_k, why = Decision.DROPPED, "dropped: a recorded summary (a SystemMessage where the messages it covers were) this context leaves out"
        summary_plans.append(SummaryPlan(k, summary_tokens(session, k, counts), decision_k, why, summary.text))
    if placeholder_entry:  # nothing sent after it
        context += placeholder_entry
        context_index += (None,)
    sent = sent_units | mc.outside
    kept_tokens = int(tokens[sent].sum())
    kept_messages = int(sent.sum())
    usage = {"system": mc.system_tokens, "messages": int(mc.sizes[unit_sent].sum()) + REPLY_PRIMING, "placeholder": placeholder_tokens_,
             "tools": tools_tokens}
    allocation = divide(budget, {"system": mc.system_tokens, "placeholder": placeholder_tokens_, "tools": tools_tokens})
    used = sum(usage.values())
    totals = Totals(budget=budget, used=used, kept=kept_tokens, dropped=int(tokens.sum()) - kept_tokens, fits=used <= budget,
                    kept_messages=kept_messages, dropped_messages=n - kept_messages)
    over = system_over_note(budget, used, mc.system_tokens)
    if over:
        notes = (*notes, over)
    skipped = mc.passed[sent_units[mc.passed]].tolist() if len(mc.passed) else []
    skipped_note = ((f"{len(skipped):,} empty or whitespace-only {noun(len(skipped), 'message')} (#{', #'.join(map(str, skipped[:5]))}) {'is' if len(skipped) == 1 else 'are'} left out of the request "
                     "by autogen-ext's Claude transformers (pass_message); count_tokens counts only their 3 tokens per message",) if skipped else ())
    return Plan(policy=name, params=params_dict(params), tokenizer=counts.scheme.label, allocation=allocation, usage=usage,
                system_prompt=mc.prompt, messages=Rows(columns), context=Context(context), context_index=context_index, totals=totals,
                summaries=tuple(summary_plans), zones=("system", "context") + (("summarized",) if mc.has_covered else ()),
                notes=(*notes, *mc.notes, *skipped_note, *mc.kind_note), extra=extra)


def _reason(why: _Why, i: int) -> str:
    return why(i)
