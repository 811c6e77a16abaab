"""Prompt-caching costs of a replay, for `simulate --cost` and `compare --cost`."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ParameterError


def _cache_report(args: argparse.Namespace, timeline: Any) -> Any:
    from ..engine.caching import cache_costs
    from ..engine.catalog import find_model

    if args.cost_model and find_model(args.cost_model) is None:
        from ..engine.catalog import load_catalog

        raise ParameterError(f"--cost-model: {args.cost_model!r} is not in the model catalogue ({', '.join(m.name for m in load_catalog())})")
    return cache_costs(timeline, args.cost_model or None)


def priced(cache: Any) -> bool:
    """Whether the catalogue priced the requests: a model it does not know (or knows without an
    input price) has no cost to rank, and its rows read "0.0000" under "the 10 most expensive"."""
    return bool(cache.known and cache.model.input_per_mtok > 0)


def unpriced_line(cache: Any) -> str:
    """What an unpriced report has to say (token figures only), and how to price it ("" when priced)."""
    if priced(cache) or not cache.turns:
        return ""
    unit = f" ({cache.unit})" if cache.unit else ""
    return (f"  {cache.input_tokens:,} input tokens over {len(cache.turns):,} requests{unit}, not priced; to price them, "
            "name a model of the catalogue (resources/models.yaml) with --cost-model NAME")


#: What only a priced model gives, per turn and in all; and what only a known model gives besides
#: (what its provider would cache).
_UNPRICED_TURN = ("cost_usd", "cost_usd_range")
_UNPRICED_TOTAL = ("cost_usd", "cost_usd_range", "cost_without_cache_usd")
_UNKNOWN_TURN = ("cache_read", "cache_write", "cache_read_range", "uncached")
_UNKNOWN_TOTAL = ("cache_read", "cache_write", "uncached")


def cache_json(cache: Any) -> dict[str, Any]:
    """`cache.to_json()`, with null (not 0) for what an unpriced model leaves unknown: every turn of
    a model the catalogue does not know carried "cost_usd": 0.0 and "cache_read": 0, as if priced
    and not cached."""
    doc: dict[str, Any] = cache.to_json()
    if priced(cache):
        return doc
    unknown = () if cache.known else _UNKNOWN_TOTAL
    for key in (*_UNPRICED_TOTAL, *unknown):
        doc[key] = None
    for turn in doc["turns"]:
        for key in (*_UNPRICED_TURN, *(() if cache.known else _UNKNOWN_TURN)):
            turn[key] = None
    return doc


def print_cache(cache: Any) -> None:
    """The prompt-caching block of `simulate --cost`: the sentence, then the turns that cost most
    (none for a model that is not priced: its token figures, and how to price it)."""
    print(f"prompt caching ({cache.model.name}): {cache.sentence()}")
    if not priced(cache):
        if unpriced_line(cache):
            print(unpriced_line(cache))
        return
    reported = any(t.reported is not None for t in cache.turns)
    print(f"{'turn':>6} {'request':>9} {'shared':>9} {'read':>9} {'write':>9} {'uncached':>9} {'cost $':>9}" +
          (f" {'rep.read':>9} {'rep.write':>9}" if reported else "") + "  ")
    worst = sorted(cache.turns, key=lambda t: -t.cost)[:10]
    for t in sorted(worst, key=lambda t: t.turn):
        extra = (f" {t.reported.cache_read_input_tokens:>9,} {t.reported.cache_creation_input_tokens:>9,}" if t.reported is not None
                 else f" {'':>9} {'':>9}") if reported else ""
        flag = "" if not cache.caches else "  broke the cache" if t.broke_cache else "  cache expired" if t.expired else ""
        print(f"{t.turn:>6} {t.request:>9,} {t.shared:>9,} {t.cache_read:>9,} {t.cache_write:>9,} {t.uncached:>9,} {t.cost:>9.4f}{extra}{flag}")
    counted = (f"token figures are counted as the provider counts them ({cache.counted_with})" if cache.counted_with
               else "token figures are the replay's requests as the policy counts them, from the provider's reported usage where it does")
    print(f"(the 10 most expensive requests; --json lists every turn; {counted})")

