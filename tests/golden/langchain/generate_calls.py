"""Golden cases for the schedule of LangChain's SummarizationMiddleware: a real agent, call by call.

Run by hand, in the scratch venv of generate.py (langchain 1.5.0, langchain-core 1.8.2, langgraph):

    /tmp/venv-langchain/bin/python tests/golden/langchain/generate_calls.py

`create_agent` runs a scripted chat model (its replies are fixed: tool calls, several at once,
then an answer) with real tools, the middleware under test and an in-memory checkpointer, over
several user turns of one thread. The agent's own loop decides when the middleware runs: before
each model call (`before_model`), never between the parallel tool results. The model records each
request it receives; the middleware's summarizer is a function returning a fixed text.

calls.json holds, per case, the conversation as a log would hold it (every message once, in the
order the agent made them, `messages_to_dict`: what ctxviz reads) and, per model call, the ids of
the messages sent and whether a summary came first, plus the ids each summary replaced.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage, messages_to_dict
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

OUT = Path(__file__).with_name("calls.json")
SUMMARY = "SUMMARY-TEXT"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + " ".join(f"line{k}" for k in range(len(path) * 3))


@tool
def grep(pattern: str) -> str:
    """Search the repository."""
    return f"{pattern} found in src/a.py, src/b.py and tests/test_{pattern}.py"


class ScriptedModel(BaseChatModel):
    """Replies from a script; records every request (the messages the agent sent)."""

    script: list[AIMessage]
    requests: list[list[BaseMessage]] = []
    profile: dict[str, Any] | None = {"max_input_tokens": 128000}

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _get_ls_params(self, stop=None, **kwargs):  # type: ignore[no-untyped-def]
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "openai"
        return params

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        self.requests.append(list(messages))
        reply = self.script[len(self.requests) - 1]
        return ChatResult(generations=[ChatGeneration(message=reply)])


def ai(n: int, text: str, calls: list[tuple[str, dict[str, str]]] = ()) -> AIMessage:  # type: ignore[assignment]
    return AIMessage(content=text, id=f"ai{n}", tool_calls=[{"name": name, "args": args, "id": f"call{n}_{k}", "type": "tool_call"}
                                                             for k, (name, args) in enumerate(calls)])


def script() -> tuple[list[str], list[list[AIMessage]]]:
    """Three user turns; the agent calls tools (two or three at once) before answering each."""
    prompts = ["Fix the failing login test in the auth module, please.",
               "Now add a regression test for the expired-session case.",
               "Finally, update the changelog and summarise what changed."]
    turns = [
        [ai(1, "Let me look around.", [("grep", {"pattern": "login"}), ("read_file", {"path": "src/auth/session.py"})]),
         ai(2, "", [("read_file", {"path": "tests/test_login.py"}), ("grep", {"pattern": "expired"}), ("read_file", {"path": "src/a.py"})]),
         ai(3, "", [("read_file", {"path": "src/b.py"})]),
         ai(4, "The test failed because the session clock was not frozen; fixed in src/auth/session.py.")],
        [ai(5, "", [("read_file", {"path": "tests/test_session.py"}), ("grep", {"pattern": "ttl"})]),
         ai(6, "", [("read_file", {"path": "src/auth/ttl.py"})]),
         ai(7, "Added test_expired_session_is_refused to tests/test_session.py.")],
        [ai(8, "", [("read_file", {"path": "CHANGELOG.md"}), ("grep", {"pattern": "Unreleased"})]),
         ai(9, "Changelog updated: the login fix and the new regression test are under Unreleased.")],
    ]
    return prompts, turns


CONFIGS: list[dict[str, Any]] = [
    {"trigger": ("messages", 6), "keep": ("messages", 3)},
    {"trigger": ("messages", 9), "keep": ("messages", 4)},
    {"trigger": ("messages", 12), "keep": ("messages", 2)},
    {"trigger": ("tokens", 250), "keep": ("messages", 4)},
    {"trigger": ("tokens", 400), "keep": ("tokens", 150)},
    {"trigger": ("tokens", 600), "keep": ("messages", 6)},
]


def name(m: BaseMessage) -> str | None:
    """A message's id; a tool result's is langgraph's uuid, so it is named by its call instead."""
    return f"result_{m.tool_call_id}" if isinstance(m, ToolMessage) else m.id


def is_summary(m: BaseMessage) -> bool:
    return isinstance(m, HumanMessage) and m.additional_kwargs.get("lc_source") == "summarization"


def run(cfg: dict[str, Any]) -> dict[str, Any]:
    prompts, turns = script()
    model = ScriptedModel(script=[m for turn in turns for m in turn], requests=[])
    summarized: list[list[str]] = []

    def summarizer(msgs: list[BaseMessage]) -> str:
        summarized.append([name(m) for m in msgs if not is_summary(m)])
        return SUMMARY

    agent = create_agent(model, [read_file, grep], middleware=[SummarizationMiddleware(model, summarizer=summarizer, **cfg)],
                         checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    for k, prompt in enumerate(prompts):
        agent.invoke({"messages": [HumanMessage(prompt, id=f"user{k}")]}, thread)
    # The log: every message once, in the order the agent made it (a request holds all it kept, so
    # each message appears in the request after it was made), then the last answer.
    log: list[BaseMessage] = []
    seen: set[str] = set()
    for request in model.requests:
        for m in request:
            if not is_summary(m) and m.id not in seen:
                seen.add(m.id)
                log.append(m)
    log.append(model.script[len(model.requests) - 1])
    for m in log:
        m.id = name(m)
    calls = [{"sent": [name(m) for m in request if not is_summary(m)], "summary_first": bool(request) and is_summary(request[0])}
             for request in model.requests]
    return {"config": {k: list(v) for k, v in cfg.items()}, "log": json.loads(json.dumps(messages_to_dict(log))), "calls": calls,
            "summarized": summarized}


def main() -> None:
    cases = {"versions": {"langchain": version("langchain"), "langchain-core": version("langchain-core"), "langgraph": version("langgraph")},
             "summary": SUMMARY, "cases": [run(cfg) for cfg in CONFIGS]}
    OUT.write_text(json.dumps(cases, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(cases['cases'])} cases, {sum(len(c['calls']) for c in cases['cases'])} model calls, "
          f"{sum(len(c['summarized']) for c in cases['cases'])} summaries")


if __name__ == "__main__":
    main()
