"""Codex's auto-compaction decided in columns: the same plan as `compaction.plan_records`.

What Codex holds (the instructions, the initial context, the summary in force and what it covers,
the live history, the user messages' texts, the last reported usage) depends on the session alone
and is derived once per session and counts. A plan then reads two prepared states (compaction
fires, or not), writes the few user messages a compaction keeps into a copy, and finds how many
items an overflowing compaction request drops with a binary search; the user messages kept and the
stand-in summary are kept for the last few parameters. Reasons are built for the rows someone reads.

tests/test_codex_columns.py checks it against `plan_records` on random sessions and parameters.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts, remember
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import KEPT, SUMMARIZED, TRUNCATED, Columns, Rows
from ...session import Message, Session, Summary
from ...wording import noun
from ..common import base_system_prompt
from .history import (
    CONTEXT_WINDOW_272K,
    EFFECTIVE_CONTEXT_WINDOW_PERCENT,
    SUMMARY_PREFIX,
    ZONES,
    _covered_messages,
    approx_token_count,
    initial_context,
    instruction_shares,
    leading_system_messages,
    newest_user_messages,
    reported_total,
    stand_in_summary,
    user_item_tokens,
    user_message_text,
)

POLICY_NAME = "codex-compaction"
CODES = ("system_prompt", "initial_context", "summarised", "before_compaction", "retained", "truncated", "since_compaction", "under_trigger")
(SYSTEM_PROMPT, INITIAL_CONTEXT, SUMMARISED, BEFORE_COMPACTION, RETAINED, TRUNCATED_CODE, SINCE_COMPACTION,
 UNDER_TRIGGER) = range(len(CODES))
#: The codes of a plan without an auto-compact limit (a model Codex does not know): nothing is under a trigger.
CODES_NO_LIMIT = (*CODES[:UNDER_TRIGGER], "kept")
SYSTEM_ZONE, INITIAL_ZONE, SUMMARIZED_ZONE, RETAINED_ZONE, _SUMMARY_ZONE, HISTORY_ZONE = range(len(ZONES))


#: Why a history item is sent whole, after the rollout's compaction or in a rollout that never compacted.
KEPT_SINCE = "kept: written after the rollout's last compaction; Codex sends the history whole until auto-compaction fires again"
KEPT_UNDER = "kept: Codex sends the whole history until auto-compaction fires"
KEPT_NO_LIMIT = "kept: Codex has no auto-compact limit for this model, so it sends the whole history"


class CompactionParams(Protocol):
    """What this module reads of `compaction.CodexCompaction`."""

    compact_user_message_max_tokens: int


@dataclass(frozen=True)
class _Retained:
    """The user messages a compaction keeps of some messages, at one token budget."""

    messages: np.ndarray
    texts: tuple[str, ...]
    sent: np.ndarray  # each one's item tokens
    truncated: np.ndarray  # sent cut short
    ids: list[str]
    tokens: int


@dataclass(frozen=True)
class _State:
    """Every message's decision, zone, code and tokens sent, before the retained user messages."""

    decision: np.ndarray
    zone: np.ndarray
    code: np.ndarray
    sent_tokens: np.ndarray


@dataclass
class _Held:
    """The session as Codex holds it, and what the last few parameters made of it."""

    system_prompt: str
    initial: list[Message]
    summary: Summary | None
    generated: bool
    history: list[Message]
    compacted: list[Message]
    live: list[Message]
    live_unique: bool  # no two live messages share an id (then kept_ids is a slice)
    instructions_tokens: int
    initial_tokens: int
    summary_tokens: int
    live_tokens: np.ndarray
    last_usage: Message | None
    reported: int | None  # the usage Codex starts from (None: its estimate)
    request_tokens: int | None
    head: tuple[Any, ...]  # the instructions' and the initial context's entries
    head_index: tuple[int | None, ...]
    live_entries: tuple[Message, ...]
    live_index: tuple[int, ...]
    quiet: _State  # compaction does not fire
    fired: _State  # it fires: the whole history summarised
    retained: OrderedDict[tuple[bool, int], _Retained] = field(default_factory=OrderedDict)
    summaries: OrderedDict[int, str] = field(default_factory=OrderedDict)


