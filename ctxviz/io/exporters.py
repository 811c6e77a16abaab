"""Exports of a plan's context, as the model receives it.

Each exporter returns the text and the one-line notes of anything it had to change to make the
request valid for its API (the CLI prints them on stderr; `--strict` refuses instead).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..engine.checks import unseen_of
from ..engine.plan import Decision, Plan
from ..engine.session import Message, Session, record_of
from ..engine.sources import context_labels
from ..engine.wording import counted, noun
from ..errors import UnknownNameError
from .export_added import is_empty_system
from .output import write_atomic

__all__ = ["EXPORTERS", "Export", "Fix", "anthropic_messages", "export", "export_text", "json_text", "write_atomic"]

_DATA_URI = re.compile(r"^data:(?P<media>[^;,]+);base64,(?P<data>.*)$", re.S)


class Fix(str):
    """What an exporter did to make its request valid ("dropped 1 tool message ..."), with
    `problem`, what the request would have had without it: `--strict` does nothing, so it must
    say the problem it refuses, never a change it did not make."""

    problem: str
    #: Whether it removed unpaired tool calls or results (what a plan's broken pairs become).
    pairs: bool

    def __new__(cls, done: str, problem: str, *, pairs: bool = False) -> Fix:
        fix = super().__new__(cls, done)
        fix.problem = problem
        fix.pairs = pairs
        return fix


@dataclass(frozen=True)
class Export:
    text: str
    #: Messages in the exported request (after the API's own merging of turns).
    messages: int
    #: What the exporter changed to make the request valid, one line each.
    fixes: tuple[Fix, ...] = ()


def json_text(value: Any, fixes: list[Fix] | None = None, indent: int | None = 2) -> str:
    """JSON that every parser accepts: NaN and Infinity (which Python writes but JSON has not)
    become null, and the replacement is noted."""
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, allow_nan=False)
    except ValueError:
        replaced = 0

        def finite(v: Any) -> Any:
            nonlocal replaced
            if isinstance(v, float) and not math.isfinite(v):
                replaced += 1
                return None
            if isinstance(v, dict):
                return {k: finite(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [finite(x) for x in v]
            return v

        cleaned = finite(value)
        if fixes is not None:
            fixes.append(Fix(f"replaced {counted(replaced, 'non-finite number')} (NaN, Infinity) with null: JSON has no such values",
                             f"{counted(replaced, 'non-finite number')} (NaN, Infinity), which JSON has not"))
        return json.dumps(cleaned, indent=indent, ensure_ascii=False, allow_nan=False)


def valid_for_chat_api(context: Sequence[Mapping[str, Any]], fixes: list[Fix]) -> list[dict[str, Any]]:
    """The messages as Chat Completions accepts them. It refuses a `tool` message that does not
    answer a call of the assistant message just before its run of tool messages, and an assistant
    message whose `tool_calls` are not all answered right after it (at the end of the request too);
    a trimmed context easily has both. The unpaired calls and results are removed (an assistant
    message left with neither text nor calls goes too), and `fixes` says what was removed."""
    messages = [dict(m) for m in context]
    out: list[dict[str, Any]] = []
    orphan_results = unanswered = emptied = 0
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.get("role") == "tool":  # not in the run after an assistant's calls
            orphan_results += 1
            i += 1
            continue
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            out.append(message)
            i += 1
            continue
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            j += 1
        asked = {c.get("id") for c in calls if isinstance(c, Mapping)}
        results: list[dict[str, Any]] = []
        answered: set[Any] = set()
        for result in messages[i + 1 : j]:
            call_id = result.get("tool_call_id")
            if call_id in asked and call_id not in answered:
                answered.add(call_id)
                results.append(result)
            else:
                orphan_results += 1
        kept_calls = [c for c in calls if isinstance(c, Mapping) and c.get("id") in answered]
        unanswered += len(calls) - len(kept_calls)
        if kept_calls:
            message["tool_calls"] = kept_calls
            out.append(message)
        else:
            message.pop("tool_calls", None)
            if message.get("content"):
                out.append(message)
            else:
                emptied += 1
        out += results
        i = j
    if orphan_results:
        what = f"{counted(orphan_results, 'tool message')} that {noun(orphan_results, 'answers', 'answer')} no tool call of the assistant message before them"
        fixes.append(Fix(f"dropped {what}", f"the request has {what}", pairs=True))
    if unanswered:
        what = f"{counted(unanswered, 'tool call')} that no tool message right after answers"
        fixes.append(Fix(f"dropped {what}" + (f" ({counted(emptied, 'assistant message')} left empty went too)" if emptied else ""),
                         f"the request has {what}", pairs=True))
    return out


def _request_entries(plan: Plan) -> list[Mapping[str, Any]]:
    """The context without an empty system message (a prompt the log does not record): OpenAI
    accepts one, but it is noise in a request, and `ctxviz export` says the prompt is not in the log."""
    return [m for m in plan.context if not is_empty_system(m)]


def to_openai(plan: Plan, session: Session, fixes: list[Fix]) -> tuple[str, int]:
    request: dict[str, Any] = {"model": session.model or "gpt-4o", "messages": valid_for_chat_api(_request_entries(plan), fixes)}
    if session.tools:
        request["tools"] = [t.to_openai() for t in session.tools]
    return json_text(request, fixes) + "\n", len(request["messages"])


def to_jsonl(plan: Plan, session: Session, fixes: list[Fix]) -> tuple[str, int]:
    messages = valid_for_chat_api(_request_entries(plan), fixes)
    return "".join(json_text(m, fixes, indent=None) + "\n" for m in messages), len(messages)


def _anthropic_content(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "image_url":
            url = part["image_url"]["url"]
            match = _DATA_URI.match(url)
            source = {"type": "base64", "media_type": match["media"], "data": match["data"]} if match else {"type": "url", "url": url}
            blocks.append({"type": "image", "source": source})
        elif part.get("type") == "text" and part.get("text"):  # the Messages API refuses an empty text block
            blocks.append({"type": "text", "text": part.get("text", "")})
    return blocks


def _tool_input(arguments: str) -> Any:
    """A tool call's arguments as the object Anthropic's `input` wants; what is not a JSON object
    (invalid JSON, NaN, nesting Python cannot parse) is kept verbatim under `_raw_arguments`."""
    def refuse(constant: str) -> Any:
        raise ValueError(constant)

    try:
        value = json.loads(arguments or "{}", parse_constant=refuse)
    except (ValueError, RecursionError):
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


def anthropic_messages(context: list[Mapping[str, Any]], fixes: list[Fix] | None = None,
                       originals: Sequence[list[dict[str, Any]] | None] = ()) -> tuple[str, list[dict[str, Any]]]:
    """Convert OpenAI chat messages to Anthropic's (system, messages): tool results become user
    tool_result blocks, tool calls tool_use blocks, and consecutive same-role turns are merged
    because the Messages API requires alternating roles.

    The Messages API also refuses a conversation that starts with an assistant turn, a
    tool_result whose tool_use is not in the assistant turn just before it, and a tool_use
    left unanswered in the next turn; a trimmed context easily has all three. They are removed,
    and `fixes` says what was removed.
    """
    system_parts: list[str] = []
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for position, message in enumerate(context):
        role = message.get("role")
        if role == "system":
            system_parts.append(str(message.get("content") or ""))
            continue
        original = originals[position] if position < len(originals) else None
        if original is not None:  # the blocks as the file had them: cache_control, signatures, documents...
            turns.append(("user" if role == "tool" else str(role), copy.deepcopy(original)))
            continue
        if role == "tool":
            text = message.get("content")
            block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", ""), "content": text if isinstance(text, str) else _anthropic_content(text)}
            blocks, role = [block], "user"
        else:
            blocks = _anthropic_content(message.get("content"))
            for call in message.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": _tool_input(call["function"]["arguments"])})
        if blocks:
            turns.append((str(role), blocks))
    out = _merge_turns(turns)
    out = _valid_for_messages_api(out, fixes if fixes is not None else [])
    return "\n\n".join(p for p in system_parts if p), out


def _merge_turns(turns: list[tuple[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for role, blocks in turns:
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": list(blocks)})
    return out


#: The user turn put before a context that starts with the assistant (a trimmed tail of tool work).
TRIMMED_PLACEHOLDER = "[earlier conversation not sent]"


def _valid_for_messages_api(messages: list[dict[str, Any]], fixes: list[Fix]) -> list[dict[str, Any]]:
    orphan_results = unanswered = 0
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for i, turn in enumerate(messages):
        blocks = turn["content"]
        if turn["role"] == "user":
            previous = messages[i - 1] if i > 0 and messages[i - 1]["role"] == "assistant" else None
            asked = {b.get("id") for b in previous["content"] if b.get("type") == "tool_use"} if previous else set()
            kept = [b for b in blocks if b.get("type") != "tool_result" or b.get("tool_use_id") in asked]
            orphan_results += len(blocks) - len(kept)
        else:
            following = messages[i + 1] if i + 1 < len(messages) else None
            answered = {b.get("tool_use_id") for b in following["content"] if b.get("type") == "tool_result"} if following else set()
            # At the end of the request too: the Messages API wants every tool_use answered in the next turn.
            kept = [b for b in blocks if b.get("type") != "tool_use" or b.get("id") in answered]
            unanswered += len(blocks) - len(kept)
        turns.append((turn["role"], kept))
    result = _merge_turns(turns)
    if result and result[0]["role"] != "user":
        # Dropping the assistant's turns would lose what the policy kept (a tail of tool work may
        # hold no user turn at all); a minimal user turn before them keeps it all valid.
        result.insert(0, {"role": "user", "content": [{"type": "text", "text": TRIMMED_PLACEHOLDER}]})
        rule = "the Messages API requires the first message to be from the user"
        fixes.append(Fix(f"added a user turn {TRIMMED_PLACEHOLDER!r} before the first assistant turn: {rule}",
                         f"the request starts with an assistant turn: {rule}"))
    if orphan_results:
        what = f"{counted(orphan_results, 'tool_result block')} whose tool_use is not in the turn before"
        fixes.append(Fix(f"dropped {what}", f"the request has {what}", pairs=True))
    if unanswered:
        what = f"{counted(unanswered, 'tool_use block')} whose tool_result is not in the next turn"
        fixes.append(Fix(f"dropped {what}", f"the request has {what}", pairs=True))
    return result


def original_blocks(message: Message) -> list[dict[str, Any]] | None:
    """A message's Anthropic content blocks as its file recorded them (Anthropic requests, Claude
    Code lines), or None when the file was not in Anthropic's form. A tool message gets its own
    tool_result block; the rest of the record's blocks go with the message they were read into."""
    recorded = record_of(message)  # (read once: a packed record stays packed in the message)
    records = recorded if isinstance(recorded, list) else [recorded]  # Claude Code: the streamed lines of one message
    content: list[Any] = []
    for raw in records:
        if not isinstance(raw, dict):
            return None
        inner = raw.get("message")
        blocks = raw.get("content") if "content" in raw else inner.get("content") if isinstance(inner, dict) else None
        if not isinstance(blocks, list):
            return None
        content += blocks
    if not content or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content):
        return None
    if not any(b["type"] in ANTHROPIC_BLOCK_TYPES for b in content):
        return None  # OpenAI-style parts
    if message.role == "tool":
        blocks = [b for b in content if b["type"] == "tool_result" and b.get("tool_use_id") == message.tool_call_id]
    else:  # the Messages API refuses a whitespace-only text block (streamed logs have them)
        blocks = [b for b in content if b["type"] != "tool_result" and not (b["type"] == "text" and not str(b.get("text", "")).strip())]
    return blocks or None


