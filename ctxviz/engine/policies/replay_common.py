"""What the incremental replayers of several frameworks share (the contract itself is
`engine/replay_contract.py`): a history that grows by one message a turn with the prefix sums of its
counts (missy, mnesis, supyagent), pair safety carried from turn to turn (missy, supyagent, AutoGen,
Claude Code, Codex, Gemini CLI, the summarising replayers, LlamaIndex's ChatMemoryBuffer, Strands'
sliding window), and the fall-back rules of the replayers that write summaries (LangChain,
LlamaIndex, Strands, OpenHands) and of those that edit or compact the history (Anthropic, LangChain,
Claude Code, Codex, Gemini CLI).

The summary in force in the summarising frameworks covers a prefix of the conversation (each folds
the previous summary into the next; OpenHands after its kept head), so a turn needs only the
messages after it and running sums of the counts; a turn whose trigger fires builds only the part
after the summary in force, or is handed to the reference step. The editing and compacting
replayers carry pair safety too, and hand the turns from the first one where a summary recorded in
the file is in force to the reference step.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, insort
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from ..counting import TokenCounts
from ..plan import Decision
from ..replay_contract import Event, Turn, _Replay, light_plan, recorded_summary_text, untrimmed_cuts
from ..session import Message, Session, ToolCallPart, ToolResultPart
from ..summarizers import Summarizer


class _GrowingReplay(_Replay):
    """What missy, mnesis and supyagent carry alike from turn to turn: the history's session
    indices, ids, user turns and prefix sums of its counts, and the system messages joined into the
    prompt (each framework counts that prompt its own way: `_system_prompt_tokens`)."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.tokens = full.message_tokens
        self.history: list[int] = []  # session indices of the non-system messages so far
        self.history_ids: list[str] = []
        self.users: list[int] = []  # session indices of the user messages so far
        self.sums: list[int] = [0]  # sums[k]: tokens of the first k history messages
        self.system_count = 0
        self.system_texts: list[str] = [session.system_prompt] if session.system_prompt else []
        self.system_tokens = self._system_prompt_tokens("\n\n".join(self.system_texts)) if self.system_texts else 0

    def _system_prompt_tokens(self, prompt: str) -> int:
        return self.full.text(prompt)

    def _grow(self, i: int) -> None:
        """Take message `i` into the state (before the turn that ends with it is computed)."""
        m = self.session.messages[i]
        if m.role == "system":
            self.system_count += 1
            if m.text:
                self.system_texts.append(m.text)
                self.system_tokens = self._system_prompt_tokens("\n\n".join(self.system_texts))
            return
        self.history.append(i)
        self.history_ids.append(m.id)
        self.sums.append(self.sums[-1] + self.tokens[i])
        if m.role == "user":
            self.users.append(i)


