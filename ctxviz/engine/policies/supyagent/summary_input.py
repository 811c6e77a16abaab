"""What supyagent's summariser is shown: the transcript `generate_summary` writes into its prompt
(supyagent/core/context_manager.py at 60c69e0, `generate_summary` and
`_format_messages_for_summary`), so ctxviz's offline stand-in summary reads what supyagent's LLM
reads, and no more.

supyagent formats each history message as a block, the blocks joined by a blank line:
- a tool result as `[Tool Result]: ` and its first 500 characters (1,000 when it is a JSON object
  with a true `ok` and a `data`), with "..." where it was cut;
- an assistant message with tool calls as `ASSISTANT: [Called tools: ...]`, each call as
  `name(arguments)` when its arguments are shorter than 200 characters and as its name otherwise,
  then the message's text on a line of its own;
- a system message not at all; any other as `ROLE: content` (images as "[image]").

When the prompt around that transcript is over 80 % of the context limit in tokens, supyagent cuts
the transcript to its first `2 x limit` characters. It re-summarises from the first message every
time and the history only grows, so once a prompt is over, every later one is: the summariser is
shown the same head of the conversation from then on, however long it grows (the messages after
it never reach a summary). `SummaryInput` carries this from one summary to the next.

The prompt's count is the sum of its blocks' counts under cl100k_base and o200k_base: each block
with the blank line after it is a run of pre-tokens of its own (no alternative of either pattern
takes a newline and then the letter or "[" a block starts with), so each block is counted once,
and only once the transcript is longer than the cut (before, the cut keeps it whole).
tests/test_supyagent_summary_input.py checks the sum against the whole prompt's count.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...kept_by_identity import KeptByIdentity
from ...session import ROLES, Message, TextPart, ToolCallPart, ToolResultPart, message_with, text_part
from ...summarizers import Features, message_features, read_parts
from ...tokenizers import TiktokenTokenizer, Tokenizer

#: The parts whose text is the whole of a one-part message's content as supyagent holds it.
_ONE_TEXT = (TextPart, ToolResultPart)
TOOL_CHARS = 500
DATA_TOOL_CHARS = 1000
#: A call's arguments are shown when shorter than this.
ARGS_SHOWN_UNDER = 200
#: The prompt is cut when its count is over this share of the context limit ...
PROMPT_SHARE = 0.8
#: ... to this many characters of transcript per token of the limit.
CHARS_PER_TOKEN = 2

PROMPT_HEAD = """Extract a structured state snapshot from this conversation.

## Files Modified
- List each file path and what was changed

## Key Decisions
- List decisions made and their rationale

## Important Values
- Preserve exact file paths, URLs, IDs, error messages, configuration values

## Current State
- What task is in progress
- What was the last action taken
- What is the expected next step

## Pending Tasks
- List remaining work items

Rules:
- Preserve ALL file paths, error messages, URLs, IDs, and configuration values exactly
- Preserve tool results that contain data (not just "ok: true")
- Keep the snapshot under 600 words
- Use the exact section format above

Conversation:
"""
PROMPT_TAIL = "\n\nSummary:"
SEPARATOR = "\n\n"


def content_text(content: Any) -> str:
    """supyagent's `content_to_text` of a part list: text parts and "[image]", joined by spaces."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, dict):
            if part.get("type") == "text":
                parts.append(part.get("text", ""))
            elif part.get("type") == "image_url":
                parts.append("[image]")
        elif isinstance(part, str):
            parts.append(part)
    return " ".join(parts)


def _tool_chars(content: str) -> int:
    """How much of a tool result supyagent shows: more of a successful JSON result."""
    if len(content) > TOOL_CHARS and content.lstrip()[:1] == "{":  # (only an object can hold ok and data)
        try:
            parsed = json.loads(content)
        except ValueError:
            return TOOL_CHARS
        if isinstance(parsed, dict) and parsed.get("ok") and parsed.get("data"):
            return DATA_TOOL_CHARS
    return TOOL_CHARS


