"""Incremental replays of the policies that write summaries through `Policy.compact` (issue 12):
LangChain's SummarizationMiddleware, LlamaIndex's ChatSummaryMemoryBuffer, Strands'
SummarizingConversationManager, OpenHands' LLMSummarizingCondenser.

The summary in force covers a prefix of the conversation (each of these frameworks folds the
previous summary into the next; OpenHands after its kept head), so a turn only needs the
messages after it and running sums of the counts: a turn whose trigger does not fire reads prefix
sums; a turn that fires builds only the part after the summary in force (llamaindex, strands,
openhands) or is handed to the reference step (langchain), and the summarised part's offline
snapshot is carried from turn to turn. Each replayer falls back to the reference step for the
whole replay where its state would not be exact (pair safety, summaries recorded in the file, ids
on more than one message, another summarizer than the offline snapshot...); its docstring says which.
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left, insort
from typing import Any

from .counting import TokenCounts
from .plan import Plan
from .policies.carried import IdPrefix, _Snapshot
from .policies.langchain_counting import cached_view, count_view, max_input_tokens, model_provider, summary_view
from .policies.langchain_summarization import SummarizationParams, parse_trigger, provider_matches
from .policies.llamaindex_chat_memory_buffer import prefix_tokens, text_tokens
from .policies.llamaindex_chat_summary_memory_buffer import ChatSummaryMemoryBufferParams
from .policies.openhands_condenser import DEFAULT_INPUT_TOKENS, CondenserParams
from .policies.strands_common import context_window_limit, conversation, json_tokens, tool_specs
from .policies.strands_summarizing import StrandsMessage, SummarizingParams, summarize_oldest
from .replay_contract import FITS, Event, Turn, _Replay, light_plan, untrimmed_cuts
from .session import Message, Session, Summary, ThinkingPart
from .summarizers import ExtractiveSummarizer, Summarizer


class _SummaryReplay(_Replay):
    """What the three replayers share: prefix sums of the counts, the session's ids, and the
    reference step for the turns (or whole replays) they do not compute."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        self.tokens = full.message_tokens
        messages = session.messages
        self.ids = [m.id for m in messages]
        sums = [0]
        for t in self.tokens[: len(messages)]:
            sums.append(sums[-1] + t)
        self.sums = sums  # sums[k]: tokens of messages 0..k-1
        # The reference state() is what the fast turns reproduce: no recorded summary, one message
        # per id (covers name ids), no pair safety applied after the policy.
        self.ok = not pair_safe and not session.summaries and len(set(self.ids)) == len(self.ids)
        self.synced = 0  # len(generated) the state reflects

    def absorb(self, i: int) -> None:
        if self.ok and self.synced != len(self.generated):
            self._sync(i - 1)
            self.synced = len(self.generated)
        self._grow(i)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.ok:
            return super().step(i)
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


