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
Messages are Strands messages: one turn's tool results are one user message (messages.py). The
manager's arguments and its state through the agent's life are window_manager.py's.
"""

from __future__ import annotations

from itertools import accumulate, chain, repeat
from operator import is_, itemgetter
from typing import Any

import numpy as np

from ...counting import TokenCounts
from ...plan import Context, Decision, Plan, SummaryPlan, Totals
from ...plan_rows import DROPPED, KEPT, REPLACED, SUMMARIZED, TRUNCATED, Columns, Rows
from ...session import Message, Session
from ...wording import noun
from ..base import Policy, params_dict
from ..common import base_system_prompt
from .messages import (
    COUNTER,
    FRAMEWORK,
    FRAMEWORK_VERSION,
    Held,
    StrandsMessage,
    context_window_limit,
    held,
    is_pinned,
    json_tokens,
    measure_message,
    tool_specs,
)
from .window_manager import _MEMBERS, SlidingWindowParams, _Manager, agent_notes, management_point

DEFAULT_COMPRESSION_THRESHOLD = 0.7
ZONES = ("system", "summarized", "pinned", "window", "trimmed")


def request_overhead(session: Session, counts: TokenCounts, system_messages: list[Message]) -> tuple[str, int, int]:
    """(system prompt, its tokens, the tool specs' tokens) as `count_tokens` adds them."""
    prompt = base_system_prompt(session, system_messages)
    system_tokens = counts.text(prompt) if prompt else 0
    tools = sum(json_tokens(spec, counts.tokenizer) for spec in tool_specs(session))
    return prompt, system_tokens, tools


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
    mgr.notes.append(when + (f"; the {len(pending) - point:,} Strands {noun(len(pending) - point, 'message')} since then {'comes' if len(pending) - point == 1 else 'come'} on top of the window" if point < len(pending) else ""))
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
        mgr.notes.append(f"overflow recovery ran reduce_context {rounds:,} {noun(rounds, 'time')}; Strands learns of an overflow from the provider's error, "
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
