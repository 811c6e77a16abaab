"""The incremental replayer of Gemini CLI's chat compression (`gemini-cli-compression`), carried from
turn to turn, before its first compression and after each.
"""

from __future__ import annotations

import bisect
import math
from typing import Any, NamedTuple

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import Event, Turn, _Replay
from ...session import Message, Session, Summary
from ...summarizers import ExtractiveSummarizer, Summarizer
from ...wording import noun
from ..carried import IdPrefix, _Snapshot
from ..replay_common import _EditsReplay
from ..replay_pairs import _PairSafety
from ..replay_recorded import carried_recorded
from . import compression as gc
from .history import (
    Content,
    MessageContent,
    estimate_part,
    estimate_text,
    json_length,
    message_content,
    own_parts,
    text_content,
)

_WRAPPER = len('{"role":"') + len('","parts":[') + len("]}")  # a Content's JSON but its role and parts


class _Cut(NamedTuple):
    """A function response truncateHistoryToBudget truncates: where (`content`, `part_index`), to
    what (`output`), the part, its JSON length and estimate, and whether it is kept whole."""

    content: int
    part_index: int
    output: str
    part: dict[str, Any]
    length: int
    estimate: float
    unchanged: bool


class _KeptCuts(NamedTuple):
    """What a compression's truncation of the history it kept sends (`GeminiCliReplay._compress`),
    for the turn after it to take over (`_sync`): the summary it wrote and the character budget it
    truncated at identify it; then the messages truncated, the tokens they send less, what each
    sends by session index, and how much less they estimate."""

    summary: Summary
    max_chars: int
    truncated: int
    extra: int
    sent: dict[int, int]
    estimate: float


class _OneContent(NamedTuple):
    """What `service._part_owner` reads of a Content that holds one message: its parts and messages."""

    parts: tuple[dict[str, Any], ...]
    messages: tuple[Message]


def _own_estimate(m: Message, mc: MessageContent) -> float:
    """The estimate of message m's own parts but its function responses (what a truncated output's
    message sends besides it): from the estimates `message_content` measured (`mc`, m's), which are
    `estimate_part`'s, summed in the same order; a user record's parts are the whole record's, so
    its message's own parts are read again (`own_parts`)."""
    if mc.whole_record:
        return sum(estimate_part(p) for p in own_parts(m, m.name) if "functionResponse" not in p)
    return sum(mc.part_estimate(k) for k, p in enumerate(mc.parts) if "functionResponse" not in p)


