"""The incremental replayer of OpenHands' LLMSummarizingCondenser (`openhands-llm-summarizing`): the
View carried from turn to turn, each condensation's offline summary made of what its summariser is
shown (the summary it folds, as far as shown, and the events it forgets), and the compactions a
Claude Code log records.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, Plan
from ...replay_contract import Event, Turn, _Replay, light_plan, untrimmed_cuts
from ...session import Session, Summary, ThinkingPart
from ...summarizers import ExtractiveSummarizer, Summarizer
from ..carried import IdPrefix
from ..replay_common import _SummaryReplay
from ..replay_recorded import recorded_events
from .condenser import DEFAULT_INPUT_TOKENS, CondenserParams
from .summary_input import summary_text


class OpenhandsCondenserReplay(_SummaryReplay):
    """LLMSummarizingCondenser: which messages the View keeps is carried from turn to turn, with
    the view's event count and tokens, so a turn under max_size and the token limit reads running
    sums; a turn over them builds the view of the messages not forgotten only (bounded by
    max_size after the first condensation) and asks the module's `condensation` where to cut. The
    new summary is made of what its summariser is shown (`_text`): the events it forgets and the
    summary in force, as far as shown.

    The View's properties are carried under these conditions on the session, else the whole
    replay is from scratch: every tool call id of an assistant message is set and on one call,
    every tool message names its call and comes after it, no assistant message with tool calls
    has thinking blocks (no tool loops, so the Condensation marks change nothing). Then an
    assistant message with calls is in the view once every call has its first observation, a
    tool message when it is its call's first observation and that batch is in, and a
    condensation never separates the two.

    Pair safety is carried: under these conditions the pairs of a message in the view have both
    ends in the view but for an assistant message's later observations of a call it has already
    observed (not in the view), so `apply_pair_safety` drops from the view the non-assistant
    messages with tool calls (only an assistant sends them) and every batch (the assistant message
    and its first observations) with a second observation so far (`unpaired`).

    Recorded summaries (a Claude Code log's compactions) are carried while the policy has written
    none of its own: the plan reads the latest one in force, each covering a prefix of the file, so
    the View is that of the messages after it, rebuilt from the first one it leaves when what is in
    force changes (`_recorded_moved`). A turn that condenses over one goes to the reference step,
    which writes the summary; the replay takes it over (`_sync`) where the log the reference reads
    from then on holds it as the state does (`_log_holds`), and checks each summary it writes
    after it the same way (the reference replays that chain from the file's start).

    Also from scratch: ids on more than one message, pair safety where a tool call id is on more
    than one call, another summarizer than the offline snapshot; the turns from a recorded summary
    that covers no prefix of the file on, until the reference step writes a summary of its own; and
    (from that turn on) a condensation that keeps the earlier summary in its head or whose view
    has left messages out ahead of the span it forgets (OpenHands then puts the summary early:
    openhands/log.py), a summary the reference reads elsewhere than the state holds it, and a
    system message after a summary taken over that changes the log the reference replays that
    chain on (the system prompt's event, or its tokens where a token limit reads them)."""

    #: Recorded summaries covering a prefix of the file (Codex's shape too: the system messages
    #: among those covered are the prompt's either way) are carried (`_recorded_moved`); where they
    #: are not, those turns go to the reference step until it writes a summary of its own, which
    #: the replay then takes over (`_sync`).
    recorded_summaries = "shaped until generated"
    recorded_system_gaps = True

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        """The View's conditions above, as `__init__` checks them."""
        from .condenser import _result_id

        owner: dict[str, int] = {}
        for m in session.messages:
            if m.role == "assistant" and m.tool_calls:
                ids = tuple(call.id for call in m.tool_calls)
                if not all(ids) or any(isinstance(part, ThinkingPart) for part in m.parts) or any(c in owner for c in ids):
                    return "tool calls without an id or with thinking blocks, or an id on more than one call"
                owner.update(dict.fromkeys(ids, m.index))
        for m in session.messages:
            if m.role == "tool":
                call_id = m.tool_call_id or _result_id(m)
                if not call_id or owner.get(call_id, -1) >= m.index:
                    return "a tool message without a call id, or before its call"
        return None

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        from .condenser import _result_id, events_of, input_limit

        p: CondenserParams = params
        messages = session.messages
        self.calls: dict[int, tuple[str, ...]] = {}
        self.owner: dict[str, int] = {}
        self.observes: dict[int, str] = {}
        usable = self.ok and type(summarizer) is ExtractiveSummarizer
        for m in messages:
            if m.role == "assistant" and m.tool_calls:
                ids = tuple(call.id for call in m.tool_calls)
                usable = usable and all(ids) and not any(isinstance(part, ThinkingPart) for part in m.parts)
                for call_id in ids:
                    usable = usable and call_id not in self.owner
                    self.owner[call_id] = m.index
                self.calls[m.index] = ids
        for m in messages:
            if m.role == "tool":
                call_id = self.observes[m.index] = m.tool_call_id or _result_id(m)
                usable = usable and bool(call_id) and self.owner.get(call_id, -1) < m.index
        self.ok = usable
        self.events: dict[int, list[Any]] = {}
        if usable:
            for e in events_of(session, set()):
                if e.message is not None:
                    self.events.setdefault(e.message, []).append(e)
        limits = [x for x in (p.max_tokens, input_limit(session, p)) if x is not None]
        self.token_limit = min(limits) if limits else None
        self.budget = self.token_limit if self.token_limit is not None else DEFAULT_INPUT_TOKENS
        self.has_system = bool(session.system_prompt)
        self.system_texts: list[str] = [session.system_prompt] if session.system_prompt else []
        self.prompt_tokens = full.text(session.system_prompt) if session.system_prompt else 0
        self.system_count = 0
        self.system_role_tokens = 0
        self.first_obs: dict[str, int] = {}
        self.unanswered: dict[int, int] = {}
        self.inview: list[int] = []  # sorted session indices of the messages in the view
        self.view_events = 0  # their events
        self.view_tokens = 0  # their tokens
        self.uncovered = 0  # non-system messages not forgotten
        self.covered: Sequence[int] = []  # sorted session indices forgotten by the summary in force (system ones: `covered_system`)
        self.has_summary = False  # a summary is in force: the policy's own, or the latest in force the file records
        self.start = 0  # the View is that of the messages from `start` on (those before it a recorded summary covers)
        self.recorded_last = -1  # the recorded summary in force (its index in session.summaries)
        self.view_built = False
        self.covered_set: set[int] | frozenset[int] = frozenset()  # (with a summary taken over, `_sync`): the covered messages, system ones too
        self.covered_system: list[int] = []  # the system messages among `covered` (a recorded summary folded in covered them)
        #: A summary taken over from the reference step is in the chain of `written_after`: the
        #: reference replays that chain from the file's start (log.py), so each summary written
        #: after it is checked against the log it reads (`_log_holds`).
        self.chained = False
        self._carry_recorded()
        self.covered_ids: list[str] = []
        self.summary_tokens = 0
        self.written_after: tuple[str, ...] = ()
        self.last_role = ""
        self.batch: tuple[str, ...] | None = None  # the latest assistant message's calls, for agent_would_step
        self.answered: set[str] = set()
        self.last_text: tuple[tuple[tuple[int, ...], str | None], str] | None = None  # (`_text`'s key, its text)
        self.talk_before = [0]  # talk_before[k]: messages before k that are not system messages
        self.tainted: set[int] = set()  # assistant messages with a second observation of one of their calls so far
        self.unpaired: set[int] = set()  # the messages in the view that pair safety drops
        self.unpaired_tokens = 0
        for m in messages:
            self.talk_before.append(self.talk_before[-1] + (m.role != "system"))

    def _enter(self, k: int) -> None:
        insort(self.inview, k)
        self.view_events += len(self.events[k])
        self.view_tokens += self.tokens[k]
        if self.pairs is not None:
            m = self.session.messages[k]
            owner = self.owner.get(self.observes[k]) if m.role == "tool" else k
            if owner in self.tainted or (m.tool_calls and m.role != "assistant"):
                self._unpair(k)

    def _unpair(self, k: int) -> None:
        self.unpaired.add(k)
        self.unpaired_tokens += self.tokens[k]

    def _taint(self, owner: int) -> None:
        """A second observation of one of `owner`'s calls: pair safety drops its batch from the view."""
        if owner in self.tainted:
            return
        self.tainted.add(owner)
        k = bisect_left(self.inview, owner)
        if self.pairs is not None and k < len(self.inview) and self.inview[k] == owner:  # the batch is in the view
            self._unpair(owner)
            for c in self.calls[owner]:
                self._unpair(self.first_obs[c])

    def _grow(self, i: int) -> None:
        if not self.ok:
            return
        m = self.session.messages[i]
        if m.role == "system":
            if self.chained and (not self.has_system or (m.text and self.token_limit is not None)):
                # The log the reference replays the chain on gains the system prompt's event, or
                # that event's tokens change (the token limit reads them): the reference step from here on.
                self.ok = False
                return
            self.has_system = True
            self.system_count += 1
            self.system_role_tokens += self.tokens[i]
            if m.text:
                self.system_texts.append(m.text)
                self.prompt_tokens = self.full.text("\n\n".join(self.system_texts))
            return
        self.last_role = m.role  # (agent_would_step reads the whole prefix, covered messages too)
        if m.role == "assistant" and m.tool_calls:
            self.batch, self.answered = self.calls[i], set()
        elif m.role == "tool":
            self.answered.add(m.tool_call_id)
        self._take(i)

    def _take(self, i: int) -> None:
        """Non-system message `i` joins the View's state (the View of the messages from `start` on)."""
        m = self.session.messages[i]
        self.uncovered += 1
        if i in self.calls:
            self.unanswered[i] = len(self.calls[i])  # results come after their calls here
        elif m.role == "tool":
            call_id = self.observes[i]
            if call_id in self.first_obs:
                owner = self.owner.get(call_id)
                if owner is not None:
                    self._taint(owner)
                return  # a second observation of the call: ObservationUniquenessProperty
            self.first_obs[call_id] = i
            owner = self.owner.get(call_id)
            if owner is None or owner < self.start or owner in self.covered_set:
                return  # an observation without its call (or of a call a recorded summary covers): ToolCallMatchingProperty
            self.unanswered[owner] -= 1
            if not self.unanswered[owner]:  # the batch is whole: it and its observations join the view
                self._enter(owner)
                for c in self.calls[owner]:
                    self._enter(self.first_obs[c])
        else:
            self._enter(i)

    def _recorded_moved(self, i: int) -> None:
        """The plan reads the latest recorded summary in force in the file's order (`session.summaries[-1]`
        of the prefix, `log.recorded_log`): its covers in the prefix are the messages [0, span)
        (`_RecordedShapes`; the system messages among them, which are the prompt's, kept, or not
        covered at all with Codex's shape: the same view). So the View is that of the messages from
        the first one it leaves, the summary first (or last, where it covers none of the file's
        talk), the observations of the calls it covers left out: rebuilt from there."""
        recorded = self.recorded
        assert recorded is not None
        if not recorded.in_force:
            return
        k = recorded.in_force[-1]
        span = recorded.span[k]
        self.recorded_last = k
        self.has_summary = True
        self.summary_tokens = self.full.text(self.session.summaries[k].text)
        if span == self.start and self.view_built:
            return
        self.view_built = True
        before = self.talk_before[span]
        # the covered non-system messages (a range where no system message lies among them)
        self.covered = range(span) if before == span else [j for j in range(span) if self.session.messages[j].role != "system"]
        self._rebuild(i, span, frozenset())

    def _rebuild(self, i: int, start: int, covered: set[int] | frozenset[int]) -> None:
        """The View's state made again from the messages start..i that `covered` does not hold."""
        self.start, self.covered_set = start, covered
        self.inview, self.view_events, self.view_tokens, self.uncovered = [], 0, 0, 0
        self.first_obs, self.unanswered, self.tainted = {}, {}, set()
        self.unpaired, self.unpaired_tokens = set(), 0
        messages = self.session.messages
        for j in range(start, i + 1):
            if messages[j].role != "system" and j not in covered:
                self._take(j)

    def _sync(self, i: int) -> None:
        """Take over the summary the reference step wrote at turn `i` (over a recorded one, or over
        what the file records with gaps): the View it reads from the next turn on, where the state
        can hold it (`_log_holds`), made again from the whole prefix; else the reference step from
        here on."""
        self.chained = True
        covered = self._log_holds(i)
        if covered is None:
            self.ok = False
            return
        summary = self.generated[-1]
        messages = self.session.messages
        self.covered = sorted(covered)
        self.covered_system = [k for k in self.covered if messages[k].role == "system"]
        self.covered_ids = [self.ids[k] for k in self.covered]
        self.written_after = summary.written_after
        self.summary_tokens = self.full.text(summary.text)
        self.has_summary = True
        self._rebuild(i, 0, frozenset(covered))

    def _log_holds(self, i: int) -> set[int] | None:
        """The messages the latest summary written covers, where the View the reference reads from
        the turn after `i` on is one the state holds (None where it is not): the plan reads the log
        with that summary (`columns.log_of`: replayed on the log from the file's start along its
        `written_after`, or put where the span it covers began, log.py); the state holds that
        summary alone, where the first message it covers was, its covers all that is forgotten.
        Not so where OpenHands put it early or an earlier summary stays in the view. The replay
        and the plain placement agree for the summaries the replayer writes itself from its own
        state; one taken over from the reference step starts a chain the reference replays from
        the file's start, so each summary of that chain is checked here (a plan's log, once per
        summary)."""
        from ...replay_contract import prefix_counts, state
        from .columns import log_of
        from .condenser import events_of
        from .log import LATEST

        summary = self.generated[-1]
        prefix = state(self.session, self.policy, i, self.generated)
        counts = prefix_counts(self.full, prefix)
        all_events = events_of(prefix, set())
        log = log_of(prefix, all_events, self.params, counts, self.prompt_tokens, self.token_limit)
        position = {m.id: m.index for m in prefix.messages}
        covered = {position[c] for c in summary.covers if c in position}
        expected = [e.id for e in all_events if e.message not in covered]
        first = next((k for k, e in enumerate(all_events) if e.message in covered), len(all_events))
        expected.insert(sum(1 for e in all_events[:first] if e.message not in covered), LATEST)
        if [e.id for e in log.events] != expected or log.forgotten != covered or log.covers.get(LATEST) != covered:
            return None
        return covered

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str]]:
        """Recorded summary k, spanning the prefix's first m messages: the non-system ones the one in
        force covers among them are summarised; the latest in force is sent, every other dropped
        (a turn that condenses over it goes to the reference step)."""
        summarized = self.talk_before[min(m, self.start)]
        if k == self.recorded_last:
            return summarized, (Decision.KEPT, "kept: OpenHands sends its summary as a user message where the forgotten events were")
        return summarized, (Decision.DROPPED, "dropped: OpenHands' latest summary forgot this one with its events")

    def _steps(self) -> bool:
        """agent_would_step on the prefix."""
        if self.last_role == "user":
            return True
        if self.last_role != "tool":
            return False
        return self.batch is None or all(c in self.answered for c in self.batch)

    def _text(self, forgotten: list[int], folded: str | None, first: int) -> str:
        """The summary of a condensation that forgets these messages and, with `folded`, the
        summary in force (its text; in the view where its first covered message, `first`, was):
        ctxviz's offline stand-in of what its summariser is shown (summary_input.py), each
        condensation reading only the events it forgets. The last one is kept: a condensation the
        agent does not step into is planned again, on the same events, at the next turns."""
        key = (tuple(forgotten), folded)
        if self.last_text is not None and self.last_text[0] == key:
            return self.last_text[1]
        messages = self.session.messages
        items: list[str | Any] = [messages[k] for k in forgotten if folded is None or k < first]
        if folded is not None:
            items.append(folded)
            items += [messages[k] for k in forgotten if k > first]
        text = summary_text(items)
        self.last_text = (key, text)
        return text

    def _fast(self, i: int) -> Turn | None:
        from .condenser import Event as ViewEvent
        from .condenser import condensation

        p: CondenserParams = self.params
        has_summary = self.has_summary
        recorded = has_summary and not self.generated  # a summary the file records is in force
        system_used = self.prompt_tokens if self.has_system else 0
        summary_used = self.summary_tokens if has_summary else 0
        used = system_used + summary_used + self.view_tokens
        n_view = self.view_events + self.has_system + has_summary
        active = len(self.generated)
        kept = self.system_count + len(self.inview)
        dropped = self.uncovered - len(self.inview)
        summarized = len(self.covered) - len(self.covered_system)
        sent_tokens = self.view_tokens
        unpaired, unpaired_tokens = len(self.unpaired), self.unpaired_tokens  # what pair safety drops of the view
        events: list[Event] = []
        limit = self.token_limit
        if (limit is not None and used > limit) or n_view > p.max_size:
            view: list[Any] = [ViewEvent("system", "system", None)] if self.has_system else []
            per_event: list[int] = [self.prompt_tokens] if self.has_system else []
            first = self._first_covered() if has_summary else -1
            placed = not has_summary
            tokens = self.tokens
            for k in self.inview:
                if not placed and k > first:
                    view.append(ViewEvent("summary", "summary", None))
                    per_event.append(self.summary_tokens)
                    placed = True
                for n, e in enumerate(self.events[k]):
                    view.append(e)
                    per_event.append(tokens[k] if n == 0 else 0)
            if not placed:
                view.append(ViewEvent("summary", "summary", None))
                per_event.append(self.summary_tokens)
            outcome = condensation(view, p, per_event, limit)
            if outcome is not None and not outcome.error:
                if recorded:
                    return None  # a condensation over a recorded summary: the reference step writes the summary
                gone = [view[k] for k in outcome.forgotten]
                forgotten = sorted({e.message for e in gone if e.message is not None})
                forgot_summary = any(e.kind == "summary" for e in gone)
                if has_summary and not forgot_summary:
                    self.ok = False  # the earlier summary stays in the head: the reference step from here on
                    return None
                began = min(forgotten[:1] + ([first] if forgot_summary else []))
                covered_before = bisect_left(self.covered, began) - bisect_left(self.covered_system, began)
                if self.talk_before[began] - covered_before - bisect_left(self.inview, began):
                    self.ok = False  # the view left messages out ahead of the span: OpenHands puts the summary early (log.py)
                    return None
                what = []
                if "events" in outcome.reasons:
                    what.append(f"the view has {len(view)} events, over max_size={p.max_size}")
                if "tokens" in outcome.reasons:
                    what.append(f"its {sum(per_event):,} tokens exceed the token limit {limit:,}")
                why = " and ".join(what)
                extends = not forgotten or not self.covered or forgotten[0] > self.covered[-1]
                text = self._text(forgotten, self.generated[-1].text if forgot_summary else None, first)
                text_tokens_ = self.full.text(text)
                forgotten_tokens = sum(tokens[k] for k in forgotten)
                used = used - summary_used - forgotten_tokens + text_tokens_
                kept -= len(forgotten)
                summarized = len(self.covered) - len(self.covered_system) + len(forgotten)
                sent_tokens -= forgotten_tokens
                if self.unpaired:
                    gone_unpaired = [k for k in forgotten if k in self.unpaired]
                    unpaired -= len(gone_unpaired)
                    unpaired_tokens -= sum(tokens[k] for k in gone_unpaired)
                if self._steps():  # compact: the condensation is put in force
                    if extends:  # the covers are a prefix of the growing list of covered ids: a view, not a copy
                        self.covered += forgotten
                        self.covered_ids += [self.ids[k] for k in forgotten]
                    else:
                        self.covered = sorted({*self.covered, *forgotten})
                        self.covered_ids = [self.ids[k] for k in self.covered]
                    covers = IdPrefix(self.covered_ids, len(self.covered_ids))
                    events.append(Event(i, "summary", f"{why}: OpenHands condensed {len(outcome.forgotten)} events into one summary"))
                    self.written_after = (*self.written_after, self.ids[i])
                    self.generated.append(Summary(text=text, messages_covered=len(covers), covers=covers,  # type: ignore[arg-type]
                                                  created_at=self.session.messages[i].timestamp, written_after=self.written_after))
                    self.synced = len(self.generated)
                    gone_set = set(forgotten)
                    self.inview = [k for k in self.inview if k not in gone_set]
                    self.view_events -= sum(len(self.events[k]) for k in forgotten)
                    self.view_tokens -= forgotten_tokens
                    self.uncovered -= len(forgotten)
                    self.summary_tokens = text_tokens_
                    self.has_summary = True
                    if self.unpaired:
                        self.unpaired.difference_update(forgotten)
                        self.unpaired_tokens = unpaired_tokens
        used -= unpaired_tokens
        sent_tokens -= unpaired_tokens
        kept -= unpaired
        dropped += unpaired
        fits = used <= self.budget
        budget = self.budget

        def light() -> Plan:
            allot = min(self.prompt_tokens, budget)
            return light_plan(self.policy, {"system": allot, "events": budget - allot}, {"system": system_used, "events": used - system_used},
                          budget, used, fits)

        if recorded and self.recorded is not None:
            events += recorded_events(self, self.recorded, i, self._recorded_decision)
        self.before = untrimmed_cuts(i, self.before, fits, events, light)
        not_sent = self.sums[i + 1] - self.system_role_tokens - sent_tokens
        if self.chained and active != len(self.generated) and self._log_holds(i) is None:
            self.ok = False  # the reference replays the chain from the file's start and puts this summary elsewhere: the reference step from here on
        return Turn(i, used, budget, kept, dropped, summarized, 0, fits, active, tuple(events), not_sent)

    def _first_covered(self) -> int:
        """Where the summary in force is in the view: before the first non-system message it covers
        (after every message, where it covers none of them)."""
        if not self.covered_system:
            return self.covered[0] if self.covered else len(self.session.messages)
        system = set(self.covered_system)
        return next((k for k in self.covered if k not in system), len(self.session.messages))


REPLAYERS: dict[str, type[_Replay]] = {"openhands-llm-summarizing": OpenhandsCondenserReplay}
