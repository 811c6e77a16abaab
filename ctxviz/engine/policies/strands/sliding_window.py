"""Strands Agents' SlidingWindowConversationManager (strands-agents 1.62.0,
strands/agent/conversation_manager/sliding_window_conversation_manager.py).

A plan replays the agent's life over the file, model call by model call, on the history as the
agent mutated it (everything Strands does to `agent.messages` is permanent: what one call trimmed
or cut is gone from every later call):
- before each model call (each assistant message of the file is one call), on every attempt:
  1. proactive compression (when configured): if the estimated input is at least the threshold
     share of `context_window_limit`, one `reduce_context` without an error (trim only). ctxviz
     estimates the whole request, as Strands does on a cold start; after a first call Strands adds
     its estimate of the new messages to the usage the provider last reported, which a log may not hold.
  2. with `per_turn`, the call is counted and every N-th runs `apply_management`; a retried call
     (after an overflow) is counted again, as Strands' BeforeModelCallEvent fires again.
  3. overflow recovery: when the estimate exceeds `context_window_limit`, `reduce_context(e)` once
     and the call is retried: first the oldest message holding tool results is cut (first and last
     200 characters of each long text, images replaced by a placeholder); when that message has
     nothing left to cut, the oldest messages are trimmed from index 2 (or to the window). Strands
     learns of an overflow from the provider's error; ctxviz uses Strands' own estimate
     (`Model.count_tokens`) in its place, and says so.
- after each final reply (the end of an invocation), `apply_management`: over `window_size`
  messages, `reduce_context` trims the oldest, to the first valid trim point (a user message that
  is no toolResult and no toolUse without its result next; else an assistant toolUse + user
  toolResult boundary).
The plan is then the next model call's request: the history so far, through that call's steps 1-3.
With `replay_history` off the file is taken as `agent.messages` as it stands: apply_management once
where the agent last ran it, then steps 1 and 3 for the next call.
Messages are Strands messages: one turn's tool results are one user message (messages.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from itertools import accumulate, chain, repeat
from operator import attrgetter, is_, itemgetter
from typing import Any

import numpy as np

from ...counting import TokenCounts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, REPLACED, SUMMARIZED, TRUNCATED, Columns, Rows
from ...session import Message, Session
from ..base import Policy, params_dict
from ..common import base_system_prompt
from .messages import (
    COUNTER,
    FRAMEWORK,
    FRAMEWORK_VERSION,
    Held,
    StrandsMessage,
    block_tokens,
    check_positive,
    context_window_limit,
    find_valid_trim_point,
    held,
    is_pinned,
    json_tokens,
    measure_message,
    tool_specs,
)

PRESERVE_CHARS = 200  # _PRESERVE_CHARS
_MEMBERS, _TOKENS = attrgetter("members"), attrgetter("tokens")
TRUNCATION_MARKER = "... [truncated:"
DEFAULT_COMPRESSION_THRESHOLD = 0.7
ZONES = ("system", "summarized", "pinned", "window", "trimmed")


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
        if self.pin_first is not None and self.pin_first < 0:
            object.__setattr__(self, "pin_first", 0)  # Strands: max(0, pin_first)
        t = self.proactive_compression
        if t is not None and (t <= 0 or t > 1):
            raise ValueError(f"proactive_compression (compression_threshold) must be between 0 (exclusive) and 1 (inclusive), got {t}")
        check_positive("context_window_limit", self.context_window_limit)


def truncate_text(text: str) -> str:
    """_truncate_tool_results' text cut: first and last 200 characters around a notice."""
    removed = len(text) - 2 * PRESERVE_CHARS
    return f"{text[:PRESERVE_CHARS]}...\n\n... [truncated: {removed} chars removed] ...\n\n...{text[-PRESERVE_CHARS:]}"


def image_placeholder(image: dict[str, Any]) -> str:
    """_image_placeholder: `[image: <format>, <bytes> bytes]`."""
    return f"[image: {image.get('format', 'unknown')}, {image.get('source', {}).get('size', 0)} bytes]"


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


