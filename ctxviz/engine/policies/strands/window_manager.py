"""The agent's life under Strands' SlidingWindowConversationManager (strands-agents 1.62.0), call by
call: the history as the agent mutated it, `apply_management` after each invocation (and before
model calls with `per_turn`), proactive compression, and overflow recovery (`reduce_context`:
the oldest tool results cut, then the oldest messages trimmed), each message's fate recorded
(`_Manager`). sliding_window.py plans from it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision
from ...session import Session
from ...wording import noun
from .messages import (
    StrandsMessage,
    block_tokens,
    check_manager_params,
    find_valid_trim_point,
    held,
    is_pinned,
)

PRESERVE_CHARS = 200  # _PRESERVE_CHARS
_MEMBERS, _TOKENS = attrgetter("members"), attrgetter("tokens")
TRUNCATION_MARKER = "... [truncated:"


def truncate_text(text: str) -> str:
    """_truncate_tool_results' text cut: first and last 200 characters around a notice."""
    removed = len(text) - 2 * PRESERVE_CHARS
    return f"{text[:PRESERVE_CHARS]}...\n\n... [truncated: {removed} chars removed] ...\n\n...{text[-PRESERVE_CHARS:]}"


def image_placeholder(image: dict[str, Any]) -> str:
    """_image_placeholder: `[image: <format>, <bytes> bytes]`."""
    return f"[image: {image.get('format', 'unknown')}, {image.get('source', {}).get('size', 0)} bytes]"


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class SlidingWindowParams:
    """SlidingWindowConversationManager's arguments, plus the model's context_window_limit."""

    window_size: int = field(default=40, metadata=_help(unit="messages", text="Maximum number of Strands messages kept in the history (0: every unpinned message is removed)", min=0))
    should_truncate_results: bool = field(default=True, metadata=_help("On a context overflow, cut the oldest tool results (first and last 200 characters) before trimming messages"))
    pin_first: int | None = field(default=None, metadata=_help(unit="messages", text="Messages at the start pinned at the first reduction, never evicted", min=0))
    proactive_compression: float | None = field(default=None, metadata=_help("compression_threshold: trim before the model call when the estimate reaches this share of the window (Strands' True = 0.7; none: off)", min=0.01, max=1.0, step=0.05))
    context_window_limit: int | None = field(default=None, metadata=_help(unit="tokens", text="The model's context window (default: ctxviz's model catalogue, else Strands' 200,000)", min=1, step=1000))
    per_turn: int = field(default=0, metadata=_help("When the window applies: 0 (False) at the end of each invocation; 1 (True) before every model call; N before every N-th", min=0))
    replay_history: bool = field(default=True, metadata=_help("ctxviz option: replay the agent call by call, keeping what each call trimmed or cut, as the history grew (on: a full log); off: the file is agent.messages as it stands"))

    def __post_init__(self) -> None:
        if self.per_turn < 0:
            raise ValueError(f"per_turn must be a positive integer, True (1), or False (0), got {self.per_turn}")
        if self.window_size < 0:
            raise ValueError(f"window_size must be a non-negative integer, got {self.window_size}")
        check_manager_params(self)


