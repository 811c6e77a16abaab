"""missy's MemoryConsolidator ("Sleep Mode", missy/agent/consolidation.py and condensers.py).

Seed page 003 and policies.md sections 1.4-1.5 are the specification. The default is the seed
page's algorithm (keep the last 4 messages, replace everything older with one
`[Session context consolidated]` message of key facts); `pipeline=true` runs the later four-stage
condenser pipeline instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Joined, MessagePlan, Plan, SummaryPlan, Totals
from ...plan_rows import KEPT, SUMMARIZED, Columns, Rows
from ...session import Message, Session, Summary
from ...tokenizers import Tokenizer
from ..base import Policy, params_dict
from ..common import base_system_prompt

RECENT_KEEP = 4  # _RECENT_KEEP
FACT_KEYWORDS = ("result:", "decided:", "found:", "error:", "success:", "created:", "updated:", "deleted:", "confirmed:", "output:")
_LONGEST = max(map(len, FACT_KEYWORDS))
SCORE_KEYWORDS = ("error", "success", "result", "failed", "created", "updated", "deleted", "confirmed", "found", "output")
NO_FACTS = "- (previous conversation context \u2014 no key facts extracted)"
ZONES = ("system", "consolidated", "recent")


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class ConsolidatorSettings:
    threshold_pct: float = field(default=0.8, metadata=_help("Fraction of max_tokens that triggers consolidation", unit="fraction", min=0.0, max=1.0, step=0.01))
    max_tokens: int = field(default=30_000, metadata=_help("Total token budget for the context window", unit="tokens", min=0, step=1000))
    pipeline: bool = field(default=False, metadata=_help("Later source: the four-stage condenser pipeline instead of the seed's key-fact summary"))

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold_pct <= 1.0:
            raise ValueError(f"threshold_pct must be between 0.0 and 1.0, got {self.threshold_pct}")
        if self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {self.max_tokens}")


def content_text(message: Message) -> str:
    return str(message.openai_content())


def measure_chars(message: Message, tokenizer: Tokenizer) -> int:
    """estimate_tokens sums characters over all messages, then divides by 4 once; the cache holds
    per-message counts from the tokenizer ("chars" by default, so the division happens in `plan`)."""
    return tokenizer.count(content_text(message))


def should_consolidate(current_tokens: int, settings: ConsolidatorSettings) -> bool:
    if settings.max_tokens <= 0:
        return False
    return current_tokens / settings.max_tokens >= settings.threshold_pct  # inclusive


#: A text with more colons than this is lowered whole to be searched (one pass each in C) rather
#: than at each colon.
_FEW_COLONS = 64


def _holds_keyword(content: str) -> bool:
    """Whether `content.lower()` holds a fact keyword. Each ends with a colon, and no character but
    the keyword's own letters (either case) lowers to its letters one for one (the Kelvin sign
    lowers to "k", in no keyword; "İ" to "i" and a combining dot), so a keyword found is the few
    characters up to a colon, lowered: a text with few colons is not lowered whole."""
    colons = content.count(":")
    if colons > _FEW_COLONS:
        lowered = content.lower()
        return any(k in lowered for k in FACT_KEYWORDS)
    at = content.find(":") if colons else -1
    while at >= 0:
        if content[max(0, at - _LONGEST + 1): at + 1].lower().endswith(FACT_KEYWORDS):
            return True
        at = content.find(":", at + 1)
    return False


def extract_key_facts(messages: list[Message], contents: list[str] | None = None) -> list[str]:
    """Tool results (200 chars, tool name first), lines with fact keywords, short user messages; de-duplicated.
    `contents`: each message's content as read here (its `openai_content()` as a string, "" for
    None), where the caller has it already (a replay reads each message once)."""
    facts: list[str] = []
    seen: set[str] = set()

    def add(fact: str) -> None:
        if fact not in seen:
            seen.add(fact)
            facts.append(fact)

    for k, m in enumerate(messages):
        if contents is not None:
            content = contents[k]
        else:
            value = m.openai_content()
            content = str(value) if value is not None else ""
        if m.role == "tool":
            snippet = content[:200].strip()
            if snippet:
                add(f"[{m.name or 'tool'}] {snippet}")
            continue
        # A line holds a keyword only if the whole text does (lowering maps each character alone,
        # and the keywords hold no line break): most messages hold none, and their lines are not
        # read one by one.
        if _holds_keyword(content):
            for line in content.splitlines():
                stripped = line.strip()
                if stripped and any(k in stripped.lower() for k in FACT_KEYWORDS):
                    add(stripped)
        if m.role == "user" and 0 < len(content) <= 120:
            add(content)
    return facts


def consolidated_message(messages: list[Message], earlier_facts: list[str] | None = None, contents: list[str] | None = None) -> str:
    facts = list(dict.fromkeys([*(earlier_facts or []), *extract_key_facts(messages, contents)]))
    body = "\n".join(f"- {f}" for f in facts) if facts else NO_FACTS
    return "[Session context consolidated]\n\n" + body


def earlier_facts_of(texts: Iterable[str]) -> list[str]:
    """The facts a consolidation carries over from the earlier ones: their `- ` lines, but the
    no-facts line (the seed's parsing of `earlier`)."""
    return [line[2:] for t in texts for line in t.splitlines() if line.startswith("- ") and "no key facts" not in line]


class FactsSoFar:
    """The facts the next consolidation carries over, kept from the one before (a replay's): the
    text of each consolidation is every earlier fact then the new ones, so reading them back from
    its text (`earlier_facts_of`) at each consolidation re-read the whole text, which grows with
    the session. Reading back a text made of `- fact` lines gives each fact's own lines that begin
    with "- " (its first always does), without the no-facts ones: those are appended here as
    each consolidation adds its facts, with the text's body built alongside."""

    __slots__ = ("facts", "body")

    def __init__(self, texts: Iterable[str]) -> None:
        self.facts = dict.fromkeys(earlier_facts_of(texts))  # what the next consolidation reads back, in order, once each
        self.body = "\n".join(f"- {f}" for f in self.facts)

    def consolidate(self, new: list[str]) -> str:
        """`consolidated_message`'s text with the facts `new` (`extract_key_facts` of the messages
        it replaces) after the earlier ones; the state moves on to read that text back."""
        facts = self.facts
        added = [f for f in dict.fromkeys(new) if f not in facts]
        lines = "\n".join(f"- {f}" for f in added)
        whole = f"{self.body}\n{lines}" if self.body and added else self.body or lines
        text = "[Session context consolidated]\n\n" + (whole or NO_FACTS)
        back = [f for f in earlier_facts_of([lines]) if f not in facts] if added else []
        if back:
            facts.update(dict.fromkeys(back))
            more = "\n".join(f"- {f}" for f in dict.fromkeys(back))
            self.body = f"{self.body}\n{more}" if self.body else more
        return text


@dataclass
class _Item:
    """A message moving through the condenser pipeline (or a summary chunk standing for several)."""

    role: str
    content: str
    source: Message | None
    covers: tuple[Message, ...] = ()


def run_pipeline(messages: list[Message], settings: ConsolidatorSettings) -> tuple[list[_Item], dict[int, tuple[Decision, str, str]]]:
    """The condensers in missy's order; `fate`: what each one did to a message (decision, reason, reason code)."""
    fate: dict[int, tuple[Decision, str, str]] = {}
    items = [_Item(m.role, content_text(m), m) for m in messages]
    # 1. ObservationMaskingCondenser(max_output_chars=2000)
    for item in items:
        if item.role == "tool" and len(item.content) > 2000:
            item.content = f"[Tool output masked: {len(item.content)} chars, preview: {item.content[:200].strip()}...]"
            fate[item.source.index] = (  # type: ignore[union-attr]
                Decision.REPLACED, "replaced: tool output over 2,000 characters masked to a preview (ObservationMaskingCondenser)", "replaced")
    # 2. AmortizedForgettingCondenser(forget_threshold=0.3, decay_rate=0.05, always_keep=4)
    kept: list[_Item] = []
    n = len(items)
    for i, item in enumerate(items):
        score = max(0.0, 1 - 0.05 * (n - 1 - i)) + (0.2 if item.role == "tool" else 0) + (0.1 if any(k in item.content.lower() for k in SCORE_KEYWORDS) else 0)
        if i == 0 or i >= n - 4 or score >= 0.3:
            kept.append(item)
        else:
            fate[item.source.index] = (  # type: ignore[union-attr]
                Decision.DROPPED, f"dropped: relevance score {score:.2f} below 0.3 (AmortizedForgettingCondenser)", "low_relevance")
    # 3. SummarizingCondenser(preserve_recent=6, chunk_size=10), keyword fallback (no LLM)
    older, recent = (kept[:-6], kept[-6:]) if len(kept) > 6 else ([], kept)
    summarized: list[_Item] = []
    for start in range(0, len(older), 10):
        chunk = older[start:start + 10]
        sources = [c.source for c in chunk if c.source is not None]
        facts = extract_key_facts(sources)
        text = "\n".join(f"- {f}" for f in facts) if facts else NO_FACTS
        summarized.append(_Item("user", "[Conversation Summary]\n" + text, None, tuple(sources)))
        for s in sources:
            fate[s.index] = (Decision.SUMMARIZED, f"summarized: in chunk {start // 10 + 1} of the older messages (SummarizingCondenser, keyword fallback)", "summarised")
    items = summarized + recent
    # 4. WindowCondenser(max_messages=max(10, max_tokens // 150))
    window = max(10, settings.max_tokens // 150)
    for item in items[:-window] if len(items) > window else []:
        for s in (item.covers or ((item.source,) if item.source else ())):
            fate[s.index] = (Decision.DROPPED, f"dropped: outside the last {window} messages (WindowCondenser)", "outside_window")
    return items[-window:], fate


def threshold_usage(used: int, threshold: int) -> dict[str, int]:
    """The context's tokens split at the consolidation threshold (the parts add up to `used`)."""
    return {"below_threshold": min(used, threshold), "headroom": max(0, used - threshold)}


def plan(session: Session, settings: ConsolidatorSettings, counts: TokenCounts) -> Plan:
    """The seed's consolidation in columns (`plan_columns`); the condenser pipeline message by message."""
    return plan_records(session, settings, counts) if settings.pipeline else plan_columns(session, settings, counts)


def consolidation_notes(settings: Any, trigger: bool, current: int, used: int) -> list[str]:
    """What a plan says about consolidating (both plans, step by step and in columns, say it):
    that it fired, that max_tokens <= 0 turns it off, or that the context as sent reaches the
    threshold the consolidator does not see."""
    threshold = int(settings.max_tokens * settings.threshold_pct)
    notes = [f"consolidation triggered: {current:,} estimated tokens >= {settings.threshold_pct:.0%} of {settings.max_tokens:,}"] if trigger else []
    if settings.max_tokens <= 0 and used > 0:
        notes.append(f"max_tokens={settings.max_tokens} turns consolidation off (should_consolidate is False when max_tokens <= 0), "
                     f"so nothing is consolidated and the {used:,} tokens are over the {settings.max_tokens:,}-token budget")
    elif not trigger and used >= threshold:
        notes.append(f"the context as sent ({used:,} tokens with the system prompt) reaches the {threshold:,}-token threshold, but the "
                     f"consolidator measures only the messages ({current:,}), so it does not consolidate")
    return notes


def absorbed_plans(earlier: Sequence[str], text_tokens: Callable[[str], int]) -> list[SummaryPlan]:
    """The recorded (earlier) consolidations a new one absorbs: listed as summarised into it, at
    their own positions, so the new one (listed after them, at the position after the file's
    summaries) is never read as one of the file's, and no recorded summary vanishes from the plan."""
    return [SummaryPlan(k, text_tokens(text), Decision.SUMMARIZED, "summarized: absorbed by the new consolidation (its facts carried "
                        "into it)", text) for k, text in enumerate(earlier)]


def plan_records(session: Session, settings: ConsolidatorSettings, counts: TokenCounts) -> Plan:
    """Both algorithms step by step, one record per message: what `plan_columns` is checked against."""
    raw = counts.message_tokens
    chars_mode = counts.tokenizer.name == "chars"
    # Messages an earlier consolidation already replaced (a simulation carries them as summaries).
    covered = {c for s in session.summaries for c in s.covers}
    earlier = [s.text for s in session.summaries]
    messages = [m for m in session.messages if m.role != "system" and m.id not in covered]
    system_messages = [m for m in session.messages if m.role == "system"]
    total_raw = sum(raw[m.index] for m in messages)
    earlier_raw = sum(len(t) if chars_mode else counts.text(t) for t in earlier)
    current = (total_raw + earlier_raw) // 4 if chars_mode else total_raw + earlier_raw  # estimate_tokens: Σ len(str(content)) // 4

    def tokens_of(m: Message) -> int:
        return raw[m.index] // 4 if chars_mode else raw[m.index]

    def text_tokens(text: str) -> int:
        return len(text) // 4 if chars_mode else counts.text(text)

    trigger = should_consolidate(current, settings)
    fate: dict[int, tuple[Decision, str, str]] = {}  # index -> decision, reason, reason code
    masked: dict[int, str] = {}
    system_prompt = base_system_prompt(session, system_messages)
    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    context_index: list[int | None] = [None] * len(context)
    summary_plans: list[SummaryPlan] = []
    recent_ids: set[int] = set()
    for m in session.messages:
        if m.id in covered:
            fate[m.index] = (Decision.SUMMARIZED, "summarized: replaced by an earlier consolidation", "summarised")
    if trigger and len(messages) > RECENT_KEEP and not settings.pipeline:
        earlier_facts = earlier_facts_of(earlier)
        summary_plans += absorbed_plans(earlier, text_tokens)
        earlier = []  # the new consolidation absorbs the earlier ones
    else:
        earlier_facts = []
    for text in earlier:
        context.append({"role": "user", "content": text})
        context_index.append(None)
        summary_plans.append(SummaryPlan(len(summary_plans), text_tokens(text), Decision.KEPT, "kept: an earlier consolidation", text))
    if trigger and len(messages) > RECENT_KEEP:
        if settings.pipeline:
            items, fate = run_pipeline(messages, settings)
            for item in items:
                if item.source is not None:
                    recent_ids.add(item.source.index)
                    msg = item.source.to_openai()
                    if item.source.index in fate:
                        msg["content"] = masked[item.source.index] = item.content
                    context.append(msg)
                    context_index.append(item.source.index)
                else:
                    context.append({"role": "user", "content": item.content})
                    context_index.append(None)
                    summary_plans.append(SummaryPlan(len(summary_plans), text_tokens(item.content), Decision.KEPT, f"kept: condensed from {len(item.covers)} messages", item.content))
        else:
            older, recent = messages[:-RECENT_KEEP], messages[-RECENT_KEEP:]
            text = consolidated_message(older, earlier_facts)
            context.append({"role": "user", "content": text})
            context += [m.to_openai() for m in recent]
            context_index += [None] + [m.index for m in recent]
            recent_ids = {m.index for m in recent}
            summary_plans.append(SummaryPlan(len(session.summaries), text_tokens(text), Decision.KEPT, f"kept: replaces the {len(older)} older messages", text))
            for m in older:
                fate[m.index] = (Decision.SUMMARIZED, "summarized: older than the last 4 messages, replaced by the [Session context consolidated] key facts", "summarised")
    else:
        context += [m.to_openai() for m in messages]
        context_index += [m.index for m in messages]
        recent_ids = {m.index for m in messages}

    pct = current / settings.max_tokens * 100 if settings.max_tokens else 0.0
    plans: list[MessagePlan] = []
    for m in session.messages:
        t = tokens_of(m)
        if m.role == "system":
            plans.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "system", "kept: part of the system prompt, which consolidation never touches", t,
                                     "system_prompt"))
            continue
        if m.index in fate:
            decision, reason, code = fate[m.index]
            sent = text_tokens(masked[m.index]) if decision is Decision.REPLACED else 0
            plans.append(MessagePlan(m.index, m.id, m.role, m.category, t, decision, "consolidated", reason, sent, code))
            continue
        # The pipeline's survivors are the newest it preserves (SummarizingCondenser's preserve_recent);
        # with 4 messages or fewer, every one is among the last 4 consolidation keeps.
        code = "fresh_tail"
        if trigger and len(messages) > RECENT_KEEP:
            reason = "kept: one of the last 4 messages, always kept verbatim" if not settings.pipeline else "kept: survived the condenser pipeline"
        elif trigger:
            reason = f"kept: only {len(messages)} messages, consolidation needs more than 4"
        else:
            reason = f"kept: {current:,} estimated tokens are {pct:.1f} % of {settings.max_tokens:,}, under the {settings.threshold_pct:.0%} threshold"
            code = "under_trigger"
        plans.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "recent", reason, t, code))

    # Each context entry as estimate_tokens sees it, str(content) (a tool-call-only message is
    # "None"), so a sent message's share is exactly its sent_tokens; estimate_tokens floors once
    # over all the characters, so the trigger's figure for the same messages can be a few higher.
    used = sum(text_tokens(str(c.get("content"))) for c in context)
    sent = [p for p in plans if p.sent]
    # The budget is max_tokens; the threshold only decides when to consolidate.
    totals = Totals(budget=settings.max_tokens, used=used, kept=sum(p.tokens for p in sent), dropped=sum(p.tokens for p in plans if not p.sent),
                    fits=used <= settings.max_tokens, kept_messages=len(sent), dropped_messages=len(plans) - len(sent))
    threshold = int(settings.max_tokens * settings.threshold_pct)
    notes = consolidation_notes(settings, trigger, current, used)
    return Plan(
        policy="missy-consolidator", params=params_dict(settings), tokenizer=counts.scheme.label,
        allocation={"below_threshold": threshold, "headroom": settings.max_tokens - threshold},
        usage=threshold_usage(used, threshold),
        system_prompt=system_prompt, messages=tuple(plans), context=tuple(context), totals=totals,
        context_index=tuple(context_index), summaries=tuple(summary_plans), zones=ZONES,
        notes=tuple(notes),
        extra={"current_tokens": current, "should_consolidate": trigger and len(messages) > RECENT_KEEP, "threshold_tokens": threshold,
               "after_tokens": used, "consolidated_ids": [m.id for m in messages if fate.get(m.index, (None,))[0] is Decision.SUMMARIZED]},
    )


