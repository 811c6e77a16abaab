"""Gemini CLI's chat compression decided in columns: the same plan as `compression.plan_records`.

Most of a plan depends on the session alone (the Contents Gemini CLI holds, the last reported prompt
size, the history's estimate), and the rest on a few numbers: which function responses are
truncated and where the history splits depend only on the character budget of a truncated output
(`_max_chars`), and what is sent then only on that and on whether compression fires. So the
session's history is derived once per session and counts, the compression tried at a budget and
the messages' fate under it are kept for the last few budgets, and a re-plan after a parameter
change (a threshold, a limit) mostly reads them; reasons are built for the rows someone reads.

tests/test_gemini_columns.py checks it against `plan_records` on random sessions and parameters.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts, remember
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import KEPT, SUMMARIZED, TRUNCATED, Columns, Rows
from ...session import Message, Session, Summary
from ...wording import noun
from ..base import params_dict
from ..common import base_system_prompt
from .history import Content, build_contents, estimate_part, own_parts, text_content
from .service import (
    ACK_TEXT,
    COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET,
    COMPRESSION_PRESERVE_THRESHOLD,
    TOOL_OUTPUT_DIR,
    ZONES,
    Truncation,
    _content_length,
    _max_chars,
    _part_after,
    _part_owner,
    _summarized_before,
    find_compress_split_point,
    reported_prompt_tokens,
    stand_in_summary,
    token_limit,
    truncate_history_to_budget,
    truncated_part,
)

POLICY_NAME = "gemini-cli-compression"
CODES = ("system_prompt", "before_compaction", "summarised", "truncated", "new_message", "fresh_tail", "since_compaction", "under_trigger")
SYSTEM_PROMPT, BEFORE_COMPACTION, SUMMARISED, TRUNCATED_CODE, NEW_MESSAGE, FRESH_TAIL, SINCE_COMPACTION, UNDER_TRIGGER = range(len(CODES))
#: The codes of a plan whose prompt reached the threshold but did not compress (nothing to split
#: before, or a summary that would not be shorter): a message sent whole is not under the trigger.
CODES_OVER = (*CODES[:UNDER_TRIGGER], "kept")
SYSTEM_ZONE, SUMMARIZED_ZONE, _SUMMARY_ZONE, HISTORY_ZONE = range(len(ZONES))


class CompressionParams(Protocol):
    """What this module reads of `compression.GeminiCompression`."""

    compressionThreshold: float  # noqa: N815 (Gemini CLI's spelling)
    tokenLimit: int | None  # noqa: N815
    truncateToolOutputThreshold: int  # noqa: N815


class _Truncated:
    """A message whose function response is sent truncated (its chat form built when read)."""

    __slots__ = ("message", "output")

    def __init__(self, message: Message, output: str) -> None:
        self.message, self.output = message, output

    def to_openai(self) -> dict[str, Any]:
        msg = self.message.to_openai()
        msg["content"] = self.output
        return msg


@dataclass(frozen=True)
class _Attempt:
    """Compression tried at one character budget: its truncations, split point and new summary."""

    truncations: dict[tuple[int, int], Truncation]
    split: int
    summary_text: str = ""
    new_count: int = 0


@dataclass(frozen=True)
class _Outcome:
    """Every message's fate under one set of truncations, compressed at `split` or not."""

    decision: np.ndarray
    zone: np.ndarray
    code: np.ndarray
    sent_tokens: np.ndarray
    entries: tuple[Any, ...]
    context_index: tuple[int, ...]
    history_tokens: int
    compressed_ids: list[str]
    truncated_ids: list[str]


@dataclass
class _History:
    """The session as Gemini CLI holds it, and what was tried at the budgets seen so far."""

    system_prompt: str
    system_tokens: int
    system: list[Message]
    covered: list[Message]  # the history the recorded summary replaces
    summary: Summary | None
    held: list[Content]
    pending: Content | None
    reported: int | None
    last_with_usage: Message | None
    estimate: float  # the held Contents' estimate, before any truncation
    upto: int | None  # the last Content the outputs truncated with the summary reach
    splittable: list[bool]
    last_is_plain_model: bool
    summary_truncations: OrderedDict[int, tuple[dict[tuple[int, int], Truncation], float]] = field(default_factory=OrderedDict)
    attempts: OrderedDict[int, _Attempt] = field(default_factory=OrderedDict)
    outcomes: OrderedDict[tuple[Any, ...], _Outcome] = field(default_factory=OrderedDict)


