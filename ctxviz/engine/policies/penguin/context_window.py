"""The ContextWindowManager's category budgets (Penguin's penguin/system/context_window.py).

Seed page 002 and policies.md section 3 are the specification. The default is the seed page's
version ("v-old": 10/35/50/5, keep only the newest image, trim order SYSTEM_OUTPUT, DIALOG, CONTEXT,
and ERROR/INTERNAL/UNKNOWN messages silently lost whenever trimming runs); the later source's
behaviour is available through named options and the `categories-later` preset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Category, Message, Session
from ...wording import noun
from ..base import Policy, params_dict
from ..common import recorded_covers
from .content import (
    CATEGORY_ORDER,
    IMAGE_PLACEHOLDER,
    LATER_TRIM_ORDER,
    OTHER,
    SEED_TRIM_ORDER,
    count_content,
    images_to_replace,
    measure_message,
    replace_images,
    summary_message,
)
from .context_window_columns import plan_columns


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class CategoryBudgets:
    max_tokens: int = field(default=150_000, metadata=_help("Total token budget", unit="tokens", min=1, step=1000))
    system_fraction: float = field(default=0.10, metadata=_help("SYSTEM share (never trimmed)", min=0.0, max=1.0, step=0.01))
    context_fraction: float = field(default=0.35, metadata=_help("CONTEXT share", min=0.0, max=1.0, step=0.01))
    dialog_fraction: float = field(default=0.50, metadata=_help("DIALOG share", min=0.0, max=1.0, step=0.01))
    system_output_fraction: float = field(default=0.05, metadata=_help("SYSTEM_OUTPUT (tool output) share", min=0.0, max=1.0, step=0.01))
    other_fraction: float = field(default=0.05, metadata=_help("Share for each of ERROR, INTERNAL, UNKNOWN", min=0.0, max=1.0, step=0.01))
    max_context_images: int | None = field(default=None, metadata=_help("Later source: keep up to N image parts (unset: keep only the newest image message)", min=0))
    trim_other_categories: bool = field(default=False, metadata=_help("Later source: trim ERROR/INTERNAL/UNKNOWN first and keep survivors (the seed version drops them all when trimming runs)"))

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        for name in ("system_fraction", "context_fraction", "dialog_fraction", "system_output_fraction", "other_fraction"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0.0 and 1.0, got {value}")
        if self.max_context_images is not None and self.max_context_images < 0:
            raise ValueError(f"max_context_images must be >= 0, got {self.max_context_images}")

    def fraction(self, category: Category) -> float:
        return {
            Category.SYSTEM: self.system_fraction, Category.CONTEXT: self.context_fraction, Category.DIALOG: self.dialog_fraction,
            Category.SYSTEM_OUTPUT: self.system_output_fraction,
        }.get(category, self.other_fraction)

    def category_max(self, category: Category) -> int:
        return int(self.max_tokens * self.fraction(category))

    def category_min(self, category: Category) -> int:
        return min(1000, self.category_max(category)) if category is Category.SYSTEM else 0


def plan(session: Session, budgets: CategoryBudgets, counts: TokenCounts) -> Plan:
    """The plan in columns (`context_window_columns`): what the manager holds is kept per session."""
    return plan_columns(session, budgets, counts, params_dict(budgets))


def plan_records(session: Session, budgets: CategoryBudgets, counts: TokenCounts) -> Plan:
    """The manager's steps one message at a time: the reference the plan in columns is checked against."""
    tok = counts.tokenizer
    tokens = list(counts.message_tokens)
    messages: Any = session.messages
    notes: list[str] = []
    # A summary recorded in the file (a Claude Code compaction) replaces the messages it covers:
    # they are out of the session the manager trims, and the summary is in it as a CONTEXT message.
    covered, superseded = recorded_covers(session)
    summaries: list[tuple[int, Message]] = []  # (recorded summary's position, its CONTEXT message)
    if covered:
        first = {k: min(m.index for m in session.messages if covered.get(m.id) == k) for k in set(covered.values())}
        messages = list(messages)
        for k in sorted(first):
            s = session.summaries[k]
            m = summary_message(s.text, len(messages), k, s.created_at or session.messages[first[k]].timestamp)
            messages.append(m)
            tokens.append(count_content(s.text, tok))
            summaries.append((k, m))
    events: list[dict[str, Any]] = []
    maxima = {c: budgets.category_max(c) for c in CATEGORY_ORDER}

    def usage_by_category(alive: set[int]) -> dict[Category, int]:
        out = dict.fromkeys(CATEGORY_ORDER, 0)
        for i in alive:
            out[messages[i].category] += tokens[i]
        return out

    alive = {i for i in range(len(messages)) if i >= len(session.messages) or messages[i].id not in covered}
    before = usage_by_category(alive)
    total = sum(before.values())
    over = [c for c in CATEGORY_ORDER if c is not Category.SYSTEM and before[c] > maxima[c]]
    decision = dict.fromkeys(range(len(messages)), Decision.KEPT)
    reasons: dict[int, str] = {}
    codes: dict[int, str] = {}  # the reason code of each change the trimming makes
    for i in range(len(session.messages)):
        if i not in alive:
            decision[i] = Decision.SUMMARIZED
    sent_content: dict[int, Any] = {}
    trimmed = bool(over) or total > budgets.max_tokens

    if trimmed:
        # 1. Images: keep the newest image message (seed) or up to max_context_images parts (later source).
        with_images = [m for m in messages if m.image_count and m.index in alive]
        replace = images_to_replace(with_images, budgets.max_context_images)
        for m in replace:
            content = replace_images(m.openai_content())
            sent_content[m.index] = content
            tokens[m.index] = count_content(content, tok)
            decision[m.index] = Decision.REPLACED
            codes[m.index] = "replaced"
            reasons[m.index] = f"replaced: its {m.image_count:,} {noun(m.image_count, 'image')} became \"{IMAGE_PLACEHOLDER}\" ({counts[m.index]:,} -> {tokens[m.index]:,} tokens)"

        # 2. Categories over their own maximum, in trim order, oldest first, whole messages.
        usage = usage_by_category(alive)
        total = sum(usage.values())
        total_over = total > budgets.max_tokens
        to_trim = total - budgets.max_tokens
        order = LATER_TRIM_ORDER if budgets.trim_other_categories else SEED_TRIM_ORDER
        for category in order:
            cat_tokens, cat_max = usage[category], maxima[category]
            if cat_tokens <= cat_max:
                continue  # only a category over its own maximum is trimmed, even when the total is over
            excess = cat_tokens - cat_max
            if total_over:
                excess = max(excess, min(to_trim, cat_tokens - budgets.category_min(category)))
            members = sorted((m for m in messages if m.category is category and m.index in alive), key=lambda m: m.timestamp)
            removed = 0
            dropped_here = 0
            for m in members:
                if removed >= excess:
                    break
                removed += tokens[m.index]
                alive.discard(m.index)
                dropped_here += 1
                decision[m.index] = Decision.DROPPED
                codes[m.index] = "over_cap"
                reasons[m.index] = (f"dropped: {category.name} held {cat_tokens:,} tokens, over its {cat_max:,} maximum; "
                                    f"the oldest are removed until {excess:,} are freed")
            to_trim -= removed
            if to_trim <= 0:
                total_over = False
            events.append({"category": category.name, "messages_removed": dropped_here, "tokens_freed": removed,
                           "total_before": total, "total_after": total - removed})
            total -= removed
        if not budgets.trim_other_categories:
            # The seed version rebuilds the session from the trimmed categories only, so ERROR,
            # INTERNAL and UNKNOWN messages vanish whenever trimming runs (fixed upstream in a48cdaaa).
            for i in list(alive):
                if messages[i].category in OTHER:
                    alive.discard(i)
                    decision[i] = Decision.DROPPED
                    codes[i] = "dropped"  # the seed's bug, not a rule: no code of its own
                    reasons[i] = f"dropped: the seed version loses {messages[i].category.name} messages whenever it trims (fixed in the later source)"

    final = usage_by_category(alive)
    summary_index = {k: m.index for k, m in summaries}
    summary_plans = [SummaryPlan(k, 0, Decision.DROPPED, "dropped: the ContextWindowManager sends only the summaries that cover "
                                                        "messages of this file", s.text) for k, s in enumerate(session.summaries)]
    for k, s in enumerate(session.summaries):
        if k in superseded:
            summary_plans[k] = SummaryPlan(k, count_content(s.text, tok), Decision.DROPPED, "dropped: superseded by a later recorded "
                                           "summary, which covers every message of the file this one covers", s.text)
        elif k in summary_index:
            i = summary_index[k]
            kept = decision[i] is Decision.KEPT
            why = (f"kept: sent as a CONTEXT message in place of the {sum(1 for v in covered.values() if v == k)} messages it covers"
                   if kept else reasons.get(i, "dropped"))
            summary_plans[k] = SummaryPlan(k, tokens[i], decision[i], why, s.text)
    plans: list[MessagePlan] = []
    for m in session.messages:
        d = decision[m.index]
        cat = m.category
        reason = reasons.get(m.index)
        code = codes.get(m.index, "")
        if d is Decision.SUMMARIZED:
            code = "summarised"
            k = covered[m.id]
            reason = (f"summarized: recorded summary #{k + 1} covers it" + (" and is sent in its place as a CONTEXT message"
                      if summary_plans[k].decision is Decision.KEPT else f"; the summary itself is not sent ({summary_plans[k].reason})"))
        elif reason is None:
            if cat is Category.SYSTEM:
                reason, code = "kept: SYSTEM messages are never trimmed", "system_prompt"
            elif not trimmed:
                reason, code = f"kept: no category is over its maximum and the total {sum(before.values()):,} is within {budgets.max_tokens:,}", "fits"
            elif before[cat] <= maxima[cat]:
                reason = f"kept: {cat.name} ({before[cat]:,} tokens) is within its {maxima[cat]:,} maximum, and only categories over their own maximum are trimmed"
                code = "within_cap"
            elif any(e["category"] == cat.name and e["messages_removed"] for e in events):
                reason, code = f"kept: newer than the {cat.name} messages removed to bring the category within {maxima[cat]:,}", "fits"
            else:
                reason, code = f"kept: {cat.name} is within its {maxima[cat]:,} maximum once older images are replaced", "within_cap"
        sent = tokens[m.index] if d is not Decision.DROPPED and d is not Decision.SUMMARIZED else 0
        plans.append(MessagePlan(m.index, m.id, m.role, cat, counts[m.index], d, cat.value, reason, sent, code))

    context: list[dict[str, Any]] = [{"role": "system", "content": session.system_prompt}] if session.system_prompt else []
    context_index: list[int | None] = [None] * len(context)
    pending = sorted(((first[k], m) for k, m in summaries), key=lambda p: p[0]) if summaries else []
    for m in messages[: len(session.messages)]:
        while pending and pending[0][0] <= m.index:  # a summary goes where the messages it covers were
            summary = pending.pop(0)[1]
            if summary.index in alive:
                context.append(summary.to_openai())
                context_index.append(None)
        if m.index in alive:
            msg = m.to_openai()
            if m.index in sent_content:
                msg["content"] = sent_content[m.index]
            context.append(msg)
            context_index.append(m.index)
    used = sum(final.values())
    if any(final[c] > maxima[c] for c in CATEGORY_ORDER) or used > budgets.max_tokens:
        notes.append(f"after trimming the context holds {used:,} tokens against {budgets.max_tokens:,}; categories within their own maximum (and SYSTEM) are never trimmed")
    sent_plans = [p for p in plans if p.sent]
    totals = Totals(budget=budgets.max_tokens, used=used, kept=sum(p.tokens for p in sent_plans),
                    dropped=sum(p.tokens for p in plans if not p.sent), fits=used <= budgets.max_tokens,
                    kept_messages=len(sent_plans), dropped_messages=len(plans) - len(sent_plans),
                    allocation_kind="caps")  # each category's maximum is its own cap; the seed's add up to 115 %
    return Plan(
        policy="categories", params=params_dict(budgets), tokenizer=counts.scheme.label,
        allocation={c.value: maxima[c] for c in CATEGORY_ORDER}, usage={c.value: final[c] for c in CATEGORY_ORDER},
        system_prompt=session.system_prompt, messages=tuple(plans), context=tuple(context), totals=totals,
        summaries=tuple(summary_plans),
        context_index=tuple(context_index),
        zones=tuple(c.value for c in CATEGORY_ORDER), notes=tuple(notes),
        extra={"truncation_events": events, "trimmed": trimmed, "usage_before": {c.value: before[c] for c in CATEGORY_ORDER},
               "category_min": {c.value: budgets.category_min(c) for c in CATEGORY_ORDER},
               "image_count": sum(m.image_count for m in messages)},
    )


