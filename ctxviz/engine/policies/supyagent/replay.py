"""supyagent's incremental replayer: the summary in force, the newest messages that fit and the
trigger's running totals, carried from turn to turn, with the summary message's count
(`_SummaryCounter`) at a cost that does not grow with the summary.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_left
from functools import cache
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import FITS, Event, Turn, _Replay, new_turn
from ...session import Session, Summary
from ...summarizers import ExtractiveSummarizer, Summarizer
from ...tokenizers import TiktokenTokenizer, Tokenizer
from ..carried import IdPrefix, _Snapshot
from ..common import tools_json
from ..replay_common import _GrowingReplay
from ..replay_pairs import _PairSafety
from ..replay_recorded import _RecordedInForce, _RecordedShapes
from .context_manager import SUMMARY_SHARE, ContextSettings, count_message_dict, get_context_limit, summary_message
from .summary_input import SummaryInput, head_note


class SupyagentReplay(_GrowingReplay):
    """supyagent: the summary in force covers the history up to an index; the newest messages fill
    what is left (the first min_recent_messages whatever they cost), one bisection over the prefix
    sums of the history's charges (count + 3); the trigger reads running totals.

    Turns that need emergency truncation (the list does not fit: those are all the turns that do
    not fit) and turns with a recorded summary in force before the first generated one are
    planned by the reference step; pair safety is carried as missy's (`_PairSafety`), except
    where a tool call id is on more than one call."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        self.tok = full.tokenizer
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        settings: ContextSettings = params
        self.limit = settings.context_limit or get_context_limit(session.model)
        tools = tools_json(session)
        self.tools_tokens = full.text(tools) if tools else 0
        # The settings a turn reads, kept as attributes (`_fast` reads them on every turn).
        self.room = self.limit - settings.response_reserve - self.tools_tokens  # for the system prompt, summary and history
        self.min_recent = settings.min_recent_messages
        self.trim_protected_tail = settings.trim_protected_tail
        self.auto_summarize = settings.auto_summarize
        self.max_messages, self.max_tokens = settings.max_messages_before_summary, settings.max_tokens_before_summary
        self.tokens_why = f" tokens >= max_tokens_before_summary {self.max_tokens:,}"  # (the token trigger's reason, after the count)
        ids = [m.id for m in session.messages]
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.ok = len(set(ids)) == len(ids) and (not pair_safe or self.pairs is not None)
        # The recorded summaries in force before the first generated one: supyagent reads the
        # latest (file order); its covers are a prefix of the history (`_RecordedShapes`).
        # (Read only when the log records summaries: the shapes read the session's message columns,
        # a pass over every message that costs about a plan.)
        self.shapes = _RecordedShapes.of(session) if session.summaries else None
        self.recorded = _RecordedInForce(self.shapes) if self.shapes is not None else None
        self.first_covering = self.shapes.first_covering if self.shapes is not None and self.shapes.why_not_for(self) else len(session.messages)
        self.recorded_sizes: dict[int, int] = {}
        self.charges: list[int] = [0]  # of count + 3, as the fitting loop charges each message
        self.system_tokens = self._system_prompt_tokens("\n\n".join(self.system_texts))  # counted even when empty, as supyagent does
        self.synced = 0  # len(generated) the summary state reflects
        self.summary_idx: int | None = None
        self.summary_size = 0
        # supyagent re-summarises from message 0 at every trigger: the extractive snapshot is built
        # from what it gathered the time before (any other summarizer is asked each time).
        self.summary_counter = _SummaryCounter(self.tok)
        counter = self.tok.count if self.summary_counter.piecewise else None  # (the snapshot keeps each line's count)
        self.snapshot = _Snapshot(counter, by_pieces=True) if type(summarizer) is ExtractiveSummarizer else None  # (by pieces: see `_SummaryCounter`)
        # What supyagent's summariser is shown of the history, carried (`summary_input.py`): the
        # history messages added (`shown_to`), and the snapshot of the head it is shown once the
        # summary prompt is over.
        self.shown = SummaryInput(self.limit, self.tok)
        self.shown_to = 0
        self.head_snapshot: tuple[str, int] | None = None

    def _system_prompt_tokens(self, prompt: str) -> int:
        # supyagent counts the system message as a one-message list (3 for the list, its own count)
        return 3 + count_message_dict({"role": "system", "content": prompt}, self.tok)

    def _sync(self) -> None:
        summary = self.generated[-1]
        self.summary_idx = len(summary.covers) - 1  # supyagent's summaries cover the history from 0
        self.summary_size = count_message_dict(summary_message(summary), self.tok)
        self.synced = len(self.generated)

    pair_safe_incremental = True
    recorded_summaries = "shaped"
    recorded_system_gaps = True
    unique_ids = True

    def absorb(self, i: int) -> None:
        m = self.session.messages[i]
        if m.role == "system":
            self._grow(i)
        else:  # `_grow` of a history message, inline (twice a turn: its call cost as much as its work)
            t = self.tokens[i]
            self.history.append(i)
            self.history_ids.append(m.id)
            self.sums.append(self.sums[-1] + t)
            if m.role == "user":
                self.users.append(i)
            self.charges.append(self.charges[-1] + t + 3)
        if self.pairs is not None:
            self.pairs.grow(i)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.ok or (not self.generated and self.first_covering <= self.recorded_until(i)):
            return super().step(i)
        if self.synced != len(self.generated):
            self._sync()
        turn = self._fast(i)
        if turn is None:  # emergency truncation: the reference plans this turn
            turn = super().step(i)
            if self.synced != len(self.generated):
                self._sync()
        return turn

    def _fast(self, i: int) -> Turn | None:
        P, Q, h = self.sums, self.charges, len(self.history)
        room, min_recent = self.room, self.min_recent
        system_tokens = self.system_tokens
        available = room - system_tokens
        start = 0
        summary_used = 0
        recorded = None
        if not self.generated:
            recorded = self._recorded(i)
        before_summary = available
        summary_idx = self.summary_idx
        if summary_idx is not None and summary_idx < h:
            t = 3 + self.summary_size
            if t < available * SUMMARY_SHARE:
                available -= t
                start = summary_idx + 1
                summary_used = self.summary_size
        forced = 0 if self.trim_protected_tail else min(min_recent, h - start)
        e = h - forced
        available -= Q[h] - Q[e]
        j = bisect_left(Q, Q[e] - available, start, e) if available >= 0 else e  # history[j:e] fit, newest first
        total = system_tokens + summary_used + (P[h] - P[j]) + self.tools_tokens
        if total > room + self.tools_tokens:  # (the limit less the response reserve)
            return None
        kept = self.system_count + (h - j)
        not_sent = P[j]
        if self.pairs is not None:  # pair safety, after the build (the trigger reads the build): history[j:h] is sent
            dropped = self.pairs.drops(j, h, h, h)
            if dropped:
                unpaired = sum(self.tokens[self.history[k]] for k in dropped)
                total -= unpaired
                not_sent += unpaired
                kept -= len(dropped)
        active = len(self.generated)
        events: tuple[Event, ...] = ()
        # The trigger, on the whole history (count_messages_tokens = 3 + the sum).
        since = h - summary_idx - 1 if summary_idx is not None else h
        history_total = 3 + P[h]
        N, K = self.max_messages, self.max_tokens
        if self.auto_summarize and h >= min_recent + 4 and (since >= N or history_total >= K):
            messages = self.session.messages
            up_to = max(0, h - min_recent - 1)
            text_count: int | None = None
            shown = self.shown
            read = len(shown.items)
            if not shown.frozen:  # (once frozen nothing more is shown)
                shown.add([messages[k] for k in self.history[self.shown_to : up_to + 1]])
            self.shown_to = up_to + 1
            snapshot = self.snapshot
            if snapshot is None:
                text = self.summarizer.supyagent_snapshot(shown.messages())
            else:
                if shown.settle():  # the summariser is shown the same head from now on: its snapshot made once
                    if self.head_snapshot is None:
                        head = _Snapshot(snapshot.count, by_pieces=True)
                        head.gather(shown.head_readings())
                        self.head_snapshot = head.counted()
                    text, text_count = self.head_snapshot
                else:
                    snapshot.gather(shown.readings(read))
                    text, text_count = snapshot.counted()
                if snapshot.count is None:  # (-1: counted whole by the summary counter)
                    text_count = None
            last = self.history[up_to]
            why = (f"{since} messages since the last summary >= {N}" if since >= N
                   else f"the history's {history_total:,}{self.tokens_why}")
            events = (_event(i, "summary", f"summarised messages 0-{last} ({why}){head_note(shown)}"),)
            # The covers are the first up_to + 1 history ids: a view of the growing list, not a copy.
            summary = _summary(text, up_to + 1, IdPrefix(self.history_ids, up_to + 1), messages[i].timestamp)
            self.generated.append(summary)
            # In force from the next step on: what `_sync` would read from it, set here.
            self.summary_idx = up_to
            self.summary_size = self.summary_counter.size(summary, text_count)
            self.synced = len(self.generated)
        if recorded is not None and not self.generated:
            events += tuple(self._recorded_events(i, recorded, h, start, before_summary))
        self.before = FITS  # the list fits (emergency truncation would have taken this turn)
        return new_turn(i, total, self.limit, kept, i + 1 - kept - start, start, 0, True, active, events, not_sent, self.step_at, self.reply)


    def _recorded(self, i: int) -> int | None:
        """Bring the recorded summary in force up to this step (`summary_idx`, its size): the
        latest in the file's order, its newest covered history message; the bisection point
        of its covers' end in the history (None: no summary in force)."""
        rec = self.recorded
        if rec is None:  # the log records no summary
            self.summary_idx = None
            return None
        until = self.recorded_until(i)
        rec.update(i + 1, until)
        if not rec.in_force:
            self.summary_idx = None
            return None
        k = rec.in_force[-1]
        summary = self.session.summaries[k]
        if summary.covers:
            self.summary_idx = bisect_left(self.history, rec.span[k]) - 1
        else:
            self.summary_idx = summary.messages_covered - 1
        size = self.recorded_sizes.get(k)
        if size is None:
            size = self.recorded_sizes[k] = count_message_dict(summary_message(summary), self.tok)
        self.summary_size = size
        return k

    def _recorded_events(self, i: int, latest: int, h: int, start: int, available: int) -> list[Event]:
        """The reference's compaction events for the recorded summaries written since the step
        before (`replay_contract._recorded_summary_event`), from the carried state."""
        rec = self.recorded
        assert rec is not None  # (a summary in force is a recorded one)
        events: list[Event] = []
        for k in rec.written(self.last_horizon, self.recorded_until(i)):
            m = rec.span[k]
            decided: tuple[Decision, str] | None = (Decision.DROPPED, "dropped: supyagent keeps only the latest summary")
            if k == latest:
                decided = None
                if self.summary_idx is not None and self.summary_idx < h:
                    t = 3 + self.summary_size
                    share = available * SUMMARY_SHARE
                    charge = f"{t:,} tokens as supyagent charges it (its {self.summary_size:,} plus 3 for the one-message list)"
                    if t < share:
                        decided = (Decision.KEPT, f"kept: {charge} are under 30 % of the {max(0, available):,} available ({share:,.0f})")
                    else:
                        decided = (Decision.DROPPED, f"dropped: {charge} are not under 30 % of the {max(0, available):,} available ({share:,.0f})")
            summarized = min(start, bisect_left(self.history, m))
            events.append(Event(i, "compaction", rec.shapes.span_text(k, m, summarized, self.policy, decided)))
        return events