class Shown:
    """One message as the summariser is shown it: its block of the transcript, and the message the
    stand-in reads (`view`). Holds nothing of the message itself (it is kept by the message's
    identity while the message lives: `shown`), so the message is handed to `view` and `cut`."""

    __slots__ = ("block", "calls", "calls_end", "content", "prefix", "read", "whole")

    def __init__(self, message: Message) -> None:
        parts = message.parts
        calls = False
        if len(parts) == 1 and type(parts[0]) in _ONE_TEXT and message.role in ROLES:  # (most messages: `to_openai`'s content, read directly)
            role = message.role.upper()
            content = parts[0].text  # type: ignore[union-attr]
        else:  # `to_openai`'s role, content and whether it has tool calls, without building the dict
            sent_role = message.role if message.role in ROLES else "user"
            role = sent_role.upper()
            content = message.openai_content()
            if isinstance(content, list):
                content = content_text(content)
            content = content or ""
            calls = sent_role == "assistant" and bool(message.tool_calls)
        self.calls: tuple[ToolCallPart, ...] = ()
        self.calls_end = 0  # how much of the block shows the calls
        if role == "TOOL":
            limit = _tool_chars(content)
            if len(content) > limit:
                content = content[:limit] + "..."
            self.prefix = "[Tool Result]: "
        elif role == "ASSISTANT" and calls:
            self.calls = tuple(c if 0 < len(c.arguments) < ARGS_SHOWN_UNDER else replace(c, arguments="") for c in message.tool_calls)
            line = f"ASSISTANT: [Called tools: {', '.join(f'{c.name}({c.arguments})' if c.arguments else c.name for c in self.calls)}]"
            self.calls_end = len(line)
            self.prefix = line + (SEPARATOR + "ASSISTANT: " if content else "")
        else:
            self.prefix = f"{role}: "
        self.content = content
        self.block = self.prefix + content
        self.whole: Message | bool | None = False  # (False: not made yet; True: the message as it stands)
        self.read: Features | None | bool = False  # (False: not read yet)

    def view(self, m: Message) -> Message | None:
        """The message the stand-in reads of `m` (this one's message): `m` itself where it reads
        the same, None where nothing of it is shown. Made when first asked: a head the summariser
        is shown from some summary on reads none of the messages after it."""
        whole = self.whole
        if whole is False:
            made = self._view(m, len(self.block))
            whole = self.whole = True if made is m else made
        return m if whole is True else whole  # type: ignore[return-value]

    def reading(self, m: Message) -> Features | None:
        """What the stand-in reads of `m` as shown (`view(m)`'s features), None where nothing of it
        is shown; a view not made yet is read from its parts without making it (the replay reads
        the history's first summaries from these, and most of its views are never asked for)."""
        read = self.read
        if read is False:
            whole = self.whole
            read = self.read = _read(m, (m if whole is True else whole) if whole is not False else self._parts(m, len(self.block)))
        return read

    def cut_reading(self, m: Message, visible: int) -> Features | None:
        """`reading` when only the first `visible` characters of the block are shown (`cut`'s)."""
        return self.reading(m) if visible >= len(self.block) else _read(m, self._parts(m, visible))

    def _view(self, m: Message, visible: int) -> Message | None:
        """The message the stand-in reads when the first `visible` characters of the block are shown."""
        made = self._parts(m, visible)
        return made if made is None or isinstance(made, Message) else message_with(m, parts=made)

    def _parts(self, m: Message, visible: int) -> Message | tuple[Any, ...] | None:
        """`_view`'s message: `m` itself where it reads the same, None where nothing of it is
        shown, else the view's parts (the message not made)."""
        seen = self.content[: max(0, visible - len(self.prefix))]
        calls = self.calls if visible >= self.calls_end else ()
        if not seen and not calls:
            return None
        parts = m.parts
        if m.role == "tool":
            first = parts[0] if len(parts) == 1 else None
            if type(first) is ToolResultPart:
                if first.text == seen:  # type: ignore[union-attr]
                    return m
                part = replace(first, text=seen)
            else:
                part = ToolResultPart(tool_call_id=m.tool_call_id, text=seen)
            new: tuple[Any, ...] = (part,)
        else:
            new = ((text_part(seen),) if seen else ()) + calls
            if parts == new:
                return m
        return new

    def cut(self, m: Message, visible: int) -> Message | None:
        """`view` when only the first `visible` characters of the block are shown."""
        return self.view(m) if visible >= len(self.block) else self._view(m, visible)


def _read(m: Message, made: Message | tuple[Any, ...] | None) -> Features | None:
    """The stand-in's reading of what `Shown._parts` made of `m`: a message's (kept while it
    lives), the parts' (read as a message of m's role and name would be), or none."""
    if made is None:
        return None
    if isinstance(made, Message):
        return message_features(made)
    return read_parts(m.role, m.name, made)


#: Each message's `Shown`, kept while the message lives (the reference replay shows the same early
#: messages again at every summary; `summarizers._FEATURES` keeps their readings by the view's identity).
_SHOWN: KeptByIdentity[Shown] = KeptByIdentity()


def shown(message: Message) -> Shown:
    return _SHOWN.get(message, Shown)