class RolloutParts(NamedTuple):
    """How Codex splits a rollout before it plans (both plans, step by step and in columns, read it)."""

    system_messages: list[Message]  # developer messages before the conversation: sent with the instructions
    system_prompt: str
    initial: list[Message]  # the initial context (environment, AGENTS.md) Codex re-sends after a compaction
    summary: Summary | None  # the latest compaction's
    covered: set[str]  # the ids it covers
    generated: bool  # ctxviz's stand-in (after SUMMARY_PREFIX), not one the rollout recorded
    history: list[Message]  # everything else, in order


def rollout_parts(session: Session) -> RolloutParts:
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
    return RolloutParts(system_messages, system_prompt, initial, summary, covered, generated, history)


def held_of(session: Session, counts: TokenCounts) -> _Held:
    return derived_from_counts(session, counts, POLICY_NAME, _derive)


def _derive(session: Session, counts: TokenCounts) -> _Held:
    tokens = counts.message_tokens
    n = len(tokens)
    system_messages, system_prompt, initial, summary, covered, generated, history = rollout_parts(session)
    compacted = [m for m in history if m.id in covered] if summary is not None else []
    live = [m for m in history if m.id not in covered]
    last_usage = next((m for m in reversed(session.messages) if m.role == "assistant" and reported_total(m) is not None), None)
    instructions_tokens = approx_token_count(system_prompt) if system_prompt else 0
    reported = request_tokens = None
    if last_usage is not None and not generated and (summary is None or last_usage.id not in covered):
        reported = reported_total(last_usage) or 0
        request_tokens = reported + sum(tokens[m.index] for m in history if m.id not in covered and m.index > last_usage.index)

    def state(fires: bool) -> _State:
        decision = np.full(n, KEPT, dtype=np.int8)
        zone = np.full(n, HISTORY_ZONE, dtype=np.int16)
        # A history item sent whole is there because nothing has compacted it: written after the
        # rollout's compaction, or, in a rollout that never compacted, under the trigger.
        code = np.full(n, SINCE_COMPACTION if summary is not None else UNDER_TRIGGER, dtype=np.int16)
        sent_tokens = np.array(tokens, dtype=np.int64)
        gone = [m.index for m in history] if fires else [m.index for m in history if m.id in covered]
        decision[gone], zone[gone], code[gone], sent_tokens[gone] = SUMMARIZED, SUMMARIZED_ZONE, SUMMARISED if fires else BEFORE_COMPACTION, 0
        shares = instruction_shares(session, system_messages, instructions_tokens)
        for m in system_messages:
            decision[m.index], zone[m.index], code[m.index], sent_tokens[m.index] = KEPT, SYSTEM_ZONE, SYSTEM_PROMPT, shares[m.index]
        for m in initial:
            decision[m.index], zone[m.index], code[m.index], sent_tokens[m.index] = KEPT, INITIAL_ZONE, INITIAL_CONTEXT, tokens[m.index]
        return _State(decision, zone, code, sent_tokens)

    head: tuple[Any, ...] = ({"role": "system", "content": system_prompt},) if system_prompt else ()
    return _Held(system_prompt, initial, summary, generated, history, compacted, live, len({m.id for m in live}) == len(live),
                 instructions_tokens, sum(tokens[m.index] for m in initial),
                 user_item_tokens(summary.text) if summary is not None else 0,
                 np.array([tokens[m.index] for m in live], dtype=np.int64), last_usage, reported, request_tokens,
                 head + tuple(initial), (None,) * len(head) + tuple(m.index for m in initial), tuple(live), tuple(m.index for m in live),
                 state(False), state(True))


