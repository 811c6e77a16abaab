"""Golden cases for what LlamaIndex's ChatSummaryMemoryBuffer shows its summarising LLM.

Run by hand in a scratch venv (never in the test suite):

    python -m venv /tmp/venv-li && /tmp/venv-li/bin/pip install llama-index-core==0.14.25
    /tmp/venv-li/bin/python tests/golden/llamaindex/generate_prompts.py

`_summarize_oldest_chat_history` asks the LLM with `_get_prompt_to_summarize(messages)`: each
message as "role: content", a message whose content is "" as its tool calls ("Calling a function:
..."), and a message whose content is not a string (no text block: a tool-call-only assistant
message, an image alone) not at all. This records that prompt, built by LlamaIndex's own method,
for every session of cases.json (each message made a ChatMessage as generate.py makes it) and for
a few made to hit each branch, into prompts.json.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

from generate import to_llama
from llama_index.core.memory import ChatSummaryMemoryBuffer

OUT = Path(__file__).with_name("prompts.json")
CASES = json.loads(Path(__file__).with_name("cases.json").read_text())


def extra_sessions() -> dict[str, list[dict[str, Any]]]:
    call = {"type": "tool_call", "id": "call_1", "name": "write_file", "arguments": json.dumps({"path": "src/app.py", "content": "x = 1"})}
    return {"branches": [
        {"id": "m0", "role": "user", "parts": [{"type": "text", "text": "Fix src/app.py please"}]},
        {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "I will edit it."}, call]},
        {"id": "m2", "role": "tool", "parts": [{"type": "tool_result", "text": "written", "tool_call_id": "call_1"}], "tool_call_id": "call_1"},
        {"id": "m3", "role": "assistant", "parts": [dict(call, id="call_2")]},
        {"id": "m4", "role": "tool", "parts": [{"type": "tool_result", "text": "written again", "tool_call_id": "call_2"}], "tool_call_id": "call_2"},
        {"id": "m5", "role": "assistant", "parts": [{"type": "text", "text": ""}, dict(call, id="call_3")]},
        {"id": "m6", "role": "user", "parts": [{"type": "image", "url": "https://example.com/a.png"}]},
        {"id": "m7", "role": "user", "parts": [{"type": "text", "text": "first"}, {"type": "image", "url": "https://example.com/b.png"},
                                                 {"type": "text", "text": "second"}]},
        {"id": "m8", "role": "system", "parts": [{"type": "text", "text": "A summary so far."}]},
    ]}


def main() -> None:
    sessions = {name: spec["messages"] for name, spec in CASES["sessions"].items()}
    sessions.update(extra_sessions())
    buffer = ChatSummaryMemoryBuffer.from_defaults(llm=None)
    prompts = {name: buffer._get_prompt_to_summarize([to_llama(m) for m in messages]) for name, messages in sessions.items()}
    OUT.write_text(json.dumps({"framework": "llama-index-core", "version": version("llama-index-core"),
                               "generator": "tests/golden/llamaindex/generate_prompts.py", "extra_sessions": extra_sessions(),
                               "prompts": prompts}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(prompts)} prompts -> {OUT}")


if __name__ == "__main__":
    main()