def request_overhead(session: Session, counts: TokenCounts, system_messages: list[Message]) -> tuple[str, int, int]:
    """(system prompt, its tokens, the tool specs' tokens) as `count_tokens` adds them."""
    prompt = base_system_prompt(session, system_messages)
    system_tokens = counts.text(prompt) if prompt else 0
    tools = sum(json_tokens(spec, counts.tokenizer) for spec in tool_specs(session))
    return prompt, system_tokens, tools


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
    notes.append(f"apply_management ran {mgr.managed} time(s) as the history grew (at the end of every invocation{per_turn})"
                 + (f"; the {mgr.since} Strands message(s) since then come on top of the window" if mgr.since else ""))
    if mgr.proactive:
        notes.append(mgr.proactive)
    if mgr.rounds:
        notes.append(f"overflow recovery ran reduce_context {mgr.rounds} time(s), at {mgr.recovered_at} model call(s), each followed by a retry; "
                     "what it trimmed or cut stays out of every later call, as in the agent's history. Strands learns of an overflow from "
                     f"the provider's error, ctxviz uses Strands' own estimate (Model.count_tokens) against context_window_limit {limit:,} ({limit_source})")
    if mgr.raised:
        notes.append(mgr.raised)
    return notes


def _as_it_stands(mgr: _Manager, fixed: int, limit: int, limit_source: str) -> int:
    """replay_history off: the file is agent.messages as it stands. apply_management where the
    agent last ran it, then the next call's proactive compression and overflow recovery; the
    overflow rounds."""
    params = mgr.params
    ws = params.window_size
    pending, pending_owners = mgr.messages, mgr.owners
    point, when = management_point(pending, params.per_turn)
    mgr.history(pending[:point], pending_owners[:point])
    if len(mgr.messages) > ws:
        outcome = mgr.reduce_context(None, f"outside the newest {ws} messages (window_size={ws})" if ws else "window_size=0")
        if outcome not in ("trimmed", "truncated"):
            mgr.notes.append(f"apply_management could not trim ({outcome}): Strands logs a warning and keeps the messages")
    mgr.history(mgr.messages + pending[point:], mgr.owners + pending_owners[point:])
    mgr.notes.append(when + (f"; the {len(pending) - point} Strands message(s) since then come on top of the window" if point < len(pending) else ""))
    if params.proactive_compression is not None:
        estimate = fixed + mgr.holding()
        if estimate / limit >= params.proactive_compression:
            why = (f"proactive compression: the estimated {estimate:,} tokens are {estimate / limit:.0%} of the {limit:,}-token window, "
                   f"at least compression_threshold {params.proactive_compression:g}")
            outcome = mgr.reduce_context(None, why)
            mgr.notes.append(why + (f"; {outcome}" if outcome not in ("trimmed", "truncated") else "; Strands trimmed once"))
    rounds = 0
    while fixed + mgr.holding() > limit:
        estimate = fixed + mgr.holding()
        overflow = f"the context overflowed ({estimate:,} estimated tokens > context_window_limit {limit:,})"
        outcome = mgr.reduce_context(overflow, overflow)
        rounds += 1
        if outcome not in ("trimmed", "truncated"):
            mgr.notes.append(f"{overflow} and Strands cannot reduce it further ({outcome}): it raises ContextWindowOverflowException")
            break
        if ws == 0:
            break
    if rounds:
        mgr.notes.append(f"overflow recovery ran reduce_context {rounds} time(s); Strands learns of an overflow from the provider's error, "
                         f"ctxviz uses Strands' own estimate (Model.count_tokens) against context_window_limit {limit:,} ({limit_source})")
    return rounds


def split_window(limit: int, system_tokens: int, tools_tokens: int) -> dict[str, int]:
    """The window divided as the request fills it: system prompt, tool specs, then the messages
    (each part at most what is left, so the parts add up to the window and none is negative)."""
    system = min(system_tokens, limit)
    tools = min(tools_tokens, limit - system)
    return {"system": system, "tool_definitions": tools, "messages": limit - system - tools}