def history_of(session: Session, counts: TokenCounts) -> _History:
    return derived_from_counts(session, counts, POLICY_NAME, _derive)


def _derive(session: Session, counts: TokenCounts) -> _History:
    system_messages = [m for m in session.messages if m.role == "system"]
    history = [m for m in session.messages if m.role != "system"]
    system_prompt = base_system_prompt(session, system_messages)
    call_names = {c.id: c.name for m in history for c in m.tool_calls if c.id}
    summary = session.summaries[-1] if session.summaries else None
    covered = set(summary.covers) if summary is not None else set()
    rest = [m for m in history if m.id not in covered]
    contents = build_contents(rest, call_names)
    prefix = [text_content("user", summary.text), text_content("model", ACK_TEXT)] if summary is not None else []
    # The request being sent (a user message or function responses) joins the history after compression.
    pending = contents.pop() if contents and contents[-1].role == "user" else None
    held: list[Content] = prefix + contents
    upto = None
    if summary is not None and summary.held_until:
        if summary.held_until in [m.id for c in held for m in c.messages]:
            upto = next(i for i, c in enumerate(held) if any(m.id == summary.held_until for m in c.messages))
    last_with_usage = next((m for m in reversed(history) if m.role == "assistant" and reported_prompt_tokens(m) is not None), None)
    reported = reported_prompt_tokens(last_with_usage) if summary is None and last_with_usage is not None else None
    last = held[-1] if held else None
    return _History(system_prompt, counts.text(system_prompt) if system_prompt else 0, system_messages, [m for m in history if m.id in covered],
                    summary, held, pending, reported, last_with_usage, sum(c.estimate for c in held), upto,
                    [c.role == "user" and not c.has_function_response for c in held],
                    last is not None and last.role == "model" and not last.has_function_call)


def _summary_truncations(h: _History, max_chars: int) -> tuple[dict[tuple[int, int], Truncation], float]:
    """The outputs Gemini CLI truncated when it wrote the summary (they stay truncated), and what that saves."""
    assert h.upto is not None
    truncations = {(t.content, t.part): t for t in truncate_history_to_budget(h.held[: h.upto + 1], max_chars)}
    held = h.held
    return truncations, sum(estimate_part(truncated_part(held[t.content].parts[t.part], t.output)) - estimate_part(held[t.content].parts[t.part])
                            for t in truncations.values())


def _attempt(session: Session, h: _History, max_chars: int) -> _Attempt:
    held = h.held
    truncations = {(t.content, t.part): t for t in truncate_history_to_budget(held, max_chars)}
    lengths = [_content_length(c, ci, truncations) for ci, c in enumerate(held)]
    split = find_compress_split_point(lengths, h.splittable, h.last_is_plain_model, 1 - COMPRESSION_PRESERVE_THRESHOLD)
    if split == 0:
        return _Attempt(truncations, split)
    compress_messages = [m for c in held[:split] for m in c.messages]
    text = stand_in_summary([*_summarized_before(session, h.summary), *compress_messages])
    new_parts = [{"text": text}, {"text": ACK_TEXT}]
    for ci, c in enumerate(held[split:], start=split):
        new_parts += [_part_after(c, ci, pi, truncations) for pi in range(len(c.parts))]
    return _Attempt(truncations, split, text, math.floor(sum(estimate_part(p) for p in new_parts)))