def format_token_usage(plan: Plan) -> str:
    """format_token_usage(): the plain report, categories in enum order."""
    total, budget = plan.totals.used, plan.totals.budget
    lines = [f"Token Usage: {total:,}/{budget:,} ({total / budget * 100:.1f}%)", f"Available: {max(0, budget - total):,} tokens", "", "By Category:"]
    for name, used in plan.usage.items():
        cat_max = plan.allocation[name]
        pct = used / cat_max * 100 if cat_max else 0.0
        lines.append(f"  {Category(name).name}: {used:,}/{cat_max:,} ({pct:.1f}%)")
    return "\n".join(lines)


def format_token_usage_table(plan: Plan) -> str:
    """format_token_usage_rich(): the table form (Rich's SIMPLE box at 80 columns, drawn without Rich)."""
    total, budget = plan.totals.used, plan.totals.budget
    title = f"Token Usage: {total:,}/{budget:,} ({total / budget * 100:.1f}%)"
    mins = plan.extra.get("category_min", {})

    def bar(used: int, cat_max: int) -> str:
        pct = min(100.0, used / cat_max * 100) if cat_max else 0.0
        filled = int(pct / 100 * 20)
        return "[" + "\u2588" * filled + " " * (20 - filled) + f"] {pct:.1f}%"

    rows = [(Category(name).name, f"{used:,}", f"{mins.get(name, 0):,}-{plan.allocation[name]:,}",
             f"{plan.allocation[name] / budget * 100:.1f}%", bar(used, plan.allocation[name])) for name, used in plan.usage.items()]
    rows.append(("TOTAL", f"{total:,}", f"0-{budget:,}", "100.0%", bar(total, budget)))
    headers = ("Category", "Tokens", "Allocation", "Budget", "Usage")
    widths = [max(15, *(len(r[0]) for r in rows)), max(8, *(len(r[1]) for r in rows))]
    widths += [max(len(headers[i]), *(len(r[i]) for r in rows)) for i in (2, 3, 4)]

    def line(cells: tuple[str, ...]) -> str:
        out = [cells[0].ljust(widths[0]), cells[1].rjust(widths[1])] + [c.ljust(w) for c, w in zip(cells[2:], widths[2:], strict=True)]
        return " " + "  ".join(out)

    width = len(line(headers))
    return "\n".join([title.center(width).rstrip(), "", line(headers).rstrip(), " " + "\u2500" * (width - 1)] + [line(r).rstrip() for r in rows])


POLICY = Policy(
    reason_codes=("system_prompt", "fits", "within_cap", "over_cap", "replaced", "summarised", "dropped"),
    name="categories",
    title="ContextWindowManager (category budgets)",
    params_type=CategoryBudgets,
    measure_name="penguin-content",
    measure=measure_message,
    default_tokenizer="cl100k_base",
    plan=plan,
    description="Per-category maxima; only categories over their own maximum are trimmed, oldest first, SYSTEM_OUTPUT then DIALOG then CONTEXT.",
    framework='Penguin',
    framework_version='penguin 293bf778',
    source='penguin/system/context_window.py ContextWindowManager',
    counter='tiktoken cl100k_base over message content',
    trigger=('max_tokens',),
    keep=(),
)
