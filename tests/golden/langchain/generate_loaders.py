"""Loader-level golden cases for ctxviz's langchain-trim policy (issue 21), decided by LangChain itself.

Writes LangChain dumps (`messages_to_dict` and `dumpd`) into `loaders/` holding what the LangChain
loader once misread: message chunks (`AIMessageChunk.type == "AIMessageChunk"`, so the string
`start_on` / `end_on` of trim_messages do not match them as "ai") and a ChatMessage with a custom
role (`critic`, which LangChain accepts), and ChatMessages of every kind of role (`custom_roles`: the
standard roles spelt as a ChatMessage, named agents, a capitalised role, a name, list content). It
records count_tokens_approximately of each message and of the whole list (`counts`), runs `trim_messages` on the same messages with
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


def custom_roles() -> list[BaseMessage]:
    """ChatMessages of every kind of role: the standard ones spelt as a ChatMessage (LangChain keeps
    their type "chat", so start_on="ai" or include_system do not see them), named agents, a critic
    with a name, list content, and a tool exchange around them."""
    return [
        ChatMessage(role="system", content="You moderate a panel of agents."),
        HumanMessage(content="plan the retry policy " + LINE),
        ChatMessage(role="planner", content=[{"type": "text", "text": "step 1: measure; step 2: " + LINE}]),
        AIMessage(content="", tool_calls=[{"name": "measure", "args": {"service": "order"}, "id": "call_9"}]),
        ToolMessage(content="p99 31 s", tool_call_id="call_9"),
        ChatMessage(role="critic", name="reviewer", content="the plan ignores idempotency; " + LINE),
        ChatMessage(role="assistant", content="Adding idempotency keys. " + LINE),
        ChatMessage(role="user", content="ok"),
        ChatMessage(role="Critic", content="fine"),
        ChatMessage(role="developer", content="Answer in one line."),
        AIMessage(content="Retry 3 times with backoff and idempotency keys."),
    ]


SESSIONS = {
    "streamed_agent.messages_to_dict.json": (streamed_agent, lambda ms: messages_to_dict(ms)),
    "streamed_agent.dumpd.json": (streamed_agent, lambda ms: [dumpd(m) for m in ms]),
    "critic_loop.messages_to_dict.json": (critic_loop, lambda ms: messages_to_dict(ms)),
    "critic_loop.dumpd.json": (critic_loop, lambda ms: [dumpd(m) for m in ms]),
    "custom_roles.messages_to_dict.json": (custom_roles, lambda ms: messages_to_dict(ms)),
    "custom_roles.dumpd.json": (custom_roles, lambda ms: [dumpd(m) for m in ms]),
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
    {"end_on": ["chat", "ai"]},
    {"include_system": True, "start_on": "chat"},
]


def main() -> None:
    FILES.mkdir(exist_ok=True)
    cases = []
    counts = {}
    for name, (build, dump) in SESSIONS.items():
        messages = build()
        (FILES / name).write_text(json.dumps(dump(messages), indent=2) + "\n", encoding="utf-8")
        total = count_tokens_approximately(messages)
        counts[name] = {"per_message": [count_tokens_approximately([m]) for m in messages], "total": total}
        for settings in SETTINGS:
            for max_tokens in sorted({10, 40, 80, total // 2, total}):
                kept = trim_messages(messages, max_tokens=max_tokens, token_counter=count_tokens_approximately, strategy="last", **settings)
                positions = [next(i for i, m in enumerate(messages) if m is k) for k in kept]
                cases.append({"file": name, "max_tokens": max_tokens, "settings": settings, "kept": positions,
                              "types": [m.type for m in messages]})
    OUT.write_text(json.dumps({"framework": "langchain-core", "version": version("langchain-core"), "counts": counts, "cases": cases}, indent=1) + "\n",
                   encoding="utf-8")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
