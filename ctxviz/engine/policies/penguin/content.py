"""What Penguin's ContextWindowManager counts and holds, shared by the step-by-step plan
(`context_window.py`) and the plan in columns (`context_window_columns.py`): its categories and trim
orders, its token count of a message's content, its image placeholder and a recorded summary's
CONTEXT message."""

from __future__ import annotations

from typing import Any

from ...session import Category, Message, TextPart
from ...tokenizers import Tokenizer

IMAGE_TOKENS = 4000
IMAGE_PLACEHOLDER = "[Image removed to save tokens]"
CATEGORY_ORDER = (Category.SYSTEM, Category.CONTEXT, Category.DIALOG, Category.SYSTEM_OUTPUT,
                  Category.ERROR, Category.INTERNAL, Category.UNKNOWN)
SEED_TRIM_ORDER = (Category.SYSTEM_OUTPUT, Category.DIALOG, Category.CONTEXT)
LATER_TRIM_ORDER = (Category.UNKNOWN, Category.INTERNAL, Category.ERROR, Category.SYSTEM_OUTPUT, Category.DIALOG, Category.CONTEXT)
OTHER = (Category.ERROR, Category.INTERNAL, Category.UNKNOWN)


def count_content(content: Any, tokenizer: Tokenizer) -> int:
    """diagnostics.count_tokens: text encoded, 4,000 per image part, other dicts as their str()."""
    if content is None:
        return 0
    if isinstance(content, str):
        return tokenizer.count(content)
    total = 0
    for part in content:
        if isinstance(part, dict) and part.get("type") in ("image", "image_url"):
            total += IMAGE_TOKENS
        elif isinstance(part, dict) and "text" in part:
            total += tokenizer.count(str(part["text"]))
        else:
            total += tokenizer.count(str(part))
    return total


def _content(message: Message) -> Any:
    content = message.openai_content()
    if content is None and message.tool_calls:  # Penguin stores the call as text; ctxviz counts its text form
        return "\n".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
    return content


def measure_message(message: Message, tokenizer: Tokenizer) -> int:
    return count_content(_content(message), tokenizer)


def replace_images(content: Any) -> Any:
    if not isinstance(content, list):
        return content
    return [{"type": "text", "text": IMAGE_PLACEHOLDER} if isinstance(p, dict) and p.get("type") in ("image", "image_url") else p for p in content]


def summary_message(text: str, index: int, position: int, timestamp: str) -> Message:
    """A recorded summary as the ContextWindowManager holds it: a CONTEXT message in the place of
    what it covers. `index` is past the session's messages, so it never names one of them."""
    return Message(f"summary-{position + 1}", index, "user", (TextPart(text),), timestamp=timestamp, category=Category.CONTEXT)


def images_to_replace(with_images: list[Message], max_context_images: int | None) -> list[Message]:
    """The image messages whose images become text when the context is trimmed: all but the newest
    (the seed, `max_context_images` unset), or the oldest until at most that many image parts remain
    (the later source). Both plans, step by step and in columns, call it."""
    image_parts = sum(m.image_count for m in with_images)
    if max_context_images is None:
        if image_parts <= 1:
            return []
        newest = sorted(with_images, key=lambda m: m.timestamp)[-1]
        return [m for m in with_images if m is not newest]
    replace: list[Message] = []
    remaining = image_parts
    for m in sorted(with_images, key=lambda m: m.timestamp):
        if remaining <= max_context_images:
            break
        replace.append(m)
        remaining -= m.image_count
    return replace
