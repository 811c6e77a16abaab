"""The request as the provider counts it, for the part of it no reported usage covers.

An agent's policy sizes its next request the agent's way, because that size decides when the agent
compacts: Codex takes the last call's reported tokens plus JSON bytes / 4 of every item since (the
whole history before any call), Claude Code the last reported usage plus characters / 4, Gemini CLI
its own character rule. The replay keeps that estimate for the policy's decisions. The provider bills
its own count, and the two can be far apart: a 63 KB base64 screenshot is about 15,000 tokens by
bytes / 4 and about 1,000 by OpenAI's tile rule, so a rollout's first request came out 25,400 tokens
where the provider counted 10,144.

So the cache model prices what no reported usage covers with the provider's count: the model's
encoding (o200k_base where the provider publishes none: for Claude and Gemini it is an estimate),
the chat format's per-message overhead, and images by the model's tile rule (`engine.images`), the
same count `engine.reported` measures the first call's unseen prefix with. What the log reports
stays the reported figure.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import Any

import numpy as np

from .plan import Decision, Plan
from .plan_rows import Rows, decided_at
from .session import Session
from .tokenizers import TiktokenTokenizer, Tokenizer, count_openai_chat, real_encoding_for_model

#: The policies that count the next request from the log's reported usage, and whether the figure
#: they anchor on holds the anchoring call's answer (its output tokens: Claude Code and Codex add
#: them) or only its prompt (Gemini CLI then adds the answer's own estimate).
COUNTS_FROM_USAGE: Mapping[str, bool] = {"claude-code": True, "codex-compaction": True, "gemini-cli-compression": False}
#: The chat format's priming: every request costs it once (the cookbook's count).
PRIMING = 3
UNSEEN_KEY = ("unseen prefix",)
TOOLS_KEY = ("tool definitions",)


def provider_tokenizer(model: str) -> Tokenizer:
    """The model's encoding as the catalogue or tiktoken names it; o200k_base for a model whose
    provider publishes none. The catalogue is imported here: a plan that reports no usage (most
    plans of a session without it) reads none."""
    from .catalog import find_model

    entry = find_model(model)
    return TiktokenTokenizer(entry.encoding if entry is not None and entry.encoding else real_encoding_for_model(model))


def tools_tokens(session: Session, tokenizer: Tokenizer) -> int:
    """The tool definitions the log records, as one text (0 without them)."""
    return tokenizer.count(json.dumps([t.to_openai() for t in session.tools])) if session.tools else 0


class ProviderCount:
    """The provider's count of one session's messages and of the other entries a request holds,
    measured once each, on demand (a replay prices many requests that share most messages)."""

    def __init__(self, session: Session, model: str) -> None:
        self.session = session
        self.model = model or session.model or "gpt-4o"
        self.tokenizer = provider_tokenizer(self.model)
        self._messages: dict[int, tuple[dict[str, Any], int]] = {}
        #: Each message's count as `message` gave it, read directly where a replay prices its steps.
        self.counted: dict[int, int] = {}
        self._texts: dict[tuple[str, str], int] = {}
        self._tools: int | None = None

    def entry(self, item: Mapping[str, Any]) -> int:
        """One chat entry (a summary, the system prompt, a rewritten message), without the priming;
        a plain-text entry is counted once (the same system prompt opens every request)."""
        role, content = item.get("role"), item.get("content")
        if len(item) == 2 and isinstance(role, str) and isinstance(content, str):
            found = self._texts.get((role, content))
            if found is None:
                found = self._texts[(role, content)] = count_openai_chat([item], model=self.model, tokenizer=self.tokenizer) - PRIMING
            return found
        return count_openai_chat([item], model=self.model, tokenizer=self.tokenizer) - PRIMING

    def _message(self, index: int) -> tuple[dict[str, Any], int]:
        found = self._messages.get(index)
        if found is None:
            whole = self.session.messages[index].to_openai()
            found = self._messages[index] = (whole, self.entry(whole))
        return found

    def message(self, index: int) -> int:
        found = self.counted.get(index)
        if found is None:
            found = self.counted[index] = self._message(index)[1]
        return found

    def sent(self, index: int, item: Mapping[str, Any], kept: bool) -> int:
        """Message `index` as the request holds it (`item`): its own count where it is sent unchanged
        (`kept`, and `item` is its whole form), else the count of what is sent (a cut-down or
        rewritten message)."""
        whole, tokens = self._message(index)
        if kept and item == whole:
            return tokens
        return self.entry(item)

    @property
    def tools(self) -> int:
        if self._tools is None:
            self._tools = tools_tokens(self.session, self.tokenizer)
        return self._tools


def counts_from_usage(plan: Plan) -> bool:
    return plan.policy in COUNTS_FROM_USAGE


def anchor_index(plan: Plan, session: Session) -> int | None:
    """The message whose reported usage the policy counted the request from, or None where it
    counted no usage (`extra["request_tokens"]` absent, or only the unseen prefix added)."""
    extra = plan.extra if isinstance(plan.extra, dict) else {}
    if not isinstance(extra.get("request_tokens"), int):
        return None
    if "anchor_index" in extra:  # Claude Code names it (usage after a compaction only)
        found = extra["anchor_index"]
        return found if isinstance(found, int) else None
    messages = plan.messages
    if isinstance(messages, Rows):  # (read from the columns: a row per message of a long prefix, per request, was quadratic)
        roles = messages.columns.session.message_columns[1]
        sent = (int(i) for i in np.flatnonzero(messages.columns.sent)[::-1])
        return next((i for i in sent if roles[i] == "assistant" and session.messages[i].usage is not None), None)
    found = [m.index for m in messages if m.sent and m.role == "assistant"]
    return next((i for i in reversed(found) if session.messages[i].usage is not None), None)


def usage_request(plan: Plan, anchored: int, anchor: int, recounts: Iterable[tuple[int, int]], sent_tokens: Callable[[int], int]) -> int:
    """A request counted from the reported usage of message `anchor` (`anchored`: the policy's count
    from it): each message after the anchor (and the anchor itself where the reported figure leaves
    its answer out, Gemini CLI) recounted by the provider, `recounts` (index, count), in place of the
    policy's estimate of it, `sent_tokens(index)`. The one rule the cache model and the next call's
    price read."""
    with_answer = COUNTS_FROM_USAGE.get(plan.policy, True)
    return max(0, anchored + sum(n - sent_tokens(i) for i, n in recounts if i > anchor or (i == anchor and not with_answer)))


def provider_request(plan: Plan, session: Session, count: ProviderCount, unseen: int,
                     item_key: Callable[[int, Decision, int], Any]) -> tuple[int, list[tuple[Any, int]]]:
    """(request tokens, its items, the unseen prefix and tool definitions first) as the provider
    counts them. Counted from usage: the policy's request with each message after the anchor
    recounted (the anchor's reported figure already holds the system prompt, the tools and every
    earlier message). Otherwise: every entry counted, plus the tools, the unseen prefix and the
    priming. `item_key(index, decision, sent_tokens)` names a message item as the rest of the cache
    model does.

    A message the policy hands over as the session's own message object is counted from the
    session's count without building its request form: what is sent of it is all of it (its form
    is the one `ProviderCount.message` counted). Decisions and sent tokens come from the plan's
    columns, for the messages in the request only."""
    context = plan.context
    entries = list(context.entries)  # (the policy's runs read once, in order: not one lookup per entry)
    indices = list(plan.context_index) if plan.context_index else [None] * len(entries)
    del entries[len(indices):], indices[len(entries):]
    where = [k for k, index in enumerate(indices) if index is not None]  # the entries that are session messages
    at = [indices[k] for k in where]
    decisions, sent_tokens = decided_at(plan.messages, at)
    counts = _message_counts(count, [entries[k] for k in where], at, lambda j: context[where[j]], decisions)
    items: list[tuple[Any, int]] = list(zip(map(item_key, at, decisions, sent_tokens), counts, strict=True))
    for k in (k for k, index in enumerate(indices) if index is None):  # in order: each lands at its own position
        entry = context[k]
        items.insert(k, (("x", entry.get("role"), str(entry.get("content", ""))), count.entry(entry)))
    anchored = plan.extra.get("request_tokens") if isinstance(plan.extra, dict) else None
    anchor = anchor_index(plan, session)
    if isinstance(anchored, int) and anchor is not None:
        recount, sent_of = dict(zip(at, counts, strict=True)), dict(zip(at, sent_tokens, strict=True))
        request = usage_request(plan, anchored, anchor, recount.items(), sent_of.__getitem__)
        return request, [(UNSEEN_KEY, max(0, request - sum(map(itemgetter(1), items)))), *items]
    head: list[tuple[Any, int]] = [(UNSEEN_KEY, unseen)] if unseen else []
    if count.tools:
        head.append((TOOLS_KEY, count.tools))
    items = head + items
    return sum(map(itemgetter(1), items)) + PRIMING, items


def _message_counts(count: ProviderCount, raws: list[Any], at: list[int], built: Callable[[int], Mapping[str, Any]],
                    decisions: list[Decision]) -> list[int]:
    """The provider's count of each message item of a request (`raws`: what the policy handed over
    for session messages `at`; `built(j)`: item j's request form). A message handed over as the
    session's own object is all of it, counted once per session (`ProviderCount.counted`); only the
    others (cut down or rewritten) and the messages not counted yet are looked at one by one: a
    replay's requests share most of their messages, and walking each in Python was most of pricing."""
    own = count.session.messages
    counts: list[int | None] = list(map(count.counted.get, at))
    if at and max(at) < len(own):
        same = list(map(operator.is_, raws, map(own.__getitem__, at)))
    else:
        same = [index < len(own) and raw is own[index] for raw, index in zip(raws, at, strict=True)]
    if False in same:
        for j in [j for j, s in enumerate(same) if not s]:
            counts[j] = count.sent(at[j], built(j), decisions[j] is Decision.KEPT)
    if None in counts:
        for j in [j for j, n in enumerate(counts) if n is None]:
            counts[j] = count.message(at[j])
    return counts  # type: ignore[return-value]