def _outcome(h: _History, counts: TokenCounts, truncations: dict[tuple[int, int], Truncation], split: int | None) -> _Outcome:
    """`plan_records`' decisions for every message: compressed before `split` (None: not compressed).

    The messages whose fate is one value per column (compressed, or sent whole) are gathered in
    lists and set with one numpy assignment per column: a re-plan that moves the token limit past
    the session (no compression, no truncation) sends thousands of messages whole, and setting
    their columns one numpy scalar at a time, with a list made per message, was most of its cost."""
    tokens = counts.message_tokens
    n = len(tokens)
    decision = np.full(n, KEPT, dtype=np.int8)
    zone = np.full(n, HISTORY_ZONE, dtype=np.int16)
    code = np.full(n, SINCE_COMPACTION, dtype=np.int16)
    sent_tokens = counts.token_array.copy()
    system = [m.index for m in h.system]
    zone[system], code[system] = SYSTEM_ZONE, SYSTEM_PROMPT
    covered = [m.index for m in h.covered]
    decision[covered], zone[covered], code[covered], sent_tokens[covered] = SUMMARIZED, SUMMARIZED_ZONE, BEFORE_COMPACTION, 0
    compressed_ids: list[str] = []
    held, pending = h.held, h.pending
    start = 0
    if split is not None:
        compressed = [m for c in held[:split] for m in c.messages]
        compressed_ids = [m.id for m in compressed]
        gone = [m.index for m in compressed]
        decision[gone], zone[gone], code[gone], sent_tokens[gone] = SUMMARIZED, SUMMARIZED_ZONE, SUMMARISED, 0
        start = split
    by_content: dict[int, list[Truncation]] = {}
    for (tc, _), t in truncations.items():
        by_content.setdefault(tc, []).append(t)
    # The Contents sent from `start` on (the pending request's index is len(held)); the summary
    # turn (no messages) is sent apart. Every message sent is set the code of its kind at once;
    # only the Contents with truncated outputs are read one message at a time, the runs between
    # them taken whole: no object is made per Content (the collector's passes over what the first
    # plan made cost a re-plan more than its own work).
    contents = [*held, pending] if pending is not None else held
    sent = [m for c in contents[start:] for m in c.messages]
    context_index = [m.index for m in sent]
    # Sent whole: the part a compression preserves, else written after the recorded compression,
    # else (a history never compressed) under the trigger.
    code[context_index] = FRESH_TAIL if split is not None else SINCE_COMPACTION if h.summary is not None else UNDER_TRIGGER
    if pending is not None:
        code[[m.index for m in pending.messages]] = NEW_MESSAGE
    history_tokens = 0
    truncated_ids: list[str] = []
    cuts = sorted(ci for ci in by_content if ci >= start)
    entries: list[Any] = sent  # what is sent of each message, and the messages sent whole
    whole = sent
    if cuts:
        entries, whole = [], []
        at = start
        for ci in cuts:
            run = [m for c in contents[at:ci] for m in c.messages]
            entries += run
            whole += run
            at = ci + 1
            c = contents[ci]
            found = by_content[ci]
            for m in c.messages:
                hits = [t for t in found if _part_owner(c, t.part, m)]
                if hits:
                    tokens_sent = math.floor(sum(estimate_part(truncated_part(c.parts[t.part], t.output)) for t in hits)
                                             + sum(estimate_part(p) for p in own_parts(m, m.name) if "functionResponse" not in p))
                    truncated_ids.append(m.id)
                    decision[m.index], code[m.index], sent_tokens[m.index] = TRUNCATED, TRUNCATED_CODE, tokens_sent
                    entries.append(_Truncated(m, hits[0].output))
                    history_tokens += tokens_sent
                else:
                    entries.append(m)
                    whole.append(m)
        run = [m for c in contents[at:] for m in c.messages]
        entries += run
        whole += run
    history_tokens += sum([tokens[m.index] for m in whole])
    return _Outcome(decision, zone, code, sent_tokens, tuple(entries), tuple(context_index), history_tokens, compressed_ids, truncated_ids)


def _reason(reasons: tuple[str, ...], code: np.ndarray, i: int) -> str:
    return reasons[code[i]]


#: Why a message is sent whole, when no compression preserved it: written after the recorded
#: compression, in a history under the threshold, or in one over it that did not compress.
KEPT_SINCE = "kept: written after the last compression; Gemini CLI sends the history whole until compression fires again"
KEPT_UNDER = "kept: Gemini CLI sends the whole history until compression fires"
KEPT_OVER = "kept: the prompt reached the threshold but compression did not shorten the history (see the notes), so Gemini CLI sends it whole"



