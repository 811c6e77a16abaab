"""Incremental replays: each policy's turn-by-turn figures carried from one turn to the next.

`simulate` asks `replayer()` for the policy's replayer; a policy without one (a plugin, or a
case a replayer does not cover) replays by planning the whole prefix at every turn (the
reference, `simulate(..., incremental=False)`). A replayer computes only what a `Turn` holds
(tokens sent, budget, kept / dropped / summarized / truncated counts, fits, events) from running
sums, and hands any turn it does not cover to the reference step, so the turns and events are
exactly the reference's (tests/test_replay_incremental.py checks it on random sessions).

Each framework's replayers live beside its plans, in `policies/<framework>/replay.py` (the
contract they follow is `replay_contract.py`); this module only collects them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .checks import PlanOptions
from .counting import TokenCounts
from .policies import get_policy
from .policies.anthropic.replay import REPLAYERS as ANTHROPIC
from .policies.autogen.replay import REPLAYERS as AUTOGEN
from .policies.claude_code.replay import REPLAYERS as CLAUDE_CODE
from .policies.codex.replay import REPLAYERS as CODEX
from .policies.gemini.replay import REPLAYERS as GEMINI
from .policies.langchain.replay import REPLAYERS as LANGCHAIN
from .policies.llamaindex.replay import REPLAYERS as LLAMAINDEX
from .policies.missy.replay import REPLAYERS as MISSY
from .policies.mnesis.replay import REPLAYERS as MNESIS
from .policies.openhands.replay import REPLAYERS as OPENHANDS
from .policies.penguin.replay import REPLAYERS as PENGUIN
from .policies.replay_recorded import _RecordedShapes
from .policies.strands.replay import REPLAYERS as STRANDS
from .policies.supyagent.replay import REPLAYERS as SUPYAGENT
from .replay_contract import _Replay
from .session import Session
from .summarizers import Summarizer

REPLAYERS: dict[str, type[_Replay]] = {**MISSY, **MNESIS, **SUPYAGENT, **PENGUIN, **AUTOGEN, **LLAMAINDEX, **LANGCHAIN, **STRANDS, **OPENHANDS,
                                       **ANTHROPIC, **CLAUDE_CODE, **CODEX, **GEMINI}


def replayer(session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool,
             pins: bool = False) -> _Replay | None:
    """The policy's incremental replayer, or None: `simulate` then plans every prefix from scratch
    (also where the parameters say its replayer does not follow them: `params.needs_full_replay`,
    and for pins where it does not carry them: `_Replay.pins_incremental`, never with pair safety)."""
    if getattr(params, "needs_full_replay", False):
        return None
    kind = REPLAYERS.get(policy)
    if kind is None or (pins and (pair_safe or not kind.pins_incremental)):
        return None
    return kind(session, policy, params, full, summarizer, pair_safe)


def replays_incrementally(policy: str, session: Session | None = None, options: PlanOptions | None = None, params: Any = None, *,
                          pair_safe: bool = False) -> str:
    """How `simulate` replays the policy for this session, with these options and parameters:
    'incremental'; 'from scratch (why)', every step planning the whole prefix; or 'incremental,
    then from scratch (why)', where the turns from some point on are handed to the reference step.
    Without a session, what it does for a session with nothing unusual. (A replayer also hands
    single turns to the reference step, such as the turn of a compaction; `Timeline.scratch_steps`
    counts what a replay really planned from scratch.) `pair_safe=True` stands for options with pair safety."""
    if pair_safe:
        options = dataclasses.replace(options or PlanOptions(), pair_safe=True)
    why = _scratch(policy, session, options, params)
    if why is not None:
        return f"from scratch ({why})"
    kind = REPLAYERS[policy]
    later: list[str] = []
    if session is not None and session.summaries and kind.recorded_summaries:
        if kind.recorded_summaries in ("shaped", "shaped until generated"):
            shapes = _RecordedShapes.of(session)
            why_not = shapes.why_not_for(kind)
            if why_not is not None and shapes.first_covering < len(session.messages):
                until = ", until the policy writes a summary of its own" if kind.recorded_summaries == "shaped until generated" else ""
                later.append(f"the turns from the first recorded summary of the file's messages on{until}: {why_not}")
        elif kind.recorded_summaries == "until generated":
            later.append("the turns from the first recorded summary on, until the policy writes a summary of its own")
        else:
            later.append("the turns from the first recorded summary on")
    after = getattr(kind, "after_trigger", "")
    if after:
        later.append(after)
    if session is not None:
        if params is None or not dataclasses.is_dataclass(params):
            params = get_policy(policy).make_params(params or {})
        reason = kind.later_reason(session, params)
        if reason:
            later.append(reason)
    return "incremental" + (f", then from scratch ({'; '.join(later)})" if later and session is not None else "")


def _scratch(policy: str, session: Session | None, options: PlanOptions | None, params: Any) -> str | None:
    """Why `simulate` plans every step of this replay from scratch (None: it does not)."""
    pair_safe = options is not None and options.pair_safe
    kind = REPLAYERS.get(policy)
    if options is not None and options.pins:
        if kind is None or not kind.pins_incremental:
            return "pins"
        if pair_safe:
            return "pins with pair safety"
    if kind is None:
        return "no incremental replayer"
    if params is None or not dataclasses.is_dataclass(params):
        params = get_policy(policy).make_params(params or {})
    if getattr(params, "needs_full_replay", False):
        return "parameters its replayer does not follow"
    if pair_safe and not kind.pair_safe_incremental:
        return "pair safety"
    if session is None:
        return None
    if pair_safe and _call_ids_shared(session):
        return "pair safety, with a tool call id on more than one call"
    if session.summaries and kind.recorded_summaries == "whole":
        return "summaries recorded in the file"
    if kind.unique_ids:
        ids = [m.id for m in session.messages]
        if len(set(ids)) != len(ids):
            return "an id on more than one message"
    return kind.scratch_reason(session, params)


def _call_ids_shared(session: Session) -> bool:
    ids = [call.id for m in session.messages for call in m.tool_calls if call.id]
    return len(set(ids)) != len(ids)