#: Block types only Anthropic's Messages API uses: a record holding one is in Anthropic's form.
ANTHROPIC_BLOCK_TYPES = frozenset(("tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use", "image", "search_result"))


def to_anthropic(plan: Plan, session: Session, fixes: list[Fix]) -> tuple[str, int]:
    originals = [original_blocks(session.messages[i]) if i is not None and plan.messages[i].decision is Decision.KEPT else None
                 for i in plan.context_index]
    system, messages = anthropic_messages(list(plan.context), fixes, originals)
    request: dict[str, Any] = {"model": session.model or "claude-sonnet-4-5", "max_tokens": 4096,
                               **({"system": system} if system else {}), "messages": messages}
    if session.tools:
        request["tools"] = [dict(t.hosted) if t.hosted else {"name": t.name, "description": t.description, "input_schema": dict(t.parameters) or {"type": "object"}}
                            for t in session.tools]
    return json_text(request, fixes) + "\n", len(messages)


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in `text`, so nothing in it can close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def to_markdown(plan: Plan, session: Session, fixes: list[Fix], preset: Mapping[str, str | None] | None = None) -> tuple[str, int]:
    """Each message's text verbatim inside a code fence: session text never renders as Markdown
    (or as the HTML a Markdown viewer would pass through). `preset`, the --config preset the
    parameters came from (`{"path", "description"}`), is said under the title: the file is read
    later, away from the command that wrote it."""
    return _markdown(plan, marked=False, session=session, preset=preset), len(plan.context)


