"""The next compaction of a live session: when it will come, and what it would drop.

A prompt engineer watching an agent asks three things: how many calls are left before the agent
compacts, what that compaction would take out of the context, and, once it happened, what it did
take. This module answers each from the log alone, under the agent's own policy (`verify.agent_policy`:
claude-code, codex-compaction, gemini-cli-compression) or the one chosen.

**When (the method).** Each call the log records reports its request (input, cache reads and
writes). The growth of the context per call is the difference between consecutive requests since
the last recorded compaction (a call's output reaches the next request, save what is never sent
again, as Gemini's thoughts); the last `GROWTH_WINDOW` of them are used. The room left is the policy's trigger minus the policy's own count
now (its plan's `used`: the last reported fill plus an estimate of the messages written after it).
The agent compacts before the first request at which its count reaches the trigger, so the calls
still made before the compaction are `ceil(room / growth)`: the point estimate uses the median
growth, the range the largest growth (fewest calls) and the smallest (most calls; unbounded when a
call added nothing). For claude-code the trigger is calibrated from the automatic compactions the
log recorded so far (the smallest `preTokens`, as `ctxviz calibrate` fits it), else Claude Code's
documented default for the model.

**Its error.** Where the log recorded automatic compactions, the forecast is re-run on the log as it
stood 1 to `BACKTEST_DEPTH` calls before each, and the predicted number of calls is set beside the
recorded one.

**What.** The compaction is made to happen now (the policy's own `compact`, with its trigger set to
fire) and the session is planned again with its summary in force; what the plan then no longer
sends, as anchors (engine/anchors.py) ranked as engine/ranking.py ranks losses, is what it would
drop. The summary is ctxviz's offline stand-in for the model's, so what "survives in the summary"
is measured against that stand-in, and said so. After a real compaction, the same comparison is
made between the plan just before it and the plan with the log's recorded summary in force.

Pure: no I/O, no Qt; it plans the session a few times (twice for "what", twice per recorded
compaction, once per back-test point).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .anchors import Anchor, AnchorIndex, anchors_of
from .counting import CountStore, TokenCounts
from .plan import SENT_DECISIONS, Plan
from .policies import get_policy
from .policies.base import Policy
from .ranking import TIERS, Rank, ranked
from .retention import present, stand_in_of, view_of
from .session import Message, Session, Summary, TextPart
from .simulate import prefix_counts
from .steps import recorded_call
from .summarizers import ExtractiveSummarizer
from .tokenizers import Tokenizer
from .verify import agent_policy
from .vocabulary import trigger_count
from .wording import counted, noun

#: How many of the last per-call increases the growth is read from.
GROWTH_WINDOW = 10
#: How many calls before each recorded automatic compaction the forecast is re-run to state its error.
BACKTEST_DEPTH = 5
#: Recorded compaction triggers that mean "automatic" (Codex records none: its compactions are read as automatic).
AUTOMATIC = ("auto", "")
#: The id of the request a forecast imagines when the log ends on an answer (the next user turn).
NEXT_REQUEST_ID = "forecast:next-request"


@dataclass(frozen=True)
class Growth:
    """The reported request of each call since the last recorded compaction (`fills`), and its per-call increases."""

    calls: tuple[int, ...]  # message index of each call's answer
    fills: tuple[int, ...]
    increases: tuple[int, ...]  # the last GROWTH_WINDOW differences (negative ones count as 0)
    #: The calls are those since a compaction the log records (else since the log's start).
    since_compaction: bool = False

    @property
    def median(self) -> float | None:
        return statistics.median(self.increases) if self.increases else None

    @property
    def unknown(self) -> str:
        """Why no growth can be gone by, in words (it said "since the last compaction" of logs that
        never compacted, and "too few calls" where the calls had added nothing)."""
        if self.increases:
            return f"the last {counted(len(self.increases), 'call')} with usage added nothing to measure growth by"
        where = "since the last compaction" if self.since_compaction else "in the log"
        return f"too few calls with usage {where} to measure growth"


@dataclass(frozen=True)
class When:
    """How many calls the agent still makes before it compacts."""

    level: int  # the policy's count now
    trigger: int
    trigger_how: str
    calls: int | None  # point estimate (0: it compacts before the next request); None: no growth to go by
    low: int | None  # fewest calls (at the largest growth seen)
    high: int | None  # most calls (at the smallest growth seen); None: unbounded (a call added nothing)
    growth: Growth

    @property
    def room(self) -> int:
        return self.trigger - self.level

    def contains(self, calls: int) -> bool:
        if self.low is None:
            return False
        return self.low <= calls and (self.high is None or calls <= self.high)

    def range_text(self) -> str:
        if self.calls is None or self.low is None:
            return "unknown"
        if self.calls == 0:
            return "0 (before the next request)"
        if self.high is None:
            return f"{self.calls:,} (at least {self.low:,}; no upper bound: a recent call added nothing)"
        return f"{self.calls:,} (range {self.low:,}-{self.high:,})"

    def sentence(self) -> str:
        fill = f"count {self.level:,} of the trigger {self.trigger:,} ({self.trigger_how})"
        if self.calls == 0:
            return f"{fill}: it compacts before the next request"
        if self.calls is None:
            return f"{fill}: {self.room:,} tokens of room; {self.growth.unknown}"
        g = self.growth
        return (f"{fill}: {self.room:,} tokens of room, about {self.range_text()} {noun(self.calls, 'call')} before it compacts "
                f"(median growth {g.median:,.0f} tokens per call over the last {counted(len(g.increases), 'call')}, "
                f"{min(g.increases):,}-{max(g.increases):,})")

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "trigger": self.trigger, "trigger_how": self.trigger_how, "room": self.room, "calls": self.calls,
                "low": self.low, "high": self.high,
                "growth": {"median": self.growth.median, "increases": list(self.growth.increases), "calls_since_compaction": len(self.growth.calls)}}


@dataclass(frozen=True)
class Drop:
    """What a compaction takes out of the context: messages sent before and not after, and the
    anchors (facts) that no longer reach the model in any form, ranked."""

    messages: int
    tokens: int
    anchors: tuple[Anchor, ...]
    ranks: dict[int, Rank]
    #: "recorded" when the log's own summary was used, else the policy's stand-in description.
    summary: str

    @property
    def user_losses(self) -> tuple[Anchor, ...]:
        """What the user asked (rank tier 1) that would no longer reach the model: worth a warning."""
        return tuple(a for a in self.anchors if self.ranks[a.id].tier == 1)

    def lines(self, limit: int = 10) -> list[str]:
        out = [f"{counted(self.messages, 'message')}, {counted(self.tokens, 'token')} no longer sent; {counted(len(self.anchors), 'fact')} no longer "
               + ("reaches" if len(self.anchors) == 1 else "reach") + " the model"
               + ("" if self.summary == "recorded" else f" (measured against {self.summary}, not the agent's own summary)")]
        for a in self.anchors[:limit]:
            r = self.ranks[a.id]
            out.append(f"  [{TIERS[r.tier]}] {a.kind} {a.value!r}: {r.why}")
        if len(self.anchors) > limit:
            out.append(f"  ... and {len(self.anchors) - limit:,} more")
        return out

    def to_json(self, limit: int | None = None) -> dict[str, Any]:
        shown = self.anchors if limit is None else self.anchors[:limit]
        return {"messages": self.messages, "tokens": self.tokens, "summary": self.summary, "anchors": len(self.anchors),
                "user_losses": len(self.user_losses),
                "lost": [{**a.to_json(), "rank": self.ranks[a.id].tier, "why": self.ranks[a.id].why} for a in shown]}


@dataclass(frozen=True)
class Backtest:
    """The forecast re-run before one recorded automatic compaction."""

    before_index: int
    calls_before: int  # calls the log made before it
    #: (calls before the compaction when forecast, predicted calls, low, high), nearest first.
    points: tuple[tuple[int, int | None, int | None, int | None], ...]

    @property
    def errors(self) -> list[int]:
        return [abs(p - n) for n, p, _, _ in self.points if p is not None]

    @property
    def covered(self) -> int:
        return sum(1 for n, p, lo, hi in self.points if p is not None and lo is not None and lo <= n and (hi is None or n <= hi))


@dataclass(frozen=True)
class Forecast:
    policy: str
    why: str
    when: When | None
    next_drop: Drop | None
    last_compaction: Drop | None
    backtests: tuple[Backtest, ...] = ()
    notes: tuple[str, ...] = field(default=())
    #: How many automatic compactions the log records (the back-tests need calls before each).
    automatic: int = 0
    #: How long the back-tests and the last compaction's drop took: a follower keeps both while the
    #: log's compactions stay the same, so a forecast of its next state costs the rest.
    kept_seconds: float = field(default=0.0, compare=False)

    @property
    def error_calls(self) -> float | None:
        """The mean distance, in calls, between predicted and recorded over every back-test point."""
        errors = [e for b in self.backtests for e in b.errors]
        return statistics.mean(errors) if errors else None

    def error_sentence(self) -> str:
        points = sum(len(b.errors) for b in self.backtests)
        if not points and self.automatic:
            return (f"this log's {self.automatic} recorded automatic {noun(self.automatic, 'compaction')} came fewer than 3 calls after its start or the "
                    "compaction before, too soon to check the forecast against")
        if not points:
            return "no recorded automatic compaction in this log to check the forecast against"
        covered = sum(b.covered for b in self.backtests)
        return (f"on this log's {len(self.backtests)} recorded automatic {noun(len(self.backtests), 'compaction')}, forecast 1-{BACKTEST_DEPTH} calls before: "
                f"off by {self.error_calls:.1f} calls on average; the range held the recorded call {covered} of {counted(points, 'time')}")

    def lines(self) -> list[str]:
        out = [f"policy {self.policy} ({self.why})"]
        out.append("when: " + (self.when.sentence() if self.when is not None else "this policy has no compaction trigger"))
        out.append("error: " + self.error_sentence())
        if self.next_drop is not None:
            out.append("if it compacted now: " + self.next_drop.lines()[0])
            out += self.next_drop.lines()[1:]
        if self.last_compaction is not None:
            out.append("the last recorded compaction dropped: " + self.last_compaction.lines()[0])
            out += self.last_compaction.lines()[1:]
        out += [f"note: {n}" for n in self.notes]
        return out

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "policy_reason": self.why, "method": METHOD,
                "when": self.when.to_json() if self.when is not None else None,
                "next_compaction": self.next_drop.to_json(20) if self.next_drop is not None else None,
                "last_compaction": self.last_compaction.to_json(20) if self.last_compaction is not None else None,
                "error": {"mean_calls": self.error_calls, "sentence": self.error_sentence(),
                          "backtests": [{"before_index": b.before_index, "calls_before": b.calls_before,
                                         "points": [{"calls_before": n, "predicted": p, "low": lo, "high": hi} for n, p, lo, hi in b.points]}
                                        for b in self.backtests]},
                "notes": list(self.notes)}


METHOD = (f"calls left = ceil((trigger - the policy's count now) / growth per call), growth read from the last {GROWTH_WINDOW} "
          "reported fills since the last compaction: median for the estimate, largest and smallest for the range")


# --- when -------------------------------------------------------------------------------------------

def call_fills(session: Session) -> list[tuple[int, int]]:
    """(answer index, fill after the call) for every call the log records with usage."""
    return [(m.index, m.usage.window_fill + m.usage.output_tokens) for m in session.messages if recorded_call(m) and m.usage is not None]


def call_prompts(session: Session) -> list[tuple[int, int]]:
    """(answer index, the request's size as the provider counted it: input, cache reads and writes)
    for every call the log records with usage."""
    return [(m.index, m.usage.window_fill) for m in session.messages if recorded_call(m) and m.usage is not None]


def growth(session: Session) -> Growth:
    """The requests since the last recorded compaction and their last per-call increases. Measured
    request to request, not fill to fill: what a call's output adds reaches the next request
    anyway, and where the output holds what is never sent again (Gemini's thoughts, billed as
    output) a fill after a long thought read as the next call shrinking the context: "a recent call
    added nothing" on a log whose every prompt grew."""
    since = session.compactions[-1].before_index if session.compactions else 0
    calls = [(i, f) for i, f in call_prompts(session) if i >= since]
    fills = [f for _, f in calls]
    increases = [max(0, b - a) for a, b in zip(fills, fills[1:], strict=False)][-GROWTH_WINDOW:]
    return Growth(tuple(i for i, _ in calls), tuple(fills), tuple(increases), bool(session.compactions))


def calls_left(level: int, trigger: int, g: Growth, trigger_how: str = "") -> When:
    """The calls still made before the count reaches the trigger (see the module docstring)."""
    room = trigger - level
    if room <= 0:
        return When(level, trigger, trigger_how, 0, 0, 0, g)
    if not g.increases or not max(g.increases):
        return When(level, trigger, trigger_how, None, None, None, g)
    median = statistics.median(g.increases)
    point = math.ceil(room / median) if median > 0 else None
    low = math.ceil(room / max(g.increases))
    smallest = min(g.increases)
    high = math.ceil(room / smallest) if smallest > 0 else None
    return When(level, trigger, trigger_how, point if point is not None else low, low, high, g)


def trigger_of(pol: Policy[Any], params: Any, session: Session, plan: Plan) -> tuple[int | None, str]:
    """The policy's trigger for this session, and how it was set."""
    if pol.trigger_level is None:
        return None, ""
    level = pol.trigger_level(params, session)
    how = str(plan.extra.get("threshold_how") or "the policy's trigger (" + ", ".join(pol.trigger) + ")")
    return level, how


def calibrated(pol: Policy[Any], params: Any, session: Session) -> tuple[Any, str]:
    """For claude-code without a trigger chosen: the trigger fitted from this log's automatic
    compactions so far (`ctxviz calibrate`'s fit), when it recorded any."""
    if pol.name != "claude-code" or getattr(params, "calibrated_trigger", None) is not None:
        return params, ""
    auto = [c.pre_tokens for c in session.compactions if c.trigger == "auto" and c.pre_tokens > 0]
    if not auto:
        return params, ""
    return dataclasses.replace(params, calibrated_trigger=min(auto)), (f"calibrated from the {len(auto)} automatic {noun(len(auto), 'compaction')} "
                                                                     f"this log recorded (smallest preTokens {min(auto):,})")


# --- what -------------------------------------------------------------------------------------------

def forced_params(pol: Policy[Any], params: Any, session: Session) -> Any:
    """The parameters with the trigger set to fire at once: what "if it compacted now" means."""
    if pol.align is not None:
        return pol.align(params, session, 1, None, None)[0]
    for name in pol.trigger:
        value = getattr(params, name, None)
        default = next((f.default for f in dataclasses.fields(params) if f.name == name), None)
        tiny: Any = 1e-9 if isinstance(value if value is not None else default, float) else 1
        try:
            return dataclasses.replace(params, **{name: tiny})
        except (ValueError, TypeError):
            continue
    return params


def _next_request(session: Session) -> Session:
    """The session with the next request's user turn, when it ends on an answer: agents check
    their trigger before a request, which then follows a user turn."""
    if not session.messages or session.messages[-1].role in ("user", "tool"):
        return session
    n = len(session.messages)
    extra = Message(NEXT_REQUEST_ID, n, "user", (TextPart(""),))
    return dataclasses.replace(session, messages=(*session.messages, extra))


def _sent(plan: Plan) -> set[int]:
    cols = plan.columns
    return {i for i, d in zip(cols.index, cols.decision, strict=True) if d in SENT_DECISIONS}


def drop_between(before: Plan, after: Plan, session: Session, counts: TokenCounts, index: AnchorIndex, scope: int | None = None,
                 summary: str = "recorded") -> Drop:
    """What `before` sends that `after` does not (messages, and anchors first said before `scope`), ranked."""
    gone = sorted(i for i in _sent(before) - _sent(after) if i < len(session.messages))
    ids_before, ids_after = present(index, view_of(before)), present(index, view_of(after))
    limit = len(session.messages) if scope is None else scope
    lost = [index.anchors[i] for i in sorted(ids_before - ids_after) if index.anchors[i].first_index < limit]
    order, ranks = ranked(lost, index)
    return Drop(len(gone), sum(counts.message_tokens[i] for i in gone), order, ranks, summary)


def next_drop(pol: Policy[Any], params: Any, session: Session, counts: TokenCounts, plan: Plan, index: AnchorIndex) -> tuple[Drop | None, str]:
    """What the policy's compaction would drop if it happened now (None, why: it would not compact)."""
    if pol.compact is None:
        return None, f"{pol.name} does not compact (it trims or summarises by its own rule)"
    target = _next_request(session)
    target_counts = counts if target is session else TokenCounts(target, counts.scheme, [*counts.message_tokens, 0])
    forced = forced_params(pol, params, target)
    forced_plan = pol.plan(target, forced, target_counts)
    summary = pol.compact(target, forced_plan, forced, target_counts, ExtractiveSummarizer(), len(target.messages) - 1, [])
    if summary is None:
        return None, f"{pol.name} would not compact here even at its lowest trigger"
    after_session = dataclasses.replace(session, summaries=(*session.summaries, summary))
    after = pol.plan(after_session, params, prefix_counts(counts, after_session))
    stand_in = stand_in_of(after, after_session) or pol.stand_in or "offline stand-in summary"
    stand_in = stand_in if stand_in.startswith("ctxviz") else f"ctxviz's {stand_in}"
    return drop_between(plan, after, session, counts, index, summary=stand_in), ""


def recorded_summary(session: Session, k: int) -> Summary | None:
    """The summary the log recorded for its k-th compaction (loaders write one per compaction, in order)."""
    if len(session.summaries) == len(session.compactions):
        return session.summaries[k]
    before = session.compactions[k].before_index
    ids = {m.id for m in session.messages[:before]} - set(session.compactions[k].preserved)
    return next((s for s in session.summaries if set(s.covers) == ids), None)


def last_compaction_drop(pol: Policy[Any], params: Any, session: Session, counts: TokenCounts, index: AnchorIndex) -> Drop | None:
    """What the log's last recorded compaction dropped: the plan just before it beside the plan with
    the recorded summary in force (the agent's own summary, so nothing is measured against a stand-in)."""
    if not session.compactions:
        return None
    k = len(session.compactions) - 1
    summary = recorded_summary(session, k)
    b = session.compactions[k].before_index
    if summary is None or b <= 0:
        return None
    earlier = tuple(s for s in session.summaries[:k]) if len(session.summaries) == len(session.compactions) else ()
    before_session = dataclasses.replace(session, messages=session.messages[:b], summaries=earlier[-1:], compactions=session.compactions[:k])
    after_session = dataclasses.replace(before_session, summaries=(*earlier[-1:], summary), compactions=session.compactions[: k + 1])
    before = pol.plan(before_session, params, prefix_counts(counts, before_session))
    after = pol.plan(after_session, params, prefix_counts(counts, after_session))
    return drop_between(before, after, session, counts, index, scope=b)


# --- the forecast -----------------------------------------------------------------------------------

def _when(pol: Policy[Any], params: Any, session: Session, counts: TokenCounts) -> tuple[When | None, Plan, Any, str]:
    params, how = calibrated(pol, params, session)
    plan = pol.plan(session, params, counts)
    trigger, trigger_how = trigger_of(pol, params, session, plan)
    if trigger is None:
        return None, plan, params, ""
    return calls_left(trigger_count(pol, plan), trigger, growth(session), how or trigger_how), plan, params, how


def backtest(pol: Policy[Any], params: Any, session: Session, counts: TokenCounts, depth: int = BACKTEST_DEPTH) -> list[Backtest]:
    """The forecast re-run 1..depth calls before each recorded automatic compaction."""
    calls = [i for i, _ in call_fills(session)]
    out = []
    for k, c in enumerate(session.compactions):
        if c.trigger not in AUTOMATIC:
            continue
        previous = session.compactions[k - 1].before_index if k else 0
        before = [i for i in calls if previous <= i < c.before_index]
        points = []
        for n in range(1, min(depth, len(before) - 2) + 1):
            end = before[len(before) - n]  # the answer of the n-th last call: the log stops just before it
            prefix = dataclasses.replace(session, messages=session.messages[:end], compactions=session.compactions[:k],
                                         summaries=_summaries_before(session, k))
            when, _, _, _ = _when(pol, params, prefix, prefix_counts(counts, prefix))
            if when is not None:
                points.append((n, when.calls, when.low, when.high))
        if points:
            out.append(Backtest(c.before_index, len(before), tuple(points)))
    return out


def _summaries_before(session: Session, k: int) -> tuple[Summary, ...]:
    if len(session.summaries) == len(session.compactions):
        return session.summaries[:k][-1:]
    return ()


def forecast(session: Session, policy: str | None = None, params: Any = None, tokenizer: Tokenizer | str | None = None,
             store: CountStore | None = None, counts: TokenCounts | None = None, with_backtest: bool = True,
             index: AnchorIndex | None = None, with_last: bool = True) -> Forecast:
    """When the next compaction comes, what it would drop now, what the last one dropped, and the
    forecast's error on this log's past compactions. `counts` (for this session, under the policy's
    scheme) spares a count, as a follower that extends its counts passes them. Without
    `with_backtest` / `with_last` the back-tests and the last compaction's drop are left out (two
    plans and one per back-test point): a follower keeps them while the log's compactions stay the same."""
    why = "chosen"
    if policy is None:
        policy, why = agent_policy(session)
    pol = get_policy(policy)
    if params is None:
        params = pol.default_params()
    elif not (dataclasses.is_dataclass(params) and not isinstance(params, type)):
        params = pol.make_params(params)
    if counts is None:
        counts = (store if store is not None else CountStore()).get(session, pol.scheme(tokenizer, session.model))
    notes: list[str] = []
    when, plan, used_params, how = _when(pol, params, session, counts)
    index = index if index is not None else anchors_of(session)
    drop, reason = next_drop(pol, used_params, session, counts, plan, index)
    if reason:
        notes.append(reason)
    started = time.perf_counter()
    last = last_compaction_drop(pol, params, session, counts, index) if with_last else None
    tests = tuple(backtest(pol, params, session, counts)) if with_backtest else ()
    automatic = sum(1 for c in session.compactions if c.trigger in AUTOMATIC)
    return Forecast(policy, why, when, drop, last, tests, tuple(notes), automatic, time.perf_counter() - started)


def recorded_calls_before(session: Session, before_index: int) -> int:
    """How many calls the log made before a message index (a compaction's place, in calls)."""
    return sum(1 for i, _ in call_fills(session) if i < before_index)


__all__: Sequence[str] = ("Backtest", "Drop", "Forecast", "Growth", "When", "calls_left", "forecast", "growth", "recorded_calls_before")