_ZONE_NAMES = ("system", "summarized", "trimmed", "window", "pinned")
Z_SYSTEM, Z_SUMMARIZED, Z_TRIMMED, Z_WINDOW, Z_PINNED = range(len(_ZONE_NAMES))
_CODE_NAMES = ("system_prompt", "summarised", "outside_window", "start_rule", "overflow", "truncated", "replaced", "head", "in_window")
_CODE = {name: k for k, name in enumerate(_CODE_NAMES)}
SYSTEM_REASON = "kept: part of the system prompt, which Strands passes apart from the messages"
SUMMARIZED_REASON = "summarized: covered by the session's summary, which Strands holds as one user message in their place"


class _Why:
    """The reason sentence of message i, built when someone reads that row."""

    def __init__(self, mgr: _Manager, code: np.ndarray, n_strands: int) -> None:
        self.removed, self.cut, self.code, self.params, self.n_strands = mgr.removed, mgr.cut, code, mgr.params, n_strands
        self.position = {i: pos for pos, sm in enumerate(mgr.messages) for i in sm.members}
        self.remaining = len(mgr.messages)

    def __call__(self, i: int) -> str:
        code = _CODE_NAMES[self.code[i]]
        if code == "system_prompt":
            return SYSTEM_REASON
        if code == "summarised":
            return SUMMARIZED_REASON
        if i in self.removed:
            return self.removed[i][0]
        if i in self.cut:
            return self.cut[i][1]
        if code == "head":
            return f"kept: pinned (pin_first={self.params.pin_first}), never evicted"
        ws, n = self.params.window_size, self.n_strands
        where = f"within the newest {ws} messages (window_size={ws})" if n > ws else f"the history has {n} messages, within window_size={ws}"
        return f"kept: {where}; Strands message {self.position[i] + 1} of {self.remaining}"


def _columns(session: Session, counts: TokenCounts, start: Held, mgr: _Manager, n_strands: int) -> Columns:
    """Every message's decision from what the manager did, in the order of precedence of the
    record each once had: system message, covered by the summary, removed, cut, pinned, in the window."""
    tokens = counts.token_array
    n = len(tokens)
    decision = np.full(n, KEPT, dtype=np.int8)
    zone = np.full(n, Z_WINDOW, dtype=np.int16)
    code = np.full(n, _CODE["in_window"], dtype=np.int16)
    sent_tokens = tokens.copy()
    msgs = mgr.messages
    pinned = ([i for pos, sm in enumerate(msgs) if is_pinned(msgs, pos) for i in sm.members]
              if any(sm.pinned for sm in msgs) else [])
    if pinned:
        zone[pinned] = Z_PINNED
        code[pinned] = _CODE["head"]
    for index, (cut, _) in mgr.cut.items():  # a few: the oldest tool results an overflow cut
        decision[index] = TRUNCATED if cut is Decision.TRUNCATED else REPLACED
        code[index] = _CODE["truncated" if cut is Decision.TRUNCATED else "replaced"]
        sent_tokens[index] = mgr.sent_tokens[index]
        zone[index] = Z_WINDOW
    if mgr.removed:
        removed = np.fromiter(mgr.removed, dtype=np.int64, count=len(mgr.removed))
        decision[removed] = DROPPED
        zone[removed] = Z_TRIMMED
        code[removed] = np.fromiter(map(_CODE.__getitem__, map(itemgetter(1), mgr.removed.values())), dtype=np.int16, count=len(removed))
        sent_tokens[removed] = 0
    covered = start.is_covered
    decision[covered] = SUMMARIZED
    zone[covered] = Z_SUMMARIZED
    code[covered] = _CODE["summarised"]
    sent_tokens[covered] = 0
    system = start.is_system
    decision[system] = KEPT
    zone[system] = Z_SYSTEM
    code[system] = _CODE["system_prompt"]
    sent_tokens[system] = tokens[system]
    return Columns(session, decision, tokens, sent_tokens, zone, _ZONE_NAMES, code, _CODE_NAMES, _Why(mgr, code, n_strands))


