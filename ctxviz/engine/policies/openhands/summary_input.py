"""What OpenHands' summariser is shown (openhands-sdk 1.58, LLMSummarizingCondenser
`_generate_condensation`): `str(event)` of each forgotten event, in the view's order, and so what
ctxviz's offline stand-in summary reads.

Each event's `str` is a preview (openhands/sdk/event, N_CHAR_PREVIEW = 500):
- a message: its text parts joined by spaces (an image as "[Image: 1 URLs]"), over 500 characters
  cut to 497 and "...";
- a tool call (ActionEvent): the thought (the message's text, on its first call), over 500
  characters cut to 500 and "...", and the tool's name; never its arguments;
- a tool result (ObservationEvent, AgentErrorEvent): its text, over 500 characters cut to 500 and "...";
- the previous summary (CondensationSummaryEvent), which the forgotten span holds whenever the
  summary was not in the head the condensation keeps: a message, so its first 497 characters.
  Everything an earlier summary said past them is not shown to the next one: OpenHands' summary
  chain carries on only the head of each summary it replaces.

tests/test_openhands_summary_input.py holds these to the SDK's own `str` of its events
(tests/golden/openhands/cases_previews.json, recorded by generate_previews.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...kept_by_identity import KeptByIdentity
from ...session import (
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    message_with,
    part_text,
    text_part,
    tool_call_part,
    tool_result_part,
)
from .view import Event

if TYPE_CHECKING:
    from ...summarizers import Features

N_CHAR_PREVIEW = 500
#: The id of the message standing for the previous summary among a condensation's inputs.
SUMMARY_ID = "(previous summary)"


def message_preview(text: str) -> str:
    """A message's preview (MessageEvent and every LLMConvertibleEvent's `str`)."""
    return text[: N_CHAR_PREVIEW - 3] + "..." if len(text) > N_CHAR_PREVIEW else text


def result_preview(text: str) -> str:
    """A tool result's, or a thought's, preview."""
    return text[:N_CHAR_PREVIEW] + "..." if len(text) > N_CHAR_PREVIEW else text


def _shown_parts(m: Message) -> Message | tuple[Any, ...] | None:
    """The parts of the message the stand-in reads of m's events: m itself where it reads the
    same, None where nothing of it is shown (the message not made: `_read` reads the parts)."""
    parts = m.parts
    if m.role == "system":
        return None
    if m.role == "tool":
        first = parts[0] if len(parts) == 1 else None
        if type(first) is ToolResultPart:  # (most results)
            text = first.text  # type: ignore[union-attr]
        else:
            text = "".join(p.text for p in parts if isinstance(p, ToolResultPart)) or "".join(
                part_text(p) for p in parts if not isinstance(p, (ToolCallPart, ThinkingPart, ImagePart)))
        shown = result_preview(text)
        if isinstance(first, ToolResultPart) and first.text == shown:
            return m
        new: tuple[Any, ...] = (tool_result_part(m.tool_call_id or (first.tool_call_id if isinstance(first, ToolResultPart) else ""), shown,
                                                 first.is_error if isinstance(first, ToolResultPart) else False),)
    elif len(parts) == 1 and type(parts[0]) is TextPart:  # (most messages)
        text = parts[0].text  # type: ignore[union-attr]
        if not text:
            return None
        shown = message_preview(text)
        if shown == text:
            return m
        new = (text_part(shown),)
    else:
        calls = tuple(p for p in parts if isinstance(p, ToolCallPart))
        texts = [("[Image: 1 URLs]" if isinstance(p, ImagePart) else part_text(p)) for p in parts
                 if not isinstance(p, (ToolCallPart, ThinkingPart)) and (not calls or not isinstance(p, ImagePart))]
        text = " ".join(texts)
        if calls:
            shown = result_preview(text)
            new = ((text_part(shown),) if shown else ()) + tuple(tool_call_part(c.id, c.name, "") for c in calls)
        else:
            shown = message_preview(text)
            new = (text_part(shown),) if shown else ()
    if not new:
        return None
    return m if m.parts == new else new


def shown(m: Message) -> Message | None:
    """The message the stand-in reads of m's events: m itself where it reads the same, None where
    nothing of it is shown (what `compact` hands a summarizer)."""
    made = _shown_parts(m)
    return made if made is None or isinstance(made, Message) else message_with(m, parts=made)


def _read(m: Message) -> Features | None:
    """The offline summary's reading of `shown(m)` (`summarizers._extract` of it), read from the
    view's parts without making the view: a condensation of a long session reads tens of thousands.
    tests/test_openhands_summary_input.py holds the two equal."""
    from ...summarizers import read_parts  # lazily: it imports urllib, which ctxviz loads only to summarise

    made = _shown_parts(m)
    if made is None:
        return None
    return read_parts(m.role, m.name, m.parts if made is m else made)  # type: ignore[arg-type]


#: Each message's reading as shown, kept while the message lives (a re-plan shows nearly the same
#: messages again, and a plan's reference step at every turn).
_READ: KeptByIdentity[Features | None] = KeptByIdentity()


def reading(m: Message) -> Features | None:
    return _READ.get(m, _read)


def summary_shown(text: str) -> Message:
    """The previous summary as the summariser is shown it: a user message of its first 497
    characters, read by the offline summary as the items they show (`read_as_snapshot`)."""
    from ...summarizers import read_as_snapshot  # lazily: it imports urllib, which ctxviz loads only to summarise

    message = Message(SUMMARY_ID, -1, "user", (text_part(message_preview(text)),))
    read_as_snapshot(message)
    return message


def summary_text(items: Iterable[str | Message]) -> str:
    """The offline summary of what the summariser is shown of these (a summary's text or a message),
    in this order."""
    from ...summarizers import (  # lazily: it imports urllib, which ctxviz loads only to summarise
        snapshot_items,
        snapshot_of,
    )

    read = (snapshot_items(message_preview(item)) if isinstance(item, str) else reading(item) for item in items)
    return snapshot_of([r for r in read if r is not None])


def inputs(items: Iterable[str | Message]) -> list[Message]:
    """What the summariser is shown, in the view's order, of the forgotten events: a summary's
    text (str) or a message."""
    out: list[Message] = []
    for item in items:
        view = summary_shown(item) if isinstance(item, str) else shown(item)
        if view is not None:
            out.append(view)
    return out


def forgotten_items(gone: Sequence[Event]) -> tuple[str | int, ...]:
    """What a condensation's summariser is shown of the events it forgets, in the view's order: a
    summary by its name, a message by its index (once: a message's tool calls are one event each,
    and the View keeps or drops a batch whole, so its first call stands for it)."""
    return tuple(e.id if e.kind == "summary" else e.message for e in gone  # type: ignore[misc]
                 if e.kind == "summary" or (e.message is not None and (e.kind != "action" or e.id.endswith("#0"))))


def shown_of(gone: Sequence[Event], messages: Sequence[Message], texts: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """The offline summary of what a condensation's summariser is shown of the events it forgets
    (`gone`, in the view's order; `texts`: each summary's), and that as a plan's JSON says it
    (`summary_shown`): the previous summary as shown, how many of the forgotten messages come
    before it, and the forgotten messages as runs of indices. One pass, each message's view and
    reading looked up in place (a condensation of a long session forgets tens of thousands)."""
    from ...summarizers import (  # lazily: it imports urllib, which ctxviz loads only to summarise
        snapshot_items,
        snapshot_of,
    )

    read: list[Features] = []
    add = read.append
    runs: list[list[int]] = []
    previous: str | None = None
    before = 0
    count = 0
    kept = _READ.entries.get
    put = _READ.put
    for k in forgotten_items(gone):
        if k.__class__ is str:  # (a summary, by name)
            previous = message_preview(texts[k])
            before = count
            add(snapshot_items(previous))  # (`summary_shown`'s reading)
            continue
        count += 1
        if runs and runs[-1][1] == k - 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
        m = messages[k]
        entry = kept(id(m))
        features = entry[1] if entry is not None and entry[0]() is m else put(m, _read(m))
        if features is not None:
            add(features)
    return snapshot_of(read), {"previous_summary_shown": previous, "before_previous_summary": before, "messages": runs}


def shown_again(described: Mapping[str, Any], messages: Mapping[int, Message]) -> list[Message]:
    """`shown_of`'s views from what the plan's JSON says (`compact` reads the plan it condensed)."""
    order = [messages[k] for a, b in described.get("messages", ()) for k in range(a, b + 1)]
    items: list[str | Message] = list(order)
    if described.get("previous_summary_shown") is not None:
        items.insert(described.get("before_previous_summary", 0), described["previous_summary_shown"])
    return inputs(items)
