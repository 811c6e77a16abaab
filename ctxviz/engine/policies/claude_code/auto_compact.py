"""Claude Code's auto-compact: when the context reaches a trigger, a summary replaces everything before.

Claude Code is closed source; its TypeScript was published with the npm package's source map and is
mirrored publicly (read here in Esonhugh/claude-code @5a9162e3, `src/services/compact/autoCompact.ts`,
`getEffectiveContextWindowSize` / `getAutoCompactThreshold` / `calculateTokenWarningState`, and
`src/utils/tokens.ts` `tokenCountWithEstimation`):

- effective window = context window - min(the model's max output tokens, MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20,000)
- trigger = effective window - AUTOCOMPACT_BUFFER_TOKENS (13,000); with CLAUDE_AUTOCOMPACT_PCT_OVERRIDE
  set (0 < pct <= 100): min(floor(effective window * pct / 100), that trigger): the variable can only
  lower the threshold.
- auto-compact fires when the count is >= the trigger, checked before a request is sent.
- the count is the last API response's usage (input + cache writes + cache reads + output) plus a
  rough estimate of the messages after it; with no usage at all, the estimate alone.

For a 200k-window model that gives 167,000, a 33,000-token gap to the window, the figure users
report since late 2025 (earlier versions left about 45,000). Real logs record the count at each
compaction (`compactMetadata.preTokens`): `ctxviz calibrate` fits the trigger from them, and
`calibrated_trigger` replays it.

What survives: Claude Code replaces every earlier message with one user message, "This session is
being continued from a previous conversation that ran out of context. ..." (the wording below is
the one real 2.1.x logs record) followed by the model's summary and a request to continue.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from operator import itemgetter
from typing import Any

import numpy as np

from ...catalog import find_model
from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import KEPT, SUMMARIZED, Columns, Rows
from ...reported import reported_usage, usage_mask
from ...session import (
    Message,
    OpaquePart,
    Session,
    Summary,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from ...tokenizers import Tokenizer
from ...wording import counted, noun
from ..base import Policy, params_dict

MAX_OUTPUT_TOKENS_FOR_SUMMARY = 20_000
AUTOCOMPACT_BUFFER_TOKENS = 13_000
DEFAULT_CONTEXT_WINDOW = 200_000
ZONES = ("summarized", "context")

# The compact summary message as Claude Code 2.1.x writes it (tests/data/claude_code/spotter-autocompact-excerpt.jsonl).
SUMMARY_PREFIX = ("This session is being continued from a previous conversation that ran out of context. "
                  "The summary below covers the earlier portion of the conversation.\n\n")
SUMMARY_CONTINUE = ("\nPlease continue the conversation from where we left off without asking the user any further questions. "
                    "Continue with the last task that you were asked to work on.")
STAND_IN = "ctxviz's offline extractive snapshot in Claude Code's compact-summary message (Claude Code asks the model)"


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class AutoCompactSettings:
    context_window: int | None = field(default=None, metadata=_help("The model's context window (default: the catalogue's for the model, else 200,000)", min=1000, step=1000))
    max_output_tokens_for_summary: int = field(default=MAX_OUTPUT_TOKENS_FOR_SUMMARY, metadata=_help(
        "MAX_OUTPUT_TOKENS_FOR_SUMMARY: kept free for the summary (or the model's max output if smaller)", min=0, max=200_000, step=1000))
    autocompact_buffer: int = field(default=AUTOCOMPACT_BUFFER_TOKENS, metadata=_help(
        "AUTOCOMPACT_BUFFER_TOKENS: the trigger sits this far below the effective window", min=0, max=500_000, step=1000))
    autocompact_pct_override: float | None = field(default=None, metadata=_help(
        "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE (0-100]: compact at this % of the effective window, only ever lowering the trigger", min=0.0, max=100.0, step=1.0))
    calibrated_trigger: int | None = field(default=None, metadata=_help(
        "A trigger fitted from real logs (`ctxviz calibrate`): replaces the computed one", min=1, step=1000))

    def __post_init__(self) -> None:
        if self.context_window is not None and self.context_window <= 0:
            raise ValueError(f"context_window must be > 0, got {self.context_window}")
        if self.max_output_tokens_for_summary < 0:
            raise ValueError(f"max_output_tokens_for_summary must be >= 0, got {self.max_output_tokens_for_summary}")
        if self.autocompact_buffer < 0:
            raise ValueError(f"autocompact_buffer must be >= 0, got {self.autocompact_buffer}")
        pct = self.autocompact_pct_override
        if pct is not None and not 0 < pct <= 100:
            raise ValueError(f"autocompact_pct_override must be in (0, 100] (Claude Code ignores any other value), got {pct}")
        if self.calibrated_trigger is not None and self.calibrated_trigger <= 0:
            raise ValueError(f"calibrated_trigger must be > 0, got {self.calibrated_trigger}")


@dataclass(frozen=True)
class Threshold:
    window: int
    reserved_for_summary: int
    trigger: int
    how: str


def context_window(model: str, settings: AutoCompactSettings, reported_window: int = 0) -> int:
    if settings.context_window is not None:
        return settings.context_window
    entry = find_model(model)
    return entry.context_window if entry else reported_window or DEFAULT_CONTEXT_WINDOW


def threshold(model: str, settings: AutoCompactSettings, reported_window: int = 0) -> Threshold:
    """getAutoCompactThreshold, with ctxviz's calibrated override on top."""
    window = context_window(model, settings, reported_window)
    entry = find_model(model)
    max_output = entry.max_output if entry and entry.max_output else settings.max_output_tokens_for_summary
    reserved = min(max_output, settings.max_output_tokens_for_summary)
    effective = window - reserved
    trigger = effective - settings.autocompact_buffer
    how = f"{window:,} window - {reserved:,} kept for the summary - {settings.autocompact_buffer:,} autocompact buffer"
    pct = settings.autocompact_pct_override
    if pct is not None:
        by_pct = math.floor(effective * (pct / 100))  # Claude Code: Math.floor(effectiveContextWindow * (parsed / 100))
        if by_pct < trigger:
            trigger, how = by_pct, f"{pct:g}% (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE) of the {effective:,}-token effective window"
        else:
            how += f" (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={pct:g} would be {by_pct:,}: it can only lower the trigger)"
    if settings.calibrated_trigger is not None:
        trigger, how = settings.calibrated_trigger, "calibrated from real logs (calibrated_trigger)"
    return Threshold(window, reserved, trigger, how)


