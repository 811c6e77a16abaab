"""The next call as the provider would count and bill it, beside the real count.

`--real-count` ends with the input cost of the next call. Pricing its whole count at the input rate
read a Claude Code log's next call at $0.3608 where its last call, 99 % from the cache, was billed
$0.0475; and a redacted Codex rollout's count of its markers (24,392) stood for a request the log
reports at 108,869. So where the log reports the call the next request extends (the policy counts
from that call's usage: `engine.provider_count`), both the size and the cache come from it: the size
is the reported request plus the provider's count of what follows (as the cache model's
`provider_request` counts it), the prefix shared with that call is read from the cache by the same rule
`simulate --cost` prices every call with (`caching.expected_read`: its lifetime, minimum, block
size, best-effort share), and the rest is written (Anthropic) or plain input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .caching import _seconds, _split, cache_model, expected_read, writes_charged
from .plan import Plan
from .provider_count import COUNTS_FROM_USAGE, anchor_index, counts_from_usage, usage_request
from .reported import reported_usage
from .session import Message, Session


@dataclass(frozen=True)
class FromUsage:
    """The request counted from the provider's reported usage of the call it extends (`anchor`)."""

    tokens: int
    anchor: int
    #: That call's reported request (input + cache read + cache write), what the next one repeats.
    reported: int
    #: That call's answer as it reported it (its output tokens), where the policy counts it so.
    answer: int
    #: The tokens after it, by the provider's count (the model's encoding; o200k_base an estimate).
    after: int
    #: Whether the reported figure holds the answer (Claude Code, Codex); else `after` counts it (Gemini CLI).
    with_answer: bool = True

    def words(self, encoding: str) -> str:
        """"#39's reported 81,960, its answer's 3 and about 56 after it by o200k_base"."""
        answer = f", its answer's {self.answer:,}" if self.answer else ""
        which = "after it" if self.with_answer else "for its answer and after it"
        after = f" and about {self.after:,} {which} by {encoding}" if self.after else ""
        return f"#{self.anchor}'s reported {self.reported:,}{answer}{after}"


def count_from_usage(plan: Plan, session: Session, entries: Sequence[Any], recount: Callable[[int, Any], int]) -> FromUsage | None:
    """The plan's request as the provider counts it, where the policy counts it from a reported call
    (Claude Code, Codex, Gemini CLI with usage): that call's figure holds the system prompt, the
    tools and every earlier message exactly; only what follows is estimated, each message by
    `recount(index, entry as sent)` (the real count's cached per-message count) in place of the
    policy's estimate of it, as `provider_count.provider_request` prices it. `entries` are the
    context's entries as the plan holds them (not built: a long log's messages stay unconverted).
    None elsewhere."""
    anchored = plan.extra.get("request_tokens") if isinstance(plan.extra, dict) else None
    if not counts_from_usage(plan) or not isinstance(anchored, int):
        return None
    anchor = anchor_index(plan, session)
    if anchor is None or not 0 <= anchor < len(session.messages):
        return None
    usage = session.messages[anchor].usage
    if usage is None or usage.window_fill <= 0:
        return None
    with_answer = COUNTS_FROM_USAGE[plan.policy]  # else the answer is estimated too (Gemini CLI)
    recounts = ((index, recount(index, entry)) for entry, index in zip(entries, plan.context_index or (), strict=False)
                if index is not None and index >= anchor)
    tokens = usage_request(plan, anchored, anchor, recounts, lambda i: plan.messages[i].sent_tokens)
    answer = usage.output_tokens if with_answer else 0
    return FromUsage(tokens, anchor, usage.window_fill, answer, max(0, tokens - usage.window_fill - answer), with_answer)


@dataclass(frozen=True)
class NextCall:
    """The next request's expected bill: what it reads from the cache, writes, and sends uncached."""

    request: int
    read: int
    write: int
    uncached: int
    cost: float
    #: "warm" (the previous call's prefix read), "expired" (its lifetime passed), "cold" (no earlier
    #: call this request is known to extend), "none" (no prompt caching for the model).
    state: str
    #: The previous call's request the next one repeats, or 0 where none is known.
    shared: int = 0
    minutes: int = 0  # since the previous call, when the cache expired

    @property
    def new(self) -> int:
        return self.write + self.uncached

    def assumption(self) -> str:
        """What the price assumes, in a few words ("with the cache warm: 80,833 read, 34 new")."""
        if self.state == "none":
            return "every token at the input price (no prompt caching for this model in the catalogue)"
        split = f"{self.read:,} read, {self.new:,} new"
        if self.state == "warm":
            of = f" (of the {self.shared:,} the previous call sent, as the provider's best-effort cache serves it)" if self.read < self.shared else ""
            return f"with the cache warm: {split}{of}"
        if self.state == "expired":
            return f"with the cache expired ({self.minutes:,} minutes after the previous call): {split}"
        return f"with nothing this session sent known to be cached: {split}"

    def to_json(self) -> dict[str, Any]:
        return {"request": self.request, "cache_read": self.read, "cache_write": self.write, "uncached": self.uncached,
                "cost_usd": round(self.cost, 6), "cache": self.state, "shared_prefix": self.shared}


def next_call(plan: Plan, session: Session, model: str, request: int, from_usage: FromUsage | None) -> NextCall | None:
    """Price the request of `request` tokens with the session's cache model for `model` (None: the
    model is not in the catalogue). It extends the reported call of `from_usage` where there is one:
    that call's request is the shared prefix, read while the cache still holds it (by the messages'
    timestamps, as `simulate --cost` reads them). Otherwise nothing this session sent is known to be
    cached: a cold start, priced as the cache model prices one."""
    cm = cache_model(session, model)
    if not cm.known:
        return None
    last = len(plan.messages) - 1
    found = reported_usage(session)
    unseen = found.unseen_at(last) if found is not None else 0
    shared, expired, minutes = 0, False, 0
    if from_usage is not None:
        shared = min(from_usage.reported, request)
        sent_at = _time(session.messages, from_usage.anchor - 1)
        now = _time(session.messages, last)
        if cm.ttl_seconds and sent_at is not None and now is not None and now - sent_at > cm.ttl_seconds:
            expired, minutes = True, int((now - sent_at) // 60)
    cold = from_usage is None or expired
    read, _, _ = expected_read(cm, shared, unseen, request, cold, expired)
    write, uncached = _split(request, read, writes_charged(cm, request))
    state = "none" if not cm.caches else "expired" if expired else "cold" if cold else "warm"
    return NextCall(request, read, write, uncached, cm.price(read, write, uncached), state, shared, minutes)


def _time(messages: tuple[Message, ...] | list[Message], index: int) -> float | None:
    return _seconds(messages[index].timestamp) if 0 <= index < len(messages) else None

