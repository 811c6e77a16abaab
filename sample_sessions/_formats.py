"""Write the coding-agent sample in the formats that have no session of their own here.

`python sample_sessions/_formats.py` rewrites `coding_agent.responses.json` (an OpenAI Responses API
request), `coding_agent.traj` (a SWE-agent trajectory), `coding_agent.otel.json` (an OTLP export of
three LLM-call spans with OpenTelemetry GenAI attributes) and `coding_agent.langchain.json`
(LangChain `messages_to_dict`), each in the shape its producer writes, so a newcomer can open the
same realistic session through every loader and compare what each format carries.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from ctxviz.engine.session import Message, Session  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402


def responses_request(session: Session) -> dict:
    items: list[dict] = []
    for m in session.messages:
        if m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": m.text})
            continue
        if m.text and m.role != "assistant" or (m.role == "assistant" and m.openai_content()):
            kind = "output_text" if m.role == "assistant" else "input_text"
            items.append({"type": "message", "role": "developer" if m.role == "system" else m.role,
                          "content": [{"type": kind, "text": str(m.openai_content())}]})
        for call in m.tool_calls:
            items.append({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments})
    tools = [{"type": "function", "name": t.name, "description": t.description, "parameters": dict(t.parameters)} for t in session.tools]
    return {"model": "gpt-4.1", "instructions": session.system_prompt, "tools": tools, "input": items}


def swe_agent_trajectory(session: Session) -> dict:
    history: list[dict] = [{"message_type": "system_prompt", "role": "system", "content": session.system_prompt, "agent": "main"}]
    for m in session.messages:
        entry: dict = {"role": m.role, "content": m.text if m.role != "assistant" else (m.openai_content() or ""), "agent": "main"}
        if m.role == "assistant":
            entry["message_type"] = "action"
            entry["thought"] = entry["content"]
            if m.tool_calls:
                entry["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in m.tool_calls]
                entry["action"] = " ".join(f"{c.name} {c.arguments}" for c in m.tool_calls)
        elif m.role == "tool":
            entry["message_type"] = "observation"
            entry["tool_call_ids"] = [m.tool_call_id]
        else:
            entry["message_type"] = "observation" if m.role == "user" else "system_prompt"
        history.append(entry)
    calls = sum(1 for m in session.messages if m.role == "assistant")
    return {"environment": "swe_main", "trajectory": [], "history": history,
            "info": {"model_stats": {"instance_cost": 0.0, "tokens_sent": 0, "tokens_received": 0, "api_calls": calls},
                     "exit_status": "submitted"}}


def _otel_message(m: Message) -> dict:
    parts: list[dict] = []
    if m.role == "tool":
        parts.append({"type": "tool_call_response", "id": m.tool_call_id, "response": m.text})
        return {"role": "tool", "parts": parts}
    content = m.openai_content()
    if content:
        parts.append({"type": "text", "content": str(content)})
    for c in m.tool_calls:
        parts.append({"type": "tool_call", "id": c.id, "name": c.name, "arguments": json.loads(c.arguments or "{}")})
    return {"role": m.role, "parts": parts}


def otel_export(session: Session) -> dict:
    """Three LLM-call spans of one trace (the first call, one mid-way, the last), as an OTLP JSON
    exporter writes them; the loader takes the largest call's input as the session."""
    assistants = [m.index for m in session.messages if m.role == "assistant" and m.usage is not None]
    chosen = [assistants[0], assistants[len(assistants) // 2], assistants[-1]]
    spans = []
    for n, index in enumerate(chosen):
        m = session.messages[index]
        inputs = [{"role": "system", "parts": [{"type": "text", "content": session.system_prompt}]}]
        inputs += [_otel_message(x) for x in session.messages[:index]]
        cached = m.usage.cache_read_input_tokens
        attributes = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps([_otel_message(m)]),
            "gen_ai.usage.input_tokens": m.usage.input_tokens + cached, "gen_ai.usage.output_tokens": m.usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": cached,
        }
        spans.append({"traceId": "5b8efff798038103d269b633813fc60c", "spanId": f"eee19b7ec3c1b17{n}", "name": "chat gpt-4o", "kind": 3,
                      "startTimeUnixNano": str(1772013600_000000000 + n * 60_000_000_000),
                      "endTimeUnixNano": str(1772013605_000000000 + n * 60_000_000_000),
                      "attributes": [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}} for k, v in attributes.items()]})
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "orderdesk-agent"}}]},
                               "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"}, "spans": spans}]}]}


def langchain_dump(session: Session) -> list:
    out = [{"type": "system", "data": {"content": session.system_prompt, "additional_kwargs": {}, "response_metadata": {}, "type": "system",
                                       "name": None, "id": None}}]
    for m in session.messages:
        if m.role == "tool":
            data = {"content": m.text, "type": "tool", "tool_call_id": m.tool_call_id, "status": "success", "name": m.name or None}
            out.append({"type": "tool", "data": {**data, "additional_kwargs": {}, "response_metadata": {}, "id": None, "artifact": None}})
        elif m.role == "assistant":
            data = {"content": m.openai_content() or "", "type": "ai", "additional_kwargs": {}, "response_metadata": {"model_name": "gpt-4o-2024-08-06"},
                    "name": None, "id": f"run-{m.id}", "example": False, "invalid_tool_calls": [],
                    "tool_calls": [{"name": c.name, "args": json.loads(c.arguments or "{}"), "id": c.id, "type": "tool_call"} for c in m.tool_calls]}
            if m.usage is not None:
                data["usage_metadata"] = {"input_tokens": m.usage.input_tokens + m.usage.cache_read_input_tokens, "output_tokens": m.usage.output_tokens,
                                          "total_tokens": m.usage.input_tokens + m.usage.cache_read_input_tokens + m.usage.output_tokens,
                                          "input_token_details": {"cache_read": m.usage.cache_read_input_tokens}}
            out.append({"type": "ai", "data": data})
        else:
            out.append({"type": "human" if m.role == "user" else "system",
                        "data": {"content": m.text, "type": "human" if m.role == "user" else "system", "additional_kwargs": {},
                                 "response_metadata": {}, "name": None, "id": None, "example": False}})
    return out


def main() -> None:
    session = load_session(os.path.join(HERE, "coding_agent.yaml"))
    outputs = {"coding_agent.responses.json": responses_request(session), "coding_agent.traj": swe_agent_trajectory(session),
               "coding_agent.otel.json": otel_export(session), "coding_agent.langchain.json": langchain_dump(session)}
    for name, doc in outputs.items():
        with open(os.path.join(HERE, name), "w", encoding="utf-8") as handle:
            json.dump(doc, handle, indent=1, ensure_ascii=False)
            handle.write("\n")
        print(f"wrote sample_sessions/{name}")


if __name__ == "__main__":
    main()