class _Run:
    """The session's Strands messages as one run, for a plan's replay of the agent's life while
    Strands holds a stretch of them as they are (nothing cut, pinned or summarised): each
    apply_management then drops a head of that stretch, and the whole replay is a walk of two
    positions. A re-plan after window_size or the budget moved walks all of a long session's
    invocations again (11,775 at 100,000 messages); holding, appending and deleting list slices,
    and finding each trim point by a scan, cost about 7 us an invocation.

    `valid_from[i]`: the first position at or after i that find_valid_trim_point accepts (a user
    message that is no tool result and no tool use without its result next), len(messages) if none.
    The stretch held when apply_management runs ends with the invocation's final reply, an assistant
    message, so the next message of any user message in it is held too: the position found in the
    run is the one find_valid_trim_point finds in the stretch, when it lies inside it. `members`:
    every Strands message's members in order, `at[i]` where message i's begin."""

    def __init__(self, messages: tuple[StrandsMessage, ...], owners: tuple[list[int], ...]) -> None:
        self.messages, self.owners = messages, owners
        n = len(messages)
        valid_from = [n] * (n + 1)
        found = n
        result_next = False  # whether the message after the one looked at holds a toolResult
        for k in range(n - 1, -1, -1):
            sm = messages[k]
            result = sm.has("toolResult")
            if sm.role == "user" and not result and (result_next or not sm.has("toolUse")):
                found = k
            valid_from[k] = found
            result_next = result
        self.valid_from = valid_from
        self.members = list(chain.from_iterable(map(_MEMBERS, messages)))
        self.at = [0, *accumulate(map(len, map(_MEMBERS, messages)))]

    def window(self, mgr: _Manager, begin: int) -> _Window | None:
        """The stretch Strands holds, when it is messages[start:begin] as the very objects (else
        None: something was cut or added on the general path)."""
        held = mgr.messages
        start = begin - len(held)
        if start < 0 or not all(map(is_, held, self.messages[start:begin])):
            return None
        return _Window(self, mgr, start)


class _Window:
    """Strands holding messages[head:] of a `_Run` (to the invocation read last), the manager's
    lists not kept meanwhile: each trim moves `head`, and the reason of each member it removes is
    kept in order (`reasons`, from message `first` on), until `hand_back` puts them in `removed`
    as the trims would have one by one and gives the manager its lists again."""

    def __init__(self, run: _Run, mgr: _Manager, head: int) -> None:
        self.run, self.mgr = run, mgr
        self.first = self.head = head
        self.reasons: list[tuple[str, str]] = []
        ws = mgr.params.window_size
        outside = mgr._outside
        if outside is None:
            outside = mgr._outside = (f"dropped: outside the newest {ws} messages (window_size={ws})", "outside_window")
        self.outside = outside
        # (`_trim_window`'s start-rule sentence, in the words around its target)
        self.within_head = f"dropped: inside the newest {ws} messages, but Strands trims on to "
        self.within_tail = ", the first user message from there that is no tool result and no tool call without its result"

    def trim(self, start: int, trim: int, cumulative: list[int]) -> None:
        """`_Manager._trim_window` of messages[head:tail] (start = tail - window_size, trim its
        valid point)."""
        at, head, reasons = self.run.at, self.head, self.reasons
        reasons.extend(repeat(self.outside, at[start] - at[head]))
        if trim > start:
            members = self.run.messages[trim].members
            target = f"message #{members[0]}" if members else "the summary message"
            reasons.extend(repeat((self.within_head + target + self.within_tail, "start_rule"), at[trim] - at[start]))
        self.mgr.held -= cumulative[trim] - cumulative[head]
        self.head = trim

    def hand_back(self, tail: int) -> None:
        """The manager holds messages[head:tail] again, as lists (for its general path), with what
        the trims removed in `removed`."""
        run, mgr, at = self.run, self.mgr, self.run.at
        mgr.removed.update(zip(run.members[at[self.first]:at[self.head]], self.reasons, strict=True))
        mgr.messages = list(run.messages[self.head:tail])
        mgr.owners = list(run.owners[self.head:tail])