def message_text(message: Message) -> str:
    """The text a rough estimate sees in a message: text, thinking, tool calls and outputs."""
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, (TextPart, ThinkingPart, ToolResultPart, OpaquePart)):
            pieces.append(part.text)
        elif isinstance(part, ToolCallPart):
            pieces.append(part.name)
            pieces.append(part.arguments)
    return "\n".join(pieces)  # images: not estimated (their data URIs are not their token cost)


def estimate_message(message: Message, tokenizer: Tokenizer) -> int:
    """roughTokenCountEstimation's idea (characters / 4) over the message's content: the estimate
    Claude Code adds for messages after the last reported usage."""
    return tokenizer.count(message_text(message))


def summary_message(snapshot: str) -> str:
    """Claude Code's compact-summary user message around a summary text."""
    return SUMMARY_PREFIX + snapshot + SUMMARY_CONTINUE


def _recorded(session: Session, summary: Summary) -> bool:
    """A summary the log recorded: it covers exactly the messages before one of its compaction
    boundaries (less a preserved segment), so the usage the log reports after it is the usage of
    the context Claude Code really had."""
    return _boundary(session, summary) is not None


def _boundary(session: Session, summary: Summary) -> int | None:
    """The index of the first message after the recorded compaction that wrote `summary` (None: the
    log records no such compaction): the first compaction whose messages before it, less its
    preserved segment, are exactly the summary's covers (as sets of ids).

    Read in one pass over the messages and each compaction's preserved ids, not one set of the ids
    before it per compaction (a long log with many compactions made that cubic over a replay): the
    ids before position m, less the preserved ones, are the covers when every cover is first seen
    before m and is not preserved, and every position before m holds a cover or a preserved id."""
    if not session.compactions or not summary.covers:
        return None
    covers = set(summary.covers)
    ids = [m.id for m in session.messages]
    first: dict[str, int] = {}
    for j, x in enumerate(ids):
        first.setdefault(x, j)
    lo = 0  # every cover is first seen before this position
    for c in covers:
        j = first.get(c)
        if j is None:
            return None
        lo = max(lo, j + 1)
    n = len(ids)
    free = [n] * (n + 1)  # free[j]: the first position >= j whose id is not a cover
    for j in range(n - 1, -1, -1):
        free[j] = free[j + 1] if ids[j] in covers else j
    for c in session.compactions:
        m = len(range(n)[: c.before_index])  # the messages before it in this session, as the slice counts them
        if m < lo:
            continue
        preserved = set(c.preserved)
        if not preserved.isdisjoint(covers):
            continue
        j = free[0]
        while j < m and ids[j] in preserved:
            j = free[j + 1]
        if j >= m:
            return c.before_index
    return None


