"""The plain-text form of a plan that `ctxviz plan` prints (the app shows the same numbers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.plan import Decision, Plan
from ..engine.ranking import TIERS
from ..engine.session import Session
from ..engine.wording import clip, counted, noun, spelled

if TYPE_CHECKING:
    from ..engine.checks import RealCount
    from ..engine.retention import Retention
    from ..engine.retention_timeline import TimelineRetention
    from ..engine.where import Where


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(r)]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def param_value_text(value: object) -> str:
    """A parameter's value as the text outputs show it: an unset one (None, or an empty text the
    policy reads as none, langchain-trim's `end_on`) says "unset" as the app's form does, not
    Python's `None` or nothing after the `=` (the JSON keeps null and "")."""
    return "unset" if value is None or value == "" else str(value)


def plan_summary(plan: Plan, session: Session, largest: int = 5, policy_note: str = "") -> str:
    """The plan as text. `policy_note`: a line under the policy's saying why it was chosen (the log's agent's own)."""
    lines: list[str] = []
    header = f"{session.source} ({session.format}, {len(session.messages):,} messages"
    header += f", model {session.model})" if session.model else ")"
    lines.append(header)
    params = ", ".join(f"{k}={param_value_text(v)}" for k, v in plan.params.items())
    lines.append(f"policy {plan.policy} ({params}); tokens counted with {plan.tokenizer}")
    if policy_note:
        lines.append(policy_note)
    lines.append("")

    t = plan.totals
    caps = t.allocation_kind == "caps"
    rows = [["allocation", "maximum" if caps else "allotted", "used", ""]]
    for part, allotted in plan.allocation.items():
        used = plan.usage.get(part, 0)
        rows.append([part, f"{allotted:,}", f"{used:,}", f"over by {used - allotted:,}" if used > allotted else ""])
    rows.append(["total", f"{t.budget:,}", f"{t.used:,}", plan.fit_verdict()])
    lines += _table(rows, {1, 2})
    allotted_sum = sum(plan.allocation.values())
    if caps and allotted_sum != t.budget:
        lines.append(f"  (each maximum is a cap of its own, not a share of a division: they add up to {allotted_sum:,}, "
                     f"{allotted_sum / t.budget * 100 if t.budget else 0:.0f} % of {t.budget:,})")
    lines.append("")

    zone_rows = [["zone", "messages", "tokens", "sent tokens", "sent", "not sent"]]
    for zone in plan.zones:
        members = [m for m in plan.messages if m.zone == zone]
        if not members:
            continue
        kept = [m for m in members if m.sent]
        zone_rows.append([spelled(zone), f"{len(members):,}", f"{sum(m.tokens for m in members):,}", f"{sum(m.sent_tokens for m in kept):,}",
                          f"{len(kept):,}", f"{len(members) - len(kept):,}"])
    lines += _table(zone_rows, {1, 2, 3, 4, 5})
    lines.append("")

    cat_rows = [["category", "messages", "tokens", "sent tokens"]]
    categories: dict[str, list[int]] = {}
    for m in plan.messages:
        entry = categories.setdefault(m.category, [0, 0, 0])
        entry[0] += 1
        entry[1] += m.tokens
        entry[2] += m.sent_tokens
    for name, (n, tokens, sent) in categories.items():
        cat_rows.append([name, f"{n:,}", f"{tokens:,}", f"{sent:,}"])
    lines += _table(cat_rows, {1, 2, 3})
    lines.append("")

    if plan.summaries:
        for s in plan.summaries:
            # Recorded summaries numbered from 1, as the reasons name them ("recorded summary #1 covers it");
            # one the policy writes now is placed after the file's.
            name = f"summary #{s.index + 1}" if s.index < len(session.summaries) else "new summary"
            lines.append(f"{name}: {spelled(s.reason)}")
        lines.append("")

    dropped = [m for m in plan.messages if not m.sent]
    if dropped:
        newest = max(dropped, key=lambda m: m.index)
        kinds: dict[str, int] = {}
        for m in dropped:
            kinds[m.decision.value] = kinds.get(m.decision.value, 0) + 1
        breakdown = f" ({', '.join(f'{n:,} {spelled(kind)}' for kind, n in kinds.items())})" if len(kinds) > 1 else f" ({spelled(next(iter(kinds)))})"
        lines.append(f"cut: {len(dropped):,} messages ({t.dropped:,} tokens) not sent{breakdown}, the newest #{newest.index}: {spelled(newest.reason)}")
        lines.append("largest messages not sent:")
        texts = {m.index: m.text for m in session.messages}
        for m in sorted(dropped, key=lambda m: (-m.tokens, m.index))[:largest]:
            lines.append(f"  #{m.index:<5} {m.role:<9} {m.tokens:>8,} tokens  {clip(texts[m.index])}")
    else:
        lines.append("cut: nothing dropped; every message is sent")
    from ..engine.lost import lost

    found = lost(plan, session)
    if found.system_prompt_dropped or found.replaced or found.truncated:
        # Losses the "cut" line does not show: a dropped system prompt, cleared tool results, truncated messages.
        lines.append("lost inside what is sent: " + "; ".join((["the system prompt is not sent"] if found.system_prompt_dropped else [])
                                                              + found.cuts()))
    if found.stand_in:
        lines.append(f"the summary is ctxviz's offline stand-in ({found.stand_in}): what is lost is measured against it, "
                     "not the agent's own summary")
    summarized = plan.by_decision(Decision.SUMMARIZED)
    if summarized:
        # (a summary the policy cut stands in for nothing: langchain-trim at a small max_tokens)
        unsent = plan.summaries and not any(s.decision in (Decision.KEPT, Decision.TRUNCATED) for s in plan.summaries)
        lines.append(f"{len(summarized):,} messages replaced by a summary" + (", which is not sent either" if unsent else ""))
    if plan.policy == "categories":
        from ..engine.policies.penguin.context_window import format_token_usage, format_token_usage_table

        lines += ["", format_token_usage(plan), "", format_token_usage_table(plan)]
    trigger = plan.extra.get("trigger")
    if trigger:
        lines.append("")
        lines += supyagent_context_status(plan, trigger)
    if plan.orphans:
        lines.append("")
        lines.append(f"{len(plan.orphans):,} broken tool-call {noun(len(plan.orphans), 'pair')}: the OpenAI and Anthropic APIs reject this context (use --pair-safe)")
        lines += [f"  {o.message}" for o in plan.orphans[:10]]
        if len(plan.orphans) > 10:
            lines.append(f"  ... and {len(plan.orphans) - 10:,} more (`ctxviz plan --json` lists them all)")
    if plan.reported is not None:
        rep = plan.reported
        lines.append("")
        lines.append(f"reported by the provider: {rep.last_window_fill:,} tokens in the window for the last call in the log (#{rep.last_index}; "
                     f"{rep.calls:,} {noun(rep.calls, 'call')} with usage); ctxviz's plan is a replay and does not include what the log does not record")
    if plan.real is not None:
        lines.append("")
        lines += real_count_lines(plan.real)
    if plan.notes:
        lines.append("")
        lines += [f"note: {n}" for n in plan.notes]
    return "\n".join(lines) + "\n"


