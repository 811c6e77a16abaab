"""AutoGen's TokenLimitedChatCompletionContext.get_messages (autogen_core/model_context/
_token_limited_chat_completion_context.py, autogen-core 0.7.5), counting with autogen-ext 0.7.5's
OpenAIChatCompletionClient.count_tokens. tests/golden/autogen holds both to the frameworks' own code.

While the context's count exceeds token_limit (or, without one, the model's limit from AutoGen's
table: remaining_tokens < 0), it pops the message at `len(messages) // 2`: the middle of the
conversation goes first, so the oldest and the newest messages survive longest. Then a
FunctionExecutionResultMessage that would start the result is removed (without recounting). The
agent's system message is not in the model context, so it is never counted here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...counting import TokenCounts
from ...plan import Decision, Plan
from ...session import Session
from .columns import ModelContext, model_context_columns, plan_from_units
from .messages import (
    COUNTER,
    REPLY_PRIMING,
    autogen_policy,
    build_plan,
    model_context,
    model_limit,
    system_in_context_field,
    system_part,
    tool_schema_problems,
    tool_schema_tokens,
    unit_tokens,
)

NAME = "autogen-token-limited"


@dataclass(frozen=True)
class TokenLimitedParams:
    token_limit: int | None = field(default=None, metadata={"unit": "tokens",
        "help": "Tokens the context may hold by the model client's count_tokens (default None: the model's limit, via remaining_tokens)",
        "min": 1, "step": 1000})
    tool_schema: bool = field(default=False, metadata={"help": "Pass the session's tools as tool_schema, so their schemas are counted too"})

    system_messages_in_context: bool = system_in_context_field()

    @property
    def needs_full_replay(self) -> bool:
        """`simulate` plans every prefix from scratch: its incremental replayer keeps system messages apart."""
        return self.system_messages_in_context

    def __post_init__(self) -> None:
        if self.token_limit is not None and self.token_limit <= 0:
            raise ValueError(f"token_limit must be greater than 0 (got {self.token_limit})")


def middle_pops(n: int, fits_after: list[int] | None = None) -> list[int]:
    """The original positions `messages.pop(len(messages) // 2)` removes, in order, for n messages.
    The removed positions always form one run around the middle, so this is linear."""
    order: list[int] = []
    lo, hi = n // 2, n // 2  # removed: [lo, hi)
    for m in range(n, 0, -1):
        position = m // 2  # in the current list: left part [0, lo), right part [hi, n)
        if position == lo:  # the first message of the right part
            order.append(hi)
            hi += 1
        else:  # position == lo - 1: the last of the left part
            lo -= 1
            order.append(lo)
    return order


def plan_records(session: Session, params: TokenLimitedParams, counts: TokenCounts) -> Plan:
    """get_messages step by step, a record per message: the reference `plan` is checked against
    (tests/test_autogen_columns.py)."""
    system, units = model_context(session, params.system_messages_in_context)
    context = _context_words(bool(system_part(session, system, counts)[1]))
    notes: list[str] = []
    model_tokens, note = model_limit(session)
    if note:
        notes.append(note)
    limit = params.token_limit if params.token_limit is not None else model_tokens
    what = f"token_limit {limit:,}" if params.token_limit is not None else f"the model's {limit:,}-token limit (remaining_tokens < 0)"
    tools = tool_schema_tokens(session.tools, counts.tokenizer) if params.tool_schema else 0
    if params.tool_schema:
        notes.extend(tool_schema_problems(session.tools, counts.tokenizer))
    sizes = [unit_tokens(u, counts) for u in units]
    count = sum(sizes) + REPLY_PRIMING + tools
    removed: dict[int, int] = {}  # unit position -> the count when it was popped
    for position in middle_pops(len(units)):
        if count <= limit:
            break
        removed[position] = count
        count -= sizes[position]
    kept = [u for k, u in enumerate(units) if k not in removed]
    reasons: dict[int, tuple[Decision, str, str]] = {}
    order = {p: k for k, p in enumerate(removed)}
    for k, unit in enumerate(units):
        for m in unit.messages:
            if k in removed:
                reasons[m.index] = (Decision.DROPPED, f"dropped: pop #{order[k] + 1} from the middle of the context, whose "
                                                      f"{removed[k]:,} tokens exceeded {what}", "popped_middle")
            else:
                reasons[m.index] = (Decision.KEPT, f"kept: the {context}fits {what} once {len(removed)} messages are popped from its middle",
                                    "fits")
    if count > limit:
        notes.append(f"even with every message popped the count ({count:,}: the reply priming and tool schemas) exceeds {what}")
    if kept and kept[0].kind == "results":
        first = kept.pop(0)
        for m in first.messages:
            reasons[m.index] = (Decision.DROPPED, "dropped: a tool result would start the context without its call, so AutoGen removes it "
                                                  "after trimming", "start_rule")
        notes.append(f"the trimmed context started with a tool result (#{first.first}), which AutoGen removes")
    if tools:
        notes.append(f"the session's {len(session.tools)} tool schemas count {tools:,} tokens (tool_schema)")
    budget = limit
    return build_plan(NAME, session, params, counts, kept, reasons, budget, notes,
                      {"token_count": count, "popped": [units[p].first for p in removed], "token_limit": limit}, tools_tokens=tools)


_CODES = ("fits", "popped_middle", "start_rule")
FITS, POPPED, START_RULE = range(len(_CODES))


@dataclass(frozen=True)
class _Pops:
    """The pops of a model context of n LLMMessages, in order, and their counts: what every limit shares."""

    order: np.ndarray  # the positions popped, first to last (`middle_pops`)
    rank: np.ndarray  # per position: when it is popped
    popped: np.ndarray  # popped[k]: the tokens of the first k pops


def _pops(session: Session, mc: ModelContext, system_in_context: bool, scheme: tuple[str, str]) -> _Pops:
    key = ("autogen-token-limited", system_in_context, scheme)
    found = session.derived.get(key)
    if found is not None and found[0] is mc:
        return found[1]
    order = np.array(middle_pops(len(mc.sizes)), dtype=np.int64)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    popped = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(mc.sizes[order], out=popped[1:])
    made = _Pops(order, rank, popped)
    session.derived[key] = (mc, made)
    return made


def _context_words(system_apart: bool) -> str:
    """What a kept message's sentence says fits: with a system message AutoGen does not count (the
    agent prepends it), the sentence says so, since the plan's total, which the system message is
    part of, can be over the limit the context fits."""
    return "model context (without the agent's system message, which AutoGen does not count) " if system_apart else "context "


class _Why:
    """The reason of an LLMMessage's messages, as `plan_records` words it."""

    def __init__(self, code: np.ndarray, pops: _Pops, start: int, what: str, removed: int, context: str) -> None:
        self.code, self.pops, self.start, self.what, self.removed, self.context = code, pops, start, what, removed, context

    def __call__(self, p: int) -> str:
        code = self.code[p]
        if code == START_RULE:
            return "dropped: a tool result would start the context without its call, so AutoGen removes it after trimming"
        if code == POPPED:
            k = int(self.pops.rank[p])
            return (f"dropped: pop #{k + 1} from the middle of the context, whose {self.start - int(self.pops.popped[k]):,} tokens "
                    f"exceeded {self.what}")
        return f"kept: the {self.context}fits {self.what} once {self.removed} messages are popped from its middle"