SUMMARIZED_REASON = "summarized: Claude Code's compact summary replaced every message before it"
KEPT_REASON = "kept: Claude Code sends the whole conversation since the last compaction"
#: A log without a compaction: the whole conversation is sent, under the trigger or (the plan's
#: count at or over it) up to the request before Claude Code compacts.
KEPT_UNDER = "kept: Claude Code sends the whole conversation until it auto-compacts"
KEPT_OVER = "kept: sent in the request the log records; the count is at or over the trigger, so Claude Code compacts before its next request"
_ZONE_NAMES = ("summarized", "context")
_CODE_NAMES = ("before_compaction", "since_compaction")
_CODES_UNDER = ("before_compaction", "under_trigger")
_CODES_OVER = ("before_compaction", "kept")


@dataclass(frozen=True)
class _Live:
    """Everything a plan derives from the session and its counts alone: the settings move only
    the trigger, so a re-plan after a parameter change reuses all of this (the messages are
    decided in columns, engine/plan_rows.py)."""

    columns: Columns
    context: tuple[Any, ...]
    context_index: tuple[int | None, ...]
    used: int
    counter: str
    unseen: int
    anchor: int | None
    kept: int
    dropped: int
    kept_messages: int
    summary_tokens: int
    recorded: bool


def _reason(covered: np.ndarray, i: int) -> str:
    return SUMMARIZED_REASON if covered[i] else KEPT_REASON


def _every_message(reason: str, i: int) -> str:
    """The one reason of a plan that sends every message (nothing compacted)."""
    return reason


def _live(session: Session, counts: TokenCounts) -> _Live:
    return derived_from_counts(session, counts, "claude-code", _derive)


