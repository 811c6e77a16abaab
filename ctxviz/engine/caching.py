"""What a policy costs once prompt caching is counted, priced as the provider bills it.

Providers cache the *prefix* of a request: the part identical to an earlier request is read from
the cache at a fraction of the input price. So the way a policy changes the context from one request
to the next decides its cost. A policy that only appends keeps the whole previous request as prefix;
a sliding window that drops the oldest message changes the first message after the system prompt, so
every request rewrites nearly everything; a summary every 30 turns rewrites it 1 turn in 30.

The unit is a model call. Where the log records its calls (an assistant message with the provider's
usage), the requests priced are the ones made before those calls: the replay's step whose last
message is the one before the call's answer (`call_steps`). Elsewhere every step of the replay is a
request. For each, this module takes the request the replay built (`Timeline.plan_at`), finds the
prefix it shares with the previous priced request, item by item (the unseen prefix, the system
prompt, each summary, each message as sent: a message truncated differently is a different item),
and prices it with the model catalogue's cache figures:

- the unseen prefix: a log without its system prompt and tool definitions still sent them, first, in
  every request (`engine.reported` estimates their size from the first call); they are part of the
  shared prefix. Where the policy counts the request from the provider's reported usage (the plan's
  `extra["request_tokens"]`), that count already holds them;
- cache read: the shared prefix, when it is at least the provider's minimum cacheable length, in its
  block size, and the previous request was made within the cache's lifetime (by the messages'
  timestamps). The lifetime is the log's own where it says (Claude Code 2.1.x writes 1-hour entries,
  `cache_creation.ephemeral_1h_input_tokens`, billed at 2x input), else the catalogue's;
- a cold start (the first request, or one after the cache expired) reads nothing this session wrote,
  but the user's other sessions may have cached the unseen prefix: that cannot be known from the log.
  It is priced at the share real logs show (resources/cache_hits.yaml), with the range from none
  to all of it;
- best-effort caches (OpenAI, Google) serve only part of a shared prefix, and sometimes none: the
  expected share measured on real logs is priced, with the spread between those logs as the range;
- cache write: Anthropic charges for writing; ctxviz assumes a breakpoint at the end of every request
  (what agents such as Claude Code do), so everything past the read prefix is written. OpenAI, Google
  and DeepSeek write for free: those tokens are plain input;
- uncached: the rest, at the input price.

A model the catalogue does not know is said to be unknown: no price, no cache share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from itertools import compress, count
from operator import itemgetter, ne
from typing import Any

import yaml

from ..errors import LoadError
from ..resources import resource_path
from .catalog import ModelEntry, find_model
from .gc_pause import without_gc
from .plan import Decision, Plan
from .plan_rows import decided_at
from .provider_count import COUNTS_FROM_USAGE, UNSEEN_KEY, ProviderCount, counts_from_usage, provider_request
from .reported import LACKS, reported_usage, starts_mid_conversation
from .session import Message, Session, Usage, record_of
from .tokenizers import encoding_name_for_model
from .wording import counted, noun

ProgressCallback = Callable[[int, int], None]

#: Used when the session's model is not in the catalogue: no caching, no price.
NO_MODEL = ModelEntry(name="(unknown model)", provider="", context_window=0)
#: Providers whose caching is best effort (automatic, served when the provider can).
BEST_EFFORT = ("openai", "google")


@dataclass(frozen=True)
class HitRate:
    """How much of what could be served from a cache real logs show was served: pooled over the
    measured files (`expected`), and the lowest and highest file (`low`, `high`)."""

    expected: float
    low: float
    high: float
    calls: int
    files: int
    what: str

    def to_json(self) -> dict[str, Any]:
        return {"expected": round(self.expected, 4), "low": round(self.low, 4), "high": round(self.high, 4), "calls": self.calls,
                "files": self.files, "measured": self.what}


def _pool(rows: Sequence[Mapping[str, Any]], total: str, what: str, prefix: str = "") -> HitRate | None:
    rows = [r for r in rows if r.get(prefix + total)]
    if not rows:
        return None
    shares = [r[prefix + "served"] / r[prefix + total] for r in rows]
    expected = sum(r[prefix + "served"] for r in rows) / sum(r[prefix + total] for r in rows)
    return HitRate(expected, min(shares), max(shares), sum(r[prefix + "calls"] for r in rows), len(rows), what)


@lru_cache(maxsize=8)
def hit_rates(exclude: str = "") -> dict[str, HitRate]:
    """The measured table (resources/cache_hits.yaml), pooled per provider: "best_effort:openai",
    "best_effort:google", "cold_start:anthropic". `exclude` leaves out one measured file (a file's
    own accuracy is checked against the others: held out)."""
    path = resource_path("cache_hits.yaml")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise LoadError(str(path), f"cannot read the measured cache hit rates ({exc})") from None
    out: dict[str, HitRate] = {}
    for kind, total, what in (("best_effort", "shared", "the cached input real calls reported over what the provider could serve of the "
                                                         "previous request"),
                              ("cold_start", "unseen", "the cache read at a session's first call (or after an expiry) over the unseen "
                                                       "prefix (system prompt and tools)")):
        for provider, rows in (doc.get(kind) or {}).items():
            kept = [r for r in rows or () if isinstance(r, dict) and not (exclude and str(r.get("file", "")).endswith(exclude))]
            rate = _pool(kept, total, what)
            if rate is not None:
                out[f"{kind}:{provider}"] = rate
            stale = _pool(kept, total, what + ", after more than 5 minutes without a call", "after_gap_") if kind == "best_effort" else None
            if stale is not None:
                out[f"after_gap:{provider}"] = stale
    return out


def log_lifetime(session: Session) -> int | None:
    """The cache lifetime the log shows: 3,600 s where the calls wrote 1-hour entries
    (`usage.cache_creation.ephemeral_1h_input_tokens`, Claude Code 2.1.x), 300 s where they wrote
    5-minute ones; None where the log does not say."""
    one_hour = five_minutes = 0
    for m in session.messages:
        if m.usage is None:
            continue
        raw = record_of(m)  # (read once: a packed record stays packed in the message)
        records = raw if isinstance(raw, list) else [raw]
        for record in records:
            message = record.get("message") if isinstance(record, dict) else None
            usage = message.get("usage") if isinstance(message, dict) else None
            creation = usage.get("cache_creation") if isinstance(usage, dict) else None
            if isinstance(creation, dict):
                one_hour += _int(creation.get("ephemeral_1h_input_tokens"))
                five_minutes += _int(creation.get("ephemeral_5m_input_tokens"))
                break  # the lines of one call repeat its usage
    if one_hour or five_minutes:
        return 3600 if one_hour > five_minutes else 300
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


@dataclass(frozen=True)
class CacheModel:
    """How the provider caches this session's requests, and where each figure comes from."""

    entry: ModelEntry
    known: bool
    ttl_seconds: int
    write_per_mtok: float
    lifetime: str  # where the lifetime comes from, in words
    unseen: int  # the unseen prefix (system prompt and tools the log lacks), 0 when the log has them
    best_effort: HitRate | None = None
    cold_start: HitRate | None = None
    #: A best-effort cache after the catalogue's lifetime: what real calls got after such a gap.
    after_gap: HitRate | None = None
    #: The log records a system prompt or tools, of which `unseen` is the part it leaves out.
    unseen_partial: bool = False
    #: An excerpt that starts mid-conversation and compacts: what its first call held beyond the
    #: file (the conversation before it too), where `unseen` is estimated after the compaction.
    unseen_first: int | None = None

    @property
    def caches(self) -> bool:
        return self.known and self.entry.cached_input_per_mtok > 0

    def price(self, read: int, write: int, uncached: int) -> float:
        m = self.entry
        return (read * m.cached_input_per_mtok + write * self.write_per_mtok + uncached * m.input_per_mtok) / 1_000_000

    def to_json(self) -> dict[str, Any]:
        return {"ttl_seconds": self.ttl_seconds, "lifetime": self.lifetime, "write_per_mtok": self.write_per_mtok, "unseen_prefix": self.unseen,
                "best_effort": self.best_effort.to_json() if self.best_effort else None,
                "cold_start": self.cold_start.to_json() if self.cold_start else None,
                "after_gap": self.after_gap.to_json() if self.after_gap else None,
                "source": self.entry.source, "checked": self.entry.checked}


