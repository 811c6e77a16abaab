"""What a policy costs once prompt caching is counted.

Providers cache the *prefix* of a request: the part identical to an earlier request is read from
the cache at a fraction of the input price. So the way a policy changes the context from one turn to
the next decides its cost. A policy that only appends keeps the whole previous request as prefix; a
sliding window that drops the oldest message changes the first message after the system prompt, so
every turn rewrites nearly everything; a summary every 30 turns rewrites it 1 turn in 30.

Per turn of a simulation this module takes the request the replay built (`Timeline.plan_at`), finds
the prefix it shares with the previous turn's request, item by item (the system prompt, each
summary, each message as sent: a message truncated differently is a different item), and prices
it with the model catalogue's cache figures:

- cache read: the shared prefix, when it is at least the provider's minimum cacheable length, in its
  block size, and the previous request was made within the cache's lifetime (by the messages'
  timestamps, when the log has them);
- cache write: Anthropic charges for writing; ctxviz assumes a breakpoint at the end of every request
  (what agents such as Claude Code do), so everything past the read prefix is written. OpenAI, Google
  and DeepSeek write for free: those tokens are plain input;
- uncached: the rest, at the input price.

Token figures are the policy's own estimator's (the replay's), not the provider's tokenizer; where
the log records the provider's usage, the report puts its cache figures beside the replay's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .catalog import ModelEntry, find_model
from .plan import Plan
from .session import Session, Usage

ProgressCallback = Callable[[int, int], None]

#: Used when the session's model is not in the catalogue: no caching, no price.
NO_MODEL = ModelEntry(name="(unknown model)", provider="", context_window=0)


@dataclass(frozen=True)
class TurnCache:
    turn: int  # the session message just added; the request is the context built at this turn
    request: int  # tokens of the request (the plan's total)
    shared: int  # tokens of the prefix identical to the previous turn's request
    cache_read: int
    cache_write: int
    uncached: int
    cost: float  # USD, input side only
    #: The previous request's prefix was not reused whole: the policy changed something before its end.
    broke_cache: bool
    expired: bool = False  # the previous request was made longer ago than the cache lives
    reported: Usage | None = None  # the provider's own figures for the call made after this turn

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"turn": self.turn, "request": self.request, "shared_prefix": self.shared, "cache_read": self.cache_read,
                               "cache_write": self.cache_write, "uncached": self.uncached, "cost_usd": round(self.cost, 8),
                               "broke_cache": self.broke_cache, "expired": self.expired}
        if self.reported is not None:
            doc["reported"] = {"input": self.reported.input_tokens, "cache_read": self.reported.cache_read_input_tokens,
                               "cache_write": self.reported.cache_creation_input_tokens}
        return doc


@dataclass(frozen=True)
class CacheReport:
    model: ModelEntry
    turns: tuple[TurnCache, ...]

    @property
    def input_tokens(self) -> int:
        return sum(t.request for t in self.turns)

    @property
    def cache_read(self) -> int:
        return sum(t.cache_read for t in self.turns)

    @property
    def cache_write(self) -> int:
        return sum(t.cache_write for t in self.turns)

    @property
    def uncached(self) -> int:
        return sum(t.uncached for t in self.turns)

    @property
    def cost(self) -> float:
        return sum(t.cost for t in self.turns)

    @property
    def cost_without_cache(self) -> float:
        return self.input_tokens * self.model.input_per_mtok / 1_000_000

    @property
    def hit_share(self) -> float:
        """The share of all input tokens served from the cache."""
        return self.cache_read / self.input_tokens if self.input_tokens else 0.0

    @property
    def breaks(self) -> list[int]:
        return [t.turn for t in self.turns if t.broke_cache]

    @property
    def caches(self) -> bool:
        return self.model.cached_input_per_mtok > 0

    def sentence(self) -> str:
        m = self.model
        if not self.turns:
            return "no turn to price"
        if not m.input_per_mtok:
            return (f"{self.hit_share:.0%} of the {self.input_tokens:,} input tokens were a prefix the provider could have served from its cache; "
                    f"no prices for {m.name} in the catalogue")
        text = (f"input ${self.cost:,.4f} over {len(self.turns):,} requests with {m.name}'s prompt caching "
                f"(${self.cost_without_cache:,.4f} without it); cache hits {self.hit_share:.0%} of {self.input_tokens:,} input tokens, "
                f"{self.cache_write:,} written")
        if not self.caches:
            text += f" ({m.name} has no cache price in the catalogue: every token is priced as input)"
        breaks = self.breaks
        if breaks:
            text += f"; the policy broke the cache at {len(breaks):,} turn(s)" + (f" ({', '.join(f'#{b}' for b in breaks[:6])}{' …' if len(breaks) > 6 else ''})")
        return text

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model.name, "input_tokens": self.input_tokens, "cache_read": self.cache_read, "cache_write": self.cache_write,
                "uncached": self.uncached, "cost_usd": round(self.cost, 8), "cost_without_cache_usd": round(self.cost_without_cache, 8),
                "hit_share": round(self.hit_share, 6), "breaks": self.breaks, "turns": [t.to_json() for t in self.turns]}


def request_items(plan: Plan, text_tokens: Callable[[str], int]) -> list[tuple[Any, int]]:
    """The request as a sequence of (identity, tokens): the system prompt, summaries and memory by
    their text, each session message by its index and what was sent of it.

    A message costs its `sent_tokens`; the rest of the plan's total (the system prompt, summaries,
    memory, whatever the policy adds) is shared among the other items in proportion to their text,
    so that the items add up to the plan's own total, by the policy's own estimator."""
    keys: list[Any] = []
    tokens: list[int] = []
    others: list[int] = []
    weights: list[int] = []
    for entry, index in zip(plan.context, plan.context_index or [None] * len(plan.context), strict=False):
        if index is None:
            text = str(entry.get("content", ""))
            keys.append(("x", entry.get("role"), text))
            tokens.append(0)
            others.append(len(keys) - 1)
            weights.append(max(1, text_tokens(text)))
        else:
            m = plan.messages[index]
            keys.append(("m", index, m.decision, m.sent_tokens))
            tokens.append(m.sent_tokens)
    residue = max(0, plan.totals.used - sum(tokens))
    if others:
        total = sum(weights)
        shares = [residue * w // total for w in weights]
        order = sorted(range(len(weights)), key=lambda k: -(residue * weights[k] % total))
        for k in order[: residue - sum(shares)]:  # largest remainders take the leftover tokens
            shares[k] += 1
        for slot, share in zip(others, shares, strict=True):
            tokens[slot] = share
    return list(zip(keys, tokens, strict=True))


def shared_prefix(before: Sequence[tuple[Any, int]], after: Sequence[tuple[Any, int]]) -> tuple[int, bool]:
    """(tokens of the common prefix, whether `after` starts with all of `before`)."""
    tokens = 0
    for (key_a, n), (key_b, _) in zip(before, after, strict=False):
        if key_a != key_b:
            return tokens, False
        tokens += n
    return tokens, len(after) >= len(before)


def servable(shared: int, model: ModelEntry) -> int:
    """What the provider serves from a shared prefix: nothing under its minimum, then whole blocks."""
    if shared < max(1, model.min_cacheable_tokens) or not model.cached_input_per_mtok:
        return 0
    block = max(1, model.cache_granularity)
    floor = model.min_cacheable_tokens
    return floor + (shared - floor) // block * block


def _seconds(stamp: str) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def price(model: ModelEntry, read: int, write: int, uncached: int) -> float:
    write_price = model.cache_write_per_mtok or model.input_per_mtok
    return (read * model.cached_input_per_mtok + write * write_price + uncached * model.input_per_mtok) / 1_000_000


def cache_costs(timeline: Any, model: str | ModelEntry | None = None, progress: ProgressCallback | None = None,
                plans: Sequence[Plan] | None = None) -> CacheReport:
    """Price every turn of a simulation (`engine.simulate.Timeline`) with prompt caching.

    `model` defaults to the session's; `plans` (one per turn) saves rebuilding them when the caller
    has them already."""
    session: Session = timeline.session
    entry = model if isinstance(model, ModelEntry) else (find_model(model or session.model) or NO_MODEL)
    reported = {m.index - 1: m.usage for m in session.messages if m.usage is not None and m.index > 0}
    text_tokens = timeline.counts.text
    turns: list[TurnCache] = []
    previous: list[tuple[Any, int]] = []
    previous_time: float | None = None
    writes_charged = entry.cache_write_per_mtok > 0
    n = len(timeline.turns)
    for k, turn in enumerate(timeline.turns):
        plan = plans[k] if plans is not None else timeline.plan_at(k)
        items = request_items(plan, text_tokens)
        request = plan.totals.used
        shared, extends = shared_prefix(previous, items)
        shared = min(shared, request)
        now = _seconds(session.messages[turn.index].timestamp)
        expired = bool(previous and entry.cache_ttl_seconds and now is not None and previous_time is not None
                       and now - previous_time > entry.cache_ttl_seconds)
        read = 0 if expired else servable(shared, entry)
        cacheable = entry.cached_input_per_mtok > 0 and request >= max(1, entry.min_cacheable_tokens)
        write = request - read if writes_charged and cacheable else 0
        uncached = request - read - write
        broke = bool(previous) and not extends and sum(n_ for _, n_ in previous) >= max(1, entry.min_cacheable_tokens)
        turns.append(TurnCache(turn.index, request, shared, read, write, uncached, price(entry, read, write, uncached), broke, expired,
                               reported.get(turn.index)))
        previous, previous_time = items, now if now is not None else previous_time
        if progress is not None and (k % 50 == 0 or k == n - 1):
            progress(k + 1, n)
    return CacheReport(entry, tuple(turns))