class GeminiCliReplay(_EditsReplay):
    """Gemini CLI's chat compression: the history's Contents grow one message at a time
    (`history.build_contents`, the same cached `message_content` with the tool names known at
    that turn), so the prompt's estimate (every Content but the request being sent) is a running
    sum, and the reported `promptTokenCount` the latest one.

    A turn whose prompt reaches the threshold compresses (`_compress`): the truncation of outputs
    and the split point are searched over the Contents held since the summary in force (those of
    the messages it does not cover, `rest`), read from columns (`_columns`: each Content's JSON
    length, split point, estimate before it, and the function response parts, from the lengths
    `message_content` measured with each message's estimate), made for the messages added since a
    compression last read them; the new summary's text is the offline snapshot of the covered
    messages, carried as the covered part grows (`carried._Snapshot`). So a compression reads no
    message's parts again but the outputs it truncates, and costs what the held history holds,
    not the whole session. (Another summarizer
    than the offline snapshot, or an id on more than one message: the compression turns are
    planned by the reference step.) After a compression the plan holds the summary turn, its
    acknowledgement and the Contents of the messages it does not cover, and truncates again the
    outputs up to the message held when it compressed (`Summary.held_until`): `_sync` keeps the
    columns of the Contents kept (`_drop`; else it reads `rest` again), truncates those outputs
    once (those Contents no longer change), and the later turns add the new
    messages to running sums as before. (Every estimate is a multiple of 1/4: the sums are exact
    in floating point, in any order.)

    Pair safety is carried too (`_PairSafety`): the history sent is one run, all of it before a
    compression and what the summary does not cover after one, so a turn drops what
    `apply_pair_safety` would from the problems and the pairs crossing the run's start. A session
    with a tool call id on more than one call replays from scratch with pair safety.

    A summary the file records is carried too, where each covers a prefix of the file
    (`_RecordedShapes`): until the policy compresses, the plan holds the latest one in force (in
    the file's order) as the summary turn, and the Contents of the history it does not cover, so
    when that one changes the state is rebuilt from the messages it leaves (`_sync`: the messages
    after a compaction's cover are few). A compression while a recorded summary is in force is
    planned by the reference step (its summary takes the recorded one's covers), and the turns
    after it are carried from the summary it wrote."""

    pair_safe_incremental = True
    recorded_summaries = "shaped"
    #: Codex's compactions leave the system messages among those they cover: the system prompt is
    #: every system message so far wherever it stands, so the shape carried is the history's prefix
    #: either way.
    recorded_system_gaps = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        settings: gc.GeminiCompression = params
        self.limit = settings.tokenLimit if settings.tokenLimit is not None else gc.token_limit(session.model)
        self.threshold = settings.compressionThreshold * self.limit
        self.call_names: dict[str, str] = {}
        self._held_contents()
        self.history_sum = 0
        self.reported: int | None = None
        self.synced = 0  # len(generated) the state after a compression reflects
        self.seen: list[Message] = []  # the history so far (messages 0..i but the system ones)
        self.seen_ids: list[str] = []
        self.rest: list[Message] = []  # the history the summary in force does not cover (a suffix of `seen`)
        ids = session.message_columns[0]
        #: The compressions are carried (`_compress`) for the offline snapshot and one message per id
        #: (a summary's covers are then the history's first messages, in order).
        self.carry_compressions = type(summarizer) is ExtractiveSummarizer and len(set(ids)) == len(ids)
        self.own_estimates: dict[int, float] = {}  # session index -> the estimate of its parts but function responses
        self.snapshot = _Snapshot()  # the offline snapshot of seen[:len(snapshot.seen)]
        self.summary_estimate = 0.0  # the summary turn's and its acknowledgement's estimates
        self.summary_tokens = 0
        self.covered = self.covered_tokens = 0
        self.truncated = 0
        self.truncated_extra = 0  # what the truncated outputs send less than their tokens (<= 0)
        self.truncated_estimate = 0.0  # what they estimate less
        self.truncated_sent: dict[int, int] = {}  # session index -> what a truncated output sends
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.usable = not pair_safe or self.pairs is not None
        self.run_start: int | None = 0  # the history position the sent run starts at (None: not one run)
        self.covers_len = 0  # len(covers) of the summary synced last
        #: What the last compression's truncation of the history it kept sends (`_sync` takes it over).
        self.kept_cuts: _KeptCuts | None = None
        # The recorded summaries in force (`_carry_recorded`), and which one the state holds (its
        # index and span: the file's first messages it covers); the history messages among the first k.
        self._carry_recorded()
        self.holding: tuple[int, int] | None = None
        self.history_before = [0]
        self.seen_sums = [0]

    def _held_contents(self) -> None:
        """No Contents held yet (`_content` adds each message of `rest` in turn)."""
        self.previous: Message | None = None
        self.key: tuple[Any, ...] | None = None  # the last Content's key, role and estimate
        self.role = ""
        self.contents = 0
        self.last_estimate = 0.0
        self.estimate = 0.0  # all Contents' estimates (multiples of 1/4: exact in floating point)
        # The Contents of `rest` in columns, what a compression reads of them (`history.build_contents`
        # would make them again from every message held), made when one reads them (`_columns`) for the
        # messages added since: the message each starts at (its index in `rest`), its JSON length,
        # whether it may be split before, and the estimate of the Contents before it.
        self.mcs: list[MessageContent] = []  # rest[j]'s
        self.c_start: list[int] = []
        self.c_length: list[int] = []
        self.c_splittable: list[bool] = []
        self.c_before: list[float] = []
        #: The messages holding function response parts, in the history's order, in three columns: their
        #: Content, the index of their first part in it, their index in `rest` (listed part by part by `_responses`).
        self.responses: list[int] = []  # (numbers alone: no object the collector walks)
        self.responses_first: list[int] = []
        self.responses_at: list[int] = []
        self.columns_at = 0  # the columns hold mcs[:columns_at]
        self.columns_key: tuple[Any, ...] | None = None  # the key and part count of the last Content they hold
        self.columns_parts = 0
        self.columns_total = 0.0  # the estimate of the Contents they hold

    def _carry_recorded(self) -> None:
        """Carry the recorded summaries where each covers a prefix of the file; else the turns from
        the first one that covers a message of the file on (until the policy compresses) go to the
        reference step."""
        self.recorded, self.first_summary = carried_recorded(self)

    def absorb(self, i: int) -> None:
        if self.pairs is not None:
            self.pairs.grow(i)
        m = self.session.messages[i]
        system = m.role == "system"
        self.history_before.append(self.history_before[-1] + (not system))
        if system:
            self._system(m)
        else:
            self.seen_sums.append(self.seen_sums[-1] + self.tokens[i])
            self._grow(i, m)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.usable or (not self.generated and self.recorded_until(i) >= self.first_summary):
            return _Replay.step(self, i)
        if self.synced != len(self.generated):
            self._sync(self.generated[-1])
        elif not self.generated and self.recorded is not None and self.recorded.update(i + 1, self.recorded_until(i)):
            self._follow_recorded()
        return self._fast(i)

    def _follow_recorded(self) -> None:
        """The state holds the latest recorded summary in force (in the file's order: `plan_records`
        reads `session.summaries[-1]`), with the history after the messages it covers."""
        recorded = self.recorded
        assert recorded is not None
        k = recorded.in_force[-1] if recorded.in_force else None
        held = None if k is None else (k, recorded.span[k])
        if held == self.holding:
            return
        self.holding = held
        if held is None:
            return
        covered = self.history_before[held[1]]
        self.covered, self.covered_tokens, self.run_start = covered, self.seen_sums[covered], covered
        self._sync(self.session.summaries[held[0]], self.seen[covered:])

    def _grow(self, i: int, m: Message) -> None:
        for c in m.tool_calls:
            if c.id:
                self.call_names[c.id] = c.name
        self.seen.append(m)
        self.seen_ids.append(m.id)
        self.rest.append(m)
        self._content(m)
        self.history_sum += self.tokens[i]
        if m.role == "assistant":
            reported = gc.reported_prompt_tokens(m)
            if reported is not None:
                self.reported = reported

    def _content(self, m: Message) -> None:
        """Add message m to the Contents held (`build_contents`, one step): their running sums
        (their columns are made when a compression reads them, `_columns`)."""
        mc = message_content(m, self.previous, self.call_names.get(m.tool_call_id, m.name))
        self.mcs.append(mc)
        if self.key is not None and mc.key == self.key:
            if not mc.whole_record:
                self.last_estimate += mc.estimate
                self.estimate += mc.estimate
        else:
            self.key, self.role, self.last_estimate = mc.key, mc.role, mc.estimate
            self.estimate += mc.estimate
            self.contents += 1
        if m.role != "tool":
            self.previous = m

    def _columns(self) -> None:
        """Bring the columns up to the messages held (those added since they were last read), as
        `_content` groups the messages into Contents."""
        mcs = self.mcs
        if self.columns_at == len(mcs):
            return
        c_start, c_length, c_splittable, c_before = self.c_start, self.c_length, self.c_splittable, self.c_before
        responses, responses_first, responses_at = self.responses, self.responses_first, self.responses_at
        last, had, total = self.columns_key, self.columns_parts, self.columns_total
        for j in range(self.columns_at, len(mcs)):
            key, role, parts, estimate, whole_record, length_sum, _, found, has_response = mcs[j]
            if last is not None and key == last:
                if not whole_record:
                    total += estimate
                    added = len(parts)
                    if added:
                        c_length[-1] += length_sum + (added if had else added - 1)  # (a comma between parts)
                        if found:
                            responses.append(len(c_start) - 1)
                            responses_first.append(had)
                            responses_at.append(j)
                        had += added
                        if has_response:
                            c_splittable[-1] = False
            else:
                last = key
                if found:
                    responses.append(len(c_start))
                    responses_first.append(0)
                    responses_at.append(j)
                c_before.append(total)
                total += estimate
                c_start.append(j)
                had = added = len(parts)
                c_length.append(_WRAPPER + len(role) + length_sum + (added - 1 if added else 0))
                c_splittable.append(role == "user" and not has_response)
        self.columns_at, self.columns_key, self.columns_parts, self.columns_total = len(mcs), last, had, total

    def _content_object(self, ci: int) -> Content:
        """Held Content ci as `build_contents` makes it."""
        start = self.c_start[ci]
        end = self.c_start[ci + 1] if ci + 1 < len(self.c_start) else len(self.rest)
        first = self.mcs[start]
        c = Content(first.role, list(first.parts), list(first.part_lengths), first.estimate, self.rest[start:end])
        for j in range(start + 1, end):
            mc = self.mcs[j]
            if not mc.whole_record:
                c.parts += mc.parts
                c.part_lengths += mc.part_lengths
                c.estimate += mc.estimate
        return c

    def _sent_truncated(self, truncations: list[_Cut], held: int) -> tuple[int, int, dict[int, int]]:
        """(messages truncated, tokens they send less, what each sends by session index) of the held
        Contents (Content index `held` + ci for held Content ci) whose function responses
        `truncations` truncates (as `_truncations` gives them). A Content of one message (nearly
        every one) is read from its message's columns, without making the Content."""
        by_content: dict[int, list[_Cut]] = {}
        for t in truncations:
            by_content.setdefault(t.content, []).append(t)
        truncated = extra = 0
        sent_by: dict[int, int] = {}
        own = self.own_estimates
        c_start, mcs, rest = self.c_start, self.mcs, self.rest
        for ci, found in by_content.items():
            k = ci - held
            start = c_start[k]
            end = c_start[k + 1] if k + 1 < len(c_start) else len(rest)
            c: Content | _OneContent
            if end - start == 1:
                c = _OneContent(mcs[start].parts, (rest[start],))
            else:
                c = self._content_object(k)
            for m, mc in zip(c.messages, mcs[start:end], strict=True):
                hits = [t for t in found if gc._part_owner(c, t.part_index, m)]  # type: ignore[arg-type]  # (it reads parts and messages)
                if hits:
                    rest_estimate = own.get(m.index)
                    if rest_estimate is None:  # (read again at the next turn's `_sync` unless that takes this turn's over)
                        rest_estimate = own[m.index] = _own_estimate(m, mc)
                    # (a part kept whole estimates what it did)
                    sent = math.floor(sum(t.estimate if t.unchanged else estimate_part(gc.truncated_part(t.part, t.output)) for t in hits)
                                      + rest_estimate)
                    truncated += 1
                    extra += sent - self.tokens[m.index]
                    sent_by[m.index] = sent
        return truncated, extra, sent_by

    def _responses(self, contents: int) -> list[tuple[int, int, dict[str, Any], int, float]]:
        """The function response parts of the first `contents` Contents held, in order: (Content,
        part index, part, JSON length, estimate)."""
        end = bisect.bisect_left(self.responses, contents)
        mcs = self.mcs
        return [(ci, first + k, mc.parts[k], *((mc.length_sum, mc.estimate) if mc.many is None else (mc.many[0][k], mc.many[1][k])))
                for ci, first, mc in zip(self.responses[:end], self.responses_first[:end], [mcs[j] for j in self.responses_at[:end]], strict=True)
                for k in mc.responses]  # (a message of one part: its sums are the part's)

    def _truncations(self, held: int, contents: int, max_chars: int) -> list[_Cut]:
        """truncateHistoryToBudget over the first `contents` held Contents, after `held` Contents of
        summary turn, newest first (no `Truncation` made: most are outputs kept whole, of messages
        the compression replaces)."""
        responses = self._responses(contents)
        out = []
        for k, output, _ in gc.truncate_parts(responses, max_chars):
            ci, pi, part, length, estimate = responses[k]
            out.append(_Cut(ci + held, pi, output, part, length, estimate, gc._unchanged(part, output)))
        return out

    def _sync(self, summary: Summary, rest: list[Message] | None = None) -> None:
        """Take over the compression the reference step ran: the Contents of the messages its
        summary does not cover, built afresh (`plan_records`), and the outputs truncated up to
        the message it held (fixed from now on: later messages start Contents of their own).
        `rest`: a recorded summary's, the history after the messages it covers."""
        carried = False
        if rest is None:
            rest = self._uncovered(summary)
            carried = rest is not None
        if rest is None:  # the general way: every message whose id the summary does not cover
            covered = set(summary.covers)
            rest = [m for m in self.seen if m.id not in covered]
            gone = [m for m in self.seen if m.id in covered]
            self.covered, self.covered_tokens = len(gone), sum(self.tokens[m.index] for m in gone)
            self.run_start = self.covered if all(m.id in covered for m in self.seen[: self.covered]) else None
            self.covers_len = len(summary.covers)
            self.carry_compressions = False  # the next compressions' covers would not be the history's first messages
        if not (carried and rest and self._drop(len(self.rest) - len(rest))):
            self.rest = rest
            self._held_contents()
            self.history_sum = 0
            for m in rest:
                self._content(m)
                self.history_sum += self.tokens[m.index]
        self.summary_estimate = estimate_text(summary.text) + estimate_text(gc.ACK_TEXT)  # (the summary turn's and its acknowledgement's)
        self.summary_tokens = self.full.text(summary.text) + self.full.text(gc.ACK_TEXT) if summary.text else 0
        self.truncated = self.truncated_extra = 0
        self.truncated_estimate = 0.0
        self.truncated_sent = {}
        # The outputs up to the message the compression held (a recorded compaction holds none) are
        # truncated again: the held Contents are the summary turn, its acknowledgement and those of
        # `rest` but the request being sent.
        if summary.held_until:
            self._columns()
            held = self.contents - (self.role == "user")
            end = self.c_start[held] if held < self.contents else len(rest)
            ids = [m.id for m in rest[:end]]
            if summary.held_until in ids:
                last = len(ids) - 1 - ids[::-1].index(summary.held_until)  # (the last Content holding it)
                upto = bisect.bisect_right(self.c_start, last) - 1
                max_chars = gc._max_chars(self.params, self.limit, None)
                kept = self.kept_cuts
                if carried and kept is not None and kept.summary is summary and kept.max_chars == max_chars:
                    # The compression that wrote this summary truncated the same outputs: it walked
                    # the budget newest first over the history it held, whose newest Contents are
                    # those kept here, at the same character budget.
                    self.truncated, self.truncated_extra, self.truncated_sent, self.truncated_estimate = kept.truncated, kept.extra, kept.sent, kept.estimate
                else:
                    found = self._truncations(2, upto + 1, max_chars)
                    for t in found:
                        if not t.unchanged:  # (a part kept whole estimates what it did)
                            self.truncated_estimate += estimate_part(gc.truncated_part(t.part, t.output)) - estimate_part(t.part)
                    self.truncated, self.truncated_extra, self.truncated_sent = self._sent_truncated(found, 2)
        self.synced = len(self.generated)

    def _drop(self, k: int) -> bool:
        """Drop the first k messages of `rest` from the Contents held, where a Content starts at
        rest[k] (a compression splits before a Content): the columns of the Contents after are
        those `_content` would make from rest[k:] (the same Contents, estimates exact in floating
        point), without reading their messages again. False (nothing done): k is inside a Content."""
        self._columns()
        x = bisect.bisect_left(self.c_start, k)
        if x >= self.contents or self.c_start[x] != k:
            return False
        self.history_sum -= sum([self.tokens[m.index] for m in self.rest[:k]])
        self.rest = self.rest[k:]
        self.mcs = self.mcs[k:]
        self.c_start = [start - k for start in self.c_start[x:]]
        self.c_length = self.c_length[x:]
        self.c_splittable = self.c_splittable[x:]
        before = self.c_before[x]
        self.c_before = [b - before for b in self.c_before[x:]]
        self.estimate -= before
        self.columns_total -= before
        self.columns_at -= k
        r = bisect.bisect_left(self.responses, x)
        self.responses = [ci - x for ci in self.responses[r:]]
        self.responses_first = self.responses_first[r:]
        self.responses_at = [j - k for j in self.responses_at[r:]]
        self.contents -= x
        return True

    def _uncovered(self, summary: Summary) -> list[Message] | None:
        """The history `summary` does not cover, where it covers what the summary synced before
        did and the next messages of `rest` (compact covers [*previous.covers, *compressed]); the
        covered counts brought up to it. None: another shape (the caller reads the covers whole)."""
        if not self.carry_compressions or self.synced != len(self.generated) - 1 or self.run_start is None:
            return None
        covers, old = summary.covers, self.covers_len
        k = len(covers) - old
        rest = self.rest
        if k < 0 or k > len(rest) or tuple(covers[old:]) != tuple([m.id for m in rest[:k]]):  # (compared at C speed)
            return None
        self.covers_len = len(covers)
        self.covered += k
        self.covered_tokens += sum(self.tokens[m.index] for m in rest[:k])
        self.run_start = self.covered
        return rest[k:]

    def _fast(self, i: int) -> Turn:
        pending = self.role == "user"  # the request being sent joins the history after any compression
        held = self.estimate - (self.last_estimate if pending else 0.0)
        active = len(self.generated)
        recorded = not active and self.holding is not None  # a recorded summary is the summary turn
        on = active or recorded
        if on:
            prompt_tokens = math.floor(self.summary_estimate + held + self.truncated_estimate)
        else:
            prompt_tokens = self.reported if self.reported is not None else math.floor(held)
        events: list[Event] = []
        if (on or self.contents > pending) and prompt_tokens >= self.threshold:
            if not self.carry_compressions or (active and self.run_start is None) or recorded:
                return _Replay.step(self, i)  # the compression: the reference plans it and runs the policy's compact
            turn = self._compress(i, prompt_tokens, active, events)
            if turn is not None:
                return turn
        if self.recorded is not None and not active:
            events += self._recorded_events(i)
        summary = self.summary_tokens if on else 0
        history = self.history_sum + (self.truncated_extra if on else 0)
        covered, truncated, not_sent = (self.covered, self.truncated, self.covered_tokens) if on else (0, 0, 0)
        return self._turn(i, active, summary, history, covered, truncated, not_sent, self.truncated_sent if on else {},
                          self.run_start if on else 0, events)

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str] | None]:
        """Recorded summary k covers the prefix's first m messages: its history ones the summary
        turn held covers are summarised; the plan's one summary decision (index 0: the summary turn
        it sends) reads as this one's when k is the first in force."""
        assert self.recorded is not None and self.holding is not None
        summarized = self.history_before[min(m, self.holding[1])]
        if self.recorded.in_force[0] != k:
            return summarized, None
        return summarized, (Decision.KEPT, "kept: sent as a user turn, followed by the model's acknowledgement")

    def _turn(self, i: int, active: int, summary: int, history: int, covered: int, truncated: int, not_sent: int,
              truncated_sent: dict[int, int], start: int | None, events: list[Event]) -> Turn:
        """The turn that sends the system prompt, `summary` tokens of summary turn and the history
        after the `covered` first messages (`history` tokens, `truncated` of them truncated, as
        `truncated_sent` says), then made pair-safe (the sent run starts at history position `start`)."""
        unpaired = 0
        if self.pairs is not None:  # pair safety drops the sent half of broken pairs: history[start:h] is sent
            if start is None:
                return _Replay.step(self, i)
            dropped = self.pairs.drops(start, len(self.seen), len(self.seen), len(self.seen))
            for k in dropped:
                index = self.seen[k].index
                sent = truncated_sent.get(index)
                history -= self.tokens[index] if sent is None else sent
                truncated -= sent is not None
                not_sent += self.tokens[index]
            unpaired = len(dropped)
        system = self.system_prompt_tokens
        used = system + summary + history
        fits = used <= self.limit
        self._overflow(i, fits, events, {"system": system, "summary": summary, "history": self.limit - system - summary},
                       {"system": system, "summary": summary, "history": history}, self.limit, used)
        return Turn(i, used, self.limit, i + 1 - covered - truncated - unpaired, unpaired, covered, truncated, fits, active, tuple(events), not_sent)

    def _compress(self, i: int, prompt_tokens: int, active: int, events: list[Event]) -> Turn | None:
        """The turn whose prompt reaches the threshold, as `compression.plan` and `compact` make it,
        from the Contents held since the summary in force: the outputs truncated to
        the budget, the split point, and (when it compresses) the new summary and what the turn
        sends after it. None: the compression does not happen (nothing to split before, or the
        compressed history would estimate more): the turn is the plain one (with the event
        `compact` says when there is nothing to split before)."""
        previous = self.generated[-1] if active else None
        head: list[Content] = [text_content("user", previous.text), text_content("model", gc.ACK_TEXT)] if previous is not None else []
        h = len(head)  # the held history: head, then the Contents of `rest` but the request being sent (the last user one)
        pending = self.contents > 0 and self.role == "user"
        held = self.contents - pending
        self._columns()
        max_chars = gc._max_chars(self.params, self.limit, prompt_tokens)
        found = self._truncations(h, held, max_chars)
        lengths = [c.json_length for c in head] + self.c_length[:held]
        changed = [t for t in found if not t.unchanged]  # (a part kept whole measures what it did)
        for t in changed:
            lengths[t.content] += json_length(gc.truncated_part(t.part, t.output)) - t.length
        splittable = [True, False][:h] + self.c_splittable[:held]
        last = self._content_object(held - 1) if held else head[-1] if head else None
        last_is_plain_model = last is not None and last.role == "model" and not last.has_function_call
        split = gc.find_compress_split_point(lengths, splittable, last_is_plain_model, 1 - gc.COMPRESSION_PRESERVE_THRESHOLD)
        if split == 0:
            events.append(Event(i, "compression_noop",
                                f"Gemini CLI tries to compress (prompt {prompt_tokens:,} tokens >= {self.threshold:,.0f}) "
                                "but frees nothing: findCompressSplitPoint splits only before a user message, and there is none "
                                "in the older 70 % of the history (a long tool loop); the history stays whole until one is"))
            return None
        kept = max(split - h, 0)  # the first Content of `rest` kept
        cut = self.c_start[kept] if kept < self.contents else len(self.rest)  # rest[:cut] is compressed
        held_end = self.c_start[held] if held < self.contents else len(self.rest)
        compressed = self.rest[:cut]
        k = self.covered + len(compressed) if active else len(compressed)  # the history's first k messages are covered
        if len(self.snapshot.seen) > k:
            self.snapshot = _Snapshot()  # fed past k by a compression that did not happen: start again
        self.snapshot.advance(self.seen[len(self.snapshot.seen):k])
        text = gc.stand_in_summary((), self.snapshot.render())
        # The new history's estimate: the summary turn, then each Content kept as it was estimated,
        # less what its truncated parts estimate less (a part kept whole is not written as JSON again).
        estimate = estimate_part({"text": text}) + estimate_part({"text": gc.ACK_TEXT})
        for c in head[split:]:
            estimate += c.estimate
        if kept < held:
            estimate += self.estimate - (self.last_estimate if pending else 0.0) - self.c_before[kept]  # (exact: multiples of 1/4)
        saved = 0.0  # what the outputs truncated in the history kept estimate less
        for t in changed:
            if t.content >= split:
                saved += estimate_part(gc.truncated_part(t.part, t.output)) - estimate_part(t.part)
        estimate += saved
        if math.floor(estimate) > prompt_tokens:
            return None  # COMPRESSION_FAILED_INFLATED_TOKEN_COUNT: the history stays as it is
        source = "reported" if not active and self.reported is not None else "estimate"
        event = Event(i, "compaction", f"Gemini CLI compresses the chat: prompt {prompt_tokens:,} tokens ({source}) >= "
                                       f"{self.threshold:,.0f}; {len(compressed):,} {noun(len(compressed), 'message')} replaced by a summary turn")
        held_until = self.rest[held_end - 1].id if held else (previous.held_until if previous is not None else "")
        self.generated.append(Summary(text=text, messages_covered=k, covers=IdPrefix(self.seen_ids, k),
                                      created_at=self.session.messages[i].timestamp, held_until=held_until))
        # What this turn sends: the new summary turn, held[split:] with the outputs truncated now, and the request.
        summary = self.full.text(text) + self.full.text(gc.ACK_TEXT)
        tokens = self.tokens
        truncated, extra, truncated_sent = self._sent_truncated([t for t in found if t.content >= split], h)
        self.kept_cuts = _KeptCuts(self.generated[-1], max_chars, truncated, extra, truncated_sent, saved)
        history = sum([tokens[m.index] for m in self.rest[cut:]]) + extra
        not_sent = self.covered_tokens if active else 0
        not_sent += sum([tokens[m.index] for m in compressed])
        return self._turn(i, active, summary, history, k, truncated, not_sent, truncated_sent, k, [event])

REPLAYERS: dict[str, type[_Replay]] = {"gemini-cli-compression": GeminiCliReplay}
