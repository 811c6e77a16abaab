"""Golden cases for ctxviz's LangChain policies, recorded from LangChain's own code.

Run by hand, in a scratch venv that has the framework (not needed by the tests):

    python -m venv /tmp/venv-langchain
    /tmp/venv-langchain/bin/pip install langchain==1.5.0 langchain-core==1.8.2 langchain-openai==1.7.4 langchain-anthropic==1.7.10
    /tmp/venv-langchain/bin/python tests/golden/langchain/generate.py

(Recorded with those versions; langchain-core 1.8.2 asks for certifi>=2026.10.19, which the package
mirror here lacked, so the packages went in with --no-deps beside certifi 2026.10.18 and their
other requirements; langgraph's resolve had pulled langchain-core back to 1.7.2, reinstalled.)

It builds deterministic sessions (system messages, tool calls with results, images, long tool
outputs, names, multi-part and Anthropic-style content, usage metadata), runs
`count_tokens_approximately`, `trim_messages` (every strategy and option), one
`SummarizationMiddleware.before_model` pass (a fake model gives the profile and provider; a
recording `summarizer` returns a fixed summary) and `ClearToolUsesEdit.apply`, and writes inputs
(`messages_to_dict`) and what LangChain returned into cases.json.
"""

from __future__ import annotations

import copy
import json
import random
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain.agents.middleware import SummarizationMiddleware
from langchain.agents.middleware.context_editing import ClearToolUsesEdit
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

OUT = Path(__file__).with_name("cases.json")
SUMMARY = "SUMMARY-TEXT"

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
         "upsilon phi chi psi omega file.py error value result config").split()


def text(rng: random.Random, lo: int, hi: int, lines: int = 1) -> str:
    return "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))) for _ in range(lines))


IMG = "data:image/png;base64," + "iVBORw0KGgo" * 20


def session_simple(rng: random.Random) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("You are a helpful assistant. " + text(rng, 5, 12), id="sys")]
    for i in range(8):
        out.append(HumanMessage(text(rng, 3, 30), id=f"h{i}"))
        out.append(AIMessage(text(rng, 5, 60, rng.randint(1, 3)), id=f"a{i}"))
    out.append(HumanMessage(text(rng, 3, 10), id="hlast"))
    return out


def session_tools(rng: random.Random, provider: str = "openai", usage: bool = False) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("Agent with tools.", id="sys")]
    n = 0
    for i in range(7):
        out.append(HumanMessage(text(rng, 3, 20), id=f"h{i}"))
        calls = rng.randint(1, 3)
        tcs = [{"id": f"call_{i}_{k}", "name": rng.choice(["read_file", "search", "run"]),
                "args": {"path": rng.choice(WORDS) + ".py", "n": rng.randint(1, 99)}} for k in range(calls)]
        total = 1000 + 900 * i
        kw: dict[str, Any] = {}
        if usage:
            kw = {"usage_metadata": {"input_tokens": total - 50, "output_tokens": 50, "total_tokens": total},
                  "response_metadata": {"model_provider": provider}}
        out.append(AIMessage(rng.choice(["", text(rng, 2, 8)]), tool_calls=tcs, id=f"a{i}", **kw))
        for k, tc in enumerate(tcs):
            body = text(rng, 5, 40, rng.randint(1, 25 if rng.random() < 0.3 else 4))
            out.append(ToolMessage(body, tool_call_id=tc["id"], name=tc["name"] if rng.random() < 0.8 else None, id=f"t{i}_{k}"))
            n += 1
        out.append(AIMessage(text(rng, 5, 40), id=f"r{i}", **kw))
    out.append(HumanMessage(text(rng, 3, 10), id="hlast"))
    return out


