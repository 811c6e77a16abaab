"""Fit Claude Code's effective auto-compact trigger from the counts its own logs record.

Every `compact_boundary` records the context's size when Claude Code compacted
(`compactMetadata.preTokens`) and whether it was automatic or `/compact` (`trigger`). Claude Code
auto-compacts once its count is at or over the trigger, checked before each request, so every
automatic preTokens is at or above the trigger: the smallest is the upper bound. Every check that
did *not* compact was below it: the count after each reported call (its input, cache reads and
writes, and output: what Claude Code counts from that usage) and a manual compaction's preTokens
(auto-compact had not fired). The largest of those is the lower bound. So the logs support the
interval (highest check that did not compact, lowest that did]; the fitted trigger is its upper
end, and the report says whether Claude Code's documented default lies in it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .catalog import find_model
from .policies.claude_code.auto_compact import AutoCompactSettings, threshold
from .session import Session
from .wording import counted


@dataclass(frozen=True)
class Observation:
    """One compaction a log records."""

    source: str
    model: str
    trigger: str  # "auto" or "manual" (as the log spells it)
    pre_tokens: int
    version: str
    before_index: int


@dataclass(frozen=True)
class ModelFit:
    """The automatic compactions of one model."""

    model: str
    window: int | None
    pre_tokens: tuple[int, ...]
    documented_trigger: int | None  # Claude Code's default for this model (claude-code policy defaults)
    #: Counts at checks that did not compact (after each reported call; manual compactions' preTokens).
    not_compacted: tuple[int, ...] = ()

    @property
    def lower(self) -> int | None:
        """The highest count that did not compact, below the lowest that did (None: no such check)."""
        below = [c for c in self.not_compacted if c < self.trigger]
        return max(below) if below else None

    @property
    def contradicted(self) -> tuple[int, ...]:
        """Checks that did not compact at or above a count that did: one trigger cannot explain them."""
        return tuple(sorted(c for c in self.not_compacted if c >= self.trigger))

    @property
    def documented_inside(self) -> bool | None:
        if self.documented_trigger is None:
            return None
        return (self.lower is None or self.lower < self.documented_trigger) and self.documented_trigger <= self.trigger

    def interval_text(self) -> str:
        low = f"{self.lower:,}" if self.lower is not None else "-"
        return f"({low}, {self.trigger:,}]"

    @property
    def n(self) -> int:
        return len(self.pre_tokens)

    @property
    def trigger(self) -> int:
        """The smallest preTokens: Claude Code fired at every one, so its trigger is at most this."""
        return min(self.pre_tokens)

    @property
    def median(self) -> float:
        return statistics.median(self.pre_tokens)

    @property
    def buffer(self) -> int | None:
        """window - trigger: how far below the window Claude Code compacts."""
        return None if self.window is None else self.window - self.trigger

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "n": self.n, "trigger": self.trigger, "median": self.median, "min": min(self.pre_tokens),
                "max": max(self.pre_tokens), "window": self.window, "buffer": self.buffer,
                "documented_trigger": self.documented_trigger, "pre_tokens": list(self.pre_tokens),
                "interval": {"above": self.lower, "at_most": self.trigger, "checks_not_compacted": len(self.not_compacted),
                             "documented_inside": self.documented_inside, "contradicting_checks": list(self.contradicted)},
                "set": f"calibrated_trigger={self.trigger}"}


def observations(session: Session) -> list[Observation]:
    return [Observation(session.source, session.model, c.trigger, c.pre_tokens, session.format_version, c.before_index)
            for c in session.compactions if c.pre_tokens > 0]


def checks_not_compacted(session: Session) -> list[int]:
    """Claude Code's count at checks that did not auto-compact: after each reported call (input,
    cache reads and writes, and output: tokenCountWithEstimation's figure from that usage), and
    each manual compaction's preTokens."""
    counts = [m.usage.window_fill + m.usage.output_tokens for m in session.messages
              if m.role == "assistant" and m.usage is not None and m.usage.window_fill > 0]
    return counts + [c.pre_tokens for c in session.compactions if c.trigger == "manual" and c.pre_tokens > 0]


