"""LangChain's view of a message and its default counter, `count_tokens_approximately`.

Every LangChain strategy counts with `langchain_core.messages.utils.count_tokens_approximately`
(langchain-core 1.8.2): per message, the characters of the content (text blocks by their text, an
image block a flat `tokens_per_image=85`, any other block `len(repr(block))`), of
`repr(tool_calls)` on an AI message whose content is a string, of a tool message's `tool_call_id`,
of the OpenAI role and of the name, divided by `chars_per_token` (4.0; 3.3 for Anthropic models in
SummarizationMiddleware) and rounded up, plus `extra_tokens_per_message=3`. To count exactly as it
does, ctxviz rebuilds the message LangChain would hold: from the record itself when the session
was loaded from a LangChain dump (`messages_to_dict` / `dumpd`), else from the message's parts.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

from ...catalog import find_model
from ...session import ImagePart, Message, OpaquePart, ThinkingPart, ToolCallPart, ToolResultPart, part_text
from ...tokenizers import CharsPerTokenTokenizer, Tokenizer

# LangChain's own serialised message shapes (what `messages_to_dict` and `dumpd` write): the loader
# reads files with them and the counters read a message's original record with them.
#: `messages_to_dict` types -> ctxviz roles (`chat` takes its role from `data.role`).
TYPES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool", "chat": "", "remove": ""}
#: `dumpd` class names (chunks drop their `Chunk`) -> the same types.
CLASSES = {"HumanMessage": "human", "AIMessage": "ai", "SystemMessage": "system", "ToolMessage": "tool",
           "FunctionMessage": "tool", "ChatMessage": "chat", "RemoveMessage": "remove"}


def _class(record: Any) -> str:
    """The message type of a `dumpd` constructor (`human`, `ai`...), or ""."""
    if not (isinstance(record, dict) and record.get("lc") == 1 and record.get("type") == "constructor"):
        return ""
    ids = record.get("id")
    if not isinstance(ids, list) or not ids or not isinstance(ids[-1], str):
        return ""
    name = ids[-1].removesuffix("Chunk")
    return CLASSES.get(name, "")


def _dict_type(record: Any) -> str:
    """The message type of a `messages_to_dict` item, or ""."""
    if not (isinstance(record, dict) and isinstance(record.get("data"), dict) and isinstance(record.get("type"), str)):
        return ""
    kind = record["type"]
    if kind in TYPES:
        return kind
    return CLASSES.get(kind.removesuffix("Chunk"), "")


#: count_tokens_approximately's defaults.
EXTRA_TOKENS_PER_MESSAGE = 3
TOKENS_PER_IMAGE = 85
#: ctxviz's tokenizer names for `chars_per_token=4.0` and the 3.3 SummarizationMiddleware uses for
#: Anthropic chat models (`_get_approximate_token_counter`).
APPROX = "langchain-approx"
APPROX_ANTHROPIC = "langchain-approx-3.3"

#: ctxviz roles -> LangChain message types (`message.type`, what start_on / end_on name).
TYPE_BY_ROLE = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}
#: LangChain message types -> the OpenAI role count_tokens_approximately adds (`_get_message_openai_role`).
ROLE_BY_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function"}
MESSAGE_TYPES = ("human", "ai", "system", "tool", "function", "chat")


class LCMessage(NamedTuple):
    """The fields of a LangChain message that its strategies read."""

    type: str
    content: str | list[Any]
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_call_id: str = ""
    name: str | None = None
    #: The OpenAI role count_tokens_approximately adds (a SystemMessage's `__openai_role__`, a ChatMessage's role).
    role: str = ""
    #: `response_metadata["model_provider"]` of an AI message (None when absent).
    provider: str | None = None
    #: `usage_metadata["total_tokens"]` of an AI message, when it is an int.
    total_tokens: int | None = None


def _record_data(raw: Any) -> tuple[str, dict[str, Any]] | None:
    """(type, fields) of a LangChain dump record, or None when the message came from another format."""
    kind = _class(raw)
    if kind:
        data = raw.get("kwargs")
    else:
        kind = _dict_type(raw)
        data = raw.get("data") if kind else None
    if not kind or not isinstance(data, dict):
        return None
    return kind, data


def _tool_call(name: Any, args: Any, call_id: Any) -> dict[str, Any]:
    # langchain_core.messages.tool.tool_call: the key order repr() shows.
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def _from_record(kind: str, data: dict[str, Any]) -> LCMessage:
    content = data.get("content", "")
    extra = data.get("additional_kwargs") if isinstance(data.get("additional_kwargs"), dict) else {}
    calls: list[dict[str, Any]] = []
    if kind == "ai":
        raw_calls = data.get("tool_calls") or []
        if not any(data.get(k) for k in ("tool_calls", "invalid_tool_calls", "tool_call_chunks")) and extra.get("tool_calls"):
            # AIMessage._backwards_compat_tool_calls: OpenAI-form calls in additional_kwargs.
            for raw_call in extra["tool_calls"]:
                if isinstance(raw_call, dict) and isinstance(raw_call.get("function"), dict):
                    try:
                        args = json.loads(raw_call["function"].get("arguments", ""))
                    except (json.JSONDecodeError, TypeError):
                        continue
                    calls.append(_tool_call(raw_call["function"].get("name") or "", args or {}, raw_call.get("id")))
        else:
            calls = [_tool_call(c.get("name"), c.get("args"), c.get("id")) for c in raw_calls if isinstance(c, dict)]
    if kind == "chat":
        role = str(data.get("role", ""))
    elif kind == "system":
        role = str(extra.get("__openai_role__", "system"))
    else:
        role = ROLE_BY_TYPE.get(kind, kind)
    meta = data.get("response_metadata") if isinstance(data.get("response_metadata"), dict) else {}
    usage = data.get("usage_metadata") if isinstance(data.get("usage_metadata"), dict) else None
    total = usage.get("total_tokens") if usage else None
    name = data.get("name")
    return LCMessage(kind, content if isinstance(content, (str, list)) else str(content), tuple(calls),
                     str(data.get("tool_call_id") or ""), name if isinstance(name, str) else None, role,
                     meta.get("model_provider") if kind == "ai" else None, total if isinstance(total, int) and not isinstance(total, bool) else None)


def _from_parts(message: Message) -> LCMessage:
    kind = TYPE_BY_ROLE.get(message.role, "human")
    blocky = any(isinstance(p, (ImagePart, ThinkingPart, OpaquePart)) for p in message.parts)
    content: str | list[Any]
    if blocky:
        blocks: list[Any] = []
        for p in message.parts:
            if isinstance(p, ImagePart):
                blocks.append({"type": "image_url", "image_url": {"url": p.url}})
            elif isinstance(p, ThinkingPart):
                blocks.append({"type": "thinking", "thinking": p.text})
            elif isinstance(p, OpaquePart):
                blocks.append({"type": p.type, "text": p.text})
            elif not isinstance(p, ToolCallPart) and part_text(p):
                blocks.append({"type": "text", "text": part_text(p)})
        content = blocks
    else:
        content = "\n".join(part_text(p) for p in message.parts if not isinstance(p, ToolCallPart) and part_text(p))
    calls: list[dict[str, Any]] = []
    if kind == "ai":
        for call in message.tool_calls:
            try:  # default_tool_parser: arguments that are not JSON make an invalid tool call (not counted)
                args = json.loads(call.arguments) if call.arguments else {}
            except json.JSONDecodeError:
                continue
            calls.append(_tool_call(call.name, args or {}, call.id or None))
    call_id = message.tool_call_id or next((p.tool_call_id for p in message.parts if isinstance(p, ToolResultPart)), "")
    total = None
    if message.usage is not None:
        u = message.usage
        total = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens + u.output_tokens
    return LCMessage(kind, content, tuple(calls), call_id if kind == "tool" else "", message.name or None,
                     ROLE_BY_TYPE[kind], None, total if kind == "ai" and total else None)


def lc_view(message: Message) -> LCMessage:
    """The LangChain message this session message is (or would be in a LangChain agent's state)."""
    found = _record_data(message.raw)
    return _from_record(*found) if found is not None else _from_parts(message)


_VIEWS: dict[int, tuple[weakref.ref[Message], LCMessage]] = {}


def cached_view(message: Message) -> LCMessage:
    """`lc_view`, kept as long as the message lives: a re-plan (every slider move, every turn of a
    replay, whose prefixes share the message objects) rebuilds no LangChain message."""
    key = id(message)
    hit = _VIEWS.get(key)
    if hit is not None and hit[0]() is message:
        return hit[1]
    view = lc_view(message)
    _VIEWS[key] = (weakref.ref(message, lambda _ref, k=key: _VIEWS.pop(k, None)), view)
    return view


#: SummarizationMiddleware._build_new_messages: how LangChain carries a summary in the messages.
SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
#: Positions of a session's earlier summaries among the messages LangChain holds (session
#: messages keep their index; the system prompt kept apart by a log is -1).
SUMMARY_POS = -2


def summary_message_text(summary: str) -> str:
    return SUMMARY_PREFIX + summary


def summary_view(summary: str) -> LCMessage:
    """An earlier summary as the HumanMessage LangChain's summarization puts first in the state."""
    return LCMessage("human", summary_message_text(summary), role="user")


def lc_type(message: Message) -> str:
    """The message's class as isinstance sees it (`human`, `ai`, `system`...): a chunk is its message.
    It is `lc_view(message).type`, read off the record or the role without building the view: the
    replays ask it of every message, and a view joins a copy of the message's whole text."""
    found = _record_data(message.raw)
    return found[0] if found is not None else TYPE_BY_ROLE.get(message.role, "human")


#: The `.type` of LangChain's message chunks, which is their class name, not their message's type.
CHUNK_TYPES = {"AIMessageChunk": "ai", "HumanMessageChunk": "human", "SystemMessageChunk": "system", "ToolMessageChunk": "tool",
               "FunctionMessageChunk": "function", "ChatMessageChunk": "chat"}


def lc_type_name(message: Message) -> str:
    """`message.type` as the string start_on / end_on compare: a chunk's is its class name
    (`AIMessageChunk`), so `end_on="ai"` does not match it (langchain_core `_is_message_type`)."""
    raw = message.raw
    if isinstance(raw, dict):
        ids = raw.get("id") if raw.get("lc") == 1 else None
        name = ids[-1] if isinstance(ids, list) and ids and isinstance(ids[-1], str) else raw.get("type")
        if isinstance(name, str) and name in CHUNK_TYPES and _record_data(raw) is not None:
            return name
    return lc_type(message)


def counted_text(view: LCMessage) -> tuple[str, int]:
    """(the characters count_tokens_approximately counts, joined; the number of image blocks)."""
    pieces: list[str] = []
    images = 0
    content = view.content
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
            elif isinstance(block, dict):
                kind = block.get("type", "")
                if kind in ("image", "image_url"):
                    images += 1
                elif kind == "text":
                    pieces.append(block.get("text", ""))
                else:
                    pieces.append(repr(block))  # LangChain: unknown blocks count their repr()
            else:
                pieces.append(repr(block))
    else:
        pieces.append(repr(content))
    # LangChain excludes Anthropic-format AI messages (list content), whose calls are in the content.
    if view.type == "ai" and not isinstance(content, list) and view.tool_calls:
        pieces.append(repr(list(view.tool_calls)))
    if view.type == "tool":
        pieces.append(view.tool_call_id)
    pieces.append(view.role or ROLE_BY_TYPE.get(view.type, view.type))
    if view.name:
        pieces.append(view.name)
    return "".join(pieces), images


def count_view(view: LCMessage, tokenizer: Tokenizer) -> int:
    """count_tokens_approximately([message]) with the tokenizer's chars_per_token (another
    tokenizer, a real encoding, replaces the characters / chars_per_token estimate only)."""
    text, images = counted_text(view)
    return tokenizer.count(text) + EXTRA_TOKENS_PER_MESSAGE + TOKENS_PER_IMAGE * images


def measure(message: Message, tokenizer: Tokenizer) -> int:
    return count_view(cached_view(message), tokenizer)


def chars_per_token(tokenizer: Tokenizer) -> float | None:
    return tokenizer.chars_per_token if isinstance(tokenizer, CharsPerTokenTokenizer) else None


def text_message_tokens(text: str, kind: str, tokenizer: Tokenizer) -> int:
    """A plain-text message of the given type (the summary HumanMessage, a system prompt)."""
    return count_view(LCMessage(kind, text, role=ROLE_BY_TYPE.get(kind, kind)), tokenizer)


def scaled_total(tokens: Sequence[int], views: Sequence[LCMessage | None]) -> int:
    """count_tokens_approximately(messages, use_usage_metadata_scaling=True) from per-message counts.

    `views[i]` is only read for AI messages (None elsewhere): if every AI message names the same
    `model_provider` and one reports `usage_metadata.total_tokens`, the total is multiplied by
    that report / the count up to that message, clamped to [1, 1.25], and rounded up.
    """
    token_count = 0.0
    provider: str | None = None
    invalid = False
    last_total: int | None = None
    at_last: float | None = None
    for t, view in zip(tokens, views, strict=True):
        token_count += t
        if view is not None and view.type == "ai":
            if provider is None:
                provider = view.provider  # LangChain: a None provider is replaced by the next one
            elif view.provider != provider:
                invalid = True
            if view.total_tokens is not None:
                last_total = view.total_tokens
                at_last = token_count
    if len(tokens) > 1 and not invalid and provider is not None and last_total is not None and at_last:
        token_count *= min(1.25, max(1.0, last_total / at_last))
    return math.ceil(token_count)


def model_provider(model: str) -> str:
    """The LangChain provider of the session's model, from ctxviz's catalogue ("" when unknown)."""
    entry = find_model(model)
    if entry is not None:
        return entry.provider
    lowered = model.lower()
    return "anthropic" if "claude" in lowered else "openai" if lowered.startswith(("gpt", "o1", "o3", "o4")) else ""


def tokenizer_for_model(model: str) -> str:
    """SummarizationMiddleware counts 3.3 characters per token for Anthropic chat models."""
    return APPROX_ANTHROPIC if model_provider(model) == "anthropic" else APPROX


#: `model.profile["max_input_tokens"]` of the catalogue's models, from the integrations' profile
#: tables (langchain_openai 1.7.4 and langchain_anthropic 1.7.10, data/_profiles.py): GPT-5's is its
#: input limit, below its 400,000-token window.
PROFILE_MAX_INPUT_TOKENS: dict[str, int] = {
    "gpt-4o": 128000, "gpt-4o-mini": 128000, "gpt-4.1": 1047576, "gpt-4.1-mini": 1047576, "gpt-5": 272000, "gpt-5-mini": 272000,
    "o3": 200000, "o4-mini": 200000, "gpt-4-turbo": 128000, "gpt-4": 8192, "gpt-3.5-turbo": 16385,
    "claude-sonnet-4-5": 200000, "claude-haiku-4-5": 200000,
}


def max_input_tokens(model: str, override: int) -> int | None:
    """The model profile's max_input_tokens: the parameter when set, else LangChain's profile of the
    catalogue model, else the catalogue's context window (None: unknown model)."""
    if override > 0:
        return override
    entry = find_model(model)
    if entry is None:
        return None
    return PROFILE_MAX_INPUT_TOKENS.get(entry.name, entry.context_window)
