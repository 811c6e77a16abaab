"""Golden cases for ctxviz's OpenHands policy, from the SDK's own LLMSummarizingCondenser.

Run by hand in a scratch venv (never in the test suite); the SDK needs Python >= 3.12:

    python3.12 -m venv /tmp/venv-openhands && /tmp/venv-openhands/bin/pip install openhands-sdk
    LITELLM_LOCAL_MODEL_COST_MAP=True /tmp/venv-openhands/bin/python tests/golden/openhands/generate.py

It builds deterministic conversations as plain message lists (system prompt, user and agent
messages, batches of tool calls with and without thinking blocks, their observations, tool calls
left without an observation, stray observations), turns each into the SDK's own events
(SystemPromptEvent, MessageEvent, ActionEvent batches sharing an llm_response_id, AgentErrorEvent as
the observation), and records:

- static: `View.from_events(events)` and `condenser.condense(view)`: which events the view holds,
  and whether a Condensation forgets which events with which summary_offset;
- rolling: the events appended one message at a time, `condense` called whenever the agent would
  step (after a user message, or once every call of the latest batch has its observation), each
  Condensation appended to the log as the agent does, and every condensation recorded.

The summarising LLM is replaced by a stub of `LLM.generate` returning "SUMMARY <n>": only the
forgotten events and the summary's place are the SDK's decisions that ctxviz reproduces.
"""

from __future__ import annotations

import json
import random
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

from openhands.sdk.context.condenser import LLMSummarizingCondenser
from openhands.sdk.context.view import View
from openhands.sdk.event import Condensation
from openhands.sdk.event.llm_convertible import ActionEvent, AgentErrorEvent, MessageEvent, SystemPromptEvent
from openhands.sdk.llm import LLM, Message, MessageToolCall, TextContent, ThinkingBlock

OUT = Path(__file__).with_name("cases.json")
WORDS = "read file test error fix value config module build run check data list path".split()
TOOLS = ("terminal", "file_editor", "task_tracker")


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def conversation(rng: random.Random, turns: int, tool_share: float, thinking_share: float, broken: float) -> list[dict[str, Any]]:
    """Plain messages: {"role", "text", "tool_calls": [...], "thinking", "tool_call_id"}."""
    out: list[dict[str, Any]] = []
    if rng.random() < 0.8:
        out.append({"role": "system", "text": words(rng, 12)})
    counter = 0
    for _ in range(turns):
        out.append({"role": "user", "text": words(rng, rng.randrange(2, 12))})
        while rng.random() < tool_share:
            calls = []
            for _ in range(rng.choice((1, 1, 1, 2, 3))):
                counter += 1
                calls.append({"id": f"call_{counter}", "name": rng.choice(TOOLS), "arguments": json.dumps({"command": words(rng, 3)})})
            out.append({"role": "assistant", "text": words(rng, 4) if rng.random() < 0.5 else "", "tool_calls": calls,
                        "thinking": rng.random() < thinking_share})
            results = [c["id"] for c in calls]
            if rng.random() < broken:
                results = results[:-1]  # a call left without its observation
            for cid in results:
                out.append({"role": "tool", "text": words(rng, rng.randrange(3, 30)), "tool_call_id": cid})
            if rng.random() < broken / 2:
                out.append({"role": "tool", "text": "stray", "tool_call_id": f"call_missing_{counter}"})
        out.append({"role": "assistant", "text": words(rng, rng.randrange(3, 15))})
    return out


def to_events(messages: list[dict[str, Any]]) -> tuple[list[Any], dict[str, str]]:
    """The SDK's events for the messages, and each event's name (message index, or index#k for a call)."""
    events: list[Any] = []
    names: dict[str, str] = {}
    system = [m for m in messages if m["role"] == "system"]
    if system:
        e = SystemPromptEvent(system_prompt=TextContent(text="\n\n".join(m["text"] for m in system)), tools=[])
        events.append(e)
        names[e.id] = "system"
    for i, m in enumerate(messages):
        for e, name in message_events(i, m):
            events.append(e)
            names[e.id] = name
    return events, names


def message_events(i: int, m: dict[str, Any]) -> list[tuple[Any, str]]:
    if m["role"] == "system":
        return []
    if m["role"] == "user":
        return [(MessageEvent(source="user", llm_message=Message(role="user", content=[TextContent(text=m["text"])])), str(i))]
    if m["role"] == "tool":
        return [(AgentErrorEvent(tool_name="terminal", tool_call_id=m["tool_call_id"], error=m["text"]), str(i))]
    if not m.get("tool_calls"):
        return [(MessageEvent(source="agent", llm_message=Message(role="assistant", content=[TextContent(text=m["text"])])), str(i))]
    out = []
    for k, call in enumerate(m["tool_calls"]):
        thinking = [ThinkingBlock(thinking="let me think", signature="sig")] if m["thinking"] and k == 0 else []
        out.append((ActionEvent(thought=[TextContent(text=m["text"])] if k == 0 and m["text"] else [], thinking_blocks=thinking,
                                tool_name=call["name"], tool_call_id=call["id"],
                                tool_call=MessageToolCall(id=call["id"], name=call["name"], arguments=call["arguments"], origin="completion"),
                                llm_response_id=f"resp_{i}", action=None), f"{i}#{k}"))
    return out