class _PairSafety:
    """`checks.apply_pair_safety` for a replay whose sent history is one or two runs of history
    positions (missy: history[j:E] and history[tail_start:h]), carried from turn to turn.

    Only for sessions where every tool call id is on one call: then the prefix's pairs are the
    whole session's pairs with both ends seen, and each message is a "problem" (a sent call or
    result whose partner is not in the file as the APIs need it) up to a turn known in advance
    (an assistant's call until its first result, a result until its call). A turn's drops are
    the closure apply_pair_safety reaches: the sent problems, the sent half of every pair that
    crosses a boundary of the sent runs, and what loses its partner to those drops. Pairs are
    found by the boundary they cross: short ones (up to SHORT positions apart) filed at every
    boundary they cross when they complete (a few list appends each, once), the rest (a
    long-running tool, a sub-agent's Task, a result that arrives late) in a stabbing tree over the
    boundaries, so a turn reads only the pairs that cross one of its boundaries: not every long
    pair so far (which made a log with many of them quadratic), nor the SHORT positions before
    each boundary (which made a turn that cuts cost several times one that does not, and
    lifted the exponent of the replays whose cutting starts part-way)."""

    SHORT = 64

    def __init__(self, session: Session, calls: list[tuple[ToolCallPart, ...]]) -> None:
        messages = session.messages
        history = [m.index for m in messages if m.role != "system"]
        self.position: dict[int, int] = dict(zip(history, range(len(history)), strict=True))  # session index -> history position
        position = self.position
        # The tool messages and the messages with calls, in order: no other is a problem or in a pair.
        relevant = [m for m, c in zip(messages, calls, strict=True) if c or m.role == "tool"]
        owner: dict[str, int] = {}
        first_result: dict[str, int] = {}
        answers: dict[int, str] = {}  # a tool message's call id
        for m in relevant:
            if m.role == "tool":
                call_id = answers[m.index] = m.tool_call_id or next((p.tool_call_id for p in m.parts if isinstance(p, ToolResultPart)), "")
                if call_id:
                    first_result.setdefault(call_id, m.index)
            for call in calls[m.index]:
                if call.id:
                    owner[call.id] = m.index
        self.edges_at: dict[int, list[tuple[int, int]]] = {}  # turn -> pairs (history positions) complete from then
        edges_at = self.edges_at
        until: dict[int, float] = {}
        inf = float("inf")
        for m in relevant:
            i = m.index
            limit: float = 0.0
            if m.role == "tool":
                call_id = answers[i]
                caller = owner.get(call_id) if call_id else None
                if caller is None or messages[caller].role != "assistant":
                    limit = inf
                else:
                    limit = max(limit, caller)
                    a, b = position[caller], position[i]
                    edge = (a, b) if a < b else (b, a)
                    at = caller if caller > i else i
                    found = edges_at.get(at)
                    if found is None:
                        edges_at[at] = [edge]
                    else:
                        found.append(edge)
                if calls[i]:  # a tool message's own calls
                    limit = inf
            elif m.role == "assistant":
                for call in calls[i]:
                    answered = first_result.get(call.id) if call.id else None
                    limit = max(limit, inf if answered is None else answered)
            elif m.role != "system":  # (a system message's calls are neither problems nor pairs)
                limit = inf
            if limit > i:
                until[i] = limit
        self.until = until
        # crossed[p]: whether any pair of the session, complete or not, has one end before p and
        # the other at or after it (a boundary no pair crosses is not searched at every turn)
        opened = [0] * (len(self.position) + 2)
        for pairs in self.edges_at.values():
            for a, b in pairs:  # (a < b) crosses the boundaries a + 1 .. b
                opened[a + 1] += 1
                opened[b + 1] -= 1
        self.crossed = bytes(c > 0 for c in accumulate(opened[: len(self.position) + 1]))
        self.ends: dict[float, list[int]] = {}  # turn -> positions that stop being problems
        self.problems: list[int] = []  # history positions of the problems so far, sorted
        self.partners: dict[int, list[int]] = {}
        # across[p]: the short pairs complete so far that cross boundary p (a < p <= b), None for none
        self.across: list[list[tuple[int, int]] | None] = [None] * (len(self.position) + 1)
        # The long pairs by the boundaries they cross ((a, b) crosses a + 1 .. b): a segment tree
        # over the boundaries 0 .. len(history), whose node k holds the pairs that cross every
        # boundary under it and not every one under its parent. The pairs crossing p are those
        # on the path from leaf p to the root (`_crossing`), found in O(log n + their number).
        self.leaves = 1 << len(self.position).bit_length()  # (a power of two above len(history))
        self.long: list[list[tuple[int, int]] | None] = [None] * (2 * self.leaves)
        self.long_pairs = 0

    @staticmethod
    def of(session: Session) -> _PairSafety | None:
        """The carried pair safety, or None where a call id is on more than one call (the
        owner of an id can change as the file goes on: the reference step decides)."""
        calls = [tuple([p for p in m.parts if isinstance(p, ToolCallPart)]) for m in session.messages]  # (each one's `tool_calls`)
        ids = [call.id for c in calls for call in c if call.id]
        return _PairSafety(session, calls) if len(set(ids)) == len(ids) else None

    def grow(self, i: int) -> None:
        """Take message `i` in: the pairs it completes, whether it is a problem, which stop being."""
        for position in self.ends.pop(i, ()):
            self.problems.pop(bisect_left(self.problems, position))
        limit = self.until.get(i)
        if limit is not None and i in self.position:
            insort(self.problems, self.position[i])
            if limit != float("inf"):
                self.ends.setdefault(limit, []).append(self.position[i])
        for a, b in self.edges_at.get(i, ()):
            self.partners.setdefault(a, []).append(b)
            self.partners.setdefault(b, []).append(a)
            if b - a <= self.SHORT:
                across, pair = self.across, (a, b)
                for p in range(a + 1, b + 1):
                    found = across[p]
                    if found is None:
                        across[p] = [pair]
                    else:
                        found.append(pair)
            else:
                self._add_long(a, b)

    def _add_long(self, a: int, b: int) -> None:
        """File the long pair (a, b) at the tree nodes that cover the boundaries a + 1 .. b exactly."""
        long, pair = self.long, (a, b)
        lo, hi = a + 1 + self.leaves, b + 1 + self.leaves
        while lo < hi:
            if lo & 1:
                found = long[lo]
                if found is None:
                    long[lo] = [pair]
                else:
                    found.append(pair)
                lo += 1
            if hi & 1:
                hi -= 1
                found = long[hi]
                if found is None:
                    long[hi] = [pair]
                else:
                    found.append(pair)
            lo >>= 1
            hi >>= 1
        self.long_pairs += 1

    def _crossing(self, p: int) -> list[tuple[int, int]]:
        """The long pairs (a, b) with a < p <= b: those filed on the path from leaf p to the root."""
        long, found = self.long, []
        node = p + self.leaves
        while node:
            here = long[node]
            if here is not None:
                found += here
            node >>= 1
        return found

    def drops(self, j: int, e: int, t: int, h: int) -> set[int] | frozenset[int]:
        """History positions pair safety drops when history[j:e] and history[t:h] are sent."""
        problems, partners, across = self.problems, self.partners, self.across
        runs = ((j, h),) if t == e else ((j, e), (t, h))
        seeds: list[int] = []
        if problems:
            for lo, hi in runs:
                if lo < hi:
                    seeds += problems[bisect_left(problems, lo) : bisect_left(problems, hi)]
        # A pair with one end sent crosses a boundary of the sent runs: j, and e and t when the
        # runs are apart (no pair crosses h, the end of what was seen).
        crossed = self.crossed  # (none crosses 0 or a boundary past the history)
        boundaries = [p for p in ((j, e, t) if t > e else (j,)) if 0 < p < len(crossed) and crossed[p]]
        if not seeds and not boundaries:
            return _NO_DROPS

        def sent(k: int) -> bool:
            return j <= k < e or t <= k < h

        for p in boundaries:
            here = across[p]
            if here is not None:
                for a, b in here:
                    if sent(a) != sent(b):
                        seeds.append(a if sent(a) else b)
            if self.long_pairs:
                for a, b in self._crossing(p):
                    if sent(a) != sent(b):
                        seeds.append(a if sent(a) else b)
        if not seeds:
            return _NO_DROPS
        dropped: set[int] = set()
        while seeds:
            k = seeds.pop()
            if k in dropped:
                continue
            dropped.add(k)
            seeds += [x for x in partners.get(k, ()) if x not in dropped and sent(x)]
        return dropped


