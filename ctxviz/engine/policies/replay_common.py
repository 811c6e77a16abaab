"""What the incremental replayers of several frameworks share (the contract itself is
`engine/replay_contract.py`): a history that grows by one message a turn with the prefix sums of its
counts (missy, mnesis, supyagent), and the fall-back rules of the replayers that write summaries
(LangChain, LlamaIndex, Strands, OpenHands) and of those that edit or compact the history
(Anthropic, LangChain, Claude Code, Codex, Gemini CLI). Pair safety carried from turn to turn is
replay_pairs.py's; the summaries a log records, carried as prefixes of the file, replay_recorded.py's.

The summary in force in the summarising frameworks covers a prefix of the conversation (each folds
the previous summary into the next; OpenHands after its kept head), so a turn needs only the
messages after it and running sums of the counts; a turn whose trigger fires builds only the part
after the summary in force, or is handed to the reference step. The editing and compacting
replayers carry pair safety too, and hand the turns from the first one where a summary recorded in
the file is in force to the reference step.
"""

from __future__ import annotations

from typing import Any

from ..counting import TokenCounts
from ..plan import Decision
from ..replay_contract import Event, Turn, _Replay, light_plan, untrimmed_cuts
from ..session import Message, Session
from ..summarizers import Summarizer
from .replay_pairs import _PairSafety
from .replay_recorded import _RecordedInForce, carried_recorded, recorded_events


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


