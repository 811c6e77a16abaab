"""The Plan: a complete record of what a policy did with every message, and why.

The CLI prints it, `--json` serialises it, and every view of the app draws from it, so all three
always agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import chain, compress, islice
from typing import Any, NamedTuple

import numpy as np

from .plan_rows import (
    DECISION_NUMBER,
    DECISIONS,
    SENT_DECISIONS,
    SENT_NUMBERS,
    Decision,
    MessagePlan,
    Reasons,
    Rows,
    sent_flags,
)

__all__ = ["DECISIONS", "SENT_DECISIONS", "Context", "Decision", "Joined", "MessagePlan", "Plan", "PlanColumns", "Rows", "SummaryPlan", "Totals"]


def _looked_up(names: tuple[Any, ...], codes: np.ndarray) -> tuple[Any, ...]:
    """`tuple(names[code] for code in codes)`, the lookup done by numpy: a re-plan of 10,000
    messages built three such columns in Python, 2 ms of each parameter change in the app."""
    table = np.empty(len(names), dtype=object)
    table[:] = names
    return tuple(table[codes].tolist())


@lru_cache(maxsize=4)
def _indices(n: int) -> tuple[int, ...]:
    """0..n-1, shared by the re-plans of one session (the same tuple, made once)."""
    return tuple(range(n))


class PlanColumns(NamedTuple):
    """The message plans transposed: one tuple per field, built in C by `zip(*messages)`.

    Views that summarise 10,000 messages on every re-plan read whole columns instead of walking
    the plans attribute by attribute.
    """

    index: Sequence[int]
    id: Sequence[str]
    role: Sequence[str]
    category: Sequence[str]
    tokens: Sequence[int]
    decision: Sequence[Decision]
    zone: Sequence[str]
    reason: Sequence[str]  # built when read, for a plan decided in columns
    sent_tokens: Sequence[int]
    code: Sequence[str]


class Joined(Sequence[Any]):
    """Runs of tuples read as one tuple, nothing copied: `Joined((head, 0, 1), (history, keep, end))`
    is `head[0:1] + history[keep:end]`. A policy whose context is runs of the session's history
    (missy: the evictable messages that fit and the fresh tail) hands its context and
    `context_index` over this way: on a 100,000-message session, copying those runs into new
    tuples was most of a re-plan's cost. It equals (and hashes as) the tuple it stands for."""

    __slots__ = ("_runs", "_len")

    def __init__(self, *runs: tuple[tuple[Any, ...], int, int]) -> None:
        self._runs = tuple((items, lo, hi) for items, lo, hi in runs if hi > lo)
        self._len = sum(hi - lo for _, lo, hi in self._runs)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, k: int | slice) -> Any:  # type: ignore[override]
        if isinstance(k, slice):
            return tuple(self)[k]
        if k < 0:
            k += self._len
        if not 0 <= k < self._len:
            raise IndexError("index out of range")
        for items, lo, hi in self._runs:
            if k < hi - lo:
                return items[lo + k]
            k -= hi - lo
        raise IndexError("index out of range")  # (not reached: the runs add up to the length)

    def __iter__(self) -> Iterator[Any]:
        # (each run sliced and chained at C speed: a generator per item was a tenth of pricing a replay)
        return chain.from_iterable(items if lo == 0 and hi == len(items) else items[lo:hi] for items, lo, hi in self._runs)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != self._len:
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))  # pickled and copied as the tuple it stands for, not the runs' whole tuples

    def __repr__(self) -> str:
        return f"Joined({self._len} items)"


class Context(Sequence[Mapping[str, Any]]):
    """The messages as sent, each built in OpenAI chat form when it is first read.

    A policy hands over a session message itself (anything with `to_openai()`) for a message sent
    as it is, and a built mapping for what it rewrote (a truncated text, a placeholder, the system
    prompt). Building 100,000 request dicts on every re-plan cost more than the policy's decisions;
    the export, the context tab and `--json` read them, the strip and the tables never do.
    """

    __slots__ = ("_entries", "_built")

    def __init__(self, entries: Iterable[Any] = ()) -> None:
        # (`Joined` runs are kept as they are: immutable, and copying them is what they avoid)
        self._entries: Sequence[Any] = entries._entries if isinstance(entries, Context) else entries if isinstance(entries, Joined) else tuple(entries)
        self._built: dict[int, Mapping[str, Any]] = {}

    @property
    def entries(self) -> Sequence[Any]:
        """The entries as the policy gave them (messages not yet built): what a plan rewriting
        step (pins, pair safety) moves around without building them."""
        return self._entries

    def _build(self, k: int) -> Mapping[str, Any]:
        entry = self._entries[k]
        if isinstance(entry, Mapping):
            return entry
        built = self._built.get(k)
        if built is None:
            built = self._built[k] = entry.to_openai()
        return built

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, k: int | slice) -> Any:  # type: ignore[override]
        if isinstance(k, slice):
            return tuple(self._build(i) for i in range(*k.indices(len(self._entries))))
        if k < 0:
            k += len(self._entries)
        if not 0 <= k < len(self._entries):
            raise IndexError("context index out of range")
        return self._build(k)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return (self._build(k) for k in range(len(self._entries)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Context) and other._entries is self._entries:
            return True
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # like the dicts it holds

    def __repr__(self) -> str:
        return f"Context({len(self._entries)} entries)"


@dataclass(frozen=True)
class SummaryPlan:
    """An earlier summary the session carried, and whether the policy included it."""

    index: int
    tokens: int
    decision: Decision
    reason: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "tokens": self.tokens, "decision": self.decision.value, "reason": self.reason}


