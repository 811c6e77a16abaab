"""Which tool call each tool result answers, and which calls and results have no partner.

`Session.tool_pairs` and `Session.tool_call_problems` read them from here. The links are folded
message by message into a `Links` state, so a followed log's grown session (the same message
objects, then new ones: engine/growth.py) folds only its new messages into the state its origin kept,
instead of reading the calls of 14,000 messages again on every append. The result equals a fresh
fold of all the messages, or the fold gives up and everything is read again: when a new message
reuses a call id already seen, or calls the id of a result that had no call (both change what
older messages link to).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .growth import TAIL, carried

Pairs = tuple[tuple[int, int], ...]
Problems = tuple[tuple[int, int | None, str], ...]


@dataclass
class Links:
    """The links of a session's first `covered` messages."""

    covered: int = 0
    owner: dict[str, int] = field(default_factory=dict)  # call id -> index of the (last) message that makes it
    answered: dict[str, int] = field(default_factory=dict)  # call id -> the first result whose call is in the file
    pairs: list[tuple[int, int]] = field(default_factory=list)
    result_problems: list[tuple[int, int | None, str]] = field(default_factory=list)
    unresolved: set[str] = field(default_factory=set)  # call ids of results whose call is not (yet) in the file
    #: Calls that are a problem unless a later result answers them, by (message index, position in it):
    #: (role, call id); an assistant's call leaves when a result answers it.
    open_calls: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)
    open_by_id: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def copy(self) -> Links:
        return Links(self.covered, dict(self.owner), dict(self.answered), list(self.pairs), list(self.result_problems),
                     set(self.unresolved), dict(self.open_calls), {k: list(v) for k, v in self.open_by_id.items()})


def _result_id(m: Any) -> str:
    return m.tool_call_id or next((p.tool_call_id for p in m.parts if p.kind == "tool_result"), "")


def fold(links: Links, messages: Sequence[Any], start: int, end: int) -> bool:
    """Fold `messages[start:end]` (which follow the `links.covered` first ones) into `links`, in
    place; False when they change what an earlier message links to (then fold from scratch)."""
    segment = messages[start:end]
    calls_of = [m.tool_calls for m in segment]
    owner, answered, unresolved = links.owner, links.answered, links.unresolved
    fresh: dict[str, int] = {}
    for m, calls in zip(segment, calls_of, strict=True):
        for call in calls:
            if call.id:
                fresh[call.id] = m.index
    if start and any(k in owner or k in unresolved for k in fresh):  # (iterates the new ids only)
        return False
    owner.update(fresh)
    for m in segment:
        if m.role != "tool":
            continue
        call_id = _result_id(m)
        caller = owner.get(call_id) if call_id else None
        if caller is None:
            what = f"its call {call_id}" if call_id else "the call it answers (it names none)"
            links.result_problems.append((m.index, None, f"tool result #{m.index} is sent but {what} is not in the file"))
            unresolved.add(call_id)
            continue
        if call_id not in answered:
            answered[call_id] = m.index
            for key in links.open_by_id.pop(call_id, ()):
                if links.open_calls[key][0] == "assistant":
                    del links.open_calls[key]
        role = messages[caller].role
        if role == "assistant":
            links.pairs.append((caller, m.index))
        else:
            links.result_problems.append((m.index, caller, f"tool result #{m.index} is sent but its call {call_id} is on {role} message "
                                                           f"#{caller}, and only an assistant message sends tool calls"))
    for m, calls in zip(segment, calls_of, strict=True):
        if not calls or m.role == "system":  # a system message's text joins the system prompt, which is always sent
            continue
        for k, call in enumerate(calls):
            if m.role == "assistant" and call.id and call.id in answered:
                continue
            links.open_calls[(m.index, k)] = (m.role, call.id)
            if call.id:
                links.open_by_id.setdefault(call.id, []).append((m.index, k))
    links.covered = end
    return True


def problems_of(links: Links) -> Problems:
    """The problems, in the order `Session.tool_call_problems` gives them."""
    problems = list(links.result_problems)
    for (index, _k), (role, call_id) in sorted(links.open_calls.items()):
        if role == "assistant":
            problems.append((index, None, f"tool call #{index} ({call_id or 'no id'}) is sent but no tool result in the file answers it"))
        else:
            result = links.answered.get(call_id) if call_id else None
            then = f" (its result #{result} has no call)" if result is not None else ""
            problems.append((index, result, f"{role} message #{index} is sent with tool call {call_id or '(no id)'}, which only an "
                                            "assistant message can send, so the call is lost" + then))
    problems.sort(key=lambda p: (p[0], -1 if p[1] is None else p[1]))
    return tuple(problems)


_KEY: Hashable = ("tool-links",)


def _full(session: Any) -> tuple[Links, Pairs, Problems]:
    messages = session.messages
    stable = Links()
    fold(stable, messages, 0, max(0, len(messages) - TAIL))
    return _finish(stable, messages)


def _finish(stable: Links, messages: Sequence[Any]) -> tuple[Links, Pairs, Problems]:
    """(the state of the messages no loader rebuilds any more, kept for the next growth; pairs; problems)."""
    last = stable.copy()
    if not fold(last, messages, stable.covered, len(messages)):
        whole = Links()
        fold(whole, messages, 0, len(messages))
        return Links(), tuple(whole.pairs), problems_of(whole)  # an empty state: the next growth reads all again
    return stable, tuple(last.pairs), problems_of(last)


def _grow(session: Any, value: tuple[Links, Pairs, Problems], shared: int) -> tuple[Links, Pairs, Problems] | None:
    """The links of a grown session: its origin's state of the messages both share, and the rest folded in."""
    stable = value[0]
    messages = session.messages
    if stable.covered > shared:
        return None
    end = max(stable.covered, len(messages) - TAIL)
    grown = stable.copy()
    if not fold(grown, messages, stable.covered, end):
        return None
    return _finish(grown, messages)


def tool_links(session: Any) -> tuple[Pairs, Problems]:
    """(tool call/result pairs, problems) of a session (see `Session.tool_pairs`)."""
    value = carried(session, _KEY, _full, _grow)
    return value[1], value[2]
