"""How mnesis sees and counts a ctxviz session (src/mnesis at 677d1898): its ModelInfo table, how a
message renders (a tool call and its output are one ToolPart), TokenEstimator.estimate_message,
and which tool messages an earlier message's ToolParts carry.

Both the step-by-step build (`context_builder.py`) and the build in columns
(`context_builder_columns.py`) read these, so they live apart from either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...counting import TokenCounts
from ...session import (
    FileRefPart,
    Message,
    Part,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    render_file_ref,
)
from ...tokenizers import Tokenizer

#: Where the build lays its context out, in order.
ZONES = ("system", "summarized", "raw")


@dataclass(frozen=True)
class ModelInfo:
    context_limit: int
    max_output_tokens: int
    encoding: str


def model_info(model: str) -> ModelInfo:
    """ModelInfo.from_model_string: the lowercased name after the first `/`, cases in mnesis' order."""
    name = model.lower().split("/", 1)[-1]
    if "claude-opus" in name or "claude-3-opus" in name:
        return ModelInfo(200_000, 32_000, "claude-heuristic")
    if "claude" in name:
        return ModelInfo(200_000, 8192, "claude-heuristic")
    if any(k in name for k in ("o1", "o2", "o3", "o4")):  # substring test, as mnesis does
        return ModelInfo(200_000, 100_000, "o200k_base")
    if "gpt-4o" in name:
        return ModelInfo(128_000, 16_384, "o200k_base")
    if "gpt-4" in name or "gpt-3" in name:
        return ModelInfo(128_000, 4096, "cl100k_base")
    if "gemini" in name:
        return ModelInfo(1_000_000, 8192, "cl100k_base")
    return ModelInfo(128_000, 4096, "cl100k_base")


def reasoning_str(text: str) -> str:
    """`str()` of mnesis' ReasoningPart (pydantic's `field=repr(value)` form): what its estimator
    measures for a part that is neither text, tool nor file."""
    return f"type='reasoning' text={text!r}"


def render_tool(call: ToolCallPart, result: ToolResultPart | None) -> str:
    """ContextBuilder._render_tool_part: a call and its output are ONE ToolPart in mnesis; a
    compacted output makes the whole part a tombstone."""
    if result is not None and result.compacted_at:
        return f"[Tool '{call.name}' output compacted at {result.compacted_at}]"
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        arguments = call.arguments
    if not isinstance(arguments, dict):  # ToolPart.input is a dict: a non-object argument is kept under a key
        arguments = {"input": arguments}
    lines = [f"[Tool: {call.name}]", f"Input: {json.dumps(arguments, indent=2)}"]
    if result is not None and result.text and not result.is_error:
        lines.append(f"Output: {result.text}")
    if result is not None and result.text and result.is_error:
        lines.append(f"Error: {result.text}")
    lines.append("[/Tool]")
    return "\n".join(lines)


def render_orphan_result(part: ToolResultPart, tool_name: str) -> str:
    """A tool output whose call is not in the message before it: mnesis has no such part (its
    ToolPart holds both); ctxviz sends it as a ToolPart without input."""
    name = tool_name or "tool"
    if part.compacted_at:
        return f"[Tool '{name}' output compacted at {part.compacted_at}]"
    body = f"Error: {part.text}" if part.is_error else f"Output: {part.text}"
    return f"[Tool: {name}]\n{body}\n[/Tool]" if part.text else f"[Tool: {name}]\n[/Tool]"


Results = dict[str, ToolResultPart]


def render_part(part: Part, tool_name: str, results: Results, own_calls: frozenset[str], for_estimate: bool = False) -> str | None:
    """_convert_message's rendering of one part; None where mnesis adds nothing."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return render_tool(part, results.get(part.id))
    if isinstance(part, ToolResultPart):
        return None if part.tool_call_id in own_calls else render_orphan_result(part, tool_name)
    if isinstance(part, FileRefPart):
        if for_estimate:  # mnesis' estimator renders Tokens without the thousands separator (a quirk)
            return render_file_ref(part).replace(f"Tokens: {part.token_count:,}", f"Tokens: {part.token_count}")
        return render_file_ref(part)
    if isinstance(part, ThinkingPart):
        return part.text or None  # mnesis: `if text:` — an empty reasoning part adds no line
    return None


def _own_results(message: Message) -> tuple[Results, frozenset[str]]:
    calls = frozenset(p.id for p in message.parts if isinstance(p, ToolCallPart))
    return {p.tool_call_id: p for p in message.parts if isinstance(p, ToolResultPart) and p.tool_call_id in calls}, calls


def estimate_message(message: Message, tokenizer: Tokenizer, results: Results | None = None) -> int:
    """TokenEstimator.estimate_message: 4 for the role, each text / tool / file part's estimate,
    and other parts (reasoning) by the length of their `str()` / 4. `results`: the outputs of this
    message's calls that arrive in the tool messages after it (mnesis holds them in the call's part)."""
    return _estimate(message, tokenizer, results)[0]


def _estimate(message: Message, tokenizer: Tokenizer, results: Results | None) -> tuple[int, int]:
    """The message's estimate, and the share of it its ToolParts make (BuiltContext.tool_output_tokens
    counts those again for the messages it sends)."""
    own, calls = _own_results(message)
    results = {**own, **(results or {})}
    total = 4
    tools = 0
    for part in message.parts:
        if isinstance(part, ThinkingPart):
            total += max(1, len(reasoning_str(part.text)) // 4)
        elif isinstance(part, (TextPart, ToolCallPart, ToolResultPart, FileRefPart)):
            text = render_part(part, message.name, results, calls, for_estimate=True)
            if text is not None:
                count = tokenizer.count(text)
                total += count
                if isinstance(part, (ToolCallPart, ToolResultPart)):
                    tools += count
        else:
            total += max(1, len(repr(part)) // 4)
    return total, tools


@dataclass(frozen=True)
class ToolParts:
    """How a ctxviz session maps onto mnesis messages: a tool message answering the calls of the
    assistant message before it is not a mnesis message; its outputs live in that message's ToolParts."""

    carrier: tuple[int | None, ...]  # per message: the index of the message whose ToolPart holds its output
    results: dict[int, Results]  # per carrying message: its calls' outputs, by call id


