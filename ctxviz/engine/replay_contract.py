"""The replay contract: what a step of a replay produces and how a replayer is driven.

`simulate` (the driver) steps a replayer through a session: `absorb(i)` takes message i in, `step(i)`
builds the `Turn` of the request that ends with message i and checks the policy's trigger there. The
reference replayer (`_Replay`) plans the whole prefix at every step; a policy's incremental replayer
(in its own module) subclasses it, carries its state from message to message, and hands the steps it
does not compute to the reference. The `Event`s a turn carries are changes from the turn before
(`_changes`). Policies import `Event` from here to say why their trigger fired, so nothing a policy
needs lives in the driver, and the driver imports no policy module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .checks import apply_pair_safety
from .counting import TokenCounts
from .plan import Decision, Plan, Totals
from .policies import get_policy
from .prefix_columns import seed_prefix_columns
from .reported import seed_prefix
from .session import Session, Summary
from .summarizers import Summarizer
from .wording import noun


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


def new_turn(index: int, tokens_sent: int, budget: int, kept: int, dropped: int, summarized: int, truncated: int, fits: bool, summaries: int,
             events: tuple[Event, ...] = (), not_sent: int = 0, step: int = 0, reply: int = -1) -> Turn:
    """`Turn(...)` built directly, identical and equal: the frozen dataclass's constructor sets each
    of its thirteen fields through `object.__setattr__` (2-5 µs, a fifth of a cheap replayer's step).
    A replayer that knows the step's number and reply (as `simulate` numbers them) passes them, and
    `simulate` keeps the turn instead of copying it to number it."""
    turn = object.__new__(Turn)
    turn.__dict__.update(index=index, tokens_sent=tokens_sent, budget=budget, kept=kept, dropped=dropped, summarized=summarized,
                         truncated=truncated, fits=fits, summaries=summaries, events=events, not_sent=not_sent, step=step, reply=reply)
    return turn


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
    prefix = dataclasses.replace(session, messages=session.messages[: index + 1], summaries=summaries)
    seed_prefix_columns(session, prefix)  # (its columns sliced from the session's, not derived again per step)
    if session.compactions and session.summaries:
        seed_prefix(session, prefix)  # (what stays unseen after the compaction, as the file says)
    return prefix


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
    # (its array a read-only view of the whole session's: made again per prefix, it grew with every step)
    counts._array = (counts.message_tokens, full.token_array[: len(prefix.messages)])
    counts._texts = full._texts  # share the memo of summary and prompt texts
    return counts


class _Replay:
    """The reference replay: at every step, plan the whole prefix from scratch. Incremental
    replayers subclass it and fall back to `step` for the turns they do not compute themselves.

    The contract: `simulate` hands every session message once, in order, to `absorb` (take it into
    the state: no turn, no trigger) or, at a step, to `step` (take it in, build the request's turn
    and check the policy's trigger there). Before each step it sets `horizon` (`Turn.horizon`: the
    session's own summaries starting up to there are in force), `step_at` and `reply` (the step's
    number and the message answering it, -1: none, as the turn carries them: a replayer that builds
    its turn with them, `new_turn(..., step=self.step_at, reply=self.reply)`, has it kept as made
    instead of copied to be numbered), and after it `last_horizon`."""

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
        self.step_at = 0  # this step's number (set by `simulate` before `step`)
        self.reply = -1  # the message answering this step (set by `simulate` before `step`)
        #: The steps this replay planned from scratch (the reference `step`): `simulate` reports them.
        self.scratch_steps = 0

    #: Whether the replayer carries pair safety from turn to turn (else `--pair-safe` replays from scratch).
    pair_safe_incremental = False
    #: Whether the replayer carries pins from turn to turn (`policies/pins_carried.py`; without pair
    #: safety: pins with `--pair-safe` replay from scratch). Else `--pin` replays from scratch.
    pins_incremental = False
    #: What a summary recorded in the file does to the replay: "whole" (any recorded summary: the
    #: whole replay from scratch), "in force" (the turns from the first one in force on), "shaped"
    #: (carried where each covers a prefix of the file's messages, `replay_recorded._RecordedShapes`;
    #: else the turns from the first one that covers a message of the file on), "until generated"
    #: (the turns from the first one in force on, until the policy writes a summary of its own:
    #: the plan then reads only that), "shaped until generated" (carried as "shaped"; where they
    #: are not, those turns handed over until the policy writes a summary of its own), "" (carried).
    recorded_summaries = "whole"
    #: Whether it carries recorded summaries that leave out the system messages among those they
    #: cover (Codex's compactions; `_RecordedShapes.system_gaps`), where it carries "shaped" ones.
    recorded_system_gaps = False
    #: Whether an id on more than one message makes the replay from scratch.
    unique_ids = False

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        """Why this replayer plans the whole replay from scratch for this session and these
        parameters, beyond what the class attributes say (None: it does not)."""
        return None

    @classmethod
    def later_reason(cls, session: Session, params: Any) -> str | None:
        """Which turns of this session the replayer hands to the reference step, beyond what the
        class attributes say (None: none but single turns such as a compaction's)."""
        return None

    def recorded_until(self, i: int) -> int:
        """The last session index whose recorded summaries are in force at the step at `i`."""
        return max(i, self.horizon)

    def absorb(self, i: int) -> None:
        """Take message `i` in between two steps. The reference plans each step's prefix from
        scratch, so it keeps nothing."""

    def step(self, i: int) -> Turn:
        self.scratch_steps += 1
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
    summarized = sum(1 for j in covered if plan.messages[j].decision is Decision.SUMMARIZED)
    local = next((j for j, s in enumerate(prefix.summaries) if s is summary), None)
    decided = next((sp for sp in plan.summaries if sp.index == local), None)
    contiguous = covered == list(range(covered[0], covered[-1] + 1))
    return recorded_summary_text(k, covered[:5], covered[0], covered[-1], len(covered), contiguous, summarized, plan.policy,
                                 None if decided is None else (decided.decision, decided.reason))


def recorded_summary_text(k: int, head: list[int], first: int, last: int, count: int, contiguous: bool, summarized: int, policy: str,
                          decided: tuple[Decision, str] | None) -> str:
    """The sentence of `_recorded_summary_event` from what it reads: the covered messages (the first
    five, the first and last, how many, whether they are one run), how many of them the plan
    summarised, and the plan's decision on the summary itself (None: the plan decides none)."""
    if contiguous:
        span = f"message #{first}" if count == 1 else f"messages #{first}-#{last}"
    else:
        span = f"{count} messages ({_indices(head, total=count)})"
    text = f"the session's recorded summary #{k + 1} takes over {span}, as the agent compacted here"
    if summarized == count:
        text += ": they are no longer sent"
    elif summarized:
        text += f": {summarized} of them are no longer sent"
    else:
        text += f", but {policy} still decides them as it would without it"
    if decided is not None:
        text += f"; the summary is {'sent' if decided[0] is Decision.KEPT else 'not sent'} ({decided[1]})"
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
                what.append(f"{len(removed):,} more {noun(len(removed), 'message')} removed ({_indices(removed)}, {sum(plan.messages[k].tokens for k in removed):,} tokens), "
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


def _indices(indices: list[int], shown: int = 5, total: int | None = None) -> str:
    """The first `shown` indices, and how many more (`total`: the whole list's length, when only its head is given)."""
    total = len(indices) if total is None else total
    text = ", ".join(f"#{k}" for k in indices[:shown])
    return text + (f" and {total - shown} more" if total > shown else "")


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
