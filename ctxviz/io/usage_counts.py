"""Reported usage that is no token count: a negative figure, left out with a note.

Every loader reads the provider's usage its own way (Claude Code's cached lines, Codex's token
events, OpenAI's `prompt_tokens` less its cached part); a negative figure among them, from a hand-edited
file or a producer's bug, made the fill figure, the calls table and the calibration read it as
a real call. A real log stays readable for everything else in it, so the session loads, that
message's usage is dropped, and a note names each message and figure.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter

from ..engine.session import Message, Session, Usage, message_with

#: The usage figures a note names (Usage's fields, in its order).
_FIELDS = tuple(f.name for f in dataclasses.fields(Usage))
_USAGE = attrgetter("usage")
_FIGURES = attrgetter(*_FIELDS)
#: Messages named in the note; the rest are counted.
_NAMED = 3


def without_negative_usage(session: Session) -> Session:
    """The session with every message whose usage has a negative figure stripped of that usage,
    and a note saying so (the session itself when none has)."""
    usages = list(filter(None, map(_USAGE, session.messages)))  # C loops: every load of a long log pays this
    if min(map(min, map(_FIGURES, usages)), default=0) >= 0:
        return session
    bad = [m for m in session.messages if m.usage is not None and min(_FIGURES(m.usage)) < 0]
    drop = {m.index for m in bad}
    messages = tuple(message_with(m, usage=None) if m.index in drop else m for m in session.messages)
    shown = "; ".join(_figures(m) for m in bad[:_NAMED]) + (f"; and {len(bad) - _NAMED:,} more" if len(bad) > _NAMED else "")
    note = (f"{len(bad):,} message{'s' if len(bad) != 1 else ''} report{'s' if len(bad) == 1 else ''} a negative token count "
            f"in {'its' if len(bad) == 1 else 'their'} usage ({shown}): no call sends fewer than 0 tokens, so that usage is left out")
    return dataclasses.replace(session, messages=messages, notes=(*session.notes, note))


def _figures(message: Message) -> str:
    usage = message.usage
    negative = ", ".join(f"{f} {getattr(usage, f):,}" for f in _FIELDS if getattr(usage, f) < 0)
    return f"#{message.index} ({message.id}): {negative}"