def _window(model: str, sessions: Sequence[Session]) -> int | None:
    entry = find_model(model)
    if entry is not None:
        return entry.context_window
    reported = next((s.context_window for s in sessions if s.model == model and s.context_window), 0)
    return reported or None


def fit(sessions: Sequence[Session]) -> tuple[list[ModelFit], list[Observation]]:
    """Per model, the fit of its automatic compactions; and every observation (manual ones too)."""
    seen = [o for s in sessions for o in observations(s)]
    by_model: dict[str, list[int]] = {}
    for o in seen:
        if o.trigger == "auto":
            by_model.setdefault(o.model, []).append(o.pre_tokens)
    quiet: dict[str, list[int]] = {}
    for s in sessions:
        if s.format == "claude-code":
            quiet.setdefault(s.model, []).extend(checks_not_compacted(s))
    fits = []
    for model, values in sorted(by_model.items()):
        window = _window(model, sessions)
        documented = threshold(model, AutoCompactSettings(context_window=window)).trigger if window else None
        fits.append(ModelFit(model or "(unknown model)", window, tuple(values), documented, tuple(quiet.get(model, ()))))
    return fits, seen


def report_text(fits: list[ModelFit], seen: list[Observation], files: int) -> str:
    manual = sum(1 for o in seen if o.trigger != "auto")
    lines = [f"{counted(files, 'log')}: {counted(len(seen), 'compaction')} recorded, {len(seen) - manual:,} automatic, {manual:,} manual (/compact: counted only as checks that did not auto-compact)"]
    if not fits:
        lines.append("no automatic compaction in these logs: nothing to calibrate (Claude Code records one as a "
                     "compact_boundary with compactMetadata.trigger \"auto\" when a session reaches its trigger)")
        return "\n".join(lines) + "\n"
    for f in fits:
        window = f"{f.window:,}" if f.window else "unknown (not in the catalogue: pass context_window)"
        lines += [
            "",
            f"{f.model}: {counted(f.n, 'automatic compaction')}",
            f"  preTokens   median {f.median:,.0f}, min {min(f.pre_tokens):,}, max {max(f.pre_tokens):,}",
            f"  trigger     {f.trigger:,} (the smallest preTokens: Claude Code compacted at or above its trigger every time)",
            f"  interval    {f.interval_text()}: " + (f"the logs show a check at {f.lower:,} tokens that did not compact and one at {f.trigger:,} that did"
                                                      if f.lower is not None else
                                                      f"no check below {f.trigger:,} that did not compact; the trigger is at most {f.trigger:,}")
            + f" ({counted(len(f.not_compacted), 'check')} that did not compact in these logs)",
            f"  window      {window}",
        ]
        if f.contradicted:
            lines.append(f"  note        {counted(len(f.contradicted), 'check')} did not compact at or above {f.trigger:,} (up to {max(f.contradicted):,}): "
                         "one trigger cannot explain these logs (a different version or setting?)")
        if f.buffer is not None:
            lines.append(f"  buffer      {f.buffer:,} (window - trigger)")
        if f.documented_trigger is not None:
            gap = f.trigger - f.documented_trigger
            inside = "inside" if f.documented_inside else "outside"
            lines.append(f"  documented  {f.documented_trigger:,} (window - {f.window - f.documented_trigger:,}, Claude Code's default): "
                         f"{inside} the interval the logs support {f.interval_text()}; the interval's top is {abs(gap):,} "
                         f"{'above' if gap >= 0 else 'below'} it")
        lines.append(f"  replay with --policy claude-code --set calibrated_trigger={f.trigger}")
    return "\n".join(lines) + "\n"


def report_json(fits: list[ModelFit], seen: list[Observation], files: int) -> dict[str, Any]:
    return {"files": files, "compactions": [o.__dict__ for o in seen], "models": [f.to_json() for f in fits],
            "automatic": sum(1 for o in seen if o.trigger == "auto")}
