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


def print_cache(cache: Any) -> None:
    """The prompt-caching block of `simulate --cost`: the sentence, then the turns that cost most."""
    print(f"prompt caching ({cache.model.name}): {cache.sentence()}")
    if not cache.turns:
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
    print("(the 10 most expensive requests; --json lists every turn; token figures are the policy's estimator's)")

