"""Retention: which of a session's anchors (engine/anchors.py) still reach the model, and which
the policy lost, for one plan.

An anchor survives when the context holds it: a message it appears in is sent whole (kept), or
sent cut (truncated or replaced) and the cut text still holds it, or a text sent beside the
messages (the system prompt, a summary in force, any context entry not made from one message)
names it. User requests and instructions survive in a summary only when it repeats their words.

API (pure, no Qt; the app's "lost" panel, retention line and term search read it):

- `plan_retention(plan, session) -> Retention`: score (`kept / anchors`), `instruction_score`,
  `by_kind`, and `lost` (user requests and instructions first). Cost: one pass over the sent
  messages' anchor lists, well under 10 ms for a 10,000-message plan once the anchors are
  extracted (`anchors_of`, once per session, each message once: engine/anchor_cache.py).
- `view_of(plan)` / `present(index, view)`: what one plan sends, and the anchor ids it holds.

Turn by turn through a simulation (each turn's retention, what each change lost) is
engine/retention_timeline.py's; where one term went, turn by turn, engine/where.py's.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .anchor_extract import KINDS, USER_KINDS
from .anchors import Anchor, AnchorIndex, anchors_of
from .plan import Decision, Plan, Rows
from .plan_rows import KEPT, REPLACED, TRUNCATED
from .ranking import Rank, first_tier, ranked, ranked_ids
from .session import Session

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class View:
    """What reached the model in one plan: messages sent whole, messages sent cut (with the text
    as sent, when the plan's context holds it), and the texts sent beside the messages."""

    turn: int
    full: frozenset[int]
    partial: Mapping[int, str]
    extra: tuple[str, ...]


def _entry_text(entry: Mapping[str, Any]) -> str:
    content = entry.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("text"))
    else:
        text = "" if content is None else str(content)
    calls = entry.get("tool_calls") or ()
    if calls:
        args = [f"{c.get('function', {}).get('name', '')}({c.get('function', {}).get('arguments', '')})" for c in calls if isinstance(c, Mapping)]
        text = "\n".join([text, *args]) if text else "\n".join(args)
    return text


def system_prompt_sent(plan: Plan) -> bool:
    """Whether the plan's context carries its system prompt. A policy can drop it (langchain-trim
    without `include_system` trims it like any message); a plan without a context is taken at
    its word."""
    prompt = plan.system_prompt
    if not prompt:
        return False
    if not plan.context:
        return True
    head = prompt[:200]
    context = plan.context  # its entries are built when read (plan.Context): only those made from no message are
    return any(entry.get("role") in ("system", "developer") and head in _entry_text(entry) for entry in context[:3]) or \
        any(head in _entry_text(context[k]) for k, index in zip(range(len(context)), plan.context_index or (None,) * len(context), strict=False)
            if index is None)


def view_of(plan: Plan, turn: int | None = None) -> View:
    """The view of a plan. Without `context_index` a cut message counts as sent (its cut text is
    unknown) and the summaries the plan sends stand for the texts beside the messages."""
    numbers = plan.decision_numbers  # read in C: a 10,000-message plan's records are never built
    positions: Sequence[int] = range(len(numbers)) if isinstance(plan.messages, Rows) else plan.columns.index
    full: set[int] = set(map(positions.__getitem__, np.flatnonzero(numbers == KEPT).tolist()))
    cut: set[int] = set(map(positions.__getitem__, np.flatnonzero((numbers == TRUNCATED) | (numbers == REPLACED)).tolist()))
    partial: dict[int, str] = {}
    extra: list[str] = [plan.system_prompt] if system_prompt_sent(plan) else []
    context = plan.context
    if plan.context_index and len(plan.context_index) == len(context):
        # Only the entries made from no message and those of cut messages are read: each entry is
        # built in OpenAI form when read (plan.Context), and a view of a sent message needs none.
        for k, index in enumerate(plan.context_index):
            if index is None:
                text = _entry_text(context[k])
                if text and text != plan.system_prompt:
                    extra.append(text)
            elif index in cut:
                partial[index] = partial.get(index, "") + _entry_text(context[k])
        full.update(cut - partial.keys())  # a cut message whose context entry is not found: sent, as far as we know
    else:
        full.update(cut)
        extra += [s.text for s in plan.summaries if s.decision is Decision.KEPT and s.text]
    last = turn if turn is not None else (positions[-1] if len(positions) else -1)
    return View(last, frozenset(full), partial, tuple(extra))


def present(index: AnchorIndex, view: View) -> set[int]:
    """The ids of the anchors the view holds (any that were said so far, or only in a sent text)."""
    ids: set[int] = set()
    by_message = index.by_message
    for k in view.full:
        ids.update(by_message[k])
    messages = index.session.messages
    for k, text in view.partial.items():
        ids.update(index.ids_in_text(text, messages[k].role))
    for text in view.extra:
        ids.update(index.ids_in_text(text))
    return ids