@dataclass(frozen=True)
class _Seen:
    """What the seed's consolidation reads of a session under one counting, kept per session: a
    re-plan after a parameter change only compares the estimate with the threshold, and hands
    over what it sends as runs of the session's messages (`Joined`) and columns kept per shape."""

    messages: tuple[int, ...]  # the messages it measures: not system, not covered by an earlier consolidation
    at: np.ndarray  # the same, as an index array
    runs: tuple[tuple[int, int], ...]  # the same as runs [a, b) of the session's indices
    covered: np.ndarray  # per message: an earlier consolidation replaced it
    is_system: np.ndarray
    tokens: np.ndarray  # per message: its estimate (characters / 4 by default)
    current: int  # estimate_tokens of the messages and the earlier consolidations
    system_prompt: str
    earlier: tuple[str, ...]
    #: Filled when first needed: the consolidation message replacing all but the last 4, the
    #: context's tokens when nothing is consolidated, the ids it consolidates, and the columns of
    #: each shape of plan (by whether the trigger fires and whether it consolidates).
    found: dict[Any, Any]


def _seen(session: Session, counts: TokenCounts) -> _Seen:
    return derived_from_counts(session, counts, "missy-consolidator", _make_seen)


def _make_seen(session: Session, counts: TokenCounts) -> _Seen:
    raw = counts.token_array
    chars_mode = counts.tokenizer.name == "chars"
    covered_ids = {c for s in session.summaries for c in s.covers}
    ids, roles, _ = session.message_columns
    n = len(ids)
    covered = np.fromiter((i in covered_ids for i in ids), dtype=bool, count=n) if covered_ids else np.zeros(n, dtype=bool)
    is_system = np.fromiter((r == "system" for r in roles), dtype=bool, count=n)
    messages = np.flatnonzero(~is_system & ~covered)
    breaks = (np.flatnonzero(np.diff(messages) != 1) + 1).tolist()
    firsts, lasts = [0, *breaks], [*breaks, len(messages)]
    runs = tuple((int(messages[a]), int(messages[b - 1]) + 1) for a, b in zip(firsts, lasts, strict=True) if b > a)
    earlier = tuple(s.text for s in session.summaries)
    total_raw = int(raw[messages].sum())
    earlier_raw = sum(len(t) if chars_mode else counts.text(t) for t in earlier)
    current = (total_raw + earlier_raw) // 4 if chars_mode else total_raw + earlier_raw
    system_messages = [session.messages[i] for i in np.flatnonzero(is_system).tolist()]
    made = _Seen(tuple(messages.tolist()), messages, runs, covered, is_system, raw // 4 if chars_mode else raw, current,
                 base_system_prompt(session, system_messages), earlier, {})
    return made


