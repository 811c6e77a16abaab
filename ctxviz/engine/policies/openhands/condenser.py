"""OpenHands SDK's LLMSummarizingCondenser (openhands-sdk 1.58.0,
openhands/sdk/context/condenser/llm_summarizing_condenser.py, with the View and its properties in
openhands/sdk/context/view/).

OpenHands condenses *events*, not messages: the system prompt is one event, each user or agent
message one, each tool call one ActionEvent (the calls of one LLM response form a batch sharing its
`llm_response_id`), each tool result one ObservationEvent. The View drops what the APIs would
refuse (a call without its observation, an observation without its call, a duplicate observation,
the rest of a partly missing batch or thinking tool loop), then:

- over `max_size` events (Reason.EVENTS; a soft requirement), it forgets the events from
  `keep_first` (never the system prompt) up to the boundary that leaves
  `max_size // 2 - keep_first - 1` events at the tail, both ends moved forward to the next
  *manipulation index* (not inside a batch, between a call and its observation, or inside a tool
  loop that began with thinking blocks);
- over the token limit (Reason.TOKENS: the smaller of `max_tokens` and the model's input limit;
  hard), it keeps the longest tail that removes enough tokens to get under half the limit;
- the forgotten events become one CondensationSummaryEvent, sent as a plain *user* message holding
  the summary text, placed where the forgotten span began; fewer than `minimum_progress` of the
  view forgotten, or no span at all, means no condensation (the view is sent as it is).
- read back from the log (`View.from_events`), a summary goes one event earlier for every event the
  view had left out ahead of its span, sometimes inside the head, where the next condensation keeps
  it (log.py). ctxviz plans the view as the SDK reads it from the log, as a resumed
  conversation does; a running agent's incremental view enforces the properties only when it is
  rebuilt (a resume, or a provider refusing the history).

ctxviz's summary text is an offline stand-in. The token reason counts with ctxviz's chat-format
count, not litellm's `token_counter`, and is not part of the golden cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ...catalog import find_model
from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import Message, Session, Summary
from ...tokenizers import Tokenizer, count_openai_chat
from ..base import Policy, params_dict
from ..common import base_system_prompt
from .columns import DEFAULT_INPUT_TOKENS, STAND_IN, ZONES, log_of, plan_columns
from .log import LATEST, placement_notes
from .summary_input import shown_again, shown_of
from .view import Event, LeftOut, _result_id, condensation, enforce_properties, events_of

__all__ = ["DEFAULT_INPUT_TOKENS", "POLICY", "CondenserParams", "Event", "_result_id", "condensation", "events_of", "input_limit"]

FRAMEWORK = "OpenHands"
FRAMEWORK_VERSION = "openhands-sdk 1.58.0"


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


@dataclass(frozen=True)
class CondenserParams:
    """LLMSummarizingCondenser's fields (class defaults; the SDK's default agent uses max_size=80, keep_first=4)."""

    max_size: int = field(default=240, metadata=_help(unit="messages", text="Events in the view that trigger a condensation (the view is cut to about half)", min=1))
    keep_first: int = field(default=2, metadata=_help(unit="messages", text="Events at the start never forgotten (the system prompt is one)", min=0))
    max_tokens: int | None = field(default=None, metadata=_help(unit="tokens", text="Token count that triggers a condensation (none: only the model's input limit)", min=1, step=1000))
    max_input_tokens: int | None = field(default=None, metadata=_help("The agent LLM's effective_max_input_tokens (default: ctxviz's model catalogue; 0: none)", min=0, step=1000))
    minimum_progress: float = field(default=0.1, metadata=_help("Smallest share of the view a condensation must forget", min=0.01, max=0.99, step=0.05))

    def __post_init__(self) -> None:
        if self.max_size <= 0:
            raise ValueError(f"max_size must be > 0, got {self.max_size}")
        if self.keep_first < 0:
            raise ValueError(f"keep_first must be >= 0, got {self.keep_first}")
        if self.max_size // 2 - self.keep_first - 1 <= 0:
            raise ValueError(f"keep_first must be less than max_size // 2 to leave room for condensation "
                             f"(keep_first={self.keep_first}, max_size={self.max_size})")
        if not 0 < self.minimum_progress < 1:
            raise ValueError(f"minimum_progress must be between 0 and 1 (exclusive), got {self.minimum_progress}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 (or none), got {self.max_tokens}")
        if self.max_input_tokens is not None and self.max_input_tokens < 0:
            raise ValueError(f"max_input_tokens must be >= 0 (or none), got {self.max_input_tokens}")


def measure_message(message: Message, tokenizer: Tokenizer) -> int:
    """A message's share of an OpenAI chat request (ctxviz's stand-in for litellm's token_counter)."""
    return count_openai_chat([message.to_openai()], model="gpt-4o", tokenizer=tokenizer) - 3


