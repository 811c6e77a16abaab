"""The pieces of missy's build_messages that both of ctxviz's plans use (`context_manager.plan_records`
step by step, `context_manager_columns` in columns) and its replayer: the zones, the summary's
wording, the system prompt's enrichment and what missy's estimator cannot see."""

from __future__ import annotations

import weakref
from typing import Any, Protocol

from ...growth import same_prefix
from ...prefix_columns import prefix_source
from ...session import TEXT_PARTS, ImagePart, Message, Session, Summary, ToolCallPart
from ...wording import noun


class Budget(Protocol):
    """What the plans read of `context_manager.TokenBudget` (named here so the modules import one way)."""

    total: int
    system_reserve: int
    tool_definitions_reserve: int
    fresh_tail_count: int
    trim_protected_tail: bool

    @property
    def memory_budget(self) -> int: ...

    @property
    def learnings_budget(self) -> int: ...

    @property
    def history_budget(self) -> int: ...

ZONES = ("system", "evictable", "fresh_tail", "new_message")

_invisible: dict[int, tuple[weakref.ref[Session], tuple[str, ...]]] = {}
#: What makes a message's OpenAI content not None (Message.openai_content).
CONTENT_PARTS = (*TEXT_PARTS, ImagePart)


def invisible_call_notes(session: Session) -> tuple[str, ...]:
    """What missy's estimator cannot see: it measures `str(content)` only, so a message's tool calls
    cost nothing and a tool-call-only message is the four characters `None`. Cached per session,
    and counted once for the prefixes of one session (`_prefix_counts`)."""
    found = _invisible.get(id(session))
    if found is not None and found[0]() is session:
        return found[1]
    with_calls, only_calls, characters = _prefix_counts(*prefix_source(session))
    notes: tuple[str, ...] = ()
    if with_calls:
        notes = (f"missy's estimator counts only each message's content: the tool calls of {with_calls:,} {noun(with_calls, 'message')} "
                 f"({characters:,} characters of names and arguments) cost nothing to it, and {only_calls:,} tool-call-only "
                 f"{noun(only_calls, 'message')} {'counts' if only_calls == 1 else 'count'} as the text 'None'",)
    key = id(session)
    _invisible[key] = (weakref.ref(session, lambda _ref, key=key: _invisible.pop(key, None)), notes)
    return notes


#: The messages last counted by `_prefix_counts` and, for each length k, the counts of their first k:
#: [messages, [(with calls, only calls, characters) for k = 0..len]]. One entry, so it holds at most
#: one session's message tuple (the one last planned) alive.
_running: list[Any] = []


def _prefix_counts(messages: tuple[Message, ...], upto: int | None = None) -> tuple[int, int, int]:
    """(messages with tool calls, tool-call-only messages, characters of the calls' names and
    arguments) among the assistant `messages`. A replay's retention plans 30 prefixes of one long
    session (`Timeline.plan_at`: each a new Session over a slice of the same messages), and each
    walked its parts again (10,000 messages: about 40 ms); the messages counted last are kept with
    their running counts, so a prefix of them is answered at once and any other message tuple is
    counted from the first message it does not share with them (`same_prefix`: compared in C).
    `upto`: the counts of `messages[:upto]` only (a replay's prefix names the whole session's
    messages, `prefix_source`: comparing each prefix with the last grew with the session)."""
    upto = len(messages) if upto is None else upto
    base, counts = _running if _running else ((), [(0, 0, 0)])
    shared = len(base) if base is messages else same_prefix(base, messages)
    if shared >= upto:
        return counts[upto]
    counts = counts[:shared + 1]  # extended in a copy: another thread may be reading the kept one
    with_calls, only_calls, characters = counts[-1]
    # One pass over the parts, nothing built: a message with calls has no content (openai_content()
    # is None) when it has no text and no image.
    for m in messages[shared:]:
        if m.role == "assistant":
            calls = content = False
            for p in m.parts:
                if isinstance(p, ToolCallPart):
                    calls = True
                    characters += len(p.name) + len(p.arguments)
                elif isinstance(p, CONTENT_PARTS):
                    content = True
            if calls:
                with_calls += 1
                only_calls += not content
        counts.append((with_calls, only_calls, characters))
    _running[:] = [messages, counts]
    return counts[upto]


def format_summary(summary: Summary) -> str:
    """missy's _format_summary: em dash header; the time range only when both ends are set."""
    time = ""
    if summary.time_range_start and summary.time_range_end:
        time = f", covers {summary.time_range_start} to {summary.time_range_end}"
    return f"[Conversation Summary \u2014 depth {summary.depth}, {summary.messages_covered} messages{time}]\n{summary.text}"


def enrich_system_prompt(system: str, memory: tuple[str, ...], learnings: tuple[str, ...], budget: Budget, count) -> tuple[str, int, int, list[str]]:
    """Append `## Relevant Memory` and `## Past Learnings`; returns (prompt, memory tokens, learnings tokens, notes)."""
    notes: list[str] = []
    enriched = system
    memory_tokens = learnings_tokens = 0
    if memory:
        memory_text = "\n".join(memory)
        if count(memory_text) > budget.memory_budget:
            # A hard character cut at budget x 4, not a token-aware trim (missy's behaviour).
            memory_text = memory_text[: budget.memory_budget * 4]
            notes.append(f"memory cut to its first {budget.memory_budget * 4:,} characters to fit the {budget.memory_budget:,}-token memory budget")
        enriched += f"\n\n## Relevant Memory\n{memory_text}"
        memory_tokens = count(memory_text)
    if learnings:
        learnings_text = "\n".join(f"- {item}" for item in learnings[:5])
        tokens = count(learnings_text)
        if len(learnings) > 5:
            notes.append(f"only the first 5 of {len(learnings)} learnings are considered")
        if tokens <= budget.learnings_budget:
            enriched += f"\n\n## Past Learnings\n{learnings_text}"
            learnings_tokens = tokens
        else:
            # All-or-nothing: the block is dropped silently in missy.
            notes.append(f"learnings left out: {tokens:,} tokens exceed the {budget.learnings_budget:,}-token learnings budget")
    return enriched, memory_tokens, learnings_tokens, notes


def fresh_tail_reason(n: int, used: int, history_budget: int, tail_over: bool, notes: list[str]) -> str:
    """Why the fresh tail's messages are kept, with the note that the tail alone is over the
    history budget when it is (missy sends it anyway): one wording for both plans."""
    reason = f"kept: in the fresh tail (the last {n} messages are always included)"
    if tail_over:
        reason += f", even though the tail alone takes {used:,} tokens of the {history_budget:,}-token history budget"
        notes.append(f"the fresh tail and new message alone take {used:,} tokens, over the {history_budget:,}-token history budget; missy sends them anyway")
    return reason
