"""The ContextWindowManager's category budgets decided in columns: the same plan as
`context_window.plan_records`, with no record per message.

What the manager holds does not depend on the budgets: the messages no recorded summary covers,
the summaries in their place as CONTEXT messages, each one's category and count, and each
category's messages oldest first. That is kept per session and counting scheme
(`counting.derived_from_counts`). A plan then sums each category with `bincount`, trims a category
over its maximum with one binary search on its oldest-first prefix sums (the manager removes the
oldest until the excess is freed), and hands the messages over as columns whose reasons are built
for the rows someone reads. Only the image step, which touches a few messages, stays a loop.

tests/test_categories_columns.py checks it against `plan_records` on random sessions and
parameters, the samples and the real logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...counting import TokenCounts, derived_from_counts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, REPLACED, SUMMARIZED, Columns, Rows
from ...session import Category, Message, Session
from ...wording import noun
from ..common import recorded_covers
from .content import (
    CATEGORY_ORDER,
    IMAGE_PLACEHOLDER,
    LATER_TRIM_ORDER,
    OTHER,
    SEED_TRIM_ORDER,
    count_content,
    images_to_replace,
    replace_images,
    summary_message,
)

_ZONES = tuple(c.value for c in CATEGORY_ORDER)
_CODES = ("system_prompt", "fits", "within_cap", "over_cap", "replaced", "summarised", "dropped")
SYSTEM_PROMPT, FITS, WITHIN_CAP, OVER_CAP, REPLACED_CODE, SUMMARISED, SEED_DROPPED = range(len(_CODES))
_NUMBER = {c: k for k, c in enumerate(CATEGORY_ORDER)}


class Budgets(Protocol):
    """What this module reads of `context_window.CategoryBudgets`."""

    max_tokens: int
    max_context_images: int | None
    trim_other_categories: bool

    def category_max(self, category: Category) -> int: ...

    def category_min(self, category: Category) -> int: ...


@dataclass(frozen=True, eq=False)
class Held:
    """What the manager holds for one session and counting scheme: its messages (the session's,
    then the recorded summaries' CONTEXT messages), their counts and categories, which are alive
    before trimming, each category's alive messages oldest first, and the recorded summaries."""

    messages: tuple[Message, ...]
    tokens: np.ndarray  # int64, the summaries' counts after the session's
    category: np.ndarray  # int8 positions in CATEGORY_ORDER
    alive: np.ndarray  # bool: not covered by a recorded summary
    oldest_first: dict[Category, np.ndarray]  # per category its alive messages, sorted by timestamp (stably)
    with_images: tuple[Message, ...]  # the alive messages with an image, in order
    owner: np.ndarray  # per session message: the recorded summary that replaces it, or -1
    covered_by: dict[int, int]  # per recorded summary: how many messages it replaces
    summaries: tuple[tuple[int, Message], ...]  # (recorded summary's position, its CONTEXT message)
    first: dict[int, int]  # per recorded summary: the first message it covers
    superseded: frozenset[int]
    image_count: int


def held_of(session: Session, counts: TokenCounts) -> Held:
    return derived_from_counts(session, counts, "categories", _held)


def _held(session: Session, counts: TokenCounts) -> Held:
    """`plan_records`' messages, counts and alive set, built the same way."""
    tok = counts.tokenizer
    n = len(session.messages)
    messages: list[Message] = list(session.messages)
    tokens = list(counts.message_tokens)
    covered, superseded = recorded_covers(session)
    summaries: list[tuple[int, Message]] = []
    first: dict[int, int] = {}
    if covered:
        first = {k: min(m.index for m in session.messages if covered.get(m.id) == k) for k in set(covered.values())}
        for k in sorted(first):
            s = session.summaries[k]
            m = summary_message(s.text, len(messages), k, s.created_at or session.messages[first[k]].timestamp)
            messages.append(m)
            tokens.append(count_content(s.text, tok))
            summaries.append((k, m))
    owner = np.fromiter((covered.get(i, -1) for i in session.message_columns[0]), dtype=np.int64, count=n) if covered else np.full(n, -1)
    alive = np.ones(len(messages), dtype=bool)
    alive[:n] = owner < 0
    category = np.fromiter((_NUMBER[m.category] for m in messages), dtype=np.int8, count=len(messages))
    oldest_first = {}
    for c in CATEGORY_ORDER:
        members = [m for m in messages if m.category is c and alive[m.index]]
        oldest_first[c] = np.fromiter((m.index for m in sorted(members, key=lambda m: m.timestamp)), dtype=np.int64, count=len(members))
    covered_by: dict[int, int] = {}
    for k in covered.values():
        covered_by[k] = covered_by.get(k, 0) + 1
    return Held(tuple(messages), np.asarray(tokens, dtype=np.int64), category, alive, oldest_first,
                tuple(m for m in messages if m.image_count and alive[m.index]), owner, covered_by, tuple(summaries), first, superseded,
                sum(m.image_count for m in messages))


def _usage(held: Held, tokens: np.ndarray, alive: np.ndarray) -> dict[Category, int]:
    sums = np.bincount(held.category[alive], weights=tokens[alive], minlength=len(CATEGORY_ORDER))
    return {c: int(sums[k]) for k, c in enumerate(CATEGORY_ORDER)}


class _Why:
    """The reason sentence of message i, as `plan_records` words it."""

    def __init__(self, held: Held, code: np.ndarray, kept_reason: dict[Category, str], replaced: dict[int, str], over_cap: dict[Category, str],
                 summary_plans: list[SummaryPlan], session: Session) -> None:
        self.held, self.code, self.kept_reason, self.replaced, self.over_cap = held, code, kept_reason, replaced, over_cap
        self.summary_plans, self.session = summary_plans, session

    def __call__(self, i: int) -> str:
        code = self.code[i]
        m = self.session.messages[i]
        if code == SUMMARISED:
            k = int(self.held.owner[i])
            s = self.summary_plans[k]
            return (f"summarized: recorded summary #{k + 1} covers it" + (" and is sent in its place as a CONTEXT message"
                    if s.decision is Decision.KEPT else f"; the summary itself is not sent ({s.reason})"))
        if code == OVER_CAP:
            return self.over_cap[m.category]
        if code == SEED_DROPPED:
            return f"dropped: the seed version loses {m.category.name} messages whenever it trims (fixed in the later source)"
        if code == REPLACED_CODE:
            return self.replaced[i]
        return self.kept_reason[m.category]


def plan_columns(session: Session, budgets: Budgets, counts: TokenCounts, params: dict[str, Any]) -> Plan:
    """The plan of `plan_records`, decided on the arrays of `Held`."""
    held = held_of(session, counts)
    tok = counts.tokenizer
    n = len(session.messages)
    size = len(held.messages)
    tokens = held.tokens
    maxima = {c: budgets.category_max(c) for c in CATEGORY_ORDER}
    alive = held.alive.copy()
    before = _usage(held, tokens, alive)
    total = sum(before.values())
    over = [c for c in CATEGORY_ORDER if c is not Category.SYSTEM and before[c] > maxima[c]]
    decision = np.full(size, KEPT, dtype=np.int8)
    decision[:n][~held.alive[:n]] = SUMMARIZED
    code = np.full(size, -1, dtype=np.int16)  # -1: the category's own kept code, set below
    replaced_reason: dict[int, str] = {}
    over_cap_reason: dict[Category, str] = {}
    sent_content: dict[int, Any] = {}
    events: list[dict[str, Any]] = []
    trimmed = bool(over) or total > budgets.max_tokens

    if trimmed:
        with_images = held.with_images
        replace = images_to_replace(with_images, budgets.max_context_images)
        if replace:
            tokens = tokens.copy()
        for m in replace:
            content = replace_images(m.openai_content())
            sent_content[m.index] = content
            tokens[m.index] = count_content(content, tok)
            decision[m.index] = REPLACED
            code[m.index] = REPLACED_CODE
            replaced_reason[m.index] = (f"replaced: its {m.image_count:,} {noun(m.image_count, 'image')} became \"{IMAGE_PLACEHOLDER}\" "
                                        f"({counts[m.index]:,} -> {int(tokens[m.index]):,} tokens)")

        usage = _usage(held, tokens, alive)
        total = sum(usage.values())
        total_over = total > budgets.max_tokens
        to_trim = total - budgets.max_tokens
        for category in LATER_TRIM_ORDER if budgets.trim_other_categories else SEED_TRIM_ORDER:
            cat_tokens, cat_max = usage[category], maxima[category]
            if cat_tokens <= cat_max:
                continue
            excess = cat_tokens - cat_max
            if total_over:
                excess = max(excess, min(to_trim, cat_tokens - budgets.category_min(category)))
            members = held.oldest_first[category]
            before_each = np.zeros(len(members), dtype=np.int64)  # what is freed before each member is removed
            if len(members) > 1:
                np.cumsum(tokens[members[:-1]], out=before_each[1:])
            dropped_here = int(np.searchsorted(before_each, excess, side="left"))  # removed while less than the excess is freed
            gone = members[:dropped_here]
            removed = int(tokens[gone].sum())
            alive[gone] = False
            decision[gone] = DROPPED
            code[gone] = OVER_CAP
            over_cap_reason[category] = (f"dropped: {category.name} held {cat_tokens:,} tokens, over its {cat_max:,} maximum; "
                                         f"the oldest are removed until {excess:,} are freed")
            to_trim -= removed
            if to_trim <= 0:
                total_over = False
            events.append({"category": category.name, "messages_removed": dropped_here, "tokens_freed": removed,
                           "total_before": total, "total_after": total - removed})
            total -= removed
        if not budgets.trim_other_categories:
            lost = alive & np.isin(held.category, [_NUMBER[c] for c in OTHER])
            alive[lost] = False
            decision[lost] = DROPPED
            code[lost] = SEED_DROPPED

    final = _usage(held, tokens, alive)
    summary_plans = _summary_plans(session, held, tokens, decision, code, over_cap_reason, replaced_reason, tok)
    kept_reason: dict[Category, str] = {}
    kept_code: dict[Category, int] = {}
    for cat in CATEGORY_ORDER:
        if cat is Category.SYSTEM:
            kept_reason[cat], kept_code[cat] = "kept: SYSTEM messages are never trimmed", SYSTEM_PROMPT
        elif not trimmed:
            kept_reason[cat], kept_code[cat] = (f"kept: no category is over its maximum and the total {sum(before.values()):,} "
                                                f"is within {budgets.max_tokens:,}", FITS)
        elif before[cat] <= maxima[cat]:
            kept_reason[cat] = (f"kept: {cat.name} ({before[cat]:,} tokens) is within its {maxima[cat]:,} maximum, and only categories "
                                "over their own maximum are trimmed")
            kept_code[cat] = WITHIN_CAP
        elif any(e["category"] == cat.name and e["messages_removed"] for e in events):
            kept_reason[cat], kept_code[cat] = f"kept: newer than the {cat.name} messages removed to bring the category within {maxima[cat]:,}", FITS
        else:
            kept_reason[cat], kept_code[cat] = f"kept: {cat.name} is within its {maxima[cat]:,} maximum once older images are replaced", WITHIN_CAP
    own = code[:n]
    unset = own < 0
    own[unset] = np.asarray([kept_code[c] for c in CATEGORY_ORDER], dtype=np.int16)[held.category[:n][unset]]
    own[decision[:n] == SUMMARIZED] = SUMMARISED
    sent = (decision[:n] != DROPPED) & (decision[:n] != SUMMARIZED)
    sent_tokens = np.where(sent, tokens[:n], 0)
    original = counts.token_array
    zone = held.category[:n].astype(np.int16)
    columns = Columns(session, decision[:n], original, sent_tokens, zone, _ZONES, own, _CODES,
                      _Why(held, own, kept_reason, replaced_reason, over_cap_reason, summary_plans, session))

    context: list[Any] = [{"role": "system", "content": session.system_prompt}] if session.system_prompt else []
    context_index: list[int | None] = [None] * len(context)
    alive_messages = np.flatnonzero(alive[:n]).tolist()
    pending = sorted(((held.first[k], m) for k, m in held.summaries), key=lambda p: p[0])
    at = 0
    for start, summary in pending:  # a summary goes where the messages it covers were
        upto = int(np.searchsorted(alive_messages, start, side="left"))
        _append_messages(context, context_index, session, alive_messages[at:upto], sent_content)
        at = upto
        if alive[summary.index]:
            context.append(summary)
            context_index.append(None)
    _append_messages(context, context_index, session, alive_messages[at:], sent_content)

    notes: list[str] = []
    used = sum(final.values())
    if any(final[c] > maxima[c] for c in CATEGORY_ORDER) or used > budgets.max_tokens:
        notes.append(f"after trimming the context holds {used:,} tokens against {budgets.max_tokens:,}; categories within their own "
                     "maximum (and SYSTEM) are never trimmed")
    kept_tokens = int(original[sent].sum())
    kept_messages = int(sent.sum())
    totals = Totals(budget=budgets.max_tokens, used=used, kept=kept_tokens, dropped=int(original.sum()) - kept_tokens,
                    fits=used <= budgets.max_tokens, kept_messages=kept_messages, dropped_messages=n - kept_messages, allocation_kind="caps")
    return Plan(
        policy="categories", params=params, tokenizer=counts.scheme.label,
        allocation={c.value: maxima[c] for c in CATEGORY_ORDER}, usage={c.value: final[c] for c in CATEGORY_ORDER},
        system_prompt=session.system_prompt, messages=Rows(columns), context=Context(context), totals=totals,
        summaries=tuple(summary_plans), context_index=tuple(context_index), zones=_ZONES, notes=tuple(notes),
        extra={"truncation_events": events, "trimmed": trimmed, "usage_before": {c.value: before[c] for c in CATEGORY_ORDER},
               "category_min": {c.value: budgets.category_min(c) for c in CATEGORY_ORDER}, "image_count": held.image_count},
    )


def _append_messages(context: list[Any], context_index: list[int | None], session: Session, indexes: list[int],
                     sent_content: dict[int, Any]) -> None:
    messages = session.messages
    for i in indexes:
        if i in sent_content:
            msg = messages[i].to_openai()
            msg["content"] = sent_content[i]
            context.append(msg)
        else:
            context.append(messages[i])
    context_index.extend(indexes)


def _summary_plans(session: Session, held: Held, tokens: np.ndarray, decision: np.ndarray, code: np.ndarray,
                   over_cap: dict[Category, str], replaced: dict[int, str], tok: Any) -> list[SummaryPlan]:
    """Each recorded summary's plan, as `plan_records` words it (a summary's CONTEXT message is
    trimmed like any CONTEXT message)."""
    plans = [SummaryPlan(k, 0, Decision.DROPPED, "dropped: the ContextWindowManager sends only the summaries that cover "
                                                 "messages of this file", s.text) for k, s in enumerate(session.summaries)]
    index = {k: m.index for k, m in held.summaries}
    numbers = {KEPT: Decision.KEPT, DROPPED: Decision.DROPPED, REPLACED: Decision.REPLACED, SUMMARIZED: Decision.SUMMARIZED}
    for k, s in enumerate(session.summaries):
        if k in held.superseded:
            plans[k] = SummaryPlan(k, count_content(s.text, tok), Decision.DROPPED, "dropped: superseded by a later recorded "
                                   "summary, which covers every message of the file this one covers", s.text)
        elif k in index:
            i = index[k]
            d = numbers[int(decision[i])]
            if d is Decision.KEPT:
                why = f"kept: sent as a CONTEXT message in place of the {held.covered_by.get(k, 0)} messages it covers"
            elif code[i] == OVER_CAP:
                why = over_cap[Category.CONTEXT]
            elif code[i] == REPLACED_CODE:
                why = replaced[i]
            else:
                why = "dropped"
            plans[k] = SummaryPlan(k, int(tokens[i]), d, why, s.text)
    return plans
