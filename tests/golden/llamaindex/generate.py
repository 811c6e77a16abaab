"""Golden cases for ctxviz's LlamaIndex policies, decided by LlamaIndex's own classes.

Run by hand in a scratch venv (never by the tests):

    python -m venv /tmp/venv-llama && /tmp/venv-llama/bin/pip install llama-index-core==0.14.25
    TIKTOKEN_CACHE_DIR=<a cache holding cl100k_base> /tmp/venv-llama/bin/python tests/golden/llamaindex/generate.py

It builds varied sessions deterministically (system prompts, user/assistant turns, tool calls and
results, images, empty and whitespace-edged texts, long tool outputs), feeds them to
ChatMemoryBuffer.get and ChatSummaryMemoryBuffer.get (with a fake LLM whose answer depends only on
the prompt's length), and writes what they returned to cases.json next to this file.
"""

from __future__ import annotations

import base64
import json
import random
import struct
import zlib
from importlib.metadata import version
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    ImageBlock,
    LLMMetadata,
    TextBlock,
)
from llama_index.core.llms import CustomLLM
from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer
from llama_index.core.utils import get_tokenizer

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
    for _ in range(turns):
        user_parts: list[dict[str, Any]] = []
        if kind == "images" and rng.random() < 0.6:
            if rng.random() < 0.7:
                user_parts.append({"type": "text", "text": text(rng)})
            for _ in range(rng.randint(1, 2)):
                user_parts.append({"type": "image", "url": png(rng.choice([64, 300, 800, 1500, 3000]), rng.choice([48, 512, 900, 2200]))})
        elif kind == "edges" and rng.random() < 0.3:
            user_parts.append({"type": "text", "text": rng.choice(["", " ", "\n", "\n\n", "  x", "x  ", "a <|endoftext|> b", "<|fim_prefix|>x\n"])})
        else:
            user_parts.append({"type": "text", "text": text(rng)})
        add("user", user_parts)
        if kind in ("agent", "long_tools", "images", "edges") and rng.random() < 0.7:
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


def to_llama(spec: dict[str, Any]) -> ChatMessage:
    blocks: list[Any] = []
    calls = []
    for p in spec["parts"]:
        if p["type"] in ("text", "tool_result"):
            blocks.append(TextBlock(text=p["text"]))
        elif p["type"] == "image":
            blocks.append(ImageBlock(url=p["url"]))
        elif p["type"] == "tool_call":
            calls.append({"id": p["id"], "type": "function", "function": {"name": p["name"], "arguments": p["arguments"]}})
    kwargs: dict[str, Any] = {}
    if calls:
        kwargs["tool_calls"] = calls
    if spec.get("tool_call_id"):
        kwargs["tool_call_id"] = spec["tool_call_id"]
    return ChatMessage(role=spec["role"], blocks=blocks, additional_kwargs=kwargs)


