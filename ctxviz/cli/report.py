"""`ctxviz report`: the app's pie, strip, category bars and timeline rendered to HTML, PNG, SVG or PDF."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from ..engine.gc_pause import frozen_after
from ..io.output import check_output_path
from .exits import EXIT_OK
from .options import _add_plan_options, _output
from .session import STORE, _options, load_with_policy, plan_frozen, preset_words


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("report", help="render the pie, strip, category bars and timeline to HTML, PNG, SVG or PDF")
    _add_plan_options(p, real_count=True)
    _output(p, "-o", "--output", required=True, help="report.html, .png, .svg or .pdf (a regular file or a new path, written atomically)")
    p.add_argument("--no-timeline", action="store_true", help="skip the turn-by-turn simulation")


def run(args: argparse.Namespace) -> int:
    from ..engine.simulate import simulate

    check_output_path(args.output, inputs=[args.session])  # refuse before the work, not after
    session, policy_name, params, tokenizer, _opened = load_with_policy(args)
    plan = plan_frozen(session, policy_name, params, tokenizer, _options(args))
    preset = preset_words(args)  # said in the HTML page's header (escaped); a picture says it among its notes
    if preset and not args.output.lower().endswith((".html", ".htm")):
        plan = dataclasses.replace(plan, notes=(*plan.notes, f"parameters from the preset {preset}"))
    timeline = None
    if not args.no_timeline:
        with frozen_after():  # (as `simulate` replays: engine/gc_pause.py)
            timeline = simulate(session, policy_name, params, tokenizer, STORE, options=_options(args))
    from ..gui.app import application
    from ..gui.report import write_report

    application("light")
    write_report(session, plan, timeline, args.output, inputs=[args.session], preset=preset)
    print(f"wrote {args.output}" + (f" (parameters from preset {args.config})" if preset else ""), file=sys.stderr)
    return EXIT_OK