def session_multimodal(rng: random.Random) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage([{"type": "text", "text": "System as blocks."}, {"type": "text", "text": text(rng, 3, 9)}], id="sys")]
    for i in range(6):
        blocks: list[Any] = [{"type": "text", "text": text(rng, 3, 20, rng.randint(1, 4))}]
        if i % 2 == 0:
            blocks.append({"type": "image_url", "image_url": {"url": IMG}})
        if i % 3 == 0:
            blocks.append({"type": "text", "text": text(rng, 2, 10, 3)})
        out.append(HumanMessage(blocks, id=f"h{i}", name="alice" if i % 2 else None))
        if i % 2:
            out.append(AIMessage([{"type": "thinking", "thinking": text(rng, 4, 12)}, {"type": "text", "text": text(rng, 5, 30, 2)}], id=f"a{i}"))
        else:
            out.append(AIMessage(text(rng, 5, 50, 3), id=f"a{i}", name="bot"))
    out.append(HumanMessage([{"type": "text", "text": "last"}, {"type": "image", "url": "https://example.com/x.png"}], id="hlast"))
    return out


def session_anthropic(rng: random.Random) -> list[BaseMessage]:
    out: list[BaseMessage] = [HumanMessage(text(rng, 5, 20), id="h0")]
    for i in range(6):
        cid = f"toolu_{i}"
        args = {"q": text(rng, 1, 4)}
        out.append(AIMessage([{"type": "text", "text": text(rng, 2, 12)}, {"type": "tool_use", "id": cid, "name": "lookup", "input": args}],
                             tool_calls=[{"id": cid, "name": "lookup", "args": args}], id=f"a{i}",
                             response_metadata={"model_provider": "anthropic"},
                             usage_metadata={"input_tokens": 400 * (i + 1), "output_tokens": 40, "total_tokens": 400 * (i + 1) + 40}))
        out.append(ToolMessage(text(rng, 10, 40, rng.randint(2, 12)), tool_call_id=cid, name="lookup", id=f"t{i}"))
        out.append(HumanMessage(text(rng, 2, 15), id=f"h{i + 1}"))
    return out


def session_usage_mixed(rng: random.Random) -> list[BaseMessage]:
    """Usage on every AI message, but the first names no provider (LangChain takes the next one's)."""
    out = session_tools(rng, usage=True)
    first = next(i for i, m in enumerate(out) if isinstance(m, AIMessage))
    out[first] = out[first].model_copy(update={"response_metadata": {}})
    return out[:14]


def session_blocks(rng: random.Random) -> list[BaseMessage]:
    """Messages of many small content blocks, so that allow_partial keeps several of them."""
    out: list[BaseMessage] = [SystemMessage("Blocks.", id="sys")]
    for i in range(5):
        blocks: list[Any] = [{"type": "text", "text": f"[{i}.{k}] " + text(rng, 2, 9)} for k in range(rng.randint(3, 6))]
        if i % 2:
            blocks.insert(2, {"type": "image_url", "image_url": {"url": IMG}})
        out.append(HumanMessage(blocks, id=f"h{i}"))
        out.append(AIMessage([{"type": "text", "text": text(rng, 2, 6)} for _ in range(3)], id=f"a{i}"))
    return out


def session_interleaved(rng: random.Random) -> list[BaseMessage]:
    """Tool results whose call is not on the nearest AI message, and one with no AI message before it."""
    out: list[BaseMessage] = [ToolMessage(text(rng, 10, 30, 3), tool_call_id="orphan", name="ls", id="t_orphan"),
                              HumanMessage(text(rng, 3, 9), id="h0")]
    for i in range(4):
        calls = [{"id": f"c{i}_{k}", "name": ["ls", "cat"][k % 2], "args": {"p": text(rng, 1, 3)}} for k in range(2)]
        out.append(AIMessage("", tool_calls=calls, id=f"a{i}"))
        out.append(ToolMessage(text(rng, 10, 40, 4), tool_call_id=calls[0]["id"], name=calls[0]["name"], id=f"t{i}_0"))
        out.append(AIMessage(text(rng, 3, 12), id=f"n{i}"))  # an AI message between a call and its second result
        out.append(ToolMessage(text(rng, 10, 40, 4), tool_call_id=calls[1]["id"], id=f"t{i}_1"))
    out.append(HumanMessage(text(rng, 3, 9), id="hlast"))
    return out