def cache_model(session: Session, model: str | ModelEntry | None = None, exclude: str = "") -> CacheModel:
    """The session's cache model: the catalogue's entry, the log's lifetime, the unseen prefix and
    the measured hit rates (`exclude`: leave that measured file out)."""
    entry = model if isinstance(model, ModelEntry) else find_model(model or session.model)
    known = entry is not None
    entry = entry or ModelEntry(name=str(model or session.model or "(no model named)"), provider="", context_window=0)
    reported = reported_usage(session)
    # (`unseen_prefix`: what stays unseen, `Reported.unseen_at`'s figure after the compaction of an
    # excerpt that starts mid-conversation; its first call's figure held the conversation before it)
    unseen = reported.unseen_after if reported is not None else 0
    partial = reported is not None and reported.partial
    lifetime = log_lifetime(session) if entry.provider == "anthropic" else None
    write = entry.cache_write_per_mtok or entry.input_per_mtok
    if lifetime == 3600:
        ttl, how = 3600, "1 hour: the log's calls wrote 1-hour cache entries (cache_creation.ephemeral_1h_input_tokens)"
        write = entry.cache_write_1h_per_mtok or 2 * entry.input_per_mtok
    elif lifetime == 300:
        ttl, how = 300, "5 minutes: the log's calls wrote 5-minute cache entries"
    else:
        ttl, how = entry.cache_ttl_seconds, f"{entry.cache_ttl_seconds:,} s (the catalogue's)"
    rates = hit_rates(exclude)
    best = rates.get(f"best_effort:{entry.provider}") if entry.provider in BEST_EFFORT else None
    cold = rates.get(f"cold_start:{entry.provider}") if unseen else None
    gap = rates.get(f"after_gap:{entry.provider}") if best is not None else None
    first = reported.unseen if reported is not None and reported.unseen_after_compaction is not None else None
    return CacheModel(entry, known, ttl, write, how, unseen, best, cold, gap, partial, first)