_NO_DROPS: frozenset[int] = frozenset()


class _SummaryReplay(_Replay):
    """What the summarising replayers share: prefix sums of the counts, the session's ids, pair
    safety carried from turn to turn, and the reference step for the turns (or whole replays) they
    do not compute.

    Pair safety: the policy's trigger reads the plan before pair safety, so it changes only what a
    turn sends. Each of these policies sends a summary (not a session message: apply_pair_safety
    never sees it) and one run of the history after what the summary covers, up to the turn's last
    message; the system messages are never dropped (no pair or problem holds one). So a turn sends
    less by what `_PairSafety.drops(j, h, h, h)` names, each at its measured count (`_unpaired`).
    OpenHands' view is no run: it carries its own rule, and reads `pairs` only as "carried".

    Recorded summaries: the plan reads those the file records while the policy has written none
    of its own (`replay_contract.state` then hands it only the latest generated one). A replayer
    that carries them (`_carry_recorded`, recorded_summaries "shaped until generated") follows the
    summaries in force (`_RecordedInForce`: each covers a prefix of the file, `_RecordedShapes`)
    and is told when they change (`_recorded_moved`); one that does not, or a session whose
    summaries do not cover a prefix of the file (`_RecordedShapes.why_not`: from the first one
    that covers a message of it), hands those turns to the reference step until the policy
    writes a summary of its own."""

    unique_ids = True
    pair_safe_incremental = True
    recorded_summaries = "until generated"

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.tokens = full.message_tokens
        messages = session.messages
        self.ids = [m.id for m in messages]
        sums = [0]
        for t in self.tokens[: len(messages)]:
            sums.append(sums[-1] + t)
        self.sums = sums  # sums[k]: tokens of messages 0..k-1
        # The reference state() is what the fast turns reproduce: one message per id (covers name
        # ids), pair safety only where every tool call id is on one call. Recorded summaries count
        # only while the policy has written none of its own (`state` then hands the plan just the
        # latest generated one): the turns from the first one in force until then go to the
        # reference step (`_recorded_now`).
        self.ok = len(set(self.ids)) == len(self.ids)
        self.first_recorded = min(session.summary_start_turns, default=len(messages))
        self.recorded: _RecordedInForce | None = None  # with `_carry_recorded`: the summaries in force
        self.pairs = _PairSafety.of(session) if pair_safe and self.ok else None
        self.ok = self.ok and (not pair_safe or self.pairs is not None)
        self.synced = 0  # len(generated) the state reflects
        if self.pairs is not None:
            #: history position -> session index; before[i]: the history positions before session index i.
            self.at = [m.index for m in messages if m.role != "system"]
            self.before_position = [0]
            for m in messages:
                self.before_position.append(self.before_position[-1] + (m.role != "system"))

    def absorb(self, i: int) -> None:
        if self.ok and self.synced != len(self.generated):
            self._sync(i - 1)
            self.synced = len(self.generated)
        if self.pairs is not None:
            self.pairs.grow(i)
        self._grow(i)

    def _unpaired(self, j: int, i: int) -> tuple[int, int]:
        """(how many, their measured tokens) of the messages pair safety drops at the turn that
        ends with session message `i` and sends history positions j.. up to it: (0, 0) without
        pair safety."""
        if self.pairs is None:
            return 0, 0
        dropped = self.pairs.drops(j, self.before_position[i + 1], self.before_position[i + 1], self.before_position[i + 1])
        tokens, at = self.tokens, self.at
        return len(dropped), sum(tokens[at[k]] for k in dropped)

    def _unpaired_from(self, c: int, i: int) -> tuple[int, int]:
        """`_unpaired` for the turn that sends session messages c..i (the system messages among them too)."""
        return self._unpaired(self.before_position[c], i) if self.pairs is not None else (0, 0)

    def _recorded_now(self, i: int) -> bool:
        """Whether the plan at step `i` reads recorded summaries: one is in force and the policy
        has written none of its own yet."""
        return not self.generated and self.recorded_until(i) >= self.first_recorded

    def _carry_recorded(self) -> None:
        """Carry the recorded summaries that cover a prefix of the file's messages (the subclass
        reads them at `_recorded_moved`); the turns from the first one that does not on go to the
        reference step until the policy writes a summary of its own."""
        self.recorded, self.first_recorded = carried_recorded(self)

    def _recorded_moved(self, i: int) -> None:
        """The recorded summaries in force at step `i` changed (`self.recorded`): take them into the state."""

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.ok:
            return super().step(i)
        if self._recorded_now(i):
            turn = None
        else:
            if self.recorded is not None and not self.generated and self.recorded.update(i + 1, self.recorded_until(i)):
                self._recorded_moved(i)
            turn = self._fast(i)
        if turn is None:
            turn = super().step(i)
            if self.ok and self.synced != len(self.generated):
                self._sync(i)
                self.synced = len(self.generated)
        return turn

    def _grow(self, i: int) -> None:
        """Take message `i` into the running state."""

    def _sync(self, i: int) -> None:
        """Take over the summary the reference step generated at turn `i` (or clear `ok`)."""
        self.ok = False

    def _fast(self, i: int) -> Turn | None:
        return None