class _Manager:
    """The manager's state over one plan: the messages it holds and what it did to each."""

    def __init__(self, session: Session | None, params: SlidingWindowParams, counts: TokenCounts) -> None:
        """A manager holding the session's Strands messages (`session` None: none, and no summary,
        for a replay of the agent's life, which `take`s them one by one)."""
        self.params = params
        self.counts = counts
        if session is None:
            self.system, self.summary, self.covered = [], None, frozenset()
            self.messages: list[StrandsMessage] = []
            self.owners: list[list[int]] = []
            self.held = 0
        else:
            start = held(session, counts)  # the session's Strands messages, made once per session and counting
            self.system, self.summary, self.covered = list(start.system), start.summary, start.covered
            self.messages = list(start.messages)
            # Which ctxviz message each content block came from, to map cut blocks back (-1: the summary).
            self.owners = list(start.owners)
            #: The tokens of the messages held, kept as they change (a replay reads it at every step).
            self.held = start.tokens
        self.pin_applied = False
        self.summary_removed = ""
        self.removed: dict[int, tuple[str, str]] = {}  # index -> reason, reason code
        self.cut: dict[int, tuple[Decision, str]] = {}
        self.sent_tokens: dict[int, int] = {}
        self.notes: list[str] = []
        #: Every removal (index, DROPPED) and cut (index, TRUNCATED or REPLACED), in order: what a replay reads back.
        self.journal: list[tuple[int, Decision]] | None = []  # None: nobody reads it back (a plan)

    def holding(self) -> int:
        return self.held

    def history(self, messages: list[StrandsMessage], owners: list[list[int]]) -> None:
        """Hold these messages (and their blocks' owners) instead."""
        self.messages, self.owners = messages, owners
        self.held = sum(m.tokens for m in messages)

    # The agent's life (replay_history): `take` each Strands message in order, then `call` once
    # more for the request the plan shows. `fixed` (system prompt and tool specs) and `limit` are
    # set by the caller before the first call.
    fixed = 0
    limit = 1
    calls = 0  # model call attempts, retries included: per_turn counts them
    rounds = 0  # overflow recoveries (reduce_context(e))
    recovered_at = 0  # model calls that needed at least one
    managed = 0  # apply_management runs
    since = 0  # Strands messages taken since apply_management last ran
    failed = ""  # why apply_management could not trim, the last time it could not
    raised = ""  # why Strands raised ContextWindowOverflowException, the last time it did
    proactive = ""  # what proactive compression did, the last time it ran

    def take(self, sm: StrandsMessage, owners: list[int]) -> None:
        """The agent appends a message: an assistant message is the answer of a model call, so the
        call is made first (on the history before it); a final reply ends an invocation, and
        apply_management runs after it."""
        if sm.role == "assistant":
            p = self.params
            if p.proactive_compression is None and not p.per_turn and self.fixed + self.held <= self.limit:
                self.calls += 1  # `call`'s one attempt, which neither hook nor an overflow changes
            else:
                self.call(f"at the model call answered by #{sm.members[0]}")
        self.messages.append(sm)
        self.owners.append(owners)
        self.held += sm.tokens
        self.since += 1
        if sm.role == "assistant" and not sm.has("toolUse"):
            self.manage()

    def manage(self) -> None:
        """apply_management: reduce_context (no error) when the history is over window_size."""
        ws = self.params.window_size
        self.managed += 1
        self.since = 0
        if len(self.messages) > ws:
            if self.journal is None and ws and not self.params.pin_first and self._trim_window(ws):
                return
            outcome = self.reduce_context(None, f"outside the newest {ws} messages (window_size={ws})" if ws else "window_size=0")
            if outcome not in ("trimmed", "truncated"):
                self.failed = f"apply_management could not trim ({outcome}): Strands logs a warning and keeps the messages"

    _outside: tuple[str, str] | None = None  # apply_management's reason for what is outside the window

    def _trim_window(self, ws: int) -> bool:
        """apply_management's `reduce_context` over the window, as `reduce_context(None, ...)` then
        `_remove` do it, for a plan (no journal) with nothing pinned and a valid trim point: a
        plan runs it once per invocation, over 10,000 times in a 100,000-message session, and a
        re-plan after window_size moved runs them all again. False: nothing done (the general path)."""
        msgs = self.messages
        start = len(msgs) - ws
        trim = find_valid_trim_point(msgs, start)
        if trim >= len(msgs):
            return False
        outside = self._outside
        if outside is None:
            outside = self._outside = (f"dropped: outside the newest {ws} messages (window_size={ws})", "outside_window")
        within = outside
        if trim > start:
            target = f"message #{msgs[trim].members[0]}" if msgs[trim].members else "the summary message"
            within = (f"dropped: inside the newest {ws} messages, but Strands trims on to {target}, the first user message from "
                      "there that is no tool result and no tool call without its result", "start_rule")
        removed = self.removed
        if self.summary is None:  # every message held has members: their indices, outside then inside the window
            edge = min(start, trim)
            removed.update(zip(chain.from_iterable(map(_MEMBERS, msgs[:edge])), repeat(outside)))
            removed.update(zip(chain.from_iterable(map(_MEMBERS, msgs[edge:trim])), repeat(within)))
            self.held -= sum(map(_TOKENS, msgs[:trim]))
        else:
            gone = 0
            for i in range(trim - 1, -1, -1):  # newest first, as `_remove`
                sm = msgs[i]
                why = within if i >= start else outside
                if sm.members:
                    for index in sm.members:
                        removed[index] = why
                else:
                    self.summary_removed = why[0]
                gone += sm.tokens
            self.held -= gone
        del msgs[:trim]
        del self.owners[:trim]
        return True

    def call(self, where: str) -> None:
        """One model call as the agent makes it: each attempt fires the BeforeModelCallEvent hooks
        (proactive compression, then per_turn's count), and an attempt that overflows is followed
        by one reduce_context(e) and a retry, until the request fits or Strands raises."""
        p, limit = self.params, self.limit
        recovered = False
        while True:
            self.calls += 1
            estimate = self.fixed + self.holding()
            if p.proactive_compression is not None and estimate / limit >= p.proactive_compression:
                why = (f"proactive compression {where}: the estimated {estimate:,} tokens are {estimate / limit:.0%} of the "
                       f"{limit:,}-token window, at least compression_threshold {p.proactive_compression:g}")
                outcome = self.reduce_context(None, why)
                self.proactive = why + (f"; {outcome}" if outcome not in ("trimmed", "truncated") else "; Strands trimmed once")
            if p.per_turn and self.calls % p.per_turn == 0:
                self.manage()
            estimate = self.fixed + self.holding()
            if estimate <= limit:
                break
            overflow = f"the context overflowed {where} ({estimate:,} estimated tokens > context_window_limit {limit:,})"
            outcome = self.reduce_context(overflow, overflow)
            self.rounds += 1
            recovered = True
            if outcome not in ("trimmed", "truncated"):
                self.raised = (f"{overflow} and Strands cannot reduce it further ({outcome}): "
                               + ("window_size=0 never raises, so Strands retries a request that overflows again" if p.window_size == 0
                                  else "it raises ContextWindowOverflowException"))
                break
        self.recovered_at += recovered

    def _remove(self, positions: list[int], reason: str, code: str, inside: str = "", start: int = 0) -> None:
        """Remove Strands messages for `reason` (reason code `code`); those at or after `start`
        (inside the window) get `inside`, which the start rule (a valid trim point) removes."""
        msgs, removed, journal = self.messages, self.removed, self.journal
        outside, within = (reason, code), (inside, "start_rule")
        inside_from = start if inside else len(msgs)  # the positions from here on are inside the window
        gone = 0
        for i in reversed(positions):  # newest first: a replay reads the journal back in this order
            sm = msgs[i]
            why = within if i >= inside_from else outside
            members = sm.members
            if len(members) == 1:
                removed[members[0]] = why
            elif not members:
                self.summary_removed = why[0]
            else:
                for index in members:
                    removed[index] = why
            if journal is not None:
                journal += [(index, Decision.DROPPED) for index in members]
            gone += sm.tokens
        self.held -= gone
        if positions and positions[-1] == len(positions) - 1:  # the oldest run (positions ascend): one slice
            del msgs[: len(positions)]
            del self.owners[: len(positions)]
        else:
            for i in reversed(positions):
                del msgs[i]
                del self.owners[i]

    def reduce_context(self, overflow: str | None, why: str) -> str:
        """One reduce_context call; returns "truncated", "trimmed", or why nothing changed.
        `overflow` is the error's description when this is overflow recovery (e is set)."""
        p, msgs = self.params, self.messages
        if p.pin_first and not self.pin_applied:
            for i in range(min(p.pin_first, len(msgs))):
                msgs[i] = dataclasses.replace(msgs[i], pinned=True)  # a copy: a replay's messages may be shared
            self.pin_applied = True
        if p.window_size == 0:
            unpinned = [i for i in range(len(msgs)) if not is_pinned(msgs, i)]
            self._remove(unpinned, "dropped: window_size=0 removes every message that is not pinned", "outside_window")
            return "trimmed" if unpinned else "nothing to remove: every message is pinned"
        if overflow is not None:
            oldest = next((i for i in range(len(msgs)) if not is_pinned(msgs, i) and msgs[i].has("toolResult")), None)
            if oldest is not None and p.should_truncate_results and self._truncate(oldest, overflow):
                return "truncated"
        start = 2 if len(msgs) <= p.window_size else len(msgs) - p.window_size
        trim = find_valid_trim_point(msgs, start)
        how = "the first user message from there that is no tool result and no tool call without its result"
        if trim >= len(msgs):
            fallback = next((i for i in range(start, len(msgs)) if msgs[i].has("toolUse") and i + 1 < len(msgs)
                             and msgs[i + 1].role == "user" and msgs[i + 1].has("toolResult")), None)
            if fallback is None:
                return "no valid trim point: no user message (nor tool call with its result next) after the trim start"
            trim = fallback
            how = "no plain user message follows, so the first tool call whose result comes next"
        remove = [i for i in range(trim) if not is_pinned(msgs, i)] if self.pin_applied else list(range(trim))
        if not remove:
            return "every message before the trim point is pinned"
        target = f"message #{msgs[trim].members[0]}" if msgs[trim].members else "the summary message"
        if overflow is None and len(msgs) > p.window_size:  # apply_management's window
            self._remove(remove, f"dropped: {why}", "outside_window", f"dropped: inside the newest {p.window_size} messages, but Strands "
                         f"trims on to {target}, {how}", start)
        else:
            self._remove(remove, f"dropped: {why}; Strands trims the oldest messages up to {target}, {how}", "overflow")
        return "trimmed"

    def _truncate(self, position: int, overflow: str) -> bool:
        sm = self.messages[position]
        changed_members: dict[int, set[str]] = {}
        new_content: list[dict[str, Any]] = []
        for block, owner in zip(sm.content, self.owners[position], strict=True):
            if "toolResult" not in block:
                new_content.append(block)
                continue
            result = block["toolResult"]
            items: list[dict[str, Any]] = []
            changed = False
            for item in result.get("content", []):
                if "image" in item:
                    items.append({"text": image_placeholder(item["image"])})
                    changed_members.setdefault(owner, set()).add("image")
                    changed = True
                    continue
                if "text" in item and TRUNCATION_MARKER not in item["text"] and len(item["text"]) > 2 * PRESERVE_CHARS:
                    items.append({"text": truncate_text(item["text"])})
                    changed_members.setdefault(owner, set()).add("text")
                    changed = True
                    continue
                items.append(item)
            new_content.append({"toolResult": {**{k: v for k, v in result.items() if k != "content"}, "content": items}} if changed else block)
        if not changed_members:
            return False
        tok = self.counts.tokenizer
        per_owner: dict[int, int] = {}
        for block, owner in zip(new_content, self.owners[position], strict=True):
            per_owner[owner] = per_owner.get(owner, 0) + block_tokens(block, tok)
        # Strands cuts the message in place; a copy here, as a replay's messages may be shared.
        self.messages[position] = dataclasses.replace(sm, content=new_content, tokens=sum(per_owner.values()))
        self.held += self.messages[position].tokens - sm.tokens
        for owner, kinds in changed_members.items():
            self.sent_tokens[owner] = per_owner[owner]
            what = []
            if "text" in kinds:
                what.append("its long text cut to the first and last 200 characters")
            if "image" in kinds:
                what.append("its images replaced by an '[image: <format>, <n> bytes]' placeholder")
            decision = Decision.TRUNCATED if "text" in kinds else Decision.REPLACED
            if self.journal is not None:
                self.journal.append((owner, decision))
            self.cut[owner] = (decision, f"{decision.value}: {overflow}; Strands first cuts the oldest tool results: "
                                         f"{' and '.join(what)} ({per_owner[owner]:,} tokens sent)")
        return True