def fake_generate(self: Any, messages: Any, **kwargs: Any) -> Any:
    n = messages[-1].content[0].text.count("<EVENT>")
    return SimpleNamespace(message=SimpleNamespace(content=[TextContent(text=f"SUMMARY {n}")]), id="resp-summary")


def condenser(params: dict[str, Any]) -> LLMSummarizingCondenser:
    return LLMSummarizingCondenser(llm=LLM(model="gpt-4o", usage_id="condenser"), **params)


def static_case(name: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    events, names = to_events(messages)
    view = View.from_events(events)
    result = condenser(params).condense(view)
    out: dict[str, Any] = {"name": name, "kind": "static", "messages": messages, "params": params,
                           "view": [names[e.id] for e in view.events]}
    if isinstance(result, Condensation):
        out["forgotten"] = [names[e.id] for e in view.events if e.id in result.forgotten_event_ids]
        out["summary_offset"] = result.summary_offset
    else:
        out["forgotten"] = None
    return out


def steps(messages: list[dict[str, Any]], i: int) -> bool:
    """Whether the agent calls the LLM after message i (a user message, or a batch fully observed)."""
    m = messages[i]
    if m["role"] == "user":
        return True
    if m["role"] != "tool":
        return False
    batch = next((j for j in range(i, -1, -1) if messages[j]["role"] == "assistant" and messages[j].get("tool_calls")), None)
    if batch is None:
        return True
    answered = {messages[j]["tool_call_id"] for j in range(batch + 1, i + 1) if messages[j]["role"] == "tool"}
    return all(c["id"] in answered for c in messages[batch]["tool_calls"])


def rolling_case(name: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    cond = condenser(params)
    all_events, names = to_events(messages)
    by_name = {names[e.id]: e for e in all_events}
    log: list[Any] = [by_name["system"]] if "system" in by_name else []
    condensations = []
    summaries = 0
    for i, m in enumerate(messages):
        log += [by_name[n] for n in ([str(i)] if not m.get("tool_calls") else [f"{i}#{k}" for k in range(len(m["tool_calls"]))]) if n in by_name]
        if not steps(messages, i):
            continue
        view = View.from_events(log)
        result = cond.condense(view)
        if isinstance(result, Condensation):
            summaries += 1
            forgotten = [names.get(e.id, e.id if not e.id.endswith("-summary") else "summary") for e in view.events if e.id in result.forgotten_event_ids]
            condensations.append({"after": i, "forgotten": forgotten, "summary_offset": result.summary_offset, "view_size": len(view)})
            log.append(result)
    final = View.from_events(log)
    final_names = [names.get(e.id, "summary") for e in final.events]
    return {"name": name, "kind": "rolling", "messages": messages, "params": params, "condensations": condensations, "final_view": final_names}


def main() -> None:
    rng = random.Random(1123)
    cases: list[dict[str, Any]] = []
    shapes = [(4, 0.0, 0.0, 0.0), (8, 0.5, 0.0, 0.0), (10, 0.7, 0.3, 0.0), (12, 0.6, 0.0, 0.15), (6, 0.85, 0.6, 0.1),
              (15, 0.4, 0.2, 0.05), (9, 0.75, 0.9, 0.0), (14, 0.65, 0.1, 0.1)]
    param_sets = [{"max_size": 10, "keep_first": 2}, {"max_size": 16, "keep_first": 4}, {"max_size": 24, "keep_first": 0},
                  {"max_size": 12, "keep_first": 1, "minimum_progress": 0.5}, {"max_size": 40, "keep_first": 4}, {"max_size": 8, "keep_first": 2}]
    with mock.patch.object(LLM, "generate", fake_generate):
        for k, shape in enumerate(shapes):
            for variant in range(2):
                messages = conversation(rng, *shape)
                name = f"c{k}v{variant}"
                for j, params in enumerate(param_sets):
                    if (k + variant + j) % 2:
                        continue
                    cases.append(static_case(f"{name}/static{j}", messages, params))
                    cases.append(rolling_case(f"{name}/rolling{j}", messages, params))
    # Each conversation is stored once; a case names it.
    conversations: dict[str, Any] = {}
    for case in cases:
        conversations.setdefault(case["name"].split("/")[0], case.pop("messages"))
    doc = {"framework": "openhands-sdk", "version": version("openhands-sdk"), "generator": "tests/golden/openhands/generate.py",
           "conversations": conversations, "cases": cases}
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases, {OUT.stat().st_size:,} bytes -> {OUT}")


if __name__ == "__main__":
    main()
