"""What LlamaIndex's ChatSummaryMemoryBuffer shows its summarising LLM (llama-index-core 0.14.25,
`_get_prompt_to_summarize`), and so what ctxviz's offline stand-in summary reads: each message's
`content` (its text blocks joined by newlines: no images, no thinking, and no tool calls beside
text); a message whose content is "" (one empty text block) as its tool calls instead; a message
whose content is None (no text block: a tool-call-only assistant message, an image alone, as
`joined.content_str` reads them) not at all. tests/test_llamaindex_summary_input.py rebuilds
LlamaIndex's own prompts from these (tests/golden/llamaindex/prompts.json, generate_prompts.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from ...kept_by_identity import KeptByIdentity
from ...session import TEXT_PARTS, Message, ToolCallPart, message_with, part_text


def _shown(m: Message) -> Message | None:
    """The message the stand-in reads of m (m itself where it reads the same; None: left out)."""
    parts = m.parts
    texts = tuple(p for p in parts if isinstance(p, TEXT_PARTS))
    if not texts:
        return None
    calls = tuple(p for p in parts if isinstance(p, ToolCallPart)) if len(texts) == 1 and not part_text(texts[0]) else ()
    new = calls or texts  # (content "": its tool calls are shown, if it has any)
    return m if new == parts else message_with(m, parts=new)


#: Each message's view, kept while the message lives (so its reading is: a re-plan and a replay
#: summarise the same messages again).
_SHOWN: KeptByIdentity[Message | None] = KeptByIdentity()


def shown(m: Message) -> Message | None:
    return _SHOWN.get(m, _shown)


def shown_all(messages: Iterable[Message]) -> list[Message]:
    """`shown` of each message, those left out left out."""
    views = (shown(m) for m in messages)
    return [v for v in views if v is not None]
