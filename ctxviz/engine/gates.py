"""`ctxviz check`: a session's context under a policy, held to rules a CI job can enforce.

Each rule gives one `Outcome`: passed or not, and a line a person reads in a CI log
("max_tokens: the context is 31,250 tokens, over the limit of 30,000 by 1,250"). Rules about the
plan read one plan; rules about what survives, compactions and cost read one replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError
from .checks import PlanOptions
from .counting import CountStore
from .plan import Plan
from .planner import plan_session
from .policies import get_policy
from .policies.common import tools_json
from .session import Session
from .wording import noun

COMPACTION_KINDS = frozenset({"summary", "consolidation", "compaction", "hard_threshold"})


@dataclass(frozen=True)
class Outcome:
    rule: str
    passed: bool
    message: str
    #: The rule could not be checked at all (an unreadable file, a premise the session cannot meet,
    #: such as a first user message in a session without one): an error, not a broken rule.
    errored: bool = False


def check(session: Session, rules: Any, policy: str, params: Any, tokenizer: str | None, store: CountStore | None = None,
          options: PlanOptions | None = None) -> list[Outcome]:
    """Every rule of `rules` (io.rules.Rules) on `session`, in the rules file's order."""
    store = store or CountStore()
    plan = plan_session(session, policy, params, tokenizer, store=store, options=options)
    out: list[Outcome] = []
    used = plan.totals.used
    if rules.max_tokens is not None:
        out.append(_at_most("max_tokens", "the context is", used, rules.max_tokens))
    if rules.baseline_used is not None:
        limit = rules.baseline_used + rules.baseline_plus
        out.append(_at_most("max_tokens_over_baseline", f"the context is {used - rules.baseline_used:+,} tokens from the baseline's "
                            f"{rules.baseline_used:,}:", used, limit))
    for part, limit in rules.max_part_tokens.items():
        if part not in plan.usage:  # a part this session's plan lacks: not a broken rule, one that cannot be checked
            out.append(Outcome(f"max_part_tokens.{part}", False, f"{policy} has no part {part!r} (its parts: {', '.join(plan.usage)})",
                               errored=True))
        else:
            out.append(_at_most(f"max_part_tokens.{part}", f"{part} uses", plan.usage[part], limit))
    if rules.max_tool_definition_tokens is not None:
        counts = store.get(session, get_policy(policy).scheme(tokenizer, session.model))
        tools = counts.text(tools_json(session)) if session.tools else 0
        out.append(_at_most("max_tool_definition_tokens", f"the {len(session.tools)} tool definitions take", tools, rules.max_tool_definition_tokens))
    timeline = None
    if rules.needs_replay or rules.min_retention is not None:
        from .simulate import simulate

        timeline = simulate(session, policy, params, tokenizer, store, options=options)
    if timeline is not None:
        out += _survival(session, rules, timeline)
        turns = len(timeline.turns)
        if rules.max_compactions_per_100 is not None:
            compactions = sum(1 for e in timeline.events if e.kind in COMPACTION_KINDS)
            rate = 100 * compactions / turns if turns else 0.0
            ok = rate <= rules.max_compactions_per_100
            out.append(Outcome("max_compactions_per_100", ok, f"{compactions:,} {noun(compactions, 'compaction')} in {turns:,} turns = {rate:.2f} per 100 turns, "
                                                                  f"{'within' if ok else 'over'} the limit of {rules.max_compactions_per_100:g}"))
        if rules.max_cost is not None:
            from .caching import cache_costs

            cache = cache_costs(timeline, rules.cost_model or None)
            ok = cache.cost <= rules.max_cost
            out.append(Outcome("max_cost", ok, f"input costs ${cache.cost:,.4f} with {cache.model.name}'s prompt caching "
                                               f"({cache.hit_share:.0%} cache hits), {'within' if ok else 'over'} the limit of ${rules.max_cost:,.4f}"))
        if rules.min_retention is not None:
            out.append(_retention(rules.min_retention, timeline, plan))
    return out


