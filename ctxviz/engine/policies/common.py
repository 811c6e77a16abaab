"""Pieces several policies share: how a static session maps onto a framework's call arguments."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..session import Message, Session


def split_new_message(session: Session) -> tuple[list[Message], list[Message], Message | None]:
    """(system-role messages, history, new message).

    For a static plan the session's last message is the "new message" when it comes from the user;
    otherwise there is none. System-role messages join the system prompt, as frameworks pass it
    separately from the history.
    """
    system_part, history_part = session.system_and_history
    system, history = list(system_part), list(history_part)
    new_message = history.pop() if history and history[-1].role == "user" else None
    return system, history, new_message


def base_system_prompt(session: Session, system_messages: list[Message]) -> str:
    """The session's system prompt followed by any system-role messages, blank-line separated."""
    parts = [session.system_prompt] if session.system_prompt else []
    parts += [m.text for m in system_messages if m.text]
    return "\n\n".join(parts)


def tools_json(session: Session) -> str:
    """Tool definitions as the JSON the API receives (what supyagent counts and missy reserves for)."""
    if not session.tools:
        return ""
    return json.dumps([t.to_openai() for t in session.tools])


def recorded_covers(session: Session) -> tuple[dict[str, int], frozenset[int]]:
    """Which messages of this file a recorded summary replaces, and which summaries are superseded.

    Returns (message id -> index of the summary that takes its place, indices of superseded
    summaries). Only `covers` naming messages in this file count: a summary of what came before
    the file replaces nothing in it, so a session without one gets ({}, frozenset()) and every
    decision stays the framework's. A summary is superseded when a later one covers every message
    of the file it covers (Claude Code's second compaction summarises the first summary's span
    again); the later one then takes the place of both spans.
    """
    if not session.summaries:
        return {}, frozenset()
    # (every re-plan of the session reads it: each summary's covers are walked once)
    return session.derive(("common", "recorded covers"), _recorded_covers)


def _recorded_covers(session: Session) -> tuple[dict[str, int], frozenset[int]]:
    ids = {m.id for m in session.messages}
    spans = [frozenset(c for c in s.covers if c in ids) for s in session.summaries]
    if not any(spans):
        return {}, frozenset()
    superseded = frozenset(i for i, span in enumerate(spans) if span and any(span <= later for later in spans[i + 1 :]))
    owner: dict[str, int] = {}
    for i, span in enumerate(spans):
        if i not in superseded:
            for message_id in span:
                owner[message_id] = i
    return owner, superseded


def history_with_summaries(session: Session, with_system: bool = False) -> tuple[list[Message | int], dict[str, int], frozenset[int]]:
    """The non-system history (`with_system`: every message, system-role ones where they stand) as a
    framework's message store would hold it after the compactions the file records: each recorded
    summary (by its index in `session.summaries`) in the place of the messages it covers, at its
    first covered message (at the front when it covers only what came before the file). Returns
    (entries, covered message id -> summary index, superseded summaries); see
    recorded_covers for which summaries are superseded."""

    history = session.messages if with_system else session.system_and_history[1]
    if not session.summaries:
        return list(history), {}, frozenset()
    covered, superseded = recorded_covers(session)
    placed = {covered[m.id] for m in history if m.id in covered}
    entries: list[Message | int] = [k for k in range(len(session.summaries)) if k not in superseded and k not in placed]
    emitted: set[int] = set()
    for m in history:
        k = covered.get(m.id)
        if k is None:
            entries.append(m)
        elif k not in emitted:
            emitted.add(k)
            entries.append(k)
    return entries, covered, superseded


def with_system_messages(entries: list[Message | int], system: Sequence[Message]) -> list[Message | int]:
    """A message store's entries (messages, and recorded summaries by index) with the system-role
    messages put back where they stand (LlamaIndex's memory and AutoGen's model context hold them in
    place); a summary keeps its place beside the messages it stands for."""
    out: list[Message | int] = []
    k = 0
    for e in entries:
        if not isinstance(e, int):
            while k < len(system) and system[k].index < e.index:
                out.append(system[k])
                k += 1
        out.append(e)
    out.extend(system[k:])
    return out
