"""Deterministic, offline summaries in each framework's format, used when a simulated trigger fires.

The frameworks ask an LLM; ctxviz defaults to extractive summaries so simulations are repeatable and
need no network. `EndpointSummarizer` calls an OpenAI-compatible endpoint when a user asks for it
(never in tests).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
import weakref
from collections.abc import Sequence
from typing import Protocol

from ..errors import EndpointError
from .session import Message

PATH_RE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:py|pyi|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|cfg|ini|sh|sql|html|css|go|rs|java|rb|lock|conf|env))\b")
URL_RE = re.compile(r"https?://[^\s\"'<>)]+")
ERROR_RE = re.compile(r"^.*\b(?:error|exception|traceback|failed|failure)\b.*$", re.I | re.M)
DECISION_RE = re.compile(r"^.*\b(?:decided|decision|we'll use|will use|chose|going with|let's use|plan is)\b.*$", re.I | re.M)
#: The words ERROR_RE and DECISION_RE look for, searched alone: a line is theirs when it holds one
#: (`_lines_with`), which finds the same lines without trying `^.*` at every line's start.
ERROR_WORD_RE = re.compile(r"\b(?:error|exception|traceback|failed|failure)\b", re.I)
DECISION_WORD_RE = re.compile(r"\b(?:decided|decision|we'll use|will use|chose|going with|let's use|plan is)\b", re.I)
#: What every PATH_RE match ends with: texts without it are not searched.
PATH_END_RE = re.compile(r"\.(?:py|pyi|js|ts|tsx|jsx|json|ya?ml|toml|md|txt|cfg|ini|sh|sql|html|css|go|rs|java|rb|lock|conf|env)\b")
WRITE_TOOLS = ("write", "edit", "patch", "create", "apply", "replace", "update")
WORD_LIMIT = 600


class Summarizer(Protocol):
    def supyagent_snapshot(self, messages: Sequence[Message]) -> str: ...


def _clip(text: str, width: int = 160) -> str:
    if len(text) > 4 * width:
        # The whole words of the text's head are the flattened text's start: when they already run
        # past `width`, the rest of a long text (a tool's output) need not be split.
        head = " ".join(text[: 4 * width].split()[:-1])
        if len(head) > width:
            return head[: width - 1] + "…"
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _lines_with(word: re.Pattern[str], text: str, limit: int | None = None) -> list[str]:
    """The lines of `text` holding a match of `word` (at most `limit`): what
    `re.compile(r"^.*" + word + r".*$", re.M).findall(text)` gives, in one search per line found."""
    lines: list[str] = []
    at = 0
    while limit is None or len(lines) < limit:
        found = word.search(text, at)
        if found is None:
            break
        start = text.rfind("\n", 0, found.start()) + 1
        end = text.find("\n", found.end())
        end = len(text) if end < 0 else end
        lines.append(text[start:end])
        at = end
    return lines


def _unique(items: list[str], limit: int) -> list[str]:
    """The last `limit` distinct non-empty items, in the order each first appears (a dict keeps
    that order: a list searched for each item was quadratic in a long session's tool results)."""
    return [item for item in dict.fromkeys(items) if item][-limit:]


Features = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str, str]
_FEATURES: weakref.WeakKeyDictionary[Message, Features] = weakref.WeakKeyDictionary()


def _features(m: Message) -> Features:
    """(files, decisions, values, last action, request) of one message, kept while the message
    lives: a simulation summarises the same early messages again at every trigger (supyagent
    re-summarises from 0), and a re-plan after a parameter moved summarises nearly the span its
    first plan did. (A cache of the last 65,536 messages forgot a 100,000-message session's first
    messages before its re-plan asked for them again.)"""
    found = _FEATURES.get(m)
    if found is None:
        found = _FEATURES[m] = _extract(m)
    return found


_features.cache_clear = _FEATURES.clear  # type: ignore[attr-defined]  # what a benchmark calls to start cold


def _extract(m: Message) -> Features:
    text = m.text
    files: list[str] = []
    decisions: list[str] = []
    values: list[str] = []
    action = request = ""
    for call in m.tool_calls:
        verb = "changed" if any(w in call.name.lower() for w in WRITE_TOOLS) else "read"
        if PATH_END_RE.search(call.arguments):
            files += [f"{p} ({verb} via {call.name})" for p in PATH_RE.findall(call.arguments)]
        action = f"called {call.name}({_clip(call.arguments, 80)})"
    if m.role == "tool":
        values += [_clip(line, 160) for line in _lines_with(ERROR_WORD_RE, text, 2)]
        if text.strip() and not re.fullmatch(r"\s*(\{\s*\"ok\"\s*:\s*true\s*\}|ok|done|success)\s*", text, re.I):
            values.append(f"[{m.name or 'tool'}] {_clip(text, 120)}")
    if m.role == "assistant":
        decisions += [_clip(line, 160) for line in _lines_with(DECISION_WORD_RE, text)]
        if text.strip():
            action = _clip(text, 160)
    if m.role == "user" and text.strip():
        request = _clip(text, 160)
    if "http" in text:
        values += URL_RE.findall(text)[:3]
    return tuple(files), tuple(decisions), tuple(values), action, request


