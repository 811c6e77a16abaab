"""What a plan's context holds beyond the session's messages, said truthfully in an export's story.

An export of Gemini CLI's compression said "2 summaries added" for one summary and the model's
acknowledgement turn, wrote an empty system message for the system prompt the log does not record,
and carried ctxviz's offline stand-in `<state_snapshot>` as if the agent had written it. This
module tells those apart, so the CLI's story line can say which is which (the markdown export's
headings name each entry's source with engine/sources.py `source_label`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.plan import Plan
from ..engine.session import Session
from ..engine.sources import entry_text, plan_sources
from ..engine.wording import counted


def is_empty_system(entry: Mapping[str, Any]) -> bool:
    """The system entry of a policy whose log does not record the prompt (Gemini CLI's system
    instruction): an empty message in a request is noise, so exports leave it out and say why."""
    return entry.get("role") == "system" and not entry_text(entry).strip()


def policy_stand_in(plan: Plan) -> str:
    """The policy's description of its offline stand-in summariser, or "" (none, or a plan made by
    hand or by a plugin not loaded)."""
    from ..engine.policies import get_policy

    try:
        return get_policy(plan.policy).stand_in
    except Exception:
        return ""


def stand_in_positions(plan: Plan, session: Session | None) -> frozenset[int]:
    """The positions in `plan.context` of the summaries ctxviz's stand-in wrote: a summary the
    policy writes now (engine/sources.py: a summary entry naming no recorded one), where the
    framework would call its model."""
    if session is None or not policy_stand_in(plan):  # (without the session, a recorded summary cannot be told from a new one)
        return frozenset()
    sources = plan_sources(plan, session)["context_sources"]
    return frozenset(k for k, source in enumerate(sources) if source["kind"] == "summary" and source.get("summary") is None)


@dataclass(frozen=True)
class Added:
    """The context's entries that come from no session message, by what they are."""

    #: Non-empty system entries (the system prompt, with what the policy puts in it).
    prompts: int
    #: An empty system entry: the log does not record the prompt.
    empty_prompts: int
    #: Summaries the file records (or a stand-in-less policy writes).
    summaries: int
    #: Summaries ctxviz's offline stand-in wrote.
    stand_ins: int
    #: The model turn the policy adds after a summary (Gemini CLI's "Got it. Thanks for the additional context!"),
    #: and other turns it writes (AutoGen's "Skipped 105 messages.").
    acknowledgements: int
    turns: int
    #: The policy's description of its stand-in ("offline extractive snapshot ...").
    stand_in: str = ""

    def words(self) -> str:
        """"3 summaries added", "1 summary (ctxviz's offline stand-in, not the agent's own) and 1
        acknowledgement turn added", or "" when nothing but the system prompt was added."""
        parts = []
        if self.summaries:
            parts.append(counted(self.summaries, "summary", "summaries"))
        if self.stand_ins:
            parts.append(counted(self.stand_ins, "summary", "summaries") + " (ctxviz's offline stand-in, not the agent's own)")
        if self.acknowledgements:
            parts.append(counted(self.acknowledgements, "acknowledgement turn"))
        if self.turns:
            parts.append(counted(self.turns, "placeholder turn"))
        if not parts:
            return ""
        return (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]) + " added"


def added(plan: Plan, session: Session) -> Added:
    """The context's entries that come from no session message, classified as engine/sources.py
    `plan_sources` classifies them (the Context tab names them the same way)."""
    sources = plan_sources(plan, session)["context_sources"]
    stand_ins = stand_in_positions(plan, session)
    prompts = empty = summaries = acks = turns = 0
    for k, (entry, source) in enumerate(zip(plan.context, sources, strict=False)):
        kind = source["kind"]
        if kind == "message" or k in stand_ins:
            continue
        if kind == "system_prompt":
            if is_empty_system(entry):
                empty += 1
            else:
                prompts += 1
        elif kind == "summary":
            summaries += 1
        elif entry.get("role") == "assistant":
            acks += 1
        else:
            turns += 1
    return Added(prompts, empty, summaries, len(stand_ins), acks, turns, policy_stand_in(plan) if stand_ins else "")
