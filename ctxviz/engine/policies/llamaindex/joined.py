"""The joined history LlamaIndex's memory buffers count (llama_index/core/memory), shared by
ChatMemoryBuffer's two plans (`chat_memory_buffer.plan_records` step by step, `buffer_columns` in
columns), ChatSummaryMemoryBuffer and their replayer: each message's text as the buffer holds it,
the prefix the chat engines count, the exact count of the window from any start, and why get()
leaves an entry out."""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_right

from ...counting import TokenCounts
from ...session import TEXT_PARTS, Message, Session, part_text
from ...tokenizers import TiktokenTokenizer, Tokenizer, load_encoding
from ..common import base_system_prompt


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
    `with_system`: the entries hold the system-role messages too (system_messages_in_memory).
    The key names where recorded summaries stand among the entries: a replay's history before
    any summary is in force holds none, while the plan's chat store holds them all."""
    key = (id(counts), with_system, len(entries), tuple((k, e) for k, e in enumerate(entries) if isinstance(e, int)))
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