#: What can start markup inside a line of Markdown (or of the HTML it passes through).
_MARKDOWN_INLINE = re.compile(r"([\\`*_\[\]<>&~])")


def preset_sentence(preset: Mapping[str, str | None]) -> str:
    """The markdown line naming the preset: its path as code (no fence in it can close early), its
    description with every character that could start markup escaped (a preset is a file from anyone)."""
    path = str(preset["path"])
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", path)), default=0) + 1)  # longer than any run in the path
    description = " ".join(str(preset.get("description") or "").split())
    described = ": " + _MARKDOWN_INLINE.sub(r"\\\1", description) if description else ""
    pad = " " if path.startswith("`") or path.endswith("`") else ""
    return f"Parameters from the preset {ticks}{pad}{path}{pad}{ticks}{described}."


def marked_markdown(plan: Plan, session: Session) -> str:
    """The markdown export as the app's Context tab shows it: between runs of sent messages a line
    saying what is not sent there ("⋯ 139 messages (28,958 tokens) not sent here"). A view: copying
    and exporting give the request itself (`to_markdown`), headed the same way."""
    return _markdown(plan, marked=True, session=session)


#: A section with no text, said in words instead of an empty code fence.
EMPTY_SECTION = "*(empty)*"
#: The empty system section of a log that does not record its system prompt (the provider's figures say one was sent).
UNSEEN_SECTION = "*(not in the log: see above)*"