_TOOL_PARTS: dict[int, tuple[Session, ToolParts]] = {}


def tool_parts(session: Session) -> ToolParts:
    """Cached per session object (sessions are immutable; a re-plan on a slider move reuses it)."""
    found = _TOOL_PARTS.get(id(session))
    if found is not None and found[0] is session:
        return found[1]
    parts = _tool_parts(session)
    if len(_TOOL_PARTS) >= 8:
        _TOOL_PARTS.pop(next(iter(_TOOL_PARTS)))
    _TOOL_PARTS[id(session)] = (session, parts)
    return parts


def _tool_parts(session: Session) -> ToolParts:
    carrier: list[int | None] = [None] * len(session.messages)
    results: dict[int, Results] = {}
    current: int | None = None  # the message whose calls a following tool message may answer
    calls: frozenset[str] = frozenset()
    for m in session.messages:
        if m.role == "system":
            continue
        if (m.role == "tool" and current is not None and m.parts
                and all(isinstance(p, ToolResultPart) and p.tool_call_id in calls for p in m.parts)):
            carrier[m.index] = current
            results.setdefault(current, {}).update({p.tool_call_id: p for p in m.parts if isinstance(p, ToolResultPart)})
            continue
        current = m.index
        calls = frozenset(p.id for p in m.parts if isinstance(p, ToolCallPart))
    return ToolParts(tuple(carrier), results)


def measure_session(session: Session, tokenizer: Tokenizer) -> tuple[int, ...]:
    """Each mnesis message's estimate on the ctxviz message that starts it; the tool messages whose
    outputs it carries count 0 (their tokens are in the carrier's ToolParts).

    The ToolParts' share of each estimate is kept with the counts (`measured_tool_tokens`): what
    BuiltContext reports as tool_output_tokens is their sum over the messages sent, which a plan
    then reads instead of rendering every tool call again."""
    parts = tool_parts(session)
    counts: list[int] = []
    tools: list[int] = []
    for m in session.messages:
        if parts.carrier[m.index] is not None:
            counts.append(0)
            tools.append(0)
            continue
        total, tool = _estimate(m, tokenizer, parts.results.get(m.index))
        counts.append(total)
        tools.append(tool)
    measured = tuple(counts)
    session.derived[(_TOOL_TOKENS, tokenizer.name)] = (measured, tools)
    return measured


_TOOL_TOKENS = "mnesis tool part tokens"


def measured_tool_tokens(session: Session, counts: TokenCounts) -> list[int] | None:
    """Per message, the tokens of its ToolParts as `measure_session` counted them for these very
    counts, or None (counts made another way: a replay's, or extended)."""
    found = session.derived.get((_TOOL_TOKENS, counts.tokenizer.name))
    return found[1] if found is not None and found[0] is counts.message_tokens else None


def render_message(message: Message, results: Results | None = None) -> dict[str, Any]:
    own, calls = _own_results(message)
    results = {**own, **(results or {})}
    rendered = [text for p in message.parts if (text := render_part(p, message.name, results, calls)) is not None]
    role = "user" if message.role == "user" else "assistant"  # mnesis stores tool parts in assistant messages
    return {"role": role, "content": "\n".join(rendered)}


def tool_output_tokens(included: list[Message], counts: TokenCounts, parts: ToolParts) -> int:
    """BuiltContext.tool_output_tokens: each included ToolPart's estimate (call and output together)."""
    total = 0
    for m in included:
        own, calls = _own_results(m)
        results = {**own, **parts.results.get(m.index, {})}
        for p in m.parts:
            if isinstance(p, (ToolCallPart, ToolResultPart)):
                text = render_part(p, m.name, results, calls)
                total += counts.text(text) if text else 0
    return total
