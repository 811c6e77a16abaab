"""What supyagent sends and how it counts it (supyagent/core/tokens.py and context_manager.py at
55374eac): the context limit table, a message's dict and count, the summary message and where it
sits in the history, and the summary trigger's figures.

Both the step-by-step build (`context_manager.py`) and the build in columns
(`context_manager_columns.py`) read these, so they live apart from either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...session import Message, Summary
from ...tokenizers import Tokenizer


class TriggerSettings(Protocol):
    """What the trigger reads of `context_manager.ContextSettings`."""

    max_messages_before_summary: int
    max_tokens_before_summary: int
    min_recent_messages: int


#: Where the build lays its messages out, in order.
ZONES = ("system", "summarized", "evictable", "recent")
IMAGE_TOKENS = 765  # supyagent's flat "low-detail 85+170*4" charge per image_url part
SUMMARY_SHARE = 0.3

# get_context_limit's fallback table, in its dict order (substring match on the lowercased name).
# ctxviz does not consult litellm first, as supyagent does when it is installed: litellm fetches its
# model map from the network on import.
CONTEXT_LIMITS: tuple[tuple[str, int], ...] = (
    ("gpt-4o", 128_000), ("gpt-4-turbo", 128_000), ("gpt-4", 8_192), ("gpt-3.5-turbo", 16_384),
    ("claude-3-5-sonnet", 200_000), ("claude-3-opus", 200_000), ("claude-3-haiku", 200_000), ("claude-4", 200_000),
    ("gemini-2", 1_048_576), ("gemini-3", 1_048_576), ("gemini-1.5", 1_048_576), ("gemini-pro", 32_768),
    ("llama", 128_000), ("mistral", 128_000), ("qwen", 128_000), ("kimi", 128_000), ("deepseek", 64_000),
)
DEFAULT_CONTEXT_LIMIT = 128_000


def get_context_limit(model: str) -> int:
    name = model.lower()
    for key, limit in CONTEXT_LIMITS:
        if key in name:
            return limit
    return DEFAULT_CONTEXT_LIMIT


def llm_dict(message: Message) -> dict[str, Any]:
    """The dict supyagent sends for a message: role, content, tool_calls; tool results drop `name`."""
    return message.to_openai()


def count_message_dict(msg: dict[str, Any], tokenizer: Tokenizer) -> int:
    """supyagent's count_message_tokens: 4, plus every string value, parts, and the repr of other lists."""
    total = 4
    for value in msg.values():
        if isinstance(value, str):
            total += tokenizer.count(value)
        elif isinstance(value, list):
            if value is msg.get("content"):
                for part in value:
                    if isinstance(part, dict):
                        if part.get("type") == "text":
                            total += tokenizer.count(str(part.get("text", "")))
                        elif part.get("type") == "image_url":
                            total += IMAGE_TOKENS
                    else:
                        total += tokenizer.count(str(part))
            else:
                total += tokenizer.count(str(value))  # e.g. tool_calls: the Python repr
    return total


def measure_message(message: Message, tokenizer: Tokenizer) -> int:
    return count_message_dict(llm_dict(message), tokenizer)


def summary_message(summary: Summary) -> dict[str, Any]:
    """ContextSummary.to_message: a system message with an ASCII-hyphen header."""
    return {"role": "system", "content": f"[Context Summary - {summary.messages_covered} previous messages]\n\n{summary.text}"}


def summary_last_index(summary: Summary, history: list[Message]) -> int:
    """`last_message_idx` in the history list: the newest covered message.

    supyagent's summary knows only an index into its own history. A ctxviz summary names the
    messages it covers: when none of them is in this session it summarises what came before the
    file, so nothing here is covered (-1) and every message counts as "since the summary". Only a
    summary without `covers` falls back to its `messages_covered` as that index.
    """
    if summary.covers:
        positions = {m.id: i for i, m in enumerate(history)}
        found = [positions[c] for c in summary.covers if c in positions]
        return max(found) if found else -1
    return summary.messages_covered - 1


@dataclass(frozen=True)
class TriggerStatus:
    messages_since_summary: int
    messages_threshold: int
    messages_percent: float
    total_tokens: int
    tokens_threshold: int
    tokens_percent: float
    will_trigger: bool

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def trigger_status(history: Sequence[Message], tokens: Sequence[int], summary_idx: int | None, settings: TriggerSettings) -> TriggerStatus:
    """should_summarize and get_trigger_status over the whole history (count_messages_tokens = 3 + sum)."""
    return trigger_figures(len(history), 3 + sum(tokens[m.index] for m in history), summary_idx, settings)


def trigger_figures(n: int, total: int, summary_idx: int | None, settings: TriggerSettings) -> TriggerStatus:
    """The trigger's figures from the history's length `n` and its list count `total` (3 + the sum)."""
    since = n - summary_idx - 1 if summary_idx is not None else n
    will = n >= settings.min_recent_messages + 4 and (since >= settings.max_messages_before_summary or total >= settings.max_tokens_before_summary)
    return TriggerStatus(
        since, settings.max_messages_before_summary, min(100.0, since / settings.max_messages_before_summary * 100),
        total, settings.max_tokens_before_summary, min(100.0, total / settings.max_tokens_before_summary * 100), will,
    )
