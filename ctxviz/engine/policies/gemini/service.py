"""ChatCompressionService's steps as ctxviz reproduces them (google-gemini/gemini-cli at 5411f11,
packages/core/src/context/chatCompressionService.ts): the split point, the truncation of function
responses past their budget, the prompt count it starts from, and the stand-in summary. Shared by
the step-by-step plan (compression.py) and the plan in columns (compression_columns.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from ...session import Message, Session, Summary
from .history import Content, estimate_text, json_length, response_string

ZONES = ("system", "summarized", "summary", "history")
DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 0.5
COMPRESSION_PRESERVE_THRESHOLD = 0.3
COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET = 50_000
DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD = 40_000
ACK_TEXT = "Got it. Thanks for the additional context!"
DEFAULT_TOKEN_LIMIT = 1_048_576
GEMMA_4_TOKEN_LIMIT = 256_000
#: core/tokenLimits.ts: the Gemma 4 models have 256,000; every other model (listed or not) 1,048,576.
TOKEN_LIMITS = {"gemma-4-31b-it": GEMMA_4_TOKEN_LIMIT, "gemma-4-26b-a4b-it": GEMMA_4_TOKEN_LIMIT}
#: Where ctxviz says Gemini CLI saved a truncated output (its project temp dir is not in the log).
TOOL_OUTPUT_DIR = "~/.gemini/tmp/<project>/tool-outputs"


def token_limit(model: str) -> int:
    """tokenLimit(model): an exact-name switch."""
    return TOKEN_LIMITS.get(model, DEFAULT_TOKEN_LIMIT)


class CompressionSettings(Protocol):
    """What these steps read of `compression.GeminiCompression`."""

    truncateToolOutputThreshold: int  # noqa: N815 (Gemini CLI's spelling)


# -- the framework's functions ------------------------------------------------------------------

def find_compress_split_point(lengths: list[int], splittable: list[bool], last_is_plain_model: bool, fraction: float) -> int:
    """findCompressSplitPoint over the Contents' JSON lengths; `splittable[i]`: a user Content
    without function responses; `last_is_plain_model`: the last Content is a model turn without
    function calls (so everything may be compressed)."""
    if fraction <= 0 or fraction >= 1:
        raise ValueError("Fraction must be between 0 and 1")
    target = sum(lengths) * fraction
    last_split = 0
    cumulative = 0
    for i, length in enumerate(lengths):
        if splittable[i]:
            if cumulative >= target:
                return i
            last_split = i
        cumulative += length
    if lengths and last_is_plain_model:
        return len(lengths)
    return last_split


def format_truncated_tool_output(content: str, output_file: str, max_chars: int) -> str:
    """fileUtils.formatTruncatedToolOutput, with JavaScript's UTF-16 lengths and en-US numbers."""
    if content.isascii():  # one UTF-16 unit a character: no encoding (most outputs, each read at every compression)
        length = len(content)
        if length <= max_chars:
            return content
        head_chars = math.floor(max_chars * 0.2)
        tail_chars = max_chars - head_chars
        head = content[:head_chars]
        tail = content[length - tail_chars:] if tail_chars else content
    else:
        units = content.encode("utf-16-le", "surrogatepass")
        length = len(units) // 2
        if length <= max_chars:
            return content
        head_chars = math.floor(max_chars * 0.2)
        tail_chars = max_chars - head_chars
        head = units[: head_chars * 2].decode("utf-16-le", "surrogatepass")
        tail = units[len(units) - tail_chars * 2:].decode("utf-16-le", "surrogatepass") if tail_chars else content
    omitted = length - head_chars - tail_chars
    return (f"Output too large. Showing first {head_chars:,} and last {tail_chars:,} characters. For full output see: {output_file}\n"
            f"{head}\n\n... [{omitted:,} characters omitted] ...\n\n{tail}")


def _file_name(tool: str, n: int) -> str:
    return f"{TOOL_OUTPUT_DIR}/{_safe_name(tool)}_{n}.txt"