class LangchainSummarizationReplay(_SummaryReplay):
    """SummarizationMiddleware: the state is the summary in force (its covers are a prefix of the
    session) and the messages after it; the trigger reads the running count of that state
    (`scaled_total`'s usage scaling carried: the AI messages' providers and the last reported
    total). A turn whose trigger is met (it fires, or keep leaves nothing to summarise) is planned
    by the reference step, which writes the summary.

    From scratch: pair safety, summaries recorded in the file, ids on more than one message."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        p: SummarizationParams = params
        self.clauses = parse_trigger(p.trigger)
        self.ls_provider = p.model_provider or model_provider(session.model)
        self.limit = max_input_tokens(session.model, p.max_input_tokens)
        self.tokenizer = full.tokenizer
        self.c = 0  # messages 0..c-1 are covered by the summary in force
        self.summary_tokens: int | None = None  # its state entry's count (None: no summary)
        self._reset_scaling()

    def _reset_scaling(self) -> None:
        self.provider: str | None = None
        self.invalid = False
        self.last_total: int | None = None
        self.at_last = 0  # tokens of the state's messages up to the last AI message reporting a total
        self.last_ai: Any = None

    def _scale(self, k: int) -> None:
        """scaled_total's walk and run_pass' last AI message, one message on."""
        m = self.session.messages[k]
        view = cached_view(m)
        if view.type != "ai":
            return
        if view.provider is None and m.raw is None and view.total_tokens is not None:
            view = view._replace(provider=self.ls_provider or None)  # run_pass: not a LangChain dump
        if self.provider is None:
            self.provider = view.provider
        elif view.provider != self.provider:
            self.invalid = True
        if view.total_tokens is not None:
            self.last_total = view.total_tokens
            self.at_last = self.sums[k + 1] - self.sums[self.c]
        self.last_ai = view

    def _grow(self, i: int) -> None:
        self._scale(i)

    def _sync(self, i: int) -> None:
        summary = self.generated[-1]
        c = len(summary.covers)
        if c > i + 1 or tuple(summary.covers) != tuple(self.ids[:c]):
            self.ok = False
            return
        self.c = c
        self.summary_tokens = count_view(summary_view(summary.text), self.tokenizer)
        self._reset_scaling()
        for k in range(c, i + 1):
            self._scale(k)

    def _met(self, n_state: int, total: int) -> bool:
        """run_pass' trigger test (any doubt counts as met: the reference step then decides)."""
        last_ai, limit = self.last_ai, self.limit

        def reported(threshold: float) -> bool:
            return bool(last_ai is not None and last_ai.total_tokens and last_ai.total_tokens >= threshold
                        and last_ai.provider and provider_matches(last_ai.provider, self.ls_provider))

        for clause in self.clauses:
            met = True
            for kind, value in clause.items():
                if kind == "messages":
                    met = n_state >= value
                elif kind == "fraction" and limit is None:
                    met = False
                else:
                    threshold = int(value) if kind == "tokens" else max(1, int(limit * value))  # type: ignore[operator]
                    met = total >= threshold or reported(float(threshold))
                if not met:
                    break
            if met:
                return True
        return False

    def _fast(self, i: int) -> Turn | None:
        c, P = self.c, self.sums
        S = self.summary_tokens or 0
        messages_tokens = P[i + 1] - P[c]
        n_state = (i + 1 - c) + (self.summary_tokens is not None)
        token_count = float(S + messages_tokens)
        if n_state > 1 and not self.invalid and self.provider is not None and self.last_total is not None:
            at_last = float(S + self.at_last)
            if at_last:
                token_count *= min(1.25, max(1.0, self.last_total / at_last))
        total = math.ceil(token_count)
        if self.clauses and self._met(n_state, total):
            return None
        used = S + messages_tokens
        budget = self.limit if self.limit is not None else max(used, total)
        fits = used <= budget
        events: list[Event] = []

        def light() -> Plan:
            allot = min(S, budget)
            return light_plan(self.policy, {"summary": allot, "messages": budget - allot}, {"summary": S, "messages": messages_tokens}, budget, used, fits)

        self.before = untrimmed_cuts(i, self.before, fits, events, light)
        return Turn(i, used, budget, i + 1 - c, 0, c, 0, fits, len(self.generated), tuple(events), P[c])


