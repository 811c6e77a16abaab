"""LangChain's incremental replayers: trim_messages (`langchain-trim`, trim_replay.py), the
SummarizationMiddleware (`langchain-summarization`, summarization_replay.py) and the
ContextEditingMiddleware (`langchain-context-editing`, context_editing_replay.py), each carrying the
prefix sums of LangChain's counts from turn to turn.
"""

from __future__ import annotations

from ...replay_contract import _Replay
from .context_editing_replay import LangChainContextEditingReplay
from .summarization_replay import LangchainSummarizationReplay
from .trim_replay import LangChainTrimReplay

REPLAYERS: dict[str, type[_Replay]] = {"langchain-trim": LangChainTrimReplay, "langchain-summarization": LangchainSummarizationReplay,
                                       "langchain-context-editing": LangChainContextEditingReplay}
