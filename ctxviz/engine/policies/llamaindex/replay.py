"""LlamaIndex's incremental replayers: the ChatMemoryBuffer (`llamaindex-chat-memory-buffer`) and the
ChatSummaryMemoryBuffer (`llamaindex-chat-summary-memory-buffer`), carried from turn to turn.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import Event, Turn, _changes, _Cuts, _Replay, light_plan, untrimmed_cuts
from ...session import Message, Session, Summary
from ...summarizers import ExtractiveSummarizer, Summarizer
from ..carried import IdPrefix, _Snapshot
from ..replay_common import _SummaryReplay
from ..replay_pairs import _PairSafety
from ..replay_recorded import carried_recorded, recorded_events
from .chat_memory_buffer import joined_counter, prefix_tokens, text_tokens
from .chat_summary_memory_buffer import ChatSummaryMemoryBufferParams
from .joined import JoinedCounter, content_str
from .summary_input import shown_all


class LlamaIndexReplay(_Replay):
    """llamaindex-chat-memory-buffer: ChatMemoryBuffer.get tries windows newest-last from the oldest
    (a window may not start on an assistant or tool message, but the first and the last may) and
    takes the first that fits. A new message adds its count to every window's (when the join
    before it is a plain one), so a window that did not fit still does not: the search goes on
    from the turn before's start, and every message is passed over once. The windows' counts come
    from the whole session's `JoinedCounter`, less what lies after the turn.

    Pair safety is carried (`_PairSafety`): the window is one run of the history, up to the turn's
    last message, so a turn sends less by each dropped message's share of the joined count
    (`_share`).

    Recorded summaries are carried where each covers a prefix of the file (`_RecordedShapes`): the
    chat store is then the summaries in force as SYSTEM entries (`common.history_with_summaries`:
    those that take the place of no history message first, then the others where their messages
    were) and the history after what they cover. A window starting at a history message counts as
    the whole session's does; one starting at a summary is its entries and the first history
    messages up to a plain join counted as one small `JoinedCounter` (`_Summaries`), plus the
    session's counts after them. When what is in force changes the search starts again.

    Turns whose last message is joined to the next by whitespace meeting whitespace (the joined
    count of the run differs from the whole session's), the turns from the first recorded summary
    that does not cover a prefix of the file on, and pair safety where a tool call id is on more
    than one call, are planned by the reference step."""

    pair_safe_incremental = True
    recorded_summaries = "shaped"
    recorded_system_gaps = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.usable = not pair_safe or self.pairs is not None
        self.recorded, self.first_summary = carried_recorded(self)
        self.limit = params.limit
        history = list(session.system_and_history[1]) if self.usable else []
        self.counter = joined_counter(session, history, full) if self.usable else None  # type: ignore[arg-type]
        self.roles = [m.role for m in history]
        self.sums = [0]
        for m in history:
            self.sums.append(self.sums[-1] + full.message_tokens[m.index])
        self.h = 0  # history messages so far
        self.system_messages: list[Any] = []
        self.initial = -1
        self.start = 0  # where the search for the window goes on from (an entry: `_Summaries`' first, then the history's)
        self.dirty = True
        self.history_index = [m.index for m in history]
        self.history_before = [0]  # history_before[k]: the history messages among the session's first k
        self.store = _Summaries(self, [], 0)  # the recorded summaries in force, as the chat store holds them
        if self.pairs is not None:
            self.run_ends = [b for _, b in self.counter.runs]  # type: ignore[union-attr]

    def _initial(self) -> int:
        if self.params.initial_token_count is not None:
            return self.params.initial_token_count
        return prefix_tokens(self.session, self.full, self.system_messages)[1]  # counted as the chat engines count it

    def _total(self, j: int) -> int:
        """`len(tokenizer(" ".join(strs[j:h])))` for this turn's h (no run of joins crosses h)."""
        c, h = self.counter, self.h
        return c.window_total(j) - c.suffix[h] - c.fix_suffix[bisect_left(c.run_starts, h)]  # type: ignore[union-attr]

    def _rest(self, p: int) -> int:
        """The tokens of history[p:h] after a plain join (each message after its joining space, and
        the runs of whitespace joins among them recounted)."""
        c, h = self.counter, self.h
        return c.suffix[p] - c.suffix[h] + c.fix_suffix[bisect_left(c.run_starts, p)] - c.fix_suffix[bisect_left(c.run_starts, h)]  # type: ignore[union-attr]

    def _share(self, j: int, k: int) -> int:
        """History message k's share of the joined count of the window history[j:h] (`JoinedCounter.window`'s shares)."""
        c = self.counter
        share = c.first(j) if k == j else c.tokens[k]  # type: ignore[union-attr]
        r, end = c._run_at(j)  # type: ignore[union-attr]
        if k == end:
            share += c._fix_at(j, end)  # type: ignore[union-attr]
        p = bisect_left(self.run_ends, k)
        if p >= r and p < len(self.run_ends) and self.run_ends[p] == k:
            share += c.fixes[p]  # type: ignore[union-attr]
        return share

    def absorb(self, i: int) -> None:
        if not self.usable:
            return
        if self.pairs is not None:
            self.pairs.grow(i)
        m = self.session.messages[i]
        if m.role == "system":
            self.history_before.append(self.history_before[-1])
            self.system_messages.append(m)
            initial = self._initial()
            if initial != self.initial:
                self.initial, self.start = initial, 0
        else:
            self.history_before.append(self.history_before[-1] + 1)
            self.h += 1

    def step(self, i: int) -> Turn:
        if self.usable and self.recorded_until(i) >= self.first_summary:
            self.usable = False  # a recorded summary with gaps in force: the reference step from here on
        if not self.usable:
            return super().step(i)
        self.absorb(i)
        if self.initial < 0:
            self.initial = self._initial()
        if self.recorded is not None and self.recorded.update(i + 1, self.recorded_until(i)):
            self._follow_recorded()
        c = self.counter
        # A run of whitespace joins crossing the turn's end: its joined count is not the whole session's.
        r = bisect_right(c.run_starts, self.h - 1)  # type: ignore[union-attr]
        if r and c.runs[r - 1][1] >= self.h:  # type: ignore[union-attr]
            self.dirty = True
            return super().step(i)
        if self.dirty:
            self.start, self.dirty = 0, False
        return self._fast(i)

    def _follow_recorded(self) -> None:
        """The summaries in force changed: the chat store's SYSTEM entries and where its history starts."""
        recorded = self.recorded
        assert recorded is not None
        before = self.history_before
        front: list[int] = []
        placed: list[tuple[int, int]] = []  # (the first history message it takes the place of, summary)
        later = 0
        for k in reversed(recorded.live):  # each live summary takes the place of what no later one covers: [later, span)
            m = recorded.span[k]
            if m > later and before[m] > before[later]:
                placed.append((before[later], k))
            else:
                front.append(k)
            later = max(later, m)
        entries = front[::-1] + [k for _, k in sorted(placed)]
        base = before[recorded.covered]
        if entries != self.store.entries or base != self.store.base:
            self.store = _Summaries(self, entries, base)
            self.start = 0

    def _window(self, v: int) -> int:
        """The joined count of the window from entry v (`_Summaries`' first, then history[base:h])."""
        store = self.store
        if v < store.size:
            return store.total(v)
        return self._total(v - store.size + store.base)

    def _fast(self, i: int) -> Turn:
        h, limit, initial, roles = self.h, self.limit, self.initial, self.roles
        store = self.store
        size, base = store.size, store.base
        n = size + h - base  # the chat store's entries
        raised = initial > limit
        window = 0
        start = n
        if not raised and n:
            v = self.start
            while True:
                if v == 0 or v == n - 1 or v < size or roles[v - size + base] not in ("tool", "assistant"):
                    window = self._window(v)
                    if window + initial <= limit or v == n - 1:
                        break
                v += 1
            start = self.start = v
        j = max(start - size, 0) + base  # the first history message sent
        fits_before = window + initial <= limit  # the plan's window, before pair safety
        events = self._recorded_events(i, start, n, window, fits_before, raised) if self.recorded is not None else []
        unpaired = self.pairs.drops(j, h, h, h) if self.pairs is not None and j < h else ()
        if unpaired:
            window -= sum(store.share(k) for k in unpaired) if start < size else sum(self._share(j, k) for k in unpaired)
        total = initial + window
        fits = total <= limit and not raised
        if not fits and self.before.fits:
            allocation = {"initial": min(initial, limit), "history": max(0, limit - initial)}
            self.before = _changes(i, light_plan(self.policy, allocation, {"initial": initial, "history": window}, limit, total, fits, "parts"),
                                    self.before, events)
        elif fits != self.before.fits:
            self.before = _Cuts(fits)
        kept = len(self.system_messages) + h - j - len(unpaired)
        not_sent = self.sums[j] + sum(self.full.message_tokens[self.history_index[k]] for k in unpaired)
        return Turn(i, total, limit, kept, i + 1 - kept - base, base, 0, fits, 0, tuple(events), not_sent)

    def _recorded_events(self, i: int, start: int, n: int, window: int, fits: bool, raised: bool) -> list[Event]:
        """The reference's compaction events for the recorded summaries written since the step
        before (each covers the prefix's first m messages, its history ones summarised), with the
        plan's decision on each (`chat_memory_buffer.plan_records`' summary decisions)."""
        recorded, store = self.recorded, self.store
        assert recorded is not None
        initial, limit = self.initial, self.limit
        last = not fits and not raised and start == n - 1  # get() returns the newest message alone

        def decide(k: int, m: int) -> tuple[int, tuple[Decision, str]]:
            summarized = self.history_before[m]
            if k in recorded.superseded:
                return summarized, (Decision.DROPPED, "dropped: superseded by a later recorded summary, which covers every message of the file this one covers")
            e = store.entries.index(k)
            if e >= start:
                if last:
                    kept = (f"the newest message is returned alone even though the window ({window:,} tokens + {initial:,} initial) "
                            f"exceeds token_limit {limit:,} (LlamaIndex lets the LLM raise the error)")
                else:
                    kept = f"the newest {n - start} messages join to {window:,} tokens, within token_limit {limit:,} with {initial:,} initial"
                return summarized, (Decision.KEPT, f"kept: a recorded summary, in the chat store as a SYSTEM message where the messages it covers were; {kept}")
            if raised:
                return summarized, (Decision.DROPPED, f"dropped: get() raises because the {initial:,} initial tokens exceed token_limit {limit:,}")
            if last:
                why = f"no window of whole turns fits token_limit {limit:,}; only the newest message is returned"
            else:
                why = (f"the newest {n - e} messages from here join to {self._window(e):,} tokens, over token_limit {limit:,} "
                       f"with {initial:,} initial (oldest dropped first)")
            return summarized, (Decision.DROPPED, f"dropped: a recorded summary (a SYSTEM message in the chat store); {why}")

        return recorded_events(self, recorded, i, decide)


class _Summaries:
    """The recorded summaries in force as ChatMemoryBuffer's chat store holds them: SYSTEM entries
    (`entries`, summary indices) before the history from position `base` on. A window starting at
    one of them joins their texts and the history up to the turn's end: the summaries and the
    first history messages up to a plain join (the end of the run of whitespace joins `base` is
    in, or `base` itself) are one small `JoinedCounter`, and what follows that plain join counts as
    the session's counter has it (`LlamaIndexReplay._rest`). A turn that ends inside that run has a
    run crossing its end, and is planned by the reference step."""

    def __init__(self, replay: LlamaIndexReplay, entries: list[int], base: int) -> None:
        self.replay, self.entries, self.base, self.size = replay, entries, base, len(entries)
        self.head: JoinedCounter | None = None  # the summaries and history[base:upto]
        self.alone: JoinedCounter | None = None  # the summaries alone (a turn with no history after them)
        self.upto = base

    def _counter(self, upto: int) -> JoinedCounter:
        replay = self.replay
        session, full = replay.session, replay.full
        texts = [session.summaries[k].text for k in self.entries]
        history = [session.messages[replay.history_index[p]] for p in range(self.base, upto)]
        return JoinedCounter(texts + [content_str(m) for m in history],
                             [text_tokens(full, " " + t) for t in texts] + [full.message_tokens[m.index] for m in history], full)

    def _head(self) -> JoinedCounter:
        if self.head is None:
            c = self.replay.counter
            assert c is not None
            r, end = c._run_at(self.base)
            self.upto = (end if end >= 0 else self.base) + 1
            self.head = self._counter(self.upto)
        return self.head

    def total(self, v: int) -> int:
        """The joined count of summary entry v and everything after it up to the turn's end."""
        h = self.replay.h
        if h == self.base:
            if self.alone is None:
                self.alone = self._counter(self.base)
            return self.alone.window_total(v)
        head = self._head()
        return head.window_total(v) + self.replay._rest(self.upto)

    def share(self, k: int) -> int:
        """History message k's share of the window that starts at the first summary entry... at the
        window's start entry (`LlamaIndexReplay.start`, a summary): what `JoinedCounter.window` gives it."""
        replay = self.replay
        head = self._head()
        if k < self.upto:
            return head.window(replay.start)[1][self.size + k - self.base - replay.start]
        c = replay.counter
        assert c is not None
        share = c.tokens[k]
        p = bisect_left(replay.run_ends, k)
        if p < len(replay.run_ends) and replay.run_ends[p] == k and c.runs[p][0] >= self.upto:
            share += c.fixes[p]
        return share


class LlamaindexSummaryReplay(_SummaryReplay):
    """ChatSummaryMemoryBuffer.get: the chat store is the summaries in force (SYSTEM entries, the
    head) and the history after what they cover, so the newest-first fill that stops at the first
    misfit is one bisection over the history's prefix sums (and, when all of that fits, one over
    the head's); the assistant and tool messages that may not start the full text are skipped with
    a precomputed jump. The summarised part only grows, so its offline snapshot is carried from
    turn to turn (`carried._Snapshot`), whether get() writes it back (compact) or not.

    The head is the policy's own summary once it wrote one (it covers a prefix of the history).
    Before that it is the summaries the file records in force (`common.history_with_summaries`),
    carried where each covers a prefix of the file (`_carry_recorded`): those not superseded
    whose spans hold no history message first (the file's order), then the others, whose spans
    shrink in the file's order, each in the place of the history it alone covers (the reverse
    order). A summary written over part of the head covers the history its summaries cover.

    Pair safety is carried (`_SummaryReplay`): the full text is the one run sent. From scratch:
    ids on more than one message, pair safety where a tool call id is on more than one call,
    another summarizer than the offline snapshot. A turn where get() raises (count_initial_tokens
    with more initial tokens than token_limit) is planned by the reference step."""

    recorded_summaries = "shaped until generated"
    recorded_system_gaps = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.ok = self.ok and type(summarizer) is ExtractiveSummarizer
        p: ChatSummaryMemoryBufferParams = params
        self.limit = p.limit
        self.system_messages: list[Message] = []
        self.system_tokens = prefix_tokens(session, full, [])[1]  # as LlamaIndex's chat engines count their prefix
        self.system_count = 0
        self.history: list[int] = []  # session indices of the non-system messages so far
        self.history_ids: list[str] = []
        self.hsums = [0]  # tokens of history[:k]
        # skip[k]: the first history position >= k that is neither an assistant nor a tool message
        # (LlamaIndex moves those from the start of the full text to the summarised part).
        roles = [m.role for m in session.messages if m.role != "system"]
        skip = [len(roles)] * (len(roles) + 1)
        for k in range(len(roles) - 1, -1, -1):
            skip[k] = skip[k + 1] if roles[k] in ("assistant", "tool") else k
        self.skip = skip
        self.c = 0  # history[:c] is covered by the summaries in force
        # The head: per summary entry, its recorded index (-1: the policy's own), its count, and
        # the history it covers with those before it (history[:end]); its running counts.
        self.head: list[tuple[int, int, int]] = []
        self.head_sums = [0]
        self.previous_covers = 0  # len(covers) of the latest summary in force (get()'s event counts from it)
        self.snapshot = _Snapshot()
        self.snapshot_upto = 0  # the history messages the snapshot has read (those left out included)
        self._carry_recorded()
        self.recorded_tokens: dict[int, int] = {}
        self.fate: tuple[int, bool] = (0, False)  # this turn's first full-text entry, and whether the llm summarises the head before it

    def _grow(self, i: int) -> None:
        m = self.session.messages[i]
        if m.role == "system":
            self.system_count += 1
            self.system_messages.append(m)
            self.system_tokens = prefix_tokens(self.session, self.full, self.system_messages)[1]
            return
        self.history.append(i)
        self.history_ids.append(m.id)
        self.hsums.append(self.hsums[-1] + self.tokens[i])

    def _set_head(self, head: list[tuple[int, int, int]], c: int, previous: int) -> None:
        self.head, self.c, self.previous_covers = head, c, previous
        self.head_sums = [0]
        for _, t, _ in head:
            self.head_sums.append(self.head_sums[-1] + t)

    def _sync(self, i: int) -> None:
        summary = self.generated[-1]
        c = len(summary.covers)
        if c > len(self.history) or tuple(summary.covers) != tuple(self.ids[k] for k in self.history[:c]):
            self.ok = False
            return
        self._set_head([(-1, text_tokens(self.full, summary.text), c)], c, c)

    def _recorded_moved(self, i: int) -> None:
        recorded = self.recorded
        assert recorded is not None
        history, span = self.history, recorded.span
        # The spans of those not superseded shrink in the file's order: each covers alone the history between the next one's end and its own.
        ends = [(k, bisect_left(history, span[k])) for k in recorded.live if span[k]]
        owning = {k for n, (k, end) in enumerate(ends) if end > (ends[n + 1][1] if n + 1 < len(ends) else 0)}
        head = [(k, self._recorded_size(k), 0) for k in recorded.live if k not in owning]
        head += [(k, self._recorded_size(k), end) for k, end in reversed(ends) if k in owning]
        last = recorded.in_force[-1] if recorded.in_force else -1
        self._set_head(head, bisect_left(history, recorded.covered), len(self.session.summaries[last].covers) if last >= 0 else 0)

    def _recorded_size(self, k: int) -> int:
        found = self.recorded_tokens.get(k)
        if found is None:
            found = self.recorded_tokens[k] = text_tokens(self.full, self.session.summaries[k].text)
        return found

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str]]:
        """Recorded summary k, covering the prefix's first m messages (all summarised but the system
        messages, which stay in the prompt), as this turn's get() decides it."""
        summarized = bisect_left(self.history, m)
        recorded = self.recorded
        assert recorded is not None
        if k in recorded.superseded:
            return summarized, (Decision.DROPPED, "dropped: superseded by a later summary, which covers every message of the file this one covers")
        at = next(n for n, entry in enumerate(self.head) if entry[0] == k)
        q, summarised = self.fate
        if at >= q:
            return summarized, (Decision.KEPT, f"kept: an earlier summary (a SYSTEM message in the chat store) fits as full text ({self.head[at][1]:,} tokens)")
        if q == 1 and self.params.llm and not summarised:
            return summarized, (Decision.KEPT, "kept: the earlier summary no longer fits as full text, but LlamaIndex passes a lone SYSTEM "
                                               "message through unsummarised")
        if self.params.llm:
            return summarized, (Decision.SUMMARIZED, "summarized: the earlier summary no longer fits as full text, so the llm summarises it "
                                                     "again with the messages that follow it")
        return summarized, (Decision.DROPPED, "dropped: it no longer fits, and without an llm what no longer fits is removed")

    def _text(self, upto: int) -> str:
        """The offline snapshot of what the summariser is shown of history[:upto] (`summary_input`;
        the summarised part only grows, `snapshot_upto` of it read; else start again)."""
        if upto < self.snapshot_upto:
            self.snapshot, self.snapshot_upto = _Snapshot(), 0
        messages = self.session.messages
        self.snapshot.advance(shown_all(messages[k] for k in self.history[self.snapshot_upto : upto]))
        self.snapshot_upto = upto
        return self.snapshot.render()

    def _fast(self, i: int) -> Turn | None:
        p: ChatSummaryMemoryBufferParams = self.params
        limit = self.limit
        initial = self.system_tokens if p.initial_token_count is None else p.initial_token_count
        if p.count_initial_tokens and initial > limit:
            return None  # get() raises: the reference step says so
        counted_initial = initial if p.count_initial_tokens else 0
        uncounted_system = 0 if p.count_initial_tokens else self.system_tokens
        H, h, c, head, S = self.hsums, len(self.history), self.c, self.head, self.head_sums
        e = len(head)
        room = limit - counted_initial
        j = bisect_left(H, H[h] - room, c, h) if room >= 0 else h  # history[j:h] fits, newest first
        # The first entry kept as full text: in the head when all of history[c:h] fits and some of the head too.
        q = bisect_left(S, S[e] - (room - (H[h] - H[c])), 0, e) if j == c and e else e
        if q == e:
            j = min(self.skip[j], h)  # the full text may not start with an assistant or tool message
            q = e + j - c
        else:
            j = c
        summary_tokens = S[e] - S[q] if q < e else 0  # the summaries sent as full text
        new_text = ""
        upto = 0  # the history the new summary covers
        if q == 1 and e and p.llm:  # a lone SYSTEM message is passed through
            summary_tokens += head[0][1]
        elif q and p.llm:
            upto = j if q > e else max(entry[2] for entry in head[:q])
            if not upto:
                return None  # the llm would summarise summaries of nothing in the file: the reference step
            new_text = self._text(upto)
            summary_tokens += text_tokens(self.full, new_text)
        self.fate = (q, bool(new_text))
        unpaired, unpaired_tokens = self._unpaired(j, i)  # what pair safety drops of the full text
        full_tokens = H[h] - H[j] - unpaired_tokens
        summarized = j if p.llm else c
        dropped = (0 if p.llm else j - c) + unpaired
        kept = self.system_count + (h - j) - unpaired
        active = len(self.generated)
        events: list[Event] = []
        if new_text and self.session.messages[i].role in ("user", "tool"):  # compact: get() writes the summary back
            # The covers are a prefix of the history ids: a view of the growing list, not a copy (a
            # summary is written at nearly every user turn once the buffer is full).
            ids = IdPrefix(self.history_ids, upto)
            events.append(Event(i, "summary", f"ChatSummaryMemoryBuffer summarised {upto - (self.previous_covers if e else 0)} more messages "
                                              f"({upto} in all) that no longer fit token_limit {limit:,} into one SYSTEM message"))
            self.generated.append(Summary(text=new_text, messages_covered=upto, covers=ids, created_at=self.session.messages[i].timestamp))  # type: ignore[arg-type]
            self.synced = len(self.generated)
            new_tokens = text_tokens(self.full, new_text)
            self._set_head([(-1, new_tokens, upto)], upto, upto)
        elif self.recorded is not None and not self.generated:
            events = recorded_events(self, self.recorded, i, self._recorded_decision)
        usage = {"initial": counted_initial, "system": uncounted_system, "summary": summary_tokens, "full_text": full_tokens}
        allocation = {"initial": min(counted_initial, limit), "system": min(uncounted_system, limit), "summary": min(summary_tokens, limit),
                      "full_text": max(0, limit - counted_initial)}
        fits = all(usage[part] <= allotted for part, allotted in allocation.items())
        used = counted_initial + uncounted_system + summary_tokens + full_tokens
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: light_plan(self.policy, allocation, usage, limit, used, fits, "parts", "caps"))
        return Turn(i, used, limit, kept, dropped, summarized, 0, fits, active, tuple(events), H[j] + unpaired_tokens)


REPLAYERS: dict[str, type[_Replay]] = {"llamaindex-chat-memory-buffer": LlamaIndexReplay, "llamaindex-chat-summary-memory-buffer": LlamaindexSummaryReplay}
