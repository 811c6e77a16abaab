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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .checks import PlanOptions, apply_pair_safety, counts_unseen, unseen_of
from .counting import CountStore, TokenCounts
from .plan import Decision, Plan
from .policies import get_policy
from .replay_contract import (  # noqa: F401 (re-exported: simulate's public names since before the contract had a module)
    FITS,
    NOT_FITS,
    Event,
    Turn,
    _changes,
    _Cuts,
    _indices,
    _Replay,
    _trigger,
    _turn,
    apply_pins,
    light_plan,
    pins_up_to,
    prefix_counts,
    state,
    untrimmed_cuts,
)
from .session import Session, Summary
from .steps import MESSAGES, Schedule, schedule
from .summarizers import ExtractiveSummarizer, Summarizer
from .tokenizers import Tokenizer
from .wording import counted

ProgressCallback = Callable[[int, int], None]
#: Called with the turns built so far (the replay's own list: read it, do not keep it) and the
#: number of steps the replay will make, as often as the progress callback: the app draws the chart as it fills.
TurnsCallback = Callable[[list["Turn"], int], None]


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
    #: How many steps planned the whole prefix from scratch (all of them without an incremental
    #: replayer; an incremental one hands some turns, or all from some point, to the reference step).
    scratch_steps: int = 0

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
        return self._planned(session, prefix_counts(self.counts, session), self.turns[turn].index)

    def file_plan(self) -> Plan:
        """The plan of the whole file with the replay's options, as `ctxviz plan` makes it: what
        the messages after the last step (in no request) and a compaction the log records there do."""
        return self._planned(self.session, self.counts, len(self.session.messages) - 1)

    def _planned(self, session: Session, counts: TokenCounts, upto: int) -> Plan:
        plan = get_policy(self.policy).plan(session, self.params, counts)
        if self.options is not None and self.options.pins:
            plan = apply_pins(plan, session, pins_up_to(self.session, self.options.pins, upto), counts)
        return apply_pair_safety(plan, session, counts) if self.options is not None and self.options.pair_safe else plan

    def resolved_params(self) -> dict[str, Any]:
        """The parameters as the policy's plans state them, what the session settles included (a
        window or limit from the model: claude-code's `context_window` 200,000, not None), as
        `plan --json` gives them; they depend on the session, not the turn, so the first step's
        plan (a prefix of a message or two) says them."""
        if not self.turns:
            return dataclasses.asdict(self.params)
        return dict(self.plan_at(0).params)

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
        return {"policy": self.policy, "params": self.resolved_params(),
                "pair_safe": bool(self.options is not None and self.options.pair_safe), "step_rule": self.step_rule,
                "recorded_calls": self.schedule.recorded if self.schedule is not None else 0,
                "unsent_messages": self.schedule.unsent if self.schedule is not None else 0, "turns": turns,
                "events": [e for t in turns for e in t["events"]], "summaries": summaries}


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
    if incremental:  # with pins only a replayer that carries them (`_Replay.pins_incremental`)
        from .replay import replayer

        replay = replayer(session, policy, params, full, summarizer, pair_safe, bool(pins))
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
    absorb, step = replay.absorb, replay.step
    reports = turns_so_far is not None or progress is not None
    count = len(steps)
    for i in range(n):
        if at < count and steps[at] == i:
            reply = replies[at]
            replay.horizon = reply if reply >= 0 else i
            replay.step_at, replay.reply = at, reply
            turn = step(i)
            if turn.step != at or turn.reply != reply:  # (a replayer that numbers its turns with these has them kept, not copied)
                turn = _numbered(turn, at, reply)
            turns.append(turn)
            replay.last_horizon = replay.horizon
            at += 1
        else:
            absorb(i)
        if reports and (i % 50 == 0 or i == n - 1):
            if turns_so_far is not None:
                turns_so_far(turns, len(steps))
            if progress is not None:
                progress(i + 1, n)
    return Timeline(session, policy, params, full, tuple(turns), tuple(replay.generated), options, plan, replay.scratch_steps)


def _numbered(turn: Turn, step: int, reply: int) -> Turn:
    """`dataclasses.replace(turn, step=step, reply=reply)` at a sixth of its cost: a copy of the
    fields, the two changed (a replay of 2,000 steps spent about 12 ms in `replace`, which checks
    every field by name: as much as ten plans of a cheap policy)."""
    numbered = object.__new__(type(turn))
    fields = numbered.__dict__
    fields.update(turn.__dict__)
    fields["step"] = step
    fields["reply"] = reply
    return numbered


#: Event kinds that put a summary in force, as the replay's sentence names them.
_SUMMARY_KINDS = {"summary": ("summary", "summaries"), "consolidation": ("consolidation", "consolidations"),
                  "compaction": ("compaction", "compactions"), "hard_threshold": ("hard-threshold compaction", "hard-threshold compactions")}