@dataclass(frozen=True)
class Totals:
    """The plan's figures, each by the policy's own estimator.

    - `used`: the whole context as sent (system prompt, summaries, messages and whatever else the
      policy counts); the plan's `usage` parts add up to it exactly.
    - `budget`: the policy's total (missy's `total`, supyagent's and mnesis' context limit, the
      other policies' `max_tokens`). With `allocation_kind == "division"` the allocation's parts
      add up to it exactly; with `"caps"` each part is a maximum of its own and they need not (the
      category policy's seed fractions add up to 115 %).
    - `fits`: the policy's own test, named by `fits_test`: `"total"` is `used <= budget`; `"parts"`
      is every usage part within its allotment (missy lends no reserve to another part; supyagent
      and mnesis keep their reserves free, so their messages have only what is left).
    - `kept` / `dropped`: the `tokens` (as measured, before any cut) of the session messages sent
      / not sent, so they add up to all the session's message tokens; `*_messages` count them.
      What a sent message costs after truncation or replacement is its `sent_tokens`.
    """

    budget: int
    used: int
    kept: int
    dropped: int
    fits: bool
    kept_messages: int = 0
    dropped_messages: int = 0
    fits_test: str = "total"
    allocation_kind: str = "division"

    def to_json(self) -> dict[str, Any]:
        return {
            "budget": self.budget,
            "used": self.used,
            "kept": self.kept,
            "dropped": self.dropped,
            "fits": self.fits,
            "kept_messages": self.kept_messages,
            "dropped_messages": self.dropped_messages,
            "fits_test": self.fits_test,
            "allocation_kind": self.allocation_kind,
        }


class Distinct(NamedTuple):
    """The different values of a plan's role, decision, zone and (code, decision) columns (`Plan.distinct`)."""

    roles: frozenset[str]
    decisions: frozenset[Decision]
    zones: frozenset[str]
    codes: frozenset[tuple[str, Decision]]


def _session_roles(session: Any) -> frozenset[str]:
    """The roles among a session's messages, once per session."""
    found = session.derived.get(("plan", "roles"))
    if found is None:
        found = session.derived[("plan", "roles")] = frozenset(session.message_columns[1])
    return found  # type: ignore[no-any-return]


