"""Compare two plans, and answer "why was this dropped, and what would keep it?".

The smallest change is found by searching the pure policy (exponential then binary search along
each numeric parameter, both directions), not by reasoning about it, so it holds for every policy
and every quirk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError
from .checks import PlanOptions, apply_pair_safety
from .counting import TokenCounts
from .plan import SENT_DECISIONS, Decision, MessagePlan, Plan, SummaryPlan
from .policies import get_policy
from .policies.base import Policy, field_type, param_fields
from .session import Session
from .wording import counted


@dataclass(frozen=True)
class Difference:
    index: int
    id: str
    role: str
    a: MessagePlan
    b: MessagePlan

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.id, "role": self.role,
                "a": {"decision": self.a.decision.value, "zone": self.a.zone, "reason": self.a.reason},
                "b": {"decision": self.b.decision.value, "zone": self.b.zone, "reason": self.b.reason}}


def compare(a: Plan, b: Plan) -> list[Difference]:
    """Messages whose decision differs between two plans of the same session."""
    return [Difference(x.index, x.id, x.role, x, y) for x, y in zip(a.messages, b.messages, strict=True) if x.decision != y.decision]


@dataclass(frozen=True)
class SummaryDifference:
    """A summary one plan sends and the other does not (or sends differently). The messages'
    comparison alone said "0 messages decided differently" where Claude Code's plan sent the log's
    837-token compact summary and LangChain's trim dropped it: the summary is what stands for the
    20 messages both leave out, so losing it is a difference a user must see."""

    #: The summary's place in the plans (`SummaryPlan.index`): a recorded one's number is index + 1.
    index: int
    #: The file's recorded summary (True), or one a policy writes now.
    recorded: bool
    a: SummaryPlan | None
    b: SummaryPlan | None

    @property
    def name(self) -> str:
        return f"summary #{self.index + 1}" if self.recorded else "a new summary"

    @staticmethod
    def _side(s: SummaryPlan | None) -> str:
        if s is None:
            return "has none"
        return f"{s.decision.value} (sent)" if s.decision in SENT_DECISIONS else f"{s.decision.value} (not sent)"

    def line(self) -> str:
        """`summary #1: A kept (sent) / B dropped (not sent)`"""
        return f"{self.name}: A {self._side(self.a)} / B {self._side(self.b)}"

    def to_json(self) -> dict[str, Any]:
        def side(s: SummaryPlan | None) -> dict[str, Any] | None:
            return None if s is None else {"decision": s.decision.value, "sent": s.decision in SENT_DECISIONS, "tokens": s.tokens, "reason": s.reason}
        return {"summary": self.index + 1 if self.recorded else None, "recorded": self.recorded, "a": side(self.a), "b": side(self.b)}


def compare_summaries(a: Plan, b: Plan, recorded: int | None = None) -> list[SummaryDifference]:
    """Summaries whose decision differs between two plans of the same session, paired by their
    place. `recorded`: how many summaries the session's file records (`len(session.summaries)`);
    without it, a summary both plans list is taken as recorded and one only one plan lists as new."""
    by_a = {s.index: s for s in a.summaries}
    by_b = {s.index: s for s in b.summaries}
    out = []
    for index in sorted(by_a.keys() | by_b.keys()):
        x, y = by_a.get(index), by_b.get(index)
        if x is not None and y is not None and x.decision == y.decision:
            continue
        is_recorded = index < recorded if recorded is not None else (x is not None and y is not None)
        out.append(SummaryDifference(index, is_recorded, x, y))
    return out


def differences_headline(messages: int, summaries: int) -> str:
    """"68 messages decided differently", or with summaries "0 messages and 1 summary decided
    differently": a count of messages alone hid a summary one side sends and the other drops."""
    head = counted(messages, "message")
    if summaries:
        head += " and " + counted(summaries, "summary", "summaries")
    return head + " decided differently"


def decision_words(decision: str, code: str) -> str:
    """`dropped (after cut)`, but `summarized`, not `summarized (summarised)`: the reason's label
    is said only where it adds to the decision."""
    from .reason_codes import code_of

    label = code_of(code, decision).label
    same = label.replace("is", "iz") == decision.replace("is", "iz")
    return decision if same else f"{decision} ({label})"


@dataclass(frozen=True)
class DifferenceGroup:
    """The differences that share both sides' decisions and reason codes: one line of `compare`
    instead of the same three lines for each of 139 messages."""

    a_decision: str
    b_decision: str
    a_code: str
    b_code: str
    indices: tuple[int, ...]
    #: The messages' own measured tokens, by each side's estimator.
    a_tokens: int
    b_tokens: int

    @property
    def count(self) -> int:
        return len(self.indices)

    def span(self) -> str:
        """The messages, as a short list of ranges ("#12-#40, #55")."""
        runs: list[list[int]] = []
        for i in self.indices:
            if runs and i == runs[-1][1] + 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
        text = ", ".join(f"#{lo}" if lo == hi else f"#{lo}-#{hi}" for lo, hi in runs[:6])
        return text + (f" and {counted(len(runs) - 6, 'more run')}" if len(runs) > 6 else "")

    def to_json(self) -> dict[str, Any]:
        return {"a": {"decision": self.a_decision, "reason_code": self.a_code, "tokens": self.a_tokens},
                "b": {"decision": self.b_decision, "reason_code": self.b_code, "tokens": self.b_tokens},
                "messages": self.count, "indices": list(self.indices)}