_ZONE_NAMES = ("system", "consolidated", "recent")
_CODE_NAMES = ("system_prompt", "summarised", "fresh_tail", "under_trigger")


class _Why:
    """The reason sentence of message i, as `plan_records` words it."""

    def __init__(self, code: np.ndarray, older: np.ndarray, kept: str) -> None:
        self.code, self.older, self.kept = code, older, kept

    def __call__(self, i: int) -> str:
        code = self.code[i]
        if code == 0:
            return "kept: part of the system prompt, which consolidation never touches"
        if code == 1:
            if self.older[i]:
                return "summarized: older than the last 4 messages, replaced by the [Session context consolidated] key facts"
            return "summarized: replaced by an earlier consolidation"
        return self.kept


class _Shape(NamedTuple):
    """A plan's columns, which depend only on the session and on whether the trigger fires and a
    consolidation follows: kept per session and shared by the plans of that shape (read-only)."""

    older: np.ndarray  # per message: this consolidation replaces it
    decision: np.ndarray
    sent_tokens: np.ndarray
    zone: np.ndarray
    code: np.ndarray
    kept: int  # the tokens of the messages sent
    kept_messages: int


def _shape(seen: _Seen, trigger: bool, consolidating: bool) -> _Shape:
    key = ("shape", trigger, consolidating)
    found = seen.found.get(key)
    if found is not None:
        return found  # type: ignore[no-any-return]
    n = len(seen.tokens)
    older = np.zeros(n, dtype=bool)
    if consolidating:
        older[seen.at[:-RECENT_KEEP]] = True
    replaced = seen.covered | older
    code = np.full(n, 2 if trigger else 3, dtype=np.int16)
    code[replaced] = 1
    code[seen.is_system] = 0
    zone = np.full(n, 2, dtype=np.int16)
    zone[replaced] = 1
    zone[seen.is_system] = 0
    not_sent = replaced & ~seen.is_system
    decision = np.where(not_sent, np.int8(SUMMARIZED), np.int8(KEPT)).astype(np.int8)
    sent_tokens = np.where(not_sent, 0, seen.tokens)
    for column in (older, decision, sent_tokens, zone, code):
        column.flags.writeable = False
    found = seen.found[key] = _Shape(older, decision, sent_tokens, zone, code, int(sent_tokens.sum()), n - int(not_sent.sum()))
    return found