class _EditsReplay(_Replay):
    """What the replayers here share: the fall-back rule (the turns from the first recorded summary
    in force on; pair safety for the whole replay, unless the replayer carries it), the growing
    system prompt, and the overflow event.

    Until the first recorded summary the history is sent whole (edited, never cut), so a replayer
    that carries pair safety (`_carry_pair_safety`) drops just what `apply_pair_safety` drops from
    the whole history: the problems so far and what loses its partner to them (`_unpaired`).

    A replayer that carries the recorded summaries (`_carry_recorded`) sends the history after the
    messages they cover instead: each covers a prefix of the file (`_RecordedShapes`), so when one
    comes into force the state is rebuilt from the first message it leaves (`_restart`: amortised
    linear, the messages after a compaction's cover being few), and pair safety drops what it drops
    from that one run of the history. Where the summaries do not cover a prefix of the file
    (`_RecordedShapes.why_not`), the turns from the first one covering a message of it on are
    handed to the reference step."""

    recorded_summaries = "in force"

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.tokens = full.message_tokens
        self.first_summary = min(session.summary_start_turns, default=len(session.messages))
        self.usable = not pair_safe
        self.pairs: _PairSafety | None = None
        self.history: list[int] = []  # the session indices of the non-system messages taken in (with `pairs`)
        self.handed_over = False
        self.system_texts: list[str] = [session.system_prompt] if session.system_prompt else []
        self.system_prompt_tokens = full.text(self.system_texts[0]) if self.system_texts else 0
        # With `_carry_recorded`: the summaries in force, the messages [0, covered) they take out of
        # the request, what the summaries sent count, and per message so far (`_pair`) the prefix
        # sums of all counts, of the non-system ones' counts and of the non-system messages.
        self.recorded: _RecordedInForce | None = None
        self.covered = 0
        self.summary_tokens = 0
        self.all_sums = [0]
        self.history_sums = [0]
        self.history_counts = [0]

    def absorb(self, i: int) -> None:
        if self.usable and i < self.first_summary:
            self._take(i)

    def step(self, i: int) -> Turn:
        if not self.usable or self.recorded_until(i) >= self.first_summary:
            if not self.handed_over:
                self._hand_over()
                self.handed_over = True
            return super().step(i)
        self._take(i)
        if self.recorded is not None:
            self._follow_recorded(i)
        return self._fast(i)

    def _carry_recorded(self) -> None:
        """Carry the recorded summaries that cover a prefix of the file's messages (the subclass
        says which messages they take out, `_in_force`, and rebuilds its state after them,
        `_restart`); the turns from the first one that does not on go to the reference step."""
        self.recorded, self.first_summary = carried_recorded(self)

    def _follow_recorded(self, i: int) -> None:
        """Bring the summaries in force to step `i`; rebuild the state when what they cover moved."""
        assert self.recorded is not None
        if not self.recorded.update(i + 1, self.recorded_until(i)):
            return
        covered, self.summary_tokens = self._in_force(self.recorded)
        if covered != self.covered:
            self.covered = covered
            self._restart(i)

    def _in_force(self, recorded: _RecordedInForce) -> tuple[int, int]:
        """(the messages [0, C) the summaries in force take out of the request, the tokens they send)."""
        raise NotImplementedError

    def _restart(self, i: int) -> None:
        """Rebuild the carried state from the messages `covered`..`i` (what they cover moved)."""
        raise NotImplementedError

    def _recorded_decision(self, k: int, m: int) -> tuple[int, tuple[Decision, str]]:
        """For recorded summary k written since the step before, covering the prefix's first m
        messages: how many of those the plan summarises, and its decision on the summary."""
        raise NotImplementedError

    def _recorded_events(self, i: int) -> list[Event]:
        """The reference's compaction events (`replay_contract._recorded_summary_event`) for the
        summaries written since the step before: each covers the prefix's first m messages."""
        return [] if self.recorded is None else recorded_events(self, self.recorded, i, self._recorded_decision)

    def _carry_pair_safety(self) -> None:
        """Carry pair safety from turn to turn (where every tool call id is on one call; else the
        replay stays with the reference step). The subclass's `_take` calls `_pair(i)`."""
        if self.pair_safe:
            self.pairs = _PairSafety.of(self.session)
            self.usable = self.pairs is not None

    def _pair(self, i: int) -> None:
        """Take message `i` into the carried pair safety and the prefix sums every turn reads."""
        t = self.tokens[i]
        self.all_sums.append(self.all_sums[-1] + t)
        system = self.session.messages[i].role == "system"
        self.history_sums.append(self.history_sums[-1] + (0 if system else t))
        self.history_counts.append(self.history_counts[-1] + (0 if system else 1))
        if self.pairs is not None:
            self.pairs.grow(i)
            if not system:
                self.history.append(i)

    def _unpaired(self) -> list[int]:
        """The session indices pair safety drops when the history so far is sent, from the first
        message the recorded summaries in force leave."""
        if self.pairs is None:
            return []
        j = self.history_counts[self.covered]
        if not j and not self.pairs.problems:  # no pair crosses the run's start: only problems seed a drop
            return []
        h = len(self.history)
        return [self.history[k] for k in sorted(self.pairs.drops(j, h, h, h))]

    def _hand_over(self) -> None:
        """Before the first turn the reference step plans: what it reads of the turn before."""

    def _take(self, i: int) -> None:
        """Take message `i` into the carried state (at a step or between two)."""

    def _fast(self, i: int) -> Turn:
        """The turn at step `i`, message `i` already taken in."""
        raise NotImplementedError

    def _system(self, m: Message) -> None:
        """A system message joins the system prompt (`common.base_system_prompt`)."""
        if m.text:
            self.system_texts.append(m.text)
            self.system_prompt_tokens = self.full.text("\n\n".join(self.system_texts))

    def _overflow(self, i: int, fits: bool, events: list[Event], allocation: dict[str, int], usage: dict[str, int], budget: int, used: int) -> None:
        """The overflow event of a turn without trims, and the cuts it leaves (`untrimmed_cuts`)."""
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: light_plan(self.policy, allocation, usage, budget, used, fits))