class SummaryInput:
    """What supyagent's summariser is shown of a history that only grows at the end (`add`), one
    summary after another: `messages()` is what the stand-in reads for the history added so far.

    `frozen` is True from the first summary whose prompt is over: what is shown then never changes."""

    def __init__(self, limit: int, tokenizer: Tokenizer) -> None:
        self.limit = limit
        self.tok = tokenizer
        self.max_chars = int(limit * CHARS_PER_TOKEN)
        self.threshold = limit * PROMPT_SHARE
        self.piecewise = isinstance(tokenizer, TiktokenTokenizer) and tokenizer.encoding_name in ("cl100k_base", "o200k_base")
        self.items: list[tuple[Message, Shown]] = []  # the history's messages with a block (system messages have none)
        self.ends: list[int] = []  # where each block ends in the transcript
        self.tokens = 0  # the prompt's count without the blocks not yet counted
        self.counted = 0  # blocks counted into `tokens`
        self.frozen = False
        self.head_items: list[tuple[Message, Shown, int]] = []  # once frozen: the messages shown, each with how much of its block
        self._head: list[Message] | None = None
        self.note: str | None = None  # `head_note`'s, once frozen

    def add(self, messages: Sequence[Message]) -> None:
        """Add the history messages that follow those added so far (nothing once frozen)."""
        if self.frozen:
            return
        items, ends = self.items, self.ends
        for m in messages:
            if m.role == "system":  # (skipped by supyagent's format)
                continue
            item = shown(m)
            items.append((m, item))
            ends.append((ends[-1] + len(SEPARATOR) if ends else 0) + len(item.block))

    def readings(self, start: int = 0) -> list[Features]:
        """The stand-in's readings of `views(start)`, without making the views (`Shown.reading`)."""
        readings = (item.reading(m) for m, item in self.items[start:])
        return [read for read in readings if read is not None]

    def views(self, start: int = 0) -> list[Message]:
        """The views of the messages added from the `start`-th on (with a block: system messages
        have none), as the stand-in reads them before the prompt is over."""
        views = (item.view(m) for m, item in self.items[start:])
        return [view for view in views if view is not None]

    def settle(self) -> bool:
        """Whether the prompt of a summary of the history added so far is over (from then on
        `frozen`, and `head` what is shown): the transcript is longer than the cut and its
        prompt's count over the share of the limit."""
        if self.frozen:
            return True
        if not self.items or self.ends[-1] <= self.max_chars or not self._over():
            return False
        self.frozen = True
        head: list[tuple[Message, Shown, int]] = []
        start = 0
        for (m, item), end in zip(self.items, self.ends, strict=True):
            if start >= self.max_chars:
                break
            head.append((m, item, self.max_chars - start))
            start = end + len(SEPARATOR)
        self.head_items = head
        self.items, self.ends = [], []  # (nothing more is shown)
        return True

    @property
    def head(self) -> list[Message]:
        """What is shown once frozen: the views of the messages within the first `2 x limit`
        characters of the transcript, the last as far as it is shown (made when first asked)."""
        if self._head is None:
            views = (item.cut(m, visible) for m, item, visible in self.head_items)
            self._head = [view for view in views if view is not None]
        return self._head

    def head_readings(self) -> list[Features]:
        """The stand-in's readings of `head`, the views wholly shown read without making them."""
        readings = (item.cut_reading(m, visible) for m, item, visible in self.head_items)
        return [read for read in readings if read is not None]

    def messages(self) -> list[Message]:
        """What the stand-in reads: each message's view, or, once the prompt is over, those within
        the first `2 x limit` characters of the transcript, the last as far as it is shown."""
        return self.head if self.settle() else self.views()

    def _over(self) -> bool:
        """Whether the prompt around the whole transcript is over the share of the limit."""
        if not self.piecewise:
            transcript = SEPARATOR.join(item.block for _, item in self.items)
            return self.tok.count(PROMPT_HEAD + transcript + PROMPT_TAIL) > self.threshold
        if not self.counted:
            self.tokens = self.tok.count(PROMPT_HEAD) + self.tok.count(PROMPT_TAIL[len(SEPARATOR):])
        count = self.tok.count
        items = self.items
        while self.counted < len(items):
            self.tokens += count(items[self.counted][1].block + SEPARATOR)
            self.counted += 1
            if self.tokens > self.threshold:
                return True
        return False


def head_note(shown_input: SummaryInput) -> str:
    """What a summary event adds once the summariser is shown only the head ("" before)."""
    if not shown_input.frozen:
        return ""
    if shown_input.note is None:  # (the same for every summary from the first frozen one on)
        last = next((m.index for m, item, visible in reversed(shown_input.head_items) if item.cut(m, visible) is not None), None)
        shown_input.note = "" if last is None else (
            f"; its prompt is over {PROMPT_SHARE * 100:.0f} % of the {shown_input.limit:,}-token limit, so the summariser is "
            f"shown only the conversation's first {shown_input.max_chars:,} characters, to message #{last}")
    return shown_input.note
