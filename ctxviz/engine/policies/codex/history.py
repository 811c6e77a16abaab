"""What Codex holds and rebuilds (openai/codex, codex-rs/core at 0100b103): the model family's
limits, truncate.rs, which messages are the user's own words and which the initial context, the
user messages a compaction keeps, the items' approximate counts and the stand-in summary. Shared by
the step-by-step plan (compaction.py) and the plan in columns (compaction_columns.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring
from typing import Any, TypeVar

from ...session import Message, Session, Summary, TextPart

K = TypeVar("K")

ZONES = ("system", "initial_context", "summarized", "retained_user", "summary", "history")
COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
APPROX_BYTES_PER_TOKEN = 4
#: templates/compact/summary_prefix.md (two spaces before "assist" are Codex's).
SUMMARY_PREFIX = ("Another language model started to solve this problem and produced a summary of its thinking process. You also have "
                  "access to the state of the tools that were used by that language model. Use this to build on the work that has "
                  "already been done and avoid duplicating work. Here is the summary produced by the other language model, use the "
                  "information in this summary to  assist with your own analysis:")
NO_SUMMARY = "(no summary available)"
CONTEXT_WINDOW_272K = 272_000
EFFECTIVE_CONTEXT_WINDOW_PERCENT = 95


def family_context_window(slug: str) -> int | None:
    """find_family_for_model's context window, by slug prefix in its order (None: an unknown model)."""
    for prefix, window in (("o3", 200_000), ("o4-mini", 200_000), ("codex-mini-latest", 200_000), ("gpt-4.1", 1_047_576),
                           ("gpt-oss", 96_000), ("openai/gpt-oss", 96_000), ("gpt-4o", 128_000), ("gpt-3.5", 16_385)):
        if slug.startswith(prefix):
            return window
    if slug.startswith(("test-gpt-5", "exp-", "codex-", "gpt-5")):
        return CONTEXT_WINDOW_272K
    return None


def default_auto_compact_limit(context_window: int) -> int:
    """ModelFamily::default_auto_compact_limit: (context_window * 9) / 10, in integers."""
    return (context_window * 9) // 10


def approx_token_count(text: str) -> int:
    """truncate.rs approx_token_count: UTF-8 bytes / 4, rounded up."""
    return (len(text.encode("utf-8")) + APPROX_BYTES_PER_TOKEN - 1) // APPROX_BYTES_PER_TOKEN


# -- truncate.rs (the version with TruncationSource) -------------------------------------------

def _prefix_end(data: bytes, left_budget: int) -> int:
    head = data[:left_budget]
    i = head.rfind(b"\n")
    if i >= 0 and _boundary(data, left_budget):
        return i + 1
    end = min(left_budget, len(data))
    while end > 0 and not _boundary(data, end):
        end -= 1
    return end


def _suffix_start(data: bytes, right_budget: int) -> int:
    start = max(0, len(data) - right_budget)
    if _boundary(data, start):
        i = data.find(b"\n", start)
        if i >= 0:
            return i + 1
    idx = start
    while idx < len(data) and not _boundary(data, idx):
        idx += 1
    return idx


def _boundary(data: bytes, i: int) -> bool:
    """str::is_char_boundary on UTF-8 bytes (Rust's `s.get(..i)` is None off a boundary)."""
    return i <= 0 or i >= len(data) or (data[i] & 0xC0) != 0x80