class StrandsSummarizingReplay(_SummaryReplay):
    """SummarizingConversationManager: the summary in force covers a prefix of the history (it
    absorbs the previous one), so Strands' estimate is the request overhead, the summary and the
    prefix sums after it. A turn that overflows (or reaches the proactive threshold) runs
    `summarize_oldest` on the Strands messages after the summary only, and the new summary's
    text is the offline snapshot carried from turn to turn (`replay._Snapshot`).

    From scratch: pair safety, summaries recorded in the file, ids on more than one message,
    pin_first (pinned messages stay in front of the summary), another summarizer than the
    offline snapshot. A turn where Strands cannot summarise is planned by the reference step."""

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
        self.summary_tokens = 0
        self.summary_text = ""
        self.snapshot = _Snapshot()

    def _grow(self, i: int) -> None:
        m = self.session.messages[i]
        self.system_sums.append(self.system_sums[-1] + (self.tokens[i] if m.role == "system" else 0))
        if m.role == "system":
            self.system_count += 1
            if m.text:
                self.system_texts.append(m.text)
                self.system_tokens = self.full.text("\n\n".join(self.system_texts))
            return
        self.history.append(i)
        self.history_ids.append(m.id)

    def _sync(self, i: int) -> None:
        summary = self.generated[-1]
        c = len(summary.covers)
        if c > len(self.history) or tuple(summary.covers) != tuple(self.ids[k] for k in self.history[:c]):
            self.ok = False
            return
        self.c = c
        self.summary_text = summary.text
        self.summary_tokens = self.full.text(summary.text)

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
        has_summary = bool(self.generated)
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
            self.before = FITS
            return Turn(i, estimate, limit, i + 1 - c, 0, c, 0, True, active, (), covered)
        # The Strands messages after the summary in force, the summary first (with_summary: nothing pinned, at 0).
        session = self.session
        rest = dataclasses.replace(session, messages=tuple(session.messages[k] for k in self.history[c:]), summaries=())
        _, strands = conversation(rest, self.tokens)
        if has_summary:
            strands.insert(0, StrandsMessage("user", [{"text": self.summary_text}], (), tokens=self.summary_tokens))
        outcome = summarize_oldest(strands, p.ratio, p.preserve_recent_messages, p.pin_first, False)
        if not outcome.ok:
            return None  # Strands cannot summarise (it raises, or carries on): the reference step says why
        members = sorted(k for pos in outcome.summarized for k in strands[pos].members)
        # The members are the history right after the summary (nothing is pinned): the new summary covers history[:c2].
        c2 = c + len(members)
        if members != self.history[c:c2]:
            return None
        if len(self.snapshot.seen) > c2:  # not a growing prefix (it always is here): start again
            self.snapshot = _Snapshot()
        self.snapshot.advance([session.messages[k] for k in self.history[len(self.snapshot.seen) : c2]])
        text = self.snapshot.render()
        text_count = self.full.text(text)
        held = sum(sm.tokens for sm in strands[outcome.split:]) + text_count
        used = fixed + held
        fits = used <= limit
        ids = IdPrefix(self.history_ids, c2)  # the covers are a prefix of the history ids: a view, not a copy
        events.append(Event(i, "summary", f"{why}: Strands summarised {c2} messages into one user message"))
        summary = Summary(text=text, messages_covered=c2, covers=ids, created_at=session.messages[i].timestamp)  # type: ignore[arg-type]
        self.generated.append(summary)
        self.synced = len(self.generated)
        self.c, self.summary_text, self.summary_tokens = c2, text, text_count

        def light() -> Plan:
            from .policies.strands_sliding import split_window

            usage = {"system": self.system_tokens, "tool_definitions": self.tools_tokens, "messages": held}
            return light_plan(self.policy, split_window(limit, self.system_tokens, self.tools_tokens), usage, limit, used, fits)

        self.before = untrimmed_cuts(i, self.before, fits, events, light)
        return Turn(i, used, limit, i + 1 - c2, 0, c2, 0, fits, active, tuple(events), self._covered_tokens(c2))