def input_limit(session: Session, params: CondenserParams) -> int | None:
    if params.max_input_tokens is not None:
        return params.max_input_tokens or None
    entry = find_model(session.model)
    return entry.context_window if entry is not None else None


def plan(session: Session, params: CondenserParams, counts: TokenCounts) -> Plan:
    """The plan in columns (columns.py): the View of a log is derived once and kept."""
    return plan_columns(session, params, counts, input_limit(session, params), params_dict(params))


def plan_records(session: Session, params: CondenserParams, counts: TokenCounts) -> Plan:
    """get_condensation step by step, a record per message: the reference the column plan is
    checked against (tests/test_openhands_columns.py)."""
    tokens = counts.message_tokens
    system_messages = [m for m in session.messages if m.role == "system"]
    prompt = base_system_prompt(session, system_messages)
    prompt_tokens = counts.text(prompt) if prompt else 0
    limit_in = input_limit(session, params)
    limits = [x for x in (params.max_tokens, limit_in) if x is not None]
    token_limit = min(limits) if limits else None
    summary = session.summaries[-1] if session.summaries else None
    all_events = events_of(session, set())
    log = log_of(session, all_events, params, counts, prompt_tokens, token_limit)
    summary_plans: list[SummaryPlan] = []
    notes: list[str] = []
    for i, s in enumerate(session.summaries[:-1]):
        summary_plans.append(SummaryPlan(i, 0, Decision.DROPPED, "dropped: OpenHands' latest summary forgot this one with its events", s.text))
    view, left_out = enforce_properties(log.events, log.marked)
    summary_text = summary.text if summary is not None else ""
    summary_tokens = {name: counts.text(text) for name, text in log.texts.items()}

    def event_tokens(e: Event) -> int:
        if e.kind == "system":
            return prompt_tokens
        if e.kind == "summary":
            return summary_tokens[e.id]
        assert e.message is not None
        return tokens[e.message] if e.kind != "action" or e.id.endswith("#0") else 0

    per_event = [event_tokens(e) for e in view]
    outcome = condensation(view, params, per_event, token_limit)
    forgotten_messages: set[int] = set()
    new_ids: tuple[str, ...] = ()
    new_text = ""
    shown: dict[str, Any] = {}
    why = ""
    if outcome is not None:
        why = outcome.why(len(view), params.max_size, sum(per_event), token_limit)
        if outcome.error:
            notes.append(outcome.cannot_note(why))
        else:
            gone = [view[i] for i in outcome.forgotten]
            forgotten_messages = {e.message for e in gone if e.message is not None}
            folded = {e.id for e in gone if e.kind == "summary"}
            all_covered = sorted(forgotten_messages.union(*(log.covers[name] for name in folded)))
            new_ids = tuple(session.messages[i].id for i in all_covered)
            new_text, shown = shown_of(gone, session.messages, log.texts)
            forgotten = set(outcome.forgotten)  # once: a set per event made a plan quadratic
            remaining = [e for k, e in enumerate(view) if k not in forgotten]
            remaining.insert(outcome.start, Event("new-summary", "summary", None))
            summary_tokens["new-summary"] = counts.text(new_text)
            per_event = [event_tokens(e) for e in remaining]
            view = remaining
            if summary is not None:
                state = ((Decision.SUMMARIZED, "summarized: forgotten with the events the new summary covers") if LATEST in folded
                         else (Decision.KEPT, "kept: in the head the condensation keeps"))
                summary_plans.append(SummaryPlan(len(session.summaries) - 1, counts.text(summary_text), state[0], state[1], summary_text))
            summary_plans.append(SummaryPlan(len(session.summaries), counts.text(new_text), Decision.KEPT,
                                             f"kept: the CondensationSummaryEvent of {len(outcome.forgotten)} forgotten events, a user message at event {outcome.start} ({STAND_IN})", new_text))
            notes.append(f"{why}: one condensation forgets events {outcome.start}-{outcome.start + len(outcome.forgotten) - 1} and keeps "
                         f"{outcome.events_from_tail} from the tail; the summary text is ctxviz's offline stand-in")
    if summary is not None and not any(sp.index == len(session.summaries) - 1 for sp in summary_plans):
        summary_plans.append(SummaryPlan(len(session.summaries) - 1, counts.text(summary_text), Decision.KEPT,
                                         "kept: OpenHands sends its summary as a user message where the forgotten events were", summary_text))
    notes += placement_notes(log, view)
    if "tokens" in (outcome.reasons if outcome else ()) or token_limit is not None:
        notes.append(f"token limit {token_limit:,} counted with ctxviz's chat-format count, not litellm's token_counter" if token_limit else "")
    notes = [n for n in notes if n]

    in_view = {e.message for e in view if e.message is not None}
    head_end = outcome.start if outcome is not None and not outcome.error else params.keep_first
    position = {e.message: k for k, e in enumerate(view) if e.message is not None}
    message_left_out: dict[int, LeftOut] = {}
    for e in all_events:
        if e.id in left_out and e.message is not None:
            message_left_out[e.message] = left_out[e.id]
    decisions: list[MessagePlan] = []
    for m in session.messages:
        t = tokens[m.index]
        if m.role == "system":
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "system", "kept: part of the SystemPromptEvent, which OpenHands never forgets", t,
                                         "system_prompt"))
        elif m.index in forgotten_messages:
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.SUMMARIZED, "forgotten",
                                         f"summarized: {why}; OpenHands forgets the events after the first {head_end} and keeps the newest "
                                         f"{outcome.events_from_tail if outcome else 0} (max_size // 2 - keep_first - 1), moved to safe boundaries", 0,
                                         "summarised"))
        elif m.index in log.forgotten:
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.SUMMARIZED, "forgotten", "summarized: forgotten by an earlier condensation; its summary is sent in its place", 0,
                                         "summarised"))
        elif m.index in message_left_out and m.index not in in_view:
            left = message_left_out[m.index]
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.DROPPED, "left_out", f"dropped: the View leaves out {left.why}", 0, left.code))
        else:
            k = position[m.index]
            zone = "head" if k < head_end else "tail"
            reason = (f"kept: one of the first keep_first={params.keep_first} events" if zone == "head" and k < params.keep_first
                      else "kept: before the first safe boundary after keep_first" if zone == "head"
                      else "kept: in the tail the condensation keeps" if forgotten_messages
                      else f"kept: the view ({len(view)} events) is within max_size={params.max_size}" + (f" and the token limit {token_limit:,}" if token_limit else ""))
            # The head and the tail a condensation keeps; with none, under its trigger (or over it, where it could not condense).
            code = ("head" if zone == "head" else "fresh_tail" if forgotten_messages else "under_trigger" if outcome is None else "kept")
            decisions.append(MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, zone, reason, t, code))

    context: list[dict[str, Any]] = []
    context_index: list[int | None] = []
    for e in view:
        if e.kind == "system":
            context.append({"role": "system", "content": prompt})
            context_index.append(None)
        elif e.kind == "summary":
            context.append({"role": "user", "content": new_text if e.id == "new-summary" else log.texts[e.id]})
            context_index.append(None)
        elif e.message is not None and (e.kind != "action" or e.id.endswith("#0")):
            context.append(session.messages[e.message].to_openai())
            context_index.append(e.message)
    if any(e.kind == "summary" for e in view):
        notes.append("OpenHands merges the summary into a plain user message that follows it (events_to_messages); ctxviz lists them apart")
    used = sum(per_event)
    summary_used = sum(t for e, t in zip(view, per_event, strict=True) if e.kind == "summary")
    budget = token_limit if token_limit is not None else DEFAULT_INPUT_TOKENS
    system_used = prompt_tokens if any(e.kind == "system" for e in view) else 0
    allocation = {"system": min(prompt_tokens, budget), "events": budget - min(prompt_tokens, budget)}
    usage = {"system": system_used, "events": used - system_used}  # the summary is one of the events
    sent = [d for d in decisions if d.sent]
    totals = Totals(budget=budget, used=used, kept=sum(d.tokens for d in sent), dropped=sum(d.tokens for d in decisions if not d.sent),
                    fits=used <= budget, kept_messages=len(sent), dropped_messages=len(decisions) - len(sent))
    return Plan(
        policy=POLICY.name, params={**params_dict(params), "max_input_tokens": limit_in}, tokenizer=counts.scheme.label,
        allocation=allocation, usage=usage, system_prompt=prompt, messages=tuple(decisions), context=tuple(context),
        context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans), zones=ZONES, notes=tuple(notes),
        extra={"view_events": len(view), "events_before": len(view) if outcome is None or outcome.error else len(view) + len(outcome.forgotten) - 1,
               "condensed": bool(new_ids), "summarized_ids": list(new_ids), "reduce_reason": why,
               "forgotten_events": len(outcome.forgotten) if outcome is not None and not outcome.error else 0,
               "summary_shown": shown,
               "token_limit": token_limit, "left_out_events": len(left_out), "summary_tokens": summary_used},
    )