def management_point(messages: list[StrandsMessage], per_turn: int) -> tuple[int, str]:
    """How many of the messages apply_management last saw, and when that was.

    Strands runs it in the `finally` of every invocation (after the final reply), and with
    per_turn before every (or every N-th) model call; the messages added since are not trimmed."""
    n = len(messages)
    if not messages or (messages[-1].role == "assistant" and not messages[-1].has("toolUse")):
        return n, "the last invocation ended with the last reply, and apply_management ran then"
    if per_turn == 1:
        return n, "per_turn=True: apply_management runs before this model call"
    plain = [i for i, sm in enumerate(messages) if sm.role == "user" and not sm.has("toolResult")]
    point = plain[-1] if plain else 0
    when = ("apply_management ran at the end of the previous invocation, before the current prompt" if plain
            else "no invocation has ended yet, so apply_management has not run")
    if per_turn > 1:
        calls = [i for i, sm in enumerate(messages) if sm.role == "assistant"]
        due = (len(calls) + 1) // per_turn * per_turn  # the latest model call whose number is a multiple of per_turn
        if due == len(calls) + 1:
            return n, f"per_turn={per_turn}: this is model call {due}, so apply_management runs before it"
        if due >= 1 and calls[due - 1] > point:
            point, when = calls[due - 1], f"per_turn={per_turn}: apply_management last ran before model call {due}"
    return point, when


