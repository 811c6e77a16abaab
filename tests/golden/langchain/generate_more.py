"""More golden cases for ctxviz's LangChain policies (issue 21), recorded from LangChain's own code.

Run by hand in generate.py's scratch venv (langchain 1.5.0, langchain-core 1.8.2; not needed by the tests):

    /tmp/venv-langchain/bin/python tests/golden/langchain/generate_more.py

It reuses generate.py's sessions (the same seed, so cases.json holds them; their dumps must be equal,
which this script checks) and records into cases_more.json:

- trim: `trim_messages` with `token_counter=len` (the first example of LangChain's docs), with
  `functools.partial(count_tokens_approximately, chars_per_token=..., extra_tokens_per_message=...)`,
  and with negative and fractional `max_tokens`, over both strategies and the other options;
- context_editing: `ClearToolUsesEdit.apply` with a negative `keep` (LangChain slices
  `candidates[:-keep]`, so keep=-1 clears only the first result) or a negative `trigger`.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain.agents.middleware.context_editing import ClearToolUsesEdit
from langchain_core.messages import trim_messages
from langchain_core.messages.utils import count_tokens_approximately

sys.path.insert(0, str(Path(__file__).parent))
from generate import dump, sessions, splitter  # noqa: E402

OUT = Path(__file__).with_name("cases_more.json")
COUNTERS: list[dict[str, Any]] = [
    {"token_counter": "len"},
    {"chars_per_token": 3.3},
    {"chars_per_token": 2.5, "extra_tokens_per_message": 0.5},
    {"extra_tokens_per_message": 0},
    {"chars_per_token": 6, "extra_tokens_per_message": 4.5},
]


def counter_of(options: dict[str, Any]) -> Any:
    if options.get("token_counter") == "len":
        return len
    settings = {k: options[k] for k in ("chars_per_token", "extra_tokens_per_message") if k in options}
    return functools.partial(count_tokens_approximately, **settings)


def trim_options(counter: dict[str, Any]) -> list[dict[str, Any]]:
    budgets = (0, 1, 3, 7, 40) if counter.get("token_counter") == "len" else (40, 150, 401)
    opts: list[dict[str, Any]] = []
    for max_tokens in budgets:
        opts += [
            {"max_tokens": max_tokens, "strategy": "last"},
            {"max_tokens": max_tokens, "strategy": "first"},
            {"max_tokens": max_tokens, "strategy": "last", "allow_partial": True},
            {"max_tokens": max_tokens, "strategy": "first", "allow_partial": True, "text_splitter": " "},
            {"max_tokens": max_tokens, "strategy": "last", "include_system": True, "start_on": "human"},
            {"max_tokens": max_tokens, "strategy": "first", "end_on": ["ai", "tool"]},
        ]
    return [{**counter, **o} for o in opts]


ODD_BUDGETS: list[dict[str, Any]] = [
    {"max_tokens": -1, "strategy": "last"},
    {"max_tokens": -40, "strategy": "first"},
    {"max_tokens": -5, "strategy": "last", "include_system": True},
    {"max_tokens": -5, "strategy": "last", "allow_partial": True},
    {"max_tokens": 0.5, "strategy": "last"},
    {"max_tokens": 150.9, "strategy": "last", "allow_partial": True},
    {"max_tokens": 400.5, "strategy": "first", "allow_partial": True},
    {"max_tokens": 333.75, "strategy": "last", "include_system": True},
    {"token_counter": "len", "max_tokens": 4.5, "strategy": "last"},
    {"token_counter": "len", "max_tokens": -2, "strategy": "first"},
]


def result(messages: list[Any], original: list[Any], count_one: Any) -> list[dict[str, Any]]:
    by_id = {m.id: m for m in original}
    out = []
    for m in messages:
        item: dict[str, Any] = {"id": m.id}
        source = by_id.get(m.id)
        if source is None or m.content != source.content:
            item["content"] = m.content
        item["tokens"] = count_one([m])
        out.append(item)
    return out


EDIT_CONFIGS: list[dict[str, Any]] = [
    {"trigger": 200, "keep": -1},
    {"trigger": 200, "keep": -2},
    {"trigger": 200, "keep": -100},
    {"trigger": -1, "keep": 1},
    {"trigger": -50, "keep": -1, "clear_tool_inputs": True},
]


def main() -> None:
    doc: dict[str, Any] = {"versions": {"langchain": version("langchain"), "langchain-core": version("langchain-core")},
                           "generator": "tests/golden/langchain/generate_more.py", "trim": [], "context_editing": []}
    recorded = json.loads(Path(__file__).with_name("cases.json").read_text(encoding="utf-8"))["sessions"]
    for name, messages in sessions().items():
        assert dump(messages) == recorded[name], f"session {name} is not the one cases.json holds"
        for opts in [o for c in COUNTERS for o in trim_options(c)] + ODD_BUDGETS:
            kwargs = {k: v for k, v in opts.items() if k not in ("token_counter", "chars_per_token", "extra_tokens_per_message")}
            if "text_splitter" in kwargs:
                kwargs["text_splitter"] = splitter(kwargs["text_splitter"])
            counter = counter_of(opts)
            try:
                kept = result(trim_messages(copy.deepcopy(messages), token_counter=counter, **kwargs), messages, counter)
                total = counter(trim_messages(copy.deepcopy(messages), token_counter=counter, **kwargs))
            except ValueError as exc:
                kept, total = {"error": str(exc)}, None  # type: ignore[assignment]
            doc["trim"].append({"session": name, "options": opts, "result": kept, "total": total})
        for cfg in EDIT_CONFIGS:
            edited = copy.deepcopy(messages)
            ClearToolUsesEdit(**cfg).apply(edited, count_tokens=count_tokens_approximately)
            doc["context_editing"].append({"session": name, "config": cfg,
                                           "result": result(edited, messages, count_tokens_approximately)})
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(doc['trim'])} trim, {len(doc['context_editing'])} context-editing cases, {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