def real_count_lines(r: RealCount) -> list[str]:
    """The real count (`--real-count`): against the model's window, beside the policy's estimate, and
    the next call's input cost with what it assumes. Where the log reports the call the request
    extends, the provider's own figure is the reference and the encoding's count is shown as an
    estimate beside it, never as the figure that proves the policy wrong."""
    kind = "real count" if r.exact else "estimated count (no tokenizer known for this model)"
    window = f"the {r.window:,}-token window of {r.model}" if r.window else f"an unknown window ({r.model} is not in the catalogue)"
    reference = r.reference
    verdict = "" if r.fits is None or not r.window else (f": fits with {r.window - reference:,} to spare" if r.fits else f": OVER by {reference - r.window:,}")
    u = r.from_usage
    if u is not None:
        lines = [f"count from the provider's reported usage: {u.tokens:,} tokens ({u.words(r.encoding)}) against {window}{verdict}",
                 f"  {kind} with {r.encoding}: {r.tokens:,} tokens, {_off(r.tokens, u.tokens)} the provider's figure (an estimate, not the reference)"]
        against = "the count from the provider's usage"
    else:
        lines = [f"{kind} with {r.encoding}: {r.tokens:,} tokens against {window}{verdict}"]
        against = f"the {kind.split(' (')[0]}"
    if r.compared != reference:
        against += f" of what it estimates ({r.compared:,}; the count above adds the {r.unseen:,} tokens the log does not record)"
    lines.append(f"  the policy's estimate ({r.estimated:,}) is {_off(r.estimated, r.compared)} {against}")
    if r.input_cost is not None:
        lines.append(f"  input cost of the next call: ${r.input_cost:.4f}" + (f" {r.next_call.assumption()}" if r.next_call is not None else ""))
    return lines


