"""The status bar's words for a plan: its own figures, read from `plan.totals` and nothing else.

The same numbers and words as `ctxviz plan` prints in its `total` row (used, budget, and
`Plan.fit_verdict()`), and the same verdict in the report.
"""

from __future__ import annotations

from ..engine.plan import Plan

SEPARATOR = "  •  "


def verdict(plan: Plan) -> str:
    """The plan's own verdict, the phrase `ctxviz plan` prints in its total row: "fits", "OVER by N"
    (N = used - budget, never negative), or which parts are over their allotment and by how much."""
    return plan.fit_verdict()


def status_text(plan: Plan) -> str:
    """policy: used of budget tokens (tokenizer) • verdict • sent / not sent • real count • cost • pairs."""
    t = plan.totals
    parts = [f"{plan.policy}: {t.used:,} of {t.budget:,} tokens ({plan.tokenizer})", verdict(plan),
             f"{t.kept_messages:,} sent, {t.dropped_messages:,} not sent"]
    if plan.real is not None:
        r = plan.real
        window = f"{r.window:,}" if r.window else "unknown window"
        fits = "" if r.fits is None else ("fits" if r.fits else f"OVER by {max(0, r.tokens - (r.window or 0)):,}")
        kind = "real" if r.exact else "est."
        parts.append(f"{kind} {r.tokens:,} / {window} {fits} (heuristic {r.heuristic_error * 100:+.1f}%)")
        if r.input_cost is not None:
            parts.append(f"next call ≈ ${r.input_cost:.4f}")
    if plan.orphans:
        parts.append(f"{len(plan.orphans)} broken tool-call pair(s)")
    return SEPARATOR.join(parts)
