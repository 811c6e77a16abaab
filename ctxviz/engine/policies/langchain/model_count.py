"""`ChatOpenAI.get_num_tokens_from_messages` (langchain-openai 1.7.4, chat_models/base.py): what
LangChain's ContextEditingMiddleware counts with `token_count_method="model"` when the agent's model
is an OpenAI chat model.

Each message is converted as ChatOpenAI sends it (`_convert_message_to_dict`: the role, the name,
the content with thinking and tool_use blocks removed and image blocks made `image_url`, the tool
calls, a tool message's `tool_call_id`), then counted as the OpenAI cookbook does: 3 tokens per
message (4 for gpt-3.5-turbo-0301), the encoded text of every value, the arguments and name of each
tool call, 3 for a `tool_call_id` (not its text), 1 per name (-1 for gpt-3.5-turbo-0301), an image by
OpenAI's tiles from its size (85 at `detail: low`), and 3 for the reply's priming, once per list.
The encoding is tiktoken's for the model, else o200k_base for gpt-4o, gpt-4.1, gpt-5 and gpt-6
names and cl100k_base for the rest (`_get_encoding_model`).

What this cannot do offline is said, never guessed: an image given by URL is downloaded by ChatOpenAI
to learn its size (ctxviz counts it as ChatOpenAI does when the download fails: nothing); other
chat models count their own way (ChatAnthropic asks Anthropic's count_tokens API).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass
from typing import Any

from ....errors import ParameterError
from ...images import data_uri_size
from ...session import Message, ToolCallPart
from ...tokenizers import TiktokenTokenizer, encoding_name_for_model, load_encoding
from .counting import LCMessage, _record_data

#: The model names get_num_tokens_from_messages counts (it raises NotImplementedError for others).
COUNTED_PREFIXES = ("gpt-3.5-turbo", "gpt-4", "gpt-5", "gpt-6", "o1", "o3", "o4")
#: Content blocks _format_message_content removes before counting.
REMOVED_BLOCKS = ("tool_use", "thinking", "reasoning_content", "function_call", "code_interpreter_call")
PRIMING = 3  # every reply is primed with <im_start>assistant


@dataclass(frozen=True)
class ModelCounter:
    """ChatOpenAI's count for one model."""

    model: str
    encoding: str
    per_message: int
    per_name: int

    def text(self, text: str) -> int:
        return TiktokenTokenizer(self.encoding).count(text)

    def special_token_in(self, text: str) -> str:
        """A special token the text holds ("" if none): tiktoken's `encode` raises on it."""
        if "<|" not in text:
            return ""
        return next((s for s in load_encoding(self.encoding).special_tokens_set if s in text), "")


def model_counter(model: str) -> ModelCounter:
    """The count ChatOpenAI uses for `model`, or one line saying why ctxviz cannot reproduce it."""
    if not model:
        raise ParameterError("token_count_method=model counts with the agent's chat model, and the session names none: "
                             "set model=NAME (for example --set model=gpt-4o)")
    if "claude" in model.lower():
        raise ParameterError(f"token_count_method=model with {model}: ChatAnthropic counts with Anthropic's count_tokens API "
                             "(a network call), which ctxviz does not make offline; use token_count_method=approximate")
    if not model.startswith(COUNTED_PREFIXES):
        raise ParameterError(f"token_count_method=model with {model}: ctxviz reproduces ChatOpenAI's count only, for the models it "
                             f"counts ({', '.join(p + '*' for p in COUNTED_PREFIXES)}; others raise NotImplementedError there)")
    encoding = encoding_name_for_model(model)
    if encoding not in ("o200k_base", "cl100k_base"):  # tiktoken does not know it: LangChain's own fallback
        encoding = "o200k_base" if model.lower().startswith(("gpt-4o", "gpt-4.1", "gpt-5", "gpt-6")) else "cl100k_base"
    old = model.startswith("gpt-3.5-turbo-0301")
    return ModelCounter(model, encoding, 4 if old else 3, -1 if old else 1)


def image_tokens(width: int, height: int) -> int:
    """ChatOpenAI's `_count_image_tokens` (its `_resize` divides in whole pixels)."""
    if width > 2048 or height > 2048:
        if width > height:
            width, height = 2048, (height * 2048) // width
        else:
            width, height = (width * 2048) // height, 2048
    if width > 768 and height > 768:
        if width > height:
            width, height = (width * 768) // height, 768
        else:
            width, height = 768, (height * 768) // width
    return 170 * math.ceil(height / 512) * math.ceil(width / 512) + 85


def openai_dict(view: LCMessage, message: Message | None = None) -> dict[str, Any]:
    """The message as ChatOpenAI sends it (`_convert_message_to_dict`), for counting: `view` as
    LangChain holds it (perhaps edited), `message` the session message it comes from, if any."""
    data = (_record_data(message.raw) or ("", {}))[1] if message is not None else {}
    extra = data.get("additional_kwargs") if isinstance(data.get("additional_kwargs"), dict) else {}
    out: dict[str, Any] = {"content": _content(view.content)}
    name = view.name or extra.get("name")
    if name is not None:
        out["name"] = name
    out["role"] = view.role or view.type
    if view.type == "ai":
        invalid = _invalid_calls(message, data)
        if view.tool_calls or invalid:
            out["tool_calls"] = [{"type": "function", "id": c.get("id"), "function": {"name": c.get("name"), "arguments": json.dumps(
                c.get("args"), ensure_ascii=False)}} for c in view.tool_calls] + invalid
        elif "tool_calls" in extra:
            out["tool_calls"] = extra["tool_calls"]
        elif "function_call" in extra:
            out["function_call"] = extra["function_call"]
        if "tool_calls" in out or "function_call" in out:
            out["content"] = out["content"] or None
    elif view.type == "tool":
        out = {"content": out["content"], "role": "tool", "tool_call_id": view.tool_call_id}
    return out