def _off(value: int, reference: int) -> str:
    """"12.0 % under" / "0.0 % over": how far `value` is from `reference`, as a share of it."""
    error = (value - reference) / reference if reference else 0.0
    return f"{abs(error) * 100:.1f} % {'over' if error >= 0 else 'under'}"


def _bar(percent: float) -> str:
    filled = int(percent) // 5
    return "[" + "\u2588" * filled + "\u2591" * (20 - filled) + "]"


def supyagent_context_status(plan: Plan, trigger: dict) -> list[str]:
    """supyagent's `/context` display (cli/main.py), bars and all."""
    extra = plan.extra
    lines = ["Context Status", f"  Context limit: {extra['context_limit']:,} tokens"]
    if extra.get("tool_tokens"):
        lines.append(f"  Tool definitions: {extra['tool_tokens']:,} tokens ({extra['tools']} tools)")
    if extra.get("summary_messages"):
        lines.append(f"  Last summary: {extra['summary_messages']} messages \u2192 {extra['summary_tokens']:,} tokens")
        if extra.get("summary_created"):
            lines.append(f"  Created: {str(extra['summary_created'])[:16].replace('T', ' ')}")
    else:
        lines.append("  No summary yet")
    lines += [
        "",
        "Summarization Triggers (N messages OR K tokens)",
        f"  Messages: {trigger['messages_since_summary']:,} / {trigger['messages_threshold']:,} ({int(trigger['messages_percent'])}%)",
        f"           {_bar(trigger['messages_percent'])}",
        f"  Tokens:   {trigger['total_tokens']:,} / {trigger['tokens_threshold']:,} ({int(trigger['tokens_percent'])}%)",
        f"           {_bar(trigger['tokens_percent'])}",
    ]
    if trigger["will_trigger"]:
        lines.append("\u26a1 Summarization will trigger on next message")
    return lines


# --- what was forgotten (engine/retention.py) ----------------------------------------------------


def _percent(share: float) -> str:
    return f"{share * 100:.0f} %"


def _instructions(kept: int, said: int) -> str:
    """The user instructions' share, or that there is none (a share of nothing would read 100 %)."""
    return f"user instructions {kept:,} of {said:,} ({_percent(kept / said)})" if said else "no user instruction in the session"


#: Retention of a session that states no anchor: nothing to keep, so no share.
NO_ANCHORS = "retention: the session states no anchor (no path, URL, id, error, quantity or quoted name), so there is nothing to lose"


def retention_summary(retention: Retention, shown: int = 10) -> str:
    """The retention of a plan: the score, the instructions' share, and what was lost, ranked
    (what the user asked, then what was used again, each with why and why its newest message is
    not sent); what only tool output said is folded into a count."""
    r = retention
    if not r.anchors:  # (a share of nothing read "0 of 0 anchors (100 %)" and "lost: nothing")
        return "\n" + NO_ANCHORS + "\n"
    lines = ["", f"retention: {r.kept:,} of {r.anchors:,} anchors still reach the model ({_percent(r.score)}); "
                 + _instructions(r.instructions_kept, r.instructions)]
    if r.by_kind:
        lines.append("  by kind: " + ", ".join(f"{kind} {kept}/{total}" for kind, (kept, total) in r.by_kind.items()))
    if r.lost:
        against = "; measured against ctxviz's offline stand-in summary, not the agent's own" if r.stand_in else ""
        folded = [a for a in r.lost if a.id in r.ranks and r.ranks[a.id].tier == 3]
        folded_ids = {a.id for a in folded}
        listed = [a for a in r.lost if a.id not in folded_ids]
        lines.append(f"lost ({len(r.lost):,}; what the user asked first, then what was used again{against}):")
        tier = 0
        for a in listed[:shown]:
            rank = r.ranks.get(a.id)
            if rank is not None and rank.tier != tier:
                tier = rank.tier
                lines.append(f" {TIERS[tier]}:")
            why = spelled(r.reasons.get(a.id, ""))
            because = f" [{rank.why}]" if rank is not None else f" (first said in #{a.first_index} {a.role})"
            lines.append(f"  {a.kind:<11} {a.label(60)}{because}" + (f"; {clip(why, 90)}" if why else ""))
        if len(listed) > shown:
            lines.append(f"  ... and {len(listed) - shown:,} more (--json lists them)")
        if folded:
            lines.append(f"  ... and {len(folded):,} {TIERS[3]}, folded: only a tool's output or the harness said them and nobody used "
                         "them again (--json lists them)")
    else:
        lines.append("lost: nothing; every anchor of the session still reaches the model")
    return "\n".join(lines) + "\n"


