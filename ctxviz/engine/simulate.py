"""Call-by-call replay: the context each policy would have built as the agent lived the session.

The replay steps at the agent's model calls (`steps.py`: the calls the log records, else the
request before each assistant reply; `--per-message` steps at every message). At every step the
policy plans the session so far (reusing the counts of the whole session, so nothing is
re-tokenized), checks its own trigger, and when one fires applies a summary that later steps
carry; the messages between two steps are taken in without a turn and without a trigger. The
app's timeline and `ctxviz simulate` both read this.

That from-scratch replay (`_Replay`, `simulate(..., incremental=False)`) is the reference. A policy
with a replayer in `replay.py` carries its state from message to message instead (`absorb`) and
computes only what a `Turn` holds at each step (`step`), with the same turns, events and
summaries on every schedule (tests/test_replay_incremental.py); `Timeline.plan_at` still rebuilds
a turn's full plan on demand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .checks import PlanOptions, apply_pair_safety
from .counting import CountStore, TokenCounts
from .plan import Decision, Plan, Totals
from .policies import get_policy
from .session import Session, Summary
from .steps import MESSAGES, Schedule, schedule
from .summarizers import ExtractiveSummarizer, Summarizer
from .tokenizers import Tokenizer

ProgressCallback = Callable[[int, int], None]
#: Called with the turns built so far (the replay's own list: read it, do not keep it) and the
#: number of steps the replay will make, as often as the progress callback: the app draws the chart as it fills.
TurnsCallback = Callable[[list["Turn"], int], None]


@dataclass(frozen=True)
class Event:
    """A change at one turn: a new summary or compaction, a trim or emergency truncation that cuts
    something it did not cut the turn before, the context ceasing to fit. A state that merely
    persists from one turn to the next (the same messages trimmed again) is no event."""

    turn: int
    kind: str  # summary, consolidation, compaction, hard_threshold, emergency_truncation, overflow, trim
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "kind": self.kind, "message": self.message}


@dataclass(frozen=True)
class Turn:
    """One step of a replay: the request the agent sent with messages 0..index."""

    index: int  # the session index of the request's last message
    tokens_sent: int
    budget: int
    kept: int
    dropped: int
    summarized: int
    truncated: int
    fits: bool
    summaries: int  # how many simulated summaries existed when this turn was built
    events: tuple[Event, ...] = ()
    #: The measured tokens of the session's messages so far that this turn does not send (dropped
    #: or summarised; a truncated message is sent): the plan's `Totals.dropped` at this turn.
    not_sent: int = 0
    #: The step's number in the replay (its position in `Timeline.turns`), and the assistant
    #: message that answered the request (-1: no answer in the file, or the per-message view).
    step: int = 0
    reply: int = -1

    @property
    def horizon(self) -> int:
        """How far into the session the agent was when the request went out: the answer's index when
        the file has it, else the request's last message. A summary the file records from the answer
        on (a compaction logged between the request's last message and its answer, as Claude Code
        compacts before a call) was made before the call, so it is in this request."""
        return self.reply if self.reply >= 0 else self.index

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.index, "step": self.step, "reply": self.reply if self.reply >= 0 else None, "tokens_sent": self.tokens_sent, "budget": self.budget, "kept": self.kept,
                "dropped": self.dropped, "summarized": self.summarized, "truncated": self.truncated, "fits": self.fits,
                "not_sent": self.not_sent, "events": [e.to_json() for e in self.events]}


@dataclass(frozen=True)
class Timeline:
    session: Session
    policy: str
    params: Any
    counts: TokenCounts
    turns: tuple[Turn, ...]
    summaries: tuple[Summary, ...]  # every summary the simulation produced, in order
    #: ctxviz's own options applied to every turn (pair safety; the real count is not replayed).
    options: PlanOptions | None = None
    #: Where the replay stepped (`steps.schedule`): its rule ("calls", "replies", "messages").
    schedule: Schedule | None = None

    @property
    def step_rule(self) -> str:
        return self.schedule.rule if self.schedule is not None else MESSAGES

    @property
    def events(self) -> list[Event]:
        return [e for t in self.turns for e in t.events]

    def step_of(self, index: int) -> int:
        """The first step whose request holds session message `index` (len(turns): none does).
        A turn's events name its `index`, so this also finds the step of an event."""
        from bisect import bisect_left

        return bisect_left(self.turns, index, key=lambda t: t.index)

    def step_after(self, index: int) -> int:
        """The first step made once the session reached message `index`: its request holds it, or
        #index is its answer (len(turns): none). A compaction the log records before #index is in
        force from this step on (`Turn.horizon`)."""
        from bisect import bisect_left

        return bisect_left(self.turns, index, key=lambda t: t.horizon)

    def session_at(self, turn: int) -> Session:
        """The session as the agent held it when building the context at `turn`."""
        t = self.turns[turn]
        return state(self.session, self.policy, t.index, self.summaries[: t.summaries], t.horizon)

    def plan_at(self, turn: int) -> Plan:
        session = self.session_at(turn)
        counts = prefix_counts(self.counts, session)
        plan = get_policy(self.policy).plan(session, self.params, counts)
        if self.options is not None and self.options.pins:
            plan = apply_pins(plan, session, pins_up_to(self.session, self.options.pins, self.turns[turn].index), counts)
        return apply_pair_safety(plan, session, counts) if self.options is not None and self.options.pair_safe else plan

    def to_json(self) -> dict[str, Any]:
        """The replay as JSON. Each summary or compaction event carries `covers` (the messages the
        summaries it put in force cover, `{"index", "id"}`), and `summaries` lists every summary the
        replay wrote and every one the file records, with its turn and the messages it covers."""
        from .sources import timeline_summaries

        summaries, covered_at = timeline_summaries(self.session, self.turns, self.summaries, _SUMMARY_KINDS)
        turns = [t.to_json() for t in self.turns]
        for position, turn in enumerate(turns):
            for event in turn["events"]:
                if event["kind"] in _SUMMARY_KINDS:
                    event["covers"] = covered_at.get(position, [])
        return {"policy": self.policy, "params": dataclasses.asdict(self.params),
                "pair_safe": bool(self.options is not None and self.options.pair_safe), "step_rule": self.step_rule,
                "recorded_calls": self.schedule.recorded if self.schedule is not None else 0,
                "unsent_messages": self.schedule.unsent if self.schedule is not None else 0, "turns": turns,
                "events": [e for t in turns for e in t["events"]], "summaries": summaries}