def _derive(session: Session, counts: TokenCounts) -> _Live:
    tokens = counts.token_array
    n = len(tokens)
    summary = session.summaries[-1] if session.summaries else None  # the latest absorbs the earlier ones
    summary_text = summary.text if summary else ""
    summary_tokens = counts.text(summary_text) if summary else 0
    if summary is not None and summary.covers:
        covered_ids = set(summary.covers)
        ids = session.message_columns[0]
        c = len(summary.covers)
        if summary.covers == ids[:c] and covered_ids.isdisjoint(ids[c:]):  # the first messages (a compaction's): at C speed
            covered = np.zeros(n, dtype=bool)
            covered[:c] = True
        else:
            covered = np.fromiter((i in covered_ids for i in ids), dtype=bool, count=n)
    else:
        covered = np.zeros(n, dtype=bool)
    alive = ~covered
    live_at = np.flatnonzero(alive)
    sent_tokens = np.where(covered, 0, tokens)
    decision = np.where(covered, np.int8(SUMMARIZED), np.int8(KEPT)).astype(np.int8)
    place = alive.astype(np.int16)  # zone and code: 0 before the compaction, 1 since
    columns = Columns(session, decision, tokens, sent_tokens, place, _ZONE_NAMES, place, _CODE_NAMES, partial(_reason, covered))

    # tokenCountWithEstimation: the last reported usage in the live context, plus an estimate after it.
    # After a recorded compaction only usage reported after it counts: a kept (preserved) message's
    # usage measured the context before the compaction, which no longer exists.
    recorded = summary is None or _recorded(session, summary)
    boundary = _boundary(session, summary) if summary is not None else None
    anchor: int | None = None
    if recorded:
        candidates = usage_mask(session) & alive
        if boundary is not None:
            candidates[:boundary] = False
        found = np.flatnonzero(candidates)
        anchor = int(found[-1]) if len(found) else None
    estimated = int(sent_tokens.sum())
    unseen = 0
    if anchor is not None:
        usage = session.messages[anchor].usage
        assert usage is not None
        reported = usage.window_fill + usage.output_tokens
        after = int(sent_tokens[anchor + 1:].sum())
        used = reported + after
        counter = (f"reported usage of #{anchor} ({reported:,}: input + cache writes + cache reads + output) "
                   f"+ an estimate of the {counted(int(alive[anchor + 1:].sum()), 'message')} after it ({after:,})")
    else:
        used = estimated + summary_tokens
        why = "no reported usage in the live context" if recorded else "the summary in force is ctxviz's, so the log's later usage does not apply"
        if summary is not None:  # (with no summary, no usage in the live context means no call yet)
            # The request after a compaction, the log's or ctxviz's own, still opens with the system
            # prompt and tool definitions: where the log lacks them, their size as the first call
            # reported it (engine.reported). Without them a replay's own compaction left its later
            # requests about that much short, and its next compaction came late.
            found_usage = reported_usage(session)
            unseen = found_usage.unseen_at(n - 1) if found_usage is not None else 0
            restart = found_usage.restart_call if found_usage is not None else None
            used += unseen
            if boundary is not None:
                why = "no usage reported since the recorded compaction"
        counter = f"estimated ({why}): characters / 4 of the messages{' and the summary' if summary else ''}"
        if unseen:
            counter += (f", plus the {unseen:,} tokens of system prompt and tools the log does not show (estimated from "
                        + (f"the first call after the compaction, #{restart}: the file starts mid-conversation)" if restart is not None else "its first call)"))

    messages = session.messages
    head: tuple[Any, ...] = ({"role": "user", "content": summary_text},) if summary else ()
    live = live_at.tolist()
    context = head + (messages if len(live) == n else itemgetter(*live)(messages) if len(live) > 1 else tuple(messages[i] for i in live))
    context_index = (None,) * len(head) + tuple(live)
    return _Live(columns, context, context_index, used, counter, unseen, anchor, estimated, int(tokens.sum()) - estimated,
                 len(live_at), summary_tokens, recorded)


def plan(session: Session, settings: AutoCompactSettings, counts: TokenCounts) -> Plan:
    t = threshold(session.model, settings, session.context_window)
    live = _live(session, counts)
    summary = session.summaries[-1] if session.summaries else None
    used = live.used
    notes = [f"trigger {t.trigger:,} = {t.how}", f"count: {live.counter}"]
    if used >= t.trigger:
        notes.append(f"{used:,} tokens >= the trigger {t.trigger:,}: Claude Code auto-compacts before its next request")
    if summary and not live.recorded:
        notes.append(f"summary text: {STAND_IN}")
    n = len(session.messages)
    cap = max(0, min(t.trigger, t.window))  # the part of the window below the trigger
    totals = Totals(budget=t.window, used=used, kept=live.kept, dropped=live.dropped, fits=used <= t.window,
                    kept_messages=live.kept_messages, dropped_messages=n - live.kept_messages)
    summaries = (SummaryPlan(0, live.summary_tokens, Decision.KEPT, "kept: the compact summary opens the context", summary.text),) if summary else ()
    columns = live.columns
    if summary is None:  # nothing compacted: the messages are sent under the trigger, or in the last request before it compacts
        over = used >= t.trigger
        columns = replace(columns, code_names=_CODES_OVER if over else _CODES_UNDER,
                          reason=partial(_every_message, KEPT_OVER if over else KEPT_UNDER))
    return Plan(
        policy="claude-code", params={**params_dict(settings), "context_window": t.window}, tokenizer=counts.scheme.label,
        allocation={"context": cap, "autocompact_buffer": t.window - cap}, usage=_split(used, cap), system_prompt=session.system_prompt,
        messages=Rows(columns), context=Context(live.context), context_index=live.context_index, totals=totals, summaries=summaries,
        zones=ZONES, notes=tuple(notes),
        extra={"autocompact_threshold": t.trigger, "threshold_how": t.how, "effective_window": t.window - t.reserved_for_summary,
               "would_compact": used >= t.trigger, "counted": "reported" if live.anchor is not None else "estimated",
               "anchor_index": live.anchor,
               # the request as the provider counts it (system prompt and tools included): for the cache's price
               **({"request_tokens": used} if live.anchor is not None or live.unseen else {})},
    )


