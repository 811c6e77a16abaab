"""`ctxviz simulate`: the session replayed call by call, with each policy's triggers and summaries."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..engine.checks import PlanOptions
from ..engine.gc_pause import frozen_after
from ..engine.planner import plan_session
from ..engine.wording import counted, ordinal
from ..errors import ParameterError
from ..io.exporters import json_text
from .cost import _cache_report, cache_json, print_cache
from .exits import EXIT_OK
from .options import _add_cost_options, _add_plan_options, _add_step_option
from .retention import LOST_IN_JSON, anchors_ahead, retention_skipped, timeline_retention_of, timeline_retention_text
from .session import STORE, load_with_policy, opened_line, preset_applied, preset_line_text
from .stdout import write_stdout

if TYPE_CHECKING:
    from ..engine.session import Session
    from ..engine.summarizers import EndpointSummarizer


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("simulate", help="replay the session call by call, with each policy's triggers and summaries")
    _add_plan_options(p, retention=True)
    _add_step_option(p)
    p.add_argument("--json", action="store_true", help="print the timeline as JSON")
    p.add_argument("--summarizer-url", default="", help="OpenAI-compatible endpoint for summaries (default: offline extractive)")
    p.add_argument("--summarizer-model", default="", help="model name for --summarizer-url")
    _add_cost_options(p)


def run(args: argparse.Namespace) -> int:
    session, policy_name, params, tokenizer, opened = load_with_policy(args)
    summarizer = endpoint_summarizer(args, policy_name)
    skipped = retention_skipped(args, session)
    # The anchors are extracted (in a child process where one can help) while this one imports the
    # replay's modules and replays: started first, before those imports (about 0.2 s of the overlap).
    ahead = None if skipped else anchors_ahead(session)
    try:
        from ..engine.replay import replays_incrementally
        from ..engine.simulate import first_step_gap, plan_versus_replay, simulate

        options = PlanOptions(pair_safe=args.pair_safe, pins=tuple(args.pin))  # the real count is not replayed
        with frozen_after():  # (engine/gc_pause.py: the replay's turns and the plan live until the command ends, with no cycles)
            timeline = simulate(session, policy_name, params, tokenizer, STORE, summarizer, options=options, per_message=args.per_message)
            plan = plan_session(session, policy_name, params, tokenizer, store=STORE, options=options)
        retention = None if ahead is None else timeline_retention_of(timeline, ahead)
    finally:
        if ahead is not None:
            ahead.close()
    versus = plan_versus_replay(plan, timeline)
    how = replay_line(timeline, replays_incrementally(policy_name, session, options, params))
    reported = reported_per_turn(session)
    cache = _cache_report(args, timeline) if args.cost else None
    if args.json:
        doc = {**timeline.to_json(), "versus_plan": {"plan_used": plan.totals.used, "plan_budget": plan.totals.budget,
                                                     "replay_used": timeline.turns[-1].tokens_sent if timeline.turns else 0,
                                                     "sentence": versus},
               "first_step": first_step_gap(plan, timeline, reported) or None,
               "replay": {"how": how, "scratch_steps": timeline.scratch_steps},
               "retention": retention.to_json(LOST_IN_JSON) if retention is not None else None,
               **({"retention_note": skipped} if skipped else {})}
        if cache is not None:
            doc["cache"] = cache_json(cache)
        preset = preset_applied(args)
        if preset is not None:  # (as plan --json names it)
            doc["preset"] = preset
        if reported:  # what the provider reported for the call that produced each turn's message
            for turn in doc["turns"]:
                turn["reported_input"] = reported.get(turn["turn"])
        write_stdout(json_text(doc) + "\n")
        return EXIT_OK
    print(f"{session.source}: {counted(len(timeline.turns), 'turn')} with {policy_name}")
    print(preset_line_text(args), end="")
    if opened_line(opened):
        print(opened_line(opened), end="")
    if timeline.schedule is not None:
        print(f"steps: {timeline.schedule.describe()}; a turn is named by the last message of its request")
    if timeline.scratch_steps:
        print(f"replay: {how}")
    if reported:
        print(f"the log reports the provider's input for {counted(len(reported), 'call')} (column 'reported': input + cache read + cache write "
              "of the request made after that turn)")
    print(f"{'step':>5} {'turn':>6} {'sent':>9} {'budget':>9} {'kept':>6} {'dropped':>8} {'summ.':>6} {'trunc.':>6}"
          + (f" {'reported':>9}" if reported else "") + "  events")
    step = max(1, len(timeline.turns) // 40)
    if step > 1:
        print(f"(of {len(timeline.turns):,} steps, every {ordinal(step)} is shown, with every step that has an event and the last; "
              "--json lists them all)")
    for t in timeline.turns:
        if t.events or t.step % step == 0 or t.step == len(timeline.turns) - 1:
            events = "; ".join(f"{e.kind}: {e.message}" for e in t.events)
            over = "" if t.fits else " OVER"
            seen = (f" {reported[t.index]:>9,}" if t.index in reported else f" {'':>9}") if reported else ""
            print(f"{t.step:>5} {t.index:>6} {t.tokens_sent:>9,} {t.budget:>9,} {t.kept:>6} {t.dropped:>8} {t.summarized:>6} {t.truncated:>6}{seen}{over}  {events}")
    kinds: dict[str, int] = {}
    for e in timeline.events:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    print("events: " + (", ".join(f"{k} x{v}" for k, v in kinds.items()) or "none"))
    gap = first_step_gap(plan, timeline, reported)
    if gap:
        print(gap)
    sys.stdout.write(timeline_retention_text(retention) if retention is not None else skipped + "\n")
    print(versus)
    if cache is not None:
        print_cache(cache)
    return EXIT_OK


def reported_per_turn(session: Session) -> dict[int, int]:
    """Turn -> what the provider reported was in the window for the request made after that turn
    (the call that produced message N saw the context of turn N-1)."""
    return {m.index - 1: m.usage.window_fill for m in session.messages if m.usage is not None and m.usage.window_fill and m.index > 0}


#: Policies whose replay asks a summariser; the others summarise by their own offline rules.
ENDPOINT_SUMMARY_POLICIES = ("supyagent",)


def endpoint_summarizer(args: argparse.Namespace, policy_name: str) -> EndpointSummarizer | None:
    if not args.summarizer_url:
        return None
    if policy_name not in ENDPOINT_SUMMARY_POLICIES:
        raise ParameterError(f"--summarizer-url: {policy_name} does not ask an LLM for its summaries in ctxviz's replay "
                             f"(only {', '.join(ENDPOINT_SUMMARY_POLICIES)} does); drop the option")
    from ..engine.summarizers import EndpointSummarizer

    return EndpointSummarizer(args.summarizer_url, args.summarizer_model)



def replay_line(timeline: Any, how: str) -> str:
    """How the replay ran: incremental, or from scratch (why), with the steps it planned whole."""
    if not timeline.scratch_steps:
        return how
    return f"{how}; {timeline.scratch_steps:,} of {len(timeline.turns):,} steps planned the whole prefix"