def recorded_events(replay: _Replay, recorded: _RecordedInForce, i: int,
                    decide: Callable[[int, int], tuple[int, tuple[Decision, str] | None]]) -> list[Event]:
    """The reference's compaction events (`replay_contract._recorded_summary_event`) at step `i`
    for the recorded summaries written since the step before, each covering the prefix's first m
    messages: `decide(k, m)` says how many of those the plan summarises and its decision on
    summary k. One loop for every replayer that carries recorded summaries as prefixes."""
    events = []
    for k in recorded.written(replay.last_horizon, replay.recorded_until(i)):
        m = recorded.span[k]
        summarized, decided = decide(k, m)
        events.append(Event(i, "compaction", recorded.shapes.span_text(k, m, summarized, replay.policy, decided)))
    return events


class _RecordedShapes:
    """The session's recorded summaries in the shape the replayers carry (kept in `Session.derived`,
    read once per session): each summary's covers among the file's messages as the positions
    [0, lo) (lo 0: it covers none of them), the summaries by the turn they start, and why a session
    cannot be carried that way (`why_not`; then the replay hands the turns from the first summary
    that covers a message of the file on to the reference step).

    Claude Code's compactions cover every message before their boundary but a preserved tail, each
    compaction the one before, so a summary's covers are a prefix of the file and the latest one in
    force supersedes the earlier ones. Codex's compactions cover the non-system messages before
    them: the system messages among them stay where they are (`system_gaps`; `lo` then ends after
    the last message covered, and a replayer that does not say it carries that shape hands those
    turns to the reference step, `why_not_for`)."""

    def __init__(self, session: Session) -> None:
        messages = session.messages
        self.lo: list[int] = []
        self.why_not: str | None = None
        #: Every summary covering messages of the file covers just its non-system ones before `lo`,
        #: and some system message lies among them.
        self.system_gaps = False
        self.system_before: list[int] = []
        if not session.summaries:  # nothing recorded: no pass over the messages
            self.starts: tuple[int, ...] = ()
            self.order: list[int] = []
            self.sorted_starts: list[int] = []
            self.first_covering = len(messages)
            return
        position: dict[str, int] = {}
        for m in messages:
            position.setdefault(m.id, m.index)
        prefix, non_system = True, True  # every covering summary covers all of [0, lo); just its non-system messages
        first = session.summaries_cover_first
        system_before = _system_counts(messages)
        for k, summary in enumerate(session.summaries):
            covers = summary.covers
            if first[k]:  # the file's first messages, in order
                self.lo.append(len(covers))
                non_system = non_system and not system_before[len(covers)]
                continue
            present = [position[c] for c in covers if c in position]
            lo = max(present) + 1 if present else 0
            if lo:
                distinct = len(set(present)) == len(present)
                prefix = prefix and distinct and len(present) == lo
                non_system = (non_system and distinct and len(present) == lo - system_before[lo]
                              and all(messages[j].role != "system" for j in present))
            self.lo.append(lo)
        covering = any(self.lo)
        if not prefix:
            if non_system:
                self.system_gaps = True
            else:
                self.why_not = "a recorded summary that covers the file's messages with gaps"
        if covering and len(position) != len(messages):
            self.why_not = "an id on more than one message"
        if len({id(s) for s in session.summaries}) != len(session.summaries):
            self.why_not = "the same summary recorded twice"
        starts = session.summary_start_turns
        self.starts = starts
        self.order = sorted(range(len(starts)), key=lambda k: starts[k])  # the summaries by their start
        self.sorted_starts = [starts[k] for k in self.order]
        self.first_covering = min((s for s, lo in zip(starts, self.lo, strict=True) if lo), default=len(messages))
        self.system_before = system_before

    def why_not_for(self, replayer: object) -> str | None:
        """Why `replayer` (a replayer or its class) cannot carry these summaries (None: it can)."""
        if self.why_not is None and self.system_gaps and not getattr(replayer, "recorded_system_gaps", False):
            return "a recorded summary that leaves out the system messages among those it covers, as Codex's compactions do"
        return self.why_not

    def covered_count(self, m: int) -> int:
        """How many of the prefix's first m messages a summary spanning them covers."""
        return m - self.system_before[m] if self.system_gaps else m

    def span_text(self, k: int, m: int, summarized: int, policy: str, decided: tuple[Decision, str] | None) -> str:
        """The reference's compaction sentence (`replay_contract._recorded_summary_event`) for
        summary k spanning the prefix's first m messages, of which the plan summarises `summarized`."""
        if not self.system_gaps:
            return recorded_summary_text(k, list(range(min(m, 5))), 0, m - 1, m, True, summarized, policy, decided)
        covered = self._non_system(m)
        contiguous = covered[-1] - covered[0] + 1 == len(covered)
        return recorded_summary_text(k, covered[:5], covered[0], covered[-1], len(covered), contiguous, summarized, policy, decided)

    def _non_system(self, m: int) -> list[int]:
        """The positions of the non-system messages among the first m (a compaction event's; rare)."""
        before = self.system_before
        return [j for j in range(m) if before[j + 1] == before[j]]

    @staticmethod
    def of(session: Session) -> _RecordedShapes:
        key = ("replay_common", "recorded shapes")
        found = session.derived.get(key)
        if found is None:
            found = session.derived[key] = _RecordedShapes(session)
        return found


