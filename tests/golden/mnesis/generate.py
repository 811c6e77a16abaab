"""Record what mnesis' own ContextBuilder and TokenEstimator do with varied sessions (run by hand).

    /root/.pyenv/versions/3.12.1/bin/python -m venv /tmp/venv-mnesis   # mnesis needs Python >= 3.12
    /tmp/venv-mnesis/bin/pip install mnesis==0.3.0
    # or HEAD 677d1898 (the commit ctxviz reproduces; its ModelInfo also matches o2/o4):
    #   git archive 677d1898 | tar -x -C /tmp/mnesis-src && /tmp/venv-mnesis/bin/pip install --no-deps /tmp/mnesis-src
    /tmp/venv-mnesis/bin/python tests/golden/mnesis/generate.py

Each case is a session in ctxviz's shape (user / assistant / tool messages with typed parts).
The script turns it into mnesis messages the way mnesis records them: a tool call and the tool
messages that answer it become ONE `ToolPart` (input + output, or error, or a compacted tombstone)
of the assistant message; thinking becomes a `ReasoningPart`. It stores them in mnesis' own
ImmutableStore and runs `ContextBuilder.build`, and records, per mnesis message, the ctxviz
messages it came from and `TokenEstimator.estimate_message`, and the BuiltContext (messages as
sent, token_estimate, raw_message_tokens, tool_output_tokens, the oldest included message) and
the system prompt's estimate. tiktoken's encodings are read from ctxviz's vendored copies (no
network): their sha256 is checked by tiktoken itself.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _offline_tiktoken() -> None:
    cache = Path(tempfile.mkdtemp(prefix="tiktoken-cache-"))
    for name in ("cl100k_base", "o200k_base"):
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        data = gzip.decompress((ROOT / "resources" / "tokenizers" / f"{name}.tiktoken.gz").read_bytes())
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


_offline_tiktoken()

from mnesis.context.builder import ContextBuilder  # noqa: E402
from mnesis.models.config import CompactionConfig, MnesisConfig, ModelInfo, StoreConfig  # noqa: E402
from mnesis.models.message import (  # noqa: E402
    FileRefPart,
    Message,
    MessageWithParts,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStatus,
)
from mnesis.store.immutable import ImmutableStore, RawMessagePart  # noqa: E402
from mnesis.store.summary_dag import SummaryDAGStore  # noqa: E402
from mnesis.tokens.estimator import TokenEstimator  # noqa: E402

LONG = "The quick brown fox jumps over the lazy dog. " * 40
CODE = 'def main():\n    print("hello")\n    return {"ok": True}\n' * 12


def text(t: str) -> dict:
    return {"kind": "text", "text": t}


def think(t: str) -> dict:
    return {"kind": "thinking", "text": t}


def call(i: str, name: str, args: dict | str) -> dict:
    return {"kind": "tool_call", "id": i, "name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}


def result(i: str, t: str, is_error: bool = False, compacted_at: int = 0) -> dict:
    return {"kind": "tool_result", "tool_call_id": i, "text": t, "is_error": is_error, "compacted_at": compacted_at}


def msg(role: str, *parts: dict, name: str = "") -> dict:
    return {"role": role, "parts": list(parts), "name": name}


def tool_turn(k: int, out: str, name: str = "read_file") -> list[dict]:
    return [msg("assistant", text(f"Let me look at file {k}."), call(f"c{k}", name, {"path": f"src/m{k}.py", "lines": [1, 50]})),
            msg("tool", result(f"c{k}", out), name=name)]


def sessions() -> list[dict]:
    base = [msg("user", text("Please fix the failing test in src/app.py")), msg("assistant", text("Sure, reading it first."))]
    cases: list[dict] = []

    def add(name: str, messages: list[dict], model: str = "", system: str = "You are a careful coding agent.", **params: int) -> None:
        cases.append({"name": name, "model": model, "system_prompt": system, "messages": messages, "params": params})

    plain = [*base, msg("user", text("thanks")), msg("assistant", text(LONG[:300]))]
    for model in ("", "gpt-4o", "gpt-4-turbo", "o3-mini", "anthropic/claude-sonnet-4-5", "claude-opus-4-6", "gemini-2.5-pro", "some-unknown-model"):
        add(f"plain/{model or 'no-model'}", plain, model)
    tools = [*base, *tool_turn(1, CODE), msg("user", text("and the next one")), *tool_turn(2, LONG), msg("assistant", text("Done."))]
    for model in ("", "gpt-4o", "claude-sonnet-4-5"):
        add(f"tools/{model or 'no-model'}", tools, model)
    two_calls = [*base, msg("assistant", text("Two reads."), call("a", "read", {"path": "a.py"}), call("b", "grep", {"pattern": "x+"})),
                 msg("tool", result("a", "print(1)"), name="read"), msg("tool", result("b", "a.py:1: x"), name="grep"),
                 msg("assistant", text("Both read."))]
    for model in ("gpt-4o", ""):
        add(f"two-calls/{model or 'no-model'}", two_calls, model)
    add("no-text-call", [*base, msg("assistant", call("c", "ls", {})), msg("tool", result("c", "a\nb"), name="ls")], "gpt-4o")
    add("error-result", [*base, msg("assistant", text("run"), call("e", "shell", {"cmd": "pytest"})),
                         msg("tool", result("e", "exit 1: 3 failed", is_error=True), name="shell")], "gpt-4o")
    add("empty-output", [*base, msg("assistant", call("z", "touch", {"path": "f"})), msg("tool", result("z", ""), name="touch")], "gpt-4o")
    add("pending-call", [*base, msg("assistant", text("calling"), call("p", "search", {"q": "ctx"}))], "gpt-4o")
    add("compacted", [*base, msg("assistant", text("reading"), call("k", "read", {"path": "big.log"})),
                      msg("tool", result("k", LONG, compacted_at=1767225600000), name="read"), msg("user", text("ok"))], "gpt-4o")
    add("string-arguments", [*base, msg("assistant", call("s", "echo", "not json")), msg("tool", result("s", "not json"), name="echo")], "gpt-4o")
    for model in ("gpt-4o", "claude-sonnet-4-5", ""):
        add(f"reasoning/{model or 'no-model'}", [*base, msg("assistant", think("I should check the imports first. It's 'quoted'."), text("Checking."))], model)
        add(f"empty-reasoning/{model or 'no-model'}", [*base, msg("assistant", think(""), text("Answer without thoughts."))], model)
        add(f"reasoning-only/{model or 'no-model'}", [*base, msg("assistant", think("just thinking\nacross lines"))], model)
    for model in ("gpt-4o", "gpt-4", ""):
        add(f"endoftext/{model or 'no-model'}", [*base, msg("user", text("the token <|endoftext|> appears " + LONG[:200])),
                                                   msg("assistant", text("fine"))], model)
    add("endoftext-in-tool", [*base, msg("assistant", call("x", "cat", {"path": "t.txt"})),
                              msg("tool", result("x", "a<|endoftext|>b " + CODE), name="cat")], "gpt-4o")
    add("endoftext-system", plain, "gpt-4o", system="System <|endoftext|> prompt " + LONG[:120])
    add("fim-token", [*base, msg("user", text("<|fim_prefix|> code " + CODE[:200]))], "gpt-4")
    add("file-ref", [*base, msg("user", {"kind": "file_ref", "path": "src/app.py", "content_id": "abc123", "file_type": "python",
                                         "token_count": 12345, "exploration_summary": "Flask app: create_app(), 3 routes"})], "gpt-4o")
    # Tight budgets: the newest-first fill stops at the first misfit (a whole tool message at once).
    long_tools = [msg("user", text("start")), *tool_turn(1, LONG), msg("user", text("next " + LONG[:400])), *tool_turn(2, CODE * 2),
                  msg("user", text("last")), *tool_turn(3, "short"), msg("assistant", text("final answer " + LONG[:200]))]
    for model in ("gpt-4o", "claude-sonnet-4-5", ""):
        info = ModelInfo.from_model_string(model)
        for room in (40, 150, 400, 700, 1100, 1600, 3000):
            limit = info.max_output_tokens + 1000 + room
            add(f"tight/{model or 'no-model'}/{room}", long_tools, model, context_limit=limit, compaction_buffer=1000)
    # Ending on a tool output: the newest mnesis message is the call with its output, fitting whole or not at all.
    for room in (30, 60, 500, 900):
        add(f"tight-tool-last/{room}", long_tools[:-1], "gpt-4o", context_limit=16_384 + 1000 + room, compaction_buffer=1000)
    add("buffer", long_tools, "gpt-4o", context_limit=20_000, compaction_buffer=3_500)
    return cases


def to_mnesis(case: dict, session_id: str) -> list[tuple[list[int], MessageWithParts]]:
    """ctxviz-shaped messages -> mnesis messages; a tool message joins the ToolPart of its call."""
    out: list[tuple[list[int], MessageWithParts]] = []
    open_calls: dict[str, ToolPart] = {}
    for i, m in enumerate(case["messages"]):
        if m["role"] == "tool" and out and m["parts"] and all(p["kind"] == "tool_result" and p["tool_call_id"] in open_calls for p in m["parts"]):
            for p in m["parts"]:
                part = open_calls[p["tool_call_id"]]
                if p["is_error"]:
                    part.error_message = p["text"]
                else:
                    part.output = p["text"]
                part.status.state = "error" if p["is_error"] else "completed"
                if p["compacted_at"]:
                    part.status.compacted_at = p["compacted_at"]
            out[-1][0].append(i)
            continue
        open_calls = {}
        parts: list = []
        for p in m["parts"]:
            if p["kind"] == "text":
                parts.append(TextPart(text=p["text"]))
            elif p["kind"] == "thinking":
                parts.append(ReasoningPart(text=p["text"]))
            elif p["kind"] == "tool_call":
                try:
                    arguments = json.loads(p["arguments"])
                except json.JSONDecodeError:
                    arguments = p["arguments"]
                # ToolPart.input is a dict; a non-JSON string is kept under a key (mnesis has no other way)
                part = ToolPart(tool_name=p["name"], tool_call_id=p["id"], input=arguments if isinstance(arguments, dict) else {"input": arguments},
                                status=ToolStatus(state="pending"))
                open_calls[p["id"]] = part
                parts.append(part)
            elif p["kind"] == "file_ref":
                parts.append(FileRefPart(**{k: v for k, v in p.items() if k != "kind"}))
        role = "user" if m["role"] == "user" else "assistant"
        message = Message(id=f"msg_{i:04d}", session_id=session_id, role=role, created_at=1_700_000_000_000 + i)
        out.append(([i], MessageWithParts(message=message, parts=parts)))
    return out


async def run(case: dict, db: str, n: int) -> dict:
    store = ImmutableStore(StoreConfig(db_path=db))
    await store.initialize()
    try:
        session_id = f"sess_{n:04d}"
        await store.create_session(session_id, model_id=case["model"], system_prompt=case["system_prompt"])
        converted = to_mnesis(case, session_id)
        for _, mwp in converted:
            await store.append_message(mwp.message)
            for k, part in enumerate(mwp.parts):
                is_tool = isinstance(part, ToolPart)
                await store.append_part(RawMessagePart(
                    id=f"part_{n:04d}_{mwp.message.id}_{k}", message_id=mwp.message.id, session_id=session_id, part_type=part.type,
                    content=json.dumps(part.model_dump()), part_index=k, tool_name=part.tool_name if is_tool else None,
                    tool_call_id=part.tool_call_id if is_tool else None, tool_state=part.status.state if is_tool else None,
                    compacted_at=part.status.compacted_at if is_tool else None))
        model = ModelInfo.from_model_string(case["model"])
        if "context_limit" in case["params"]:
            model = model.model_copy(update={"context_limit": case["params"]["context_limit"]})
        config = MnesisConfig(compaction=CompactionConfig(compaction_output_budget=case["params"].get("compaction_buffer", 20_000)))
        estimator = TokenEstimator()
        stored = await store.get_messages_with_parts(session_id)
        built = await ContextBuilder(store, SummaryDAGStore(store), estimator).build(session_id, model, case["system_prompt"], config)
        by_id = {mwp.message.id: indices for indices, mwp in converted}
        return {
            **case,
            "encoding": model.encoding,
            "mnesis_messages": [{"indices": by_id[m.message.id], "role": m.message.role, "tokens": estimator.estimate_message(m, model)}
                                for m in stored],
            "system_tokens": estimator.estimate(case["system_prompt"], model),
            "built": {
                "messages": [{"role": m.role, "content": m.content} for m in built.messages],
                "token_estimate": built.token_estimate, "raw_message_tokens": built.raw_message_tokens,
                "tool_output_tokens": built.tool_output_tokens, "usable": built.budget.usable,
                "oldest_included": by_id[built.oldest_included_message_id][0] if built.oldest_included_message_id else None,
            },
        }
    finally:
        await store.close()


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = [await run(case, str(Path(tmp) / f"{n}.db"), n) for n, case in enumerate(sessions())]
    out = {"framework": "mnesis", "version": importlib.metadata.version("mnesis"), "commit": "677d1898",
           "python": sys.version.split()[0], "tiktoken": importlib.metadata.version("tiktoken"), "cases": results}
    (HERE / "cases.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(results)} cases written to {HERE / 'cases.json'}")


if __name__ == "__main__":
    asyncio.run(main())