def _session_categories(session: Any) -> tuple[np.ndarray, tuple[Any, ...]]:
    """Each message's category as a number, and the categories in first-seen order, once per session."""
    found = session.derived.get(("plan", "categories"))
    if found is None:
        categories = session.message_columns[2]
        names = tuple(dict.fromkeys(categories))
        number = {name: k for k, name in enumerate(names)}
        found = session.derived[("plan", "categories")] = (np.fromiter(map(number.__getitem__, categories), dtype=np.intp,
                                                                        count=len(categories)), names)
    return found  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Plan:
    policy: str
    params: Mapping[str, Any]
    tokenizer: str
    #: How the budget is divided, in display order; the parts add up to `totals.budget` exactly.
    allocation: Mapping[str, int]
    #: Tokens actually used in each allocation part (same keys).
    usage: Mapping[str, int]
    system_prompt: str
    #: One record per session message: a tuple, or `Rows` over the columns a policy decided in.
    messages: Sequence[MessagePlan]
    #: The messages exactly as sent, in OpenAI chat form, enriched system prompt first (a policy
    #: may give a session message itself: `Context` builds its form when it is read).
    context: Context
    totals: Totals
    #: For each `context` entry, the session message it comes from (None: system prompt, summaries).
    context_index: Sequence[int | None] = ()  # a tuple, or `Joined` runs of one
    summaries: tuple[SummaryPlan, ...] = ()
    #: Zone names in the order the policy lays the context out.
    zones: tuple[str, ...] = ()
    #: Policy-level remarks a person should see (memory truncated, learnings left out...).
    notes: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: Broken tool-call pairs (see engine.checks); flagged on every plan.
    orphans: tuple[Any, ...] = ()
    #: The real-count check (engine.checks.RealCount), when asked for.
    real: Any = None
    #: What the provider reported for the log's calls (engine.reported.Reported), when it has usage.
    reported: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.context, Context):
            object.__setattr__(self, "context", Context(self.context))

    def parts_over(self) -> dict[str, int]:
        """The allocation parts that use more than they are allotted, and by how much."""
        return {part: self.usage.get(part, 0) - allotted for part, allotted in self.allocation.items()
                if self.usage.get(part, 0) > allotted}

    def fit_verdict(self) -> str:
        """One phrase for the total row: whether the plan fits by the policy's own test and, for
        every part over its allotment, which one and by how much (never a negative "over")."""
        t = self.totals
        noun = "maximum" if t.allocation_kind == "caps" else "allotment"
        parts = "; ".join(f"{part} is over its {self.allocation[part]:,} {noun} by {excess:,}" for part, excess in self.parts_over().items())
        if t.fits:
            return f"fits in total; {parts}" if parts else "fits"
        if t.used > t.budget:
            return f"OVER by {t.used - t.budget:,}" + (f"; {parts}" if parts else "")
        return f"does not fit: {parts}" if parts else "does not fit by the policy's own test"

    def message(self, index: int) -> MessagePlan:
        return self.messages[index]

    @cached_property
    def columns(self) -> PlanColumns:
        if isinstance(self.messages, Rows):  # a policy that decided in columns: no record is built
            c = self.messages.columns
            n = len(c.decision)
            ids, roles, categories = c.session.message_columns
            return PlanColumns(_indices(n), ids, roles, categories, tuple(c.tokens.tolist()),
                               _looked_up(DECISIONS, c.decision), _looked_up(c.zone_names, c.zone),
                               Reasons(c.reason, n), tuple(c.sent_tokens.tolist()), _looked_up(c.code_names, c.code))
        if not self.messages:
            return PlanColumns(*([()] * len(PlanColumns._fields)))
        return PlanColumns(*zip(*self.messages, strict=True))

    @cached_property
    def decision_numbers(self) -> np.ndarray:
        """Every message's decision as its position in `DECISIONS` (int8), for views that count and
        mask 14,000 messages at C speed on each new state of a followed log."""
        if isinstance(self.messages, Rows):
            return self.messages.columns.decision
        return np.fromiter(map(DECISION_NUMBER.__getitem__, self.columns.decision), dtype=np.int8, count=len(self.messages))

    @cached_property
    def sent_mask(self) -> np.ndarray:
        """Whether each message is sent (some version of it reaches the model), as a bool array."""
        return SENT_NUMBERS[self.decision_numbers]

    @cached_property
    def token_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, tokens sent) of every message as int64 arrays."""
        if isinstance(self.messages, Rows):
            return self.messages.columns.tokens, self.messages.columns.sent_tokens
        cols = self.columns
        return np.array(cols.tokens, dtype=np.int64), np.array(cols.sent_tokens, dtype=np.int64)

    @cached_property
    def sent_flags(self) -> tuple[bool, ...]:
        """Whether each message is sent, read from the columns (no row is built for it)."""
        return tuple(sent_flags(self.messages))

    @cached_property
    def last_unsent(self) -> int | None:
        """The newest message not sent (where the cut line is drawn), or None."""
        flags = self.sent_flags
        return next((i for i in range(len(flags) - 1, -1, -1) if not flags[i]), None)

    @cached_property
    def reason_codes(self) -> tuple[str, ...]:
        """Every message's reason code (the policy's, else its decision's generic one)."""
        from .reason_codes import CODES, GENERIC

        if isinstance(self.messages, Rows):  # a handful of (code, decision) pairs: each looked up once
            pair = self._reason_pairs()
            names = self._pair_codes(dict.fromkeys(pair.tolist()))
            return tuple(map(names.__getitem__, pair.tolist()))
        cols = self.columns
        return tuple(c if c in CODES else GENERIC[d.value] for c, d in zip(cols.code, cols.decision, strict=True))

    def reason_counts(self) -> Counter[str]:
        """`Counter(reason_codes)`, the codes in the order they first occur, counted over the code and
        decision columns without making a code per message: the app counts them on every re-plan,
        and making 10,000 codes to count them cost more than the plan."""
        if not isinstance(self.messages, Rows) or "reason_codes" in self.__dict__:
            return Counter(self.reason_codes)
        pair = self._reason_pairs()
        present, first = np.unique(pair, return_index=True)
        counts = np.bincount(np.searchsorted(present, pair), minlength=len(present))
        in_order = np.argsort(first, kind="stable")
        names = self._pair_codes(present[in_order].tolist())
        out: Counter[str] = Counter()
        for k, n in zip(present[in_order].tolist(), counts[in_order].tolist(), strict=True):
            out[names[k]] += n
        return out

    def _reason_pairs(self) -> np.ndarray:
        """Each message's (policy's code, decision) as one number (the plan's columns)."""
        c = self.messages.columns  # type: ignore[attr-defined]
        return c.code.astype(np.int64) * len(DECISIONS) + c.decision

    def _pair_codes(self, pairs: Iterable[int]) -> dict[int, str]:
        """The reason code of each (code, decision) number: the policy's, else its decision's generic one."""
        from .reason_codes import CODES, GENERIC

        names = self.messages.columns.code_names  # type: ignore[attr-defined]
        return {k: (code if code in CODES else GENERIC[DECISIONS[k % len(DECISIONS)].value])
                for k in pairs for code in (names[k // len(DECISIONS)],)}

    def rows_with(self, code: str, limit: int = 3) -> list[int]:
        """The first `limit` messages whose policy's code is `code`: samples of a code whose
        column text carries a figure from the sentence ("over SYSTEM_OUTPUT 7,500"), which a
        table sizes its column to without building every message's sentence."""
        if isinstance(self.messages, Rows):
            c = self.messages.columns
            if code not in c.code_names:
                return []
            return np.flatnonzero(c.code == c.code_names.index(code))[:limit].tolist()
        return list(islice((i for i, k in enumerate(self.columns.code) if k == code), limit))

    @cached_property
    def distinct(self) -> Distinct:
        """The roles, decisions, zones and (policy's code, decision) pairs among the plan's messages:
        what a table sizes its columns to, read from the arrays once (sets of 10,000 values cost
        about a millisecond of each re-plan)."""
        if isinstance(self.messages, Rows):
            c = self.messages.columns
            n = len(DECISIONS)
            present = np.flatnonzero(np.bincount(c.code.astype(np.intp) * n + c.decision.astype(np.intp))).tolist()
            return Distinct(_session_roles(c.session), frozenset(DECISIONS[k] for k in np.flatnonzero(np.bincount(c.decision.astype(np.intp))).tolist()),
                            frozenset(c.zone_names[k] for k in np.flatnonzero(np.bincount(c.zone.astype(np.intp))).tolist()),
                            frozenset((c.code_names[k // n], DECISIONS[k % n]) for k in present))
        cols = self.columns
        return Distinct(frozenset(cols.role), frozenset(cols.decision), frozenset(cols.zone), frozenset(zip(cols.code, cols.decision, strict=True)))

    @cached_property
    def category_totals(self) -> Mapping[str, tuple[int, int]]:
        """Per category, in first-seen order: (tokens sent, tokens of all its messages)."""
        if isinstance(self.messages, Rows):  # summed from the arrays by each message's category number
            c = self.messages.columns
            numbers, names = _session_categories(c.session)
            sent = np.bincount(numbers, weights=c.sent_tokens, minlength=len(names)).tolist()
            tokens = np.bincount(numbers, weights=c.tokens, minlength=len(names)).tolist()
            return {name: (int(sent[k]), int(tokens[k])) for k, name in enumerate(names)}
        cols = self.columns
        out: dict[str, tuple[int, int]] = {}
        for category in dict.fromkeys(cols.category):  # a handful of categories: C-speed passes per category
            mask = list(map(category.__eq__, cols.category))
            out[category] = (sum(compress(cols.sent_tokens, mask)), sum(compress(cols.tokens, mask)))
        return out

    def find(self, message_id: str) -> MessagePlan | None:
        for m in self.messages:
            if m.id == message_id or str(m.index) == message_id:
                return m
        return None

    def by_decision(self, decision: Decision) -> list[MessagePlan]:
        return [m for m in self.messages if m.decision == decision]

    def tokens_by_zone(self) -> dict[str, int]:
        out: dict[str, int] = {z: 0 for z in self.zones}
        for m in self.messages:
            out[m.zone] = out.get(m.zone, 0) + m.tokens
        return out

    def tokens_by_category(self, sent_only: bool = True) -> dict[str, int]:
        out: dict[str, int] = {}
        for m in self.messages:
            if m.sent or not sent_only:
                out[m.category] = out.get(m.category, 0) + (m.sent_tokens if sent_only else m.tokens)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "params": dict(self.params),
            "tokenizer": self.tokenizer,
            "allocation": dict(self.allocation),
            "usage": dict(self.usage),
            "system_prompt": self.system_prompt,
            "messages": [m.to_json() for m in self.messages],
            "summaries": [s.to_json() for s in self.summaries],
            "context": [dict(c) for c in self.context],
            "totals": self.totals.to_json(),
            "notes": list(self.notes),
            "orphans": [o.to_json() for o in self.orphans],
            **({"real_count": self.real.to_json()} if self.real is not None else {}),
            **({"extra": dict(self.extra)} if self.extra else {}),
            **({"reported": self.reported.to_json()} if self.reported is not None else {}),
        }