def _retained(h: _Held, of_history: bool, max_tokens: int) -> _Retained:
    """retained_for: the user messages (newest first within max_tokens) of the compacted messages, or of the whole history."""
    chosen = newest_user_messages(h.history if of_history else h.compacted, max_tokens)
    messages = [m for m, _ in chosen]
    texts = tuple(text for _, text in chosen)
    sent = np.fromiter(map(user_item_tokens, texts), dtype=np.int64, count=len(texts))
    # Only the oldest kept can be cut (the selection keeps whole texts newer than it), so only its
    # text is compared with the message's.
    truncated = np.zeros(len(texts), dtype=bool)
    if texts:
        truncated[0] = texts[0] != user_message_text(messages[0])
    return _Retained(np.array([m.index for m in messages], dtype=np.int64), texts, sent, truncated, [m.id for m in messages], int(sent.sum()))


@dataclass
class _Why:
    """Message i's reason, as `plan_records` words it."""

    code: np.ndarray
    roles: tuple[str, ...]
    total: int
    limit: int | None
    generated: bool
    max_tokens: int

    def __call__(self, i: int) -> str:
        c = self.code[i]
        if c == SYSTEM_PROMPT:
            return "kept: a developer message, sent with the instructions (its tokens sent are its share of the instructions' count)"
        if c == INITIAL_CONTEXT:
            return "kept: initial context (instructions, AGENTS.md, environment), which Codex rebuilds after a compaction"
        if c == SUMMARISED:
            return f"summarized: Codex compacts when the last call's {self.total:,} tokens reach model_auto_compact_token_limit {self.limit:,}"
        if c == BEFORE_COMPACTION:
            return "summarized: replaced by the compaction summary" + (" (the compaction recorded in the rollout)" if not self.generated else "")
        if c == RETAINED:
            return f"kept: one of the newest user messages Codex keeps after compacting (within {self.max_tokens:,} tokens)"
        if c == TRUNCATED_CODE:
            return f"truncated: the oldest user message Codex keeps, cut to the tokens left of {self.max_tokens:,}"
        if self.roles[i] == "system":
            return "kept: a developer message written during the conversation, sent where Codex sent it"
        return KEPT_SINCE if c == SINCE_COMPACTION else KEPT_UNDER if self.limit is not None else KEPT_NO_LIMIT


