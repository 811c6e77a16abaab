"""What the provider reported, beside what ctxviz replays.

Logs with usage (Claude Code, Codex `token_count`, Gemini `tokens`, OpenTelemetry, API responses)
say how many tokens each call really put in the window, normalised by the loaders to
input + cache read + cache write. Two facts follow that no replay can know: the last call's real
fill, and, when the log records no system prompt or tool definitions (or not all of them), roughly
how large the rest were (the first call's input minus what the log shows before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .growth import carried
from .provider_count import tools_tokens
from .session import Message, Session
from .tokenizers import TiktokenTokenizer, count_openai_chat

#: A gap smaller than this between the first call's input and the visible messages is estimation
#: noise, not an unseen prompt...
UNSEEN_THRESHOLD = 1000
#: ...unless it is at least this and more than all the log shows: the count of a few visible tokens
#: cannot be off by hundreds (a sub-agent's first call: 728 reported for 9 shown).
UNSEEN_SMALL = 100
#: The first call must come early for the estimate to be cheap and meaningful.
FIRST_CALL_LIMIT = 200


#: What the log lacks, by whether it records a system prompt or tools at all (`Reported.partial`).
LACKS = {False: "the log has no system prompt or tool definitions",
         True: "the log's system prompt and tool definitions are not all that was sent (an agent's own instructions or tool schemas)"}


def unseen_gap(gap: int, visible: int) -> int:
    """A call's reported input beyond what the log shows, rounded to hundreds, where it is more than
    estimation noise (0 where it is not)."""
    return round(gap, -2) if gap >= UNSEEN_THRESHOLD or (gap >= UNSEEN_SMALL and gap > visible) else 0


@dataclass(frozen=True)
class Reported:
    first_index: int
    first_window_fill: int
    last_index: int
    last_window_fill: int
    calls: int
    #: o200k count of what the log shows before the first call (its messages, system prompt, tools).
    visible_before_first: int
    #: About how many tokens of system prompt and tool definitions the log lacks (0: none missing).
    unseen: int
    #: A file that starts mid-conversation (its first message a tool result or a reply): the first
    #: call's unseen tokens hold the conversation before the file too, which a compaction covering
    #: the file's start summarised. What stays unseen after it, as the first call after its
    #: boundary reported it (`restart_call`); None: `unseen` (the file starts the conversation, or
    #: no call after a compaction tells).
    unseen_after_compaction: int | None = None
    restart_call: int | None = None
    #: The log records a system prompt or tool definitions, which `unseen` says fall short.
    partial: bool = False

    @property
    def unseen_after(self) -> int:
        """What a request after a recorded compaction sends that the log does not show."""
        return self.unseen if self.unseen_after_compaction is None else self.unseen_after_compaction

    def restarted_at(self, index: int) -> bool:
        """Whether the request ending with message `index` comes after the compaction of an excerpt
        that starts mid-conversation: from the one the first call after it answers (#restart_call,
        so the request ends at the message before it) on. That request went out with the summary in
        place of the conversation before the file."""
        return self.restart_call is not None and index + 1 >= self.restart_call

    def unseen_at(self, index: int) -> int:
        """What the request ending with message `index` holds that the log does not show: the later
        estimate once `restarted_at` (the bundled excerpt's: 164,100 unseen before, 32,400 after; its
        call answered by #3 was replayed at 167,805 against the 36,081 billed). The one rule the
        replays, the cache model, the real count, the exports and the app read."""
        return self.unseen_after if self.restarted_at(index) else self.unseen

    def through(self, session: Session, calls: np.ndarray) -> Reported:
        """These figures for `session`, whose calls with usage are `calls` (positions): its last call
        is the last one (a session grown from the one measured, or a replay's prefix of it)."""
        last = session.messages[int(calls[-1])]
        assert last.usage is not None
        return replace(self, last_index=last.index, last_window_fill=last.usage.window_fill, calls=len(calls))

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "first_call": {"message": self.first_index, "window_fill": self.first_window_fill},
                "last_call": {"message": self.last_index, "window_fill": self.last_window_fill},
                "visible_before_first_call": self.visible_before_first, "unseen_estimate": self.unseen,
                "unseen_after_compaction": self.unseen_after}

    def unseen_note(self) -> str:
        note = (f"{LACKS[self.partial]}; the first call (#{self.first_index}) reported {self.first_window_fill:,} "
                f"input tokens where the log shows about {self.visible_before_first:,}, which suggests about {self.unseen:,} tokens of them "
                "(counted in the real count)")
        if self.unseen_after_compaction is not None:
            note += (f"; the file starts mid-conversation, so that holds the conversation before it too, which the compaction summarised: "
                     f"the first call after it (#{self.restart_call}) suggests about {self.unseen_after_compaction:,} of system prompt and tools")
        return note


def seed_prefix(full: Session, prefix: Session) -> None:
    """Give a replay's prefix of `full` the figures `full` holds about what stays unseen after its
    compaction (`Reported.unseen_at`): a prefix ending on the request the first call after the
    compaction answers does not hold that call, yet the replay's reference plans it as the
    incremental replay does, with the file's estimate. Only for an excerpt that starts
    mid-conversation and compacts (`restart_call`); nothing is done for any other session."""
    found = reported_usage(full)
    if found is None or found.restart_call is None:
        return
    calls = np.flatnonzero(usage_mask(full)[: len(prefix.messages)])
    if not len(calls) or int(calls[0]) != found.first_index:
        return
    prefix.derived[("reported", "usage")] = (found.through(full, calls), prefix.system_prompt, prefix.tools)


def usage_mask(session: Session) -> np.ndarray:
    """Which messages carry a reported usage (a call's window fill): made for the new messages only
    of a session grown from one that has it (engine/growth.py). Read-only."""
    return carried(session, ("reported", "usage-mask"), lambda s: _mask(s.messages), _grown_mask)


def _mask(messages: Sequence[Message]) -> np.ndarray:
    mask = np.fromiter((m.usage is not None and m.usage.window_fill > 0 for m in messages), dtype=bool, count=len(messages))
    mask.flags.writeable = False
    return mask


def _grown_mask(session: Session, before: np.ndarray, shared: int) -> np.ndarray:
    mask = np.concatenate((before[:shared], _mask(session.messages[shared:])))
    mask.flags.writeable = False
    return mask


def reported_usage(session: Session) -> Reported | None:
    """The provider's figures for a session, or None when its log has no usage; kept per session,
    and carried over a session grown from one (the count of what the log shows before the first
    call is made once)."""
    return carried(session, ("reported", "usage"), _measured, _grown_measure)[0]


#: (the figures, the system prompt and tools they were measured with)
_Measured = tuple["Reported | None", str, tuple[Any, ...]]


def _measured(session: Session) -> _Measured:
    return _measure(session), session.system_prompt, session.tools


def _grown_measure(session: Session, before: _Measured, shared: int) -> _Measured | None:
    old, prompt, tools = before
    calls = np.flatnonzero(usage_mask(session))
    if not len(calls):
        return None, session.system_prompt, session.tools
    if old is None or int(calls[0]) != old.first_index or old.first_index >= shared or prompt != session.system_prompt or tools != session.tools:
        return None  # measured again whole
    if old.unseen and old.unseen_after_compaction is None and session.compactions and starts_mid_conversation(session):
        return None  # (an excerpt that compacts: a call after its compaction may have come)
    if old.restart_call is not None and old.restart_call >= shared:
        return None  # (the call after the compaction it read is not one this session shares: a replay's prefix of it)
    return old.through(session, calls), prompt, tools


def _measure(session: Session) -> Reported | None:
    found = np.flatnonzero(usage_mask(session))
    if not len(found):
        return None
    calls = [session.messages[int(found[0])], session.messages[int(found[-1])]]
    first, last = calls[0], calls[-1]
    visible = unseen = 0
    if first.index <= FIRST_CALL_LIMIT:
        tokenizer = TiktokenTokenizer("o200k_base")
        before = [m.to_openai() for m in session.messages[: first.index]]
        if session.system_prompt:
            before.insert(0, {"role": "system", "content": session.system_prompt})
        visible = count_openai_chat(before, tokenizer=tokenizer) if before else 0
        if session.tools:
            visible += tools_tokens(session, tokenizer)  # as the cache model prices them
        # Where the log records a system prompt or tools, they may still fall short of what was sent
        # (a Codex rollout keeps the user's instructions, never Codex's own nor its tool schemas:
        # 8,843 tokens of its first call's 9,488 in the bundled sample), so the gap counts alike.
        unseen = unseen_gap(first.usage.window_fill - visible, visible)  # type: ignore[union-attr]
    after, restart = _after_compaction(session, found, unseen)
    return Reported(first.index, first.usage.window_fill, last.index, last.usage.window_fill, len(found), visible, unseen,  # type: ignore[union-attr]
                    after, restart, bool(session.system_prompt or session.tools))


def starts_mid_conversation(session: Session) -> bool:
    """Whether the file's first message (past any system message) is a tool result or a reply: an
    excerpt, whose first request held messages the file does not."""
    first = next((m for m in session.messages if m.role != "system"), None)
    return first is not None and first.role in ("tool", "assistant")


def _after_compaction(session: Session, calls: np.ndarray, unseen: int) -> tuple[int | None, int | None]:
    """(`Reported.unseen_after_compaction`, `Reported.restart_call`): for a file that starts
    mid-conversation and compacts, the first call after the first compaction's boundary, less the
    summary in force and the messages it does not cover, as the first call's estimate is made."""
    if not unseen or not session.compactions or not session.summaries or not starts_mid_conversation(session):
        return None, None
    boundary = session.compactions[0].before_index
    after = [int(k) for k in calls if int(k) >= boundary]
    if not after or after[0] - boundary > FIRST_CALL_LIMIT:
        return None, None
    call = session.messages[after[0]]
    in_force = [s for s, start in zip(session.summaries, session.summary_start_turns, strict=True) if start <= call.index]
    if not in_force:
        return None, None
    summary = in_force[-1]
    covered = set(summary.covers)
    before = [{"role": "user", "content": summary.text}] + [m.to_openai() for m in session.messages[: call.index] if m.id not in covered]
    shown = count_openai_chat(before, tokenizer=TiktokenTokenizer("o200k_base"))
    return unseen_gap(call.usage.window_fill - shown, shown), call.index  # type: ignore[union-attr]