def plan_columns(session: Session, settings: ConsolidatorSettings, counts: TokenCounts) -> Plan:
    """The seed's consolidation (not the pipeline) in columns, its reasons built when read."""
    seen = _seen(session, counts)
    chars_mode = counts.tokenizer.name == "chars"

    def text_tokens(text: str) -> int:
        return len(text) // 4 if chars_mode else counts.text(text)

    messages = seen.messages
    current = seen.current
    trigger = should_consolidate(current, settings)
    consolidating = trigger and len(messages) > RECENT_KEEP
    system_prompt = seen.system_prompt
    head: list[Any] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    used = text_tokens(system_prompt) if system_prompt else 0
    summary_plans: list[SummaryPlan] = []
    earlier = () if consolidating else seen.earlier  # a new consolidation absorbs the earlier ones
    if consolidating:
        summary_plans += absorbed_plans(seen.earlier, text_tokens)
    for text in earlier:
        head.append({"role": "user", "content": text})
        summary_plans.append(SummaryPlan(len(summary_plans), text_tokens(text), Decision.KEPT, "kept: an earlier consolidation", text))
        used += text_tokens(text)
    consolidated_ids: list[str] = []
    if consolidating:
        text = seen.found.get("text")
        if text is None:
            earlier_facts = earlier_facts_of(seen.earlier)
            text = seen.found["text"] = consolidated_message([session.messages[i] for i in messages[:-RECENT_KEEP]], earlier_facts)
        recent = messages[-RECENT_KEEP:]
        head.append({"role": "user", "content": text})
        context: Sequence[Any] = (*head, *(session.messages[i] for i in recent))
        context_index: Sequence[int | None] = (*(None,) * len(head), *recent)
        text_count = text_tokens(text)
        summary_plans.append(SummaryPlan(len(session.summaries), text_count, Decision.KEPT, f"kept: replaces the {len(messages) - RECENT_KEEP} older messages", text))
        used += text_count + sum(text_tokens(content_text(session.messages[i])) for i in recent)
        consolidated_ids = seen.found.get("ids")  # type: ignore[assignment]
        if consolidated_ids is None:  # one list per session, shared by its plans' `extra` (read, never changed)
            ids = session.message_columns[0]
            consolidated_ids = seen.found["ids"] = list(map(ids.__getitem__, messages[:-RECENT_KEEP]))
    else:
        # Every message measured is sent as it is: runs of the session's messages, not copied.
        context = Joined((tuple(head), 0, len(head)), *((session.messages, a, b) for a, b in seen.runs))
        context_index = Joined(((None,) * len(head), 0, len(head)), (messages, 0, len(messages)))
        sent_all = seen.found.get("sent")
        if sent_all is None:
            # What each message is sent as is its content, counted as the counts were: the counts
            # themselves (divided by 4 in chars mode, as `seen.tokens` already is).
            sent_all = seen.found["sent"] = int(seen.tokens[seen.at].sum())
        used += sent_all

    pct = current / settings.max_tokens * 100 if settings.max_tokens else 0.0
    if consolidating:
        kept_reason = "kept: one of the last 4 messages, always kept verbatim"
    elif trigger:
        kept_reason = f"kept: only {len(messages)} messages, consolidation needs more than 4"
    else:
        kept_reason = f"kept: {current:,} estimated tokens are {pct:.1f} % of {settings.max_tokens:,}, under the {settings.threshold_pct:.0%} threshold"
    shape = _shape(seen, trigger, consolidating)
    n = len(seen.tokens)
    columns = Columns(session, shape.decision, seen.tokens, shape.sent_tokens, shape.zone, _ZONE_NAMES, shape.code, _CODE_NAMES,
                      partial(_reason, _Why(shape.code, shape.older, kept_reason)))
    totals = Totals(budget=settings.max_tokens, used=used, kept=shape.kept, dropped=_all_tokens(seen) - shape.kept,
                    fits=used <= settings.max_tokens, kept_messages=shape.kept_messages, dropped_messages=n - shape.kept_messages)
    threshold = int(settings.max_tokens * settings.threshold_pct)
    notes = consolidation_notes(settings, trigger, current, used)
    return Plan(
        policy="missy-consolidator", params=params_dict(settings), tokenizer=counts.scheme.label,
        allocation={"below_threshold": threshold, "headroom": settings.max_tokens - threshold},
        usage=threshold_usage(used, threshold),
        system_prompt=system_prompt, messages=Rows(columns), context=Context(context), totals=totals,
        context_index=context_index, summaries=tuple(summary_plans), zones=ZONES,
        notes=tuple(notes),
        extra={"current_tokens": current, "should_consolidate": consolidating, "threshold_tokens": threshold,
               "after_tokens": used, "consolidated_ids": consolidated_ids},
    )


