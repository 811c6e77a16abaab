"""Strands Agents' incremental replayers: the SlidingWindowConversationManager (`strands-sliding-window`)
and the SummarizingConversationManager (`strands-summarizing`), carried from turn to turn.
"""

from __future__ import annotations

import copy
import dataclasses
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any, overload

from ...counting import TokenCounts
from ...plan import Decision, Plan
from ...replay_contract import FITS, Event, Turn, _changes, _Cuts, _indices, _Replay, light_plan, untrimmed_cuts
from ...session import Session, Summary
from ...summarizers import ExtractiveSummarizer, Summarizer
from ...wording import noun
from ..carried import IdPrefix, _Snapshot
from ..common import base_system_prompt
from ..replay_common import _SummaryReplay
from ..replay_pairs import _PairSafety
from ..replay_recorded import carried_recorded, recorded_events
from .messages import StrandsMessage, Unrendered, block_count, context_window_limit, json_tokens, tool_specs
from .sliding_window import SlidingWindowParams, request_overhead, split_window
from .summarizing import SummarizingParams, oldest_split
from .window_manager import _Manager


class StrandsSlidingReplay(_Replay):
    """strands-sliding-window: the agent's history as the agent mutated it, carried from call to
    call, as the plan replays it (the policy's own `_Manager`: `take` each Strands message, which
    makes the model call before an assistant message, with its proactive compression, per_turn
    count and overflow recoveries, and runs apply_management after a final reply). What one call
    trimmed or cut stays so. A step is the request's own call, made on a copy of that history
    (and the run of tool messages it may end inside) only when it would change something.

    The trim events follow `_changes`: a turn's trimmed messages are those the history has lost
    or had images replaced in (`permanent`, which only grows) and those the step's own call does
    (`own`), so the newly trimmed ones are the permanent additions since the step before and the
    step's own, less what the step before trimmed.

    Pair safety is carried (`_PairSafety`): the window removes every message before its trim
    point but the pinned ones, so what is sent is the pinned head and the history from the removed
    run on (two runs of history positions), and a turn sends less by what `_PairSafety.drops`
    names, each at its sent count (a cut tool result at its cut count). The plan trims when the
    window removed something, so a message pair safety drops is then trimmed in the events too.

    A summary the file records is carried where each covers a prefix of the file
    (`_RecordedShapes`): the plan's agent holds the latest one in force (in the file's order) as a
    user message before the messages it does not cover, and lives its life over those from the
    start, so when that one changes the agent's history is replayed again from the first message it
    leaves (`_restart`: the messages after a compaction's cover are few), and that turn's trim
    events are what it does not send that the turn before sent.

    The turns from the first recorded summary that does not cover a prefix of the file on,
    replay_history off (the file as it stands), and pair safety where a tool call id is on more
    than one call, are replayed by the reference step."""

    pair_safe_incremental = True
    recorded_summaries = "shaped"
    #: Codex's compactions leave the system messages among those they cover: the agent's system
    #: prompt is every system message so far wherever it stands, so the shape carried is the
    #: history's prefix either way.
    recorded_system_gaps = True

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        return None if params.replay_history else "replay_history off"

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        p: SlidingWindowParams = params
        self.pairs = _PairSafety.of(session) if pair_safe and p.replay_history else None
        self.usable = (not pair_safe or self.pairs is not None) and p.replay_history
        self.recorded, self.first_summary = carried_recorded(self)
        if not self.usable:
            return
        self.h = 0  # history positions (non-system messages) so far
        self.removed_lo, self.removed_hi = len(session.messages), -1  # the history positions removed: one run [lo, hi]
        self.unpaired_before: set[int] = set()  # what pair safety dropped at the step before, when it trimmed
        self.history_index = [m.index for m in session.messages if m.role != "system"]  # history position -> session index
        # Until the first recorded summary is in force the agent's history holds none.
        self.mgr = _Manager(None, p, full)
        self.pending, self.pending_owners, self.message_of, self.completes = _agent_messages(session, full.message_tokens)
        # With a recorded summary held (`_restart`): the agent's messages are `head` (the summary,
        # and what is left of a run of tool messages its cover cuts) and then pending[k] at k + shift.
        self.head: list[tuple[StrandsMessage, list[int]]] = []
        self.shift = 0
        self.holding: tuple[int, int] | None = None  # the summary held and its span (the file's first messages it covers)
        self.cover_h = 0  # the history messages it covers
        self.covered_tokens = 0
        self.history_before = [0]  # per session index: the history messages before it
        self.history_sums = [0]  # per history position: the tokens of those before it
        self.count = 0  # Strands messages started so far (the last may be a run of tool messages still growing)
        self.previous_role = ""
        self.system_messages: list[Any] = []
        self.system_tokens = self._system_tokens()
        self.tools_tokens = request_overhead(session, full, [])[2]
        self.mgr.fixed = self.system_tokens + self.tools_tokens
        self.mgr.limit = self.limit = context_window_limit(session, p.context_window_limit)[0]
        self.read = 0  # journal entries read
        self.dropped: set[int] = set()  # removed from the history
        self.cut: dict[int, Decision] = {}  # cut in the history (a message is cut once)
        self.cut_alive = 0  # ... and not removed since
        self.category_removed: dict[str, int] = {}
        self.removed_tokens = 0
        self.permanent: set[int] = set()  # removed, or had images replaced: only grows
        self.fresh: list[int] = []  # added to `permanent` since the step before
        self.trimmed_before = False  # whether the turn before trimmed (its plan's extra "trimmed")
        self.own_before: set[int] = set()  # what the step before's own call trimmed

    def _system_tokens(self) -> int:
        prompt = base_system_prompt(self.session, self.system_messages)
        return self.full.text(prompt) if prompt else 0

    def _read_journal(self) -> None:
        """Take in what the history lost or had cut since the last look."""
        journal, messages = self.mgr.journal, self.session.messages
        for index, decision in journal[self.read:]:
            if decision is Decision.DROPPED:
                self.dropped.add(index)
                if self.pairs is not None:
                    position = self.pairs.position[index]
                    self.removed_lo, self.removed_hi = min(self.removed_lo, position), max(self.removed_hi, position)
                c = messages[index].category.upper()
                self.category_removed[c] = self.category_removed.get(c, 0) + 1
                self.removed_tokens += self.full.message_tokens[index]
                if index in self.cut:
                    self.cut_alive -= 1
            else:
                self.cut[index] = decision
                self.cut_alive += 1
            if index not in self.permanent and (decision is Decision.DROPPED or decision is Decision.REPLACED):
                self.permanent.add(index)
                self.fresh.append(index)
        self.read = len(journal)

    def _blank(self) -> _Manager:
        """A new agent holding nothing (without copying the session's messages, as `_Manager()` does)."""
        mgr = copy.copy(self.mgr)
        mgr.__dict__.update(messages=[], owners=[], removed={}, cut={}, sent_tokens={}, notes=[], journal=[], held=0, pin_applied=False,
                            summary_removed="")
        for name in ("calls", "rounds", "recovered_at", "managed", "since", "failed", "raised", "proactive"):
            mgr.__dict__.pop(name, None)  # back to the class's defaults
        return mgr

    def _pending(self, k: int) -> tuple[StrandsMessage, list[int]]:
        """The agent's Strands message k (and its blocks' owners) in the life it lives now."""
        if k < len(self.head):
            return self.head[k]
        return self.pending[k - self.shift], self.pending_owners[k - self.shift]

    def absorb(self, i: int) -> None:
        """Take message `i` in; a Strands message the agent appends when complete (the model call
        before an assistant message, apply_management after a final reply: `_Manager.take`)."""
        if not self.usable:
            return
        if self.pairs is not None:
            self.pairs.grow(i)
        m = self.session.messages[i]
        system = m.role == "system"
        self.history_before.append(self.history_before[-1] + (not system))
        if not system:
            self.h += 1
            self.history_sums.append(self.history_sums[-1] + self.full.message_tokens[i])
        self._feed(i)

    def _feed(self, i: int) -> None:
        """Message `i` into the agent's life."""
        m = self.session.messages[i]
        if m.role == "system":
            self.system_messages.append(m)
            self.system_tokens = self._system_tokens()
            self.mgr.fixed = self.system_tokens + self.tools_tokens
        else:
            if not (m.role == "tool" and self.previous_role == "tool"):  # messages.conversation's runs
                self.count += 1
            self.previous_role = m.role
        k = self.completes[i]
        if k >= 0:
            self.mgr.take(*self._pending(k + self.shift))
            self._read_journal()

    def _restart(self, i: int) -> set[int] | None:
        """The recorded summaries in force at step `i` (message i taken in): when the latest one
        (or what it covers) changed, the agent's life again from its start, the summary and the
        messages it does not cover. Returns what the turn before did not send (None: nothing changed)."""
        recorded = self.recorded
        assert recorded is not None
        if not recorded.update(i + 1, self.recorded_until(i)):
            return None
        held = (recorded.in_force[-1], recorded.span[recorded.in_force[-1]]) if recorded.in_force else None
        if held is None or held == self.holding:
            return None
        self.holding = held
        before = self._trimmed_before()
        session, messages, span = self.session, self.session.messages, held[1]
        summary = session.summaries[held[0]]
        head = [(StrandsMessage("user", [{"text": summary.text}], (), tokens=self.full.text(summary.text)), [-1])]
        first = next((j for j in range(span, len(messages)) if messages[j].role != "system"), None)
        q = len(self.pending) if first is None else self.message_of[first]
        if first is not None and self.pending[q].members[0] < span:  # a run of tool messages the cover cuts: its rest
            sm, owners = self.pending[q], self.pending_owners[q]
            cut = sum(1 for x in sm.members if x < span)  # (a tool message is one block)
            members = sm.members[cut:]
            head.append((Unrendered(sm.role, None, members, tokens=sum(self.full.message_tokens[x] for x in members), source=messages),
                         owners[cut:]))  # (its content: sm.content[cut:])
            q += 1
        self.head, self.shift = head, len(head) - q
        self.cover_h = self.history_before[span]
        self.covered_tokens = self.history_sums[self.cover_h]
        # A new agent: what the old one removed or cut is forgotten.
        self.mgr = self._blank()
        self.mgr.limit = self.limit
        self.removed_lo, self.removed_hi = len(messages), -1
        self.unpaired_before, self.dropped, self.cut, self.cut_alive = set(), set(), {}, 0
        self.category_removed, self.removed_tokens, self.permanent, self.fresh = {}, 0, set(), []
        self.trimmed_before, self.own_before, self.read = False, set(), 0
        everything = self.system_messages
        self.system_messages = [m for m in everything if m.index < span]
        self.system_tokens = self._system_tokens()
        self.mgr.fixed = self.system_tokens + self.tools_tokens
        self.mgr.take(*head[0])
        self._read_journal()
        self.count, self.previous_role = 1, ""
        for j in range(span, i + 1):
            self._feed(j)
        assert len(self.system_messages) == len(everything)
        return before

    def _trimmed_before(self) -> set[int]:
        """What the turn before trimmed (dropped or replaced), as its plan says it did."""
        if not self.trimmed_before:
            return set()
        return (self.permanent - set(self.fresh)) | self.own_before | self.unpaired_before

    def _hand_over(self) -> None:
        """The reference plans every step from here on. Its first step tells what changed against
        the turn before, which this replay built: `before` is given what that turn trimmed (else
        every message still trimmed read as newly trimmed)."""
        self.usable = False
        self.before = dataclasses.replace(self.before, trimmed=frozenset(self._trimmed_before()))

    def step(self, i: int) -> Turn:
        if self.usable and self.recorded_until(i) >= self.first_summary:
            self._hand_over()  # a recorded summary that does not cover a prefix of the file: the reference from now on
        if not self.usable:
            return super().step(i)
        self.absorb(i)
        restarted = self._restart(i) if self.recorded is not None else None
        tokens = self.full.message_tokens
        mgr, p = self.mgr, self.params
        partial: tuple[StrandsMessage, list[int]] | None = None
        if self._growing(i):
            sm, owners = self._pending(self.count - 1)
            members = tuple(x for x in sm.members if x <= i)  # one block per tool message
            partial = (Unrendered(sm.role, None, members, tokens=sum(tokens[x] for x in members), source=self.session.messages),
                       owners[: len(members)])  # (its content: sm.content[: len(members)])
        held = mgr.held + (partial[0].tokens if partial else 0)
        used = mgr.fixed + held
        threshold = p.proactive_compression
        acts = (used > self.limit or (threshold is not None and used / self.limit >= threshold)
                or (p.per_turn and (mgr.calls + 1) % p.per_turn == 0 and len(mgr.messages) + (partial is not None) > p.window_size))
        own_dropped: list[int] = []
        own_cut: dict[int, Decision] = {}
        own_sent: dict[int, int] = {}
        summary_removed = mgr.summary_removed
        if acts:  # the step's own call, on a copy of the history
            work = copy.copy(mgr)
            work.messages, work.owners = list(mgr.messages), list(mgr.owners)
            work.removed, work.cut, work.sent_tokens, work.journal = {}, {}, {}, []
            if partial:
                work.messages.append(partial[0])
                work.owners.append(partial[1])
                work.held += partial[0].tokens
            work.call("at this request's model call")  # (the summary message's removal reason names it)
            summary_removed = work.summary_removed
            used = work.fixed + work.held
            own_sent = work.sent_tokens
            for index, decision in work.journal:
                if decision is Decision.DROPPED:
                    own_dropped.append(index)
                else:
                    own_cut[index] = decision
        own_set = set(own_dropped)
        cut_count = self.cut_alive - sum(1 for k in own_dropped if k in self.cut) + sum(1 for k in own_cut if k not in own_set)
        dropped = len(self.dropped) + len(own_dropped)
        events: list[Event] = []
        trimming = dropped > 0
        own = own_set | {k for k, d in own_cut.items() if d is Decision.REPLACED and k not in own_set}
        unpaired: set[int] = set()
        if self.pairs is not None:
            unpaired = self._unpaired(own_dropped)
            if unpaired is None:  # the removed messages are not one run: the reference step from here on
                self._hand_over()
                return super().step(i)
            for k in unpaired:  # a cut tool result is sent at its cut count
                used -= own_sent.get(k, mgr.sent_tokens.get(k, tokens[k])) if (k in own_cut or k in self.cut) else tokens[k]
            cut_count -= sum(1 for k in unpaired if k in own_cut or k in self.cut)
        if trimming:
            if not self.trimmed_before:
                new = self.permanent | own | unpaired
            else:
                fresh = set(self.fresh)
                was, was_unpaired = self.own_before, self.unpaired_before
                new = {k for k in fresh if k not in was} | {k for k in own if k not in was and (k not in self.permanent or k in fresh)}
                if unpaired or was_unpaired:  # pair safety's drops are trimmed too
                    new = {k for k in new if k not in was_unpaired} | {
                        k for k in unpaired if k not in was_unpaired and k not in was and (k not in self.permanent or k in fresh)}
            if restarted:  # a new agent: what the turn before (the old one) did not send is no news
                new -= restarted
            self._trim_events(i, sorted(new), own_set, own_cut, events, unpaired)
        self.fresh = []
        self.trimmed_before, self.own_before = trimming, own if trimming else set()
        self.unpaired_before = unpaired if trimming else set()
        dropped += len(unpaired)
        fits = used <= self.limit
        if not fits and self.before.fits:
            allocation = split_window(self.limit, self.system_tokens, self.tools_tokens)
            usage = {"system": self.system_tokens, "tool_definitions": self.tools_tokens, "messages": used - mgr.fixed}
            self.before = _changes(i, light_plan(self.policy, allocation, usage, self.limit, used, fits), self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        not_sent = self.removed_tokens + sum(tokens[k] for k in own_dropped) + sum(tokens[k] for k in unpaired) + self.covered_tokens
        if self.holding is not None:
            events = self._recorded_events(i, summary_removed) + events
        summarized = self.cover_h
        return Turn(i, used, self.limit, i + 1 - dropped - cut_count - summarized, dropped, summarized, cut_count, fits, 0, tuple(events), not_sent)

    def _recorded_events(self, i: int, removed: str) -> list[Event]:
        """The reference's compaction events for the recorded summaries written since the step
        before (each covers the prefix's first m messages; the history ones the held summary covers
        are summarised), with the plan's decision: the latest is the agent's summary message (kept,
        or `removed` says why not), an earlier one is absorbed by it."""
        recorded, holding = self.recorded, self.holding
        assert recorded is not None and holding is not None

        def decide(k: int, m: int) -> tuple[int, tuple[Decision, str]]:
            summarized = self.history_before[min(m, holding[1])]
            if k != recorded.in_force[-1]:
                return summarized, (Decision.DROPPED, "dropped: Strands holds one summary message; the latest absorbed this one")
            if removed:
                return summarized, (Decision.DROPPED, removed)
            return summarized, (Decision.KEPT, "kept: a user message in place of the messages it covers, counted as one of the window's messages")

        return recorded_events(self, recorded, i, decide)

    def _unpaired(self, own_dropped: list[int]) -> set[int] | None:
        """The session indices pair safety drops at this step: the history but the removed run
        (the window's and the step's own call's) is sent. None: the removed messages are not one run."""
        pairs = self.pairs
        assert pairs is not None
        lo, hi = self.removed_lo, self.removed_hi
        for index in own_dropped:
            position = pairs.position[index]
            lo, hi = min(lo, position), max(hi, position)
        h, c = self.h, self.cover_h  # the history a recorded summary covers is not sent
        if hi < 0:
            dropped = pairs.drops(c, h, h, h)
        elif hi - lo + 1 != len(self.dropped) + len(own_dropped):
            return None
        else:
            dropped = pairs.drops(c, lo, hi + 1, h)
        if not dropped:
            return set()
        history = self.history_index
        return {history[k] for k in dropped}

    def _growing(self, i: int) -> bool:
        """Whether the step ends inside a run of tool messages the agent has not appended yet."""
        if not self.count:
            return False
        members = self._pending(self.count - 1)[0].members
        return bool(members) and members[-1] > i  # (a recorded summary's message is complete)

    def _trim_events(self, i: int, new: list[int], own_dropped: set[int], own_cut: dict[int, Decision], events: list[Event],
                     unpaired: set[int]) -> None:
        """`_changes`' trim events for the newly trimmed messages `new` (sorted); `unpaired`: what pair safety drops."""
        by_category: dict[str, list[int]] = {}
        messages, tokens = self.session.messages, self.full.message_tokens
        for k in new:
            by_category.setdefault(messages[k].category.upper(), []).append(k)
        own_count: dict[str, int] = {}
        for k in (*own_dropped, *unpaired):
            c = messages[k].category.upper()
            own_count[c] = own_count.get(c, 0) + 1
        for c, indices in by_category.items():
            removed = [k for k in indices if k in self.dropped or k in own_dropped or k in unpaired]
            images = [k for k in indices if k not in self.dropped and k not in own_dropped and k not in unpaired]
            what = []
            if removed:
                in_all = self.category_removed.get(c, 0) + own_count.get(c, 0)
                what.append(f"{len(removed):,} more {noun(len(removed), 'message')} removed ({_indices(removed)}, {sum(tokens[k] for k in removed):,} tokens), "
                            f"{in_all} removed in all")
            if images:
                what.append(f"images of {_indices(images)} replaced by the placeholder")
            events.append(Event(i, "trim", f"{c}: " + "; ".join(what)))


def _agent_messages(session: Session, tokens: Sequence[int]) -> tuple[list[StrandsMessage], list[list[int]], list[int], list[int]]:
    """`messages.conversation` of the whole session, its messages `Unrendered` (the replayed agent
    renders only those it cuts), with each one's blocks' owners (`messages.held`'s), and per session
    message the Strands message holding it and the one it completes (the last of a run of tool
    messages), -1 for none. Made here rather than by `held` of the session without its summaries:
    that made a session and a `Held` only to take the messages out again."""
    messages = session.messages
    runs: list[list[int]] = []
    previous = ""
    for m in messages:
        role = m.role
        if role == "system":
            continue
        if role == "tool" and previous == "tool":  # consecutive tool messages: one user message
            runs[-1].append(m.index)
        else:
            runs.append([m.index])
        previous = role
    pending: list[StrandsMessage] = []
    owners: list[list[int]] = []
    message_of = [-1] * len(messages)
    completes = [-1] * len(messages)
    for k, run in enumerate(runs):
        role = "assistant" if messages[run[0]].role == "assistant" else "user"
        if len(run) == 1:
            x = run[0]
            pending.append(Unrendered(role, None, (x,), tokens=tokens[x], source=messages))
            owners.append([x] * block_count(messages[x]))
            message_of[x] = completes[x] = k
            continue
        pending.append(Unrendered(role, None, tuple(run), tokens=sum(tokens[x] for x in run), source=messages))
        owners.append(run[:])  # (a tool message is one block)
        for x in run:
            message_of[x] = k
        completes[run[-1]] = k
    return pending, owners, message_of, completes


class StrandsSummarizingReplay(_SummaryReplay):
    """SummarizingConversationManager: the summary in force covers a prefix of the history (it
    absorbs the previous one), so Strands' estimate is the request overhead, the summary and the
    prefix sums after it. A turn that overflows (or reaches the proactive threshold) splits the
    Strands messages after the summary only, as `summarize_oldest` does (`oldest_split`, handed
    a view of them, `_Holding`: a pass reads the few messages the split walks past, not one per
    message held), and the new summary's text is the offline snapshot carried from turn to turn
    (`carried._Snapshot`), so what a pass costs beyond reading the messages it summarises for the
    first time does not grow with what was summarised before or with what is held.

    Pair safety is carried (`_SummaryReplay`): the history after the summary is the one run sent.

    Until Strands writes its own, the summary in force is the latest the file records that is in
    force (`messages.with_summary`: the last of them in the file's order, in place of what it
    covers, every other one dropped). Where each covers a prefix of the file (`_carry_recorded`)
    it is first among Strands' messages, so it is carried as a summary of history[:c]; a pass on
    it is carried too, unless it covers a system-role message (the plan's new summary then reads
    that message, which the replayer's snapshot of the history does not: the reference step).

    From scratch: ids on more than one message, pair safety where a tool call id is on more than
    one call, pin_first (pinned messages stay in front of the summary), another summarizer than the
    offline snapshot. A turn where Strands cannot summarise is planned by the reference step."""

    recorded_summaries = "shaped until generated"
    recorded_system_gaps = True

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        return "pin_first" if params.pin_first else None

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        p: SummarizingParams = params
        self.ok = self.ok and not p.pin_first and type(summarizer) is ExtractiveSummarizer
        self.limit, _ = context_window_limit(session, p.context_window_limit)
        self.tools_tokens = sum(json_tokens(spec, full.tokenizer) for spec in tool_specs(session))
        self.system_texts: list[str] = [session.system_prompt] if session.system_prompt else []
        self.system_tokens = full.text(session.system_prompt) if session.system_prompt else 0
        self.system_count = 0
        self.system_sums = [0]  # tokens of the system-role messages among 0..k-1
        self.history: list[int] = []  # session indices of the non-system messages so far
        self.history_ids: list[str] = []
        self.c = 0  # history[:c] is covered by the summary in force
        self.has_summary = False  # a summary is in force (the policy's own, or one the file records)
        self.summary_tokens = 0
        self.summary_text = ""
        self.snapshot = _Snapshot()
        self._carry_recorded()
        self.recorded_last = -1  # the recorded summary in force (its index in session.summaries), with the positions [0, span) it covers
        self.recorded_span = 0
        # The history positions where a Strands message of `messages.conversation` of the history
        # starts (a run of tool messages is one), kept as the history grows: the messages held
        # after a summary are read through them (`_Holding`), none made but those a pass reads.
        self.starts: list[int] = []

    def _grow(self, i: int) -> None:
        m = self.session.messages[i]
        self.system_sums.append(self.system_sums[-1] + (self.tokens[i] if m.role == "system" else 0))
        if m.role == "system":
            self.system_count += 1
            if m.text:
                self.system_texts.append(m.text)
                self.system_tokens = self.full.text("\n\n".join(self.system_texts))
            return
        history = self.history
        if m.role != "tool" or not history or self.session.messages[history[-1]].role != "tool":  # (consecutive tool messages: one)
            self.starts.append(len(history))
        history.append(i)
        self.history_ids.append(m.id)

    def _sync(self, i: int) -> None:
        summary = self.generated[-1]
        c = len(summary.covers)
        if c > len(self.history) or tuple(summary.covers) != tuple(self.ids[k] for k in self.history[:c]):
            self.ok = False
            return
        self.c = c
        self.has_summary = True
        self.summary_text = summary.text
        self.summary_tokens = self.full.text(summary.text)

    def _recorded_moved(self, i: int) -> None:
        recorded = self.recorded
        assert recorded is not None
        if not recorded.in_force:
            return
        k = recorded.in_force[-1]  # the latest in the file's order
        self.recorded_last, self.recorded_span = k, recorded.span[k]
        self.c = bisect_left(self.history, self.recorded_span)
        text = self.session.summaries[k].text
        if not self.has_summary or text != self.summary_text:
            self.summary_text, self.summary_tokens = text, self.full.text(text)
        self.has_summary = True

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str]]:
        """Recorded summary k, covering the prefix's first m messages: the history messages the one
        in force covers among them are summarised; the one in force is sent, any other dropped."""
        summarized = bisect_left(self.history, min(m, self.recorded_span))
        if k == self.recorded_last:
            return summarized, (Decision.KEPT, "kept: Strands sends its summary as a user message in place of the messages it covers")
        return summarized, (Decision.DROPPED, "dropped: Strands holds one summary message; the latest absorbed this one")

    def _covered_tokens(self, c: int) -> int:
        if not c:
            return 0
        last = self.history[c - 1]
        return self.sums[last + 1] - self.system_sums[last + 1]

    def _fast(self, i: int) -> Turn | None:
        p: SummarizingParams = self.params
        c = self.c
        history_tokens = self.sums[i + 1] - self.system_sums[i + 1]
        covered = self._covered_tokens(c)
        fixed = self.system_tokens + self.tools_tokens
        has_summary = self.has_summary
        recorded = self.recorded is not None and not self.generated and has_summary  # a summary the file records is in force
        estimate = fixed + history_tokens - covered + (self.summary_tokens if has_summary else 0)
        limit = self.limit
        why = ""
        if estimate > limit:
            why = f"the context overflowed ({estimate:,} estimated tokens > context_window_limit {limit:,})"
        elif p.proactive_compression is not None and estimate / limit >= p.proactive_compression:
            why = (f"proactive compression: the estimated {estimate:,} tokens are {estimate / limit:.0%} of the {limit:,}-token window, "
                   f"at least compression_threshold {p.proactive_compression:g}")
        active = len(self.generated)
        events: list[Event] = []
        if not why:  # Strands does nothing until the model overflows
            unpaired, unpaired_tokens = self._unpaired(c, i)  # what pair safety drops of history[c:]
            self.before = FITS
            if self.recorded is not None and not self.generated:
                events = recorded_events(self, self.recorded, i, self._recorded_decision)
            return Turn(i, estimate - unpaired_tokens, limit, i + 1 - c - unpaired, unpaired, c, 0, True, active, tuple(events),
                        covered + unpaired_tokens)
        if recorded and self.recorded_span != c:
            return None  # it covers a system-role message, which the plan's new summary reads: the reference step
        # The Strands messages after the summary in force, the summary first (with_summary: nothing pinned, at 0).
        session = self.session
        holding = _Holding(self, c, has_summary)
        split, _, error = oldest_split(holding, p.ratio, p.preserve_recent_messages)
        if error:
            return None  # Strands cannot summarise (it raises, or carries on): the reference step says why
        # Nothing is pinned (pin_first replays from scratch), so the oldest `split` messages are
        # summarised: the summary in force and the history right after it, up to where the first
        # message kept starts. The new summary covers history[:c2].
        c2 = holding.start(split)
        if not c2:
            return None  # (none: a recorded summary of nothing in the file summarised alone, which writes no summary)
        if len(self.snapshot.seen) > c2:  # not a growing prefix (it always is here): start again
            self.snapshot = _Snapshot()
        self.snapshot.advance([session.messages[k] for k in self.history[len(self.snapshot.seen) : c2]])
        text = self.snapshot.render()
        text_count = self.full.text(text)
        unpaired, unpaired_tokens = self._unpaired(c2, i)
        held = history_tokens - self._covered_tokens(c2) + text_count - unpaired_tokens  # the history kept, history[c2:], and the summary
        used = fixed + held
        fits = used <= limit
        ids = IdPrefix(self.history_ids, c2)  # the covers are a prefix of the history ids: a view, not a copy
        events.append(Event(i, "summary", f"{why}: Strands summarised {c2} messages into one user message"))
        summary = Summary(text=text, messages_covered=c2, covers=ids, created_at=session.messages[i].timestamp)  # type: ignore[arg-type]
        self.generated.append(summary)
        self.synced = len(self.generated)
        self.c, self.summary_text, self.summary_tokens, self.has_summary = c2, text, text_count, True

        def light() -> Plan:
            from .sliding_window import split_window

            usage = {"system": self.system_tokens, "tool_definitions": self.tools_tokens, "messages": held}
            return light_plan(self.policy, split_window(limit, self.system_tokens, self.tools_tokens), usage, limit, used, fits)

        self.before = untrimmed_cuts(i, self.before, fits, events, light)
        return Turn(i, used, limit, i + 1 - c2 - unpaired, unpaired, c2, 0, fits, active, tuple(events), self._covered_tokens(c2) + unpaired_tokens)


