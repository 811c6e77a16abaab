"""How Anthropic's context editing sees a session: the blocks' counts, the prompt's input tokens,
the tool uses and the assistant turns (shared by the step-by-step plans in context_editing.py and
the column plans in columns.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...counting import TokenCounts
from ...images import data_uri_size
from ...session import ImagePart, Message, Session, ToolCallPart, ToolResultPart, part_text
from ...tokenizers import Tokenizer

BETA = "context-management-2025-06-27"
IMAGE_MAX_EDGE = 1568
UNKNOWN_IMAGE_TOKENS = 1600


def image_tokens(part: ImagePart) -> int:
    """Anthropic's documented estimate, width x height / 750, after scaling the long edge to 1,568 px;
    an image whose size is not in the data (a URL) is charged 1,600 (about the largest)."""
    size = data_uri_size(part.url)
    if size is None:
        return UNKNOWN_IMAGE_TOKENS
    w, h = size
    scale = min(1.0, IMAGE_MAX_EDGE / max(w, h, 1))
    return math.ceil((w * scale) * (h * scale) / 750)


def part_tokens(part: Any, count: Callable[[str], int]) -> int:
    """One block's tokens by `count`: the tokenizer's own when measuring a message, the session's
    memo of texts (`TokenCounts.text`) when a plan needs a part again, so a re-plan never re-tokenizes."""
    if isinstance(part, ImagePart):
        return image_tokens(part)
    if isinstance(part, ToolCallPart):
        return count(part.name) + count(part.arguments or "{}")
    return count(part_text(part))


def measure_message(message: Message, tokenizer: Tokenizer) -> int:
    """Anthropic's tokenizer is not public: each block's text (a tool call: its name and input
    JSON) by the chosen encoding, images by width x height / 750."""
    return sum(part_tokens(p, tokenizer.count) for p in message.parts)


def prompt_input_tokens(session: Session, counts: TokenCounts, system_tokens: int) -> tuple[int, str]:
    """The request's input tokens: the last call's reported prompt (input, cache reads and writes)
    plus its output and what came after it, else ctxviz's count of the whole prompt."""
    tokens = counts.message_tokens
    for m in reversed(session.messages):
        if m.role == "assistant" and m.usage is not None and m.usage.window_fill:
            after = sum(tokens[x.index] for x in session.messages[m.index + 1:])
            total = m.usage.window_fill + m.usage.output_tokens + after
            return total, (f"the input reported for message #{m.index} ({m.usage.window_fill:,}), its output ({m.usage.output_tokens:,}) "
                           f"and {after:,} counted after it")
    return system_tokens + sum(tokens), "ctxviz's count of the whole prompt (no usage reported)"


@dataclass
class ToolUse:
    call_message: Message
    call: ToolCallPart
    result: Message | None


def tool_uses(session: Session) -> list[ToolUse]:
    results = {m.tool_call_id or next((p.tool_call_id for p in m.parts if isinstance(p, ToolResultPart)), ""): m
               for m in session.messages if m.role == "tool"}
    return [ToolUse(m, c, results.get(c.id)) for m in session.messages if m.role == "assistant" for c in m.tool_calls]


def assistant_turns(session: Session) -> list[list[Message]]:
    """The assistant messages answering each user message (tool calls and results in between are
    the same turn): a new turn starts at every user message."""
    turns: list[list[Message]] = []
    current: list[Message] = []
    for m in session.messages:
        if m.role == "user":
            if current:
                turns.append(current)
            current = []
        elif m.role == "assistant":
            current.append(m)
    if current:
        turns.append(current)
    return turns