def agent_notes(mgr: _Manager, limit: int, limit_source: str) -> list[str]:
    """What the agent's life did to its history, for the plan's notes."""
    p = mgr.params
    notes: list[str] = []
    if mgr.failed:
        notes.append(mgr.failed)
    per_turn = f", and before every {'' if p.per_turn == 1 else f'{p.per_turn}-th '}model call (retries counted)" if p.per_turn else ""
    notes.append(f"apply_management ran {mgr.managed:,} {noun(mgr.managed, 'time')} as the history grew (at the end of every invocation{per_turn})"
                 + (f"; the {mgr.since:,} Strands {noun(mgr.since, 'message')} since then {'comes' if mgr.since == 1 else 'come'} on top of the window" if mgr.since else ""))
    if mgr.proactive:
        notes.append(mgr.proactive)
    if mgr.rounds:
        notes.append(f"overflow recovery ran reduce_context {mgr.rounds:,} {noun(mgr.rounds, 'time')}, at {mgr.recovered_at:,} model {noun(mgr.recovered_at, 'call')}, each followed by a retry; "
                     "what it trimmed or cut stays out of every later call, as in the agent's history. Strands learns of an overflow from "
                     f"the provider's error, ctxviz uses Strands' own estimate (Model.count_tokens) against context_window_limit {limit:,} ({limit_source})")
    if mgr.raised:
        notes.append(mgr.raised)
    return notes
