"""What none of the frameworks check, applied to any policy's plan: tool-call pairs and the real count.

Both run after the policy, so every policy's defaults stay faithful: orphans are only flagged unless
`pair_safe` is on, and the real count never changes a decision.
"""

from __future__ import annotations

import dataclasses
import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress
from typing import TYPE_CHECKING, Any

import numpy as np

from .counting import CountingScheme, CountStore, TokenCounts
from .images import image_costs
from .plan import Context, Decision, MessagePlan, Plan
from .plan_rows import Rows, kept_flags, sent_flags
from .policies import get_policy
from .session import Message, Session
from .tokenizers import TiktokenTokenizer, Tokenizer, count_openai_chat, real_encoding_for_model
from .wording import noun

if TYPE_CHECKING:
    from .catalog import ModelEntry
    from .next_call import FromUsage, NextCall


@dataclass(frozen=True)
class PlanOptions:
    """ctxviz's own options, off by default so that every policy's defaults stay faithful."""

    pair_safe: bool = False
    real_count: bool = False
    #: Model for the real-count check and the cost estimate; default: the session's model.
    model: str = ""
    #: Pin rules (engine/pins.py): messages sent whatever the policy decides.
    pins: tuple[str, ...] = ()


@dataclass(frozen=True)
class Orphan:
    """A sent message the OpenAI and Anthropic APIs reject because of its tool-call partner:
    `partner` is that message's index, or None when it is not in the file at all."""

    index: int
    partner: int | None
    message: str
    #: "unsent": the partner is in the file but not sent; "absent": it is not in the file as the
    #: APIs need it (no such call or result, or a call on a message that cannot send one).
    kind: str = "unsent"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "partner": self.partner, "message": self.message, "kind": self.kind}


@dataclass(frozen=True)
class RealCount:
    model: str
    encoding: str
    tokens: int
    window: int | None
    estimated: int
    exact: bool
    input_cost: float | None = None
    #: The tokens of `tokens` the log does not show (system prompt and tools, estimated from the
    #: first call), and whether the policy's estimate counts them too (Claude Code's count starts
    #: from the provider's reported usage; the other policies estimate what the log records).
    unseen: int = 0
    estimate_has_unseen: bool = False
    #: The request counted from the provider's own figure for the call it extends (`engine.next_call`):
    #: where the log has it, the reference, and `tokens` (an encoding's count) only an estimate beside it.
    from_usage: FromUsage | None = None
    #: How `input_cost` was priced: the cache read, written and uncached parts, and what it assumes.
    next_call: NextCall | None = None

    @property
    def reference(self) -> int:
        """The count the window and the policy's estimate are judged by: the provider's own (its
        reported usage plus the count of what follows) where the log has it, else `tokens`. An
        o200k_base count of a Claude request read 12 % under what Claude counted for less."""
        return self.from_usage.tokens if self.from_usage is not None else self.tokens

    @property
    def fits(self) -> bool | None:
        return None if self.window is None else self.reference <= self.window

    @property
    def compared(self) -> int:
        """The reference count of what the policy's estimate covers: without the unseen part where the
        estimate leaves it out (else a Gemini CLI log's estimator read 58 % short for the prompt it
        never sees)."""
        return self.reference if self.estimate_has_unseen else self.reference - self.unseen

    @property
    def heuristic_error(self) -> float:
        """How far the policy's estimate is from the real count of the same content, as a fraction of it."""
        compared = self.compared
        return (self.estimated - compared) / compared if compared else 0.0

    def to_json(self) -> dict[str, Any]:
        u = self.from_usage
        return {"model": self.model, "encoding": self.encoding, "tokens": self.tokens, "window": self.window,
                "fits": self.fits, "margin": None if self.window is None else self.window - self.reference,
                "estimated": self.estimated, "heuristic_error": round(self.heuristic_error, 4), "exact": self.exact,
                "unseen": self.unseen, "compared_with": self.compared,
                "from_reported_usage": None if u is None else {"tokens": u.tokens, "call": u.anchor, "reported": u.reported, "after": u.after},
                "input_cost_usd": None if self.input_cost is None else round(self.input_cost, 6),
                "next_call": None if self.next_call is None else self.next_call.to_json()}


