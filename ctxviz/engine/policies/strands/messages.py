"""How Strands Agents holds a conversation, and how it estimates its tokens (strands-agents 1.62.0).

Strands keeps Bedrock-style messages: only `user` and `assistant` roles, content blocks (`text`,
`image`, `toolUse`, `toolResult`, `reasoningContent`), the system prompt passed apart. Tool results
come back to the model in one user message holding every result of the turn, so a run of ctxviz
`tool` messages is one Strands message: its conversation managers count (and trim) that. Each Strands
message remembers the ctxviz messages it was made of (`members`), so decisions map back.

Its token estimate (strands/models/model.py `_estimate_tokens_with_heuristic`, what
`Model.count_tokens` returns unless a provider overrides it): ceil(len / 4) per text,
ceil(len(json.dumps(x)) / 2) per JSON value (tool inputs, tool specs); images are not counted.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ...catalog import find_model
from ...counting import derived_from_counts
from ...session import (
    FileRefPart,
    ImagePart,
    Message,
    OpaquePart,
    Session,
    Summary,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    part_text,
)
from ...tokenizers import Tokenizer

FRAMEWORK = "Strands"
FRAMEWORK_VERSION = "strands-agents 1.62.0"
#: strands/models/_defaults.py DEFAULT_CONTEXT_WINDOW_LIMIT: used when the model reports none.
DEFAULT_CONTEXT_WINDOW_LIMIT = 200_000
COUNTER = "messages (Strands messages: a turn's tool results are one); ceil(chars/4) text, ceil(JSON chars/2) for its overflow estimate"


def _image_format(part: ImagePart) -> str:
    if part.media_type:
        return part.media_type.split("/")[-1]
    if part.url.startswith("data:image/"):
        return part.url[len("data:image/"):].split(";", 1)[0].split(",", 1)[0]
    return ""


def image_bytes(part: ImagePart) -> int:
    """The image's size in bytes as Strands holds it (`source.bytes`): a data: URI decoded; a URL
    ctxviz cannot fetch counts 0 (Strands would have read the bytes)."""
    if not part.url.startswith("data:") or "," not in part.url:
        return 0
    header, data = part.url.split(",", 1)
    if ";base64" not in header:
        return len(data.encode())
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return 0


def image_block(part: ImagePart) -> dict[str, Any]:
    fmt = _image_format(part)
    image: dict[str, Any] = {"source": {"size": image_bytes(part)}}
    if fmt:
        image["format"] = fmt
    return {"image": image}


def _arguments(call: ToolCallPart) -> Any:
    try:
        return json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return call.arguments


def _tool_result(message: Message) -> dict[str, Any]:
    """A ctxviz tool message as one Strands `toolResult` block: its texts and images are the items."""
    results = [p for p in message.parts if isinstance(p, ToolResultPart)]
    tool_use_id = message.tool_call_id or (results[0].tool_call_id if results else "")
    items: list[dict[str, Any]] = []
    for p in message.parts:
        if isinstance(p, ImagePart):
            items.append(image_block(p))
        elif isinstance(p, (TextPart, ToolResultPart, FileRefPart, OpaquePart)):
            items.append({"text": part_text(p)})
    error = any(p.is_error for p in results)
    return {"toolResult": {"toolUseId": tool_use_id, "status": "error" if error else "success", "content": items}}


def blocks(message: Message) -> list[dict[str, Any]]:
    """The Strands content blocks of one ctxviz message."""
    if message.role == "tool":
        return [_tool_result(message)]
    out: list[dict[str, Any]] = []
    for p in message.parts:
        if isinstance(p, ImagePart):
            out.append(image_block(p))
        elif isinstance(p, ToolCallPart):
            out.append({"toolUse": {"toolUseId": p.id, "name": p.name, "input": _arguments(p)}})
        elif isinstance(p, ToolResultPart):
            out.append({"toolResult": {"toolUseId": p.tool_call_id, "status": "error" if p.is_error else "success",
                                       "content": [{"text": p.text}]}})
        elif isinstance(p, ThinkingPart):
            out.append({"reasoningContent": {"reasoningText": {"text": p.text}}})
        elif isinstance(p, (TextPart, FileRefPart, OpaquePart)):
            out.append({"text": part_text(p)})
    return out


def block_kinds(message: Message) -> frozenset[str]:
    """The keys of `blocks(message)`'s blocks (what `StrandsMessage.has` finds), without building
    them: no copy of a text, no JSON read of a call's arguments."""
    if message.role == "tool":
        return _TOOL_RESULT
    kinds = [_KIND[type(p)] for p in message.parts if type(p) in _KIND]
    return frozenset(kinds) if len(kinds) != 1 else _ONE_KIND[kinds[0]]


