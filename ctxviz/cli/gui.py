"""`ctxviz gui`: the desktop app, or a screenshot of it rendered offscreen.

Qt is imported only when this command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..engine.agent_policies import opened_under
from ..engine.policies import get_policy
from ..engine.tokenizers import get_tokenizer
from ..errors import CtxvizError, ParameterError
from ..io.loaders import load_session
from ..io.output import check_output_path, stream_of
from .options import _formats, _output
from .params import _parse_sets, resolve_params
from .session import _preset_policy


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("gui", help="open the desktop app")
    p.add_argument("session", nargs="?", help=f"session file to open ({_formats()})")
    p.add_argument("--latest", action="store_true",
                   help="open the newest agent session on this machine (see `ctxviz sessions`), under its agent's own policy")
    p.add_argument("--agent", choices=["claude-code", "codex", "gemini-cli"], help="with --latest: the newest session of this agent")
    p.add_argument("--root", action="append", default=[], metavar="DIR", help="with --latest: also look in DIR (repeatable)")
    p.add_argument("--follow", metavar="FILE", help="open FILE and follow it as its agent writes it (only appended lines are read)")
    p.add_argument("--policy", default=None, help="policy to start with")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="start with this policy parameter (repeatable)")
    p.add_argument("--config", help="start with the parameters of this YAML preset")
    p.add_argument("--tokenizer", help="start with this tokenizer instead of the policy's own estimator")
    p.add_argument("--compare", metavar="POLICY", help="fill the Compare tab with this policy as B (and run it for --screenshot)")
    p.add_argument("--compare-set", action="append", default=[], metavar="KEY=VALUE", help="a parameter of B (repeatable)")
    _output(p, "--screenshot", metavar="FILE.png", help="render the main window offscreen to a PNG and exit")
    p.add_argument("--theme", choices=["auto", "light", "dark"], default="auto", help="colour scheme (default: follow the system)")
    p.add_argument("--tab", type=int, default=0, choices=range(4), help="tab to show in the screenshot (0 overview, 1 timeline, 2 compare, 3 context)")
    p.add_argument("--size", default="1440x900", metavar="WxH", help="window size for the screenshot (default 1440x900)")


def latest_session(agent: str | None, roots: list[str]) -> tuple[str, str]:
    """(path, agent) of the newest session on this machine; a CtxvizError naming where it looked when there is none."""
    from ..io.discovery import discover

    listing = discover(roots)
    found = listing.latest(agent)
    if found is None:
        looked = ", ".join(loc.folder for loc in listing.locations)
        raise CtxvizError(f"gui --latest: no {agent + ' ' if agent else ''}session found (looked in {looked})")
    return found.path, found.agent


def run(args: argparse.Namespace) -> int:
    from ..gui.app import has_display, run

    if not args.screenshot and not has_display():
        raise CtxvizError("gui: no display to open a window on (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset); "
                          "use --screenshot FILE.png, `ctxviz report`, or run under xvfb-run")
    # A policy file of the user's is loaded here (a broken one is one line, before any window opens)
    # and the app then knows it by its own name, in the policy selector like any other.
    policy = get_policy(args.policy).name if args.policy else None
    live: tuple[str | None, bool | None] | None = None  # (agent, follow) for an agent's log opened live
    if sum(bool(x) for x in (args.session, args.latest, args.follow)) > 1:
        raise ParameterError("gui: give one of SESSION, --latest and --follow FILE")
    if args.agent and not args.latest:
        raise ParameterError("gui: --agent chooses among the sessions --latest looks at; add --latest")
    if args.latest:
        args.session, agent = latest_session(args.agent, args.root)
        live = (agent, None)  # followed when written in the last few minutes
    elif args.follow:
        args.session = args.follow
        live = (None, True)
    params, tokenizer = None, args.tokenizer
    if args.compare:
        args.compare = get_policy(args.compare).name
    session: Any = args.session
    if args.screenshot:
        check_output_path(args.screenshot, inputs=[args.session] if args.session else [])  # before any window, not after
        if stream_of(args.screenshot) is None and not args.screenshot.lower().endswith(".png"):
            # The screenshot is always PNG data: a .txt or .jpg name would hold something else (`report` refuses it too).
            raise ParameterError(f"--screenshot {args.screenshot}: the screenshot is a PNG; name it FILE.png")
    if args.session and (args.screenshot or ((args.sets or args.config or (args.compare_set and not args.compare)) and policy is None)):
        # A bad file is one line here (and the window shows this one: loaded once). Parameters set
        # without --policy are the parameters of the policy the log opens under: its agent's own.
        session = load_session(args.session)
        if policy is None and (args.sets or args.config) and not _preset_policy(args):
            policy = opened_under(session.format, session.model).policy
    if args.sets or args.config:  # bad values are one line here, before any window opens
        policy, params, tokenizer = resolve_params(args, policy)
    elif args.tokenizer:
        get_tokenizer(args.tokenizer)
    compare_with = None
    if args.compare or args.compare_set:
        compare_policy = args.compare or policy or (opened_under(session.format, session.model).policy
                                                    if not isinstance(session, str | None) else "missy")
        get_policy(compare_policy).make_params(_parse_sets(args.compare_set))  # one line now, not a box later
        compare_with = (compare_policy, " ".join(args.compare_set))
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
        if not (320 <= width <= 8000 and 240 <= height <= 8000):
            raise ValueError
    except ValueError:
        raise ParameterError(f"--size {args.size}: expected WIDTHxHEIGHT between 320x240 and 8000x8000, e.g. 1280x720") from None
    return run(session, args.screenshot, args.theme, policy, args.tab, size=(width, height), params=params, tokenizer=tokenizer,
               compare=compare_with, live=live)