def plan_columns(session: Session, params: CompactionParams, counts: TokenCounts, window: int | None, limit: int | None,
                 params_json: dict[str, Any]) -> Plan:
    h = held_of(session, counts)
    max_tokens = params.compact_user_message_max_tokens
    budget = window if window is not None else (session.context_window or CONTEXT_WINDOW_272K)
    notes: list[str] = []
    if window is None:
        notes.append(f"Codex does not know the model {session.model or '(none)'!r}: it has no context window, so it never auto-compacts "
                     f"(ctxviz draws a {budget:,}-token window; set model_context_window to compare)")
    summary = h.summary
    retained = (remember(h.retained, (False, max_tokens), partial(_retained, h, False, max_tokens))
                if summary is not None and h.generated else None)
    summary_text = summary.text if summary is not None else ""
    if h.reported is not None and h.last_usage is not None:
        total = h.reported
        source = f"the usage reported for message #{h.last_usage.index} (input with cached tokens, plus output)"
    else:
        total = (h.instructions_tokens + h.initial_tokens + (retained.tokens if retained is not None else 0) + h.summary_tokens
                 + int(h.live_tokens.sum()))
        source = "Codex's estimate of the history (JSON bytes / 4" + (", as after a compaction)" if h.generated else "; no usage reported)")

    fires = limit is not None and total >= limit and bool(h.live)
    new_summary = ""
    trimmed = 0
    if fires:
        assert limit is not None
        new_retained = remember(h.retained, (True, max_tokens), partial(_retained, h, True, max_tokens))
        # The compaction request is the history as held (instructions, initial context, the earlier summary and
        # its user messages, the live items); past the window Codex drops the oldest item and retries.
        sizes = ([h.instructions_tokens] if h.instructions_tokens else []) + [counts.message_tokens[m.index] for m in h.initial]
        sizes += retained.sent.tolist() if retained is not None else []
        sizes += [h.summary_tokens] if summary is not None else []
        ahead = len(sizes)  # the request's items before the live ones
        request = np.concatenate((np.array(sizes, dtype=np.int64), h.live_tokens))
        size = int(request.sum())
        if window is not None and size > window:
            # Drop from the front while over the window, keeping one item at least.
            dropped = np.zeros(len(request) + 1, dtype=np.int64)
            np.cumsum(request, out=dropped[1:])
            trimmed = min(int(np.searchsorted(dropped, size - window, side="left")), len(request) - 1)
        live_from = max(0, trimmed - ahead)
        new_summary = remember(h.summaries, (trimmed == 0, live_from), partial(_new_summary, session, h, trimmed, live_from))
        retained, summary_text = new_retained, new_summary
        notes.append(f"auto-compaction fires: {total:,} tokens ({source}) >= model_auto_compact_token_limit {limit:,}; the history becomes "
                     f"the initial context, {len(retained.ids):,} recent user {noun(len(retained.ids), 'message')} and the summary")
        notes.append("the summary text is ctxviz's offline stand-in (an extractive snapshot) after Codex's SUMMARY_PREFIX")
        if trimmed:
            notes.append(f"the compaction request overflows the {window:,}-token window: Codex trims the {trimmed:,} oldest {noun(trimmed, 'item')} from it "
                         "(\"Trimmed N older conversation item(s) before compacting\"), so the summary covers less")
    elif limit is not None:
        notes.append(f"no compaction: {total:,} tokens ({source}) are under model_auto_compact_token_limit {limit:,}")

    state = h.fired if fires else h.quiet
    decision, zone, code, sent_tokens = state.decision, state.zone, state.code, state.sent_tokens
    if retained is not None and len(retained.messages):
        decision, zone, code, sent_tokens = decision.copy(), zone.copy(), code.copy(), sent_tokens.copy()
        at = retained.messages
        decision[at] = np.where(retained.truncated, TRUNCATED, KEPT)
        zone[at] = RETAINED_ZONE
        code[at] = np.where(retained.truncated, TRUNCATED_CODE, RETAINED)
        sent_tokens[at] = retained.sent

    context = h.head
    context_index = h.head_index
    if retained is not None:
        context += tuple({"role": "user", "content": text} for text in retained.texts)
        context_index += tuple(retained.messages.tolist())
    summary_plans: list[SummaryPlan] = []
    sent_summary_tokens = 0
    if summary_text:
        sent_summary_tokens = user_item_tokens(summary_text)
        context += ({"role": "user", "content": summary_text},)
        context_index += (None,)
        reason = ("kept: the new compaction summary, a user message after the kept user messages" if fires
                  else "kept: the compaction summary, sent as a user message after the kept user messages")
        if fires and summary is not None:
            summary_plans.append(SummaryPlan(0, 0, Decision.SUMMARIZED, "summarized: absorbed by the new compaction", summary.text))
        summary_plans.append(SummaryPlan(len(session.summaries) - (0 if fires else 1), sent_summary_tokens, Decision.KEPT, reason, summary_text))
    if not fires:
        context += h.live_entries
        context_index += h.live_index

    tokens = counts.token_array
    n = len(tokens)
    why = _Why(code, session.message_columns[1], total, limit, h.generated, max_tokens)
    columns = Columns(session, decision, tokens, sent_tokens, zone, ZONES, code, CODES if limit is not None else CODES_NO_LIMIT,
                      partial(_reason, why))
    retained_sent = int(sent_tokens[zone == RETAINED_ZONE].sum())
    history_sent = int(sent_tokens[zone == HISTORY_ZONE].sum())
    instructions_tokens, initial_tokens = h.instructions_tokens, h.initial_tokens
    used = instructions_tokens + initial_tokens + retained_sent + sent_summary_tokens + history_sent
    allocation = {"instructions": instructions_tokens, "initial_context": initial_tokens, "retained_user": retained_sent, "summary": sent_summary_tokens,
                  "history": budget - instructions_tokens - initial_tokens - retained_sent - sent_summary_tokens}
    usage = {"instructions": instructions_tokens, "initial_context": initial_tokens, "retained_user": retained_sent, "summary": sent_summary_tokens,
             "history": history_sent}
    sent = decision != SUMMARIZED
    kept = int(tokens[sent].sum())
    kept_messages = int(sent.sum())
    totals = Totals(budget=budget, used=used, kept=kept, dropped=int(tokens.sum()) - kept, fits=used <= budget, kept_messages=kept_messages,
                    dropped_messages=n - kept_messages)
    request_tokens = h.request_tokens
    return Plan(
        policy=POLICY_NAME, params={**params_json, "model_context_window": window, "model_auto_compact_token_limit": limit},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=h.system_prompt, messages=Rows(columns),
        context=Context(context), context_index=context_index, totals=totals, summaries=tuple(summary_plans), zones=ZONES,
        notes=tuple(notes),
        extra={"total_usage_tokens": total, "token_source": "reported" if "reported" in source else "estimate",
               "auto_compact_token_limit": limit, "compacts": fires, "summary_text": new_summary, "trimmed_items": trimmed,
               "effective_context_window": (window * EFFECTIVE_CONTEXT_WINDOW_PERCENT) // 100 if window is not None else None,
               "retained_ids": list(retained.ids) if retained is not None else [],
               **({"request_tokens": request_tokens} if request_tokens is not None and not fires else {})},
    )


