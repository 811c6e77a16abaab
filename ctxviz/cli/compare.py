"""`ctxviz compare`: the messages two policies, or two parameter sets, decide differently."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..engine.checks import PlanOptions
from ..engine.policies import get_policy
from ..engine.wording import spelled
from ..errors import ParameterError
from ..io.exporters import json_text
from .cost import _cache_report, cache_json, unpriced_line
from .exits import EXIT_OK
from .options import _add_cost_options, _add_plan_options
from .params import _parse_sets, resolve_params
from .retention import LOST_IN_JSON, plan_retention_of, retention_skipped
from .session import STORE, _options, load_args, plan_frozen, preset_applied, preset_words
from .stdout import write_stdout

if TYPE_CHECKING:
    from ..engine.checks import RealCount
    from ..engine.plan import Plan
    from ..engine.retention import Retention
    from ..engine.session import Session


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("compare", help="list the messages whose decisions differ between two policies or two parameter sets")
    _add_plan_options(p, real_count=True, retention=True)
    p.add_argument("--set-a", action="append", default=[], metavar="KEY=VALUE", help="parameter for side A only")
    p.add_argument("--set-b", action="append", default=[], metavar="KEY=VALUE", help="parameter for side B only")
    p.add_argument("--trigger-tokens", type=int, metavar="N", help="set both policies' trigger to fire at N tokens, each in its own units")
    p.add_argument("--keep-messages", type=int, metavar="K", help="set both policies' keep to the last K messages")
    p.add_argument("--keep-tokens", type=int, metavar="T", help="set both policies' keep to the last T tokens")
    _add_cost_options(p, "also replay both sides turn by turn and compare their input cost with prompt caching")
    p.add_argument("--json", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true", help="list every message decided differently, with both sentences (default: grouped by reason)")


def run(args: argparse.Namespace) -> int:
    from ..engine.explain import compare, compare_summaries, decision_words, differences_headline, group_differences

    names = args.policy or []
    if len(names) > 2:
        raise ParameterError(f"compare takes at most two --policy (got {len(names)})")
    if len(names) < 2 and not (args.set_a or args.set_b):
        raise ParameterError("compare needs two --policy, or one policy with --set-a / --set-b")
    name_a = names[0] if names else None
    name_b = names[1] if len(names) == 2 else name_a
    session = load_args(args)
    unaligned: list[str] = []
    aligning = (args.trigger_tokens, args.keep_messages, args.keep_tokens) != (None, None, None)
    resolved = [_compare_side(args, session, name, extra, unaligned) for name, extra in ((name_a, args.set_a), (name_b, args.set_b))]
    a, b = (plan_frozen(session, policy_name, params, tokenizer, _options(args))
            for policy_name, params, tokenizer in resolved)
    diffs = compare(a, b)
    summary_diffs = compare_summaries(a, b, len(session.summaries))
    skipped = retention_skipped(args, session)
    kept_a, kept_b = (None, None) if skipped else (plan_retention_of(a, session), plan_retention_of(b, session))
    caches = _compare_costs(args, session, resolved) if args.cost else None
    if args.json:
        doc = {"a": {"policy": a.policy, "params": dict(a.params), "totals": a.totals.to_json(), "verdict": a.fit_verdict(),
                     "retention": kept_a.to_json(LOST_IN_JSON) if kept_a is not None else None},
               "b": {"policy": b.policy, "params": dict(b.params), "totals": b.totals.to_json(), "verdict": b.fit_verdict(),
                     "retention": kept_b.to_json(LOST_IN_JSON) if kept_b is not None else None},
               "differences": [d.to_json() for d in diffs], "difference_groups": [g.to_json() for g in group_differences(diffs)],
               "summary_differences": [d.to_json() for d in summary_diffs],
               **({"not_aligned": unaligned} if aligning else {})}
        preset = preset_applied(args)
        if preset is not None:  # (as plan --json names it; one --config sets both sides)
            doc["preset"] = preset
        if a.real is not None and b.real is not None:  # --real-count / --model: both contexts counted on one scale
            doc["a"]["real_count"], doc["b"]["real_count"] = a.real.to_json(), b.real.to_json()
        if caches is not None:
            doc["a"]["cache"], doc["b"]["cache"] = (cache_json(c) for c in caches)
        write_stdout(json_text(doc) + "\n")
        return EXIT_OK
    label_a = f"A: {a.policy} " + " ".join(f"{k}={v}" for k, v in _parse_sets(args.set_a).items())
    label_b = f"B: {b.policy} " + " ".join(f"{k}={v}" for k, v in _parse_sets(args.set_b).items())
    print(label_a.strip())
    print(label_b.strip())
    if preset_words(args):  # both sides start from it (their --set-a / --set-b apply over it)
        print(f"  A and B from preset {preset_words(args)}")
    if aligning:
        print("aligned: " + ", ".join(f"{k}={f'{v:,}'}" for k, v in (("trigger at tokens", args.trigger_tokens), ("keep messages", args.keep_messages),
                                                                    ("keep tokens", args.keep_tokens)) if v is not None)
              + f" (A {_knobs(a)}; B {_knobs(b)})")
        for line in unaligned:
            print(f"  not aligned: {line}")
    print(f"{'':18}{'A':>14}{'B':>14}")
    for key in ("budget", "used", "kept", "dropped", "kept_messages", "dropped_messages", "fits"):
        va, vb = getattr(a.totals, key), getattr(b.totals, key)
        fmt = (lambda v: str(v)) if isinstance(va, bool) else (lambda v: f"{v:,}")
        print(f"{key:18}{fmt(va):>14}{fmt(vb):>14}")
    if a.real is not None and b.real is not None:
        print(compare_real_text(a.real, b.real), end="")
    if kept_a is not None and kept_b is not None:
        print(compare_retention_text(kept_a, kept_b), end="")
    else:
        print(skipped)
    for side, p in (("A", a), ("B", b)):
        if p.fit_verdict() != "fits":
            print(f"{side}: {p.fit_verdict()}")
    if a.tokenizer != b.tokenizer:
        print(f"tokens counted with {a.tokenizer} for A and {b.tokenizer} for B, so their token figures are not on one scale"
              + ("; the real count rows are" if a.real is not None else " (--real-count puts both on one)"))
    if caches is not None:
        for side, cache in zip("AB", caches, strict=True):
            print(f"{side} replayed, prompt caching ({cache.model.name}): {cache.sentence()}")
            if unpriced_line(cache):
                print(unpriced_line(cache))
    print(differences_headline(len(diffs), len(summary_diffs)) + (", grouped by reason (--verbose lists each)" if diffs and not args.verbose else ""))
    for sd in summary_diffs:
        print(f"  {sd.line()}")
        for side, s in (("A", sd.a), ("B", sd.b)):
            if s is not None:
                print(f"      {side}: {s.tokens:,} tokens; {spelled(s.reason)}")
    if args.verbose:
        for d in diffs:
            print(f"  #{d.index} {d.role}: A {spelled(d.a.decision.value)} / B {spelled(d.b.decision.value)}")
            print(f"      A: {spelled(d.a.reason)}")
            print(f"      B: {spelled(d.b.reason)}")
        return EXIT_OK
    for g in group_differences(diffs):
        tokens = f"{g.a_tokens:,} tokens" if g.a_tokens == g.b_tokens else f"{g.a_tokens:,} / {g.b_tokens:,} tokens"
        print(f"  {g.count:>5,} message{'s' if g.count != 1 else ' '} ({tokens}): A {spelled(decision_words(g.a_decision, g.a_code))} / "
              f"B {spelled(decision_words(g.b_decision, g.b_code))}: {g.span()}")
        first = next(d for d in diffs if d.index == g.indices[0])
        print(f"        e.g. #{first.index}: A: {spelled(first.a.reason)}")
        print(f"        {'':{len(str(first.index)) + 6}}B: {spelled(first.b.reason)}")
    return EXIT_OK


def compare_real_text(a: RealCount, b: RealCount) -> str:
    """Both contexts counted with one model's encoding (`--real-count`, `--model`), as rows of the
    compare table: the count, the room left in the model's window, the input cost of the next call."""
    # The reference count: the provider's own (reported usage plus what follows) where the log has it
    # for that side's context, else the encoding's count (an o200k count of a Claude request read 12 % low).
    rows = [("real count", f"{a.reference:,}", f"{b.reference:,}")]
    if a.window is not None and b.window is not None:
        rows.append(("real margin", f"{a.window - a.reference:,}", f"{b.window - b.reference:,}"))
    if a.input_cost is not None and b.input_cost is not None:
        rows.append(("input cost $", f"{a.input_cost:.4f}", f"{b.input_cost:.4f}"))
    lines = [f"{name:18}{va:>14}{vb:>14}" for name, va, vb in rows]
    kind = "counted" if a.exact else "estimated (no tokenizer known for this model)"
    window = f"its {a.window:,}-token window (a negative margin is over it)" if a.window else f"an unknown window ({a.model} is not in the catalogue)"
    lines.append(f"  real count: each context as sent, {kind} with {a.encoding} for {a.model}, against {window}")
    from_usage = [side for side, r in (("A", a), ("B", b)) if r.from_usage is not None]
    if from_usage:
        lines.append(f"  ({' and '.join(from_usage)}: from the provider's reported usage for the call its context extends, plus the count "
                     "of what follows; the encoding's count is an estimate beside it)")
    return "\n".join(lines) + "\n"


