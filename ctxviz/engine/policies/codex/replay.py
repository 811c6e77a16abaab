"""The incremental replayer of Codex CLI's local auto-compaction (`codex-compaction`), carried from
turn to turn, with the compactions a rollout records (`compacted` lines) in force as the plan reads
them.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import FITS, NOT_FITS, Event, Turn, _Replay, recorded_summary_text
from ...session import Session, Summary
from ...summarizers import Summarizer
from ..replay_common import _EditsReplay
from ..replay_pairs import _PairSafety
from ..replay_recorded import _RecordedShapes
from . import compaction as cx


class CodexReplay(_EditsReplay):
    """Codex's auto-compaction: the history (what is neither a leading developer message nor the
    initial context, decided as each message arrives; a developer message after the conversation
    began is a history item, sent in its place) is sent whole until the trigger fires; its running
    sums, the last reported usage and, after a compaction, the user messages it keeps and its
    summary give each turn's count. The turns that compact (the compaction request, its trimming
    and the new summary are built from the whole history anyway) are planned by the reference
    step; the next turns take its summary over.

    Before the first generated summary, the latest recorded summary in force (in the file's order,
    as `state()` hands them to the plan) stands for all: the messages it covers are counted as they
    arrive (`_Recorded`; where each covers a prefix of the file, as a rollout's compactions do, read
    from prefix sums: `_RecordedShapes`), and the turn a recorded summary is written carries the reference's
    compaction event. A session with an id on more than one message replays from scratch, and so
    does one with the same summary recorded twice; the turns where a recorded summary written as
    Codex's own (after SUMMARY_PREFIX, which the plan reads as generated) is in force are planned
    by the reference step.

    Pair safety is carried too (`_PairSafety`): what is sent of the history is one run, all of it
    before a compaction and what follows its last cover after one (the initial context and the
    user messages a compaction keeps are sent before it, but a user message is never half of a
    call/result pair), so a turn drops what `apply_pair_safety` would from the problems and the
    pairs crossing the run's start, and sends their tokens less. Where a user message carries a
    tool call (a problem wherever it is sent), the turns after a summary are planned by the
    reference step, and so are those where a recorded summary that is not a prefix of the file is
    in force; a session with a tool call id on more than one call replays from scratch with pair safety."""

    unique_ids = True
    recorded_summaries = ""
    pair_safe_incremental = True

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        if len({id(s) for s in session.summaries}) != len(session.summaries):
            return "the same summary recorded twice"
        return None

    @classmethod
    def later_reason(cls, session: Session, params: Any) -> str | None:
        if any(cx.generated_form(s) for s in session.summaries):
            return "the turns where a recorded summary written after Codex's SUMMARY_PREFIX is in force"
        return None

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        ids = [m.id for m in session.messages]
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.usable = (not pair_safe or self.pairs is not None) and len(set(ids)) == len(ids) and self.scratch_reason(session, params) is None
        self.history_index = [m.index for m in session.messages if m.role != "system"]  # pair safety's positions -> session index
        self.positions = [0]  # positions[k]: the non-system messages among 0..k-1
        self.user_calls = pair_safe and any(m.role == "user" and m.tool_calls for m in session.messages)
        self.run_start = 0  # after a generated summary: the position after its last cover
        self.position = {m.id: m.index for m in session.messages}
        self.window, self.limit = cx._limits(session, params)
        self.budget = self.window if self.window is not None else (session.context_window or cx.CONTEXT_WINDOW_272K)
        self.instructions = cx.approx_token_count(session.system_prompt) if session.system_prompt else 0
        self.system_count = 0  # the leading developer messages, sent with the instructions
        self.conversation = False  # a message of another role seen: later developer messages are history items
        self.real_user = False  # a real user message seen: no later message is initial context
        self.initial_count = self.initial_tokens = 0
        self.history: list[int] = []  # session indices
        self.history_sum = 0
        self.last_usage = -1  # the last assistant message with usage
        self.synced = 0
        self.covered = self.covered_tokens = 0
        self.retained_kept = self.retained_truncated = self.retained_sent = self.retained_tokens = 0
        self.summary_tokens = 0
        self.kinds: list[int] = []  # each message so far: LEADING, INITIAL or HISTORY
        # Prefix sums over messages 0..k-1 of the initial-context and history messages' counts and tokens.
        self.initial_sums: list[tuple[int, int]] = [(0, 0)]
        self.history_sums: list[tuple[int, int]] = [(0, 0)]
        self.shapes = _RecordedShapes.of(session) if session.summaries else None
        if self.shapes is not None and self.shapes.why_not_for(self) is not None:
            self.shapes = None
        self.recorded: _Recorded | None = None  # the recorded summary in force at the last step
        starts = session.summary_start_turns
        self.order = sorted(range(len(starts)), key=lambda k: starts[k])  # the summaries by their start
        self.starts = [starts[k] for k in self.order]
        self.latest: list[int] = []  # latest[j]: the last summary in file order among the j + 1 starting first
        for k in self.order:
            self.latest.append(max(k, self.latest[-1]) if self.latest else k)

    def _grow(self, i: int) -> None:
        if self.pairs is not None:
            self.pairs.grow(i)
        self._classify(i)
        kind = self.kinds[i]
        self.positions.append(self.positions[-1] + (self.session.messages[i].role != "system"))
        if kind == INITIAL:
            ic, it = self.initial_sums[-1]
            self.initial_sums.append((ic + 1, it + self.tokens[i]))
            self.history_sums.append(self.history_sums[-1])
        elif kind == HISTORY:
            hc, ht = self.history_sums[-1]
            self.history_sums.append((hc + 1, ht + self.tokens[i]))
            self.initial_sums.append(self.initial_sums[-1])
        else:
            self.initial_sums.append(self.initial_sums[-1])
            self.history_sums.append(self.history_sums[-1])
        recorded = self.recorded
        if recorded is not None and recorded.lo is None and self.session.messages[i].id in recorded.covers:
            recorded.add(i, kind, self.tokens[i])

    def _classify(self, i: int) -> None:
        m = self.session.messages[i]
        if m.role == "system" and not self.conversation:  # cx.leading_system_messages
            self.kinds.append(LEADING)
            self.system_count += 1
            if m.text:
                self.system_texts.append(m.text)
                self.instructions = cx.approx_token_count("\n\n".join(self.system_texts))
            return
        self.conversation = True
        if m.role == "user" and not self.real_user:
            if cx.user_message_text(m) is None:  # initial context (before the first real user message)
                self.kinds.append(INITIAL)
                self.initial_count += 1
                self.initial_tokens += self.tokens[i]
                return
            self.real_user = True
        self.kinds.append(HISTORY)
        self.history.append(i)
        self.history_sum += self.tokens[i]
        if m.role == "assistant" and m.usage is not None:
            self.last_usage = i

    def absorb(self, i: int) -> None:
        self._grow(i)

    def step(self, i: int) -> Turn:
        self._grow(i)
        if not self.usable:
            return _Replay.step(self, i)
        if not self.generated and self.recorded_until(i) >= self.first_summary:
            return self._recorded_step(i)
        if self.synced != len(self.generated):
            self._sync()
        return self._fast(i)

    def _sync(self) -> None:
        """Take over the summary the reference step generated: it covers the history so far."""
        summary = self.generated[-1]
        messages = self.session.messages
        covered = [messages[self.position[c]] for c in summary.covers]
        self.covered = len(covered)
        self.covered_tokens = sum(self.tokens[m.index] for m in covered)
        self.run_start = self.positions[covered[-1].index + 1] if covered else 0
        users = [(m, text) for m in covered if (text := cx.user_message_text(m)) is not None]
        chosen = cx.select_user_messages([t for _, t in users], self.params.compact_user_message_max_tokens)
        self.retained_kept = self.retained_truncated = self.retained_sent = self.retained_tokens = 0
        for k, text in chosen:
            m = users[k][0]
            self.retained_sent += cx.item_tokens(cx.user_item(text))
            self.retained_tokens += self.tokens[m.index]
            if text == cx.user_message_text(m):
                self.retained_kept += 1
            else:
                self.retained_truncated += 1
        self.summary_tokens = cx.item_tokens(cx.user_item(summary.text))
        self.synced = len(self.generated)

    def _fast(self, i: int) -> Turn:
        active = len(self.generated)
        live = len(self.history) - self.covered if active else len(self.history)
        live_tokens = self.history_sum - self.covered_tokens if active else self.history_sum
        retained = self.retained_sent if active else 0
        summary = self.summary_tokens if active else 0
        used = self.instructions + self.initial_tokens + retained + summary + live_tokens
        total = used
        if not active and self.last_usage >= 0:
            total = cx.reported_total(self.session.messages[self.last_usage]) or 0
        if self.limit is not None and total >= self.limit and live:
            return _Replay.step(self, i)  # the compaction: the reference plans it and runs the policy's compact
        unpaired = freed = 0
        if self.pairs is not None:
            if active and self.user_calls:
                return _Replay.step(self, i)
            unpaired, freed = self._unpaired(self.run_start if active else 0, i)
            used -= freed
            live_tokens -= freed
        fits = used <= self.budget
        events: list[Event] = []
        if fits or not self.before.fits:  # no overflow event: the parts are not needed (`untrimmed_cuts`)
            self.before = FITS if fits else NOT_FITS
        else:
            fixed = self.instructions + self.initial_tokens + retained + summary
            parts = {"instructions": self.instructions, "initial_context": self.initial_tokens, "retained_user": retained, "summary": summary}
            self._overflow(i, fits, events, {**parts, "history": self.budget - fixed}, {**parts, "history": live_tokens}, self.budget, used)
        if active:
            kept = self.system_count + self.initial_count + self.retained_kept + live
            summarized = self.covered - self.retained_kept - self.retained_truncated
            not_sent = self.covered_tokens - self.retained_tokens
            truncated = self.retained_truncated
        else:
            kept, summarized, not_sent, truncated = i + 1, 0, 0, 0
        return Turn(i, used, self.budget, kept - unpaired, unpaired, summarized, truncated, fits, active, tuple(events), not_sent + freed)

    def _unpaired(self, start: int, i: int) -> tuple[int, int]:
        """What pair safety drops when the history from position `start` to message i is sent:
        how many messages, and their tokens (each sent whole)."""
        assert self.pairs is not None
        h = self.positions[i + 1]
        dropped = self.pairs.drops(start, h, h, h)
        if not dropped:
            return 0, 0
        return len(dropped), sum(self.tokens[self.history_index[k]] for k in dropped)


    def _in_force(self, i: int, until: int) -> _Recorded | None:
        """The recorded summary the plan reads at this step (the last in the file's order of those
        starting up to `until`), its covers among messages 0..i counted."""
        j = bisect_right(self.starts, until)
        k = self.latest[j - 1] if j else -1
        if self.recorded is None or self.recorded.k != k:
            lo = self.shapes.lo[k] if self.shapes is not None and k >= 0 else None
            self.recorded = None if k < 0 else _Recorded(k, self.session.summaries[k], self.position, self.kinds, self.tokens, i, lo)
        rec = self.recorded
        if rec is not None and rec.lo is not None:  # it covers messages [0, lo): what of them is here, from the prefix sums
            m = min(rec.lo, i + 1)
            (rec.initial_count, rec.initial_tokens), (rec.history_count, rec.history_tokens) = self.initial_sums[m], self.history_sums[m]
            rec.length = m
        return rec

    def _recorded_step(self, i: int) -> Turn:
        """A turn before any generated summary with a recorded one in force: `plan_records` with
        that summary (its covered initial context summarised with the rest, no user messages
        kept, the reported usage trusted unless the summary covers its message)."""
        until = self.recorded_until(i)
        rec = self._in_force(i, until)
        if rec is None or rec.generated_form:
            return _Replay.step(self, i)
        initial_tokens = self.initial_tokens - rec.initial_tokens
        live = len(self.history) - rec.history_count
        live_tokens = self.history_sum - rec.history_tokens
        sent_summary = rec.summary_tokens if rec.summary.text else 0
        if self.last_usage >= 0 and not rec.covering(self.last_usage, self.session.messages[self.last_usage].id):
            total = cx.reported_total(self.session.messages[self.last_usage]) or 0
        else:
            total = self.instructions + initial_tokens + rec.summary_tokens + live_tokens
        if self.limit is not None and total >= self.limit and live:
            return _Replay.step(self, i)  # the compaction: the reference plans it and runs the policy's compact
        unpaired = freed = 0
        if self.pairs is not None:  # the history sent is what follows the summary's covers [0, lo)
            if rec.lo is None or self.user_calls:
                return _Replay.step(self, i)
            unpaired, freed = self._unpaired(self.positions[min(rec.lo, i + 1)], i)
            live_tokens -= freed
        events: list[Event] = []
        lo, hi = bisect_right(self.starts, self.last_horizon), bisect_right(self.starts, until)
        written = sorted(k for k in self.order[lo:hi] if self.session.summary_start_turns[k] > 0) if lo < hi else ()
        if written:
            if written != [rec.k] or not rec.count:
                return _Replay.step(self, i)  # a summary written that the plan does not read, or that covers none of messages 0..i
            head, first, last = rec.head()
            decided = (Decision.KEPT, "kept: the compaction summary, sent as a user message after the kept user messages") if rec.summary.text else None
            events.append(Event(i, "compaction", recorded_summary_text(rec.k, head, first, last, rec.count, last - first + 1 == rec.count,
                                                                       rec.initial_count + rec.history_count, self.policy, decided)))
        used = self.instructions + initial_tokens + sent_summary + live_tokens
        fits = used <= self.budget
        if fits or not self.before.fits:  # no overflow event: the parts are not needed (`untrimmed_cuts`)
            self.before = FITS if fits else NOT_FITS
        else:
            fixed = self.instructions + initial_tokens + sent_summary
            parts = {"instructions": self.instructions, "initial_context": initial_tokens, "retained_user": 0, "summary": sent_summary}
            self._overflow(i, fits, events, {**parts, "history": self.budget - fixed}, {**parts, "history": live_tokens}, self.budget, used)
        summarized = rec.initial_count + rec.history_count
        return Turn(i, used, self.budget, i + 1 - summarized - unpaired, unpaired, summarized, 0, fits, 0, tuple(events),
                    rec.initial_tokens + rec.history_tokens + freed)


LEADING, INITIAL, HISTORY = range(3)


class _Recorded:
    """A recorded summary in force and what it covers of the messages so far: the initial-context
    messages (the plan then summarises them with the history) and the history items; the leading
    developer messages it names stay with the instructions."""

    def __init__(self, k: int, summary: Summary, position: dict[str, int], kinds: list[int], tokens: list[int], i: int, lo: int | None) -> None:
        self.k = k
        self.summary = summary
        self.lo = lo  # it covers exactly the file's messages [0, lo) (None: read from its covers)
        self.length = 0  # with lo: how many of them are among the messages so far (set each step)
        self.covers = frozenset(summary.covers) if lo is None else frozenset()
        self.generated_form = cx.generated_form(summary)
        self.summary_tokens = cx.item_tokens(cx.user_item(summary.text))
        self.initial_count = self.initial_tokens = self.history_count = self.history_tokens = 0
        self.positions: list[int] = []  # without lo: the covered messages among 0..i, in order
        if lo is None:
            for j in sorted(p for c in self.covers if (p := position.get(c)) is not None and p <= i):
                self.add(j, kinds[j], tokens[j])

    @property
    def count(self) -> int:
        return self.length if self.lo is not None else len(self.positions)

    def covering(self, j: int, id_: str) -> bool:
        """Whether it covers message j (whose id is id_)."""
        return j < self.lo if self.lo is not None else id_ in self.covers

    def add(self, j: int, kind: int, tokens: int) -> None:
        """Message j, a cover, is among the messages so far."""
        self.positions.append(j)
        if kind == INITIAL:
            self.initial_count += 1
            self.initial_tokens += tokens
        elif kind == HISTORY:
            self.history_count += 1
            self.history_tokens += tokens

    def head(self) -> tuple[list[int], int, int]:
        """The first five covered positions, the first and the last."""
        if self.lo is not None:
            return list(range(min(5, self.length))), 0, self.length - 1
        return self.positions[:5], self.positions[0], self.positions[-1]


REPLAYERS: dict[str, type[_Replay]] = {"codex-compaction": CodexReplay}