def _split(used: int, cap: int) -> dict[str, int]:
    """The count below the trigger, and what reaches into the buffer (the part that makes Claude Code compact)."""
    below = min(used, cap)
    return {"context": below, "autocompact_buffer": used - below}


def refresh(plan: Plan, session: Session, counts: TokenCounts | None) -> Plan:
    """After ctxviz dropped messages (pair safety): the count split again at the trigger."""
    return replace(plan, usage=_split(plan.totals.used, plan.allocation["context"]),
                   extra={**plan.extra, "would_compact": plan.totals.used >= plan.extra["autocompact_threshold"]})


def compact(session: Session, plan: Plan, settings: AutoCompactSettings, counts: TokenCounts, summarizer: Any, turn: int,
            events: list[Any]) -> Summary | None:
    """Auto-compact: checked before a request is sent (after a user message or a tool output); at
    or over the trigger, one summary replaces every message so far."""
    if not session.messages or session.messages[-1].role not in ("user", "tool"):
        return None
    if plan.totals.used < plan.extra["autocompact_threshold"]:
        return None
    covered = [m for m in session.messages if m.role != "system"]
    return compacted(covered, tuple(m.id for m in covered), session.messages[-1].timestamp, plan, summarizer, turn, events)


def compacted(covered: Sequence[Message], covers: Sequence[str], created_at: str, plan: Plan, summarizer: Any, turn: int,
              events: list[Any]) -> Summary:
    """The summary a compaction that fired writes over `covered` (every non-system message so far,
    those of earlier summaries too: it absorbs them; `covers`: their ids). The replay hands over the
    lists it grows turn by turn, so a compaction does not list the whole prefix again."""
    from ...replay_contract import Event

    used, trigger = plan.totals.used, plan.extra["autocompact_threshold"]
    text = summary_message(summarizer.supyagent_snapshot(covered))
    events.append(Event(turn, "compaction", f"auto-compact: {used:,} tokens >= the trigger {trigger:,} ({plan.extra['threshold_how']}): "
                                            f"{len(covered):,} {noun(len(covered), 'message')} replaced by the summary"))
    return Summary(text=text, messages_covered=len(covered), covers=covers, created_at=created_at)


def trigger_level(settings: AutoCompactSettings, session: Session) -> int:
    return threshold(session.model, settings, session.context_window).trigger


def align(settings: AutoCompactSettings, session: Session, trigger_tokens: int | None, keep_messages: int | None,
          keep_tokens: int | None) -> tuple[AutoCompactSettings, list[str]]:
    """Firing at N tokens is a calibrated trigger of N; a compaction keeps nothing verbatim."""
    skipped = [f"claude-code: a compaction keeps no recent {unit} verbatim (the summary replaces them all)"
               for unit, wanted in (("messages", keep_messages), ("tokens", keep_tokens)) if wanted is not None]
    return (replace(settings, calibrated_trigger=trigger_tokens) if trigger_tokens is not None else settings), skipped


POLICY = Policy(
    reason_codes=("since_compaction", "under_trigger", "kept", "before_compaction"),
    name="claude-code",
    schedule='auto-compact is checked before each API request',
    title="Claude Code auto-compact",
    params_type=AutoCompactSettings,
    measure_name="claude-code-rough",
    measure=estimate_message,
    default_tokenizer="chars4",
    plan=plan,
    zone_parts={"context": "context"},
    refresh=refresh,
    compact=compact,
    description="Sends everything since the last compaction; at the trigger (window - 20k - 13k) a summary replaces it all.",
    framework="Claude Code",
    framework_version="2.1.x (source as published, March 2026)",
    source="src/services/compact/autoCompact.ts getAutoCompactThreshold; src/utils/tokens.ts tokenCountWithEstimation",
    counter="the log's reported usage (input + cache writes + cache reads + output) plus characters / 4 for later messages; characters / 4 alone without usage",
    trigger=("autocompact_buffer", "autocompact_pct_override", "calibrated_trigger"),
    trigger_level=trigger_level,
    align=align,
    keep=(),
    stand_in=STAND_IN,
)