def policy_parts(policy: str, params: Any, tokenizer: str | None) -> tuple[str, ...] | None:
    """The allocation parts a policy's plans have (those of an empty session's plan), or None when
    it cannot plan an empty session: `ctxviz check` refuses a `max_part_tokens` typo from them."""
    try:
        return tuple(plan_session(Session(), policy, params, tokenizer).usage)
    except Exception:  # a plugin that cannot plan nothing: each session's plan says instead
        return None


def _at_most(rule: str, what: str, value: int, limit: int) -> Outcome:
    if value <= limit:
        return Outcome(rule, True, f"{what} {value:,} tokens, within the limit of {limit:,}")
    return Outcome(rule, False, f"{what} {value:,} tokens, over the limit of {limit:,} by {value - limit:,}")


def _survival(session: Session, rules: Any, timeline: Any) -> list[Outcome]:
    out: list[Outcome] = []
    turns = timeline.turns
    for want in rules.survive:
        # The steps from the first that holds the message said through `through_turn` (turns are
        # named by their session index: a step is the request of messages 0..index).
        last = min(want.through_turn, len(timeline.session.messages) - 1)
        if want.message:
            from .pins import resolve_pins

            try:
                indices = sorted(resolve_pins(session, [want.message]))
            except ParameterError as exc:  # the session has no such message: the rule cannot be checked here
                out.append(Outcome(f"survive {want.label}", False, f"{want.label}: {str(exc).split(': ', 1)[-1]}", errored=True))
                continue
            said = indices[0]
            steps = range(timeline.step_of(said), timeline.step_of(last + 1))
            missing = next((k for k in steps if not all(timeline.plan_at(k).messages[i].sent for i in indices if i <= turns[k].index)), None)
        else:
            needle = want.text.lower()
            said = next((m.index for m in session.messages if needle in m.text.lower()), None)
            if said is None:
                out.append(Outcome(f"survive {want.label}", False, f"{want.label} is never said in the session"))
                continue
            steps = range(timeline.step_of(said), timeline.step_of(last + 1))
            missing = next((k for k in steps if not _sent_text_has(timeline.plan_at(k), needle)), None)
        rule = f"survive {want.label}"
        if missing is None:
            out.append(Outcome(rule, True, f"{want.label}, said at #{said}, is sent at every turn through {last}"))
            continue
        at = turns[missing].index
        plan = timeline.plan_at(missing)
        holders = indices if want.message else [m.index for m in session.messages[: at + 1] if needle in m.text.lower()]
        lost = next((plan.messages[i] for i in holders if i < len(plan.messages) and not plan.messages[i].sent), None)
        event = next(iter(turns[missing].events), None)
        why = f": #{lost.index} {lost.reason}" if lost is not None else ""
        why += f" ({event.kind}: {event.message})" if event is not None else ""
        out.append(Outcome(rule, False, f"{want.label}, said at #{said}, is no longer sent at turn {at}, before turn {want.through_turn}{why}"))
    return out


def _sent_text_has(plan: Plan, needle: str) -> bool:
    """The text reaches the model: in the system prompt, a sent summary, or a message as sent."""
    for entry in plan.context:
        content = entry.get("content")
        if needle in (content if isinstance(content, str) else str(content)).lower():
            return True
        for call in entry.get("tool_calls") or ():
            if needle in str(call).lower():
                return True
    return False


def _retention(floor: float, timeline: Any, plan: Plan) -> Outcome:
    try:
        from . import retention_timeline
    except ImportError:
        return Outcome("min_retention", False, "retention needs ctxviz's anchors (engine/retention_timeline.py), which this build lacks")
    score_of = getattr(retention_timeline, "timeline_retention_score", None)
    if score_of is None:
        return Outcome("min_retention", False, "this build's retention module has no timeline score")
    score = float(score_of(timeline))
    ok = score >= floor
    return Outcome("min_retention", ok, f"{score:.1%} of the session's anchors are still sent at the last turn, "
                                        f"{'at or above' if ok else 'below'} the floor of {floor:.1%}")
