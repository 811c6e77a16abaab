"""missy's incremental replayers: the ContextManager's fresh tail and evictable prefix (`MissyReplay`)
and the MemoryConsolidator's pending messages (`ConsolidatorReplay`), carried from turn to turn.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...replay_contract import Event, Turn, _Replay, light_plan, untrimmed_cuts
from ...session import Session, Summary
from ...summarizers import Summarizer
from ..carried import IdPrefix
from ..common import tools_json
from ..pins_carried import carried_pins
from ..replay_common import _GrowingReplay
from ..replay_pairs import _PairSafety
from ..replay_recorded import _InForceTotal, _RecordedInForce, _RecordedShapes, recorded_events
from .consolidator import (
    RECENT_KEEP,
    ConsolidatorSettings,
    FactsSoFar,
    extract_key_facts,
    should_consolidate,
    threshold_usage,
)
from .context_manager import TokenBudget, enrich_system_prompt, format_summary


class MissyReplay(_GrowingReplay):
    """missy: the fresh tail of K history messages, the new user message, and the evictable prefix
    filled newest first until the first misfit. Token counts are never negative, so "the newest
    messages that fit, stopping at the first that does not" is the shortest suffix whose sum fits:
    one bisection over the prefix sums of the history's counts.

    The recorded summaries in force (`_RecordedInForce`) cover a prefix of the history, which is
    summarised; the history is what follows it, and each summary in force that no later one
    supersedes is sent where it fits. Where the recorded summaries do not cover a prefix of the
    file (`_RecordedShapes.why_not`), the turns from the first one covering a message of it are
    planned by the reference step. Pair safety is carried too (`_PairSafety`), except where a
    tool call id is on more than one call. So are pins (`pins_carried`, without pair safety):
    every history message counts in the history part, whose allotment is the pins' test."""

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        budget: TokenBudget = params
        _, self.memory_tokens, self.learnings_tokens, _ = enrich_system_prompt("", session.memory, session.learnings, budget, full.text)
        tools = tools_json(session)
        self.tools_usage = full.text(tools) if tools else 0
        self.allocation = {
            "system_reserve": budget.system_reserve,
            "tool_definitions_reserve": budget.tool_definitions_reserve,
            "memory": budget.memory_budget,
            "learnings": budget.learnings_budget,
            "history": budget.history_budget,
        }
        # The recorded summaries in force (`state()`): their covers take a prefix of the file's
        # messages out of the history, and missy sends each summary not superseded that fits.
        self.shapes = _RecordedShapes.of(session)
        self.first_covering = self.shapes.first_covering if self.shapes.why_not_for(self) else len(session.messages)
        self.recorded = _RecordedInForce(self.shapes)
        self.summary_size: dict[int, int] = {}
        self.total, self.history_budget, self.tail_count, self.trim_tail = budget.total, budget.history_budget, budget.fresh_tail_count, budget.trim_protected_tail
        self.fixed_parts = {"system_reserve": 0, "tool_definitions_reserve": self.tools_usage, "memory": self.memory_tokens,
                            "learnings": self.learnings_tokens}
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.fixed: tuple[int, int, bool] | None = None  # (system_tokens, fixed_usage, fixed_fit) as last read

    pair_safe_incremental = True
    pins_incremental = True
    recorded_summaries = "shaped"
    recorded_system_gaps = True

    def absorb(self, i: int) -> None:
        self._grow(i)
        if self.pairs is not None:
            self.pairs.grow(i)

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if (self.pair_safe and self.pairs is None) or self.first_covering <= self.recorded_until(i):
            return super().step(i)
        return self._fast(i)

    def _fast(self, i: int) -> Turn | None:
        P, tokens, history, n, hb = self.sums, self.tokens, self.history, self.tail_count, self.history_budget
        recorded = self.recorded
        until = self.recorded_until(i)
        recorded.update(i + 1, until)
        h = len(history)
        c = bisect_left(history, recorded.covered)  # history[:c] is summarised
        new = h > c and self.session.messages[history[-1]].role == "user"
        H = h - 1 if new else h  # the history before the new message
        E = H if n <= 0 else (H - n if H - c > n else c)  # evictable: history[c:E]; fresh tail: history[E:H]
        used = (tokens[history[-1]] if new else 0) + P[H] - P[E]
        tail_start = E
        if used > hb and self.trim_tail:
            # Oldest tail messages go until the rest fits: the first s whose sum from s on fits.
            s = min(bisect_left(P, P[E] + used - hb, E, H + 1), H)
            used -= P[s] - P[E]
            tail_start = s
        fitted: dict[int, tuple[int, int]] = {}  # summary -> (its tokens, the history tokens before it)
        for k in recorded.live:  # `continue`, not `break`: an oversized summary does not starve later ones
            t = self._summary_size(k)
            fitted[k] = (t, used)
            if used + t <= hb:
                used += t
        remaining = hb - used if used < hb else 0
        j = bisect_left(P, P[E] - remaining, c, E)  # history[j:E] fit, newest first; history[j - 1] is the cut
        used += P[E] - P[j]
        kept = self.system_count + (E - j) + (H - tail_start) + (1 if new else 0)
        not_sent = P[j] + P[tail_start] - P[E]
        events: list[Event] = []
        if self.shapes.sorted_starts:  # (a log without recorded summaries writes none)
            events += [self._recorded_event(k, i, c, fitted) for k in recorded.written(self.last_horizon, until)]
        if self.pairs is not None:  # pair safety drops the sent half of broken pairs: history[j:E], history[tail_start:h] are sent
            dropped = self.pairs.drops(j, E, tail_start, h)
            if dropped:
                unpaired = sum(tokens[history[k]] for k in dropped)
                used -= unpaired
                not_sent += unpaired
                kept -= len(dropped)
        pins = carried_pins(self)
        summarized = c
        if pins is not None:
            effect = pins.effect(h, [(j, E), (tail_start, h)], c, used, hb)
            used += effect.sent_change
            not_sent += effect.pushed_tokens - effect.added_tokens
            kept += effect.added - effect.pushed
            summarized -= effect.added_summarized
        fixed = self.fixed
        if fixed is None or fixed[0] != self.system_tokens:  # (a system message in the file changes the prompt)
            fixed = self.fixed = (self.system_tokens, self.fixed_usage, self.fixed_fit)
        total = fixed[1] + used
        fits = fixed[2] and used <= hb
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: light_plan(
            "missy", self.allocation, {**self.fixed_parts, "system_reserve": self.system_tokens, "history": used}, self.total, total, fits, "parts"))
        return Turn(i, total, self.total, kept, i + 1 - kept - summarized, summarized, 0, fits, 0, tuple(events), not_sent)

    def _summary_size(self, k: int) -> int:
        found = self.summary_size.get(k)
        if found is None:
            found = self.summary_size[k] = self.full.text(format_summary(self.session.summaries[k]))
        return found

    def _recorded_event(self, k: int, i: int, c: int, fitted: dict[int, tuple[int, int]]) -> Event:
        """The reference's compaction event for recorded summary k, written since the step before
        (`replay_contract._recorded_summary_event`): its covers are the prefix's first m messages,
        of which the history ones are summarised; the plan's decision on the summary itself."""
        m = self.recorded.span[k]
        hb = self.history_budget
        if k in self.recorded.superseded:
            decided = (Decision.DROPPED, "dropped: superseded by a later recorded summary, which covers every message of the file this one covers")
        else:
            t, before = fitted[k]
            if before + t > hb:
                decided = (Decision.DROPPED, f"dropped: {t:,} tokens did not fit in the {max(0, hb - before):,} left of the {hb:,}-token history budget")
            else:
                decided = (Decision.KEPT, f"kept: {t:,} tokens fit in the {hb - before:,} left of the {hb:,}-token history budget")
        summarized = bisect_left(self.history, m)
        return Event(i, "compaction", self.recorded.shapes.span_text(k, m, summarized, self.policy, decided))

    @property
    def fixed_usage(self) -> int:
        return self.system_tokens + self.tools_usage + self.memory_tokens + self.learnings_tokens

    @property
    def fixed_fit(self) -> bool:
        a = self.allocation
        return (self.system_tokens <= a["system_reserve"] and self.tools_usage <= a["tool_definitions_reserve"]
                and self.memory_tokens <= a["memory"] and self.learnings_tokens <= a["learnings"])