class LlamaindexSummaryReplay(_SummaryReplay):
    """ChatSummaryMemoryBuffer.get: the chat store is the summary in force (a SYSTEM entry whose
    covers are a prefix of the history) and the history after it, so the newest-first fill that
    stops at the first misfit is one bisection over the history's prefix sums; the assistant and
    tool messages that may not start the full text are skipped with a precomputed jump. The
    summarised part only grows, so its offline snapshot is carried from turn to turn
    (`replay._Snapshot`), whether get() writes it back (compact) or not.

    From scratch: pair safety, summaries recorded in the file, ids on more than one message,
    another summarizer than the offline snapshot. A turn where get() raises (count_initial_tokens
    with more initial tokens than token_limit) is planned by the reference step."""

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
        self.c = 0  # history[:c] is covered by the summary in force
        self.summary_tokens = 0
        self.snapshot = _Snapshot()

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

    def _sync(self, i: int) -> None:
        summary = self.generated[-1]
        c = len(summary.covers)
        if c > len(self.history) or tuple(summary.covers) != tuple(self.ids[k] for k in self.history[:c]):
            self.ok = False
            return
        self.c = c
        self.summary_tokens = text_tokens(self.full, summary.text)

    def _text(self, upto: int) -> str:
        """The offline snapshot of history[:upto] (the summarised part only grows; else start again)."""
        if upto < len(self.snapshot.seen):
            self.snapshot = _Snapshot()
        messages = self.session.messages
        self.snapshot.advance([messages[k] for k in self.history[len(self.snapshot.seen) : upto]])
        return self.snapshot.render()

    def _fast(self, i: int) -> Turn | None:
        p: ChatSummaryMemoryBufferParams = self.params
        limit = self.limit
        initial = self.system_tokens if p.initial_token_count is None else p.initial_token_count
        if p.count_initial_tokens and initial > limit:
            return None  # get() raises: the reference step says so
        counted_initial = initial if p.count_initial_tokens else 0
        uncounted_system = 0 if p.count_initial_tokens else self.system_tokens
        H, h, c = self.hsums, len(self.history), self.c
        has_summary = bool(self.generated)
        room = limit - counted_initial
        j = bisect_left(H, H[h] - room, c, h) if room >= 0 else h  # history[j:h] fits, newest first
        summary_fits = has_summary and j == c and self.summary_tokens + H[h] - H[c] <= room
        summary_tokens = 0
        new_text = ""
        if summary_fits:  # the whole store fits: nothing is summarised
            summary_tokens = self.summary_tokens
        else:
            j = min(self.skip[j], h)  # the full text may not start with an assistant or tool message
            if j == c and has_summary:  # a lone SYSTEM message is passed through
                summary_tokens = self.summary_tokens
            elif j > c and p.llm:
                new_text = self._text(j)
                summary_tokens = text_tokens(self.full, new_text)
        full_tokens = H[h] - H[j]
        summarized = j if p.llm else c
        dropped = 0 if p.llm else j - c
        kept = self.system_count + (h - j)
        active = len(self.generated)
        events: list[Event] = []
        if new_text and self.session.messages[i].role in ("user", "tool"):  # compact: get() writes the summary back
            # The covers are a prefix of the history ids: a view of the growing list, not a copy (a
            # summary is written at nearly every user turn once the buffer is full).
            ids = IdPrefix(self.history_ids, j)
            events.append(Event(i, "summary", f"ChatSummaryMemoryBuffer summarised {j - (c if has_summary else 0)} more messages "
                                              f"({j} in all) that no longer fit token_limit {limit:,} into one SYSTEM message"))
            self.generated.append(Summary(text=new_text, messages_covered=j, covers=ids, created_at=self.session.messages[i].timestamp))  # type: ignore[arg-type]
            self.synced = len(self.generated)
            self.c, self.summary_tokens = j, summary_tokens
        usage = {"initial": counted_initial, "system": uncounted_system, "summary": summary_tokens, "full_text": full_tokens}
        allocation = {"initial": min(counted_initial, limit), "system": min(uncounted_system, limit), "summary": min(summary_tokens, limit),
                      "full_text": max(0, limit - counted_initial)}
        fits = all(usage[part] <= allotted for part, allotted in allocation.items())
        used = counted_initial + uncounted_system + summary_tokens + full_tokens
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: light_plan(self.policy, allocation, usage, limit, used, fits, "parts", "caps"))
        return Turn(i, used, limit, kept, dropped, summarized, 0, fits, active, tuple(events), H[j])


