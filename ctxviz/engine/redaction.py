"""Redaction placeholders: a log whose texts were replaced before it was shared.

Sanitised logs keep the structure and the provider's usage and replace each free text by a marker
(`[REDACTED_TEXT len=3021 sha=dc9e82a0]`, `[REDACTED_PROMPT]`, `[REDACTED]`). ctxviz counts what the
file holds, so those messages' token counts are the markers', far below what the model was sent,
and the markers' hashes read as ids: a third of one such log's "lost" anchors were hashes. A note
says so, and the anchors are read from the text around the markers only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .kept_by_identity import KeptByIdentity
from .session import Message, Session

#: A marker as sanitisers write them: `[REDACTED]`, `[REDACTED_KIND]`, with the original's length and
#: a hash when they keep them.
REDACTED_RE = re.compile(r"\[REDACTED(?:_[A-Z]+)*(?: len=(\d+))?(?: sha=[0-9a-fA-F]+)?\]")
#: A marker a sanitiser signed: with the original's length or a hash.
SIGNED_RE = re.compile(r"\[REDACTED(?:_[A-Z]+)*(?: len=\d+| sha=[0-9a-fA-F]+)")
#: What every marker starts with, searched for first (a C substring search per text).
MARK = "[REDACTED"


def without_markers(text: str) -> str:
    """The text with each marker made a space (the text itself when it holds none)."""
    return REDACTED_RE.sub(" ", text) if MARK in text else text


#: How many messages, spread over the session, are looked at before the whole is read.
SAMPLES = 256


def _sampled(session: Session) -> bool:
    """Whether a marker stands in one of `SAMPLES` messages spread over the session. A sanitised log
    has them in most messages, so a sample finds them; reading every text cost a cheap policy's
    first plan a third again (1.3 ms beside 4.2 ms at 4,000 messages), for the few logs that are."""
    messages = session.messages
    return next(_marked(messages[:: max(1, len(messages) // SAMPLES)]), None) is not None


def _marked(messages: Iterable[Message]) -> Iterator[tuple[int, str]]:
    """(message index, text) of each part's text (a call's arguments) that holds a marker."""
    for m in messages:
        for part in m.parts:
            text = getattr(part, "text", None)
            if text is None:
                text = getattr(part, "arguments", None)
            if text and MARK in text:
                yield m.index, text


#: Each session's note, kept while the session lives: every plan of it carries the note, and a
#: re-plan should not read a 100 MB log's texts again (about 20 ms).
_NOTES: KeptByIdentity[str] = KeptByIdentity()


def redaction_note(session: Session) -> str:
    """`read_redaction_note` of the session, read once while it lives."""
    return _NOTES.get(session, read_redaction_note)


def read_redaction_note(session: Session) -> str:
    """A note when the session's texts hold redaction markers ("" when none does): how many
    messages, how much original text the markers name (their `len=`), and what that does to the
    counts."""
    if not _sampled(session):
        return ""
    messages: set[int] = set()
    markers = 0
    named = 0
    signed = 0
    for index, text in _marked(session.messages):
        found = REDACTED_RE.findall(text)
        if not found:
            continue
        messages.add(index)
        markers += len(found)
        named += sum(int(n) for n in found if n)
        signed += SIGNED_RE.search(text) is not None
    # A tool's output may mask a secret as "[REDACTED]" and the model read just that: the log is
    # said to be sanitised only where a sanitiser signed its markers (a length or a hash) or
    # where they stand in most messages.
    if not messages or (not signed and len(messages) * 2 < len(session.messages)):
        return ""
    n = len(messages)
    size = f", standing for {named:,} characters of original text by their `len=` figures" if named else ""
    return (f"{n:,} of {len(session.messages):,} messages hold redaction markers ({markers:,} `[REDACTED...]` in all{size}): "
            "the log was sanitised before it was shared, so ctxviz counts the markers, not what the model was sent, and those "
            "messages' token counts are far below the real ones (the provider's reported usage, where the log has it, is the real "
            "figure); their anchors are read around the markers")