def unseen_prefix(session: Session) -> int:
    """About how many tokens open every request that the log does not show (system prompt, tool
    definitions, or the part of them a log leaves out): `engine.reported`'s estimate, after the
    compaction of an excerpt that starts mid-conversation (`Reported.unseen_after`)."""
    reported = reported_usage(session)
    return reported.unseen_after if reported is not None else 0


@dataclass(frozen=True)
class TurnCache:
    turn: int  # the session message just before the request was sent; the request is the context built at this step
    request: int  # tokens of the request
    shared: int  # tokens of the prefix identical to the previous priced request
    cache_read: int  # expected
    cache_write: int
    uncached: int
    cost: float  # USD, input side only, expected
    #: The previous request's prefix was not reused whole: the policy changed something before its end.
    broke_cache: bool
    expired: bool = False  # the previous request was made longer ago than the cache lives
    reported: Usage | None = None  # the provider's own figures for the call made after this step
    #: Nothing this session sent is cached (its first request, or after an expiry): what the user's
    #: other sessions cached of the unseen prefix cannot be known.
    cold: bool = False
    read_low: int = 0
    read_high: int = 0
    cost_low: float = 0.0
    cost_high: float = 0.0
    unseen: int = 0  # the unseen prefix's part of the request

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"turn": self.turn, "request": self.request, "shared_prefix": self.shared, "cache_read": self.cache_read,
                               "cache_write": self.cache_write, "uncached": self.uncached, "cost_usd": round(self.cost, 8),
                               "cache_read_range": [self.read_low, self.read_high],
                               "cost_usd_range": [round(self.cost_low, 8), round(self.cost_high, 8)],
                               "unseen_prefix": self.unseen, "broke_cache": self.broke_cache, "expired": self.expired, "cold": self.cold}
        if self.reported is not None:
            doc["reported"] = {"input": self.reported.input_tokens, "cache_read": self.reported.cache_read_input_tokens,
                               "cache_write": self.reported.cache_creation_input_tokens}
        return doc