def _invalid_calls(message: Message | None, data: dict[str, Any]) -> list[dict[str, Any]]:
    """`invalid_tool_calls` (arguments that are not JSON), sent with their text as it is."""
    if data:
        calls = [c for c in data.get("invalid_tool_calls") or [] if isinstance(c, dict)]
        return [{"type": "function", "id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("args")}} for c in calls]
    if message is None:
        return []
    out = []
    for part in message.parts:
        if isinstance(part, ToolCallPart) and part.arguments:
            try:
                json.loads(part.arguments)
            except json.JSONDecodeError:
                out.append({"type": "function", "id": part.id or None, "function": {"name": part.name, "arguments": part.arguments}})
    return out


def _content(content: Any) -> Any:
    """`_format_message_content`: unwanted blocks removed, image blocks as `image_url`."""
    if not content or not isinstance(content, list):
        return content
    out: list[Any] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in REMOVED_BLOCKS:
            continue
        if kind == "image" and isinstance(block, dict):
            url = _image_url(block)
            if url:
                out.append({"type": "image_url", "image_url": {"url": url}})
            continue
        out.append(block)
    return out


def _image_url(block: dict[str, Any]) -> str:
    """The URL an image block becomes: a standard block's `url` or base64 data (LangChain v1 and v0
    spellings), or an Anthropic block's `source`."""
    if block.get("url"):
        return str(block["url"])
    data = block.get("base64") or (block.get("data") if block.get("source_type") == "base64" else None)
    if data:
        return f"data:{block.get('mime_type') or 'image/png'};base64,{data}"
    source = block.get("source")
    if isinstance(source, dict):
        if source.get("type") == "base64" and source.get("media_type") and source.get("data"):
            return f"data:{source['media_type']};base64,{source['data']}"
        if source.get("type") == "url":
            return str(source.get("url") or "")
    return ""


#: Pillow refuses an image of more pixels than this (DecompressionBombError: twice MAX_IMAGE_PIXELS).
PILLOW_PIXEL_LIMIT = 2 * 89_478_485


def readable_size(url: str) -> tuple[int, int] | None:
    """The size of a base64 image as Pillow reads it for ChatOpenAI, or None where Pillow raises:
    a header ctxviz cannot read, a PNG whose first chunk is not IHDR, a decompression bomb."""
    size = data_uri_size(url)
    if size is None:
        return None
    payload = url.split(",", 1)[1][:64]
    try:
        head = base64.b64decode(payload[: len(payload) - len(payload) % 4])
    except (binascii.Error, ValueError):
        return None
    if head.startswith(b"\x89PNG") and head[12:16] != b"IHDR":
        return None
    return size if size[0] * size[1] <= PILLOW_PIXEL_LIMIT else None


def message_tokens(counter: ModelCounter, view: LCMessage, message: Message | None = None, problems: list[str] | None = None) -> int:
    """The message's share of get_num_tokens_from_messages (without the reply's priming); what
    ChatOpenAI would raise on, or cannot size offline, is appended to `problems`."""
    said = problems if problems is not None else []
    total = counter.per_message
    for key, value in openai_dict(view, message).items():
        if key == "tool_call_id":
            total += 3  # OpenAI does not say how a tool message's id counts: LangChain adds 3
            continue
        if isinstance(value, list):
            for item in value:
                total += _item_tokens(counter, item, said)
        elif not value:
            continue
        else:
            total += _text_tokens(counter, str(value), said)
        if key == "name":
            total += counter.per_name
    return total


def _text_tokens(counter: ModelCounter, text: str, problems: list[str]) -> int:
    special = counter.special_token_in(text)
    if special:
        problems.append(f"its text holds the special token {special!r}, on which tiktoken's encode raises ValueError")
    return counter.text(text)


def _item_tokens(counter: ModelCounter, item: Any, problems: list[str]) -> int:
    if isinstance(item, str):
        return _text_tokens(counter, item, problems)
    kind = item.get("type") if isinstance(item, dict) else None
    if kind == "text":
        return _text_tokens(counter, str(item.get("text", "")), problems)
    if kind == "image_url":
        image = item.get("image_url") if isinstance(item.get("image_url"), dict) else {}
        url = str(image.get("url", ""))
        if image.get("detail") == "low":
            return 85
        if url.startswith("data:image"):
            size = readable_size(url)
            if size is None:
                problems.append("Pillow cannot read one of its images (or ctxviz cannot read its size), and ChatOpenAI raises there")
                return 0
            return image_tokens(*size)
        if "://" in url:
            problems.append("ChatOpenAI downloads an image given by URL to size it; offline ctxviz counts it as a failed download does: 0")
        return 0
    if kind == "function":
        function = item.get("function") if isinstance(item.get("function"), dict) else {}
        return _text_tokens(counter, str(function.get("arguments") or ""), problems) + _text_tokens(counter, str(function.get("name") or ""), problems)
    if kind == "file":
        return 0  # ChatOpenAI warns that file inputs are not counted
    problems.append(f"ChatOpenAI raises ValueError on its {kind!r} content block (Unrecognized content block type)")
    return 0