@lru_cache(maxsize=1024)
def _safe_name(tool: str) -> str:
    """The tool's name as a file name: made once per name (a compression names a file for each of
    the thousands of outputs past the budget)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in tool).lower() or "unknown_tool"


@dataclass
class Truncation:
    """A function response truncateHistoryToBudget replaced, and by what."""

    content: int  # index of the Content
    part: int
    output: str
    tokens_before: int


def truncate_history_to_budget(contents: list[Content], max_chars: int) -> list[Truncation]:
    """truncateHistoryToBudget: newest Content first, its parts last first; each response counts
    estimateTokenCountSync([{text: string}]); past the budget it is truncated, and its truncated
    text counts instead."""
    parts = [(ci, pi, p) for ci, c in enumerate(contents) for pi, p in enumerate(c.parts) if p.get("functionResponse")]
    return [Truncation(parts[k][0], parts[k][1], output, tokens) for k, output, tokens in truncate_parts(parts, max_chars)]


def truncate_parts(parts: Sequence[tuple[Any, ...]], max_chars: int) -> list[tuple[int, str, int]]:
    """`truncate_history_to_budget` over the function response parts alone, listed in the history's
    order as (Content index, part index, part, ...): (position in `parts`, output, tokens before)
    of each one truncated, newest first. (The replayer keeps that list as the history grows, so
    a compression reads no other part.)"""
    counter = 0
    truncation_id = 0
    out: list[tuple[int, str, int]] = []
    budget = COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET
    for k in range(len(parts) - 1, -1, -1):
        response = parts[k][2]["functionResponse"]
        text = response_string(response.get("response") if isinstance(response, dict) else None)
        tokens = math.floor(estimate_text(text))  # estimate_part({"text": text})
        if counter + tokens > budget:
            truncation_id += 1  # config.getNextCompressionTruncationId()
            if text.isascii() and len(text) <= max_chars:
                output = text  # formatTruncatedToolOutput keeps it whole (its file is named for nothing)
                counter += tokens
            else:
                name = response.get("name") if isinstance(response, dict) else None
                output = format_truncated_tool_output(text, _file_name(name or "unknown_tool", truncation_id), max_chars)
                counter += math.floor(estimate_text(output))
            out.append((k, output, tokens))
        else:
            counter += tokens
    return out


def truncated_part(part: dict[str, Any], output: str) -> dict[str, Any]:
    """`{functionResponse: {...part.functionResponse, response: {output}}}`: the key keeps its place."""
    return {"functionResponse": {**part["functionResponse"], "response": {"output": output}}}


def reported_prompt_tokens(message: Message) -> int | None:
    """The `promptTokenCount` Gemini CLI keeps as its last prompt token count: a `gemini` record's
    `tokens.input`; from another format, the reported input the window held."""
    raw = message.raw
    if isinstance(raw, dict) and raw.get("type") == "gemini" and isinstance(raw.get("tokens"), dict):
        value = raw["tokens"].get("input")
        if isinstance(value, int) and value > 0:
            return value
    if message.usage is not None and message.usage.window_fill:
        return message.usage.window_fill
    return None


def stand_in_summary(messages: list[Message] | tuple[Message, ...], text: str | None = None) -> str:
    from ...summarizers import supyagent_snapshot  # lazily: it imports urllib, which ctxviz loads only to summarise

    body = text if text is not None else supyagent_snapshot(messages)
    return f"<state_snapshot>\n{body}\n</state_snapshot>"


def _max_chars(params: CompressionSettings, limit: int, prompt_tokens: int | None) -> int:
    """config.getTruncateToolOutputThreshold: min(4 x (tokenLimit - last prompt count), the setting); not below 0."""
    if prompt_tokens is None:
        return params.truncateToolOutputThreshold
    return max(0, min(4 * (limit - prompt_tokens), params.truncateToolOutputThreshold))


def _content_length(c: Content, ci: int, truncations: dict[tuple[int, int], Truncation]) -> int:
    lengths = list(c.part_lengths)
    for pi in range(len(c.parts)):
        t = truncations.get((ci, pi))
        if t is not None and not _unchanged(c.parts[pi], t.output):
            lengths[pi] = json_length(truncated_part(c.parts[pi], t.output))
    wrapper = len('{"role":"') + len(c.role) + len('","parts":[') + len("]}")
    return wrapper + sum(lengths) + max(0, len(lengths) - 1)


def _unchanged(part: dict[str, Any], output: str) -> bool:
    """Whether `truncated_part(part, output)` is `part` itself, as JSON: a response {output} kept
    whole (an output under the character limit, past the token budget), so its length is known
    without writing the output's JSON again."""
    if len(part) != 1:
        return False
    response = part.get("functionResponse")
    return isinstance(response, dict) and response.get("response") == {"output": output}


def _part_after(c: Content, ci: int, pi: int, truncations: dict[tuple[int, int], Truncation]) -> dict[str, Any]:
    t = truncations.get((ci, pi))
    return truncated_part(c.parts[pi], t.output) if t is not None else c.parts[pi]


def _part_owner(c: Content, part_index: int, m: Message) -> bool:
    """Whether part `part_index` of Content `c` is message `m`'s (a tool message owns its function response)."""
    part = c.parts[part_index]
    response = part.get("functionResponse")
    if not isinstance(response, dict):
        return False
    if m.role != "tool":
        return len(c.messages) == 1
    tool_messages = [x for x in c.messages if x.role == "tool"]
    if response.get("id") and any(x.tool_call_id == response.get("id") for x in tool_messages):
        return response.get("id") == m.tool_call_id
    responses = [i for i, p in enumerate(c.parts) if "functionResponse" in p]
    position = responses.index(part_index)
    return position < len(tool_messages) and tool_messages[position] is m


def _summarized_before(session: Session, summary: Summary | None) -> list[Message]:
    if summary is None:
        return []
    ids = set(summary.covers)
    return [m for m in session.messages if m.id in ids]