#: Each part's block kind in `blocks` (the part types have no subclasses).
_KIND: dict[type, str] = {ImagePart: "image", ToolCallPart: "toolUse", ToolResultPart: "toolResult", ThinkingPart: "reasoningContent",
                          TextPart: "text", FileRefPart: "text", OpaquePart: "text"}
_ONE_KIND = {kind: frozenset((kind,)) for kind in _KIND.values()}
_TOOL_RESULT = _ONE_KIND["toolResult"]


def block_count(message: Message) -> int:
    """`len(blocks(message))`, without building the blocks (no copy of a text, no JSON read of a call's arguments)."""
    if message.role == "tool":
        return 1
    return sum(1 for p in message.parts if isinstance(p, _BLOCK_PARTS))


_BLOCK_PARTS = (ImagePart, ToolCallPart, ToolResultPart, ThinkingPart, TextPart, FileRefPart, OpaquePart)


def json_tokens(value: Any, tokenizer: Tokenizer) -> int:
    """`_heuristic_estimate_json`: ceil(len(json.dumps(value)) / 2); another tokenizer counts the JSON text."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return 0
    if tokenizer.name == "strands":
        return math.ceil(len(text) / 2)
    return tokenizer.count(text)


def block_tokens(block: dict[str, Any], tokenizer: Tokenizer) -> int:
    """`_count_content_block_tokens`: text, tool name + JSON input, tool result texts; images are free."""
    total = 0
    if "text" in block:
        total += tokenizer.count(block["text"])
    if "toolUse" in block:
        total += tokenizer.count(block["toolUse"].get("name", "")) + json_tokens(block["toolUse"].get("input", {}), tokenizer)
    if "toolResult" in block:
        for item in block["toolResult"].get("content", []):
            if "text" in item:
                total += tokenizer.count(item["text"])
            if "json" in item:
                total += json_tokens(item["json"], tokenizer)
    if "reasoningContent" in block:
        total += tokenizer.count(block["reasoningContent"].get("reasoningText", {}).get("text", ""))
    return total


def measure_message(message: Message, tokenizer: Tokenizer) -> int:
    return sum(block_tokens(b, tokenizer) for b in blocks(message))


def tool_specs(session: Session) -> list[dict[str, Any]]:
    """The session's tools as Strands ToolSpecs (name, description, inputSchema.json)."""
    return [{"name": t.name, "description": t.description, "inputSchema": {"json": dict(t.parameters)}} for t in session.tools]


@dataclass
class StrandsMessage:
    """One entry of `agent.messages`, with the ctxviz messages it stands for."""

    role: str
    content: list[dict[str, Any]]
    members: tuple[int, ...]
    pinned: bool = False
    #: Tokens of its content as it stands now (after any truncation).
    tokens: int = 0
    #: The ctxviz messages whose tool result text Strands has cut or whose images it has replaced.
    changed: dict[int, str] = field(default_factory=dict)
    #: The block kinds it holds and its tool ids, found once (the managers ask at every trim);
    #: not copied by `dataclasses.replace`, so a copy with other content finds its own.
    _kinds: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)
    _ids: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)

    def has(self, key: str) -> bool:
        kinds = self._kinds
        if kinds is None:
            kinds = self._kinds = frozenset(k for block in self.content for k in block)
        return key in kinds

    def tool_ids(self) -> frozenset[str]:
        ids = self._ids
        if ids is None:
            ids = self._ids = frozenset(_tool_ids(self))
        return ids