def _all_tokens(seen: _Seen) -> int:
    found = seen.found.get("all")
    if found is None:
        found = seen.found["all"] = int(seen.tokens.sum())
    return found  # type: ignore[no-any-return]


def _reason(why: _Why, i: int) -> str:
    return why(i)


def refresh(plan: Plan, session: Session, counts: TokenCounts | None) -> Plan:
    """After ctxviz dropped messages from the plan (pair safety): the threshold split and `extra`."""
    used = plan.totals.used
    return replace(plan, usage=threshold_usage(used, plan.allocation["below_threshold"]), extra={**plan.extra, "after_tokens": used})


def compact(prefix: Session, plan: Plan, settings: ConsolidatorSettings, counts: TokenCounts, summarizer: Any, i: int,
            events: list[Any]) -> Summary | None:
    """MemoryConsolidator's trigger after a build: the key facts it wrote replace what it consolidated
    (and everything the previous consolidation covered)."""
    from ...replay_contract import Event

    ids = plan.extra.get("consolidated_ids") or []
    if not (plan.extra.get("should_consolidate") and ids):
        return None
    text = next((c["content"] for c in plan.context if str(c.get("content", "")).startswith("[Session context consolidated]")), "")
    # In the order they were covered (a set's order changes with the hash seed, and `--json` prints it).
    previous = tuple(dict.fromkeys(c for s in prefix.summaries for c in s.covers))
    events.append(Event(i, "consolidation", f"consolidated {len(ids)} messages at {plan.extra['current_tokens']:,} estimated tokens"))
    return Summary(text=text, messages_covered=len(ids) + len(previous), covers=previous + tuple(ids))


POLICY = Policy(
    reason_codes=("system_prompt", "under_trigger", "fresh_tail", "replaced", "summarised", "low_relevance", "outside_window"),
    name="missy-consolidator",
    title="missy MemoryConsolidator",
    params_type=ConsolidatorSettings,
    measure_name="missy-consolidator-chars",
    measure=measure_chars,
    default_tokenizer="chars",
    plan=plan,
    compact=compact,
    zone_parts={"system": "below_threshold", "consolidated": "below_threshold", "recent": "below_threshold"},
    refresh=refresh,
    description="At >= 80 % of max_tokens, keep the last 4 messages and replace the rest with key facts.",
    framework='missy',
    framework_version='v0.1.0 (5632c314)',
    source='missy/agent/consolidation.py MemoryConsolidator',
    counter='characters / 4',
    trigger=('threshold_pct', 'max_tokens'),
    keep=(),
    stand_in="key-fact summary written offline (missy's own format)",
)