class _Holding(Sequence[StrandsMessage]):
    """The Strands messages the summarizing agent holds after the summary in force, as
    `oldest_split` reads them: the summary's user message (when one is in force), then
    `messages.conversation` of history[c:h] (a run of tool messages is one user message; the first
    starts at c, also where the summary's cover cut a run). `oldest_split` reads the length and the
    few messages its tool-pair adjustment walks past, so each is made when read, from where the
    Strands messages start (`StrandsSummarizingReplay.starts`): a pass costs what it reads, where a
    list of the messages held (hundreds, carried from pass to pass) cost a Strands message per
    message summarised and a copy of the list per pass."""

    def __init__(self, replay: StrandsSummarizingReplay, c: int, has_summary: bool) -> None:
        self.replay, self.c, self.h, self.summary = replay, c, len(replay.history), int(has_summary)
        self.first = bisect_right(replay.starts, c)  # starts[first:]: the messages after the first, which starts at c
        self.n = self.summary + (self.h > c) + len(replay.starts) - self.first

    def __len__(self) -> int:
        return self.n

    def start(self, k: int) -> int:
        """The history position where message k starts (h for k == len: past the last)."""
        r = k - self.summary  # (the summary's position has none: c, as the first message's)
        if r <= 0:
            return self.c
        j = self.first + r - 1
        starts = self.replay.starts
        return starts[j] if j < len(starts) else self.h

    @overload
    def __getitem__(self, k: int) -> StrandsMessage: ...

    @overload
    def __getitem__(self, k: slice) -> Sequence[StrandsMessage]: ...

    def __getitem__(self, k: int | slice) -> StrandsMessage | Sequence[StrandsMessage]:
        if isinstance(k, slice):
            return [self[x] for x in range(*k.indices(self.n))]
        if k < 0:
            k += self.n
        if not 0 <= k < self.n:
            raise IndexError(k)
        replay = self.replay
        if k < self.summary:
            return StrandsMessage("user", [{"text": replay.summary_text}], (), tokens=replay.summary_tokens)
        s, e = self.start(k), self.start(k + 1)
        members = tuple(replay.history[s:e])
        messages = replay.session.messages
        return Unrendered("assistant" if messages[members[0]].role == "assistant" else "user", None, members,
                          tokens=replay._covered_tokens(e) - replay._covered_tokens(s), source=messages)


REPLAYERS: dict[str, type[_Replay]] = {"strands-sliding-window": StrandsSlidingReplay, "strands-summarizing": StrandsSummarizingReplay}
