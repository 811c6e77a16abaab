"""Loader-level golden cases for ctxviz's LlamaIndex policies (issue 21), decided by LlamaIndex itself.

The other golden cases build sessions in memory; these go through ctxviz's loaders. This script
writes small session files (OpenAI Chat Completions JSON and ctxviz YAML) into `loaders/` with what
the loaders once misread: `"content": ""` (an empty text, 0 tokens, not the text 'None'), the OpenAI
`function` role (MessageRole.FUNCTION, on which ChatMemoryBuffer may start its window), and several
system messages (SimpleChatEngine's prefix messages, counted joined by a space). Each file's
messages become LlamaIndex ChatMessages as an application would pass them (`role`, `content`,
OpenAI `tool_calls` in `additional_kwargs`); the system messages are SimpleChatEngine's
`prefix_messages`, counted as its `chat()` counts them; ChatMemoryBuffer.get runs at several token
limits, and `loader_cases.json` records what it returned.

Run by hand in a scratch venv (never by the tests):

    python -m venv /tmp/venv-llama && /tmp/venv-llama/bin/pip install llama-index-core==0.14.25
    TIKTOKEN_CACHE_DIR=<a cache holding cl100k_base> /tmp/venv-llama/bin/python tests/golden/llamaindex/generate_loaders.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.utils import get_tokenizer

HERE = Path(__file__).parent
FILES = HERE / "loaders"
OUT = HERE / "loader_cases.json"

LINE = "the order service returns a timeout when the cart has more than forty items so we retry with backoff"


def call(i: int, name: str = "lookup") -> dict[str, Any]:
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps({"q": f"item {i}"})}}


SESSIONS: dict[str, dict[str, Any]] = {
    # OpenAI messages with empty strings where a loader once dropped the content.
    "openai_empty_content.json": {"model": "gpt-4o", "messages": [
        {"role": "system", "content": "You are a careful support agent."},
        {"role": "user", "content": LINE},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "", "tool_calls": [call(1)]},
        {"role": "tool", "tool_call_id": "call_1", "content": ""},
        {"role": "assistant", "content": LINE + " again"},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "and now? " + LINE},
        {"role": "assistant", "content": None, "tool_calls": [call(2)]},
        {"role": "tool", "tool_call_id": "call_2", "content": "ok"},
        {"role": "user", "content": ""},
    ]},
    # The legacy `function` role: LlamaIndex's FUNCTION, not TOOL.
    "openai_function_role.json": {"model": "gpt-3.5-turbo", "messages": [
        {"role": "user", "content": "what is the weather? " + LINE},
        {"role": "assistant", "content": None, "function_call": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}},
        {"role": "function", "name": "weather", "content": "rain, 7 degrees " + LINE},
        {"role": "function", "name": "weather", "content": "wind 12 m/s " + LINE},
        {"role": "assistant", "content": "It rains in Oslo. " + LINE},
        {"role": "function", "name": "forecast", "content": "tomorrow: sun " + LINE},
        {"role": "assistant", "content": "Tomorrow looks sunny."},
        {"role": "user", "content": "thanks"},
    ]},
    # Several system messages: SimpleChatEngine's prefix messages, joined by a space when counted.
    "openai_several_system.json": {"messages": [
        {"role": "system", "content": "You are a careful support agent."},
        {"role": "system", "content": "Answer in English.\n"},
        {"role": "system", "content": "Never share internal ticket numbers."},
        {"role": "user", "content": LINE},
        {"role": "assistant", "content": "Noted. " + LINE},
        {"role": "user", "content": "why " + LINE},
        {"role": "assistant", "content": "Because " + LINE},
        {"role": "user", "content": "ok"},
    ]},
    # ctxviz's own format with empty content.
    "ctxviz_empty_content.yaml": {"ctxviz": 1, "messages": [
        {"role": "system", "content": "You are Missy."},
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": LINE},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "Done: " + LINE},
        {"role": "user", "content": ""},
    ]},
}


def chat_message(m: dict[str, Any]) -> ChatMessage:
    extra: dict[str, Any] = {}
    if m.get("tool_calls"):
        extra["tool_calls"] = m["tool_calls"]
    if m.get("tool_call_id"):
        extra["tool_call_id"] = m["tool_call_id"]
    if m.get("function_call"):
        extra["function_call"] = m["function_call"]
    if m.get("name"):
        extra["name"] = m["name"]
    return ChatMessage(role=m["role"], content=m.get("content"), additional_kwargs=extra)


def main() -> None:
    FILES.mkdir(exist_ok=True)
    tokenizer = get_tokenizer()
    cases = []
    for name, doc in SESSIONS.items():
        path = FILES / name
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True) if name.endswith(".yaml")
                        else json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        messages = doc["messages"]
        prefix = [chat_message(m) for m in messages if m["role"] == "system"]
        history = [(i, chat_message(m)) for i, m in enumerate(messages) if m["role"] != "system"]
        # SimpleChatEngine.chat: the prefix messages' contents joined by a space.
        initial = len(tokenizer(" ".join([(m.content or "") for m in prefix if isinstance(m.content, str)])))
        whole = len(tokenizer(" ".join(str(m.content) for _, m in history)))
        limits = sorted({initial + k for k in (1, 5, 10, 20, 30, 40, 60, 80)} | {initial + whole, initial + whole - 1})
        for limit in limits:
            buffer = ChatMemoryBuffer.from_defaults(chat_history=[m for _, m in history], token_limit=limit)
            try:
                got = buffer.get(initial_token_count=initial)
                error = None
            except ValueError as exc:
                got, error = [], str(exc)
            kept = [i for (i, m) in history if any(g is m for g in got)]
            if got and not kept:  # get() may return copies: match by position from the end
                kept = [i for i, _ in history[len(history) - len(got):]]
            token_count = len(tokenizer(" ".join(str(m.content) for m in got))) + initial if got else None
            cases.append({"file": name, "token_limit": limit, "initial_token_count": initial, "kept": kept, "error": error,
                          "token_count": token_count})
    OUT.write_text(json.dumps({"framework": "llama-index-core", "version": version("llama-index-core"), "tiktoken": version("tiktoken"),
                               "encoding": "cl100k_base", "cases": cases}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