def agent_would_step(prefix: Session) -> bool:
    """The agent calls the LLM (and its condenser) after a user message or once every tool call of
    its latest batch has its observation; not in the middle of a batch."""
    messages = [m for m in prefix.messages if m.role != "system"]
    if not messages:
        return False
    last = messages[-1]
    if last.role == "user":
        return True
    if last.role != "tool":
        return False
    batch = next((m for m in reversed(messages) if m.role == "assistant" and m.tool_calls), None)
    if batch is None:
        return True
    answered = {m.tool_call_id for m in messages[messages.index(batch) + 1:] if m.role == "tool"}
    return all(c.id in answered for c in batch.tool_calls)


def agent_steps(session: Session) -> tuple[int, ...]:
    """Every message after which the agent steps (`agent_would_step` on each prefix, in one pass):
    the replay's steps where the log records no calls, so that the condenser runs where the agent
    runs it (a batch fully observed is a step even when the log shows a user message next)."""
    out: list[int] = []
    batch: set[str] | None = None
    answered: set[str] = set()
    for m in session.messages:
        if m.role == "system":
            continue
        if m.role == "assistant" and m.tool_calls:
            batch, answered = {c.id for c in m.tool_calls}, set()
        elif m.role == "user":
            out.append(m.index)
        elif m.role == "tool":
            answered.add(m.tool_call_id)
            if batch is None or batch <= answered:
                out.append(m.index)
    return tuple(out)


