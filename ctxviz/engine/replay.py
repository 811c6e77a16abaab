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

from typing import Any

from .counting import TokenCounts
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
from .policies.strands.replay import REPLAYERS as STRANDS
from .policies.supyagent.replay import REPLAYERS as SUPYAGENT
from .replay_contract import _Replay
from .session import Session
from .summarizers import Summarizer

REPLAYERS: dict[str, type[_Replay]] = {**MISSY, **MNESIS, **SUPYAGENT, **PENGUIN, **AUTOGEN, **LLAMAINDEX, **LANGCHAIN, **STRANDS, **OPENHANDS,
                                       **ANTHROPIC, **CLAUDE_CODE, **CODEX, **GEMINI}


def replayer(session: Session, policy: str, params: Any, full: TokenCounts, summarizer: Summarizer, pair_safe: bool) -> _Replay | None:
    """The policy's incremental replayer, or None: `simulate` then plans every prefix from scratch
    (also where the parameters say its replayer does not follow them: `params.needs_full_replay`)."""
    if getattr(params, "needs_full_replay", False):
        return None
    kind = REPLAYERS.get(policy)
    return None if kind is None else kind(session, policy, params, full, summarizer, pair_safe)


def replays_incrementally(policy: str, pair_safe: bool = False) -> str:
    """How `simulate` replays the policy: 'incremental', 'incremental (pair safety: from scratch)', or 'from scratch'."""
    if policy not in REPLAYERS:
        return "from scratch"
    if pair_safe and not getattr(REPLAYERS[policy], "pair_safe_incremental", False):
        return "from scratch (pair safety)"
    return "incremental"