def find_orphans(session: Session, messages: Sequence[MessagePlan]) -> list[Orphan]:
    """Sent tool results whose call is not sent, sent calls whose result is not sent, and sent
    calls or results whose partner is not in the file as the APIs need it (see
    `Session.tool_call_problems`)."""
    orphans: list[Orphan] = []
    if isinstance(messages, Rows):  # a plan in columns: the pairs with one end sent found at C speed, then read in order
        sent = messages.columns.sent
        calls, results = _pair_columns(session)
        broken = np.flatnonzero(sent[calls] != sent[results]).tolist()
        pairs: Iterable[tuple[int, int]] = map(session.tool_pairs.__getitem__, broken)
    else:
        sent = sent_flags(messages)
        pairs = session.tool_pairs
    for call, result in pairs:
        call_sent, result_sent = sent[call], sent[result]
        if result_sent and not call_sent:
            orphans.append(Orphan(result, call, f"tool result #{result} is sent but its tool call #{call} is not"))
        elif call_sent and not result_sent:
            orphans.append(Orphan(call, result, f"tool call #{call} is sent but its result #{result} is not"))
    for index, partner, problem in session.tool_call_problems:
        if sent[index]:
            orphans.append(Orphan(index, partner, problem, "absent"))
    orphans.sort(key=lambda o: (o.index, -1 if o.partner is None else o.partner))
    return orphans


def _pair_columns(session: Session) -> tuple[np.ndarray, np.ndarray]:
    """The session's tool pairs as two index columns (calls, results), once per session: a
    re-plan of 100,000 messages then checks its pairs without a Python loop over them."""
    found = session.derived.get(("checks", "pair columns"))
    if found is None:
        pairs = session.tool_pairs
        flat = np.fromiter(chain.from_iterable(pairs), dtype=np.int64, count=2 * len(pairs))
        found = session.derived[("checks", "pair columns")] = (flat[0::2], flat[1::2])
    return found  # type: ignore[no-any-return]


def apply_pair_safety(plan: Plan, session: Session, counts: TokenCounts | None = None) -> Plan:
    """Drop the sent half of every broken call/result pair, and every sent call or result whose
    partner is not in the file (repeating, since one assistant message can carry several calls),
    so the context stays valid for the OpenAI and Anthropic APIs. Messages merged into the system
    prompt are never dropped (the prompt is sent whole)."""
    messages = list(plan.messages)
    drops: dict[int, str] = {}
    absent: set[int] = set()
    while True:
        orphans = [o for o in find_orphans(session, tuple(messages)) if messages[o.index].zone != "system" and o.index not in drops]
        if not orphans:
            break
        for o in orphans:
            if o.kind == "absent":
                absent.add(o.index)
            why = f"#{o.partner} was not sent" if o.kind == "unsent" else o.message
            drops[o.index] = f"dropped: pair-safe keeps tool calls and results together, and {why}"
            messages[o.index] = messages[o.index]._replace(decision=Decision.DROPPED, sent_tokens=0, reason=drops[o.index], code="unpaired")
    if not drops:
        return plan
    freed = sum(plan.messages[i].sent_tokens for i in drops)
    counts_by_kind = [f"{len(drops) - len(absent)} whose partner was not sent" if len(drops) > len(absent) else "",
                      f"{len(absent)} whose partner is not in the file as the APIs need it" if absent else ""]
    note = (f"pair-safe dropped {len(drops):,} {noun(len(drops), 'message')} ({freed:,} tokens) so that no tool call or result is sent without its partner: "
            + ", ".join(c for c in counts_by_kind if c))
    return drop_messages(plan, drops, note, session, counts, code="unpaired")


def drop_messages(plan: Plan, drops: Mapping[int, str], note: str, session: Session, counts: TokenCounts | None = None,
                  code: str = "dropped") -> Plan:
    """The plan with the sent messages in `drops` (index -> reason) dropped after the policy ran,
    and every figure it reports brought up to date: context, totals, each allocation part's
    usage (through the policy's `zone_parts`), `fits` by the policy's own test, and the policy's
    figures in `extra` (its `refresh`)."""
    policy = get_policy(plan.policy)
    messages = list(plan.messages)
    usage = dict(plan.usage)
    freed = tokens = 0
    for index, reason in drops.items():
        m = messages[index]
        if not m.sent:
            continue
        part = usage_part(policy, m.zone, usage)
        usage[part] -= m.sent_tokens
        freed += m.sent_tokens
        tokens += m.tokens
        messages[index] = m._replace(decision=Decision.DROPPED, sent_tokens=0, reason=reason, code=code)
    removed = {i for i in drops if plan.messages[i].sent}
    keep = [i for i, idx in enumerate(plan.context_index) if idx not in removed]
    used = plan.totals.used - freed
    fits = all(usage[p] <= a for p, a in plan.allocation.items()) if plan.totals.fits_test == "parts" else used <= plan.totals.budget
    totals = dataclasses.replace(
        plan.totals, used=used, kept=plan.totals.kept - tokens, dropped=plan.totals.dropped + tokens, fits=fits,
        kept_messages=plan.totals.kept_messages - len(removed), dropped_messages=plan.totals.dropped_messages + len(removed),
    )
    plan = dataclasses.replace(
        plan, messages=tuple(messages), context=Context(plan.context.entries[i] for i in keep),
        context_index=tuple(plan.context_index[i] for i in keep), totals=totals, usage=usage, notes=(*plan.notes, note),
    )
    return policy.refresh(plan, session, counts) if policy.refresh is not None else plan


