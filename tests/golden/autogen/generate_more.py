"""More golden cases for ctxviz's AutoGen policies (issue 21), decided by AutoGen's own classes.

Run by hand in the scratch venv of generate.py (never by the tests):

    python -m venv /tmp/venv-autogen && /tmp/venv-autogen/bin/pip install autogen-core==0.7.5 "autogen-ext[openai]==0.7.5"
    TIKTOKEN_CACHE_DIR=<a cache holding o200k_base and cl100k_base> /tmp/venv-autogen/bin/python tests/golden/autogen/generate_more.py

It reuses generate.py's session builder and records, into cases_more.json:

- families: sessions for Claude, Gemini and Mistral models with empty and whitespace-only texts
  and empty system messages; what count_tokens counts per LLMMessage and in all (the client's
  family transformers drop whitespace-only Claude messages, turn empty Gemini text into " ",
  send Mistral user messages without a name) and what the three model contexts return;
- system_in_context: SystemMessages inside the model context where they stand (as AutoGen's
  Memory adds them with update_context), trimmed and counted like any other LLMMessage;
- raises: what AutoGen raises on a thin image (5000 x 1: ZeroDivisionError in
  calculate_vision_tokens), an integer `enum` in a tool schema (TypeError), and a source name with
  a space (ValueError), and which model contexts still return their messages there.

A Mistral model is not in AutoGen's model table: its client is built with model_info whose
family is "unknown", so that the transformers are found from the model's name, as ctxviz does.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from autogen_core.model_context import (
    BufferedChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
)
from autogen_core.models import SystemMessage, UserMessage
from autogen_ext.models.openai import OpenAIChatCompletionClient

sys.path.insert(0, str(Path(__file__).parent))
from generate import TOOLS, build_session, llm_messages, png, returned_ids, text  # noqa: E402

OUT = Path(__file__).with_name("cases_more.json")
MODELS = ["claude-3-5-sonnet-20241022", "claude-sonnet-4-20250514", "gemini-2.0-flash", "gemini-2.5-flash", "mistral-large-latest", "gpt-4o"]
MISTRAL_INFO = {"vision": True, "function_calling": True, "json_output": True, "family": "unknown", "structured_output": True}


def client_for(model: str) -> OpenAIChatCompletionClient:
    if model.startswith("mistral"):
        return OpenAIChatCompletionClient(model=model, api_key="sk-dummy-no-network", model_info=MISTRAL_INFO)  # type: ignore[arg-type]
    return OpenAIChatCompletionClient(model=model, api_key="sk-dummy-no-network")


def edge_session(rng: random.Random, system_messages: bool) -> dict[str, Any]:
    """A chat with empty, whitespace-only and plain texts, and (optionally) system messages in it."""
    messages: list[dict[str, Any]] = []
    for k in range(rng.randint(4, 9)):
        if system_messages and rng.random() < 0.35:
            messages.append({"role": "system", "parts": [{"type": "text", "text": rng.choice(["", "Memory: the user prefers metric units.",
                                                                                           text(rng, 3, 20)])}]})
        messages.append({"role": "user", "parts": [{"type": "text", "text": rng.choice(["", " ", "\n", "  x", text(rng), text(rng)])}]})
        if rng.random() < 0.3:
            cid = f"call_{k}"
            messages.append({"role": "assistant", "parts": [{"type": "tool_call", "id": cid, "name": "search", "arguments": json.dumps({"q": k})}]})
            messages.append({"role": "tool", "parts": [{"type": "tool_result", "tool_call_id": cid, "text": rng.choice(["", text(rng)])}],
                             "tool_call_id": cid})
        messages.append({"role": "assistant", "parts": [{"type": "text", "text": rng.choice(["", " ", "\n\n", text(rng), text(rng)])}]})
    for i, m in enumerate(messages):
        m["id"] = f"m{i}"
    return {"system": rng.choice(["", "You are terse."]), "messages": messages}


def context_pairs(spec: dict[str, Any], system_in_context: bool) -> list[tuple[Any, list[str]]]:
    """generate.py's LLMMessages, with the session's system messages as SystemMessages where they stand."""
    if not system_in_context:
        rest = {**spec, "messages": [m for m in spec["messages"] if m["role"] != "system"]}
        return llm_messages(rest)
    out: list[tuple[Any, list[str]]] = []
    chunk: list[dict[str, Any]] = []
    for m in spec["messages"] + [None]:
        if m is None or m["role"] == "system":
            if chunk:
                pairs = llm_messages({**spec, "messages": chunk})
                # consecutive tool results split by a system message stay separate LLMMessages
                out.extend(pairs)
                chunk = []
            if m is not None:
                out.append((SystemMessage(content=m["parts"][0]["text"]), [m["id"]]))
        else:
            chunk.append(m)
    return out


async def contexts(name: str, spec: dict[str, Any], client: Any, pairs: list[tuple[Any, list[str]]], extra: dict[str, Any],
                   limits: tuple[int | None, ...]) -> list[dict[str, Any]]:
    messages = [p[0] for p in pairs]
    cases: list[dict[str, Any]] = []

    def count(got: list[Any], tools: Any = None) -> Any:
        try:
            return client.count_tokens(got, tools=tools or [])
        except Exception as exc:  # recorded: AutoGen cannot count this context
            return {"raises": type(exc).__name__}

    for size in (1, 2, 3, 5, 8):
        got = await BufferedChatCompletionContext(buffer_size=size, initial_messages=list(messages)).get_messages()
        cases.append({"class": "BufferedChatCompletionContext", "session": name, "params": {"buffer_size": size, **extra},
                      "returned": returned_ids(got, pairs), "count": count(got)})
    for head, tail in ((1, 1), (1, 3), (2, 5), (3, 2)):
        got = await HeadAndTailChatCompletionContext(head_size=head, tail_size=tail, initial_messages=list(messages)).get_messages()
        cases.append({"class": "HeadAndTailChatCompletionContext", "session": name, "params": {"head_size": head, "tail_size": tail, **extra},
                      "returned": returned_ids(got, pairs), "count": count(got)})
    tools = spec.get("tools", [])
    for limit in limits:
        for with_tools in ((False, True) if tools else (False,)):
            schema = tools if with_tools else None
            params: dict[str, Any] = {"token_limit": limit, **extra}
            if with_tools:
                params["tool_schema"] = True
            try:
                got = await TokenLimitedChatCompletionContext(client, token_limit=limit, tool_schema=schema,
                                                              initial_messages=list(messages)).get_messages()
            except Exception as exc:
                cases.append({"class": "TokenLimitedChatCompletionContext", "session": name, "params": params, "raises": type(exc).__name__})
                continue
            cases.append({"class": "TokenLimitedChatCompletionContext", "session": name, "params": params,
                          "returned": returned_ids(got, pairs), "count": count(got, schema)})
    return cases


async def run() -> None:
    rng = random.Random(20260521)
    sessions: dict[str, Any] = {}
    counts: dict[str, Any] = {}
    cases: list[dict[str, Any]] = []
    # Model families.
    for k in range(18):
        model = MODELS[k % len(MODELS)]
        spec = edge_session(rng, system_messages=k % 2 == 1) if k % 3 else build_session(rng, "edges", rng.randint(3, 7))
        spec["model"] = model
        name = f"family_{model}_{k}"
        sessions[name] = spec
        client = client_for(model)
        pairs = context_pairs(spec, False)
        messages = [p[0] for p in pairs]
        counts[name] = {"all": client.count_tokens(messages), "each": [client.count_tokens([m]) for m in messages],
                        "system": [client.count_tokens([SystemMessage(content=m["parts"][0]["text"])]) for m in spec["messages"] if m["role"] == "system"],
                        "prompt": client.count_tokens([SystemMessage(content=spec["system"])]) if spec["system"] else 0}
        limits = (30, 80, 200, 1000) if model.startswith("mistral") else (None, 30, 80, 200, 1000)
        cases += await contexts(name, spec, client, pairs, {}, limits)
    # System messages inside the model context.
    for k in range(10):
        model = ["gpt-4o", "gpt-4o", "claude-3-5-sonnet-20241022", "gemini-2.0-flash"][k % 4]
        spec = edge_session(rng, system_messages=True)
        if not any(m["role"] == "system" for m in spec["messages"]):
            spec["messages"].insert(1, {"id": "sysmem", "role": "system", "parts": [{"type": "text", "text": "Memory: " + text(rng)}]})
        spec["model"] = model
        name = f"system_in_context_{k}"
        sessions[name] = spec
        client = client_for(model)
        cases += await contexts(name, spec, client, context_pairs(spec, True), {"system_messages_in_context": True}, (None, 30, 80, 200))
    # What AutoGen raises on.
    raising = {
        "thin_image": {"system": "", "model": "gpt-4o", "messages": [
            {"id": "m0", "role": "user", "parts": [{"type": "text", "text": "look"}, {"type": "image", "url": png(5000, 1)}]},
            {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "a line"}]},
            {"id": "m2", "role": "user", "parts": [{"type": "text", "text": "and this"}, {"type": "image", "url": png(1, 5000)}]},
            {"id": "m3", "role": "assistant", "parts": [{"type": "text", "text": "a column"}]}]},
        "integer_enum": {"system": "", "model": "gpt-4o", "messages": [
            {"id": "m0", "role": "user", "parts": [{"type": "text", "text": "set the level"}]},
            {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "done"}]}],
            "tools": [TOOLS[0], {"name": "set_level", "description": "Set the level.",
                                 "parameters": {"type": "object", "properties": {"level": {"type": "integer", "enum": [1, 2, 3]}}}}]},
    }
    named = build_session(rng, "chat", 3)
    named.update(model="gpt-4o")
    for m in named["messages"]:
        if m["role"] == "user":
            m["name"] = "Bob Smith"
    raising["name_with_space"] = named
    for name, spec in raising.items():
        sessions[name] = spec
        client = client_for(spec["model"])
        pairs = llm_messages(spec)
        if name == "name_with_space":
            pairs = [(UserMessage(content=p[0].content, source="Bob Smith") if isinstance(p[0], UserMessage) else p[0], p[1]) for p in pairs]
        cases += await contexts(name, spec, client, pairs, {}, (None, 1000))
    doc = {"framework": "autogen-core", "version": version("autogen-core"), "autogen_ext": version("autogen-ext"),
           "tiktoken": version("tiktoken"), "generator": "tests/golden/autogen/generate_more.py", "sessions": sessions, "counts": counts,
           "cases": cases}
    OUT.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases over {len(sessions)} sessions -> {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    asyncio.run(run())