class Scored:
    """The shares a retention reports, of its counts: anchors kept, and the user's instructions kept
    (1.0 when there is none to keep). A plan's `Retention` and a replay turn's `TurnRetention` alike."""

    anchors: int
    kept: int
    instructions: int
    instructions_kept: int

    @property
    def score(self) -> float:
        return self.kept / self.anchors if self.anchors else 1.0

    @property
    def instruction_score(self) -> float:
        return self.instructions_kept / self.instructions if self.instructions else 1.0


@dataclass(frozen=True)
class Retention(Scored):
    """What of the anchors said up to a turn still reaches the model."""

    turn: int
    anchors: int
    kept: int
    instructions: int
    instructions_kept: int
    #: kind -> (kept, total), in anchor_extract.KINDS order.
    by_kind: Mapping[str, tuple[int, int]]
    #: The anchors lost, user requests and instructions first (a tuple; ranked when read for `plan_retention(lazy=True)`).
    lost: Sequence[Anchor] = ()
    #: For a lost anchor's id: why its newest message is not sent (the plan's reason), when known.
    reasons: Mapping[int, str] = field(default_factory=dict)
    #: For a lost anchor's id: its rank (engine/ranking.py): tier 1 what the user asked, 2 used again, 3 debris, and why.
    ranks: Mapping[int, Rank] = field(default_factory=dict)
    #: Set when what a summary still carries was measured against ctxviz's offline stand-in summary,
    #: not the agent's own (the policy's `stand_in`).
    stand_in: str = ""

    def tier(self, tier: int) -> tuple[Anchor, ...]:
        """The lost anchors of one rank tier, in order."""
        return tuple(a for a in self.lost if a.id in self.ranks and self.ranks[a.id].tier == tier)

    def to_json(self, limit: int | None = None) -> dict[str, Any]:
        lost = self.lost if limit is None else self.lost[:limit]
        return {"turn": self.turn, "score": round(self.score, 4), "anchors": self.anchors, "kept": self.kept,
                "instruction_score": round(self.instruction_score, 4), "instructions": self.instructions,
                "instructions_kept": self.instructions_kept, "by_kind": {k: {"kept": a, "total": b} for k, a, b in
                                                                         ((k, *v) for k, v in self.by_kind.items())},
                "lost_count": len(self.lost), **({"stand_in": self.stand_in} if self.stand_in else {}),
                "lost": [{**a.to_json(), **({"rank": self.ranks[a.id].tier, "why": self.ranks[a.id].why} if a.id in self.ranks else {}),
                          **({"reason": self.reasons[a.id]} if a.id in self.reasons else {})} for a in lost]}


def _retention(index: AnchorIndex, ids: set[int], turn: int, reasons: Mapping[int, str] | None = None) -> Retention:
    scope = bisect_right(index.first_indices, turn)
    anchors = index.anchors[:scope]
    kinds: dict[str, list[int]] = {}
    lost: list[Anchor] = []
    for a in anchors:
        entry = kinds.setdefault(a.kind, [0, 0])
        entry[1] += 1
        if a.id in ids:
            entry[0] += 1
        else:
            lost.append(a)
    by_kind = {k: (kinds[k][0], kinds[k][1]) for k in KINDS if k in kinds}
    kept = scope - len(lost)
    instructions = by_kind.get("instruction", (0, 0))
    order = _Ranked((a.id for a in lost), index, by_all=False)
    return Retention(turn, scope, kept, instructions[1], instructions[0], by_kind, order, dict(reasons or {}), _Ranks(order))


def plan_retention(plan: Plan, session: Session, index: AnchorIndex | None = None, lazy: bool = False) -> Retention:
    """The retention of one plan of the whole session (or of a turn's prefix, planned). The lost
    anchors are ranked and each one's reason written here, where the app computes it (on a worker:
    its lost card reads every one on the window's thread); with `lazy`, when first read (a replay's
    last turn: `simulate` prints how many were lost and the first six)."""
    index = index or anchors_of(session)
    view = view_of(plan)
    ids = present(index, view)
    retention = _retention(index, ids, view.turn)
    lost: Sequence[Anchor] = retention.lost
    ranks: Mapping[int, Rank] = retention.ranks
    reasons: Mapping[int, str] = _Reasons(lost, plan)
    if not lazy:
        lost, ranks = retention.lost.ranked()  # type: ignore[attr-defined]
        reasons = dict(reasons)
    return Retention(retention.turn, retention.anchors, retention.kept, retention.instructions, retention.instructions_kept,
                     retention.by_kind, lost, reasons, ranks, stand_in_of(plan, session))


