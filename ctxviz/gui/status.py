"""The status bar's words for a plan: its own figures, read from `plan.totals` and nothing else.

The same numbers and words as `ctxviz plan` prints in its `total` row (used, budget, and
`Plan.fit_verdict()`), and the same verdict in the report. Beside them, what the provider's log
says (`plan.reported`: the last call's real fill, the unseen prompt's estimate) and how many notes
the loader and the policy made, each labelled as what it is and never added into the plan's figures.
"""

from __future__ import annotations

from ..engine.plan import Plan
from ..engine.wording import noun

SEPARATOR = "  •  "
#: What the next call's price assumes of the cache (`engine.next_call.NextCall.state`), in a word.
NEXT_CALL_CACHE = {"warm": " (cache warm)", "expired": " (cache expired)", "cold": " (nothing cached)"}


def verdict(plan: Plan) -> str:
    """The plan's own verdict, the phrase `ctxviz plan` prints in its total row: "fits", "OVER by N"
    (N = used - budget, never negative), or which parts are over their allotment and by how much."""
    return plan.fit_verdict()


def status_text(plan: Plan, short: bool = False) -> str:
    """policy budget: used of budget tokens (tokenizer) • verdict • sent / not sent • real count
    against the model's window • cost • pairs. Two windows are never side by side unlabelled: the
    policy's is its budget, the real count's is the model's (named only when it differs).

    `short`: the same figures in fewer words, without the tokenizer's name and the policy's
    estimate error (the status bar shows it when the whole line would be cut at 1024 pixels; its
    tooltip has the whole line)."""
    t = plan.totals
    head = f"{plan.policy} budget: {t.used:,} of {t.budget:,} tokens" + ("" if short else f" ({plan.tokenizer})")
    parts = [head, verdict(plan), f"{t.kept_messages:,} sent, {t.dropped_messages:,} not sent"]
    if plan.real is not None:
        r = plan.real
        kind = "real count" if r.exact else "est. real count"
        if not r.window:
            window = " (model's window unknown)"
        elif r.window == t.budget:
            window = ""
        else:
            window = f" of the model's {r.window:,}" if short else f" of the model's {r.window:,}-token window"
        source = ""
        if r.from_usage is not None:  # the provider's own figure is the reference; the encoding's count only an estimate
            kind, source = "real count", " (from usage)" if short else " (from the provider's usage)"
        fits = "" if r.fits is None or not r.window else (": fits" if r.fits else f": OVER by {max(0, r.reference - r.window):,}")
        error = "" if short else f" (policy's estimate {r.heuristic_error * 100:+.1f}%)"
        parts.append(f"{kind} {r.reference:,}{source}{window}{fits}{error}")
        if r.input_cost is not None:
            cache = NEXT_CALL_CACHE.get(r.next_call.state, "") if r.next_call is not None and not short else ""
            parts.append(f"next call ≈ ${r.input_cost:.4f}{cache}")
    if plan.orphans:
        parts.append(f"{len(plan.orphans):,} broken tool-call {noun(len(plan.orphans), 'pair')}")
    return SEPARATOR.join(parts)


def status_texts(plan: Plan) -> tuple[str, ...]:
    """The status line, then shorter wordings of it for a narrow window: fewer words, then the
    next call's price left to the tooltip (the least needed figure: the Calls list has it)."""
    short = status_text(plan, short=True)
    parts = short.split(SEPARATOR)
    shortest = SEPARATOR.join(p for p in parts if not p.startswith("next call ≈"))
    return (status_text(plan), short, shortest)


def notes_count(notes: tuple[str, ...] | list[str]) -> str:
    """"1 note", "3 notes" ("" for none)."""
    return f"{len(notes):,} note{'' if len(notes) == 1 else 's'}" if notes else ""


def reported_turn_text(index: int, fill: int, sent: int) -> str:
    """For the context at one turn of the replay: what the call made after it really had in the window."""
    return (f"Reported by the provider for the call made after this turn (which produced #{index + 1}): {fill:,} tokens in the window, "
            f"beside the replay's {sent:,} at this turn.")


def unseen_text(unseen: int, counted: bool = False) -> str:
    """The estimate of the system prompt and tools a log does not record, labelled as such, or "";
    `counted`: the plan's own count holds it (`engine.checks.counts_unseen`: Claude Code's, from the
    provider's usage)."""
    if not unseen:
        return ""
    where = ("in the plan's figures, which start from the provider's usage, and in the real count" if counted
             else "not in the plan's figures; the real count includes it")
    return (f"Unseen: about {unseen:,} tokens of system prompt and tools the log does not record "
            f"(estimated from the first call, or the first after a compaction of a file that starts mid-conversation; {where}).")
