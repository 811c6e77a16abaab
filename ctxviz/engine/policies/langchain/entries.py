"""The messages `trim_messages` receives, one entry each: what `trim.py` steps through and
`trim_columns.py` holds as columns, and LangChain's message types they are matched by."""

from __future__ import annotations

from typing import NamedTuple

from ...counting import TokenCounts
from ...session import Session
from .counting import (
    CHUNK_TYPES,
    MESSAGE_TYPES,
    SUMMARY_POS,
    LCMessage,
    count_view,
    lc_type_name,
    summary_view,
    text_message_tokens,
)


class Entry(NamedTuple):
    """One message as trim_messages sees it: `pos` in the caller's list, its count, its type, and
    `view` when LangChain cut it (None: the message unchanged)."""

    pos: int
    tokens: int
    type: str
    view: LCMessage | None = None


def base_type(type_name: str) -> str:
    """The message class a `.type` belongs to (a chunk's is its message's)."""
    return CHUNK_TYPES.get(type_name, type_name)


def parse_types(value: str, field_name: str) -> tuple[str, ...]:
    """`"human"` or `"human,tool"` -> the message types; "" -> none (LangChain's None). A chunk's
    type (`AIMessageChunk`) is its own: LangChain compares the strings."""
    names = tuple(t.strip() for t in value.split(",") if t.strip())
    unknown = [t for t in names if t not in MESSAGE_TYPES and t not in CHUNK_TYPES]
    if unknown:
        raise ValueError(f"{field_name}: unknown message type {unknown[0]!r}; use one or more of {', '.join(MESSAGE_TYPES)}, comma-separated")
    return names


def session_entries(session: Session, counts: TokenCounts) -> tuple[list[Entry], int]:
    """The messages LangChain receives: the session's system prompt (when the log keeps it apart)
    as a leading SystemMessage at position -1; the messages, except those an earlier summary
    covers; that summary as LangChain's summary HumanMessage (positions -2, -3...) after the leading
    system messages. Returns them and the prompt's count."""
    entries: list[Entry] = []
    prompt_tokens = 0
    if session.system_prompt:
        prompt_tokens = text_message_tokens(session.system_prompt, "system", counts.tokenizer)
        entries.append(Entry(-1, prompt_tokens, "system"))
    covered = {c for s in session.summaries for c in s.covers}
    tokens = counts.message_tokens
    rest = [Entry(m.index, tokens[m.index], lc_type_name(m)) for m in session.messages if m.id not in covered]
    lead = next((k for k, e in enumerate(rest) if base_type(e.type) != "system"), len(rest))
    summaries = [Entry(SUMMARY_POS - k, count_view(summary_view(s.text), counts.tokenizer), "human") for k, s in enumerate(session.summaries)]
    return entries + rest[:lead] + summaries + rest[lead:], prompt_tokens
