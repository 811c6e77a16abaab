"""What none of the frameworks check, applied to any policy's plan: tool-call pairs and the real count.

Both run after the policy, so every policy's defaults stay faithful: orphans are only flagged unless
`pair_safe` is on, and the real count never changes a decision.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from .catalog import ModelEntry, find_model
from .counting import CountingScheme, CountStore
from .images import image_costs
from .plan import Decision, MessagePlan, Plan
from .session import Message, Session
from .tokenizers import TiktokenTokenizer, Tokenizer, count_openai_chat, real_encoding_for_model


@dataclass(frozen=True)
class PlanOptions:
    """ctxviz's own options, off by default so that every policy's defaults stay faithful."""

    pair_safe: bool = False
    real_count: bool = False
    #: Model for the real-count check and the cost estimate; default: the session's model.
    model: str = ""


@dataclass(frozen=True)
class Orphan:
    index: int
    partner: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "partner": self.partner, "message": self.message}


@dataclass(frozen=True)
class RealCount:
    model: str
    encoding: str
    tokens: int
    window: int | None
    estimated: int
    exact: bool
    input_cost: float | None = None

    @property
    def fits(self) -> bool | None:
        return None if self.window is None else self.tokens <= self.window

    @property
    def heuristic_error(self) -> float:
        """How far the policy's estimate is from the real count, as a fraction of the real count."""
        return (self.estimated - self.tokens) / self.tokens if self.tokens else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "encoding": self.encoding, "tokens": self.tokens, "window": self.window,
                "fits": self.fits, "margin": None if self.window is None else self.window - self.tokens,
                "estimated": self.estimated, "heuristic_error": round(self.heuristic_error, 4), "exact": self.exact,
                "input_cost_usd": None if self.input_cost is None else round(self.input_cost, 6)}


def find_orphans(session: Session, messages: tuple[MessagePlan, ...]) -> list[Orphan]:
    """Sent tool results whose call was not sent, and sent calls whose existing result was not sent."""
    orphans: list[Orphan] = []
    for call, result in session.tool_pairs:
        call_sent, result_sent = messages[call].sent, messages[result].sent
        if result_sent and not call_sent:
            orphans.append(Orphan(result, call, f"tool result #{result} is sent but its tool call #{call} is not"))
        elif call_sent and not result_sent:
            orphans.append(Orphan(call, result, f"tool call #{call} is sent but its result #{result} is not"))
    orphans.sort(key=lambda o: (o.index, o.partner))
    return orphans


def apply_pair_safety(plan: Plan, session: Session) -> Plan:
    """Drop the sent half of every broken call/result pair (repeating, since one assistant message
    can carry several calls), so the context stays valid for the OpenAI and Anthropic APIs."""
    messages = list(plan.messages)
    removed: set[int] = set()
    while True:
        orphans = find_orphans(session, tuple(messages))
        if not orphans:
            break
        for o in orphans:
            m = messages[o.index]
            if m.sent:
                removed.add(o.index)
                messages[o.index] = m._replace(decision=Decision.DROPPED, sent_tokens=0,
                                               reason=f"dropped: pair_safe keeps tool calls and results together, and #{o.partner} was not sent")
    if not removed:
        return plan
    freed = sum(plan.messages[i].sent_tokens for i in removed)
    keep = [i for i, idx in enumerate(plan.context_index) if idx not in removed]
    totals = dataclasses.replace(
        plan.totals, used=plan.totals.used - freed, kept=plan.totals.kept - sum(plan.messages[i].tokens for i in removed),
        dropped=plan.totals.dropped + sum(plan.messages[i].tokens for i in removed),
        kept_messages=plan.totals.kept_messages - len(removed), dropped_messages=plan.totals.dropped_messages + len(removed),
    )
    return dataclasses.replace(
        plan, messages=tuple(messages), context=tuple(plan.context[i] for i in keep),
        context_index=tuple(plan.context_index[i] for i in keep), totals=totals,
        notes=(*plan.notes, f"pair_safe dropped {len(removed)} message(s) ({freed:,} tokens) whose tool-call partner was not sent"),
    )


def measure_chat(message: Message, tokenizer: Tokenizer, model: str = "gpt-4o") -> int:
    """One message's share of the OpenAI chat-format count (the reply priming is added once)."""
    return count_openai_chat([message.to_openai()], model=model, tokenizer=tokenizer) - 3


def image_rate_model(model: str) -> str:
    """The model whose image rate the real count applies: `model` if it bills images its own way,
    else gpt-4o, so every model that bills like gpt-4o shares one cached count."""
    return model if image_costs(model) != image_costs() else "gpt-4o"


def chat_scheme(model: str, tokenizer: Tokenizer) -> CountingScheme:
    """The real count's per-message scheme; models that bill images differently count apart."""
    rate_model = image_rate_model(model)
    name = "openai-chat" if rate_model == "gpt-4o" else f"openai-chat+images:{rate_model}"
    return CountingScheme(name, lambda m, t: measure_chat(m, t, rate_model), tokenizer)


def real_count(plan: Plan, session: Session, model: str, store: CountStore) -> RealCount:
    """Count the context as sent with the model's real encoding (cached per message), and compare
    it with the model's window from the catalogue."""
    entry: ModelEntry | None = find_model(model)
    encoding = entry.encoding if entry and entry.encoding else real_encoding_for_model(model)
    tokenizer = TiktokenTokenizer(encoding)
    per_message = store.get(session, chat_scheme(model, tokenizer))
    rate_model = image_rate_model(model)
    total = 3
    for item, index in zip(plan.context, plan.context_index, strict=False):
        if index is not None and plan.messages[index].decision is Decision.KEPT:
            total += per_message[index]
        else:  # a summary, the system prompt, or a cut-down message
            total += count_openai_chat([item], model=rate_model, tokenizer=tokenizer) - 3
    if session.tools:
        total += per_message.text(json.dumps([t.to_openai() for t in session.tools]))
    exact = encoding_is_exact(model)
    return RealCount(model or "(unknown)", encoding, total, entry.context_window if entry else None, plan.totals.used, exact,
                     entry.input_cost(total) if entry else None)


def encoding_is_exact(model: str) -> bool:
    """Only OpenAI models have a public tokenizer; for Claude, Gemini and others the count is an estimate."""
    from .tokenizers import encoding_name_for_model

    return encoding_name_for_model(model) is not None