def state(session: Session, policy: str, index: int, generated: tuple[Summary, ...] | list[Summary], horizon: int | None = None) -> Session:
    """Messages 0..index plus the summaries in force: supyagent's latest summary (and missy's latest
    consolidation, and mnesis' condensed node, each absorb the earlier ones) replaces the rest.
    The session's own summaries count from the turn they were written (`summary_start_turns`), up to
    `horizon` (`Turn.horizon`: the step's answer, when a compaction was logged just before it)."""
    if generated:
        summaries: tuple[Summary, ...] = (generated[-1],)
    else:
        until = index if horizon is None else horizon
        starts = session.summary_start_turns  # `session` is the full session here: computed once
        summaries = tuple(s for s, start in zip(session.summaries, starts, strict=True) if start <= until)
    return dataclasses.replace(session, messages=session.messages[: index + 1], summaries=summaries)


def pins_up_to(session: Session, rules: tuple[str, ...] | dict[int, str], index: int) -> dict[int, str]:
    """The pinned messages among 0..index; rules are resolved on the whole session (a rule such as
    last-user means the session's last user message, from the turn it is said)."""
    if not isinstance(rules, dict):
        from .pins import resolve_pins

        rules = resolve_pins(session, rules)
    return {k: v for k, v in rules.items() if k <= index}


def apply_pins(plan: Plan, session: Session, pinned: dict[int, str], counts: TokenCounts) -> Plan:
    from .pins import apply_pins as apply

    return apply(plan, session, pinned, counts) if pinned else plan


def prefix_counts(full: TokenCounts, prefix: Session) -> TokenCounts:
    """Counts for a prefix of the session, sliced from the whole session's: no recounting."""
    counts = TokenCounts(prefix, full.scheme, [])
    counts.message_tokens = full.message_tokens[: len(prefix.messages)]
    counts._texts = full._texts  # share the memo of summary and prompt texts
    return counts