def timeline_retention_summary(tr: TimelineRetention, shown: int = 6, losses: int = 12) -> str:
    """Retention through a replay: the last turn's score, the lowest, and what each event lost."""
    lines: list[str] = []
    final = tr.final
    if final is not None and not final.anchors and (tr.lowest is None or not tr.lowest.anchors):
        return NO_ANCHORS + f" (retention: {tr.method})\n"
    if final is not None:
        lines.append(f"retention at the last turn (#{final.turn}): {final.kept:,} of {final.anchors:,} anchors ({_percent(final.score)}); "
                     + _instructions(final.instructions_kept, final.instructions))
    low = tr.lowest
    if low is not None:
        lines.append(f"lowest retention: {_percent(low.score)} at turn {low.turn} ({low.kept:,} of {low.anchors:,} anchors; "
                     + (f"instructions {low.instructions_kept} of {low.instructions})" if low.instructions else "no user instruction yet)")
                     + ("" if tr.exact else " among the turns planned"))
    events = tr.event_losses
    window = [loss for loss in tr.losses if loss.kind == "window"]
    for loss in events[:losses]:
        lines.append("  " + loss.sentence(shown, width=480))  # fewer anchors named, never the count of the rest cut
    if len(events) > losses:
        lines.append(f"  ... and {len(events) - losses:,} more events that lost anchors (--json lists them)")
    if window:
        total = sum(len(loss.lost) for loss in window)
        lines.append(f"  {total:,} anchors left with no event, as the window moved on, over {len(window):,} turns")
    if final is not None and final.lost:
        lines.append("lost at the last turn: " + ", ".join(a.label(60) for a in final.lost[:shown])
                     + (f" and {len(final.lost) - shown:,} more" if len(final.lost) > shown else ""))
    lines.append(f"(retention: {tr.method})")
    return "\n".join(lines) + "\n"


def where_summary(w: Where, source: str, policy: str) -> str:
    """Where a term went through a replay, in a few lines."""
    lines = [f"{w.term!r} in {source} with {policy}: "
             + (f"said in {counted(len(w.said), 'message')} ({', '.join(f'#{k}' for k in w.said[:8])}{' ...' if len(w.said) > 8 else ''})"
                if w.said else "in no message")
             + ("; it is in the system prompt, which is always sent" if w.in_system_prompt else "")]
    for a in w.anchors[:5]:
        lines.append(f"  anchor: {a.kind} {a.label(60)}, first said in #{a.first_index} ({a.role})")
    if not w.said and not w.in_system_prompt:
        return "\n".join(lines) + "\n"
    if w.spans:
        lines.append("  in the context at turns " + ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in w.spans))
    else:
        lines.append("  never in the context")
    for e in w.exits:
        cause = f"{e.kind} at turn {e.event_turn}: {e.message}" if e.kind != "window" else f"no event (plain trim): {e.message}"
        lines.append(f"  left at turn {e.turn}: {clip(cause, 300)}")
    lines.append(f"  at the last turn (#{w.last_turn}): {'in the context' if w.at_end else 'not in the context'}")
    if w.in_file_plan is not None and w.in_file_plan != w.at_end:
        after = f", with the compaction the log records before #{w.compactions_after[0]}," if w.compactions_after else ""
        lines.append(f"  after it: the file goes on past the last model call (in no request); the plan of the whole file{after} "
                     f"{'sends' if w.in_file_plan else 'does not send'} it")
    if not w.exact:
        lines.append(f"  (a large replay: {w.method})")
    return "\n".join(lines) + "\n"
