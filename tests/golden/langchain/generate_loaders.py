"""Loader-level golden cases for ctxviz's langchain-trim policy (issue 21), decided by LangChain itself.

Writes LangChain dumps (`messages_to_dict` and `dumpd`) into `loaders/` holding what the LangChain
loader once misread: message chunks (`AIMessageChunk.type == "AIMessageChunk"`, so the string
`start_on` / `end_on` of trim_messages do not match them as "ai") and a ChatMessage with a custom
role (`critic`, which LangChain accepts). It runs `trim_messages` on the same messages with
`count_tokens_approximately` over several budgets and `start_on` / `end_on` / `include_system`
settings, and writes the positions of the messages it kept to `loader_cases.json`.

Run by hand in a scratch venv (never by the tests):

    python -m venv /tmp/venv-langchain && /tmp/venv-langchain/bin/pip install langchain-core==1.8.2
    /tmp/venv-langchain/bin/python tests/golden/langchain/generate_loaders.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain_core.load import dumpd
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    messages_to_dict,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

HERE = Path(__file__).parent
FILES = HERE / "loaders"
OUT = HERE / "loader_cases.json"
LINE = "the order service returns a timeout when the cart has more than forty items so we retry with backoff"


def streamed_agent() -> list[BaseMessage]:
    """An agent whose model replies were kept as the streamed chunks it merged (a common mistake)."""
    return [
        SystemMessageChunk(content="You are a careful support agent."),
        HumanMessage(content="why does checkout fail? " + LINE),
        AIMessageChunk(content="", tool_call_chunks=[{"name": "lookup", "args": '{"q": "checkout"}', "id": "call_1", "index": 0}]),
        ToolMessage(content="timeout after 30 s " + LINE, tool_call_id="call_1"),
        AIMessageChunk(content="The checkout times out. " + LINE),
        HumanMessageChunk(content="and the fix?"),
        AIMessage(content="Retry with backoff. " + LINE),
        HumanMessage(content="thanks"),
        AIMessageChunk(content="You are welcome."),
    ]


def critic_loop() -> list[BaseMessage]:
    """A reflection loop: a critic speaks through ChatMessage with a role of its own."""
    return [
        SystemMessage(content="Write, then improve what the critic says."),
        HumanMessage(content="write a haiku about retries"),
        AIMessage(content="retry, then again / " + LINE),
        ChatMessage(role="critic", content="too long; " + LINE),
        AIMessage(content="retry, backoff, wait"),
        ChatMessage(role="critic", content="better"),
        HumanMessage(content="ship it"),
    ]


SESSIONS = {
    "streamed_agent.messages_to_dict.json": (streamed_agent, lambda ms: messages_to_dict(ms)),
    "streamed_agent.dumpd.json": (streamed_agent, lambda ms: [dumpd(m) for m in ms]),
    "critic_loop.messages_to_dict.json": (critic_loop, lambda ms: messages_to_dict(ms)),
}

SETTINGS: list[dict[str, Any]] = [
    {},
    {"end_on": "ai"},
    {"end_on": ["ai", "AIMessageChunk"]},
    {"start_on": "human"},
    {"start_on": "human", "end_on": "ai"},
    {"start_on": "HumanMessageChunk"},
    {"end_on": "chat"},
    {"start_on": "chat"},
    {"include_system": True},
    {"include_system": True, "start_on": "human"},
]


def main() -> None:
    FILES.mkdir(exist_ok=True)
    cases = []
    for name, (build, dump) in SESSIONS.items():
        messages = build()
        (FILES / name).write_text(json.dumps(dump(messages), indent=2) + "\n", encoding="utf-8")
        total = count_tokens_approximately(messages)
        for settings in SETTINGS:
            for max_tokens in sorted({10, 40, 80, total // 2, total}):
                kept = trim_messages(messages, max_tokens=max_tokens, token_counter=count_tokens_approximately, strategy="last", **settings)
                positions = [next(i for i, m in enumerate(messages) if m is k) for k in kept]
                cases.append({"file": name, "max_tokens": max_tokens, "settings": settings, "kept": positions,
                              "types": [m.type for m in messages]})
    OUT.write_text(json.dumps({"framework": "langchain-core", "version": version("langchain-core"), "cases": cases}, indent=1) + "\n",
                   encoding="utf-8")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