@dataclass(frozen=True)
class CacheReport:
    model: ModelEntry
    turns: tuple[TurnCache, ...]
    cache: CacheModel | None = None
    #: How the priced requests were chosen ("the log's N calls" or "every step of the replay").
    unit: str = ""
    notes: tuple[str, ...] = field(default=())
    #: Whose count the requests are: "" for an agent's policy (the provider's reported usage), else
    #: the encoding the provider's count is made with (`counted_as_billed`), said in `sentence`.
    counted_with: str = ""

    @property
    def known(self) -> bool:
        return self.cache is None or self.cache.known

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
    def cost_range(self) -> tuple[float, float]:
        return sum(t.cost_low for t in self.turns), sum(t.cost_high for t in self.turns)

    @property
    def cost_without_cache(self) -> float:
        return self.input_tokens * self.model.input_per_mtok / 1_000_000

    @property
    def hit_share(self) -> float:
        """The share of all input tokens served from the cache (expected)."""
        return self.cache_read / self.input_tokens if self.input_tokens else 0.0

    @property
    def breaks(self) -> list[int]:
        """The turns whose request broke the cache (none for a model without caching)."""
        return [t.turn for t in self.turns if t.broke_cache] if self.caches else []

    @property
    def caches(self) -> bool:
        return self.known and self.model.cached_input_per_mtok > 0

    def sentence(self) -> str:
        m = self.model
        if not self.known:
            return (f"no cache model for this model: {m.name} is not in the model catalogue (resources/models.yaml), so ctxviz "
                    "neither prices its requests nor says how much of them its provider would cache")
        if not self.turns:
            return "no request to price"
        if not m.input_per_mtok:
            return (f"{self.hit_share:.0%} of the {self.input_tokens:,} input tokens were a prefix the provider could have served from its cache; "
                    f"no prices for {m.name} in the catalogue")
        low, high = self.cost_range
        span = f" (range ${low:,.4f}-${high:,.4f})" if high - low > 5e-7 else ""
        if not self.caches:  # no hit share, no broken cache: a model without caching has neither (not "0 % hits")
            return (f"input ${self.cost:,.4f}{span} over {len(self.turns):,} requests{f' ({self.unit})' if self.unit else ''}, "
                    f"every token priced as input: {m.name} has no cache price in the catalogue, so no prompt caching is modelled for it")
        whose = f" (counted as the provider counts them: {self.counted_with})" if self.counted_with else ""
        text = (f"input ${self.cost:,.4f}{span} over {len(self.turns):,} requests{f' ({self.unit})' if self.unit else ''} with {m.name}'s "
                f"prompt caching (${self.cost_without_cache:,.4f} without it); expected cache hits {self.hit_share:.0%} of "
                f"{self.input_tokens:,} input tokens{whose}, {self.cache_write:,} written")
        breaks = self.breaks
        if breaks:
            text += f"; the policy broke the cache at {counted(len(breaks), 'request')}" + (f" ({', '.join(f'#{b}' for b in breaks[:6])}{' …' if len(breaks) > 6 else ''})")
        return text

    def to_json(self) -> dict[str, Any]:
        low, high = self.cost_range
        known = self.known
        return {"model": self.model.name, "known": known, "unit": self.unit, "input_tokens": self.input_tokens, "cache_read": self.cache_read,
                "cache_write": self.cache_write, "uncached": self.uncached,
                "cost_usd": round(self.cost, 8) if known else None, "cost_usd_range": [round(low, 8), round(high, 8)] if known else None,
                "cost_without_cache_usd": round(self.cost_without_cache, 8) if known else None,
                "hit_share": round(self.hit_share, 6) if self.caches else None, "breaks": self.breaks, "notes": list(self.notes),
                "cache_model": self.cache.to_json() if self.cache is not None and known else None,
                "turns": [t.to_json() for t in self.turns]}