def usage_part(policy: Any, zone: str, usage: Mapping[str, int]) -> str:
    """The allocation part whose usage holds a sent message of `zone`. A zone without one of its own
    (mnesis' "summarized", strands' "trimmed": a message there is sent only because it was pinned)
    goes with the policy's message part, as the pin that sent it counted it."""
    part = policy.zone_parts.get(zone, zone)
    if part in usage:
        return part
    return next((p for z, p in policy.zone_parts.items() if z != "system" and p in usage), next(iter(usage)))


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
    it with the model's window from the catalogue (imported here: a plan without --real-count
    reads no catalogue)."""
    from .catalog import find_model

    entry: ModelEntry | None = find_model(model)
    encoding = entry.encoding if entry and entry.encoding else real_encoding_for_model(model)
    tokenizer = TiktokenTokenizer(encoding)
    per_message = store.get(session, chat_scheme(model, tokenizer))
    rate_model = image_rate_model(model)
    total = 3
    context = plan.context
    entries = context.entries if isinstance(context, Context) else tuple(context)
    kept = kept_flags(plan.messages)
    messages = session.messages
    indices = plan.context_index
    # A kept message handed over as itself (most of a long log's context) is read in one pass, its
    # counts summed at C speed; the others one by one below.
    itself = [index is not None and given is messages[index] and kept[index] for given, index in zip(entries, indices, strict=False)]
    if any(itself):
        total += int(per_message.token_array[np.fromiter(compress(indices, itself), dtype=np.int64)].sum())

    def entry_count(given: Any, index: int | None) -> int:
        # The cached count is of the message as the file has it: it serves only where the policy
        # sends it unchanged (mnesis and AutoGen rewrite kept messages, images become text). A
        # message handed over as itself is sent unchanged; anything else is compared in its sent
        # form, built once per message (`Message.sent_form`).
        if index is not None and kept[index] and (given is messages[index] or _form(given) == messages[index].sent_form):
            return per_message[index]
        # A summary, the system prompt, a cut-down or rewritten message.
        return count_openai_chat([_form(given)], model=rate_model, tokenizer=tokenizer) - 3

    for given, index in compress(zip(entries, indices, strict=False), map(operator.not_, itself)):
        total += entry_count(given, index)
    if session.tools:
        total += per_message.text(json.dumps([t.to_openai() for t in session.tools]))
    unseen = unseen_of(plan)
    total += unseen  # the system prompt and tools the log does not record, as the first call suggests
    has_unseen = counts_unseen(plan)
    exact = encoding_is_exact(model)
    # A model the catalogue lacks: the window its own log reports (a Codex rollout's gpt-5-codex).
    # (A session without one holds 0: no window, not a window of 0 tokens that every count is over.)
    window = entry.context_window if entry else (session.context_window or None) if model == session.model else None
    from .next_call import count_from_usage, next_call

    from_usage = count_from_usage(plan, session, entries, lambda index, given: entry_count(given, index))
    priced = next_call(plan, session, entry.name, from_usage.tokens if from_usage else total, from_usage) if entry else None
    return RealCount(model or "(unknown)", encoding, total, window, plan.totals.used, exact,
                     priced.cost if priced else None, unseen, has_unseen, from_usage, priced)


def unseen_of(plan: Plan) -> int:
    """What the plan's request holds that its log does not show (`Reported.unseen_at` of its last
    message; 0 without reported usage)."""
    return plan.reported.unseen_at(len(plan.messages) - 1) if plan.reported is not None else 0


def counts_unseen(plan: Plan) -> bool:
    """Whether the plan's own count holds what the log does not show: it is the request as the
    provider counts it (`extra["request_tokens"]`), as Claude Code's count from the reported usage is."""
    return isinstance(plan.extra, dict) and plan.extra.get("request_tokens") == plan.totals.used


def _form(given: Any) -> Mapping[str, Any]:
    """A context entry in OpenAI chat form (a policy hands over a mapping, a message, or an entry
    that builds its form: see `Context`)."""
    if isinstance(given, Mapping):
        return given
    return given.sent_form if isinstance(given, Message) else given.to_openai()


def encoding_is_exact(model: str) -> bool:
    """Only OpenAI models have a public tokenizer; for Claude, Gemini and others the count is an estimate."""
    from .tokenizers import encoding_name_for_model

    return encoding_name_for_model(model) is not None