class FakeLLM(CustomLLM):
    """Answers any prompt with a fixed sentence that depends only on the prompt's length."""

    context_window: int = 3900

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, is_chat_model=True)

    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        size = sum(len(m.content or "") for m in messages)
        return ChatResponse(message=ChatMessage(role="assistant", content=f"Summary of a {size}-character transcript: " + "details " * (size % 37)))

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise NotImplementedError

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def main() -> None:
    rng = random.Random(20261123)
    tokenizer = get_tokenizer()
    kinds = ["chat", "agent", "long_tools", "images", "edges", "starts_with_assistant"]
    sessions: dict[str, Any] = {}
    for k, kind in enumerate(kinds * 5):
        sessions[f"{kind}_{k}"] = build_session(rng, kind, rng.randint(2, 9))
    cases: list[dict[str, Any]] = []
    for name, spec in sessions.items():
        llama = [to_llama(m) for m in spec["messages"]]
        ids = [m["id"] for m in spec["messages"]]
        system_tokens = len(tokenizer(spec["system"])) if spec["system"] else 0
        # ChatMemoryBuffer: one get() over the whole history, several limits and initial counts.
        for params in ({}, {"token_limit": 40}, {"token_limit": 150}, {"token_limit": 400}, {"token_limit": 900},
                       {"token_limit": 150, "initial_token_count": 60}, {"token_limit": 400, "initial_token_count": "system"},
                       {"context_window": 500}, {"context_window": 2000, "token_limit": 250}, {"token_limit": 20, "initial_token_count": 30}):
            initial = system_tokens if params.get("initial_token_count") == "system" else params.get("initial_token_count", 0)
            llm = FakeLLM(context_window=params["context_window"]) if "context_window" in params else None
            memory = ChatMemoryBuffer.from_defaults(chat_history=list(llama), llm=llm, token_limit=params.get("token_limit"))
            try:
                got = memory.get(initial_token_count=initial)
                kept, error = [ids[next(k for k, m in enumerate(llama) if m is g)] for g in got], None
            except ValueError as exc:
                got, kept, error = [], [], str(exc)
            assert kept == ids[len(ids) - len(kept):]  # get() returns a suffix of the history
            cases.append({"class": "ChatMemoryBuffer", "session": name, "params": params, "initial_token_count": initial,
                          "token_limit": memory.token_limit, "kept_from": len(ids) - len(kept) if kept else None, "error": error,
                          "token_count": memory._token_count_for_messages(got)})
        # ChatSummaryMemoryBuffer: an agent that puts each message and calls get() before each LLM call.
        for params in ({}, {"token_limit": 60}, {"token_limit": 200}, {"token_limit": 600}, {"token_limit": 200, "llm": False},
                       {"token_limit": 60, "llm": False}, {"token_limit": 200, "count_initial_tokens": True},
                       {"context_window": 400}, {"token_limit": 20, "count_initial_tokens": True}):
            use_llm = params.get("llm", True)
            llm = FakeLLM(context_window=params.get("context_window", 3900)) if use_llm else None
            memory = ChatSummaryMemoryBuffer.from_defaults(llm=llm, token_limit=params.get("token_limit"),
                                                           count_initial_tokens=params.get("count_initial_tokens", False))
            # Each step: [turn, carried summary (index into `summaries`, -1: none), messages the store had lost
            # before this get() (a prefix of the history), returned: summary first?, index of the first
            # returned message (len: none), error]. The store always holds [summary?] + a suffix of the history.
            summaries: list[str] = []
            carried, lost = -1, 0
            steps: list[list[Any]] = []
            for i, (message, spec_message) in enumerate(zip(llama, spec["messages"], strict=True)):
                memory.put(message)
                if spec_message["role"] not in ("user", "tool"):
                    continue
                try:
                    got, error = memory.get(initial_token_count=system_tokens), None
                except ValueError as exc:
                    got, error = [], str(exc)
                positions = [next((k for k, m in enumerate(llama[: i + 1]) if m is g), None) for g in got]
                has_summary = bool(positions) and positions[0] is None
                rest = positions[1:] if has_summary else positions
                assert None not in rest and rest == list(range(i + 1 - len(rest), i + 1))
                first = i + 1 - len(rest)
                steps.append([i, carried, lost, has_summary, first, error])
                if error is not None:
                    break
                if has_summary and (carried < 0 or got[0].content != summaries[carried]):
                    summaries.append(got[0].content)
                    carried = len(summaries) - 1
                elif not has_summary:
                    carried = -1
                lost = first
            cases.append({"class": "ChatSummaryMemoryBuffer", "session": name, "params": params, "token_limit": memory.token_limit,
                          "initial_token_count": system_tokens, "summaries": summaries, "steps": steps})
    doc = {"framework": "llama-index-core", "version": version("llama-index-core"), "tiktoken": version("tiktoken"),
           "encoding": "cl100k_base (tiktoken.encoding_for_model('gpt-3.5-turbo'))", "sessions": sessions, "cases": cases}
    OUT.write_text(json.dumps(doc, indent=None, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases over {len(sessions)} sessions -> {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