def request_items(plan: Plan, text_tokens: Callable[[str], int], spread_residue: bool = True) -> list[tuple[Any, int]]:
    """The request as a sequence of (identity, tokens): the system prompt, summaries and memory by
    their text, each session message by its index and what was sent of it.

    A message costs its `sent_tokens`; with `spread_residue` the rest of the plan's total (the system
    prompt, summaries, memory, whatever the policy adds) is shared among the other items in
    proportion to their text, so that the items add up to the plan's own total, by the policy's own
    estimator. Without it, the other items are counted by `text_tokens` alone."""
    keys: list[Any] = []
    tokens: list[int] = []
    others: list[int] = []
    weights: list[int] = []
    context = plan.context
    listed = list(zip(range(len(context)), plan.context_index or [None] * len(context), strict=False))
    decisions, sent = decided_at(plan.messages, [index for _, index in listed if index is not None])
    m = 0
    for k, index in listed:  # (a message's entry is never built: its key and size are the plan's columns)
        if index is None:
            entry = context[k]
            text = str(entry.get("content", ""))
            keys.append(("x", entry.get("role"), text))
            tokens.append(0 if spread_residue else text_tokens(text))
            others.append(len(keys) - 1)
            weights.append(max(1, text_tokens(text)))
        else:
            keys.append(item_key(index, decisions[m], sent[m]))
            tokens.append(sent[m])
            m += 1
    residue = max(0, plan.totals.used - sum(tokens))
    if others and spread_residue:
        total = sum(weights)
        shares = [residue * w // total for w in weights]
        order = sorted(range(len(weights)), key=lambda k: -(residue * weights[k] % total))
        for k in order[: residue - sum(shares)]:  # largest remainders take the leftover tokens
            shares[k] += 1
        for slot, share in zip(others, shares, strict=True):
            tokens[slot] = share
    return list(zip(keys, tokens, strict=True))


def message_key(plan: Plan, index: int) -> tuple[Any, ...]:
    """A session message's identity in a request: its index and what was sent of it."""
    m = plan.messages[index]
    return item_key(index, m.decision, m.sent_tokens)


def item_key(index: int, decision: Decision, sent_tokens: int) -> tuple[Any, ...]:
    """`message_key` from the plan's columns (no row built)."""
    return ("m", index, decision, sent_tokens)


def priced_request(plan: Plan, text_tokens: Callable[[str], int], unseen: int,
                   provider: ProviderCount | None = None) -> tuple[int, list[tuple[Any, int]]]:
    """(request tokens, its items with the unseen prefix first).

    With `provider` (a model the catalogue knows, so how its provider counts is known), every plan
    is priced at the provider's count (`engine.provider_count`): an agent's policy where no reported
    usage covers the request (its own estimate is for its trigger), any other policy throughout
    (missy's characters / 4 of the content read support_chat.yaml 21 % short; its estimate decides
    what it sends, not what is billed). Without it, the plan is priced as the policy counts it: a
    plan that counts the request from the provider's reported usage (`extra["request_tokens"]`)
    holds the unseen prefix already (it is what that count has beyond the items); otherwise the
    unseen prefix is added."""
    if provider is not None:
        return provider_request(plan, provider.session, provider, unseen, item_key)
    anchored = plan.extra.get("request_tokens") if isinstance(plan.extra, dict) else None
    if isinstance(anchored, int) and anchored > 0:
        items = request_items(plan, text_tokens, spread_residue=False)
        prefix = max(0, anchored - sum(n for _, n in items))
        return anchored, [(UNSEEN_KEY, prefix), *items]
    items = request_items(plan, text_tokens)
    return plan.totals.used + unseen, ([(UNSEEN_KEY, unseen)] if unseen else []) + items


def shared_prefix(before: Sequence[tuple[Any, int]], after: Sequence[tuple[Any, int]]) -> tuple[int, bool]:
    """(tokens of the common prefix, whether `after` starts with all of `before`). The first
    difference is found and the tokens before it summed at C speed: a policy that only appends
    sends every earlier item again, and walking them in Python grew with the session at every step."""
    n = min(len(before), len(after))
    differ = map(ne, map(itemgetter(0), before[:n]), map(itemgetter(0), after[:n]))
    first = next(compress(count(), differ), n)
    tokens = sum(map(itemgetter(1), before[:first]))
    return tokens, first == n and len(after) >= len(before)


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


def real_calls(session: Session) -> list[Message]:
    """The calls the log records: assistant messages with the provider's usage, after a message
    (a call answering from index 0 shows no request)."""
    return [m for m in session.messages if m.role == "assistant" and m.usage is not None and m.usage.window_fill > 0 and m.index > 0]


def call_steps(timeline: Any) -> list[int]:
    """The positions in `timeline.turns` of the requests before the log's real calls: the step whose
    index is the last message before the call's answer. Works whether the replay steps per message
    or per model call (a step's index is the session index of its request's last message)."""
    where = {t.index: k for k, t in enumerate(timeline.turns)}
    return [where[m.index - 1] for m in real_calls(timeline.session) if m.index - 1 in where]


@without_gc  # (a plan per priced step allocates hundreds of thousands of objects in no cycle: the collector's passes were a sixth of it)
def cache_costs(timeline: Any, model: str | ModelEntry | None = None, progress: ProgressCallback | None = None,
                plans: Sequence[Plan] | None = None, steps: Sequence[int] | None = None, exclude: str = "") -> CacheReport:
    """Price the requests of a simulation (`engine.simulate.Timeline`) with prompt caching.

    `steps` are the positions in `timeline.turns` to price (default: the log's real calls where it
    records them, else every step); `model` defaults to the session's; `plans` (one per turn of the
    timeline) saves rebuilding them when the caller has them already; `exclude` leaves one file out
    of the measured hit rates (a held-out check)."""
    session: Session = timeline.session
    cm = cache_model(session, model, exclude)
    entry = cm.entry
    if steps is None:
        found = call_steps(timeline)
        steps = found if found else range(len(timeline.turns))
        unit = f"the log's {len(found):,} recorded calls" if found else "every step of the replay"
    else:
        unit = f"{len(steps):,} chosen steps"
    reported = {m.index - 1: m.usage for m in real_calls(session)}
    text_tokens = timeline.counts.text
    # A model the catalogue lacks (a hand-made entry) has no provider count known: its policy's own
    # count is priced, except an agent's, whose count starts from the provider's figures anyway.
    catalogued = cm.known and find_model(entry.name) is not None
    provider = ProviderCount(session, entry.name if cm.known else session.model)
    turns: list[TurnCache] = []
    previous: list[tuple[Any, int]] = []
    previous_time: float | None = None
    minimum = max(1, entry.min_cacheable_tokens)
    n = len(steps)
    # An excerpt that starts mid-conversation: what its first call held beyond the file was partly
    # the conversation before it, gone after the compaction that summarised it (engine.reported).
    found = reported_usage(session)
    restarted = False
    first = timeline.turns[steps[0]].index if len(steps) else -1
    excerpt = starts_warm(session, reported.get(first))
    for j, k in enumerate(steps):
        turn = timeline.turns[k]
        plan = plans[k] if plans is not None else timeline.plan_at(k)
        past = found is not None and found.restarted_at(turn.index)
        request, items = priced_request(plan, text_tokens, found.unseen_at(turn.index) if found is not None else cm.unseen,
                                        provider if catalogued or counts_from_usage(plan) else None)
        unseen = items[0][1] if items and items[0][0] == UNSEEN_KEY else 0
        shared, extends = shared_prefix(previous, items)
        shared = min(shared, request)
        if past and not restarted:  # the conversation before the file left the prefix: what stays is the prompt and tools
            shared, extends, restarted = min(shared, unseen), False, True
        now = _seconds(session.messages[turn.index].timestamp)
        expired = bool(previous and cm.ttl_seconds and now is not None and previous_time is not None and now - previous_time > cm.ttl_seconds)
        cold = not previous or expired
        if not previous and j == 0 and excerpt:  # the conversation before the file left its prefix in the cache, as the log shows
            shared, cold = min(reported[turn.index].cache_read_input_tokens, request), False  # type: ignore[union-attr]
        read, low, high = expected_read(cm, shared, unseen, request, cold, expired)
        writes = writes_charged(cm, request)
        write, uncached = _split(request, read, writes)
        cost = cm.price(read, write, uncached) if cm.known else 0.0
        cost_low = cm.price(high, *_split(request, high, writes)) if cm.known else 0.0
        cost_high = cm.price(low, *_split(request, low, writes)) if cm.known else 0.0
        broke = bool(previous) and not extends and sum(map(itemgetter(1), previous)) >= minimum
        turns.append(TurnCache(turn.index, request, shared, read, write, uncached, cost, broke, expired, reported.get(turn.index), cold,
                               low, high, cost_low, cost_high, unseen))
        previous, previous_time = items, now if now is not None else previous_time
        if progress is not None and (j % 50 == 0 or j == n - 1):
            progress(j + 1, n)
    warm = turns[0].cache_read if excerpt and turns else None
    notes = _notes(cm, turns, warm)
    own = catalogued and bool(turns) and timeline.policy not in COUNTS_FROM_USAGE
    if own:
        notes.append(counted_as_billed(timeline.policy, provider))
    return CacheReport(entry, tuple(turns), cm, unit, tuple(notes), f"{provider.tokenizer.name}, not {timeline.policy}'s estimate" if own else "")


def counted_as_billed(policy: str, provider: ProviderCount) -> str:
    """Says that a policy with its own estimator is priced at the provider's count: its estimate
    (missy's characters / 4 of the content) decides what it sends, not what the provider bills."""
    estimate = "" if encoding_name_for_model(provider.model) else ", an estimate: the provider publishes no tokenizer"
    name = provider.tokenizer.name
    return (f"each request is priced at the provider's count ({name}{estimate}; with the chat format's overhead and the tool definitions), "
            f"not at {policy}'s own estimate, which decides what it sends")


def starts_warm(session: Session, usage: Usage | None) -> bool:
    """Whether the first priced request of `session` is no cold start: the file starts
    mid-conversation (`reported.starts_mid_conversation`) and that request's call reported cache
    reads, which the conversation before the file wrote (the bundled excerpt's first call read
    163,346 of its 164,831 tokens from the cache, where a cold start assumed 69 %)."""
    return usage is not None and usage.cache_read_input_tokens > 0 and starts_mid_conversation(session)


def expected_read(cm: CacheModel, shared: int, unseen: int, request: int, cold: bool, expired: bool) -> tuple[int, int, int]:
    """(expected, lowest, highest) cache read of a request sharing `shared` tokens with the previous
    one: one rule for the replay's requests and the next call (`engine.next_call`), so the two
    never price the same request apart."""
    entry = cm.entry
    if not cm.caches:
        return 0, 0, 0
    if expired and cm.after_gap is not None:  # a best-effort cache may still hold it, or not
        could = servable(shared, entry)
        rate = cm.after_gap
        return round(could * rate.expected), round(could * rate.low), round(could * rate.high)
    if cold:  # what the user's other sessions cached of the unseen prefix: unknown
        high = servable(min(unseen, request), entry)
        return (round(high * cm.cold_start.expected) if cm.cold_start else 0), 0, high
    high = servable(shared, entry)
    best = cm.best_effort
    if best is not None:
        return round(high * best.expected), round(high * best.low), round(high * best.high)
    return high, high, high


def writes_charged(cm: CacheModel, request: int) -> bool:
    """Whether what a request does not read is written at the cache-write price (Anthropic's, with a
    breakpoint at its end) rather than billed as plain input."""
    entry = cm.entry
    charged = entry.cache_write_per_mtok > 0 or entry.cache_write_1h_per_mtok > 0
    return charged and cm.caches and request >= max(1, entry.min_cacheable_tokens)


def _split(request: int, read: int, writes: bool) -> tuple[int, int]:
    """(cache write, uncached) of a request once `read` tokens come from the cache: with a
    breakpoint at its end, everything else is written where writes are charged."""
    write = request - read if writes else 0
    return write, request - read - write


def _notes(cm: CacheModel, turns: Sequence[TurnCache], warm: int | None = None) -> list[str]:
    """What the figures rest on, in the user's words: the lifetime, the unseen prefix, a first
    request the conversation before the file left cached (`warm`: its read), what cannot be known
    at a cold start, and a best-effort cache's spread."""
    if not cm.known:
        return [f"no cache model for this model: {cm.entry.name} is not in the model catalogue"]
    notes = [f"cache lifetime {cm.lifetime}"]
    if cm.unseen:
        source = ("the first call after the compaction: the file starts mid-conversation, so the first call's "
                  f"{cm.unseen_first:,} held the conversation before it too" if cm.unseen_first is not None else "the first call")
        notes.append(f"{LACKS[cm.unseen_partial]}: about {cm.unseen:,} tokens of them open every request "
                     f"(estimated from {source}) and are part of the cached prefix")
    if warm is not None and turns:
        notes.append(f"the file starts mid-conversation: its first request (#{turns[0].turn}) is no cold start, the conversation before "
                     f"the file having left it in the cache; priced with the {warm:,} tokens its call reported read from the cache")
    colds = [t for t in turns if t.cold]
    if colds and cm.unseen and cm.caches:
        rate = cm.cold_start
        share = f"priced at the {rate.expected:.0%} real logs show ({rate.calls} cold starts in {rate.files} files)" if rate else "priced as none"
        when = ", ".join(f"#{t.turn}" for t in colds[:5]) + (" …" if len(colds) > 5 else "")
        notes.append(f"at {len(colds):,} {noun(len(colds), 'request')} nothing this session sent was still cached ({when}: the first, or after the cache expired); "
                     "how much of the unseen prefix the user's other sessions had cached cannot be known from the log: "
                     f"between none and all of it, {share}")
    if cm.best_effort is not None and cm.caches:
        r = cm.best_effort
        notes.append(f"{cm.entry.provider} caches on a best-effort basis: real calls got {r.expected:.0%} of the prefix they could have "
                     f"(between {r.low:.0%} and {r.high:.0%} per log; {r.calls} calls in {r.files} logs); the cost is priced at that "
                     "expectation, with the range")
        g = cm.after_gap
        if g is not None and any(t.expired for t in turns):
            notes.append(f"after more than {cm.ttl_seconds // 60} minutes without a call the prefix may or may not still be cached: real "
                         f"calls then got {g.expected:.0%} of it (between {g.low:.0%} and {g.high:.0%} per log; {g.calls} calls)")
    return notes