def supyagent_snapshot(messages: Sequence[Message]) -> str:
    """supyagent's five-section state snapshot, built from file paths, decisions, error lines, data
    tool results and the latest requests, kept under 600 words."""
    files: list[str] = []
    decisions: list[str] = []
    values: list[str] = []
    pending: list[str] = []
    last_action = ""
    for m in messages:
        f, d, v, action, request = _features(m)
        files += f
        decisions += d
        values += v
        last_action = action or last_action
        if request:
            pending.append(request)
    return render_snapshot(_unique(files, 12), _unique(decisions, 8), _unique(values, 12), last_action,
                           pending[-1] if pending else "", _unique(pending, 4))


def render_snapshot(files: list[str], decisions: list[str], values: list[str], last_action: str, last_request: str,
                    pending: list[str]) -> str:
    """The five sections of supyagent's snapshot from what was gathered, cut to its word limit
    (shared by the summariser and the incremental replay, which gathers turn by turn)."""
    sections = [
        ("Files Modified", files),
        ("Key Decisions", decisions),
        ("Important Values", values),
        ("Current State", [f"Last action: {last_action}" if last_action else "No action taken yet",
                           f"Latest request: {last_request}" if last_request else "No request yet"]),
        ("Pending Tasks", pending),
    ]
    lines: list[str] = []
    for title, items in sections:
        lines.append(f"## {title}")
        lines += [f"- {item}" for item in items] or ["- (none)"]
        lines.append("")
    text = "\n".join(lines).strip()
    words = text.split(" ")
    return text if len(words) <= WORD_LIMIT else " ".join(words[:WORD_LIMIT]) + " …"


def mnesis_fallback(messages: Sequence[Message], budget_tokens: int) -> str:
    """mnesis' Level 3 deterministic summary: newest messages as `[ROLE]: …` lines (500 chars each)
    while they fit, with the file-id footer when file ids appear."""
    header = "[CONTEXT TRUNCATED \u2014 DETERMINISTIC FALLBACK]\n\n## Kept Messages\n\n"
    file_ids = sorted({f for m in messages for f in re.findall(r"\bfile_[0-9a-fA-F]{8,32}\b", m.text)})
    footer = f"\n\n[LCM File IDs: {', '.join(file_ids)}]" if file_ids else ""
    room = budget_tokens * 4 - len(header) - len(footer)
    kept: list[str] = []
    for m in reversed(messages):
        line = f"[{'USER' if m.role == 'user' else 'ASSISTANT'}]: {m.text[:500]}"
        if len(line) + 1 > room:
            break
        kept.insert(0, line)
        room -= len(line) + 1
    return header + "\n".join(kept) + footer


class EndpointSummarizer:
    """Asks an OpenAI-compatible chat endpoint for supyagent's snapshot (opt-in, network)."""

    def __init__(self, url: str, model: str, api_key: str = "", timeout: float = 60.0) -> None:
        self.url, self.model, self.api_key, self.timeout = url.rstrip("/"), model, api_key, timeout

    def supyagent_snapshot(self, messages: Sequence[Message]) -> str:
        transcript = "\n\n".join(f"{m.role.upper()}: {m.text}" for m in messages if m.role != "system")
        prompt = ("Summarize the conversation as a structured state snapshot with the sections ## Files Modified, "
                  "## Key Decisions, ## Important Values, ## Current State, ## Pending Tasks, under 600 words.\n\n"
                  f"Conversation:\n{transcript}\n\nSummary:")
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": prompt}]}).encode()
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})}
        request = urllib.request.Request(f"{self.url}/chat/completions", data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (user-given URL)
                answer = json.load(response)
        except urllib.error.HTTPError as exc:
            raise EndpointError(f"--summarizer-url {self.url}: the endpoint answered HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EndpointError(f"--summarizer-url {self.url}: cannot reach the endpoint ({getattr(reason, 'strerror', None) or reason})") from None
        except ValueError:
            raise EndpointError(f"--summarizer-url {self.url}: the endpoint's answer is not JSON") from None
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"--summarizer-url {self.url}: the answer has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise EndpointError(f"--summarizer-url {self.url}: the summary is not text")
        return content


class ExtractiveSummarizer:
    def supyagent_snapshot(self, messages: Sequence[Message]) -> str:
        return supyagent_snapshot(messages)