def compact(prefix: Session, plan_: Plan, params: CondenserParams, counts: TokenCounts, summarizer: Any, turn: int, events: list[Any]) -> Summary | None:
    """The condensation the plan made, put in force for the turns after it (when the agent steps)."""
    ids = plan_.extra.get("summarized_ids") or []
    if not ids or not agent_would_step(prefix):
        return None
    from ...replay_contract import Event as SimEvent

    by_id = {m.id: m for m in prefix.messages}
    covered = [by_id[i] for i in ids if i in by_id]
    # What its summariser was shown: the previous summary as far as shown, and the events it forgot.
    text = summarizer.supyagent_snapshot(shown_again(plan_.extra.get("summary_shown") or {}, {m.index: m for m in prefix.messages}))
    events.append(SimEvent(turn, "summary", f"{plan_.extra['reduce_reason']}: OpenHands condensed {plan_.extra['forgotten_events']} events into one summary"))
    earlier = prefix.summaries[-1].written_after if prefix.summaries else ()
    return Summary(text=text, messages_covered=len(covered), covers=tuple(ids), created_at=prefix.messages[-1].timestamp,
                   written_after=(*earlier, prefix.messages[-1].id))


def align(params: Any, session: Session, trigger_tokens: int | None, keep_messages: int | None,
          keep_tokens: int | None) -> tuple[Any, list[str]]:
    """A token trigger is `max_tokens`; the recent events kept (max_size // 2 - keep_first - 1) follow
    max_size, which is also the event trigger, so a keep is not set on its own."""
    skipped = [f"openhands-llm-summarizing: it keeps max_size // 2 - keep_first - 1 recent events ({params.max_size // 2 - params.keep_first - 1}), "
               f"not a number of {unit} of its own" for unit, wanted in (("messages", keep_messages), ("tokens", keep_tokens)) if wanted is not None]
    return (replace(params, max_tokens=trigger_tokens) if trigger_tokens is not None else params), skipped


POLICY = Policy(
    reason_codes=("system_prompt", "head", "fresh_tail", "under_trigger", "kept", "summarised", "unpaired", "dropped"),
    name="openhands-llm-summarizing",
    title="OpenHands LLMSummarizingCondenser",
    params_type=CondenserParams,
    measure_name="openai-chat-message",
    measure=measure_message,
    default_tokenizer="o200k_base",
    plan=plan,
    zone_parts={"head": "events", "tail": "events"},
    description="Over max_size events, keep the first keep_first and the newest max_size//2 - keep_first - 1; the events between become one summary.",
    framework=FRAMEWORK,
    framework_version=FRAMEWORK_VERSION,
    source="openhands/sdk/context/condenser/llm_summarizing_condenser.py LLMSummarizingCondenser.get_condensation, _get_forgotten_events",
    counter="events (each message, tool call and observation is one; the system prompt is one); tokens only for max_tokens",
    trigger=("max_tokens", "max_size"),
    align=align,
    keep=("keep_first", "max_size"),
    stand_in=STAND_IN,
    compact=compact,
    step_points=agent_steps,
    schedule="the condenser runs at every agent step (CodeActAgent.step: after a user message, or once every call of the latest batch "
             "has its observation); where the log records calls, before each of them",
)
