"""`ctxviz watch FILE`: follow a session log as its agent writes it, one line per new call.

Each line: the call's fill against the window and against the agent's compaction trigger, the
tokens it added, its cache hit share, and the calls left before the next compaction (with the
range; engine/forecast.py states the method). A warning follows when compacting now would lose
something the user asked. Only appended bytes are read (io/follow.py). Ctrl+C ends it cleanly.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

from ..engine.wording import clip, counted, noun
from .exits import EXIT_OK
from .options import _formats
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("watch", help="follow a live session log: fill, trigger and calls until the next compaction, per call")
    p.add_argument("session", help=f"the session log to follow ({_formats()}; only appended lines of a JSONL log are read)")
    p.add_argument("--policy", help="the policy to forecast with (default: the agent's own: claude-code, codex-compaction, gemini-cli-compression)")
    p.add_argument("--interval", type=_interval, default=0.5, help="seconds between looks at the file (default 0.5)")
    p.add_argument("--once", action="store_true", help="print the state of the file as it is now and exit")


MAX_INTERVAL = 86_400.0  # a day; time.sleep overflows long before float does


def _interval(text: str) -> float:
    """`--interval`: seconds, above 0 and finite, refused by argparse before the file is read."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_INTERVAL):
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds above 0 and at most {MAX_INTERVAL:,.0f}, e.g. 0.5")
    return seconds


def quote(text: str, width: int = 60) -> str:
    """A user's words in quotes on one line, cut to `width` characters with "…" where cut."""
    return repr(clip(text, width))


def call_line(session: Any, call: Any, previous_fill: int | None, when: Any, latest: bool = True) -> str:
    """One call as `watch` prints it. The forecast (`when`) is made at the newest call: a call read
    with others at one look (`latest` False) shows its own fill against the trigger and no forecast
    (every line of a batch showed the batch's last share and forecast: "fill 54,456 ... trigger
    167,000 (23%)")."""
    from ..engine.catalog import find_model

    u = call.usage
    fill = u.window_fill
    entry = find_model(session.model)
    window = session.context_window or (entry.context_window if entry is not None else 0)
    parts = [f"call #{call.index}", f"fill {fill:,}" + (f" / {window:,} ({fill / window:.0%})" if window else "")]
    if when is not None and when.trigger:
        level = when.level if latest else fill
        parts.append(f"trigger {when.trigger:,} ({level / when.trigger:.0%})")
    if previous_fill is not None:
        parts.append(f"{fill - previous_fill:+,} tokens")
    parts.append(f"cache {u.cache_read_input_tokens / fill:.0%}" if fill else "cache -")
    if when is not None and latest:
        parts.append("compacts before the next request" if when.calls == 0 else
                     f"~{when.range_text()} {noun(when.calls, 'call')} to compaction" if when.calls is not None else "calls to compaction: unknown yet")
    return "  ".join(parts)


def compaction_lines(session: Any, after: int, upto: int) -> list[str]:
    """The compactions the log records between two calls (after message `after`, up to `upto`): a
    fill that fell by 87,705 tokens said nothing of why."""
    lines = []
    for c in getattr(session, "compactions", ()):
        if after < c.before_index <= upto:
            how = f" ({c.trigger})" if c.trigger else ""
            before = f": {c.pre_tokens:,} tokens before it" if c.pre_tokens else ""
            lines.append(f"  compaction{how} recorded before #{c.before_index}{before}")
    return lines


def run(args: argparse.Namespace) -> int:
    from ..engine.forecast import forecast
    from ..engine.policies import get_policy
    from ..engine.steps import recorded_call
    from ..engine.verify import agent_policy
    from ..io.follow import Follower

    follower = Follower(args.session)
    printed = 0  # calls already printed
    previous_fill: int | None = None
    first = True
    try:
        while True:
            update = follower.poll()
            for note in update.notes if update is not None else ():
                write_stdout(f"note: {note}\n")
            session = follower.session
            if session is not None and (update is not None or first):
                calls = [m for m in session.messages if recorded_call(m)]
                if printed > len(calls):  # the file was replaced or truncated
                    printed = 0
                policy = args.policy or agent_policy(session)[0]
                fresh = calls[printed:] if not first else calls[-1:]
                if fresh or first:
                    counts = follower.counts(get_policy(policy).scheme(None, session.model))
                    f = forecast(session, policy, counts=counts, with_backtest=first)
                    if first:
                        write_stdout(f"{session.source}: {counted(len(calls), 'call')} so far; {policy}; {f.error_sentence()}\n")
                    for call in fresh:
                        before = [c for c in calls if c.index < call.index]
                        previous_fill = before[-1].usage.window_fill if before else None
                        for line in compaction_lines(session, before[-1].index if before else -1, call.index) if not first else ():
                            write_stdout(line + "\n")
                        write_stdout(call_line(session, call, previous_fill, f.when, latest=call is fresh[-1]) + "\n")
                    lost = f.next_drop.user_losses if f.next_drop is not None else ()
                    if lost:
                        shown = "; ".join(quote(a.value) for a in lost[:3]) + (f" and {len(lost) - 3:,} more" if len(lost) > 3 else "")
                        write_stdout(f"  warning: compacting now would lose {counted(len(lost), 'thing')} you asked: {shown}\n")
                    printed = len(calls)
                first = False
            if args.once:
                return EXIT_OK
            time.sleep(args.interval)
    except KeyboardInterrupt:
        write_stdout("\n")
        return EXIT_OK
