"""Golden cases for what OpenHands' summariser is shown of each event, from the SDK's own events.

Run by hand in the scratch venv of generate.py (never in the test suite):

    LITELLM_LOCAL_MODEL_COST_MAP=True /tmp/venv-openhands/bin/python tests/golden/openhands/generate_previews.py

LLMSummarizingCondenser._generate_condensation gives its LLM `str(event)` of each forgotten event,
the previous summary's CondensationSummaryEvent among them. This builds conversations with short and
long texts (under, at and over the 500-character preview), tool results, tool calls with and without
a thought, several text parts, and summaries of several lengths, turns them into the SDK's events as
generate.py does (a tool result as an ObservationEvent-like AgentErrorEvent and as a real
ObservationEvent), and records each event's `str` into cases_previews.json.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

from openhands.sdk.event import CondensationSummaryEvent
from openhands.sdk.event.llm_convertible import ActionEvent, AgentErrorEvent, MessageEvent, ObservationEvent
from openhands.sdk.llm import Message, MessageToolCall, TextContent
from openhands.sdk.tool.schema import Observation

OUT = Path(__file__).with_name("cases_previews.json")


class Output(Observation):
    """An observation whose content is the tool's text (as the SDK's tools return it)."""


def text(n: int, seed: str) -> str:
    words = (seed + " error: failed at src/app.py line 12, see https://example.com/x decided to use ").split()
    out: list[str] = []
    k = 0
    while len(" ".join(out)) < n:
        out.append(words[k % len(words)])
        k += 1
    return " ".join(out)[:n]


def conversation() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in (10, 496, 497, 498, 499, 500, 501, 502, 503, 1200):
        out.append({"role": "user", "text": text(n, "please fix"), "tool_calls": []})
        out.append({"role": "assistant", "text": text(n, "I will"), "tool_calls": []})
        out.append({"role": "assistant", "text": text(n, "running tests") if n != 10 else "",
                    "tool_calls": [{"id": f"call_{n}", "name": "terminal", "arguments": json.dumps({"command": text(n, "pytest")})},
                                   {"id": f"call_{n}b", "name": "file_editor", "arguments": json.dumps({"path": "src/app.py"})}]})
        out.append({"role": "tool", "text": text(n, "FAILED"), "tool_call_id": f"call_{n}", "tool_calls": []})
        out.append({"role": "tool", "text": text(n, "opened"), "tool_call_id": f"call_{n}b", "tool_calls": []})
    out.append({"role": "user", "texts": ["first part", text(600, "second part")], "tool_calls": []})
    return out


def events(m: dict[str, Any]) -> list[tuple[str, Any]]:
    if m["role"] == "user":
        texts = m.get("texts") or [m["text"]]
        return [("message", MessageEvent(source="user", llm_message=Message(role="user", content=[TextContent(text=t) for t in texts])))]
    if m["role"] == "tool":
        return [("error", AgentErrorEvent(tool_name="terminal", tool_call_id=m["tool_call_id"], error=m["text"])),
                ("observation", ObservationEvent(tool_name="terminal", tool_call_id=m["tool_call_id"], action_id="a",
                                                 observation=Output(content=[TextContent(text=m["text"])])))]
    if not m["tool_calls"]:
        return [("message", MessageEvent(source="agent", llm_message=Message(role="assistant", content=[TextContent(text=m["text"])])))]
    return [("action", ActionEvent(thought=[TextContent(text=m["text"])] if k == 0 and m["text"] else [], tool_name=c["name"],
                                   tool_call_id=c["id"], tool_call=MessageToolCall(id=c["id"], name=c["name"], arguments=c["arguments"],
                                                                                  origin="completion"),
                                   llm_response_id="resp", action=None))
            for k, c in enumerate(m["tool_calls"])]


def main() -> None:
    messages = conversation()
    cases = [{"message": i, "kind": kind, "str": str(e)} for i, m in enumerate(messages) for kind, e in events(m)]
    summaries = [{"summary": s, "str": str(CondensationSummaryEvent(summary=s))}
                 for s in (text(200, "## Files Modified"), text(497, "## Files Modified"), text(500, "## Files Modified"),
                           text(2000, "## Files Modified"), "USER_CONTEXT: " + text(900, "fix the parser"))]
    OUT.write_text(json.dumps({"framework": "openhands-sdk", "version": version("openhands-sdk"), "generator": "tests/golden/openhands/generate_previews.py",
                               "messages": messages, "events": cases, "summaries": summaries}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} events, {len(summaries)} summaries -> {OUT}")


if __name__ == "__main__":
    main()