def compare_retention_text(a: Retention, b: Retention) -> str:
    """Both sides' retention as rows of the compare table, and what one side keeps that the other loses."""
    rows = [("retention", f"{a.score * 100:.0f} %", f"{b.score * 100:.0f} %"),
            ("anchors kept", f"{a.kept:,}/{a.anchors:,}", f"{b.kept:,}/{b.anchors:,}"),
            ("instructions", f"{a.instructions_kept}/{a.instructions}", f"{b.instructions_kept}/{b.instructions}")]
    lines = [f"{name:18}{va:>14}{vb:>14}" for name, va, vb in rows]
    lost_a, lost_b = {x.id for x in a.lost}, {x.id for x in b.lost}
    for side, mine, theirs, lost in (("A", lost_a, lost_b, a.lost), ("B", lost_b, lost_a, b.lost)):
        only = [x for x in lost if x.id in mine - theirs]
        if only:
            shown = ", ".join(x.label(50) for x in only[:6]) + (f" and {len(only) - 6:,} more" if len(only) > 6 else "")
            lines.append(f"lost by {side} only ({len(only):,}): {shown}")
    return "\n".join(lines) + "\n"


def _compare_side(args: argparse.Namespace, session: Session, name: str | None, extra: Sequence[str],
                  unaligned: list[str]) -> tuple[str, Any, str | None]:
    """One side's (policy, parameters, tokenizer): --config and --set, then the shared trigger and
    keep (`--trigger-tokens`, `--keep-*`) in its own units, then the side's own --set-a/--set-b,
    which has the last word. What the side cannot express is appended to `unaligned`."""
    policy_name, params, tokenizer = resolve_params(args, name, extra)
    if (args.trigger_tokens, args.keep_messages, args.keep_tokens) != (None, None, None):
        from ..engine.vocabulary import align

        policy = get_policy(policy_name)
        params = params if params is not None and not isinstance(params, dict) else policy.make_params(params or {})
        params, skipped = align(policy, params, session, args.trigger_tokens, args.keep_messages, args.keep_tokens)
        params = policy.make_params(_parse_sets(extra), base=params)
        unaligned += skipped
    return policy_name, params, tokenizer


def _compare_costs(args: argparse.Namespace, session: Session, sides: Sequence[tuple[str, Any, str | None]]) -> tuple[Any, Any]:
    """Both sides replayed turn by turn and priced with prompt caching (`compare --cost`)."""
    from ..engine.simulate import simulate

    options = PlanOptions(pair_safe=args.pair_safe, pins=tuple(args.pin))
    a, b = (_cache_report(args, simulate(session, policy_name, params, tokenizer, STORE, options=options))
            for policy_name, params, tokenizer in sides)
    return a, b


def _knobs(plan: Plan) -> str:
    policy = get_policy(plan.policy)
    names = dict.fromkeys((*policy.trigger, *policy.keep))
    return " ".join(f"{n}={plan.params.get(n)!r}" for n in names) or "no trigger or keep"