def group_differences(diffs: list[Difference]) -> list[DifferenceGroup]:
    """The differences grouped by (A's decision and reason code, B's), largest group first."""
    groups: dict[tuple[str, str, str, str], list[Difference]] = {}
    for d in diffs:
        key = (d.a.decision.value, d.b.decision.value, d.a.reason_code, d.b.reason_code)
        groups.setdefault(key, []).append(d)
    out = [DifferenceGroup(*key, tuple(d.index for d in members), sum(d.a.tokens for d in members), sum(d.b.tokens for d in members))
           for key, members in groups.items()]
    return sorted(out, key=lambda g: (-g.count, g.indices[0]))


@dataclass(frozen=True)
class Change:
    """A parameter value that would send the message (the smallest such move from the current value)."""

    parameter: str
    current: Any
    value: Any

    @property
    def direction(self) -> str:
        return ">=" if self.value > self.current else "<="

    def __str__(self) -> str:
        # Thousands separators for a float too: langchain-trim's max_tokens (int | float) read
        # "max_tokens >= 45387" beside "total >= 43,835".
        value = f"{self.value:,}" if isinstance(self.value, int) else f"{self.value:,g}"
        return f"{self.parameter} {self.direction} {value}"

    def to_json(self) -> dict[str, Any]:
        return {"parameter": self.parameter, "current": self.current, "value": self.value, "direction": self.direction}


@dataclass(frozen=True)
class Explanation:
    message: MessagePlan
    changes: tuple[Change, ...]
    searched: tuple[str, ...]
    #: The changes offered keep the plan within its budget (it fitted as it was).
    within_budget: bool = False
    #: Parameters with no such change, whose change sends the message only by taking the context
    #: over its budget (missy's fresh tail grown past its history budget): said apart, never as an answer.
    over_budget: tuple[Change, ...] = ()
    #: The message is covered by a summary the log records, which the policy keeps in force: the
    #: agent already compacted it, so no setting brings it back (a sentence saying where, or "").
    recorded: str = ""

    def to_json(self) -> dict[str, Any]:
        return {**self.message.to_json(), "would_be_sent_with": [c.to_json() for c in self.changes], "searched": list(self.searched),
                "sent_only_over_budget_with": [c.to_json() for c in self.over_budget],
                "covered_by_recorded_summary": bool(self.recorded)}


def _numeric_fields(policy: Policy[Any]) -> list[tuple[str, type]]:
    out = []
    for f in param_fields(policy.params_type):
        kind = field_type(policy.params_type, f.name)
        args = [a for a in getattr(kind, "__args__", ()) if a is not type(None)]
        base = args[0] if args else kind
        if base in (int, float) and kind is not bool:
            out.append((f.name, base))
    return out


class Cancelled(Exception):
    """Raised inside a long search when its caller no longer wants the answer."""


