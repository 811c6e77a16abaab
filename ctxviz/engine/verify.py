"""How far to trust a replay: the replay of a log beside the provider's own figures in that log.

`verify` replays a log under its own agent's policy (Claude Code's auto-compact for a Claude Code
log, Codex's for a rollout, Gemini CLI's compression for a Gemini CLI session), prices the request
before each call the log records with the cache model (`engine.caching`), and puts each beside what
the provider reported for that call: request tokens, cache reads and writes, and the input cost at
the same prices (the bill). Where compactions fall, predicted and recorded, is compared in calls.
It ends with three numbers: the pooled cost ratio (predicted input cost over billed, summed over the
calls), the median per-call error of the cache hit share, in points, and the compaction timing error.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, field
from typing import Any

from .agent_policies import AGENT_POLICIES
from .caching import CacheReport, TurnCache, cache_costs, call_steps, real_calls
from .counting import CountStore
from .policies import get_policy
from .replay_contract import Event, prefix_counts
from .session import Message, Session
from .simulate import Timeline, simulate
from .vocabulary import trigger_count, trigger_level
from .wording import noun

#: For a format that is not an agent's log (one API request, a trace): a policy that sends the whole
#: history and counts it from the reported usage, as the recorded request did.
FALLBACK_POLICY = "claude-code"
#: Event kinds by which a policy puts its own summary or compaction in force.
COMPACTION_KINDS = ("compaction", "summary", "consolidation", "hard_threshold")


def agent_policy(session: Session) -> tuple[str, str]:
    """(policy, why) for replaying this log as its agent lived it."""
    policy = AGENT_POLICIES.get(session.format)
    if policy is not None:
        return policy, f"the {session.format} log's own agent"
    return FALLBACK_POLICY, (f"{session.format or 'this'} format has no agent policy: {FALLBACK_POLICY} sends the whole history and counts it "
                             "from the reported usage, as the recorded request did")


@dataclass(frozen=True)
class CallCheck:
    """One real call: the replay's request before it beside the provider's figures."""

    call: int  # the index of the call's answer in the session
    turn: int  # the replay's step (its last message) the request was built at
    predicted: TurnCache
    reported_request: int
    reported_read: int
    reported_write: int
    billed: float | None  # USD, input side, at the catalogue's prices; None for an unknown model

    @property
    def predicted_hit(self) -> float:
        return self.predicted.cache_read / self.predicted.request if self.predicted.request else 0.0

    @property
    def reported_hit(self) -> float:
        return self.reported_read / self.reported_request if self.reported_request else 0.0

    @property
    def hit_error_points(self) -> float:
        return abs(self.predicted_hit - self.reported_hit) * 100

    def to_json(self) -> dict[str, Any]:
        p = self.predicted
        return {"call": self.call, "turn": self.turn,
                "predicted": {"request": p.request, "cache_read": p.cache_read, "cache_write": p.cache_write, "cost_usd": _usd(p.cost, self.billed),
                              "cache_read_range": [p.read_low, p.read_high], "cold": p.cold, "expired": p.expired},
                "reported": {"request": self.reported_request, "cache_read": self.reported_read, "cache_write": self.reported_write,
                             "cost_usd": None if self.billed is None else round(self.billed, 8)},
                "hit_share": {"predicted": round(self.predicted_hit, 4), "reported": round(self.reported_hit, 4),
                              "error_points": round(self.hit_error_points, 2)}}


def _usd(value: float, billed: float | None) -> float | None:
    return None if billed is None else round(value, 8)


@dataclass(frozen=True)
class CompactionCheck:
    """A compaction the log records or the replay predicts, placed at the real call it precedes."""

    kind: str  # "recorded" or "predicted"
    message: int  # the session index it comes before (recorded) or at (predicted)
    call: int | None  # how many real calls came before it
    trigger: str = ""  # "auto", "manual" or "" (recorded); the policy's event kind (predicted)
    tokens: int = 0  # preTokens where recorded
    error_calls: int | None = None  # recorded automatic: calls to its prediction (replayed without it)
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "calls_before": self.call, "trigger": self.trigger, "tokens": self.tokens,
                "error_calls": self.error_calls, "text": self.text}


@dataclass(frozen=True)
class Verification:
    session: Session
    policy: str
    why: str
    cache: CacheReport
    calls: tuple[CallCheck, ...]
    compactions: tuple[CompactionCheck, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def known(self) -> bool:
        return self.cache.known

    @property
    def cost_ratio(self) -> float | None:
        """Predicted input cost over billed, pooled over the calls (None: nothing to compare)."""
        billed = sum(c.billed or 0.0 for c in self.calls)
        if not self.known or not billed:
            return None
        return sum(c.predicted.cost for c in self.calls) / billed

    @property
    def median_hit_error(self) -> float | None:
        return statistics.median(c.hit_error_points for c in self.calls) if self.calls and self.known else None

    @property
    def request_ratio(self) -> float | None:
        reported = sum(c.reported_request for c in self.calls)
        return sum(c.predicted.request for c in self.calls) / reported if reported else None

    @property
    def compaction_error(self) -> float | None:
        """The median distance, in calls, from each recorded automatic compaction to its prediction
        (the policy replayed without it; None: none was predicted, or the log records none)."""
        errors = [c.error_calls for c in self.compactions if c.kind == "recorded" and c.trigger != "manual" and c.error_calls is not None]
        return statistics.median(errors) if errors else None

    def summary_lines(self) -> list[str]:
        lines = []
        ratio, hit = self.cost_ratio, self.median_hit_error
        if not self.known:
            lines.append(f"no cache model for this model: {self.cache.model.name} is not in the model catalogue, so no cost or cache share "
                         "is compared")
        elif ratio is None:
            lines.append("no billed cost to compare (the log's calls report no input)")
        else:
            lines.append(f"pooled cost ratio {ratio:.2f} (predicted ${sum(c.predicted.cost for c in self.calls):,.4f} over billed "
                         f"${sum(c.billed or 0 for c in self.calls):,.4f}, input side, {len(self.calls)} calls)")
        if hit is not None:
            lines.append(f"median per-call cache hit-share error {hit:.1f} points")
        req = self.request_ratio
        if req is not None:
            lines.append(f"request tokens: predicted {req:.2f}x reported, pooled")
        recorded = [c for c in self.compactions if c.kind == "recorded"]
        predicted = [c for c in self.compactions if c.kind == "predicted"]
        automatic = [c for c in recorded if c.trigger != "manual"]
        err = self.compaction_error
        if err is not None:
            lines.append(f"compaction timing error {err:g} {noun(err, 'call')} (median over {len(automatic):,} recorded automatic {noun(len(automatic), 'compaction')})")
        elif automatic:
            lines.append(f"compaction timing: none of the {len(automatic):,} recorded automatic {noun(len(automatic), 'compaction')} was predicted")
        else:
            lines.append("compaction timing: the log records no automatic compaction" +
                         (f" ({len(recorded)} manual)" if recorded else "") +
                         (f"; the replay predicts {len(predicted)}" if predicted else "; the replay predicts none"))
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"source": self.session.source, "format": self.session.format, "model": self.session.model, "policy": self.policy,
                "policy_reason": self.why, "known_model": self.known, "calls": [c.to_json() for c in self.calls],
                "compactions": [c.to_json() for c in self.compactions],
                "summary": {"calls": len(self.calls),
                            "cost_ratio": None if self.cost_ratio is None else round(self.cost_ratio, 4),
                            "predicted_cost_usd": round(sum(c.predicted.cost for c in self.calls), 8) if self.known else None,
                            "billed_cost_usd": round(sum(c.billed or 0 for c in self.calls), 8) if self.known else None,
                            "median_hit_error_points": None if self.median_hit_error is None else round(self.median_hit_error, 2),
                            "request_ratio": None if self.request_ratio is None else round(self.request_ratio, 4),
                            "compaction_error_calls": self.compaction_error, "sentences": self.summary_lines()},
                "cache_notes": list(self.cache.notes), "notes": list(self.notes)}


def billed(report: CacheReport, message: Message) -> float | None:
    """What the provider charged for the call's input, at the catalogue's prices and the log's cache
    lifetime (its reported input, cache reads and cache writes)."""
    cm = report.cache
    if cm is None or not cm.known or message.usage is None:
        return None
    u = message.usage
    return cm.price(u.cache_read_input_tokens, u.cache_creation_input_tokens, u.input_tokens)


def verify(session: Session, policy: str | None = None, params: Any = None, exclude: str = "", timeline: Timeline | None = None) -> Verification:
    """Replay the log under its agent's policy (or `policy`) and put each real call beside the
    replay's request before it. `exclude` leaves a file out of the measured hit rates (the test's
    held-out check)."""
    why = "chosen with --policy"
    if policy is None:
        policy, why = agent_policy(session)
    store = CountStore()
    timeline = timeline if timeline is not None else simulate(session, policy, params, store=store)
    steps = call_steps(timeline)
    report = cache_costs(timeline, steps=steps, exclude=exclude)
    answers = {m.index - 1: m for m in real_calls(session)}
    checks = []
    for t in report.turns:
        m = answers[t.turn]
        u = m.usage
        assert u is not None
        checks.append(CallCheck(m.index, t.turn, t, u.window_fill, u.cache_read_input_tokens, u.cache_creation_input_tokens, billed(report, m)))
    notes = []
    skipped = [m.index for m in session.messages if m.role == "assistant" and m.usage is not None and m.usage.window_fill > 0 and m.index == 0]
    if skipped:
        notes.append("the call answering at message #0 shows no request in the log: not compared")
    if not checks:
        notes.append("the log records no call with usage: nothing to compare")
    return Verification(session, policy, why, report, tuple(checks), tuple(_compactions(session, timeline, policy, params, store)), tuple(notes))


def _compactions(session: Session, timeline: Timeline, policy: str, params: Any, store: CountStore) -> list[CompactionCheck]:
    """Recorded compactions (the log's boundaries) and the replay's own, each placed by the number of
    real calls made before it.

    The replay puts each recorded compaction in force where the log has it, so its policy never
    meets the context the agent compacted. Each recorded automatic one is therefore also replayed
    blind (`_blind`): the log up to its boundary, without it, message by message; the policy's
    first compaction from the compaction before it on is its prediction, and the calls between the
    two its error."""
    call_indices = [m.index for m in real_calls(session)]

    def calls_before(index: int) -> int:
        return sum(1 for c in call_indices if c < index)

    out: list[CompactionCheck] = []
    blind_at: set[int] = set()
    previous = 0
    for k, c in enumerate(session.compactions):
        at = calls_before(c.before_index)
        trigger = c.trigger or "auto"
        text = f"{trigger} compaction recorded before message #{c.before_index}" + (f" at {c.pre_tokens:,} tokens" if c.pre_tokens else "")
        error: int | None = None
        if trigger != "manual":
            found, count = _blind(session, k, previous, policy, params, store)
            if found is not None:
                blind_at.add(found.turn)
                guess = calls_before(found.turn + 1)
                error = abs(guess - at)
                out.append(CompactionCheck("predicted", found.turn, guess, found.kind, text=f"{BLIND}: {found.message}"))
            else:
                text += f"; {BLIND}, the policy had not compacted by then ({count})"
        out.append(CompactionCheck("recorded", c.before_index, at, trigger, c.pre_tokens, error, text))
        previous = max(previous, c.before_index)
    out += [CompactionCheck("predicted", e.turn, calls_before(e.turn + 1), e.kind, text=e.message) for e in timeline.events
            if e.kind in COMPACTION_KINDS and not e.message.startswith(RECORDED) and e.turn not in blind_at]
    return sorted(out, key=lambda c: (c.message, c.kind))


#: How a prediction made without the log's compaction is introduced.
BLIND = "replayed without the log's compaction"
#: How the replay's event for a summary the log records begins (not a prediction).
RECORDED = "the session's recorded summary"


def _blind(session: Session, k: int, since: int, policy: str, params: Any, store: CountStore) -> tuple[Event | None, str]:
    """The policy's own first compaction in the log up to its `k`th compaction's boundary, with that
    compaction and its summary taken out (those before it stay in force), at or after message
    `since` (the boundary before it); without one, what its trigger compared there. Message by
    message: an agent checks before every request, and the log's calls are not all its requests.
    The prefix's counts are the log's own, sliced (nothing is counted again)."""
    boundary = session.compactions[k].before_index
    # The summaries in force before the boundary before it (a Codex compaction's summary can start
    # before its own boundary: the user messages it keeps come after its covers).
    kept = tuple(s for s, start in zip(session.summaries, session.summary_start_turns, strict=True) if start <= since)
    blind = dataclasses.replace(session, messages=session.messages[:boundary], summaries=kept, compactions=session.compactions[:k])
    if not blind.messages:
        return None, "no message before it"
    pol = get_policy(policy)
    store.put(prefix_counts(store.get(session, pol.scheme(None, session.model)), blind))
    timeline = simulate(blind, policy, params, store=store, per_message=True)
    found = next((e for e in timeline.events if e.kind in COMPACTION_KINDS and e.turn >= since and not e.message.startswith(RECORDED)), None)
    if found is not None:
        return found, ""
    plan = timeline.plan_at(len(timeline.turns) - 1)  # (the whole prefix: no summary of the policy's was written)
    level = trigger_level(pol, timeline.params, blind)
    count = f"it counted {trigger_count(pol, plan):,} tokens at #{boundary - 1}"
    return None, count + (f" against its trigger {level:,}" if level is not None else "")


def report_text(v: Verification) -> str:
    """The per-call table and the summary, as `ctxviz verify` prints it."""
    s = v.session
    lines = [f"{s.source}: {len(v.calls):,} real {noun(len(v.calls), 'call')} replayed under {v.policy} ({v.why}); model {s.model or '(none named)'}"]
    for note in (*v.notes, *v.cache.notes):
        lines.append(f"  note: {note}")
    lines.append(f"{'call':>6} {'request':>9} {'reported':>9} {'read':>9} {'rep.read':>9} {'write':>8} {'rep.write':>9} "
                 f"{'cost $':>9} {'billed $':>9} {'hit':>5} {'rep.':>5}")
    for c in v.calls:
        p = c.predicted
        cost = f"{p.cost:>9.4f}" if v.known else f"{'-':>9}"
        bill = f"{c.billed:>9.4f}" if c.billed is not None else f"{'-':>9}"
        flag = "  cold start" if p.cold and p.turn != v.calls[0].turn else ""
        lines.append(f"{c.call:>6} {p.request:>9,} {c.reported_request:>9,} {p.cache_read:>9,} {c.reported_read:>9,} {p.cache_write:>8,} "
                     f"{c.reported_write:>9,} {cost} {bill} {c.predicted_hit:>5.0%} {c.reported_hit:>5.0%}{flag}")
    if v.compactions:
        lines.append("compactions:")
        for c in v.compactions:
            where = f"after {c.call:,} {noun(c.call, 'call')}" if c.call is not None else ""
            err = f", {c.error_calls:,} {noun(c.error_calls, 'call')} from its prediction" if c.error_calls is not None else ""
            lines.append(f"  {c.kind:<9} #{c.message:<5} {where}{err}: {c.text}")
    lines += v.summary_lines()
    return "\n".join(lines) + "\n"