class _RecordedInForce:
    """The session's recorded summaries in force at a step, as `state()` hands them to the plan (those
    starting up to `Turn.horizon`, in the file's order) and as `common.recorded_covers` reads them:
    each one's span is the positions [0, min(lo, L)) of the prefix of L messages; one is superseded
    when a later one's span holds it. Recomputed only when a summary comes into force (or while
    one in force reaches past the prefix), so a step reads it in O(1)."""

    def __init__(self, shapes: _RecordedShapes) -> None:
        self.shapes = shapes
        self.j = -1  # how many summaries (by start) are in force
        self.pending = False  # a summary in force reaches past the prefix: its span grows with L
        self.in_force: list[int] = []  # summary indices, file order
        self.live: list[int] = []  # those not superseded, file order
        self.superseded: set[int] = set()
        self.covered = 0  # C: the prefix's messages [0, C) are covered
        self.span: dict[int, int] = {}

    def update(self, length: int, until: int) -> bool:
        """Bring the state to the prefix of `length` messages, summaries starting up to `until`;
        whether what is in force changed."""
        j = bisect_left(self.shapes.sorted_starts, until + 1)
        if j == self.j and not self.pending:
            return False
        if self.j >= 0 and not self.pending and j > self.j and self._append(j, length):
            return True
        self.j = j
        lo = self.shapes.lo
        self.in_force = sorted(self.shapes.order[:j])
        self.span = {k: min(lo[k], length) for k in self.in_force}
        self.pending = any(lo[k] > length for k in self.in_force)
        later = 0
        superseded: set[int] = set()
        for k in reversed(self.in_force):
            m = self.span[k]
            if m and later >= m:
                superseded.add(k)
            later = max(later, m)
        self.superseded = superseded
        self.covered = later
        self.live = [k for k in self.in_force if k not in superseded]
        return True

    def _append(self, j: int, length: int) -> bool:
        """`update` where the summaries coming into force follow every one in force in the file's
        order and lie within the prefix (a log's compactions, one after the other): each
        supersedes the newest ones not superseded whose spans it holds. False: recompute."""
        lo = self.shapes.lo
        new = sorted(self.shapes.order[self.j : j])
        if (self.in_force and new[0] < self.in_force[-1]) or any(lo[k] > length for k in new):
            return False
        for k in new:
            m = lo[k]
            self.span[k] = m
            if m:
                live = self.live
                while live and self.span[live[-1]] and self.span[live[-1]] <= m:
                    self.superseded.add(live.pop())
                if live and not self.span[live[-1]] and any(0 < self.span[x] <= m for x in live):
                    self.j = -1  # a summary of nothing before the file stands between: recompute
                    return False
                self.covered = max(self.covered, m)
            self.in_force.append(k)
            self.live.append(k)
        self.j = j
        return True

    def written(self, last_horizon: int, until: int) -> list[int]:
        """The summaries written since the step before (the reference's compaction events), in the file's order."""
        s = self.shapes
        lo, hi = bisect_left(s.sorted_starts, last_horizon + 1), bisect_left(s.sorted_starts, until + 1)
        return sorted(k for k in s.order[lo:hi] if s.starts[k] > 0)