def why(session: Session, policy_name: str, params: Any, counts: TokenCounts, message: int, max_probes: int = 400,
        should_stop: Callable[[], bool] | None = None, options: PlanOptions | None = None) -> Explanation:
    """The decision on `message` and, if it is not sent, the smallest change of each numeric
    parameter (all others unchanged) that would send it. When the plan fits, a change counts only
    if the plan still fits with it: "max_tokens <= 0" sends every message by switching
    MemoryConsolidator off and leaves the context over its budget, which is no answer. With `options.pair_safe` the decision
    and every probe are the pair-safe plan's, as `ctxviz plan --pair-safe` shows them.

    The search re-plans hundreds of times; `should_stop` is asked before each probe so an app can
    abandon a search whose answer went stale (the user moved a slider again)."""
    policy = get_policy(policy_name)
    pair_safe = options is not None and options.pair_safe

    pinned: dict[int, str] = {}
    if options is not None and options.pins:
        from .pins import resolve_pins

        pinned = resolve_pins(session, options.pins)

    def plan_with(candidate: Any) -> Plan:
        plan = policy.plan(session, candidate, counts)
        if pinned:
            from .pins import apply_pins

            plan = apply_pins(plan, session, pinned, counts)
        return apply_pair_safety(plan, session, counts) if pair_safe else plan

    base_plan = plan_with(params)
    must_fit = base_plan.totals.fits
    target = base_plan.messages[message]
    if target.sent:
        return Explanation(target, (), ())
    probes = 0
    # A tool result counts as sent only with its call (and a call with its results): an answer that
    # sent #38 without its call #37 sent a context the APIs refuse.
    from .pins import partners_of

    partners = tuple(partners_of(session, {message: ""}))

    def outcome(name: str, value: Any) -> tuple[bool, bool] | None:
        """(sends the message, the plan fits), or None outside what the framework accepts."""
        nonlocal probes
        probes += 1
        if should_stop is not None and should_stop():
            raise Cancelled
        try:
            candidate = dataclasses.replace(params, **{name: value})
        except (ValueError, ParameterError):
            return None
        plan = plan_with(candidate)
        sent = plan.messages[message].sent and all(plan.messages[k].sent for k in partners)
        return sent, plan.totals.fits

    def sent_with(name: str, value: Any, within_budget: bool) -> bool | None:
        result = outcome(name, value)
        if result is None:
            return None
        sent, fits = result
        return sent and (fits or not within_budget)

    changes: list[Change] = []
    over_budget: list[Change] = []
    searched: list[str] = []
    for name, kind in _numeric_fields(policy):
        current = getattr(params, name)
        if current is None:
            current = base_plan.params.get(name)
            if current is None:
                continue
        searched.append(name)
        best: Change | None = None
        unfit: Change | None = None
        for direction in (1, -1):
            found = _search(kind, current, direction, lambda v, n=name: sent_with(n, v, False), max_probes)
            if found is not None and not outcome(name, found)[1]:  # type: ignore[index]  # (over budget there, whether or not it fits now)
                # It sends the message only over budget there: is there a value that does both?
                if unfit is None or abs(found - current) < abs(unfit.value - current):
                    unfit = Change(name, current, found)
                found = _search(kind, current, direction, lambda v, n=name: sent_with(n, v, True), max_probes)
            if found is not None and (best is None or abs(found - current) < abs(best.value - current)):
                best = Change(name, current, found)
        if best is not None:
            changes.append(best)
        elif unfit is not None:
            over_budget.append(unfit)
    return Explanation(target, tuple(changes), tuple(searched), must_fit, tuple(over_budget),
                       _recorded_cover(session, target) if not changes and not over_budget else "")


def _recorded_cover(session: Session, target: MessagePlan) -> str:
    """Where the log's own compaction covered a summarised message, or "" (not summarised, or not by
    a summary the log records)."""
    if target.decision is not Decision.SUMMARIZED:
        return ""
    covering = [k for k, summary in enumerate(session.summaries) if target.id in summary.covers]
    if not covering:
        return ""
    boundaries = sorted(c.before_index for c in session.compactions if c.before_index > target.index)
    where = f" before #{boundaries[0]}" if boundaries else ""
    return (f"the log records the compaction that summarised it (the agent's own{where}): no setting brings it back, "
            "a setting changes only what later requests keep")


def _search(kind: type, current: Any, direction: int, sends: Any, max_probes: int) -> Any:
    """Exponential steps away from `current` until the message is sent, then bisect back to the
    boundary. Floats are searched on a 0.001 grid (the fractions are what users tune)."""
    if kind is float:
        scale = 1000
        start = round(current * scale)
        found = _search(int, start, direction, lambda v: sends(v / scale), max_probes)
        return None if found is None else found / scale
    step = 1
    last_fail = current
    probes = 0
    while probes < max_probes:
        value = current + direction * step
        if value < 0:
            value = 0
        ok = sends(value)
        probes += 1
        if ok:
            lo, hi = last_fail, value  # the boundary is between a failing and a sending value
            while abs(hi - lo) > 1 and probes < max_probes:
                mid = (lo + hi) // 2
                probes += 1
                if sends(mid):
                    hi = mid
                else:
                    lo = mid
            return hi
        if ok is None:  # past what the framework accepts: nothing further along this direction
            return None
        last_fail = value
        if value == 0 or step > 2 ** 40:
            return None
        step *= 2
    return None


def describe(explanation: Explanation) -> str:
    m = explanation.message
    size = counted(m.tokens, "token") + (f", sent as {m.sent_tokens:,}" if m.sent and m.sent_tokens != m.tokens else "")
    lines = [f"#{m.index} ({m.id}, {m.role}, {m.category}, {size}): {m.reason}"]
    if m.sent:
        return lines[0]
    if explanation.changes:
        lines.append("it would be sent with any one of: " + ", or ".join(str(c) for c in explanation.changes))
    else:
        searched = ", ".join(explanation.searched) or "no numeric parameter"
        lines.append(explanation.recorded if explanation.recorded else
                     f"no single change of {searched} sends it" + (" while the context still fits its budget" if explanation.within_budget else ""))
    if explanation.over_budget:
        lines.append("sent too, but only with the context over its budget: " + ", or ".join(str(c) for c in explanation.over_budget))
    return "\n".join(lines)