def truncate_tokens(text: str, max_tokens: int) -> str:
    """truncate_text(text, TruncationPolicy::Tokens(max_tokens)): truncate_with_token_budget."""
    if not text:
        return ""
    data = text.encode("utf-8")
    if max_tokens > 0:
        small = (max_tokens // 4) * APPROX_BYTES_PER_TOKEN
        if small > 0 and len(data) <= small:
            return text
    max_bytes = max_tokens * APPROX_BYTES_PER_TOKEN
    if max_bytes == 0:
        return f"[…{(len(data) + 3) // 4} tokens truncated…]"
    if len(data) <= max_bytes:
        return text
    removed = len(data) - max_bytes
    marker = f"[…{(removed + 3) // 4} tokens truncated…]".encode()
    if len(marker) >= max_bytes:
        cut = max_bytes
        while cut > 0 and not _boundary(marker, cut):
            cut -= 1
        return marker[:cut].decode("utf-8")
    keep = max_bytes - len(marker)
    left = keep // 2
    right = keep - left
    prefix_end = _prefix_end(data, left)
    suffix_start = max(_suffix_start(data, right), prefix_end)
    out = data[:prefix_end] + marker + b"\n" + data[suffix_start:]
    if len(out) > max_bytes:
        cut = max_bytes
        while cut > 0 and not _boundary(out, cut):
            cut -= 1
        out = out[:cut]
    return out.decode("utf-8")


# -- what Codex counts as a user message -------------------------------------------------------

def user_message_text(message: Message) -> str | None:
    """event_mapping parse_user_message + UserMessageItem::message: the texts joined with nothing;
    None for what is not the user's own words (AGENTS.md, the environment, skills, shell commands)."""
    if message.role != "user":
        return None
    texts = [p.text for p in message.parts if isinstance(p, TextPart)]
    if texts and (texts[0].startswith(("# AGENTS.md instructions for ", "<user_instructions>", "<skill"))):
        return None
    for t in texts:
        lowered = t.lstrip().lower()
        if lowered.startswith(("<environment_context>", "<user_shell_command>")):
            return None
    text = "".join(texts)
    if text.startswith(f"{SUMMARY_PREFIX}\n"):
        return None  # is_summary_message
    return text


def is_initial_context(message: Message) -> bool:
    """Developer messages and the injected user messages build_initial_context writes again."""
    return message.role == "system" or (message.role == "user" and user_message_text(message) is None)


def initial_context(session: Session) -> list[Message]:
    """The injected user messages before the first real one (developer messages join the
    instructions): what build_initial_context writes again after a compaction."""
    first_user = next((m.index for m in session.messages if m.role == "user" and user_message_text(m) is not None), len(session.messages))
    return [m for m in session.messages[:first_user] if m.role == "user" and is_initial_context(m)]


def select_user_messages(texts: list[str], max_tokens: int) -> list[tuple[int, str]]:
    """build_compacted_history_with_limit's selection: (position, text sent), oldest first."""
    return _select_newest(((i, texts[i]) for i in range(len(texts) - 1, -1, -1)), max_tokens)


def newest_user_messages(messages: Sequence[Message], max_tokens: int) -> list[tuple[Message, str]]:
    """`select_user_messages` over the user messages among `messages`: (message, text sent), oldest
    first. Codex collects every user message before it selects; the selection reads them newest
    first and stops once `max_tokens` are spent, so only those are read here (a re-plan that makes
    a 100,000-message session's first compaction read 100,000 messages' texts for a few kept)."""
    newest_first = ((m, text) for m in reversed(messages) if (text := user_message_text(m)) is not None)
    return _select_newest(newest_first, max_tokens)


def _select_newest(newest_first: Iterable[tuple[K, str]], max_tokens: int) -> list[tuple[K, str]]:
    """The selection itself, over (key, text) pairs newest first, read only as far as it goes:
    whole texts while they fit, the first that does not cut to what is left, oldest first."""
    selected: list[tuple[K, str]] = []
    remaining = max_tokens
    if remaining > 0:
        for key, text in newest_first:
            tokens = approx_token_count(text)
            if tokens <= remaining:
                selected.append((key, text))
                remaining -= tokens
            else:
                selected.append((key, truncate_tokens(text, remaining)))
                break
            if remaining == 0:
                break
        selected.reverse()
    return selected


def user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def item_tokens(item: Any) -> int:
    """approx_token_count(serde_json::to_string(item))."""
    return approx_token_count(json.dumps(item, ensure_ascii=False, separators=(",", ":")))


#: The UTF-8 bytes of `user_item("")`'s JSON less the empty text's two quotes: the fixed part
#: around the text's JSON string.
_USER_ITEM_BYTES = len(json.dumps(user_item(""), ensure_ascii=False, separators=(",", ":")).encode("utf-8")) - 2


def user_item_tokens(text: str) -> int:
    """`item_tokens(user_item(text))` without the item: its JSON is a fixed head and tail around
    the text's JSON string, which `json.dumps` writes with `encode_basestring` (ensure_ascii off),
    so only that string is written. A compaction counts each user message it keeps so: a dict and
    an encoder made per message cost twice the count (tests/test_codex_user_item_tokens.py holds
    the two equal)."""
    return (_USER_ITEM_BYTES + len(encode_basestring(text).encode("utf-8")) + APPROX_BYTES_PER_TOKEN - 1) // APPROX_BYTES_PER_TOKEN


def reported_total(message: Message) -> int | None:
    """last_token_usage.total_tokens: input (with its cached part) plus output."""
    u = message.usage
    if u is None:
        return None
    return u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens + u.output_tokens


def stand_in_summary(messages: list[Message], text: str | None = None) -> str:
    from ...summarizers import supyagent_snapshot  # lazily: it imports urllib, which ctxviz loads only to summarise

    suffix = text if text is not None else supyagent_snapshot(messages)
    return f"{SUMMARY_PREFIX}\n{suffix}"


def generated_form(summary: Summary) -> bool:
    """Whether a summary reads as Codex's own (after SUMMARY_PREFIX): the plan then keeps user
    messages of what it covers and estimates the count, as after a compaction it ran itself."""
    return summary.text.startswith(f"{SUMMARY_PREFIX}\n")


def leading_system_messages(session: Session) -> list[Message]:
    """The system (developer) messages before the first other message: the ones Codex sends with
    its instructions, at the front of every request. A developer message written later (a changed
    sandbox or approval policy, a model switch) is a history item, sent in its place."""
    first_other = next((m.index for m in session.messages if m.role != "system"), len(session.messages))
    return [m for m in session.messages[:first_other] if m.role == "system"]


def instruction_shares(session: Session, system_messages: list[Message], instructions_tokens: int) -> dict[int, int]:
    """Each leading developer message's tokens sent: its part of the instructions' count (they are
    sent inside the instructions, which are counted whole), split by UTF-8 bytes, largest remainders
    first. Each message's own item count (with its role and framing) summed to more than the
    instructions it is part of: 60 sent beside instructions of 29 in a real rollout."""
    parts = ([session.system_prompt] if session.system_prompt else []) + [m.text for m in system_messages]
    weights = [len(text.encode("utf-8")) for text in parts]
    whole = sum(weights)
    if not whole:
        return {m.index: 0 for m in system_messages}
    exact = [instructions_tokens * w / whole for w in weights]
    shares = [int(x) for x in exact]
    for k in sorted(range(len(exact)), key=lambda k: shares[k] - exact[k])[: instructions_tokens - sum(shares)]:
        shares[k] += 1
    own = shares[len(parts) - len(system_messages):]
    return {m.index: share for m, share in zip(system_messages, own, strict=True)}


def _covered_messages(session: Session, summary: Summary | None) -> list[Message]:
    if summary is None:
        return []
    ids = set(summary.covers)
    return [m for m in session.messages if m.id in ids]
