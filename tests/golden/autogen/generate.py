"""Golden cases for ctxviz's AutoGen policies, decided by AutoGen's own classes.

Run by hand in a scratch venv (never by the tests):

    python -m venv /tmp/venv-autogen && /tmp/venv-autogen/bin/pip install autogen-core==0.7.5 "autogen-ext[openai]==0.7.5"
    TIKTOKEN_CACHE_DIR=<a cache holding o200k_base and cl100k_base> /tmp/venv-autogen/bin/python tests/golden/autogen/generate.py

It builds varied sessions deterministically (system prompts, user/assistant turns, tool calls and
results, images of several sizes, empty and whitespace-edged texts, long tool outputs, tool
schemas), turns them into LLMMessages as an AssistantAgent stores them (consecutive tool results are
one FunctionExecutionResultMessage; an assistant message with tool calls holds FunctionCalls, its
text as `thought`), and records what BufferedChatCompletionContext, HeadAndTailChatCompletionContext
and TokenLimitedChatCompletionContext return, and what OpenAIChatCompletionClient.count_tokens
counts (a real client built with a dummy api key: count_tokens makes no network call).
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import struct
import zlib
from importlib.metadata import version
from pathlib import Path
from typing import Any

from autogen_core import FunctionCall, Image
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
)
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    SystemMessage,
    UserMessage,
)
from autogen_ext.models.openai import OpenAIChatCompletionClient

OUT = Path(__file__).with_name("cases.json")
WORDS = ("the order service returns a timeout when the cart has more than forty items so we retry with backoff and log "
         "latency p99 regression config yaml pytest failed passed def class import async await ünïcødé 日本語 42 3.14 "
         "{json} [list] (paren) --flag /path/to/file.py").split()


def png(width: int, height: int) -> str:
    """A valid 1-bit PNG of the given size, as a data URI (its header is all that is read)."""
    raw = b"".join(b"\x00" + b"\x00" * ((width + 7) // 8) for _ in range(height))
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(data).decode()


def text(rng: random.Random, lo: int = 3, hi: int = 40) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))
    edge = rng.random()
    if edge < 0.15:
        body += "\n"
    elif edge < 0.25:
        body = "\n" + body
    elif edge < 0.32:
        body = " " + body + "  "
    elif edge < 0.37:
        body = "\n\n" + body + "\n\n"
    elif edge < 0.40:
        body += ".\n"
    return body


def long_output(rng: random.Random) -> str:
    return "\n".join(f"line {i}: " + " ".join(rng.choice(WORDS) for _ in range(8)) for i in range(rng.randint(15, 60))) + "\n"


def build_session(rng: random.Random, kind: str, turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []

    def add(role: str, parts: list[dict[str, Any]], **extra: Any) -> None:
        messages.append({"id": f"m{len(messages)}", "role": role, "parts": parts, **extra})

    call = 0
    if kind == "starts_with_assistant":
        add("assistant", [{"type": "text", "text": text(rng)}])
    if kind == "starts_with_tool":  # a context handed over mid-turn: its first message is a tool result
        add("tool", [{"type": "tool_result", "tool_call_id": "call_earlier", "text": text(rng)}], tool_call_id="call_earlier")
    for _ in range(turns):
        user_parts: list[dict[str, Any]] = []
        if kind == "images" and rng.random() < 0.6:
            if rng.random() < 0.7:
                user_parts.append({"type": "text", "text": text(rng)})
            for _ in range(rng.randint(1, 2)):
                user_parts.append({"type": "image", "url": png(rng.choice([64, 300, 800, 1500, 3000]), rng.choice([48, 512, 900, 2200]))})
        elif kind == "edges" and rng.random() < 0.3:
            user_parts.append({"type": "text", "text": rng.choice(["", " ", "\n", "\n\n", "  x", "x  "])})
        else:
            user_parts.append({"type": "text", "text": text(rng)})
        add("user", user_parts)
        if kind in ("agent", "long_tools", "images", "edges", "starts_with_tool") and rng.random() < 0.7:
            for _ in range(rng.randint(1, 2)):
                ids = [f"call_{call + k}" for k in range(rng.randint(1, 2))]
                call += len(ids)
                parts = [{"type": "text", "text": text(rng, 2, 10)}] if rng.random() < 0.4 else []
                parts += [{"type": "tool_call", "id": i, "name": rng.choice(["read_file", "run_tests", "search"]),
                           "arguments": json.dumps({"path": rng.choice(WORDS), "n": rng.randint(1, 99)})} for i in ids]
                add("assistant", parts)
                for i in ids:
                    out = long_output(rng) if kind == "long_tools" and rng.random() < 0.5 else text(rng, 1, 30)
                    if kind == "edges" and rng.random() < 0.3:
                        out = rng.choice(["", "\n", " ok", "done\n"])
                    add("tool", [{"type": "tool_result", "tool_call_id": i, "text": out}], tool_call_id=i)
        if kind == "edges" and rng.random() < 0.2:
            add("assistant", [{"type": "text", "text": rng.choice(["", " ", "\n"])}])
        else:
            add("assistant", [{"type": "text", "text": text(rng)}])
    system = "" if kind == "edges" else "You are a careful assistant. " + text(rng, 5, 30)
    return {"system": system, "messages": messages}


TOOLS = [
    {"name": "read_file", "description": "Read a file from the workspace.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "Path relative to the root"},
                                                       "limit": {"type": "integer", "default": 200, "title": "Limit"}},
                    "required": ["path"]}},
    {"name": "run_tests", "description": "Run the test suite.",
     "parameters": {"type": "object", "properties": {"mode": {"type": "string", "enum": ["fast", "full", "ünïcødé"]},
                                                       "target": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                                                       "files": {"type": "array", "items": {"type": "string"}}}}},
    {"name": "noop", "description": "", "parameters": {"type": "object", "properties": {}}},
    {"name": "ping", "description": "Check the service is up."},
]


def llm_messages(spec: dict[str, Any]) -> list[tuple[Any, list[str]]]:
    """(LLMMessage, the ids of the session messages it is made of), as an AssistantAgent stores them."""
    out: list[tuple[Any, list[str]]] = []
    for m in spec["messages"]:
        texts = [p["text"] for p in m["parts"] if p["type"] in ("text", "tool_result")]
        if m["role"] == "tool":
            result = FunctionExecutionResult(call_id=m["tool_call_id"], content="\n".join(texts), name="tool")
            if out and isinstance(out[-1][0], FunctionExecutionResultMessage):
                out[-1][0].content.append(result)
                out[-1][1].append(m["id"])
            else:
                out.append((FunctionExecutionResultMessage(content=[result]), [m["id"]]))
        elif m["role"] == "assistant":
            calls = [FunctionCall(id=p["id"], name=p["name"], arguments=p["arguments"]) for p in m["parts"] if p["type"] == "tool_call"]
            text = "\n".join(texts)
            if calls:
                out.append((AssistantMessage(content=calls, thought=text or None, source="assistant"), [m["id"]]))
            else:
                out.append((AssistantMessage(content=text, source="assistant"), [m["id"]]))
        else:
            if any(p["type"] == "image" for p in m["parts"]):
                content: Any = [Image.from_uri(p["url"]) if p["type"] == "image" else p["text"] for p in m["parts"] if p["type"] in ("text", "image")]
            else:
                content = "\n".join(texts)
            out.append((UserMessage(content=content, source="user"), [m["id"]]))
    return out


def returned_ids(got: list[Any], pairs: list[tuple[Any, list[str]]]) -> list[Any]:
    out: list[Any] = []
    for g in got:
        match = next((ids for message, ids in pairs if message is g), None)
        out.extend(match if match is not None else [{"placeholder": g.content, "source": g.source}])
    return out


async def run() -> None:
    rng = random.Random(20261124)
    kinds = ["chat", "agent", "long_tools", "images", "edges", "starts_with_assistant", "starts_with_tool"]
    sessions: dict[str, Any] = {}
    for k, kind in enumerate(kinds * 5):
        spec = build_session(rng, kind, rng.randint(2, 9))
        if k % 3 == 0:
            spec["tools"] = TOOLS[: 1 + k % 4]
        spec["model"] = "gpt-4-turbo" if k % 5 == 4 else "gpt-4o"
        sessions[f"{kind}_{k}"] = spec
    cases: list[dict[str, Any]] = []
    counts: dict[str, Any] = {}
    for name, spec in sessions.items():
        pairs = llm_messages(spec)
        messages = [p[0] for p in pairs]
        client = OpenAIChatCompletionClient(model=spec["model"], api_key="sk-dummy-no-network")
        tools = spec.get("tools", [])
        counts[name] = {"all": client.count_tokens(messages), "each": [client.count_tokens([m]) for m in messages],
                        "system": client.count_tokens([SystemMessage(content=spec["system"])]) if spec["system"] else 0,
                        "tools": client.count_tokens([], tools=tools) if tools else 0}
        for size in (1, 2, 3, 5, 8, 20):
            context = BufferedChatCompletionContext(buffer_size=size, initial_messages=list(messages))
            got = await context.get_messages()
            cases.append({"class": "BufferedChatCompletionContext", "session": name, "params": {"buffer_size": size},
                          "returned": returned_ids(got, pairs), "count": client.count_tokens(got)})
        for head, tail in ((1, 1), (1, 3), (2, 5), (3, 2), (5, 10), (2, 2)):
            context = HeadAndTailChatCompletionContext(head_size=head, tail_size=tail, initial_messages=list(messages))
            got = await context.get_messages()
            cases.append({"class": "HeadAndTailChatCompletionContext", "session": name, "params": {"head_size": head, "tail_size": tail},
                          "returned": returned_ids(got, pairs), "count": client.count_tokens(got)})
        for limit in (None, 30, 120, 400, 1200, 4000):
            for with_tools in ((False, True) if tools else (False,)):
                schema = tools if with_tools else None
                context = TokenLimitedChatCompletionContext(client, token_limit=limit, tool_schema=schema, initial_messages=list(messages))
                got = await context.get_messages()
                params: dict[str, Any] = {"token_limit": limit}
                if with_tools:
                    params["tool_schema"] = True
                cases.append({"class": "TokenLimitedChatCompletionContext", "session": name, "params": params,
                              "returned": returned_ids(got, pairs), "count": client.count_tokens(got, tools=schema or [])})
    doc = {"framework": "autogen-core", "version": version("autogen-core"), "autogen_ext": version("autogen-ext"),
           "tiktoken": version("tiktoken"), "sessions": sessions, "counts": counts, "cases": cases}
    OUT.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases over {len(sessions)} sessions -> {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    asyncio.run(run())