class Unrendered(StrandsMessage):
    """A Strands message whose blocks are rendered from its members (`blocks` of each) when first
    read, and whose kinds are found without them (`block_kinds`) when first asked. A replay of the
    agent's life holds thousands of messages that Strands only counts, splits and trims, which
    read their roles, members, tokens and kinds; only cutting a tool result, pinning, or a
    request's text reads the blocks. (A copy made by `dataclasses.replace` is handed its content,
    rendered.)"""

    def __init__(self, role: str, content: list[dict[str, Any]] | None, members: tuple[int, ...], pinned: bool = False,
                 tokens: int = 0, changed: dict[int, str] | None = None, source: tuple[Message, ...] = ()) -> None:
        # StrandsMessage's fields, set without the dataclass's __init__ (a replay makes one per message)
        fields = self.__dict__
        fields["role"], fields["_content"], fields["members"], fields["pinned"], fields["tokens"] = role, content, members, pinned, tokens
        fields["changed"] = {} if changed is None else changed
        fields["_kinds"] = fields["_ids"] = None
        fields["source"] = source

    def has(self, key: str) -> bool:
        kinds = self._kinds
        if kinds is None:
            if self.__dict__["_content"] is not None:
                return super().has(key)
            source = self.source
            found = [block_kinds(source[x]) for x in self.members]
            kinds = self._kinds = found[0] if len(found) == 1 else frozenset().union(*found)
        return key in kinds

    @property  # type: ignore[override]
    def content(self) -> list[dict[str, Any]]:
        content = self.__dict__["_content"]
        if content is None:
            source = self.source
            content = self.__dict__["_content"] = [block for x in self.members for block in blocks(source[x])]
        return content

    @content.setter
    def content(self, value: list[dict[str, Any]] | None) -> None:
        self.__dict__["_content"] = value


def conversation(session: Session, message_tokens: tuple[int, ...]) -> tuple[list[Message], list[StrandsMessage]]:
    """(system-role messages, agent.messages): consecutive tool messages become one user message."""
    system: list[Message] = []
    out: list[StrandsMessage] = []
    previous_role = ""
    for m in session.messages:
        if m.role == "system":
            system.append(m)
            continue
        joins = m.role == "tool" and previous_role == "tool"
        previous_role = m.role
        if joins:
            last = out[-1]
            last.content += blocks(m)
            last.members += (m.index,)
            last.tokens += message_tokens[m.index]
            continue
        role = "assistant" if m.role == "assistant" else "user"
        out.append(StrandsMessage(role, blocks(m), (m.index,), tokens=message_tokens[m.index]))
    return system, out