def carried_recorded(replay: _Replay) -> tuple[_RecordedInForce | None, int]:
    """The recorded summaries a replayer carries as prefixes of the file (None: the session records
    none), and the first turn it hands to the reference step for them (the session's length: none,
    or the first summary covering a message of the file where the replayer cannot carry their shape)."""
    session = replay.session
    if not session.summaries:
        return None, len(session.messages)
    shapes = _RecordedShapes.of(session)
    return _RecordedInForce(shapes), shapes.first_covering if shapes.why_not_for(replay) is not None else len(session.messages)


class _InForceTotal:
    """A running total over the recorded summaries in force (each one's value once, combined with
    `combine`: a sum, a maximum): as a log's compactions come into force one after the other they
    are appended to `_RecordedInForce.in_force`, so only the new ones are read; any other change
    reads them all again."""

    def __init__(self, value: Callable[[int], int], combine: Callable[[int, int], int] = operator.add) -> None:
        self.value, self.combine = value, combine
        self.seen: list[int] | None = None
        self.count = self.total = 0

    def read(self, recorded: _RecordedInForce) -> int:
        in_force = recorded.in_force
        if in_force is not self.seen or len(in_force) < self.count:
            self.seen, self.count, self.total = in_force, 0, 0
        for k in in_force[self.count :]:
            self.total = self.combine(self.total, self.value(k))
        self.count = len(in_force)
        return self.total


def _system_counts(messages: tuple[Message, ...]) -> list[int]:
    """Prefix counts of the system messages: [j] is how many of the first j are."""
    counts = [0]
    for m in messages:
        counts.append(counts[-1] + (m.role == "system"))
    return counts