class ConsolidatorReplay(_Replay):
    """missy's MemoryConsolidator (the seed's key-fact summary; the pipeline is replayed from
    scratch): the messages not yet consolidated and their token sums, carried from turn to turn;
    at a consolidation only the messages since the last one are read.

    The state is rebuilt from the summary in force after any turn the reference step planned.

    Before the first consolidation the recorded summaries in force are the earlier consolidations
    (`consolidator.plan_records`: each sent, the messages of their union out of what is measured
    and sent). Each covers a prefix of the file (`_RecordedShapes`), so their union is the
    messages [0, lo) and a summary coming into force moves the pending messages' start: the ones
    before it leave the head of the list (each once). Where they do not cover a prefix of the
    file, the turns from the first one covering a message of it on go to the reference step.

    Pair safety is carried (`_PairSafety`, where every tool call id is on one call): each
    consolidation covers the oldest pending messages, so the messages sent are the history from the
    first pending one on (at a consolidation, the recent ones kept); a dropped message takes its
    measured tokens off the count (`checks.drop_messages` reads the plan's sent tokens, which are
    those, not the content's count the consolidator adds up).

    Pins are carried (`pins_carried`, without pair safety): what is sent is the pending messages, a
    run at the end of the history (after a consolidation, the recent ones), so the pins add covered
    messages at their measured tokens and push out the oldest pending ones, after the trigger."""

    recorded_summaries = "shaped"
    recorded_system_gaps = True
    unique_ids = True
    pair_safe_incremental = True
    pins_incremental = True

    @classmethod
    def scratch_reason(cls, session: Session, params: Any) -> str | None:
        marker = "[Session context consolidated]"
        if params.pipeline:
            return "the consolidation pipeline"
        if session.system_prompt.startswith(marker) or any(m.role == "system" and m.text.startswith(marker) for m in session.messages):
            return "a system prompt that reads like a consolidation"
        return None

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        settings: ConsolidatorSettings = params
        self.chars = full.tokenizer.name == "chars"
        self.raw = full.message_tokens
        # The recorded summaries in force before the first consolidation: they cover the file's
        # messages [0, lo); their texts are the earlier consolidations.
        self.shapes = _RecordedShapes.of(session) if session.summaries else None
        self.recorded = _RecordedInForce(self.shapes) if self.shapes is not None else None
        self.first_covering = self.shapes.first_covering if self.shapes is not None and self.shapes.why_not_for(self) else len(session.messages)
        self.lo = 0
        self.earlier_raw = self.earlier_sent = 0
        texts = [x.text for x in session.summaries]
        self.earlier_raw_total = _InForceTotal(lambda k: len(texts[k]) if self.chars else full.text(texts[k]))
        self.earlier_sent_total = _InForceTotal(lambda k: self._text_tokens(texts[k]))
        self.lo_total = _InForceTotal(lambda k: self.shapes.lo[k] if self.shapes is not None else 0, max)
        self.history_before = [0]  # history_before[k]: the non-system messages among the first k
        ids = [m.id for m in session.messages]
        # Ids shared by several messages make "covered" a matter of ids, not messages: from scratch.
        # A system prompt that reads like a consolidation would be taken for it by the trigger: from scratch.
        marker = "[Session context consolidated]"
        odd_prompt = session.system_prompt.startswith(marker) or any(m.role == "system" and m.text.startswith(marker) for m in session.messages)
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.history_count = 0  # the non-system messages so far (with `pairs`)
        self.usable = not settings.pipeline and (not pair_safe or self.pairs is not None) and len(set(ids)) == len(ids) and not odd_prompt
        self.threshold = int(settings.max_tokens * settings.threshold_pct)
        self.allocation = {"below_threshold": self.threshold, "headroom": settings.max_tokens - self.threshold}
        self.synced_to = -1  # the state holds messages 0..synced_to
        self.system_count = 0
        # Each message's tokens as the plan measures it (`_measured`): the system messages', all
        # messages' so far and the pending ones', for the tokens not sent.
        self.system_t = self.seen_t = self.pending_t = 0
        self.system_texts: list[str] = [session.system_prompt] if session.system_prompt else []
        self.system_tokens = self._text_tokens(self.system_texts[0]) if self.system_texts else 0
        self.covered: set[str] = set()
        self.covered_count = 0
        self.pending: list[int] = []  # non-system messages not consolidated yet, oldest first
        self.pending_raw = 0
        self.pending_sent = 0
        self.sent_of: dict[int, int] = {}  # a pending message's tokens as sent
        #: A pending message's content as the consolidation reads it (read once, when it came in).
        self.content_of: dict[int, str] = {}
        #: The latest consolidation and its covers in order, without repeats (what the next one covers first).
        self.cover_order: tuple[Summary | None, dict[str, None], list[str]] | None = None
        #: The latest consolidation and the facts the next one carries over from it.
        self.facts_so_far: tuple[Summary | None, FactsSoFar] | None = None

    def _text_tokens(self, text: str) -> int:
        return len(text) // 4 if self.chars else self.full.text(text)

    def _measured(self, k: int) -> int:
        return self.raw[k] // 4 if self.chars else self.raw[k]

    def _add(self, i: int) -> None:
        m = self.session.messages[i]
        t = self._measured(i)
        self.seen_t += t
        if m.role == "system":
            self.system_count += 1
            self.system_t += t
            if m.text:
                self.system_texts.append(m.text)
                self.system_tokens = self._text_tokens("\n\n".join(self.system_texts))
        elif (m.id in self.covered) if self.generated else (i < self.lo):
            self.covered_count += 1
        else:
            self.pending.append(i)
            self.pending_raw += self.raw[i]
            self.pending_t += t
            value = m.openai_content()
            text = str(value)
            self.content_of[i] = text if value is not None else ""
            self.sent_of[i] = sent = self._text_tokens(text)
            self.pending_sent += sent

    def _resync(self, i: int) -> None:
        """The state after messages 0..i-1 with the generated summary in force."""
        self.covered = set(self.generated[-1].covers) if self.generated else set()
        self.covered_count = 0
        self.pending, self.pending_raw, self.pending_sent = [], 0, 0
        self.content_of = {}
        self.system_count = self.system_t = self.seen_t = self.pending_t = 0
        self.system_texts = [self.session.system_prompt] if self.session.system_prompt else []
        self.system_tokens = self._text_tokens(self.system_texts[0]) if self.system_texts else 0
        for k in range(i):
            self._add(k)

    def absorb(self, i: int) -> None:
        self.history_before.append(self.history_before[-1] + (self.session.messages[i].role != "system"))
        if self.pairs is not None:
            self.pairs.grow(i)
            self.history_count += self.session.messages[i].role != "system"
        if self.usable and self.synced_to == i - 1:  # else the next step rebuilds the state
            self._add(i)
            self.synced_to = i

    def step(self, i: int) -> Turn:
        self.absorb(i)
        if not self.usable or (not self.generated and self.first_covering <= self.recorded_until(i)):
            self.synced_to = -2  # the reference may write a consolidation: rebuild the state from it
            return super().step(i)
        if self.synced_to != i:
            self._resync(i)
            self._add(i)
            self.synced_to = i
        if self.recorded is not None and not self.generated:
            self._follow_recorded(i)
        if self.pairs is not None and self.pending:
            first = self.pairs.position[self.pending[0]]
            if self.history_count - first != len(self.pending):  # the pending messages are not the history's end: the reference
                self.synced_to = -2
                return super().step(i)
        return self._fast(i)

    def _follow_recorded(self, i: int) -> None:
        """The recorded summaries in force at step `i`: their texts, and the pending messages they cover taken out."""
        recorded = self.recorded
        assert recorded is not None
        if not recorded.update(i + 1, self.recorded_until(i)):
            return
        self.earlier_raw = self.earlier_raw_total.read(recorded)
        self.earlier_sent = self.earlier_sent_total.read(recorded)
        lo = self.lo_total.read(recorded)
        if lo < self.lo:  # (what is in force shrank: not in a replay's order) the state again from the start
            self.lo = lo
            self._resync(i)
            self._add(i)
            return
        self.lo = lo
        cut = bisect_left(self.pending, lo)
        for k in self.pending[:cut]:  # each pending message is taken out once
            self.covered_count += 1
            self.pending_raw -= self.raw[k]
            self.pending_t -= self._measured(k)
            self.pending_sent -= self.sent_of[k]
            del self.content_of[k]
        del self.pending[:cut]

    def _recorded_events(self, i: int) -> list[Event]:
        """The reference's compaction events for the recorded summaries written since the step
        before (not at a consolidation): each is an earlier consolidation, sent, and the messages
        it covers (the prefix's first m) are summarised, system messages aside."""
        recorded = self.recorded
        if recorded is None or self.generated:
            return []
        return recorded_events(self, recorded, i, lambda k, m: (self.history_before[m], (Decision.KEPT, "kept: an earlier consolidation")))

    def _unpaired(self, sent: list[int]) -> list[int]:
        """The session indices pair safety drops when the messages `sent` (the history's last ones) are sent."""
        if self.pairs is None or not sent:
            return []
        h = self.history_count
        j = h - len(sent)
        return [sent[k - j] for k in sorted(self.pairs.drops(j, h, h, h))]

    def _fast(self, i: int) -> Turn:
        settings: ConsolidatorSettings = self.params
        if self.generated:
            earlier: Iterable[str] = [self.generated[-1].text]
            earlier_raw = sum(len(t) if self.chars else self.full.text(t) for t in earlier)
            earlier_sent = self._text_tokens(self.generated[-1].text)
        else:  # the recorded summaries in force (`_follow_recorded`); their texts are read only at a consolidation
            earlier_raw, earlier_sent = self.earlier_raw, self.earlier_sent
            earlier = _Texts(self.session, self.recorded.in_force if self.recorded is not None else [])
        current = (self.pending_raw + earlier_raw) // 4 if self.chars else self.pending_raw + earlier_raw
        trigger = should_consolidate(current, settings)
        events: list[Event] = []
        active = len(self.generated)
        consolidate = trigger and len(self.pending) > RECENT_KEEP
        if not consolidate:
            events = self._recorded_events(i)
        if consolidate:
            messages = self.session.messages
            # The facts carried over: kept from this replay's consolidation before, else read from the earlier texts.
            carried = self.facts_so_far
            if not (self.generated and carried is not None and carried[0] is self.generated[-1]):
                carried = (None, FactsSoFar(earlier))
            older, recent = self.pending[:-RECENT_KEEP], self.pending[-RECENT_KEEP:]
            content_of = self.content_of
            text = carried[1].consolidate(extract_key_facts([messages[k] for k in older], [content_of.pop(k) for k in older]))
            recent_sent = sum(self.sent_of[k] for k in recent)
            used = self.system_tokens + self._text_tokens(text) + recent_sent
            kept = self.system_count + RECENT_KEEP
            summarized = self.covered_count + len(older)
            ids = [messages[k].id for k in older]
            # The covers so far in the order they were covered, as the reference (policies' `compact`) keeps them:
            # carried from the consolidation before, so that each one reads only the ids it adds, and each
            # summary's covers a view of the one growing list (`IdPrefix`), not a copy of all the covers so far.
            order = self.cover_order
            if self.generated:
                if order is None or order[0] is not self.generated[-1]:  # (a consolidation the reference step wrote)
                    covers_so_far = dict.fromkeys(self.generated[-1].covers)
                    order = (self.generated[-1], covers_so_far, list(covers_so_far))
            else:  # the recorded summaries in force, read once: from now on the consolidation stands for them
                summaries = self.session.summaries
                in_force = self.recorded.in_force if self.recorded is not None else ()
                first = self.session.summaries_cover_first
                if all(first[k] for k in in_force):  # each covers the file's first messages: together, the longest one's
                    longest = max((len(summaries[k].covers) for k in in_force), default=0)
                    covers_so_far = dict.fromkeys(map(attrgetter("id"), self.session.messages[:longest]))  # (not every id's column)
                else:
                    covers_so_far = dict.fromkeys(chain.from_iterable(summaries[k].covers for k in in_force))
                order = (None, covers_so_far, list(covers_so_far))
                self.covered = set(covers_so_far)
            _, covers_so_far, cover_list = order  # cover_list is list(covers_so_far)
            before = len(cover_list)
            covers_so_far.update(dict.fromkeys(ids))
            covers: Sequence[str]
            if len(covers_so_far) == before + len(ids):  # none covered before, none twice: the list grows by them
                cover_list.extend(ids)
                covers = IdPrefix(cover_list, len(cover_list))
            else:
                covers = tuple(cover_list) + tuple(ids)
                cover_list = list(covers_so_far)
            events.append(Event(i, "consolidation", f"consolidated {len(ids)} messages at {current:,} estimated tokens"))
            summary = Summary(text=text, messages_covered=len(covers), covers=covers)  # type: ignore[arg-type]
            self.generated.append(summary)
            self.cover_order = (summary, covers_so_far, cover_list)
            self.facts_so_far = (summary, carried[1])
            self.covered.update(ids)
            self.covered_count += len(older)
            self.pending = recent
            self.pending_raw = sum(self.raw[k] for k in recent)
            self.pending_t = sum(self._measured(k) for k in recent)
            self.pending_sent = recent_sent
        else:
            used = self.system_tokens + earlier_sent + self.pending_sent
            kept = self.system_count + len(self.pending)
            summarized = self.covered_count
        not_sent = self.seen_t - self.system_t - self.pending_t
        unpaired = self._unpaired(self.pending)
        for x in unpaired:  # `checks.drop_messages`: the plan's sent tokens of a kept message are its measured ones
            t = self._measured(x)
            used -= t
            not_sent += t
        kept -= len(unpaired)
        pins = carried_pins(self, tokens=lambda: [self._measured(k) for k in range(len(self.session.messages))])
        if pins is not None:  # after the trigger; what is sent is the pending messages, history[start:h]
            h = self.history_before[i + 1]
            start = h - len(self.pending)
            effect = pins.effect(h, [(start, h)], start, used, settings.max_tokens)
            used += effect.sent_change
            kept += effect.added - effect.pushed
            summarized -= effect.added_summarized
            not_sent += effect.pushed_tokens - effect.added_tokens
        fits = used <= settings.max_tokens
        self.before = untrimmed_cuts(i, self.before, fits, events, lambda: light_plan(
            "missy-consolidator", self.allocation, threshold_usage(used, self.threshold), settings.max_tokens, used, fits))
        return Turn(i, used, settings.max_tokens, kept, i + 1 - kept - summarized, summarized, 0, fits, active, tuple(events), not_sent)


class _Texts:
    """The texts of the recorded summaries `ks`, iterated only when read (at a consolidation)."""

    def __init__(self, session: Session, ks: list[int]) -> None:
        self.session, self.ks = session, ks

    def __iter__(self) -> Iterator[str]:
        return (self.session.summaries[k].text for k in self.ks)


REPLAYERS: dict[str, type[_Replay]] = {"missy": MissyReplay, "missy-consolidator": ConsolidatorReplay}
