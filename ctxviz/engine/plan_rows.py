"""A plan's per-message columns: what a policy decided for every message, as arrays.

A policy that decides with prefix sums and a cut (most do) hands over its decisions as columns,
and the reason sentence of a message is built only when someone reads that row (the table shows
thirty, `plan` prints them, the strip and charts read the columns). A re-plan of 100,000 messages
then builds no per-message record at all. `Rows` reads as the tuple of `MessagePlan` it replaces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from .session import Session


class Decision(StrEnum):
    KEPT = "kept"
    DROPPED = "dropped"
    SUMMARIZED = "summarized"
    TRUNCATED = "truncated"
    REPLACED = "replaced"


#: Decisions after which some version of the message still reaches the model.
SENT_DECISIONS = frozenset({Decision.KEPT, Decision.TRUNCATED, Decision.REPLACED})


class MessagePlan(NamedTuple):
    """One session message: its measured tokens, what the policy decided, where, and why.

    A NamedTuple rather than a frozen dataclass: a plan of 100,000 messages is rebuilt on every
    slider move, and tuple construction is several times cheaper.
    """

    index: int
    id: str
    role: str
    category: str
    tokens: int
    decision: Decision
    zone: str
    reason: str
    sent_tokens: int = 0
    #: The reason as a code (engine/reason_codes.py): "" means the decision's generic code.
    code: str = ""

    @property
    def sent(self) -> bool:
        return self.decision in SENT_DECISIONS

    @property
    def reason_code(self) -> str:
        """The code a program reads (the app's column, its filters, `plan --json`); never one that
        says "sent" for a message that is not, or the other way round."""
        from .reason_codes import code_of

        return code_of(self.code, self.decision.value).code

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "id": self.id,
            "role": self.role,
            "category": self.category,
            "tokens": self.tokens,
            "decision": self.decision.value,
            "zone": self.zone,
            "reason": self.reason,
            "reason_code": self.reason_code,
            "sent_tokens": self.sent_tokens,
        }


#: Every decision, in the order a decision column numbers them.
DECISIONS: tuple[Decision, ...] = tuple(Decision)

#: A decision's position in `DECISIONS`: the value a decision column holds.
DECISION_NUMBER = {d: k for k, d in enumerate(DECISIONS)}
KEPT, DROPPED, SUMMARIZED, TRUNCATED, REPLACED = (DECISION_NUMBER[d] for d in (
    Decision.KEPT, Decision.DROPPED, Decision.SUMMARIZED, Decision.TRUNCATED, Decision.REPLACED))
#: The decision numbers after which some version of the message is sent.
SENT_NUMBERS = np.array([d in (Decision.KEPT, Decision.TRUNCATED, Decision.REPLACED) for d in DECISIONS])


@dataclass(frozen=True, eq=False)
class Columns:
    """Every message's decision, tokens, tokens sent, zone and reason code; `reason(i)` says why.

    `zone` and `code` hold positions in `zone_names` and `code_names` (a plan has a handful of
    each). `reason` is called for the rows someone reads, never for the others."""

    session: Session
    decision: np.ndarray  # int8 positions in DECISIONS
    tokens: np.ndarray  # int64
    sent_tokens: np.ndarray  # int64: 0 for a message not sent
    zone: np.ndarray  # int16 positions in zone_names
    zone_names: tuple[str, ...]
    code: np.ndarray  # int16 positions in code_names
    code_names: tuple[str, ...]
    reason: Callable[[int], str]

    @property
    def sent(self) -> np.ndarray:
        return SENT_NUMBERS[self.decision]


class Rows(Sequence[MessagePlan]):
    """The plan's messages as `MessagePlan` records, each built (and kept) when it is read."""

    __slots__ = ("columns", "_built")

    def __init__(self, columns: Columns) -> None:
        self.columns = columns
        self._built: dict[int, MessagePlan] = {}

    def _row(self, i: int) -> MessagePlan:
        row = self._built.get(i)
        if row is None:
            c = self.columns
            ids, roles, categories = c.session.message_columns
            row = self._built[i] = MessagePlan(i, ids[i], roles[i], categories[i], int(c.tokens[i]), DECISIONS[c.decision[i]],
                                               c.zone_names[c.zone[i]], c.reason(i), int(c.sent_tokens[i]), c.code_names[c.code[i]])
        return row

    def __len__(self) -> int:
        return len(self.columns.decision)

    def __getitem__(self, k: int | slice) -> Any:  # type: ignore[override]
        n = len(self)
        if isinstance(k, slice):
            return tuple(self._row(i) for i in range(*k.indices(n)))
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("plan row out of range")
        return self._row(k)

    def __iter__(self) -> Iterator[MessagePlan]:
        return (self._row(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Rows({len(self)} messages)"


class Reasons(Sequence[str]):
    """The reason column, each sentence built when read (a filter searches the rows it shows)."""

    __slots__ = ("_reason", "_n")

    def __init__(self, reason: Callable[[int], str], n: int) -> None:
        self._reason, self._n = reason, n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, k: int | slice) -> Any:  # type: ignore[override]
        if isinstance(k, slice):
            return tuple(self._reason(i) for i in range(*k.indices(self._n)))
        if k < 0:
            k += self._n
        if not 0 <= k < self._n:
            raise IndexError("reason index out of range")
        return self._reason(k)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != self._n:
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]


def sent_flags(messages: Sequence[MessagePlan]) -> Sequence[bool]:
    """Whether each message is sent, read without building a row of a plan decided in columns."""
    if isinstance(messages, Rows):
        return messages.columns.sent.tolist()
    return _Sent(messages)


def kept_flags(messages: Sequence[MessagePlan]) -> list[bool]:
    """Whether each message is sent as the file has it (KEPT), read without building a row of a
    plan decided in columns."""
    if isinstance(messages, Rows):
        return (messages.columns.decision == KEPT).tolist()
    return [m.decision is Decision.KEPT for m in messages]


def decided_at(messages: Sequence[MessagePlan], indices: Sequence[int]) -> tuple[list[Decision], list[int]]:
    """(decision, sent tokens) of the messages at `indices`, read from the columns of a plan decided
    in columns: pricing a request reads a hundred messages of a plan over thousands, and building
    their rows (reason sentences included) was most of what `simulate --cost` spent."""
    if isinstance(messages, Rows):
        c = messages.columns
        at = np.fromiter(indices, dtype=np.int64, count=len(indices))
        return [DECISIONS[d] for d in c.decision[at].tolist()], c.sent_tokens[at].tolist()
    rows = [messages[i] for i in indices]
    return [r.decision for r in rows], [r.sent_tokens for r in rows]


class _Sent(Sequence[bool]):
    __slots__ = ("_messages",)

    def __init__(self, messages: Sequence[MessagePlan]) -> None:
        self._messages = messages

    def __len__(self) -> int:
        return len(self._messages)

    def __getitem__(self, k: Any) -> Any:
        return self._messages[k].sent


def names(values: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """A column of a few distinct strings as (positions, the distinct strings in first-seen order)."""
    distinct = tuple(dict.fromkeys(values))
    where = {v: k for k, v in enumerate(distinct)}
    return np.fromiter((where[v] for v in values), dtype=np.int16, count=len(values)), distinct
