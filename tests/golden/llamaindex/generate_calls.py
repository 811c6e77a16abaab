"""Golden cases for the schedule of LlamaIndex's ChatSummaryMemoryBuffer: get() once per model call.

Run by hand, in the scratch venv of generate.py (llama-index-core 0.14.25):

    TIKTOKEN_CACHE_DIR=<a cache holding cl100k_base> /tmp/venv-llama/bin/python tests/golden/llamaindex/generate_calls.py

An agent session (user turns, model calls with two or three tool calls at once, their results,
answers) is put into the memory message by message, as the agent produces it, and `get()` runs
once before each model call: after a user message, or after the whole batch of one call's tool
results, as the workflow agents do (`BaseWorkflowAgent.aggregate_tool_results` waits for every
result of the call, then `memory.aget()`), never once per tool result. The summarizing LLM answers
a fixed text, so that a replay can write the same summary. calls.json holds the session and, per
call, the request's last message, whether a summary came first and the first message returned.

(LlamaIndex's FunctionAgent keeps the current user turn's calls and results in a scratchpad and
puts them into the memory only when the turn ends; this recording puts every message as it comes,
the memory use the replay models: an agent loop that stores each message.)
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse
from llama_index.core.memory import ChatSummaryMemoryBuffer
from llama_index.core.utils import get_tokenizer

sys.path.insert(0, str(Path(__file__).parent))
from generate import FakeLLM, to_llama  # noqa: E402

OUT = Path(__file__).with_name("calls.json")
SUMMARY = "SUMMARY-TEXT: the user asked for a fix; files were read and the tests were run."


class FixedLLM(FakeLLM):
    def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
        return ChatResponse(message=ChatMessage(role="assistant", content=SUMMARY))


def session() -> dict[str, Any]:
    """Three user turns; each call asks for one to three tools at once."""
    messages: list[dict[str, Any]] = []

    def add(role: str, text: str = "", calls: tuple[str, ...] = (), answers: str = "") -> None:
        i = len(messages)
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        parts += [{"type": "tool_call", "id": c, "name": "read_file", "arguments": json.dumps({"path": f"src/{c}.py"})} for c in calls]
        spec: dict[str, Any] = {"id": f"m{i}", "role": role, "parts": parts}
        if answers:
            spec["tool_call_id"] = answers
            spec["parts"] = [{"type": "tool_result", "tool_call_id": answers, "text": text}]
        messages.append(spec)

    lines = "def handler(request):\n    return session.refresh(request.user)  # the token expiry is checked here\n" * 3
    for turn, calls_per_step in enumerate(([2, 3, 1], [3, 2], [1, 2, 2])):
        add("user", f"Turn {turn}: fix the expired-session bug in the auth module and explain what you changed, please.")
        for step, width in enumerate(calls_per_step):
            ids = tuple(f"t{turn}s{step}c{k}" for k in range(width))
            add("assistant", "Reading the files." if step == 0 else "", ids)
            for c in ids:
                add("tool", f"{c}.py:\n{lines}", answers=c)
        add("assistant", f"Done with turn {turn}: the expiry check now uses the server clock; tests pass.")
    return {"system": "You are a careful coding agent.", "messages": messages}


PARAMS: list[dict[str, Any]] = [{"token_limit": 150}, {"token_limit": 250}, {"token_limit": 400}, {"token_limit": 700},
                                {"token_limit": 250, "count_initial_tokens": True}]


def run(spec: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    llama = [to_llama(m) for m in spec["messages"]]
    roles = [m["role"] for m in spec["messages"]]
    system_tokens = len(get_tokenizer()(spec["system"]))
    memory = ChatSummaryMemoryBuffer.from_defaults(llm=FixedLLM(), token_limit=params["token_limit"],
                                                   count_initial_tokens=params.get("count_initial_tokens", False))
    calls: list[dict[str, Any]] = []
    for i, message in enumerate(llama):
        memory.put(message)
        if i + 1 < len(llama) and roles[i + 1] == "assistant" and roles[i] != "assistant":  # the agent calls the model now
            got = memory.get(initial_token_count=system_tokens)
            positions = [next((k for k, m in enumerate(llama[: i + 1]) if m is g), None) for g in got]
            has_summary = bool(positions) and positions[0] is None
            rest = positions[1:] if has_summary else positions
            assert None not in rest and rest == list(range(i + 1 - len(rest), i + 1))
            calls.append({"request_ends_at": i, "summary_first": has_summary, "first": i + 1 - len(rest),
                          "summary": got[0].content if has_summary else None})
    return {"params": params, "token_limit": memory.token_limit, "calls": calls}


def main() -> None:
    spec = session()
    doc = {"framework": "llama-index-core", "version": version("llama-index-core"), "summary": SUMMARY, "session": spec,
           "cases": [run(spec, p) for p in PARAMS]}
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(doc['cases'])} cases, {sum(len(c['calls']) for c in doc['cases'])} calls, "
          f"{sum(c['summary_first'] for case in doc['cases'] for c in case['calls'])} with a summary")


if __name__ == "__main__":
    main()