def _recorded_in_plan(plan: Plan, recorded: int) -> str:
    """Which of the file's recorded summaries the plan sends: all of them only when it does (under
    missy-consolidator a new consolidation absorbs them, under categories those covering nothing of
    the file are not sent; the sentence said "with the 3 summaries recorded" there)."""
    if not recorded:
        return "no summary (the file records none)"
    sent = sum(1 for s in plan.summaries if s.index < recorded and s.decision in (Decision.KEPT, Decision.TRUNCATED))
    them = f"the {recorded} summar{'y' if recorded == 1 else 'ies'} recorded in the file"
    own = ", and a summary of its own" if any(s.index >= recorded and s.decision is Decision.KEPT for s in plan.summaries) else ""
    if sent == recorded:
        return them + own
    return f"{'none' if sent == 0 else f'{sent:,}'} of {them} sent{own}"


def first_step_gap(plan: Plan, timeline: Timeline, reported: Mapping[int, int]) -> str:
    """Why the replay's first step sends far less than the provider reported for that request,
    when it does: the policy counts from the last reply's usage report, and before the first reply
    there is none, so its first count is the messages alone (Claude Code's own estimate then). The
    report holds what the log does not record, which later steps count through the reports.
    Without this a user read the first row (2,090 beside 24,017) as the replay being wrong. Said
    only where that accounts for the gap (the sent count and the unseen tokens make the report,
    within 15 %), and not for a log of one call, whose one step `plan_versus_replay` explains.
    `reported`: turn -> the provider's figure for the request after it."""
    if len(timeline.turns) < 2 or not counts_unseen(plan) or plan.reported is None:
        return ""
    first = timeline.turns[0]
    billed = reported.get(first.index)
    unseen = plan.reported.unseen_at(first.index)
    if billed is None or not unseen or billed - first.tokens_sent < unseen // 2:
        return ""
    if abs(billed - first.tokens_sent - unseen) > max(0.15 * billed, 500):
        return ""
    what = ("the system prompt, the tools and the conversation before the file starts" if plan.reported.restart_call is not None
            else "the system prompt and tools")
    return (f"step {first.step} sends {first.tokens_sent:,}, {plan.policy}'s estimate from the messages alone: no reply before "
            f"that request had reported the provider's count. The provider counted {billed:,} for it, about {unseen:,} of them "
            f"what the log does not record ({what}); each later step counts from the last reply's report, which holds them.")


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
        after = counted(n - 1 - last.index, "message")
        unseen = unseen_of(plan) if counts_unseen(plan) else 0
        if unseen and plan.totals.used - last.tokens_sent >= unseen // 2:
            # (a log with one call: its one report comes with the reply, after the step's estimate)
            return (f"The plan puts all {n:,} messages of the file through {plan.policy} at once ({static}), counting the provider's "
                    f"report, which holds about {unseen:,} tokens of system prompt and tools the log does not record; the replay's last "
                    f"step is the request of messages #0-#{last.index}{answered}, the last model call in the file, and sends "
                    f"{last.tokens_sent:,}, the policy's estimate from the messages alone: no reply before it reported the provider's "
                    f"count. The {after} after it {'was' if n - 1 - last.index == 1 else 'were'} in no request. "
                    "Both are right: they answer different questions.")
        later = [c.before_index for c in timeline.session.compactions if c.before_index > last.index]
        compacted = (f", and the plan holds the compaction the log records among them (before #{later[0]})" if later else "")
        return (f"The plan puts all {n:,} messages of the file through {plan.policy} at once ({static}); the replay's last step is "
                f"the request of messages #0-#{last.index}{answered}, the last model call in the file, and sends {last.tokens_sent:,}: "
                f"the {after} after it {'was' if n - 1 - last.index == 1 else 'were'} in no request{compacted}. "
                "Both are right: they answer different questions.")
    made: dict[str, int] = {}
    for e in timeline.events:
        if e.kind in _SUMMARY_KINDS and not e.message.startswith("the session's recorded summary"):
            made[e.kind] = made.get(e.kind, 0) + 1
    if timeline.summaries and made:
        what = " and ".join(f"{count} {_SUMMARY_KINDS[kind][count != 1]}" for kind, count in made.items())
        carried = _recorded_in_plan(plan, len(timeline.session.summaries))
        return (f"The plan puts all {n:,} messages of the file through {plan.policy} at once, with {carried} ({static}); "
                f"the replay builds the context turn by turn and applies {plan.policy}'s own {what} as "
                f"{'it fires' if sum(made.values()) == 1 else 'they fire'}, so its last turn sends {last.tokens_sent:,}. "
                "Both are right: they answer different questions.")
    return (f"The plan of the whole file sends {static}; the replay's last turn sends {last.tokens_sent:,} of {last.budget:,} "
            "because it holds each recorded summary only from the turn it was written and applies the policy's own "
            "triggers turn by turn. Both are right: they answer different questions.")
