"""Golden cases for `ContextEditingMiddleware(token_count_method="model")` with OpenAI chat models
(issue 21), recorded from LangChain's own code.

Run by hand in generate.py's scratch venv, with Pillow (ChatOpenAI sizes base64 images with it) and
tiktoken's cache filled from ctxviz's vendored encodings, so that nothing is downloaded:

    /tmp/venv-langchain/bin/pip install pillow
    TIKTOKEN_CACHE_DIR=/tmp/tiktoken-cache /tmp/venv-langchain/bin/python tests/golden/langchain/generate_model_count.py

With `token_count_method="model"` the middleware counts `request.system_message` + the messages
with `request.model.get_num_tokens_from_messages(..., request.tools)`. For `ChatOpenAI` that is a
tiktoken formula computed offline: the script builds `ChatOpenAI(model=..., api_key="dummy")` and
blocks every socket while it runs (a connection or a name lookup raises), so a count that needed the
network would fail here; an image given by URL is then sized as LangChain sizes it when the download
fails (not at all).

Recorded into cases_model_count.json, over generate.py's sessions (the ones cases.json holds) and a
few of this script's own (images of several sizes, names, invalid tool calls, a developer system
message, a custom role, a legacy function call):
- counts: per model, `get_num_tokens_from_messages([m])` of each message and of the whole list
  (or the error LangChain raises);
- context_editing: the middleware's `wrap_model_call` with `ClearToolUsesEdit` configurations, with
  and without a separate system message, the messages the handler receives and each one's count.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import socket
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain.agents.middleware.context_editing import ClearToolUsesEdit, ContextEditingMiddleware
from langchain.agents.middleware.types import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
from generate import EDIT_CONFIGS, dump, sessions  # noqa: E402

OUT = Path(__file__).with_name("cases_model_count.json")
#: One model per rule of get_num_tokens_from_messages and _get_encoding_model: tiktoken's o200k_base
#: and cl100k_base models, gpt-3.5-turbo-0301's 4 tokens per message and -1 per name, a model
#: tiktoken does not know (LangChain's own fallback), and one LangChain refuses.
MODELS = ("gpt-4o", "gpt-4", "gpt-3.5-turbo-0301", "gpt-5-mini", "o3", "gpt-6", "gpt-4.1-nano")
UNSUPPORTED = ("chatgpt-4o-latest",)
SYSTEM = "You are a careful coding agent. Keep answers short."


def png(width: int, height: int) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


def own_sessions() -> dict[str, list[Any]]:
    images = [HumanMessage([{"type": "text", "text": "what is in these?"},
                            {"type": "image_url", "image_url": {"url": png(300, 200)}},
                            {"type": "image_url", "image_url": {"url": png(1000, 3000)}},
                            {"type": "image_url", "image_url": {"url": png(5000, 100)}},
                            {"type": "image_url", "image_url": {"url": png(900, 900), "detail": "low"}},
                            {"type": "image_url", "image_url": {"url": "https://ctxviz.invalid/remote.png"}}], id="h0"),
              AIMessage("A red square, twice.", id="a0")]
    shaped = [SystemMessage("Developer rules apply.", id="sys", additional_kwargs={"__openai_role__": "developer"}),
              HumanMessage("hello there", id="h0", name="alice"),
              AIMessage("", id="a0", name="bot", tool_calls=[{"id": "c1", "name": "read_file", "args": {"path": "a.py"}}],
                        invalid_tool_calls=[{"id": "c2", "name": "run", "args": "{not json", "error": "bad", "type": "invalid_tool_call"}]),
              ToolMessage("print('hi')\n" * 5, tool_call_id="c1", name="read_file", id="t0"),
              ToolMessage("could not parse", tool_call_id="c2", id="t1"),
              AIMessage("", id="a1", additional_kwargs={"function_call": {"name": "lookup", "arguments": "{\"q\": \"x\"}"}}),
              AIMessage([{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Done: ünïcödé ✓"}], id="a2")]
    special = [HumanMessage("the file ends with <|endoftext|> here", id="h0"), AIMessage("ok", id="a0")]
    return {"own_images": images, "own_shapes": shaped, "own_special": special}


def no_network() -> None:
    """Every connection and name lookup fails: what ChatOpenAI counts here, it counts offline."""
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError("network disabled by generate_model_count.py")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse  # type: ignore[assignment]
    socket.getaddrinfo = refuse  # type: ignore[assignment]


def count_or_error(model: ChatOpenAI, messages: list[Any]) -> int | dict[str, str]:
    try:
        return model.get_num_tokens_from_messages(messages)
    except Exception as exc:  # noqa: BLE001 - recorded: LangChain raises there
        return {"error": type(exc).__name__}


def run_middleware(model: ChatOpenAI, messages: list[Any], system: str | None, cfg: dict[str, Any]) -> Any:
    received: list[Any] = []

    def handler(request: ModelRequest) -> Any:
        received.extend(request.messages)
        return AIMessage("done")

    request = ModelRequest(model=model, messages=copy.deepcopy(messages), system_message=SystemMessage(system) if system else None, tools=[])
    try:
        ContextEditingMiddleware(edits=[ClearToolUsesEdit(**cfg)], token_count_method="model").wrap_model_call(request, handler)
    except Exception as exc:  # noqa: BLE001
        return {"error": type(exc).__name__}
    by_id = {m.id: m for m in messages}
    out = []
    for m in received:
        item: dict[str, Any] = {"id": m.id}
        source = by_id.get(m.id)
        if source is None or m.content != source.content:
            item["content"] = m.content
        if isinstance(m, AIMessage) and isinstance(source, AIMessage) and m.tool_calls != source.tool_calls:
            item["tool_calls"] = [dict(tc) for tc in m.tool_calls]
        item["tokens"] = model.get_num_tokens_from_messages([m]) - 3  # the message's own share (3 primes the reply)
        out.append(item)
    return out


def main() -> None:
    no_network()
    recorded = json.loads(Path(__file__).with_name("cases.json").read_text(encoding="utf-8"))["sessions"]
    shared = sessions()
    for name, messages in shared.items():
        assert dump(messages) == recorded[name], f"session {name} is not the one cases.json holds"
    own = own_sessions()
    doc: dict[str, Any] = {"versions": {"langchain": version("langchain"), "langchain-core": version("langchain-core"),
                                        "langchain-openai": version("langchain-openai"), "tiktoken": version("tiktoken"),
                                        "pillow": version("pillow")},
                           "generator": "tests/golden/langchain/generate_model_count.py", "system": SYSTEM,
                           "sessions": {name: dump(messages) for name, messages in own.items()}, "counts": [], "context_editing": []}
    everything = {**shared, **own}
    for model_name in MODELS + UNSUPPORTED:
        model = ChatOpenAI(model=model_name, api_key="dummy")
        for name, messages in everything.items():
            doc["counts"].append({"session": name, "model": model_name, "per_message": [count_or_error(model, [m]) for m in messages],
                                  "total": count_or_error(model, messages),
                                  "with_system": count_or_error(model, [SystemMessage(SYSTEM), *messages])})
    for k, (name, messages) in enumerate(everything.items()):
        for j, cfg in enumerate(EDIT_CONFIGS):
            model_name = MODELS[(k + j) % len(MODELS)]
            model = ChatOpenAI(model=model_name, api_key="dummy")
            for system in (None, SYSTEM):
                doc["context_editing"].append({"session": name, "model": model_name, "system": bool(system), "config": cfg,
                                               "result": run_middleware(model, messages, system, cfg)})
    OUT.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(doc['counts'])} counts, {len(doc['context_editing'])} context-editing cases, {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
