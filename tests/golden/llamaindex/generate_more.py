"""More golden cases for ctxviz's LlamaIndex policies (issue 21): system messages inside the memory,
of ChatMemoryBuffer and of ChatSummaryMemoryBuffer.

Run by hand in generate.py's scratch venv (never by the tests):

    python -m venv /tmp/venv-llama && /tmp/venv-llama/bin/pip install llama-index-core==0.14.25
    TIKTOKEN_CACHE_DIR=<a cache holding cl100k_base> /tmp/venv-llama/bin/python tests/golden/llamaindex/generate_more.py

Sessions from generate.py's builder get SYSTEM messages among their turns (as an application that
calls `memory.put(ChatMessage(role=SYSTEM, ...))` has them); every message goes into a
ChatMemoryBuffer, and what `get()` returns is recorded for several limits, into cases_more.json.
Into `summary_cases`: each message put into a ChatSummaryMemoryBuffer (generate.py's fake LLM) and
get() called before each LLM call (after a user or tool message), as generate.py's rolling cases
do; each step records what get() returned, a summary the LLM wrote named `summary<k>`.
"""

from __future__ import annotations

import json
import random
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from llama_index.core.memory import ChatMemoryBuffer, ChatSummaryMemoryBuffer
from llama_index.core.utils import get_tokenizer

sys.path.insert(0, str(Path(__file__).parent))
from generate import FakeLLM, build_session, text, to_llama  # noqa: E402

OUT = Path(__file__).with_name("cases_more.json")


SUMMARY_PARAMS: list[dict[str, Any]] = [{"token_limit": 40}, {"token_limit": 120}, {"token_limit": 300}, {"token_limit": 700},
                                         {"token_limit": 120, "llm": False}, {"token_limit": 300, "count_initial_tokens": True}]


def summary_case(name: str, spec: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """get() before each LLM call of an agent whose system messages are put into the memory."""
    tokenizer = get_tokenizer()
    system_tokens = len(tokenizer(spec["system"])) if spec["system"] else 0
    llama = [to_llama(m) for m in spec["messages"]]
    ids = [m["id"] for m in spec["messages"]]
    memory = ChatSummaryMemoryBuffer.from_defaults(llm=FakeLLM() if params.get("llm", True) else None, token_limit=params["token_limit"],
                                                   count_initial_tokens=params.get("count_initial_tokens", False))
    summaries: list[str] = []
    steps: list[dict[str, Any]] = []
    for i, (message, source) in enumerate(zip(llama, spec["messages"], strict=True)):
        memory.put(message)
        if source["role"] not in ("user", "tool"):
            continue
        try:
            got, error = memory.get(initial_token_count=system_tokens), None
        except ValueError as exc:
            got, error = [], str(exc)
        returned = []
        for g in got:
            k = next((k for k, m in enumerate(llama[: i + 1]) if m is g), None)
            if k is not None:
                returned.append(ids[k])
                continue
            if g.content not in summaries:
                summaries.append(g.content)
            returned.append(f"summary{summaries.index(g.content) + 1}")
        steps.append({"turn": i, "returned": returned, "error": error})
        if error is not None:
            break
    return {"class": "ChatSummaryMemoryBuffer", "session": name, "params": {**params, "system_messages_in_memory": True},
            "initial_token_count": system_tokens, "summaries": summaries, "steps": steps}


def main() -> None:
    rng = random.Random(20260522)
    sessions: dict[str, Any] = {}
    for k, kind in enumerate(["chat", "agent", "long_tools", "edges"] * 3):
        spec = build_session(rng, kind, rng.randint(3, 8))
        messages = spec["messages"]
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(messages))
            messages.insert(at, {"role": "system", "parts": [{"type": "text", "text": rng.choice(["Memory: " + text(rng), "", text(rng, 20, 60)])}]})
        for i, m in enumerate(messages):
            m["id"] = f"m{i}"
        sessions[f"{kind}_{k}"] = spec
    cases: list[dict[str, Any]] = []
    for name, spec in sessions.items():
        llama = [to_llama(m) for m in spec["messages"]]
        ids = [m["id"] for m in spec["messages"]]
        for params in ({"token_limit": 40}, {"token_limit": 150}, {"token_limit": 400}, {"token_limit": 900}, {"token_limit": 150, "initial_token_count": 60}):
            memory = ChatMemoryBuffer.from_defaults(token_limit=params["token_limit"])
            for message in llama:
                memory.put(message)
            got = memory.get(initial_token_count=params.get("initial_token_count", 0))
            kept = [ids[next(k for k, m in enumerate(llama) if m is g)] for g in got]
            cases.append({"class": "ChatMemoryBuffer", "session": name, "params": {**params, "system_messages_in_memory": True},
                          "kept": kept, "token_count": memory._token_count_for_messages(got)})
    summary_cases = [summary_case(name, spec, params) for name, spec in sessions.items() for params in SUMMARY_PARAMS]
    doc = {"framework": "llama-index-core", "version": version("llama-index-core"), "tiktoken": version("tiktoken"),
           "generator": "tests/golden/llamaindex/generate_more.py", "sessions": sessions, "cases": cases, "summary_cases": summary_cases}
    OUT.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"{len(cases)} + {len(summary_cases)} cases over {len(sessions)} sessions -> {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