def simulate(
    session: Session,
    policy: str = "missy",
    params: Any = None,
    tokenizer: Tokenizer | str | None = None,
    store: CountStore | None = None,
    summarizer: Summarizer | None = None,
    progress: ProgressCallback | None = None,
    options: PlanOptions | None = None,
    incremental: bool = True,
    turns_so_far: TurnsCallback | None = None,
    per_message: bool = False,
) -> Timeline:
    """Replay the session call by call (`steps.schedule`; `per_message`: at every message). Each
    turn's events are changes from the step before (see `Event`); with `options.pair_safe` every
    turn's context is made pair-safe after the policy's own trigger has been checked on what the
    policy built.

    A policy with an incremental replayer (`ctxviz.engine.replay`) carries its state from message
    to message; any other policy, and `incremental=False` (the reference the replayers are tested
    against), plans the whole prefix at every step. Both give the same turns and events."""
    pol = get_policy(policy)
    pair_safe = options is not None and options.pair_safe
    params = params if params is not None and dataclasses.is_dataclass(params) else pol.make_params(params or {})
    full = (store if store is not None else CountStore()).get(session, pol.scheme(tokenizer, session.model))
    summarizer = summarizer or ExtractiveSummarizer()
    replay: _Replay | None = None
    pins = options.pins if options is not None else ()
    if incremental and not pins:  # pins are applied to each turn's full plan: the reference replay
        from .replay import replayer

        replay = replayer(session, policy, params, full, summarizer, pair_safe)
    if replay is None:
        replay = _Replay(session, policy, params, full, summarizer, pair_safe)
        if pins:
            from .pins import resolve_pins

            replay.pins = resolve_pins(session, pins)
    plan = schedule(session, per_message, pol.step_points)
    turns: list[Turn] = []
    n = len(session.messages)
    at = 0  # the next step
    steps, replies = plan.steps, plan.replies
    for i in range(n):
        if at < len(steps) and steps[at] == i:
            replay.horizon = replies[at] if replies[at] >= 0 else i
            turns.append(dataclasses.replace(replay.step(i), step=at, reply=replies[at]))
            replay.last_horizon = replay.horizon
            at += 1
        else:
            replay.absorb(i)
        if i % 50 == 0 or i == n - 1:
            if turns_so_far is not None:
                turns_so_far(turns, len(steps))
            if progress is not None:
                progress(i + 1, n)
    return Timeline(session, policy, params, full, tuple(turns), tuple(replay.generated), options, plan)


class _Replay:
    """The reference replay: at every step, plan the whole prefix from scratch. Incremental
    replayers subclass it and fall back to `step` for the turns they do not compute themselves.

    The contract: `simulate` hands every session message once, in order, to `absorb` (take it into
    the state: no turn, no trigger) or, at a step, to `step` (take it in, build the request's turn
    and check the policy's trigger there). Before each step it sets `horizon` (`Turn.horizon`: the
    session's own summaries starting up to there are in force), and after it `last_horizon`."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        self.session = session
        self.policy = policy
        self.pol = get_policy(policy)
        self.params = params
        self.full = full
        self.summarizer = summarizer
        self.pair_safe = pair_safe
        self.generated: list[Summary] = []
        self.before = _Cuts()
        self.pins: dict[int, str] = {}
        self.horizon = -1  # this step's `Turn.horizon` (set by `simulate` before `step`)
        self.last_horizon = -1  # the step before's

    def recorded_until(self, i: int) -> int:
        """The last session index whose recorded summaries are in force at the step at `i`."""
        return max(i, self.horizon)

    def absorb(self, i: int) -> None:
        """Take message `i` in between two steps. The reference plans each step's prefix from
        scratch, so it keeps nothing."""

    def step(self, i: int) -> Turn:
        session, policy, generated = self.session, self.policy, self.generated
        prefix = state(session, policy, i, generated, self.recorded_until(i))
        counts = prefix_counts(self.full, prefix)
        plan = self.pol.plan(prefix, self.params, counts)
        events: list[Event] = []
        new_summary = _trigger(policy, prefix, plan, self.params, counts, self.summarizer, i, events)
        if new_summary is not None:
            generated.append(new_summary)
        if not generated:  # a summary the file records, written since the step before
            for k, start in enumerate(session.summary_start_turns):
                if self.last_horizon < start <= self.recorded_until(i) and start > 0:
                    events.append(Event(i, "compaction", _recorded_summary_event(session, k, prefix, plan)))
        if self.pins:
            plan = apply_pins(plan, prefix, pins_up_to(session, self.pins, i), counts)
        if self.pair_safe:
            plan = apply_pair_safety(plan, prefix, counts)
        self.before = _changes(i, plan, self.before, events)
        return _turn(i, plan, len(generated) - (new_summary is not None), events)


def _recorded_summary_event(session: Session, k: int, prefix: Session, plan: Plan) -> str:
    """What the session's recorded summary #k does from the turn it was written, as this turn's
    plan decided it: which messages it covers, whether they stop being sent, and whether the
    policy sends the summary itself."""
    summary = session.summaries[k]
    position = {m.id: m.index for m in prefix.messages}
    covered = sorted(position[c] for c in summary.covers if c in position)
    if covered == list(range(covered[0], covered[-1] + 1)):
        span = f"message #{covered[0]}" if len(covered) == 1 else f"messages #{covered[0]}-#{covered[-1]}"
    else:
        span = f"{len(covered)} messages ({_indices(covered)})"
    text = f"the session's recorded summary #{k + 1} takes over {span}, as the agent compacted here"
    summarized = sum(1 for j in covered if plan.messages[j].decision is Decision.SUMMARIZED)
    if summarized == len(covered):
        text += ": they are no longer sent"
    elif summarized:
        text += f": {summarized} of them are no longer sent"
    else:
        text += f", but {plan.policy} still decides them as it would without it"
    local = next((j for j, s in enumerate(prefix.summaries) if s is summary), None)
    decided = next((sp for sp in plan.summaries if sp.index == local), None)
    if decided is not None:
        text += f"; the summary is {'sent' if decided.decision is Decision.KEPT else 'not sent'} ({decided.reason})"
    return text


@dataclass(frozen=True)
class _Cuts:
    """What the previous turn's plan cut, to tell a change from a state that persists."""

    fits: bool = True
    trimmed: frozenset[int] = frozenset()
    emergency: frozenset[int] = frozenset()
    emergency_active: bool = False


