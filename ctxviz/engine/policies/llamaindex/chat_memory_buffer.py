"""LlamaIndex's ChatMemoryBuffer.get (llama_index/core/memory/chat_memory_buffer.py, llama-index-core
0.14.25), reproduced decision for decision; tests/golden/llamaindex holds it to the framework's own class.

The buffer tokenises `" ".join(str(m.content) for m in window)` with tiktoken's gpt-3.5-turbo
encoding (cl100k_base), over the whole candidate window each time. BPE never merges across the
encoder's regex chunks, and a joining space always starts a new chunk unless whitespace meets
whitespace across the join, so the window's count is each message's count *as it stands after a
joining space* (the per-message measure), with the window's first message counted without that
space, plus an exact recount of the rare runs of messages where whitespace meets whitespace across
a join. Nothing is re-tokenised per re-plan beyond those (memoised) texts.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import TEXT_PARTS, Message, Session, part_text
from ...tokenizers import TiktokenTokenizer, Tokenizer, load_encoding
from ..base import Policy, params_dict
from ..common import base_system_prompt, history_with_summaries, with_system_messages

ZONES = ("system", "history")
DEFAULT_TOKEN_LIMIT = 3000
DEFAULT_TOKEN_LIMIT_RATIO = 0.75
NAME = "llamaindex-chat-memory-buffer"


def _help(text: str, **extra: Any) -> dict[str, Any]:
    return {"help": text, **extra}


def content_str(message: Message) -> str:
    """`str(ChatMessage.content)`: its TextBlocks joined by newlines; a message without any text
    block (a tool-call-only assistant message, an image alone) has content None, which LlamaIndex's
    buffers count as the text 'None'. Images, thinking and tool calls are not in `content`."""
    texts = [part_text(p) for p in message.parts if isinstance(p, TEXT_PARTS)]
    return "\n".join(texts) if texts else "None"


def llama_count(tokenizer: Tokenizer, text: str) -> int:
    """`len(tokenizer_fn(text))`: LlamaIndex encodes with `allowed_special="all"`, so a special
    token's text (`<|endoftext|>`) is one token, where ctxviz's encoders count it as plain text."""
    if "<|" in text and isinstance(tokenizer, TiktokenTokenizer):
        return len(load_encoding(tokenizer.encoding_name).encode(text, allowed_special="all"))
    return tokenizer.count(text)


def text_tokens(counts: TokenCounts, text: str) -> int:
    """`llama_count` through the counts' memo (a text with a special token's spelling bypasses it)."""
    return llama_count(counts.tokenizer, text) if "<|" in text else counts.text(text)


def measure_joined(message: Message, tokenizer: Tokenizer) -> int:
    """The message's tokens as it stands in the buffer's joined string after a joining space."""
    return llama_count(tokenizer, " " + content_str(message))


def parse_token_limit(value: int | None, context_window: int | None) -> int:
    """from_defaults: `token_limit or int(context_window * 0.75)` with an llm, else the default."""
    if context_window is not None:
        return value or int(context_window * DEFAULT_TOKEN_LIMIT_RATIO)
    return DEFAULT_TOKEN_LIMIT if value is None else value


@dataclass(frozen=True)
class ChatMemoryBufferParams:
    """ChatMemoryBuffer.from_defaults(token_limit=..., llm=...) and get(initial_token_count=...)."""

    token_limit: int | None = field(default=None, metadata=_help(unit="tokens", text=
        "Token limit of the buffer (default: 3000, or 0.75 x context_window when an llm's window is given)", min=1, step=100))
    context_window: int | None = field(default=None, metadata=_help(
        "from_defaults(llm=...): the llm's metadata.context_window; the limit becomes int(0.75 x it)", min=1, step=1000))
    initial_token_count: int | None = field(default=None, metadata=_help(
        "get(initial_token_count=...): tokens counted before the history (default: the system prompt, as LlamaIndex's chat "
        "engines count their prefix messages)", min=0, step=100))

    system_messages_in_memory: bool = field(default=False, metadata=_help(
        "System-role messages are in the memory where they stand (memory.put(ChatMessage(role=SYSTEM, ...))), counted and "
        "trimmed like any other; off: the chat engine's prefix messages, sent before the memory and never trimmed"))

    @property
    def needs_full_replay(self) -> bool:
        """`simulate` plans every prefix from scratch: its incremental replayer keeps system messages apart."""
        return self.system_messages_in_memory

    def __post_init__(self) -> None:
        if self.context_window is not None and self.context_window < 1:
            raise ValueError(f"context_window must be >= 1, got {self.context_window}")
        limit = parse_token_limit(self.token_limit, self.context_window)
        if limit < 1:
            # LlamaIndex's own validator message.
            raise ValueError(f"token_limit: Token limit must be set and greater than 0 (got {limit})")
        if self.initial_token_count is not None and self.initial_token_count < 0:
            raise ValueError(f"initial_token_count must be >= 0, got {self.initial_token_count}")

    @property
    def limit(self) -> int:
        return parse_token_limit(self.token_limit, self.context_window)


def prefix_text(session: Session, system_messages: list[Message]) -> str:
    """The text LlamaIndex's chat engines count before the memory: each system message is a prefix
    message, and SimpleChatEngine counts `" ".join(m.content or "" for m in prefix_messages if
    isinstance(m.content, str))` (a space between them, where ctxviz shows a blank line; a message
    without a text block has content None and is left out)."""
    pieces = [session.system_prompt] if session.system_prompt else []
    for m in system_messages:
        texts = [part_text(p) for p in m.parts if isinstance(p, TEXT_PARTS)]
        if texts:
            pieces.append("\n".join(texts))
    return " ".join(pieces)


def prefix_tokens(session: Session, counts: TokenCounts, system_messages: list[Message]) -> tuple[str, int]:
    """The system prompt (as shown and sent) and its tokens as LlamaIndex's chat engines count
    their prefix messages (`prefix_text`)."""
    system_prompt = base_system_prompt(session, system_messages)
    counted = prefix_text(session, system_messages)
    return system_prompt, text_tokens(counts, counted) if counted else 0


def llama_role(message: Message) -> str:
    """The role LlamaIndex gives the message: an OpenAI `function` message (read by ctxviz as a tool
    result) is MessageRole.FUNCTION, which the buffers' window may start on (they skip only TOOL and
    ASSISTANT there)."""
    if message.role == "tool" and isinstance(message.raw, dict) and message.raw.get("role") == "function":
        return "function"
    return message.role


def _ends_in_space(text: str) -> bool:
    return bool(text) and text[-1].isspace()


def _starts_with_space(text: str) -> bool:
    return not text or text[0].isspace()


class JoinedCounter:
    """Exact `len(tokenizer(" ".join(strs[j:])))` for every start j of one history, from the cached
    per-message counts: the first message is counted without its joining space, and where
    whitespace meets whitespace across a join (the encoder's whitespace chunks can then span it)
    the run of messages involved is recounted as one text (memoised)."""

    def __init__(self, strs: list[str], tokens: list[int], counts: TokenCounts) -> None:
        self.strs = strs
        self.tokens = tokens
        self.counts = counts
        n = len(strs)
        suffix = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            suffix[i] = suffix[i + 1] + tokens[i]
        self.suffix = suffix
        # A join between i and i+1 is unsafe when the text so far ends in whitespace and the next
        # message is empty or starts with whitespace. (An empty message i after a join ends in the
        # joining space itself.)
        unsafe = [(_ends_in_space(strs[i]) or not strs[i]) and _starts_with_space(strs[i + 1]) for i in range(n - 1)]
        # Runs [a, b] of messages linked by unsafe joins, each recounted as one text.
        self.runs: list[tuple[int, int]] = []
        i = 0
        while i < n - 1:
            if unsafe[i]:
                a = i
                while i < n - 1 and unsafe[i]:
                    i += 1
                self.runs.append((a, i))
            else:
                i += 1
        self.run_starts = [a for a, _ in self.runs]
        # Corrections of whole runs (none of them starting the window), suffix-summed by run.
        fixes = [self._fix(a, b, first=False) for a, b in self.runs]
        self.fixes = fixes
        self.fix_suffix = [0] * (len(fixes) + 1)
        for r in range(len(fixes) - 1, -1, -1):
            self.fix_suffix[r] = self.fix_suffix[r + 1] + fixes[r]

    def _fix(self, a: int, b: int, first: bool) -> int:
        pieces = [self.strs[a] if first else " " + self.strs[a]] + [" " + s for s in self.strs[a + 1 : b + 1]]
        alone = (text_tokens(self.counts, self.strs[a]) if first else self.tokens[a]) + sum(self.tokens[a + 1 : b + 1])
        return text_tokens(self.counts, "".join(pieces)) - alone

    def first(self, j: int) -> int:
        """The window's first message, counted without the joining space."""
        return text_tokens(self.counts, self.strs[j]) if self.strs[j] else 0

    def _fix_at(self, j: int, b: int) -> int:
        """The correction of a run [a, b] with a <= j < b when the window starts at j. An empty first
        message contributes nothing, so the join after it is a plain leading space."""
        if self.strs[j]:
            return self._fix(j, b, first=True)
        return self._fix(j + 1, b, first=False) if b > j + 1 else 0

    def _run_at(self, j: int) -> tuple[int, int]:
        """(how many runs start at or before j, the end of the one containing j as a non-last member or -1)."""
        r = bisect_right(self.run_starts, j)
        end = self.runs[r - 1][1] if r and self.runs[r - 1][1] > j else -1
        return r, end

    def window_total(self, j: int) -> int:
        r, end = self._run_at(j)
        total = self.first(j) + self.suffix[j + 1] + self.fix_suffix[r]
        return total + self._fix_at(j, end) if end >= 0 else total

    def window(self, j: int) -> tuple[int, list[int]]:
        """(tokens of the joined window strs[j:], each message's share of them)."""
        shares = list(self.tokens[j:])
        shares[0] = self.first(j)
        r, end = self._run_at(j)
        if end >= 0:
            shares[end - j] += self._fix_at(j, end)
        for (_a, b), fix in zip(self.runs[r:], self.fixes[r:], strict=True):
            shares[b - j] += fix
        return sum(shares), shares


_counters: dict[tuple[int, bool], tuple[weakref.ref[TokenCounts], JoinedCounter]] = {}
_counters_lock = threading.Lock()


Entry = Message | int  # a session message, or a recorded summary by its index in session.summaries


def entry_text(session: Session, entry: Entry) -> str:
    return session.summaries[entry].text if isinstance(entry, int) else content_str(entry)


def entry_role(entry: Entry) -> str:
    return "system" if isinstance(entry, int) else llama_role(entry)


def joined_counter(session: Session, entries: list[Entry], counts: TokenCounts, with_system: bool = False) -> JoinedCounter:
    """The history's JoinedCounter, built once per counts (re-plans on a slider move reuse it);
    `with_system`: the entries hold the system-role messages too (system_messages_in_memory)."""
    key = (id(counts), with_system)
    found = _counters.get(key)
    if found is not None and found[0]() is counts:
        return found[1]
    tokens = counts.message_tokens
    strs = [entry_text(session, e) for e in entries]
    counter = JoinedCounter(strs, [text_tokens(counts, " " + s) if isinstance(e, int) else tokens[e.index] for e, s in zip(entries, strs, strict=True)],
                            counts)
    with _counters_lock:
        _counters[key] = (weakref.ref(counts, lambda _ref, key=key, table=_counters: table.pop(key, None)), counter)
    return counter


def plan(session: Session, params: ChatMemoryBufferParams, counts: TokenCounts) -> Plan:
    limit = params.limit
    tokens = counts.message_tokens
    in_memory = params.system_messages_in_memory
    system_messages = [] if in_memory else list(session.system_and_history[0])
    system_prompt, system_tokens = prefix_tokens(session, counts, system_messages)
    initial = system_tokens if params.initial_token_count is None else params.initial_token_count
    initial_from = ("the system prompt's tokens, counted as LlamaIndex's chat engines count prefix messages"
                    if params.initial_token_count is None else "initial_token_count")
    decisions: list[MessagePlan | None] = [None] * len(session.messages)
    notes: list[str] = []
    for m in system_messages:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "system",
                                         "kept: part of the system prompt, which the chat engine sends before the memory", t, "system_prompt")

    # Recorded summaries stand in the chat store where the messages they cover were, as SYSTEM messages.
    entries, covered, superseded = history_with_summaries(session)
    if in_memory and session.system_and_history[0]:
        entries = with_system_messages(entries, session.system_and_history[0])
    roles = [entry_role(e) for e in entries]
    counter = joined_counter(session, entries, counts, in_memory)
    n = len(entries)
    start = n  # index into entries of the first sent one (n: none)
    window_tokens = 0
    shares: list[int] = []
    cut_reason = ""
    raised = initial > limit
    if raised:
        notes.append(f"ChatMemoryBuffer.get raises 'Initial token count exceeds token limit': {initial_from} is {initial:,} > "
                     f"token_limit {limit:,}; no history is returned")
    elif n:
        message_count = n
        token_count = counter.window_total(0) + initial
        while token_count > limit and message_count > 1:
            message_count -= 1
            # LlamaIndex: the history may not start with an assistant or tool message.
            while message_count > 1 and roles[n - message_count] in ("tool", "assistant"):
                message_count -= 1
            token_count = counter.window_total(n - message_count) + initial
        if token_count > limit:
            # LlamaIndex returns the last message alone, however large, so the LLM raises the error.
            start = n - 1
            cut_reason = "last"
        else:
            start = n - message_count
        window_tokens, shares = counter.window(start)
    total = initial + window_tokens
    if cut_reason == "last":
        notes.append(f"even the newest message alone ({window_tokens:,} tokens, plus {initial:,} initial) exceeds token_limit {limit:,}: "
                     "ChatMemoryBuffer returns it anyway, so the LLM call fails loudly")
    kept_code = "fits"
    if cut_reason == "last":
        kept_code = "fresh_tail"  # LlamaIndex always returns the newest message
        kept_reason = (f"kept: the newest message is returned alone even though the window ({window_tokens:,} tokens + {initial:,} initial) "
                       f"exceeds token_limit {limit:,} (LlamaIndex lets the LLM raise the error)")
    else:
        kept_reason = f"kept: the newest {n - start} messages join to {window_tokens:,} tokens, within token_limit {limit:,} with {initial:,} initial"
    summary_decisions: dict[int, tuple[Decision, str]] = {k: (Decision.DROPPED, "dropped: superseded by a later recorded summary, which "
                                                                               "covers every message of the file this one covers")
                                                          for k in superseded}
    # The newest entry left out that the window could not take (older ones go with it): the one
    # _drop_reason does not put down to the start rule.
    missed_at = next((k for k in range(start - 1, -1, -1) if not _start_rule(roles, k)), -1)
    for k, entry in enumerate(entries):
        if isinstance(entry, int):
            if k >= start:
                summary_decisions[entry] = (Decision.KEPT, "kept: a recorded summary, in the chat store as a SYSTEM message where the messages "
                                                           f"it covers were; {kept_reason.removeprefix('kept: ')}")
            elif raised:
                summary_decisions[entry] = (Decision.DROPPED, f"dropped: get() raises because the {initial:,} initial tokens exceed token_limit {limit:,}")
            else:
                summary_decisions[entry] = (Decision.DROPPED, "dropped: a recorded summary (a SYSTEM message in the chat store); "
                                            + _drop_reason(roles, k, counter, initial, limit, cut_reason, missed_at)[0].removeprefix("dropped: "))
            continue
        m = entry
        t = tokens[m.index]
        if k >= start:
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "history", kept_reason, shares[k - start],
                                             kept_code)
        elif raised:
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.DROPPED, "history",
                                             f"dropped: get() raises because the {initial:,} initial tokens exceed token_limit {limit:,}",
                                             0, "dropped")
        else:
            reason, code = _drop_reason(roles, k, counter, initial, limit, cut_reason, missed_at)
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.DROPPED, "history", reason, 0, code)
    summary_plans = []
    for k, summary in enumerate(session.summaries):
        decision, reason = summary_decisions.get(k, (Decision.DROPPED, "dropped: not in the chat store"))
        summary_plans.append(SummaryPlan(k, text_tokens(counts, summary.text), decision, reason, summary.text))
    for m in session.system_and_history[1]:
        if m.id in covered:
            k = covered[m.id]
            sent = summary_decisions[k][0] is Decision.KEPT
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, tokens[m.index], Decision.SUMMARIZED, "summarized",
                                             f"summarized: recorded summary #{k + 1} covers it"
                                             + (" and is sent in its place" if sent else "; the summary itself is not sent"), 0, "summarised")

    messages = tuple(decisions)  # type: ignore[arg-type]
    sent_messages = [m for m in messages if m.sent]
    context: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    context_index: list[int | None] = [None] * len(context)
    for entry in entries[start:]:
        if isinstance(entry, int):
            context.append({"role": "system", "content": session.summaries[entry].text})
            context_index.append(None)
        else:
            context.append(entry.to_openai())
            context_index.append(entry.index)
    allocation = {"initial": min(initial, limit), "history": max(0, limit - initial)}
    usage = {"initial": initial, "history": window_tokens}
    totals = Totals(budget=limit, used=total, kept=sum(m.tokens for m in sent_messages), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=total <= limit and not raised, kept_messages=len(sent_messages), dropped_messages=len(messages) - len(sent_messages),
                    fits_test="parts")
    first_sent = entries[start] if start < n else None
    return Plan(
        policy=NAME, params={**params_dict(params), "token_limit": limit, "initial_token_count": initial},
        tokenizer=counts.scheme.label, allocation=allocation, usage=usage, system_prompt=system_prompt, messages=messages,
        context=tuple(context), context_index=tuple(context_index), totals=totals, summaries=tuple(summary_plans),
        zones=ZONES + (("summarized",) if covered else ()), notes=tuple(notes),
        extra={"token_count": total, "start_index": first_sent.index if isinstance(first_sent, Message) else None, "raised": raised,
               "last_message_only": cut_reason == "last"},
    )


