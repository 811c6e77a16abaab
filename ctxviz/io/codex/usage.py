"""What a Codex rollout says of its calls and its model: `session_meta` (the system prompt, the
CLI version, the model, the tools a client declared), `token_count` reports attached to the assistant turn of their call, and
the usage Codex 0.39 writes before the response it belongs to."""

from __future__ import annotations

from ...engine.session import Usage
from ..base import Fields
from ..responses import Draft, responses_usage
from .dynamic_tools import dynamic_tools
from .records import USAGE_BEFORE_ITEMS


class UsageReading:
    """`_Rollout`'s reading of usage and model (a mixin: the state is `_Rollout`'s)."""

    def _settle(self) -> None:
        """A report written before its response (Codex 0.39) goes to the response's first item."""
        latest = self.reader.latest_model
        if self.pending is not None and latest is not None and latest.usage is None:
            latest.usage, self.pending = self.pending, None

    def session_meta(self, p: Fields) -> None:
        self.metas += 1
        if self.metas > 1:
            self.src.tally("read the first `session_meta`; skipped {n} later one(s) (a resumed or forked session repeats them)")
            return
        self.version = p.str("cli_version")
        base = p.get("base_instructions")
        if isinstance(base, dict):
            self.system_prompt = p.child("base_instructions", base).str("text")
        elif isinstance(base, str):
            self.system_prompt = base
        if not self.system_prompt and isinstance(p.get("instructions"), str):
            self.system_prompt = p.str("instructions")
        if p.str("model"):
            self.models.append(p.str("model"))
        self.tools, self.meta_notes = dynamic_tools(p)

    def token_count(self, p: Fields) -> None:
        if p.has("info") or not p.has("input_tokens"):
            info = p.get("info")
            if info is None:
                self.skipped_events["token_count (rate limits only)"] += 1
                return
            i = p.child("info", info)
            if i.int("model_context_window"):
                self.context_window = i.int("model_context_window")
            total = i.get("total_token_usage")
            if total is not None and total == self.last_total:
                self.src.tally("skipped {n} `token_count` line(s) that {repeats|repeat} the previous report")
                return
            self.last_total = total
            last = i.get("last_token_usage")
            if not isinstance(last, dict):
                self.src.tally("skipped {n} `token_count` line(s) without `last_token_usage` (a total cannot be split by call)")
                self.reader.close()
                return
            u = i.child("last_token_usage", last)
        else:  # older files: the call's usage is the payload itself
            u = p
        cached = u.int("cached_input_tokens")
        usage = responses_usage(u, cached=cached)
        self.last_fill = usage.window_fill
        self.attach(usage)

    def attach(self, usage: Usage) -> None:
        if self.version.startswith(USAGE_BEFORE_ITEMS):
            if self.pending is not None:
                self.src.tally("{n} reported usage(s) (`token_count`) had no response after them before the next report "
                               "(an interrupted call) and were not attached")
            self.pending = usage  # the response's items come next: `line` attaches it to them
            self.reader.latest_model = None
            self.reader.close()
            return
        target: Draft | None = self.reader.latest_model
        if target is None or target.usage is not None:
            self.src.tally("{n} reported usage(s) (`token_count`) had no assistant turn of their own since the previous report "
                           "(a compaction or an interrupted call) and were not attached")
        else:
            target.usage = usage
        self.reader.latest_model = None
        self.reader.close()  # one call's output ends here