def _changes(i: int, plan: Plan, before: _Cuts, events: list[Event]) -> _Cuts:
    """Append this turn's trim, emergency-truncation and overflow events: only what changed since
    the turn before (a message trimmed again, or an overflow that goes on, is no news)."""
    trimmed: frozenset[int] = frozenset()
    if plan.extra.get("trimmed"):
        trimmed = frozenset(m.index for m in plan.messages if m.decision is Decision.DROPPED or m.decision is Decision.REPLACED)
        new = sorted(trimmed - before.trimmed)
        by_category: dict[str, list[int]] = {}
        for index in new:
            by_category.setdefault(plan.messages[index].category.upper(), []).append(index)
        for category, indices in by_category.items():
            replaced = [k for k in indices if plan.messages[k].decision is Decision.REPLACED]
            removed = [k for k in indices if k not in replaced]
            in_all = sum(1 for k in trimmed if plan.messages[k].category.upper() == category and plan.messages[k].decision is Decision.DROPPED)
            what = []
            if removed:
                what.append(f"{len(removed)} more message(s) removed ({_indices(removed)}, {sum(plan.messages[k].tokens for k in removed):,} tokens), "
                            f"{in_all} removed in all")
            if replaced:
                what.append(f"images of {_indices(replaced)} replaced by the placeholder")
            events.append(Event(i, "trim", f"{category}: " + "; ".join(what)))
    emergency_active = bool(plan.extra.get("emergency_truncation"))
    emergency: frozenset[int] = frozenset()
    if emergency_active:
        emergency = frozenset(m.index for m in plan.messages if "emergency truncation" in m.reason)
        new = sorted(emergency - before.emergency)
        if new or not before.emergency_active:
            note = next((n for n in plan.notes if n.startswith("emergency truncation")), "emergency truncation")
            events.append(Event(i, "emergency_truncation", note + (f"; newly cut: {_indices(new)}" if new else "")))
    if not plan.totals.fits and before.fits:
        verdict = plan.fit_verdict().removeprefix("does not fit: ")
        events.append(Event(i, "overflow", f"the context stops fitting ({plan.totals.used:,} of {plan.totals.budget:,} tokens): {verdict}"))
    return _Cuts(plan.totals.fits, trimmed, emergency, emergency_active)


def light_plan(policy: str, allocation: dict[str, int], usage: dict[str, int], budget: int, used: int, fits: bool,
               fits_test: str = "total", allocation_kind: str = "division", extra: dict[str, Any] | None = None) -> Plan:
    """Just what `_changes` reads of a plan without trims or emergency truncation: the totals and
    the parts, for the overflow event's verdict. The incremental replayers build one only for the
    turn the context stops fitting."""
    return Plan(policy, {}, "", allocation, usage, "", (), (),
                Totals(budget, used, 0, 0, fits, fits_test=fits_test, allocation_kind=allocation_kind), extra=extra or {})