#: The line between two runs of sent messages, for the messages between them that are not sent.
GAP_MARK = "⋯"


def gap_line(plan: Plan, first: int, last: int) -> str:
    """What is not sent among messages first..last ("" when all of them are: folded into the
    system prompt, say), as the Context tab marks it."""
    gone = [m for m in plan.messages[first:last + 1] if not m.sent]
    if not gone:
        return ""
    decisions = Counter(m.decision.value for m in gone)
    how = "" if len(decisions) == 1 and "dropped" in decisions else " (" + ", ".join(f"{n:,} {d}" for d, n in decisions.items()) + ")"
    span = f"#{gone[0].index}" if len(gone) == 1 else f"#{gone[0].index}-#{gone[-1].index}"
    return (f"{GAP_MARK} {len(gone):,} message{'s' if len(gone) != 1 else ''} ({sum(m.tokens for m in gone):,} tokens) "
            f"not sent here: {span}{how}")


def _markdown(plan: Plan, marked: bool, session: Session, preset: Mapping[str, str | None] | None = None) -> str:
    """Each section headed with its role and its source (engine/sources.py `source_label`: "#12",
    "the log's recorded summary #1, written by the agent", "ctxviz's offline stand-in summary, not
    the agent's" ...), in the file as in the app's view, so the two say the same."""
    lines = [f"# Context sent by {plan.policy}", "", f"{len(plan.context)} messages, {plan.totals.used:,} of {plan.totals.budget:,} tokens ({plan.tokenizer}).",
             "Message text is shown verbatim inside code fences.", ""]
    if preset:
        lines[3:3] = [preset_sentence(preset)]
    unseen = unseen_of(plan)
    if unseen:  # the request held more than the log shows: said, never left for an empty section to suggest
        lines[3:3] = [f"The provider's figures suggest about {unseen:,} tokens of system prompt and tool definitions the log does not "
                      "record, so they are not below."]
    previous = -1  # the last session message a section came from
    labels = context_labels(plan, session)
    for i, message in enumerate(plan.context):
        source = plan.context_index[i] if i < len(plan.context_index) else None
        if marked and source is not None and source > previous + 1 and (gap := gap_line(plan, previous + 1, source - 1)):
            lines += [gap, ""]
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") if p.get("type") == "text" else "[image]" for p in content)
        lines.append(f"## {i}. {message.get('role')} · {labels[i]}")
        lines.append("")
        if source is not None:
            previous = max(previous, source)
        body = str(content or "")
        calls = [f"tool call {call['function']['name']} ({call['id']}): {call['function']['arguments']}" for call in message.get("tool_calls") or []]
        if message.get("tool_call_id"):
            body = f"(result of {message['tool_call_id']})\n{body}"
        body = "\n".join([*([body] if body or not calls else []), *calls])
        if not body.strip():  # an empty fence read as a rendering fault (gemini-cli-compression's empty system instruction)
            lines += [UNSEEN_SECTION if unseen and message.get("role") == "system" else EMPTY_SECTION, ""]
            continue
        fence = _fence(body)
        lines += [fence, body, fence, ""]
    if marked and (gap := gap_line(plan, previous + 1, len(plan.messages) - 1)):
        lines += [gap, ""]
    return "\n".join(lines)


EXPORTERS: dict[str, Callable[[Plan, Session, list[Fix]], tuple[str, int]]] = {
    "openai": to_openai,
    "anthropic": to_anthropic,
    "jsonl": to_jsonl,
    "markdown": to_markdown,
}


def export(plan: Plan, session: Session, fmt: str, preset: Mapping[str, str | None] | None = None) -> Export:
    """The plan's context in `fmt`. `preset` (the --config preset's `{"path", "description"}`) goes
    only where the format has a place for it, the markdown's heading: a request's fields are the
    API's (Anthropic's `metadata` takes only `user_id`), and one it does not know is refused."""
    try:
        exporter = EXPORTERS[fmt]
    except KeyError:
        raise UnknownNameError(f"unknown export format {fmt!r}; available: {', '.join(EXPORTERS)}") from None
    fixes: list[Fix] = []
    text, count = to_markdown(plan, session, fixes, preset) if exporter is to_markdown else exporter(plan, session, fixes)
    return Export(text, count, tuple(fixes))


def export_text(plan: Plan, session: Session, fmt: str) -> str:
    return export(plan, session, fmt).text