def _summary(text: str, covered: int, covers: IdPrefix, created_at: str) -> Summary:
    """`Summary(text=..., messages_covered=..., covers=..., created_at=...)` built directly, equal
    and identical: the frozen dataclass's constructor sets each of its nine fields through
    `object.__setattr__` (about 2 µs, on nearly every turn of a long session). Its fields are
    listed from the class, so a field added there is set to its default here too."""
    summary = object.__new__(Summary)
    summary.__dict__.update(_SUMMARY_DEFAULTS, text=text, messages_covered=covered, covers=covers, created_at=created_at)
    return summary


def _event(turn: int, kind: str, message: str) -> Event:
    """`Event(turn, kind, message)` built directly, equal and identical (see `_summary`)."""
    event = object.__new__(Event)
    event.__dict__.update(turn=turn, kind=kind, message=message)
    return event


_SUMMARY_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Summary)}
assert all(v is not dataclasses.MISSING for k, v in _SUMMARY_DEFAULTS.items() if k != "text"), "a Summary field without a default"


class _SummaryCounter:
    """supyagent's count of its summary message, `count_message_dict(summary_message(s))`, at a
    cost that does not grow with the summary's text at every trigger.

    tiktoken's cl100k_base and o200k_base cut text into pre-tokens with a pattern under which a
    newline followed by "-" or "#" always ends a pre-token (no alternative of either pattern takes
    a newline and then a "-" or "#" after it), and the count is the sum over pre-tokens. So the
    snapshot is counted as the sum of its lines (`_Snapshot.pieces`), each line's count memoised,
    and the header "[Context Summary - N previous messages]" as its fixed parts plus N's digits in
    threes (both patterns take digits as `\\p{N}{1,3}`, each run after a lone space).
    tests/test_replay_incremental.py checks both sums against the whole count. Other tokenizers
    count the whole text."""

    def __init__(self, tok: Tokenizer) -> None:
        self.tok = tok
        self.piecewise = isinstance(tok, TiktokenTokenizer) and tok.encoding_name in ("cl100k_base", "o200k_base")
        self.memo: dict[str, int] = {}
        self.base = 4 + tok.count("system")  # count_message_dict: 4, and the role string
        self.fixed = sum(map(self.count, ("[Context Summary -", " ", " previous messages]\n\n"))) if self.piecewise else 0
        self.digit_groups_are_tokens = self.piecewise and _digit_groups_are_tokens(tok.name)

    def count(self, piece: str) -> int:
        c = self.memo.get(piece)
        if c is None:
            c = self.memo[piece] = self.tok.count(piece)
        return c

    def size(self, summary: Summary, text_count: int | None = None) -> int:
        """The summary message's count; `text_count`, when given, is the sum of `count` over the
        text's lines (`_Snapshot.counted`)."""
        if not self.piecewise or summary.text[:1] not in ("-", "#"):  # the header's last newline ends a pre-token only before "-" or "#"
            return count_message_dict(summary_message(summary), self.tok)
        if text_count is None:
            text_count = sum(self.count(piece) for piece in _LINE_START.split(summary.text))
        n = summary.messages_covered
        if n >= 0 and self.digit_groups_are_tokens:
            header = self.fixed + (len(str(n)) + 2) // 3  # each group of up to three digits is one token
        else:  # the header whole
            header = self.count(f"[Context Summary - {n} previous messages]\n\n")
        return self.base + header + text_count


@cache
def _digit_groups_are_tokens(encoding: str) -> bool:
    """Whether every run of one to three ASCII digits is a single token of the encoding (checked,
    not assumed: both patterns cut a number into such runs, so a number's count is then its runs)."""
    tok = TiktokenTokenizer(encoding)
    return all(tok.count(str(k).zfill(width)) == 1 for width in (1, 2, 3) for k in range(10**width))


_LINE_START = re.compile(r"(?<=\n)(?=[-#])")


REPLAYERS: dict[str, type[_Replay]] = {"supyagent": SupyagentReplay}
