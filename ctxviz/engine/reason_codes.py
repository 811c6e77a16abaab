"""Reason codes: why a message was sent or not, as a word a program can rely on.

A plan's sentence ("kept: 145 tokens fit in the 830 left of the 20,800-token history budget") is
for people and is built by the policy; the code (`fits`) is what the app's reason column, its
filters, `plan --json` (`reason_code`) and grouping by reason read. Every code belongs to "sent" or
"not sent", so a column built from codes can never put a kept-sounding word on a row that is not
sent (a regular expression over the sentences did: "fits" on 216 dropped rows).

Each policy declares the codes it uses (`Policy.reason_codes`); a message whose policy set none
gets the generic code of its decision (`kept`, `dropped`, `summarised`, `truncated`, `replaced`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReasonCode:
    code: str
    #: Whether a message with this code reaches the model (whole, cut, or with a placeholder).
    sent: bool
    #: A few words for a table column at 1280 px.
    label: str
    #: One sentence a user can act on (the header's and the filter's hover text).
    meaning: str


_CODES = (
    # -- sent ------------------------------------------------------------------------------------
    ReasonCode("kept", True, "kept", "Sent whole."),
    ReasonCode("system_prompt", True, "system prompt", "Part of the system prompt, which every request sends."),
    ReasonCode("fresh_tail", True, "fresh tail", "Among the newest messages the policy always sends (its protected tail)."),
    ReasonCode("new_message", True, "new message", "The message the request is being made for."),
    ReasonCode("fits", True, "fits", "Fits in what the budget leaves."),
    ReasonCode("in_window", True, "in window", "Inside the policy's window of the newest messages."),
    ReasonCode("head", True, "head", "Among the first messages the policy always keeps."),
    ReasonCode("within_cap", True, "within cap", "Its category is within its own maximum."),
    ReasonCode("since_compaction", True, "since compaction", "Written after the last compaction, which keeps it."),
    ReasonCode("retained", True, "retained", "Carried into the compacted history (a user message the compaction keeps)."),
    ReasonCode("pinned", True, "pinned", "Sent because you pinned it, whatever the policy decides."),
    ReasonCode("truncated", True, "cut to fit", "Sent cut short: the tokens sent are fewer than its own."),
    ReasonCode("replaced", True, "placeholder", "Sent with part of it (an image, a tool result) replaced by a placeholder."),
    ReasonCode("cleared", True, "cleared", "Sent with its tool result cleared (a short placeholder instead of the output)."),
    # -- not sent --------------------------------------------------------------------------------
    ReasonCode("dropped", False, "dropped", "Not sent."),
    ReasonCode("after_cut", False, "after cut", "Beyond the first message that did not fit: the policy stops there."),
    ReasonCode("missed", False, "missed", "Too large for what the budget left (the table says by how much)."),
    ReasonCode("over_cap", False, "over cap", "Its category is over its own maximum; the oldest go first."),
    ReasonCode("outside_window", False, "outside window", "Older than the policy's window of the newest messages."),
    ReasonCode("summarised", False, "summarised", "Replaced by a summary that is sent in its place."),
    ReasonCode("before_compaction", False, "before compaction", "Written before the last compaction, whose summary replaces it."),
    ReasonCode("start_rule", False, "start rule", "Left out so the context starts (or ends) on the kind of message the framework requires."),
    ReasonCode("unpaired", False, "pair-safe", "Left out with its tool call or result, which is not sent (pair safety)."),
    ReasonCode("pushed_out", False, "pushed out by a pin", "Left out to make room for a pinned message."),
    ReasonCode("not_in_file", False, "not in the request", "Not part of the request the file records."),
    # -- codes the framework policies added (both sets of helpers' policies) ------------------------
    ReasonCode("under_trigger", True, "under trigger", "Sent whole: the context is under the point where the policy starts to trim, clear or summarise."),
    ReasonCode("initial_context", True, "initial context", "Instructions and environment the agent injects at the start and writes again after a compaction."),
    ReasonCode("excluded_tool", True, "excluded tool", "Its tool is on the policy's exclude list, so its result is never cleared."),
    ReasonCode("thinking_cleared", True, "thinking cleared", "Sent without its thinking blocks, which the policy clears from older assistant turns."),
    ReasonCode("inputs_cleared", True, "inputs cleared", "Sent with the arguments of its tool call(s) cleared to {}."),
    ReasonCode("low_relevance", False, "low relevance", "Its relevance score is under the policy's threshold, so it is forgotten."),
    ReasonCode("popped_middle", False, "popped (middle)", "Removed from the middle of the context while it was over the limit; the oldest and newest go last."),
    ReasonCode("overflow", False, "overflow trim", "Removed, oldest first, because the request overflowed the context window (or reached the proactive-compression threshold)."),
)

CODES: dict[str, ReasonCode] = {c.code: c for c in _CODES}
assert len(CODES) == len(_CODES), "a reason code is defined twice"

#: The code a message gets when its policy set none: its decision's.
GENERIC = {"kept": "kept", "dropped": "dropped", "summarized": "summarised", "truncated": "truncated", "replaced": "replaced"}


def code_of(code: str, decision: str) -> ReasonCode:
    """The message's reason code: the policy's, else its decision's generic one."""
    return CODES.get(code) or CODES[GENERIC[decision]]


def label(code: str, decision: str) -> str:
    return code_of(code, decision).label