@dataclass(frozen=True)
class Held:
    """`with_summary` of a session under one counting, kept per session (`Session.derived`): the
    managers start every plan from it, so a re-plan renders no message. Its Strands messages are
    shared by every plan and never changed in place (a manager replaces one it pins or cuts)."""

    system: tuple[Message, ...]
    messages: tuple[StrandsMessage, ...]
    summary: Summary | None
    covered: frozenset[str]
    at: int
    #: Per Strands message, the ctxviz message each content block came from (-1: the summary).
    owners: tuple[list[int], ...]
    #: Whether `conversation` of the whole session joins consecutive tool results into one Strands message.
    joined: bool
    #: Per session message: a system message; covered by the summary in force (and no system message).
    is_system: np.ndarray
    is_covered: np.ndarray
    #: The tokens of all its Strands messages.
    tokens: int
    #: What a policy found from these alone and keeps (the summarizing manager's summaries, by where it split).
    found: dict[Any, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def invocations(self) -> Invocations:
        """Where the agent's invocations end in `messages`, found once (a replay of the agent's
        life appends a whole invocation at a time when nothing in it can trim)."""
        cumulative = [0]
        for sm in self.messages:
            cumulative.append(cumulative[-1] + sm.tokens)
        system_at = [m.index for m in self.system]
        ends: list[int] = []
        last_call: list[int] = []
        calls: list[int] = []
        call, count = -1, 0
        for k, sm in enumerate(self.messages):
            if sm.role == "assistant":
                call, count = k, count + 1
                if not sm.has("toolUse"):
                    ends.append(k)
                    last_call.append(call)
                    calls.append(count)
                    call, count = -1, 0
        if not ends or ends[-1] != len(self.messages) - 1:
            ends.append(len(self.messages) - 1)
            last_call.append(call)
            calls.append(count)
        systems_before = [bisect_left(system_at, sm.members[0]) if sm.members else -1 for sm in self.messages]
        # (non-decreasing but at the summary's -1: equal at both ends and never negative is one value throughout)
        prompts, begin = [], 0
        for end in ends:  # (no messages: one invocation, ends == [-1], with no prompt of its own)
            prompts.append(systems_before[begin] if begin <= end and systems_before[begin] == systems_before[end]
                           and min(systems_before[begin:end + 1]) >= 0 else -2)
            begin = end + 1
        final = [end >= 0 and self.messages[end].role == "assistant" and not self.messages[end].has("toolUse") for end in ends]
        return Invocations(cumulative, ends, last_call, calls, systems_before, prompts, final)


@dataclass(frozen=True)
class Invocations:
    """The agent's Strands messages cut into invocations, each ending with a final reply (the last
    may not have ended yet)."""

    #: cumulative[k]: the tokens of messages[:k].
    cumulative: list[int]
    #: Per invocation: the position of its last message, of its last assistant message (-1: none),
    #: and how many assistant messages (model calls) it holds.
    ends: list[int]
    last_call: list[int]
    calls: list[int]
    #: Per message: the system-role messages before its first member (-1: the summary message).
    systems_before: list[int]
    #: Per invocation: the system-role messages before each of its messages when that is one
    #: number (-2: it changes within, or the summary message is among them), and whether it ends
    #: with a final reply (apply_management runs after it).
    prompts: list[int]
    final: list[bool]


def held(session: Session, counts: Any) -> Held:
    """The session's `Held` under `counts` (a TokenCounts), made once per session and counting."""
    return derived_from_counts(session, counts, "strands", _make_held)


def _make_held(session: Session, counts: Any) -> Held:
    system, messages, summary, covered, at = with_summary(session, counts.message_tokens, counts.text)
    owners: list[list[int]] = []
    for sm in messages:
        row: list[int] = [] if sm.members else [-1]
        for index in sm.members:
            m = session.messages[index]
            row += [index] * block_count(m)
        owners.append(row)
    roles = session.message_columns[1]
    is_system = np.fromiter((r == "system" for r in roles), dtype=bool, count=len(roles))
    is_covered = (np.fromiter((i in covered for i in session.message_columns[0]), dtype=bool, count=len(roles)) & ~is_system
                  if covered else np.zeros(len(roles), dtype=bool))
    made = Held(tuple(system), tuple(messages), summary, frozenset(covered), at, tuple(owners), _joins(session), is_system, is_covered,
                sum(sm.tokens for sm in messages))
    return made


def _joins(session: Session) -> bool:
    """Whether `conversation` of the whole session joins a run of tool messages (system messages
    stand apart and do not break a run)."""
    previous = ""
    for role in session.message_columns[1]:
        if role == "system":
            continue
        if role == "tool" and previous == "tool":
            return True
        previous = role
    return False


def with_summary(session: Session, message_tokens: tuple[int, ...], count_text: Callable[[str], int]
                 ) -> tuple[list[Message], list[StrandsMessage], Summary | None, set[str], int]:
    """(system-role messages, agent.messages, the summary in force, the ids it covers, its position).

    The latest summary (a replay's, or one the file records) stands where Strands' summarizing
    manager puts its summary: one user message in place of the messages it covers, after the
    messages kept before them (pinned ones)."""
    summary = session.summaries[-1] if session.summaries else None
    covered = set(summary.covers) if summary is not None else set()
    kept = session if not covered else dataclasses.replace(
        session, messages=tuple(m for m in session.messages if m.id not in covered or m.role == "system"))
    system, messages = conversation(kept, message_tokens)
    at = 0
    if summary is not None:
        last = max((m.index for m in session.messages if m.id in covered), default=-1)
        at = sum(1 for sm in messages if sm.members and max(sm.members) < last)
        messages.insert(at, StrandsMessage("user", [{"text": summary.text}], (), tokens=count_text(summary.text)))
    return system, messages, summary, covered, at


def context_window_limit(session: Session, override: int | None) -> tuple[int, str]:
    """The model's `context_window_limit`: the parameter, else ctxviz's model catalogue, else Strands'
    own default (200,000), with where it came from."""
    if override is not None:
        return override, "context_window_limit parameter"
    entry = find_model(session.model)
    if entry is not None:
        return entry.context_window, f"the {entry.name} context window in ctxviz's model catalogue"
    return DEFAULT_CONTEXT_WINDOW_LIMIT, "Strands' DEFAULT_CONTEXT_WINDOW_LIMIT (the model is not in ctxviz's catalogue)"


def check_positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{name} must be >= 1 (or none), got {value}")


def check_manager_params(params: Any) -> None:
    """What both managers' arguments are held to (after their own): pin_first raised to 0, as
    Strands' max(0, pin_first), a compression threshold within (0, 1], and a positive window."""
    if params.pin_first is not None and params.pin_first < 0:
        object.__setattr__(params, "pin_first", 0)  # Strands: max(0, pin_first)
    t = params.proactive_compression
    if t is not None and (t <= 0 or t > 1):
        raise ValueError(f"proactive_compression (compression_threshold) must be between 0 (exclusive) and 1 (inclusive), got {t}")
    check_positive("context_window_limit", params.context_window_limit)


def _tool_ids(message: StrandsMessage) -> set[str]:
    ids: set[str] = set()
    for block in message.content:
        if "toolUse" in block and block["toolUse"].get("toolUseId"):
            ids.add(block["toolUse"]["toolUseId"])
        elif "toolResult" in block and block["toolResult"].get("toolUseId"):
            ids.add(block["toolResult"]["toolUseId"])
    return ids


def is_pinned(messages: list[StrandsMessage], index: int) -> bool:
    """pin_message.is_pinned: pinned itself, or an adjacent pinned message shares a toolUseId."""
    if messages[index].pinned:
        return True
    mine = messages[index].tool_ids()
    if not mine:
        return False
    for neighbour in (index - 1, index + 1):
        if 0 <= neighbour < len(messages) and messages[neighbour].pinned and mine & messages[neighbour].tool_ids():
            return True
    return False


def find_valid_trim_point(messages: list[StrandsMessage], start_index: int) -> int:
    """context_compression.find_valid_trim_point: the first user message at or after start_index
    that is no toolResult and no toolUse without its result next; len(messages) if none."""
    trim = start_index
    while trim < len(messages):
        message = messages[trim]
        if message.role != "user" or message.has("toolResult"):
            trim += 1
            continue
        if message.has("toolUse") and not (trim + 1 < len(messages) and messages[trim + 1].has("toolResult")):
            trim += 1
            continue
        break
    return trim


class NoSplitPoint(Exception):
    """Strands raises ContextWindowOverflowException here."""


def adjust_split_point_for_tool_pairs(messages: Sequence[StrandsMessage], split_point: int) -> int:
    """context_compression.adjust_split_point_for_tool_pairs: walk forward past toolResults and
    toolUses not followed by their result; raise when it walks off the end."""
    if split_point > len(messages):
        raise NoSplitPoint("Split point exceeds message array length")
    if split_point == len(messages):
        return split_point
    while split_point < len(messages):
        here = messages[split_point]
        if here.has("toolResult") or (here.has("toolUse") and split_point + 1 < len(messages)
                                      and not messages[split_point + 1].has("toolResult")):
            split_point += 1
        else:
            return split_point
    raise NoSplitPoint("Unable to trim conversation context!")