FITS, NOT_FITS = _Cuts(True), _Cuts(False)


def untrimmed_cuts(i: int, before: _Cuts, fits: bool, events: list[Event], plan: Callable[[], Plan]) -> _Cuts:
    """`_changes` for a turn whose plan trims nothing, without building the plan unless the
    context stops fitting there (the overflow event reads its parts): the cuts it leaves are just
    whether it fits."""
    if not fits and before.fits:
        return _changes(i, plan(), before, events)
    return FITS if fits else NOT_FITS


def _indices(indices: list[int], shown: int = 5) -> str:
    text = ", ".join(f"#{k}" for k in indices[:shown])
    return text + (f" and {len(indices) - shown} more" if len(indices) > shown else "")


def _turn(i: int, plan: Plan, active: int, events: list[Event]) -> Turn:
    counts = dict.fromkeys(Decision, 0)
    for m in plan.messages:
        counts[m.decision] += 1
    return Turn(i, plan.totals.used, plan.totals.budget, counts[Decision.KEPT], counts[Decision.DROPPED], counts[Decision.SUMMARIZED],
                counts[Decision.TRUNCATED] + counts[Decision.REPLACED], plan.totals.fits, active, tuple(events), plan.totals.dropped)


def _trigger(policy: str, prefix: Session, plan: Plan, params: Any, counts: TokenCounts, summarizer: Summarizer,
             i: int, events: list[Event]) -> Summary | None:
    """The framework's own trigger (`Policy.compact`), checked after the turn's build; the summary it applies."""
    compact = get_policy(policy).compact
    return compact(prefix, plan, params, counts, summarizer, i, events) if compact is not None else None


#: Event kinds that put a summary in force, as the replay's sentence names them.
_SUMMARY_KINDS = {"summary": ("summary", "summaries"), "consolidation": ("consolidation", "consolidations"),
                  "compaction": ("compaction", "compactions"), "hard_threshold": ("hard-threshold compaction", "hard-threshold compactions")}


def plan_versus_replay(plan: Plan, timeline: Timeline) -> str:
    """One sentence for wherever a static plan and a replay of the same session appear together:
    whether the plan's total and the replay's last turn agree and, when they differ, why both are
    right. The plan puts every message of the file through the policy at once, with only the
    summaries recorded in the file; the replay builds the context turn by turn and applies the
    policy's own summaries as its triggers fire."""
    if not timeline.turns:
        return "The replay has no turn to compare with the plan (the session has no message)."
    last = timeline.turns[-1]
    n = len(timeline.session.messages)
    static = f"{plan.totals.used:,} of {plan.totals.budget:,} tokens"
    if last.tokens_sent == plan.totals.used:
        return f"The replay's last turn sends the same {static} as the plan of the whole file."
    if last.index < n - 1:  # the last step's request does not hold the file's last messages
        answered = f", answered by #{last.reply}" if last.reply >= 0 else ""
        return (f"The plan puts all {n:,} messages of the file through {plan.policy} at once ({static}); the replay's last step is "
                f"the request of messages #0-#{last.index}{answered}, the last model call in the file, and sends {last.tokens_sent:,}: "
                f"the {n - 1 - last.index:,} message(s) after it were in no request. Both are right: they answer different questions.")
    made: dict[str, int] = {}
    for e in timeline.events:
        if e.kind in _SUMMARY_KINDS and not e.message.startswith("the session's recorded summary"):
            made[e.kind] = made.get(e.kind, 0) + 1
    if timeline.summaries and made:
        what = " and ".join(f"{count} {_SUMMARY_KINDS[kind][count != 1]}" for kind, count in made.items())
        recorded = len(timeline.session.summaries)
        carried = (f"the {recorded} summar{'y' if recorded == 1 else 'ies'} recorded in the file" if recorded
                   else "no summary (the file records none)")
        return (f"The plan puts all {n:,} messages of the file through {plan.policy} at once, with {carried} ({static}); "
                f"the replay builds the context turn by turn and applies {plan.policy}'s own {what} as "
                f"{'it fires' if sum(made.values()) == 1 else 'they fire'}, so its last turn sends {last.tokens_sent:,}. "
                "Both are right: they answer different questions.")
    return (f"The plan of the whole file sends {static}; the replay's last turn sends {last.tokens_sent:,} of {last.budget:,} "
            "because it holds each recorded summary only from the turn it was written and applies the policy's own "
            "triggers turn by turn. Both are right: they answer different questions.")