def _run(session: Session, counts: TokenCounts) -> _Run:
    """The session's `_Run` under this counting, made once (kept with its Strands messages)."""
    start = held(session, counts)
    found = start.found.get("sliding window run")
    if found is None:
        found = start.found["sliding window run"] = _Run(start.messages, start.owners)
    return found


def plan(session: Session, params: SlidingWindowParams, counts: TokenCounts) -> Plan:
    mgr = _Manager(session, params, counts)
    prompt, system_tokens, tools_tokens = request_overhead(session, counts, mgr.system)
    fixed = system_tokens + tools_tokens
    limit, limit_source = context_window_limit(session, params.context_window_limit)
    n_strands = len(mgr.messages)

    rounds = 0
    if params.replay_history:
        # The agent's life, call by call: what it trimmed or cut at one call stays so at the next.
        pending, pending_owners = mgr.messages, mgr.owners
        mgr.history([], [])
        mgr.limit = limit
        mgr.journal = None  # a replay's record: the plan reads `removed` and `cut`
        # Each call is made with the system prompt as the agent had it then (system-role messages so far).
        known = -1
        life = held(session, counts).invocations
        before, cumulative = life.systems_before, life.cumulative
        # An invocation none of whose model calls can trim (no proactive compression, no per_turn,
        # its last call within the window) is appended whole, then apply_management runs.
        whole = params.proactive_compression is None and not params.per_turn
        # Where apply_management's trims can be read off the session's own Strands messages (`_Run`).
        ws = params.window_size
        run = _run(session, counts) if whole and ws and not params.pin_first and mgr.summary is None else None
        window: _Window | None = None  # Strands holding a stretch of the run (mgr.messages and mgr.owners not kept meanwhile)
        begin = 0
        for end, last_call, calls, systems, final in zip(life.ends, life.last_call, life.calls, life.prompts, life.final, strict=True):
            # (`systems == known`: the system prompt stays the one known, >= 0, throughout the invocation)
            if (whole and systems == known
                    and (last_call < 0 or mgr.fixed + mgr.held + cumulative[last_call] - cumulative[begin] <= limit)):
                if window is None and run is not None:
                    window = run.window(mgr, begin)
                if window is not None:
                    mgr.held += cumulative[end + 1] - cumulative[begin]
                    mgr.calls += calls
                    mgr.since += end + 1 - begin
                    if final:
                        tail = end + 1
                        if tail - window.head > ws:
                            trim = window.run.valid_from[tail - ws]
                            if trim >= tail:  # no place to trim at: reduce_context's own path
                                window.hand_back(tail)
                                window = None
                                mgr.manage()
                                begin = end + 1
                                continue
                            window.trim(tail - ws, trim, cumulative)
                        mgr.managed += 1  # (manage's bookkeeping)
                        mgr.since = 0
                    begin = end + 1
                    continue
                mgr.messages += pending[begin:end + 1]
                mgr.owners += pending_owners[begin:end + 1]
                mgr.held += cumulative[end + 1] - cumulative[begin]
                mgr.calls += calls
                mgr.since += end + 1 - begin
                if final:
                    mgr.manage()
            else:
                if window is not None:
                    window.hand_back(begin)
                    window = None
                for k in range(begin, end + 1):
                    # Each call is made with the system prompt as the agent had it then (system-role messages so far).
                    if pending[k].members and before[k] != known:
                        known = before[k]
                        mgr.fixed = sum(request_overhead(session, counts, mgr.system[:known])[1:])
                    mgr.take(pending[k], pending_owners[k])
            begin = end + 1
        if window is not None:
            window.hand_back(begin)
        mgr.fixed = fixed
        mgr.call("at this request's model call")
        rounds = mgr.rounds
        mgr.notes += agent_notes(mgr, limit, limit_source)
    else:
        rounds = _as_it_stands(mgr, fixed, limit, limit_source)
    start = held(session, counts)
    if start.joined:
        mgr.notes.append("consecutive tool results form one Strands message (one user message per turn), and window_size counts Strands messages")
    columns = _columns(session, counts, start, mgr, n_strands)

    context: list[Any] = [{"role": "system", "content": prompt}] if prompt else []
    context_index: list[int | None] = [None] if prompt else []
    for sm, owners in zip(mgr.messages, mgr.owners, strict=True):
        if not sm.members:
            context.append({"role": "user", "content": sm.content[0]["text"]})
            context_index.append(None)
        for index in sm.members:
            if index in mgr.cut:
                msg = session.messages[index].to_openai()
                texts = [item.get("text", "") for block, owner in zip(sm.content, owners, strict=True) if owner == index
                         for item in block.get("toolResult", {}).get("content", [])]
                msg["content"] = "\n".join(texts)
                context.append(msg)
            else:
                context.append(session.messages[index])  # sent as it is: built when read (plan.Context)
            context_index.append(index)

    summary_plans: list[SummaryPlan] = []
    if mgr.summary is not None:
        for i, s in enumerate(session.summaries[:-1]):
            summary_plans.append(SummaryPlan(i, 0, Decision.DROPPED, "dropped: Strands holds one summary message; the latest absorbed this one", s.text))
        tokens_of = counts.text(mgr.summary.text)
        summary_plans.append(SummaryPlan(len(session.summaries) - 1, tokens_of, Decision.DROPPED if mgr.summary_removed else Decision.KEPT,
                                         mgr.summary_removed or "kept: a user message in place of the messages it covers, counted as one of the window's messages",
                                         mgr.summary.text))
    used = fixed + mgr.holding()
    messages_used = mgr.holding()
    sent = columns.sent
    kept_messages = int(sent.sum())
    kept = int(columns.tokens[sent].sum())
    allocation = split_window(limit, system_tokens, tools_tokens)
    usage = {"system": system_tokens, "tool_definitions": tools_tokens, "messages": messages_used}
    totals = Totals(budget=limit, used=used, kept=kept, dropped=int(columns.tokens.sum()) - kept,
                    fits=used <= limit, kept_messages=kept_messages, dropped_messages=len(sent) - kept_messages)
    return Plan(
        policy=POLICY.name, params={**params_dict(params), "context_window_limit": limit}, tokenizer=counts.scheme.label,
        allocation=allocation, usage=usage, system_prompt=prompt, messages=Rows(columns), context=Context(context),
        context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(mgr.notes),
        extra={"strands_messages": n_strands, "strands_messages_kept": len(mgr.messages), "context_window_limit": limit,
               "context_window_source": limit_source, "overflow_rounds": rounds, "trimmed": bool(mgr.removed),
               "sent_messages": kept_messages - int(start.is_system.sum())},
    )


POLICY = Policy(
    reason_codes=("system_prompt", "head", "in_window", "truncated", "replaced", "outside_window", "start_rule", "overflow", "summarised"),
    name="strands-sliding-window",
    schedule='apply_management after each agent invocation (the final reply); with per_turn before every (N-th) model call; overflow recovery before the call that overflowed',
    title="Strands SlidingWindowConversationManager",
    params_type=SlidingWindowParams,
    measure_name="strands-blocks",
    measure=measure_message,
    default_tokenizer="strands",
    plan=plan,
    zone_parts={"window": "messages", "pinned": "messages"},
    description="The newest window_size messages, trimmed to a user message that starts a valid history; on overflow, old tool results cut first.",
    framework=FRAMEWORK,
    framework_version=FRAMEWORK_VERSION,
    source="strands/agent/conversation_manager/sliding_window_conversation_manager.py apply_management, reduce_context",
    counter=COUNTER,
    trigger=("window_size", "context_window_limit"),
    keep=("window_size", "pin_first"),
)