def _new_summary(session: Session, h: _Held, trimmed: int, live_from: int) -> str:
    """The stand-in summary of what the compaction request still holds.

    It reads every message the request holds, as Codex's model does: the snapshot keeps each
    section's last items in order of first appearance, so any earlier message can keep an item out
    (on the bench's 100,000-message session, the 12 values shown first appear among the first 850 of
    the 50,008 messages read). The first plan that compacts pays for the reading: about 6 us a
    message with the cycle collector paused, most of that plan when it is a re-plan (about 0.4 s for
    those 50,008 messages). It grows
    with the window, not the session: a 272,000-token window holds about 1,000 of the bench's
    messages (10-50 ms). It is not done before a plan compacts: reading every message in a first plan
    that does not compact would add 60-70 % to it; nor are readings kept by text, which would pay
    only where messages repeat (97 % of the bench's 50,008, 0-7 % of the real rollouts in
    tests/data/real/codex). Where the request holds live messages alone (no earlier summary, or its
    covers trimmed), what that reading yields is kept per session (stand_in.py): a later plan whose
    request starts within what was read takes a bisect per section, and one that starts earlier
    reads only the messages before it."""
    if h.live_unique and (trimmed > 0 or h.summary is None):
        # (imported here: the summarizer imports urllib, which ctxviz loads only to summarise)
        from .stand_in import suffix_snapshots

        return stand_in_summary([], suffix_snapshots(session, h.live).text(live_from))
    seen = _covered_messages(session, h.summary) if trimmed == 0 else []
    if h.live_unique:
        seen += h.live[live_from:]
    else:  # ids shared among live messages: Codex's request is matched by id, as plan_records matches it
        kept_ids = {m.id for m in h.live[live_from:]}
        seen += [m for m in h.live if m.id in kept_ids]
    return stand_in_summary(seen)


def _reason(why: _Why, i: int) -> str:
    return why(i)