class _Reasons(Mapping[int, str]):
    """Lost anchor id -> why its newest message the plan holds is not sent (`#k: the plan's reason`),
    each sentence built when read: a replay's last turn loses thousands of anchors (10,000 messages
    of a coding agent: 6,900, a plan row built for each, about 20 ms), and a report shows a few."""

    __slots__ = ("_lost", "_newest", "_plan", "_said")

    def __init__(self, lost: Sequence[Anchor], plan: Plan) -> None:
        self._lost: Sequence[Anchor] | None = lost
        self._plan = plan
        self._newest: dict[int, int] | None = None
        self._said: dict[int, str] = {}

    def newest(self) -> dict[int, int]:
        """Lost anchor id -> its newest message the plan holds (anchors the plan holds none of have no reason)."""
        if self._newest is None:
            planned = len(self._plan.messages)
            newest: dict[int, int] = {}
            for a in self._lost or ():
                below = bisect_left(a.messages, planned)  # its messages are in order: the newest the plan holds
                if below:
                    newest[a.id] = a.messages[below - 1]
            self._newest, self._lost = newest, None
        return self._newest

    def __getitem__(self, ident: int) -> str:
        found = self._said.get(ident)
        if found is None:
            k = self.newest()[ident]
            found = self._said[ident] = f"#{k}: {self._plan.messages[k].reason}"
        return found

    def __contains__(self, ident: object) -> bool:
        return ident in self.newest()

    def __iter__(self) -> Iterator[int]:
        return iter(self.newest())

    def __len__(self) -> int:
        return len(self.newest())


def stand_in_of(plan: Plan, session: Session) -> str:
    """The policy's offline stand-in, when the plan summarises messages no recorded summary covers
    (what is "lost" there is measured against ctxviz's text, not the agent's own summary)."""
    from .policies import get_policy

    try:
        stand_in = get_policy(plan.policy).stand_in
    except Exception:  # a plan built by hand, or a plugin not loaded
        return ""
    if not stand_in:
        return ""
    covered = session.covered_ids
    summarised = [m.id for m in plan.messages if m.decision is Decision.SUMMARIZED]
    return stand_in if any(i not in covered for i in summarised) else ""


#: The longest head of a lost list (`lost[:k]`) read from its tier-1 anchors alone, without ranking the rest.
HEAD = 1_000


class _Ranked(Sequence[Anchor]):
    """Lost anchors in rank order, ranked when first read: a replay of 10,000 messages loses
    anchors at some 2,000 turns, and its text report reads only how many each lost. A head
    (`lost[:6]`, a report's first few) is ranked from the tier-1 anchors alone when there are
    enough of them: they come first (a replay's last turn: 6,900 lost, some 1,400 of them the
    user's requests). `by_all`: rank through every anchor's place in the index (`ranked_ids`, for
    the many losses of one replay), else the lost ones alone (`ranked`, for one plan's list)."""

    __slots__ = ("_by_all", "_done", "_firsts", "_ids", "_index")

    def __init__(self, ids: Iterable[int], index: AnchorIndex, by_all: bool = True) -> None:
        self._ids = tuple(dict.fromkeys(ids))
        self._index = index
        self._by_all = by_all
        #: (order, ranks) once ranked, and the tier-1 anchors in rank order once a head was read: each
        #: set whole by one assignment (two threads reading the list rank it twice, never half).
        self._done: tuple[tuple[Anchor, ...], dict[int, Rank]] | None = None
        self._firsts: tuple[Anchor, ...] | None = None

    def ranked(self) -> tuple[tuple[Anchor, ...], dict[int, Rank]]:
        done = self._done
        if done is None:
            index = self._index
            if self._by_all:
                done = ranked_ids(self._ids, index)
            else:
                done = ranked(map(index.anchors.__getitem__, self._ids), index)
            self._done = done
        return done

    def _head(self, size: int) -> tuple[Anchor, ...] | None:
        """The first `size` in rank order when the tier-1 anchors alone hold them, else None."""
        firsts = self._firsts
        if firsts is None:
            index = self._index
            firsts = self._firsts = ranked([a for a in map(index.anchors.__getitem__, self._ids) if first_tier(a)], index)[0]
        return firsts[:size] if len(firsts) >= size else None

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        if (self._done is None and isinstance(k, slice) and not k.start and k.step in (None, 1) and k.stop is not None
                and 0 <= k.stop <= HEAD):
            head = self._head(k.stop)
            if head is not None:
                return head
        return self.ranked()[0][k]

    def __iter__(self) -> Iterator[Anchor]:
        return iter(self.ranked()[0])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_Ranked, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


class _Ranks(Mapping[int, Rank]):
    """The ranks of a `_Ranked` loss's anchors, by anchor id, ranked when first read."""

    __slots__ = ("_lost",)

    def __init__(self, lost: _Ranked) -> None:
        self._lost = lost

    def __getitem__(self, ident: int) -> Rank:
        return self._lost.ranked()[1][ident]

    def __iter__(self) -> Iterator[int]:
        return iter(self._lost.ranked()[1])

    def __len__(self) -> int:
        return len(self._lost)


__all__ = ["USER_KINDS", "Retention", "View", "plan_retention", "present", "stand_in_of", "system_prompt_sent", "view_of"]