def plan(session: Session, params: TokenLimitedParams, counts: TokenCounts) -> Plan:
    """`plan_records` in columns: the pops are one run around the middle, so how many there are is a
    binary search on their running count, and nothing per message is built."""
    mc = model_context_columns(session, counts, params.system_messages_in_context)
    notes: list[str] = []
    model_tokens, note = model_limit(session)
    if note:
        notes.append(note)
    limit = params.token_limit if params.token_limit is not None else model_tokens
    what = f"token_limit {limit:,}" if params.token_limit is not None else f"the model's {limit:,}-token limit (remaining_tokens < 0)"
    tools = tool_schema_tokens(session.tools, counts.tokenizer) if params.tool_schema else 0
    if params.tool_schema:
        notes.extend(tool_schema_problems(session.tools, counts.tokenizer))
    pops = _pops(session, mc, params.system_messages_in_context, counts.scheme.key)
    n = len(mc.sizes)
    start = mc.total + REPLY_PRIMING + tools
    # The loop pops while the count exceeds the limit: the first k whose count fits.
    k = min(int(np.searchsorted(pops.popped, start - limit, side="left")), n)
    count = start - int(pops.popped[k])
    code = np.full(n, FITS, dtype=np.int16)
    removed = pops.order[:k]
    code[removed] = POPPED
    if count > limit:
        notes.append(f"even with every message popped the count ({count:,}: the reply priming and tool schemas) exceeds {what}")
    if k < n:
        first = 0 if k == 0 or int(removed.min()) > 0 else int(removed.max()) + 1
        if mc.kinds[first] == "results":
            code[first] = START_RULE
            notes.append(f"the trimmed context started with a tool result (#{int(mc.unit_first[first])}), which AutoGen removes")
    if tools:
        notes.append(f"the session's {len(session.tools)} tool schemas count {tools:,} tokens (tool_schema)")
    return plan_from_units(NAME, session, params, counts, mc, code == FITS, code, _CODES, _Why(code, pops, start, what, k, _context_words(bool(mc.system_tokens))), limit, notes,
                           {"token_count": count, "popped": mc.unit_first[removed].tolist(), "token_limit": limit}, tools_tokens=tools)


POLICY = autogen_policy(
    reason_codes=("system_prompt", "fits", "popped_middle", "start_rule", "summarised"),
    name=NAME,
    title="AutoGen TokenLimitedChatCompletionContext",
    params_type=TokenLimitedParams,
    plan=plan,
    description="Pops the middle message until the model client's count fits token_limit; a leading tool result is then removed.",
    source="autogen_core/model_context/_token_limited_chat_completion_context.py TokenLimitedChatCompletionContext.get_messages",
    counter=COUNTER,
    trigger=("token_limit",),
    keep=("token_limit",),
)