def compressed_reason(all_of_it: bool, prompt_tokens: int, threshold: float, limit: int) -> str:
    """Why a message is compressed. When findCompressSplitPoint finds no user turn to split at past
    the oldest ~70 % and the history ends on a model turn without function calls, it compresses
    all of it: the newest message said it was "in the oldest ~70 %"."""
    why = f"compressed because the prompt ({prompt_tokens:,} tokens) reached {threshold:g} x {limit:,}"
    if all_of_it:
        return ("summarized: the whole history is compressed: no user turn to split at past its oldest ~70 % by JSON characters, "
                f"and it ends on a model turn without function calls; {why}")
    return f"summarized: before the split point, in the oldest ~{1 - COMPRESSION_PRESERVE_THRESHOLD:.0%} of the history by JSON characters, {why}"


def plan_columns(session: Session, params: CompressionParams, counts: TokenCounts) -> Plan:
    limit = params.tokenLimit if params.tokenLimit is not None else token_limit(session.model)
    h = history_of(session, counts)
    notes: list[str] = []
    summary, held = h.summary, h.held
    truncations: dict[tuple[int, int], Truncation] = {}
    saved: float = 0
    truncations_key: tuple[Any, ...] = ("none",)
    if h.upto is not None:
        max_chars = _max_chars(params, limit, None)
        truncations, saved = remember(h.summary_truncations, max_chars, partial(_summary_truncations, h, max_chars))
        truncations_key = ("summary", max_chars)
    reported, last_with_usage = h.reported, h.last_with_usage
    # The outputs truncated at the last compression count as truncated.
    estimate = math.floor(h.estimate + saved)
    prompt_tokens = reported if reported is not None else estimate
    source = (f"the promptTokenCount reported for message #{last_with_usage.index}" if reported is not None and last_with_usage is not None
              else "Gemini CLI's estimate of the history (no usage reported" + (" since the summary)" if summary is not None else ")"))
    threshold = params.compressionThreshold * limit

    status = "NOOP"
    split: int | None = None
    new_summary_text = ""
    if held and prompt_tokens >= threshold:
        max_chars = _max_chars(params, limit, prompt_tokens)
        attempt = remember(h.attempts, max_chars, partial(_attempt, session, h, max_chars))
        split = attempt.split
        if split == 0:
            notes.append(f"the prompt ({prompt_tokens:,} tokens) reached {params.compressionThreshold:g} x {limit:,} = {threshold:,.0f}, "
                         "but findCompressSplitPoint found nothing to compress (no user message to split before): nothing changes")
        else:
            new_summary_text = attempt.summary_text
            if attempt.new_count > prompt_tokens:
                status = "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT"
                notes.append(f"compression would fail: the compressed history's estimate ({attempt.new_count:,}) exceeds the original count "
                             f"({prompt_tokens:,}), so Gemini CLI keeps the history as it is (and then only truncates)")
                split = None
            else:
                status = "COMPRESSED"
                truncations, truncations_key = attempt.truncations, ("attempt", max_chars)
    elif held:
        notes.append(f"no compression: the prompt ({prompt_tokens:,} tokens, {source}) is under compressionThreshold "
                     f"{params.compressionThreshold:g} x tokenLimit {limit:,} = {threshold:,.0f}")
    compressed_at = split if status == "COMPRESSED" else None
    over = bool(held) and prompt_tokens >= threshold and status != "COMPRESSED"  # reached the threshold, compressed nothing
    out = remember(h.outcomes, (*truncations_key, compressed_at), partial(_outcome, h, counts, truncations, compressed_at))

    summary_plans: list[SummaryPlan] = []
    if status == "COMPRESSED":
        if summary is not None:
            summary_plans.append(SummaryPlan(0, 0, Decision.SUMMARIZED, "summarized: the earlier summary turn is inside the part compressed again", summary.text))
        sent_summary = new_summary_text
    else:
        sent_summary = summary.text if summary is not None else ""
        if summary is not None:
            summary_plans.append(SummaryPlan(0, counts.text(summary.text), Decision.KEPT,
                                             "kept: sent as a user turn, followed by the model's acknowledgement", summary.text))
    head: tuple[Any, ...] = ({"role": "system", "content": h.system_prompt},)
    summary_tokens = 0
    if sent_summary:
        summary_tokens = counts.text(sent_summary) + counts.text(ACK_TEXT)
        head += ({"role": "user", "content": sent_summary}, {"role": "assistant", "content": ACK_TEXT})
    if status == "COMPRESSED":
        summary_plans.append(SummaryPlan(len(session.summaries), counts.text(new_summary_text), Decision.KEPT,
                                         "kept: the new summary (ctxviz's offline stand-in for the model's <state_snapshot>), "
                                         "sent as a user turn with the model's acknowledgement", new_summary_text))
    if status == "COMPRESSED":
        notes.append(f"compression fires: the prompt ({prompt_tokens:,} tokens, {source}) reached compressionThreshold "
                     f"{params.compressionThreshold:g} x tokenLimit {limit:,} = {threshold:,.0f}; {len(out.compressed_ids):,} {noun(len(out.compressed_ids), 'message')} {'is' if len(out.compressed_ids) == 1 else 'are'} "
                     "replaced by a summary turn")
        notes.append("the summary text is ctxviz's offline stand-in (an extractive snapshot); Gemini CLI asks the model for a <state_snapshot> "
                     "and has it verified in a second call")
    if truncations:
        notes.append(f"{len(out.truncated_ids):,} tool {noun(len(out.truncated_ids), 'output')} truncated past the {COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET:,}-token function-response "
                     f"budget; the file path is a stand-in ({TOOL_OUTPUT_DIR}/...)")

    tokens = counts.token_array
    n = len(tokens)
    reasons = (
        "kept: part of the system instruction, which Gemini CLI sends with every request",
        "summarized: replaced by the summary turn (an earlier compression, or the summary the session records)",
        compressed_reason(compressed_at == len(held), prompt_tokens, params.compressionThreshold, limit),
        f"truncated: past the {COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET:,}-token budget for function responses (counted newest "
        f"first), so Gemini CLI keeps the first and last of its characters ({params.truncateToolOutputThreshold:,} at most) "
        "and saves the whole output to a file",
        "kept: the request being sent, added to the history after any compression",
        f"kept: after the split point, in the newest ~{COMPRESSION_PRESERVE_THRESHOLD:.0%} of the history by JSON characters",
        KEPT_SINCE,
        KEPT_UNDER if not over else KEPT_OVER,
    )
    columns = Columns(session, out.decision, tokens, out.sent_tokens, out.zone, ZONES, out.code, CODES_OVER if over else CODES,
                      partial(_reason, reasons, out.code))
    used = h.system_tokens + summary_tokens + out.history_tokens
    # The next request as the provider counts it, for the cache's price: the last reported prompt
    # and what was added since, as sent (the answer itself included), where nothing was compressed.
    request_tokens = None
    if reported is not None and last_with_usage is not None and status != "COMPRESSED":
        request_tokens = reported + int(out.sent_tokens[last_with_usage.index:].sum())
    sent = out.decision != SUMMARIZED
    kept = int(tokens[sent].sum())
    kept_messages = int(sent.sum())
    allocation = {"system": h.system_tokens, "summary": summary_tokens, "history": limit - h.system_tokens - summary_tokens}
    usage = {"system": h.system_tokens, "summary": summary_tokens, "history": out.history_tokens}
    totals = Totals(budget=limit, used=used, kept=kept, dropped=int(tokens.sum()) - kept, fits=used <= limit, kept_messages=kept_messages,
                    dropped_messages=n - kept_messages)
    held_until = held[-1].messages[-1].id if held and held[-1].messages else (summary.held_until if summary else "")
    return Plan(
        policy=POLICY_NAME, params={**params_dict(params), "tokenLimit": limit}, tokenizer=counts.scheme.label,
        allocation=allocation, usage=usage, system_prompt=h.system_prompt, messages=Rows(columns), context=Context(head + out.entries),
        context_index=(None,) * len(head) + out.context_index, totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"prompt_token_count": prompt_tokens, "prompt_token_source": "reported" if reported is not None else "estimate",
               "history_estimate": estimate, "threshold_tokens": threshold, "compression_status": status,
               "split_point": split, "compressed_ids": out.compressed_ids, "summary_text": new_summary_text,
               "held_until": held_until, "truncated_ids": out.truncated_ids,
               **({"request_tokens": request_tokens} if request_tokens else {})},
    )
