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

from collections.abc import Iterable
from typing import Any

from ...kept_by_identity import KeptByIdentity
from ...session import ImagePart, Message, ThinkingPart, ToolCallPart, ToolResultPart, part_text, text_part, with_parts

N_CHAR_PREVIEW = 500
#: The id of the message standing for the previous summary among a condensation's inputs.
SUMMARY_ID = "(previous summary)"


def message_preview(text: str) -> str:
    """A message's preview (MessageEvent and every LLMConvertibleEvent's `str`)."""
    return text[: N_CHAR_PREVIEW - 3] + "..." if len(text) > N_CHAR_PREVIEW else text


def result_preview(text: str) -> str:
    """A tool result's, or a thought's, preview."""
    return text[:N_CHAR_PREVIEW] + "..." if len(text) > N_CHAR_PREVIEW else text


def _shown(m: Message) -> Message | None:
    """The message the stand-in reads of m's events (m itself where it reads the same; None: nothing)."""
    parts = m.parts
    if m.role == "system":
        return None
    if m.role == "tool":
        text = "".join(p.text for p in parts if isinstance(p, ToolResultPart)) or "".join(
            part_text(p) for p in parts if not isinstance(p, (ToolCallPart, ThinkingPart, ImagePart)))
        shown = result_preview(text)
        first = parts[0] if len(parts) == 1 else None
        if isinstance(first, ToolResultPart) and first.text == shown:
            return m
        new: tuple[Any, ...] = (ToolResultPart(tool_call_id=m.tool_call_id or (first.tool_call_id if isinstance(first, ToolResultPart) else ""),
                                               text=shown),)
    else:
        calls = tuple(p for p in parts if isinstance(p, ToolCallPart))
        texts = [("[Image: 1 URLs]" if isinstance(p, ImagePart) else part_text(p)) for p in parts
                 if not isinstance(p, (ToolCallPart, ThinkingPart)) and (not calls or not isinstance(p, ImagePart))]
        text = " ".join(texts)
        if calls:
            shown = result_preview(text)
            new = ((text_part(shown),) if shown else ()) + tuple(ToolCallPart(c.id, c.name, "") for c in calls)
        else:
            shown = message_preview(text)
            new = (text_part(shown),) if shown else ()
    if not new:
        return None
    return m if m.parts == new else with_parts(m, new)


#: Each message's view, kept while the message lives (a plan's reference step shows the same
#: messages again at every turn).
_SHOWN: KeptByIdentity[Message | None] = KeptByIdentity()


def shown(m: Message) -> Message | None:
    return _SHOWN.get(m, _shown)


def summary_shown(text: str) -> Message:
    """The previous summary as the summariser is shown it: a user message of its first 497
    characters, read by the offline summary as the items they show (`read_as_snapshot`)."""
    from ...summarizers import read_as_snapshot  # lazily: it imports urllib, which ctxviz loads only to summarise

    message = Message(SUMMARY_ID, -1, "user", (text_part(message_preview(text)),))
    read_as_snapshot(message)
    return message


def inputs(items: Iterable[str | Message]) -> list[Message]:
    """What the summariser is shown, in the view's order, of the forgotten events: a summary's
    text (str) or a message."""
    out: list[Message] = []
    for item in items:
        view = summary_shown(item) if isinstance(item, str) else shown(item)
        if view is not None:
            out.append(view)
    return out


def described(items: Iterable[str | Message]) -> list[dict[str, Any]]:
    """The inputs as a plan's JSON names them: the previous summary's text as shown, a message by index."""
    return [{"previous_summary_shown": message_preview(item)} if isinstance(item, str) else {"message": item.index} for item in items]
