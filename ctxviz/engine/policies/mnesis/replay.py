"""mnesis' incremental replayer: the raw messages after the compaction boundary and their prefix sums,
carried from turn to turn; a compaction's fallback summary reads only the newly covered messages.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, Plan
from ...replay_contract import Event, Turn, _Replay, light_plan, untrimmed_cuts
from ...session import Session, Summary
from ...summarizers import Summarizer
from ...tokenizers import HEURISTICS
from ..carried import IdPrefix
from ..pins_carried import NO_EFFECT, carried_pins
from ..replay_common import _GrowingReplay
from ..replay_pairs import _PairSafety
from ..replay_recorded import _RecordedInForce, _RecordedShapes, recorded_events
from .context_builder import MnesisBudget, model_info, tool_parts


class MnesisReplay(_GrowingReplay):
    """mnesis: the raw messages not compacted are the history after a boundary, so the newest-first
    fill is one bisection over the history's prefix sums; a compaction's fallback summary reads only
    the newest covered messages (its file-id footer is gathered as messages are covered). A tool
    output carried in its call's ToolPart (counted 0) is a unit with that call: the cut moves past it.
    The raw messages sent are one run of the history, so pair safety is carried (`_PairSafety`).

    Before the first compaction, the summaries the file records are in force (`state()`): mnesis
    charges and sends every one, and their covers (Claude Code's compactions: a prefix of the
    file, `_RecordedShapes`) are the compacted messages, so the history after them is the raw
    part. Where the recorded summaries do not cover a prefix of the file (`why_not`), the turns
    from the first one covering a message of it are planned by the reference step.

    Pins are carried (`pins_carried`, without pair safety): every history message counts in the
    messages part, whose allotment is what the system messages and the summary leave of the
    usable window; the pins change the turn after the compaction trigger read it."""

    recorded_summaries = "shaped"
    recorded_system_gaps = True
    unique_ids = True
    pair_safe_incremental = True
    pins_incremental = True

    def __init__(self, session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> None:
        super().__init__(session, policy, params, full, summarizer, pair_safe)
        budget: MnesisBudget = params
        info = model_info(session.model)
        self.limit = budget.context_limit if budget.context_limit is not None else info.context_limit
        self.reserved = budget.reserved_output_tokens if budget.reserved_output_tokens is not None else info.max_output_tokens
        self.usable = self.limit - self.reserved - budget.compaction_buffer
        self.soft = int(self.usable * 0.6)
        self.latest = budget.always_include_latest
        self.allocation_fixed = {"reserved_output": self.reserved, "compaction_buffer": budget.compaction_buffer}
        ids = [m.id for m in session.messages]
        self.pairs = _PairSafety.of(session) if pair_safe else None
        self.ok = len(set(ids)) == len(ids) and (not pair_safe or self.pairs is not None)
        # The recorded summaries in force before the first compaction (`_RecordedInForce`).
        self.shapes = _RecordedShapes.of(session) if session.summaries else None
        self.recorded = _RecordedInForce(self.shapes) if self.shapes is not None else None
        self.first_covering = self.shapes.first_covering if self.shapes is not None and self.shapes.why_not_for(self) else len(session.messages)
        self.recorded_tokens: dict[int, int] = {}  # a recorded summary's count (mnesis' heuristic)
        self.in_force_sums = [0]  # in_force_sums[j]: the counts of the first j recorded summaries by their start
        self.system_indices: list[int] = []  # session indices of the system messages so far
        self.covered = 0  # the first `covered` history messages are compacted (in phase with a generated summary)
        self.synced_summaries = 0  # len(generated) the state reflects
        self.file_ids: set[str] = set()
        self.filed = 0  # history messages whose file ids are in `file_ids`
        self.summary_tokens = 0
        # mnesis' unit is its message: a tool message whose output an earlier message's ToolPart
        # holds (counted 0) is kept only with that message.
        self.carrier = tool_parts(session).carrier
        self.carried: list[bool] = []  # per history message

    def _grow(self, i: int) -> None:
        super()._grow(i)
        if self.pairs is not None:
            self.pairs.grow(i)
        if self.session.messages[i].role != "system":
            self.carried.append(self.carrier[i] is not None)
        else:
            self.system_indices.append(i)

    def absorb(self, i: int) -> None:
        self._grow(i)

    def step(self, i: int) -> Turn:
        self._grow(i)
        if not self.ok or (not self.generated and self.first_covering <= self.recorded_until(i)):
            return super().step(i)
        if self.synced_summaries != len(self.generated) and not self._sync():
            self.ok = False
            return super().step(i)
        return self._fast(i)

    def _sync(self) -> bool:
        """Take over a summary the reference step generated: it covers every history message before
        its boundary (mnesis condenses the earlier node with the new span)."""
        summary = self.generated[-1]
        position = {message_id: k for k, message_id in enumerate(self.history_ids)}
        found = [position.get(c) for c in summary.covers]
        if any(k is None for k in found):
            return False
        covered = max(found, default=-1) + 1  # type: ignore[type-var]
        if covered != len(found):
            return False
        self.covered = covered
        self.summary_tokens = HEURISTICS["mnesis"].count(summary.text)
        self.synced_summaries = len(self.generated)
        return True

    def _in_force(self, i: int) -> int:
        """Before the first compaction: bring the recorded summaries in force up to this step, set
        `covered` and `summary_tokens` from them (every one in force is charged; their covers are
        the prefix [0, C) of the file), and return C (0: none covers a message of the file)."""
        rec = self.recorded
        if rec is None:
            return 0
        if rec.update(i + 1, self.recorded_until(i)):
            # Those in force are the first j by their start: their counts summed in that order, once.
            sums, order = self.in_force_sums, rec.shapes.order
            while len(sums) <= rec.j:
                sums.append(sums[-1] + self._recorded_tokens(order[len(sums) - 1]))
            self.summary_tokens = sums[rec.j]
        self.covered = bisect_left(self.history, rec.covered)
        return rec.covered

    def _recorded_tokens(self, k: int) -> int:
        found = self.recorded_tokens.get(k)
        if found is None:
            found = self.recorded_tokens[k] = HEURISTICS["mnesis"].count(self.session.summaries[k].text)
        return found

    def _fast(self, i: int) -> Turn:
        recorded_end = 0 if self.generated else self._in_force(i)  # recorded summaries cover the file's [0, recorded_end)
        P, h, c0 = self.sums, len(self.history), self.covered
        available = self.usable - self.system_tokens - self.summary_tokens
        j = bisect_left(P, P[h] - available, c0, h) if available >= 0 else h  # history[j:h] fit, newest first
        while j < h and self.carried[j]:  # a carried output without its message's call is not a unit
            j += 1
        used = P[h] - P[j]
        included = h - j
        if not included and self.latest and h > c0:
            start = h - 1
            while start > c0 and self.carried[start]:
                start -= 1
            if not self.carried[start]:  # (else every raw message left is an output whose call was compacted: no unit)
                used, included = P[h] - P[start], h - start
        estimate = self.system_tokens + self.summary_tokens + used
        unpaired, kept = 0, self.system_count + included
        if self.pairs is not None:  # pair safety, after the build and the trigger: history[h - included:h] is sent
            dropped = self.pairs.drops(h - included, h, h, h)
            unpaired = sum(self.tokens[self.history[k]] for k in dropped)
            kept -= len(dropped)
        sent_summary = self.summary_tokens  # this request's summary: a compaction below replaces it for the next one
        usable = self.usable
        fits = estimate - unpaired <= usable  # the reserves are never negative: the parts' test is the total's
        summarized = c0
        pins = carried_pins(self)
        effect = NO_EFFECT if pins is None else pins.effect(h, [(h - included, h)], c0, used, usable - self.system_tokens - sent_summary)
        active = len(self.generated)
        events: list[Event] = []
        if usable > 0 and estimate >= self.soft and len(self.users) > 2:
            boundary = self.users[-2]
            b = bisect_left(self.history, boundary)  # history[:b] is before the boundary
            if b > c0:
                kind = "hard_threshold" if estimate >= usable else "compaction"
                events.append(Event(i, kind, f"{estimate:,} tokens >= the {'hard' if kind == 'hard_threshold' else 'soft'} threshold "
                                             f"({usable if kind == 'hard_threshold' else self.soft:,}): {b - c0} messages compacted"))
                # A system message a recorded summary covers is among what mnesis condenses (not among the covers).
                system = self.system_indices[: bisect_left(self.system_indices, min(recorded_end, boundary))]
                text = self._fallback(b, max(1, usable // 10), system)
                # The covers are the first b history ids: a view of the growing list, not a copy per compaction.
                self.generated.append(Summary(text=text, messages_covered=b + len(system), covers=IdPrefix(self.history_ids, b)))  # type: ignore[arg-type]
                self.covered = b
                self.summary_tokens = HEURISTICS["mnesis"].count(text)
                self.synced_summaries = len(self.generated)
        if not self.generated and self.recorded is not None:  # the recorded summaries written since the step before
            events += self._recorded_events(i)
        if effect.added:  # the pins, after the trigger (which read the turn without them)
            used += effect.sent_change
            estimate += effect.sent_change
            kept += effect.added - effect.pushed
            summarized -= effect.added_summarized
            fits = estimate <= usable

        def overflow() -> Plan:
            system, summaries = self.system_tokens, sent_summary
            allocation = {**self.allocation_fixed, "system": system, "summaries": summaries, "messages": usable - system - summaries}
            usage = {"reserved_output": 0, "compaction_buffer": 0, "system": system, "summaries": summaries, "messages": used - unpaired}
            return light_plan("mnesis", allocation, usage, self.limit, estimate - unpaired, fits, "parts")

        self.before = untrimmed_cuts(i, self.before, fits, events, overflow)
        return Turn(i, estimate - unpaired, self.limit, kept, i + 1 - kept - summarized, summarized, 0, fits, active, tuple(events),
                    P[h] - used + unpaired + effect.pushed_tokens - effect.pushed_sent)

    def _recorded_events(self, i: int) -> list[Event]:
        """The reference's compaction events for the recorded summaries written since the step
        before (`replay_contract._recorded_summary_event`): each one's covers are the prefix's
        first m messages, of which the history ones are summarised; mnesis sends every summary."""
        rec = self.recorded
        assert rec is not None
        return recorded_events(self, rec, i, lambda k, m: (bisect_left(self.history, m), (
            Decision.KEPT, f"kept: summaries are always sent first and charged without a fit check ({self._recorded_tokens(k):,} tokens)")))

    def _fallback(self, covered: int, budget_tokens: int, system: list[int]) -> str:
        """`summarizers.mnesis_fallback` over the first `covered` history messages (and the
        `system` messages among them), the history's file ids gathered once per message."""
        messages = self.session.messages
        for k in range(self.filed, covered):
            text = messages[self.history[k]].text
            if "file_" in text:  # what the pattern needs before it can match
                self.file_ids.update(FILE_ID_RE.findall(text))
        self.filed = max(self.filed, covered)
        header = "[CONTEXT TRUNCATED \u2014 DETERMINISTIC FALLBACK]\n\n## Kept Messages\n\n"
        file_ids = sorted(self.file_ids.union(*(FILE_ID_RE.findall(messages[k].text) for k in system)))
        footer = f"\n\n[LCM File IDs: {', '.join(file_ids)}]" if file_ids else ""
        room = budget_tokens * 4 - len(header) - len(footer)
        kept: list[str] = []
        for index in _newest_first(self.history, covered, system):
            m = messages[index]
            line = f"[{'USER' if m.role == 'user' else 'ASSISTANT'}]: {m.text[:500]}"
            if len(line) + 1 > room:
                break
            kept.append(line)
            room -= len(line) + 1
        kept.reverse()
        return header + "\n".join(kept) + footer


def _newest_first(history: list[int], covered: int, system: list[int]) -> Iterator[int]:
    """The session indices of history[:covered] and of the `system` messages among them (rare: the
    system messages a recorded summary covers), newest first, read only as far as the caller goes."""
    s = len(system) - 1
    for k in range(covered - 1, -1, -1):
        index = history[k]
        while s >= 0 and system[s] > index:
            yield system[s]
            s -= 1
        yield index
    yield from reversed(system[: s + 1])


FILE_ID_RE = re.compile(r"\bfile_[0-9a-fA-F]{8,32}\b")


REPLAYERS: dict[str, type[_Replay]] = {"mnesis": MnesisReplay}