def _start_rule(roles: list[str], k: int) -> bool:
    """Whether get() leaves entry k out for the start rule (the history may not start with an
    assistant or tool message) rather than for the limit."""
    return k > 0 and roles[k] in ("tool", "assistant")


def _drop_reason(roles: list[str], k: int, counter: JoinedCounter, initial: int, limit: int, cut_reason: str,
                 missed_at: int) -> tuple[str, str]:
    """Why get() leaves entry k out, and its reason code: the window starting there was over the
    limit (`missed_at`, the newest such entry, missed it; older ones go with it), or it was skipped
    because the history may not start with an assistant or tool message."""
    role = roles[k]
    if _start_rule(roles, k):
        return (f"dropped: the buffer may not start with {'an' if role == 'assistant' else 'a'} {role} message, so it goes with the older "
                "message that did not fit (LlamaIndex keeps tool results with their call)"), "start_rule"
    code = "missed" if k == missed_at else "after_cut"
    if cut_reason == "last":
        return f"dropped: no window of whole turns fits token_limit {limit:,}; only the newest message is returned", code
    return (f"dropped: the newest {len(roles) - k} messages from here join to {counter.window_total(k):,} tokens, over token_limit {limit:,} "
            f"with {initial:,} initial (oldest dropped first)"), code


POLICY = Policy(
    reason_codes=("system_prompt", "fits", "fresh_tail", "missed", "after_cut", "start_rule", "summarised", "dropped"),
    name=NAME,
    schedule='memory.get(): once per LLM call, after a user message or a whole batch of tool results',
    title="LlamaIndex ChatMemoryBuffer",
    params_type=ChatMemoryBufferParams,
    measure_name="llamaindex-joined-content",
    measure=measure_joined,
    default_tokenizer="cl100k_base",
    plan=plan,
    zone_parts={"history": "history"},
    description="Drops the oldest messages until the joined history fits token_limit; never starts on an assistant or tool message; "
                "returns the newest message alone if nothing else fits.",
    framework="LlamaIndex",
    framework_version="llama-index-core 0.14.25",
    source="llama_index/core/memory/chat_memory_buffer.py ChatMemoryBuffer.get",
    counter="tiktoken cl100k_base (gpt-3.5-turbo) over the messages' text contents joined by spaces; tool calls and images are "
            "not counted, a message without text counts as 'None'",
    trigger=("token_limit",),
    keep=("token_limit",),
)
