"""`ctxviz watch FILE`: follow a session log as its agent writes it, one line per new call.

Each line: the call's fill against the window and against the agent's compaction trigger, the
tokens it added, its cache hit share, and the calls left before the next compaction (with the
range; engine/forecast.py states the method). A warning follows when compacting now would lose
something the user asked. Only appended bytes are read (io/follow.py). Ctrl+C ends it cleanly.

The policy is the one `plan` and `gui` open the log under (`engine.agent_policies`), said in a line
when it is not the agent's own. A file read again whole that is another log (replaced, truncated and
written anew) starts over with a header; so does a change of policy, model or window, with what it
was before.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from typing import Any

from ..engine.wording import clip, counted, noun
from .exits import EXIT_OK
from .options import _formats
from .stdout import write_stdout


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("watch", help="follow a live session log: fill, trigger and calls until the next compaction, per call")
    p.add_argument("session", help=f"the session log to follow ({_formats()}; only appended lines of a JSONL log are read)")
    p.add_argument("--policy", help="the policy to forecast with (default: the one plan and gui open the log under: its agent's own, claude-code, "
                   "codex-compaction or gemini-cli-compression, else missy, which has no compaction trigger)")
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
    u = call.usage
    fill = u.window_fill
    window = window_of(session)
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


@dataclass(frozen=True)
class Basis:
    """What a forecast stands on: the policy, why it is that one, and the model and window it reads.
    When any changes while the file is followed (another log replaced it, the agent switched model),
    the header is printed again: the trigger moved from 167,000 to 244,800 with nothing said."""

    policy: str
    model: str
    window: int
    #: Why this policy ("" when --policy named it); starts with the policy's name, as `opened_under` words it.
    reason: str
    agents_own: bool

    def words(self) -> str:
        return f"{self.policy} on {self.model or 'an unnamed model'}" + (f", window {self.window:,}" if self.window else "")


def window_of(session: Any) -> int:
    """The window a call's fill is set against: the log's own, else the catalogue's for its model (0: unknown)."""
    from ..engine.catalog import find_model

    entry = find_model(session.model)
    return int(session.context_window or (entry.context_window if entry is not None else 0))


def basis_of(session: Any, chosen: str | None) -> Basis:
    """The policy `plan` and `gui` open this log under (the agent's own, else missy: `opened_under`),
    unless --policy names one. `watch` used verify's fallback, claude-code, for any other format, and
    said nothing: a gpt-4o chat was forecast with Claude Code's trigger."""
    from ..engine.agent_policies import opened_under

    if chosen:
        return Basis(chosen, session.model, window_of(session), "", False)
    opened = opened_under(session.format, session.model)
    return Basis(opened.policy, session.model, window_of(session), opened.reason, opened.agents_own)


def basis_lines(basis: Basis, before: Basis | None, has_trigger: bool) -> list[str]:
    """The lines under the header that say why the policy is this one (when it is not the agent's own,
    or it changed) and that a policy without a compaction trigger gets no forecast."""
    lines = []
    if before is not None:
        why = basis.reason.removeprefix(f"{basis.policy}, ") if basis.reason else "named by --policy"
        lines.append(f"  now {basis.words()} (was {before.words()}): {why}")
    elif basis.reason and not basis.agents_own:
        lines.append(f"  opened under {basis.reason}; --policy NAME for another")
    if not has_trigger:
        lines.append(f"  {basis.policy} has no compaction trigger: each call's fill is set against the window only, "
                     "with no forecast of a compaction")
    return lines


def call_marks(calls: list[Any]) -> list[tuple[str, int, int]]:
    """What tells the calls printed from others: (id, index, fill after the call)."""
    return [(c.id, c.index, c.usage.window_fill) for c in calls]


def same_log(printed: list[tuple[str, int, int]], marks: list[tuple[str, int, int]]) -> bool:
    """Whether the calls now begin with those printed: the same log grown (a whole-document format
    rewritten, a file written again with what it held), else another log (replaced, truncated, or
    emptied and written anew, which a poll may see as a plain append), and `watch` starts over on it.
    The last call printed may still be being written (its usage on a later line): its fill is not
    compared."""
    if len(marks) < len(printed):
        return False
    return all(a[:2] == b[:2] for a, b in zip(printed, marks, strict=False)) and printed[:-1] == marks[:len(printed) - 1]


def look_lines(session: Any, calls: list[Any], fresh: list[Any], basis: Basis, was: Basis | None, header: bool, restart: bool,
               counts: Any) -> list[str]:
    """What one look prints: the header (at the start, on another log, or when the basis changed from
    `was`), a line per new call (with the compactions recorded between them, unless it starts over),
    and the warning of what compacting now would lose."""
    from ..engine.forecast import forecast

    f = forecast(session, basis.policy, counts=counts, with_backtest=header)
    out = []
    if header:
        error = f"; {f.error_sentence()}" if f.when is not None else ""  # no forecast, no error of one
        out.append(f"{session.source}: {counted(len(calls), 'call')} so far; {basis.policy}{error}")
        out += basis_lines(basis, was if was is not None and basis != was else None, f.when is not None)
    for call in fresh:
        before = [c for c in calls if c.index < call.index]
        previous_fill = before[-1].usage.window_fill if before else None
        out += compaction_lines(session, before[-1].index if before else -1, call.index) if not restart else []
        out.append(call_line(session, call, previous_fill, f.when, latest=call is fresh[-1]))
    lost = f.next_drop.user_losses if f.next_drop is not None else ()
    if lost:
        quotes = "; ".join(quote(a.value) for a in lost[:3]) + (f" and {len(lost) - 3:,} more" if len(lost) > 3 else "")
        out.append(f"  warning: compacting now would lose {counted(len(lost), 'thing')} you asked: {quotes}")
    return out


def run(args: argparse.Namespace) -> int:
    from ..engine.policies import get_policy
    from ..engine.steps import recorded_call
    from ..io.follow import Follower

    if args.policy:
        get_policy(args.policy)  # an unknown name is one line before the file is read
    follower = Follower(args.session)
    printed: list[tuple[str, int, int]] = []  # the calls already printed
    shown: Basis | None = None  # what the last header stood on
    noted = 0  # the follower's notes already printed
    try:
        while True:
            update = follower.poll()
            # The follower's notes, not the update's: a file emptied before it is written again gives
            # its note at a poll that finds nothing to read (no update), and it was never printed.
            for note in follower.notes[noted:]:
                write_stdout(f"note: {note}\n")
            noted = len(follower.notes)
            session = follower.session
            if session is not None and (update is not None or shown is None):
                calls = [m for m in session.messages if recorded_call(m)]
                marks = call_marks(calls)
                # Another log at the path starts over, with every call before the newest summed up
                # in the header (a replacing log's first 8 of 28 calls were never printed, as only
                # `printed > len(calls)` started over).
                restart = shown is None or not same_log(printed, marks)
                basis = basis_of(session, args.policy)
                header = restart or basis != shown
                fresh = calls[-1:] if restart else calls[len(printed):]
                if fresh or header:
                    counts = follower.counts(get_policy(basis.policy).scheme(None, session.model))
                    for line in look_lines(session, calls, fresh, basis, shown, header, restart, counts):
                        write_stdout(line + "\n")
                printed, shown = marks, basis
            if args.once:
                return EXIT_OK
            time.sleep(args.interval)
    except KeyboardInterrupt:
        write_stdout("\n")
        return EXIT_OK