class OpenhandsCondenserReplay(_SummaryReplay):
    """LLMSummarizingCondenser: which messages the View keeps is carried from turn to turn, with
    the view's event count and tokens, so a turn under max_size and the token limit reads running
    sums; a turn over them builds the view of the messages not forgotten only (bounded by
    max_size after the first condensation) and asks the module's `condensation` where to cut. The
    forgotten part only grows, so its offline snapshot is carried (`replay._Snapshot`).

    The View's properties are carried under these conditions on the session, else the whole
    replay is from scratch: every tool call id of an assistant message is set and on one call,
    every tool message names its call and comes after it, no assistant message with tool calls
    has thinking blocks (no tool loops, so the Condensation marks change nothing). Then an
    assistant message with calls is in the view once every call has its first observation, a
    tool message when it is its call's first observation and that batch is in, and a
    condensation never separates the two. Also from scratch: pair safety, summaries recorded in
    the file, ids on more than one message, another summarizer than the offline snapshot, and
    (from that turn on) a condensation that keeps the earlier summary in its head or whose view
    has left messages out ahead of the span it forgets (OpenHands then puts the summary early:
    policies/openhands_log.py)."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        from .policies.openhands_condenser import _result_id, events_of, input_limit

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
        self.covered: list[int] = []  # sorted session indices forgotten by the summary in force
        self.covered_ids: list[str] = []
        self.summary_tokens = 0
        self.written_after: tuple[str, ...] = ()
        self.last_role = ""
        self.batch: tuple[str, ...] | None = None  # the latest assistant message's calls, for agent_would_step
        self.answered: set[str] = set()
        self.snapshot = _Snapshot()
        self.snap_list: list[int] = []
        self.talk_before = [0]  # talk_before[k]: messages before k that are not system messages
        for m in messages:
            self.talk_before.append(self.talk_before[-1] + (m.role != "system"))

    def _enter(self, k: int) -> None:
        insort(self.inview, k)
        self.view_events += len(self.events[k])
        self.view_tokens += self.tokens[k]

    def _grow(self, i: int) -> None:
        if not self.ok:
            return
        m = self.session.messages[i]
        if m.role == "system":
            self.has_system = True
            self.system_count += 1
            self.system_role_tokens += self.tokens[i]
            if m.text:
                self.system_texts.append(m.text)
                self.prompt_tokens = self.full.text("\n\n".join(self.system_texts))
            return
        self.uncovered += 1
        self.last_role = m.role
        if m.role == "assistant" and m.tool_calls:
            self.batch, self.answered = self.calls[i], set()
        elif m.role == "tool":
            self.answered.add(m.tool_call_id)
        if i in self.calls:
            self.unanswered[i] = len(self.calls[i])  # results come after their calls here
        elif m.role == "tool":
            call_id = self.observes[i]
            if call_id in self.first_obs:
                return  # a second observation of the call: ObservationUniquenessProperty
            self.first_obs[call_id] = i
            owner = self.owner.get(call_id)
            if owner is None:
                return  # an observation without its call: ToolCallMatchingProperty
            self.unanswered[owner] -= 1
            if not self.unanswered[owner]:  # the batch is whole: it and its observations join the view
                self._enter(owner)
                for c in self.calls[owner]:
                    self._enter(self.first_obs[c])
        else:
            self._enter(i)

    def _steps(self) -> bool:
        """agent_would_step on the prefix."""
        if self.last_role == "user":
            return True
        if self.last_role != "tool":
            return False
        return self.batch is None or all(c in self.answered for c in self.batch)

    def _text(self, forgotten: list[int], extends: bool) -> str:
        """The snapshot of the covered messages and `forgotten` (fed once each while the forgotten
        part only grows; the snapshot starts again where it does not)."""
        messages = self.session.messages
        base = len(self.covered)
        fed = self.snap_list[base:]  # the snapshot has seen covered + fed (fed: an earlier turn's forgotten messages)
        if extends and len(self.snap_list) >= base and forgotten[: len(fed)] == fed:
            new = forgotten[len(fed):]
        else:
            self.snapshot = _Snapshot()
            self.snap_list = []
            new = sorted({*self.covered, *forgotten})
        self.snapshot.advance([messages[k] for k in new])
        self.snap_list += new
        return self.snapshot.render()

    def _fast(self, i: int) -> Turn | None:
        from .policies.openhands_condenser import Event as ViewEvent
        from .policies.openhands_condenser import condensation

        p: CondenserParams = self.params
        has_summary = bool(self.generated)
        system_used = self.prompt_tokens if self.has_system else 0
        summary_used = self.summary_tokens if has_summary else 0
        used = system_used + summary_used + self.view_tokens
        n_view = self.view_events + self.has_system + has_summary
        active = len(self.generated)
        kept = self.system_count + len(self.inview)
        dropped = self.uncovered - len(self.inview)
        summarized = len(self.covered)
        sent_tokens = self.view_tokens
        events: list[Event] = []
        limit = self.token_limit
        if (limit is not None and used > limit) or n_view > p.max_size:
            view: list[Any] = [ViewEvent("system", "system", None)] if self.has_system else []
            per_event: list[int] = [self.prompt_tokens] if self.has_system else []
            first = self.covered[0] if has_summary else -1
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
                gone = [view[k] for k in outcome.forgotten]
                forgotten = sorted({e.message for e in gone if e.message is not None})
                forgot_summary = any(e.kind == "summary" for e in gone)
                if has_summary and not forgot_summary:
                    self.ok = False  # the earlier summary stays in the head: the reference step from here on
                    return None
                began = min(forgotten[:1] + (self.covered[:1] if forgot_summary else []))
                if self.talk_before[began] - bisect_left(self.covered, began) - bisect_left(self.inview, began):
                    self.ok = False  # the view left messages out ahead of the span: OpenHands puts the summary early (openhands_log)
                    return None
                what = []
                if "events" in outcome.reasons:
                    what.append(f"the view has {len(view)} events, over max_size={p.max_size}")
                if "tokens" in outcome.reasons:
                    what.append(f"its {sum(per_event):,} tokens exceed the token limit {limit:,}")
                why = " and ".join(what)
                extends = not forgotten or not self.covered or forgotten[0] > self.covered[-1]
                text = self._text(forgotten, extends)
                text_tokens_ = self.full.text(text)
                forgotten_tokens = sum(tokens[k] for k in forgotten)
                used = used - summary_used - forgotten_tokens + text_tokens_
                kept -= len(forgotten)
                summarized = len(self.covered) + len(forgotten)
                sent_tokens -= forgotten_tokens
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
        fits = used <= self.budget
        budget = self.budget

        def light() -> Plan:
            allot = min(self.prompt_tokens, budget)
            return light_plan(self.policy, {"system": allot, "events": budget - allot}, {"system": system_used, "events": used - system_used},
                          budget, used, fits)

        self.before = untrimmed_cuts(i, self.before, fits, events, light)
        not_sent = self.sums[i + 1] - self.system_role_tokens - sent_tokens
        return Turn(i, used, budget, kept, dropped, summarized, 0, fits, active, tuple(events), not_sent)


REPLAYERS: dict[str, type[_Replay]] = {
    "langchain-summarization": LangchainSummarizationReplay,
    "strands-summarizing": StrandsSummarizingReplay,
    "llamaindex-chat-summary-memory-buffer": LlamaindexSummaryReplay,
    "openhands-llm-summarizing": OpenhandsCondenserReplay,
}