def session_random(rng: random.Random, n: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    if rng.random() < 0.6:
        out.append(SystemMessage(text(rng, 5, 30, rng.randint(1, 3)), id="sys"))
    k = 0
    while len(out) < n:
        r = rng.random()
        k += 1
        if r < 0.35:
            out.append(HumanMessage(text(rng, 1, 40, rng.randint(1, 3)), id=f"m{k}"))
        elif r < 0.6:
            out.append(AIMessage(text(rng, 1, 60, rng.randint(1, 5)), id=f"m{k}"))
        else:
            calls = [{"id": f"c{k}_{j}", "name": rng.choice(["ls", "cat", "grep"]), "args": {"x": text(rng, 1, 3)}} for j in range(rng.randint(1, 2))]
            out.append(AIMessage("", tool_calls=calls, id=f"m{k}"))
            for j, c in enumerate(calls):
                out.append(ToolMessage(text(rng, 3, 30, rng.randint(1, 30)), tool_call_id=c["id"], name=c["name"], id=f"m{k}_t{j}"))
    return out


def sessions() -> dict[str, list[BaseMessage]]:
    rng = random.Random(1234)
    out = {
        "simple": session_simple(rng),
        "tools": session_tools(rng),
        "tools_usage": session_tools(rng, usage=True),
        "multimodal": session_multimodal(rng),
        "anthropic": session_anthropic(rng),
        "usage_mixed": session_usage_mixed(rng),
        "blocks": session_blocks(rng),
        "interleaved": session_interleaved(rng),
    }
    for i in range(6):
        out[f"random{i}"] = session_random(rng, rng.randint(8, 40))
    return out


def dump(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return json.loads(json.dumps(messages_to_dict(messages)))


def result(messages: list[BaseMessage], original: list[BaseMessage]) -> list[dict[str, Any]]:
    """Each returned message: its id, and its content where LangChain changed it."""
    by_id = {m.id: m for m in original}
    out = []
    for m in messages:
        item: dict[str, Any] = {"id": m.id}
        source = by_id.get(m.id)
        if source is None or m.content != source.content:
            item["content"] = m.content
        if isinstance(m, AIMessage) and source is not None and isinstance(source, AIMessage) and m.tool_calls != source.tool_calls:
            item["tool_calls"] = [dict(tc) for tc in m.tool_calls]
        item["tokens"] = count_tokens_approximately([m])
        out.append(item)
    return out


def trim_options(name: str) -> list[dict[str, Any]]:
    opts: list[dict[str, Any]] = []
    for max_tokens in (0, 40, 150, 400, 1200, 100000):
        opts.append({"max_tokens": max_tokens, "strategy": "last"})
        opts.append({"max_tokens": max_tokens, "strategy": "first"})
    for max_tokens in (57, 90, 333, 700):
        opts += [
            {"max_tokens": max_tokens, "strategy": "last", "allow_partial": True},
            {"max_tokens": max_tokens, "strategy": "first", "allow_partial": True},
            {"max_tokens": max_tokens, "strategy": "last", "include_system": True},
            {"max_tokens": max_tokens, "strategy": "last", "include_system": True, "allow_partial": True, "start_on": "human"},
            {"max_tokens": max_tokens, "strategy": "last", "start_on": "human", "end_on": ["human", "tool"]},
            {"max_tokens": max_tokens, "strategy": "last", "end_on": "ai"},
            {"max_tokens": max_tokens, "strategy": "first", "end_on": "human"},
            {"max_tokens": max_tokens, "strategy": "first", "end_on": ["ai", "tool"], "allow_partial": True},
            {"max_tokens": max_tokens, "strategy": "last", "allow_partial": True, "text_splitter": " "},
            {"max_tokens": max_tokens, "strategy": "first", "allow_partial": True, "text_splitter": " "},
        ]
    for max_tokens in range(20, 200, 11) if name in ("blocks", "multimodal") else ():  # the partial message lands on many block counts
        opts.append({"max_tokens": max_tokens, "strategy": "last", "allow_partial": True})
        opts.append({"max_tokens": max_tokens, "strategy": "first", "allow_partial": True})
    opts.append({"max_tokens": 100000, "strategy": "first", "end_on": "tool"})
    opts.append({"max_tokens": 100000, "strategy": "last", "end_on": "tool", "include_system": True})
    return opts


def splitter(sep: str):
    """A user's text splitter of the same shape as LangChain's default, on another separator."""
    def split(t: str) -> list[str]:
        parts = t.split(sep)
        return [p + sep for p in parts[:-1]] + parts[-1:]
    return split


def run_trim(messages: list[BaseMessage], opts: dict[str, Any]) -> list[dict[str, Any]]:
    kwargs = dict(opts)
    if "text_splitter" in kwargs:
        kwargs["text_splitter"] = splitter(kwargs["text_splitter"])
    out = trim_messages(copy.deepcopy(messages), token_counter=count_tokens_approximately, **kwargs)
    return result(out, messages)


class FakeModel(FakeListChatModel):
    """A chat model with a profile (max_input_tokens), an `_llm_type` and an `ls_provider`."""

    llm_type: str = "fake-list-chat-model"
    ls_provider: str = "openai"

    @property
    def _llm_type(self) -> str:
        return self.llm_type

    def _get_ls_params(self, stop=None, **kwargs):  # type: ignore[no-untyped-def]
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = self.ls_provider
        return params


SUMMARY_CONFIGS: list[dict[str, Any]] = [
    {"trigger": None},
    {"trigger": ("tokens", 300)},
    {"trigger": ("tokens", 300), "keep": ("messages", 5)},
    {"trigger": ("tokens", 100000)},
    {"trigger": ("messages", 10), "keep": ("messages", 4)},
    {"trigger": ("messages", 10), "keep": ("messages", 7)},
    {"trigger": ("messages", 10), "keep": ("messages", 3), "trim_tokens_to_summarize": 120},
    {"trigger": ("messages", 10), "keep": ("messages", 3), "trim_tokens_to_summarize": None},
    {"trigger": ("messages", 5), "keep": ("messages", 2), "trim_tokens_to_summarize": 5},
    {"trigger": ("fraction", 0.5), "keep": ("tokens", 200), "max_input_tokens": 1000},
    {"trigger": ("fraction", 0.9), "keep": ("fraction", 0.2), "max_input_tokens": 2000},
    {"trigger": [("fraction", 0.9), ("messages", 12)], "keep": ("tokens", 500), "max_input_tokens": 100000},
    {"trigger": {"tokens": 500, "messages": 30}, "keep": ("messages", 6)},
    {"trigger": [{"tokens": 5000, "messages": 3}, {"tokens": 400, "messages": 6}], "keep": ("tokens", 350)},
    {"trigger": ("tokens", 2500), "keep": ("messages", 6)},
    {"trigger": ("tokens", 2500), "keep": ("messages", 6), "ls_provider": "anthropic"},
    {"trigger": ("tokens", 600), "keep": ("tokens", 300), "llm_type": "anthropic-chat", "ls_provider": "anthropic"},
    {"trigger": ("tokens", 50), "keep": ("tokens", 1)},
    # reported usage: the last AI message's total_tokens, from the model's own provider only
    {"trigger": ("tokens", 5000), "keep": ("messages", 6)},
    {"trigger": ("tokens", 5000), "keep": ("messages", 6), "ls_provider": "anthropic"},
    {"trigger": ("tokens", 2400), "keep": ("messages", 6), "ls_provider": "anthropic"},
    {"trigger": ("tokens", 2400), "keep": ("messages", 6), "ls_provider": "amazon_bedrock"},
    {"trigger": ("fraction", 0.5), "keep": ("messages", 6), "max_input_tokens": 4900},
    # summarizer input trimmed with allow_partial
    {"trigger": ("messages", 10), "keep": ("messages", 3), "trim_tokens_to_summarize": 300},
    {"trigger": ("messages", 10), "keep": ("messages", 3), "trim_tokens_to_summarize": 1000},
]


def run_summary(messages: list[BaseMessage], cfg: dict[str, Any]) -> dict[str, Any]:
    cfg = dict(cfg)
    profile = {"max_input_tokens": cfg.pop("max_input_tokens", 128000)}
    model = FakeModel(responses=["unused"], profile=profile, llm_type=cfg.pop("llm_type", "fake-list-chat-model"),
                      ls_provider=cfg.pop("ls_provider", "openai"))
    seen: list[list[BaseMessage]] = []

    def summarizer(msgs: list[BaseMessage]) -> str:
        seen.append(list(msgs))
        return SUMMARY

    mw = SummarizationMiddleware(model, summarizer=summarizer, **cfg)
    state = {"messages": copy.deepcopy(messages)}
    update = mw.before_model(state, None)  # type: ignore[arg-type]
    out: dict[str, Any] = {"fired": update is not None, "total_tokens": mw.token_counter(messages)}
    if update is not None:
        new = update["messages"][1:]
        out["summary_message"] = {"type": new[0].type, "content": new[0].content, "additional_kwargs": new[0].additional_kwargs}
        out["preserved"] = [m.id for m in new[1:]]
        out["summarizer_input"] = result(seen[0], messages) if seen else None
    return out


def jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


EDIT_CONFIGS: list[dict[str, Any]] = [
    {},
    {"trigger": 200},
    {"trigger": 200, "keep": 0},
    {"trigger": 200, "keep": 1, "clear_tool_inputs": True},
    {"trigger": 200, "clear_at_least": 150},
    {"trigger": 200, "clear_at_least": 100000},
    {"trigger": 200, "keep": 2, "exclude_tools": ["search", "cat"]},
    {"trigger": 200, "keep": 100},
    {"trigger": 600, "placeholder": "<tool output removed>", "clear_at_least": 40, "clear_tool_inputs": True},
    {"trigger": 1500, "keep": 1},
]


def run_edit(messages: list[BaseMessage], cfg: dict[str, Any]) -> list[dict[str, Any]]:
    edited = copy.deepcopy(messages)
    ClearToolUsesEdit(**cfg).apply(edited, count_tokens=count_tokens_approximately)
    return result(edited, messages)


def profiles() -> dict[str, int]:
    """The model profiles' max_input_tokens (what `fraction` multiplies) for the models of ctxviz's
    catalogue that the OpenAI and Anthropic integrations describe."""
    import importlib.util
    from importlib.metadata import distribution

    def table_of(dist: str, module: str) -> dict[str, Any]:
        # The data file alone: the packages' __init__ imports their SDKs, which the tables do not need.
        spec = importlib.util.spec_from_file_location(module, str(distribution(dist).locate_file(f"{module}/data/_profiles.py")))
        loaded = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(loaded)  # type: ignore[union-attr]
        return loaded._PROFILES

    names = [line.split("name: ", 1)[1].split(",", 1)[0] for line in
             (Path(__file__).parents[3] / "resources" / "models.yaml").read_text(encoding="utf-8").splitlines() if "{name: " in line]
    table = {**table_of("langchain-openai", "langchain_openai"), **table_of("langchain-anthropic", "langchain_anthropic")}
    return {n: table[n]["max_input_tokens"] for n in names if n in table and isinstance(table[n].get("max_input_tokens"), int)}


def main() -> None:
    cases: dict[str, Any] = {
        "versions": {"langchain": version("langchain"), "langchain-core": version("langchain-core"),
                     "langchain-openai": version("langchain-openai"), "langchain-anthropic": version("langchain-anthropic")},
        "profiles": profiles(),
        "sessions": {},
        "counts": {},
        "trim": [],
        "summarization": [],
        "context_editing": [],
    }
    all_sessions = sessions()
    for name, messages in all_sessions.items():
        cases["sessions"][name] = dump(messages)
        cases["counts"][name] = {
            "per_message": [count_tokens_approximately([m]) for m in messages],
            "per_message_3_3": [count_tokens_approximately([m], chars_per_token=3.3) for m in messages],
            "total": count_tokens_approximately(messages),
            "scaled": count_tokens_approximately(messages, use_usage_metadata_scaling=True),
        }
        for opts in trim_options(name):
            try:
                kept = run_trim(messages, opts)
            except ValueError as exc:
                kept = {"error": str(exc)}
            cases["trim"].append({"session": name, "options": opts, "result": kept})
        for cfg in SUMMARY_CONFIGS:
            cases["summarization"].append({"session": name, "config": jsonable(cfg), "result": run_summary(messages, cfg)})
        for cfg in EDIT_CONFIGS:
            cases["context_editing"].append({"session": name, "config": cfg, "result": run_edit(messages, cfg)})
    OUT.write_text(json.dumps(cases, separators=(",", ":"), sort_keys=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(cases['trim'])} trim, {len(cases['summarization'])} summarization, "
          f"{len(cases['context_editing'])} context-editing cases over {len(all_sessions)} sessions, {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
