"""Golden cases for ctxviz's Strands policies, from Strands' own conversation managers.

Run by hand in a scratch venv (never in the test suite):

    python -m venv /tmp/venv-strands && /tmp/venv-strands/bin/pip install strands-agents==1.62.0
    /tmp/venv-strands/bin/python tests/golden/strands/generate.py

It builds deterministic Strands conversations (text, images, tool calls and results, long and
image-bearing tool results, error results, tool-heavy stretches without a user message, system
prompts, tool specs) and feeds them to the real managers through a stand-in agent (an object with
`messages`, `model`, `aux_model`) and a stand-in model (a `strands.models.Model` subclass whose
`count_tokens` and `estimate_utilization` are Strands' own; its `stream` answers a fixed summary):

- SlidingWindowConversationManager: `apply_management`, then the proactive-compression hook with
  Strands' own estimate, then `reduce_context(e=ContextWindowOverflowException)` while Strands'
  own `count_tokens` exceeds the model's `context_window_limit` (the event loop's retry).
- SummarizingConversationManager: `reduce_context(e)` once, and twice for a second pass.

It records the inputs, each message's `count_tokens`, what remains (by original position, with
the text of every tool result Strands cut), the final estimate, and the version, into cases.json.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import random
from importlib.metadata import version
from pathlib import Path
from typing import Any

from strands import Agent, tool
from strands.agent.conversation_manager import SlidingWindowConversationManager, SummarizingConversationManager
from strands.hooks import BeforeModelCallEvent, MessageAddedEvent
from strands.models.model import Model
from strands.types.exceptions import ContextWindowOverflowException

OUT = Path(__file__).with_name("cases.json")
WORDS = ("alpha beta gamma delta file path config test error value result module function class import "
         "return data list item user order amount total check build run deploy cache index query").split()
TOOLS = ("read_file", "grep", "run_tests", "write_file", "screenshot", "list_dir")


class FakeModel(Model):
    """A model whose only behaviour is Strands' base class: count_tokens, estimate_utilization."""

    def __init__(self, limit: int) -> None:
        self.config = {"context_window_limit": limit}
        self.summarised: list[list[Any]] = []

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    async def structured_output(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any) -> Any:
        self.summarised.append(messages[:-1])  # the last one is "Please summarize this conversation."
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockDelta": {"delta": {"text": f"SUMMARY OF {len(messages) - 1} MESSAGES"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


class FakeAgent:
    def __init__(self, messages: list[Any], model: FakeModel) -> None:
        self.messages = messages
        self.model = model
        self.aux_model = model


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def image(rng: random.Random) -> dict[str, Any]:
    size = rng.choice((68, 120, 257))
    return {"image": {"format": rng.choice(("png", "jpeg")), "source": {"bytes": bytes(rng.randrange(256) for _ in range(size))}}}


def tool_result(rng: random.Random, tool_id: str, long_share: float) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for _ in range(rng.choice((1, 1, 1, 2))):
        kind = rng.random()
        if kind < 0.15:
            items.append(image(rng))
        elif kind < 0.15 + long_share:
            items.append({"text": words(rng, rng.randrange(60, 110))})
        else:
            items.append({"text": words(rng, rng.randrange(1, 40))})
    status = "error" if rng.random() < 0.1 else "success"
    return {"toolResult": {"toolUseId": tool_id, "status": status, "content": items}}


def conversation(rng: random.Random, turns: int, tool_heavy: float, long_share: float) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    counter = 0
    first = [{"text": words(rng, rng.randrange(3, 30))}]
    if rng.random() < 0.2:
        first.append(image(rng))
    messages.append({"role": "user", "content": first})
    for turn in range(turns):
        while rng.random() < tool_heavy:
            calls = []
            content: list[dict[str, Any]] = []
            if rng.random() < 0.4:
                content.append({"text": words(rng, rng.randrange(2, 20))})
            if rng.random() < 0.15:
                content.insert(0, {"reasoningContent": {"reasoningText": {"text": words(rng, rng.randrange(5, 40))}}})
            for _ in range(rng.choice((1, 1, 2, 3))):
                counter += 1
                tid = f"tooluse_{counter}"
                calls.append(tid)
                content.append({"toolUse": {"toolUseId": tid, "name": rng.choice(TOOLS),
                                            "input": {"path": f"src/{rng.choice(WORDS)}.py", "n": rng.randrange(100)}}})
            messages.append({"role": "assistant", "content": content})
            messages.append({"role": "user", "content": [tool_result(rng, tid, long_share) for tid in calls]})
        messages.append({"role": "assistant", "content": [{"text": words(rng, rng.randrange(3, 60))}]})
        if turn < turns - 1 or rng.random() < 0.7:
            content = [{"text": words(rng, rng.randrange(2, 40))}]
            if rng.random() < 0.1:
                content.append(image(rng))
            messages.append({"role": "user", "content": content})
    if rng.random() < 0.15:  # an assistant tool call still waiting for its result
        counter += 1
        messages.append({"role": "assistant", "content": [{"toolUse": {"toolUseId": f"tooluse_{counter}", "name": "grep", "input": {"q": "x"}}}]})
    return messages


def encode(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """JSON form of Strands messages: image bytes as base64."""

    def block(b: Any) -> Any:
        if isinstance(b, dict):
            return {k: (base64.b64encode(v).decode() if isinstance(v, bytes) else block(v)) for k, v in b.items()}
        if isinstance(b, list):
            return [block(x) for x in b]
        return b

    return [{"role": m["role"], "content": block(m["content"])} for m in messages]


def count(model: FakeModel, messages: list[Any], system: str | None = None, specs: Any = None) -> int:
    return asyncio.run(model.count_tokens(messages, tool_specs=specs, system_prompt=system))


def tool_specs(rng: random.Random) -> list[dict[str, Any]]:
    return [{"name": name, "description": words(rng, rng.randrange(3, 20)),
             "inputSchema": {"json": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
            for name in rng.sample(TOOLS, rng.randrange(0, 4))]


def sliding_case(rng: random.Random, name: str, messages: list[dict[str, Any]], system: str | None, specs: list[Any],
                 params: dict[str, Any], share: float) -> dict[str, Any]:
    """`share`: the model's context_window_limit as a share of the estimate left after apply_management."""
    original = messages
    inputs = encode(messages)
    model = FakeModel(1)
    agent = FakeAgent(list(original), model)
    manager = SlidingWindowConversationManager(**params)
    counts = [count(model, [m]) for m in original]
    # Keep the identity of each content list to tell cut messages apart.
    contents = {id(m): m["content"] for m in original}
    error = None
    rounds = 0
    manager.apply_management(agent)
    limit = max(1, int(count(model, agent.messages, system, specs) * share))
    model.update_config(context_window_limit=limit)
    if manager._compression_threshold is not None:
        tokens = count(model, agent.messages, system, specs)
        manager._on_before_model_call_threshold(BeforeModelCallEvent(agent=agent, projected_input_tokens=tokens))  # type: ignore[arg-type]
    while count(model, agent.messages, system, specs) > limit and rounds < 500:
        before = (len(agent.messages), json.dumps(encode(agent.messages)))
        rounds += 1
        try:
            manager.reduce_context(agent, e=ContextWindowOverflowException("overflow"))
        except ContextWindowOverflowException as exc:
            error = str(exc)
            break
        if (len(agent.messages), json.dumps(encode(agent.messages))) == before:
            error = "no change"
            break
    left = []
    ids = {id(m): i for i, m in enumerate(original)}
    for m in agent.messages:
        position = ids[id(m)]
        entry: dict[str, Any] = {"position": position, "pinned": bool(m.get("metadata", {}).get("custom", {}).get("pinned"))}
        if m["content"] is not contents[id(m)]:
            entry["tool_result_texts"] = [[item.get("text") for item in b["toolResult"]["content"]] for b in m["content"] if "toolResult" in b]
        left.append(entry)
    return {"name": name, "session": name.split("/")[0], "manager": "SlidingWindowConversationManager", "params": params,
            "context_window_limit": limit, "system_prompt": system, "tool_specs": specs, "inputs": inputs, "message_tokens": counts,
            "before_tokens": count(model, original, system, specs), "after_tokens": count(model, agent.messages, system, specs),
            "remaining": left, "error": error, "removed_message_count": manager.removed_message_count}


def summarizing_case(name: str, messages: list[dict[str, Any]], params: dict[str, Any], passes: int) -> dict[str, Any]:
    inputs = encode(messages)
    original = list(messages)
    model = FakeModel(200_000)
    agent = FakeAgent(list(messages), model)
    manager = SummarizingConversationManager(**params)
    error = None
    summarised: list[list[int]] = []
    where = {id(m): i for i, m in enumerate(original)}  # original position; the k-th summary is -k
    for k in range(1, passes + 1):
        try:
            manager.reduce_context(agent, e=ContextWindowOverflowException("overflow"))
        except ContextWindowOverflowException as exc:
            error = str(exc)
            break
        summarised.append([where[id(m)] for m in model.summarised[-1]])
        where[id(manager._summary_message)] = -k
    left = []
    for m in agent.messages:
        entry = {"position": where[id(m)], "pinned": bool(m.get("metadata", {}).get("custom", {}).get("pinned"))}
        if where[id(m)] < 0:
            entry |= {"role": m["role"], "text": [b.get("text") for b in m["content"]]}
        left.append(entry)
    return {"name": name, "session": name.split("/")[0], "manager": "SummarizingConversationManager", "params": params, "passes": passes,
            "inputs": inputs, "summarised": summarised, "remaining": left, "error": error,
            "summary_ratio_used": manager.summary_ratio, "removed_message_count": manager.removed_message_count}


@tool
def lookup(n: int) -> str:
    """Return n words."""
    return " ".join(WORDS[k % len(WORDS)] for k in range(n))


def signature(message: dict[str, Any]) -> str:
    return message["role"] + json.dumps(message["content"], sort_keys=True, default=str)


class ScriptedModel(FakeModel):
    """Answers from a script: a text reply, or a batch of `lookup` tool calls; records what it is sent."""

    def __init__(self, script: list[tuple[str, Any]]) -> None:
        super().__init__(10**9)
        self.script = list(script)
        self.seen: list[list[str]] = []

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any) -> Any:
        self.seen.append([signature(m) for m in messages])
        kind, value = self.script.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if kind == "text":
            yield {"contentBlockDelta": {"delta": {"text": value}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        for k, n in enumerate(value):
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": f"tooluse_{len(self.seen)}_{k}", "name": "lookup"}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"n": n})}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def agent_case(rng: random.Random, name: str, invocations: int, params: dict[str, Any]) -> dict[str, Any]:
    """A real Agent living several invocations: what each model call is sent, by transcript position."""
    script: list[tuple[str, Any]] = []
    prompts = []
    for i in range(invocations):
        prompts.append(f"prompt {i}: {words(rng, rng.randrange(2, 12))}")
        for _ in range(rng.choice((0, 0, 1, 2, 3))):
            script.append(("tool", [rng.choice((4, 20, 90)) for _ in range(rng.choice((1, 1, 2, 3)))]))
        script.append(("text", f"reply {i}: {words(rng, rng.randrange(2, 20))}"))
    model = ScriptedModel(script)
    transcript: list[dict[str, Any]] = []
    agent = Agent(model=model, tools=[lookup], conversation_manager=SlidingWindowConversationManager(**params), callback_handler=None)
    agent.hooks.add_callback(MessageAddedEvent, lambda event: transcript.append(event.message))
    for prompt in prompts:
        agent(prompt)
    position = {signature(m): i for i, m in enumerate(transcript)}
    calls = [[position[s] for s in seen] for seen in model.seen]
    return {"name": name, "session": name, "manager": "Agent+SlidingWindowConversationManager", "params": params,
            "inputs": encode(transcript), "calls": calls}


def key(message: dict[str, Any]) -> str:
    """What tells a transcript message apart whatever Strands cut of it: its role, its tool ids
    (tool calls and results), else its text (each prompt and reply is numbered)."""
    ids = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
    ids += [b["toolResult"]["toolUseId"] for b in message["content"] if "toolResult" in b]
    if ids:
        return message["role"] + ":" + ",".join(ids)
    return message["role"] + ":" + json.dumps([b.get("text") for b in message["content"]])


class OverflowModel(ScriptedModel):
    """A scripted model with a context window: it raises ContextWindowOverflowException, as a
    provider does, when Strands' own count_tokens of the request (messages, tool specs, system
    prompt) exceeds `context_window_limit`. Every attempt is recorded: what it was sent, its count,
    whether it overflowed. A summarisation request (the summarizing manager's) is answered apart."""

    def __init__(self, script: list[tuple[str, Any]], limit: int) -> None:
        super().__init__(script)
        self.config["context_window_limit"] = limit
        self.attempts: list[dict[str, Any]] = []
        self.transcript: list[dict[str, Any]] = []

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any) -> Any:
        last = messages[-1]["content"][0].get("text") if messages and messages[-1]["content"] else None
        if last == "Please summarize this conversation.":
            self.summarised.append(messages[:-1])
            yield {"messageStart": {"role": "assistant"}}
            yield {"contentBlockDelta": {"delta": {"text": f"SUMMARY OF {len(messages) - 1} MESSAGES"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        tokens = await self.count_tokens(messages, tool_specs=tool_specs, system_prompt=system_prompt)
        position = {key(m): i for i, m in enumerate(self.transcript)}
        sent: list[int] = []
        cut: dict[str, Any] = {}
        summaries: list[str] = []
        for m in messages:
            k = key(m)
            if k not in position:  # the summarizing manager's summary message
                summaries.append(m["content"][0]["text"])
                sent.append(-len(summaries))
                continue
            sent.append(position[k])
            if m["content"] != self.transcript[position[k]]["content"]:
                cut[str(position[k])] = [[item.get("text") for item in b["toolResult"]["content"]] for b in m["content"] if "toolResult" in b]
        attempt = {"transcript": len(self.transcript), "sent": sent, "tokens": tokens, "overflow": tokens > self.config["context_window_limit"]}
        if cut:
            attempt["cut"] = cut
        if summaries:
            attempt["summaries"] = summaries
        self.attempts.append(attempt)
        if attempt["overflow"]:
            raise ContextWindowOverflowException("the request is over the model's context window")
        async for event in super().stream(messages, tool_specs, system_prompt, **kwargs):
            yield event


def script_for(rng: random.Random, invocations: int, sizes: tuple[int, ...]) -> tuple[list[str], list[tuple[str, Any]]]:
    script: list[tuple[str, Any]] = []
    prompts = []
    for i in range(invocations):
        prompts.append(f"prompt {i}: {words(rng, rng.randrange(2, 30))}")
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            script.append(("tool", [rng.choice(sizes) for _ in range(rng.choice((1, 1, 2, 3)))]))
        script.append(("text", f"reply {i}: {words(rng, rng.randrange(2, 40))}"))
    return prompts, script


def live(prompts: list[str], script: list[tuple[str, Any]], limit: int, manager: Any, system: str | None) -> tuple[OverflowModel, str | None]:
    """A real Agent living the prompts with `manager`, against a model whose window is `limit`."""
    model = OverflowModel(copy.deepcopy(script), limit)
    agent = Agent(model=model, tools=[lookup], conversation_manager=manager, callback_handler=None, system_prompt=system)
    # A copy: Strands cuts tool results in place, and the transcript keeps what the agent was given.
    agent.hooks.add_callback(MessageAddedEvent, lambda event: model.transcript.append(copy.deepcopy(event.message)))
    for prompt in prompts:
        try:
            agent(prompt)
        except ContextWindowOverflowException as exc:
            return model, str(exc)
    return model, None


def overflow_case(rng: random.Random, name: str, invocations: int, params: dict[str, Any], share: float,
                  summarizing: bool = False) -> dict[str, Any]:
    """A real Agent whose model overflows: each attempt, what it was sent (by transcript position,
    with the text of every tool result Strands cut), and whether it overflowed (Strands then
    reduces the context once and retries; with per_turn the retry is counted as a model call)."""
    prompts, script = script_for(rng, invocations, (4, 30, 90, 150))
    system = None if rng.random() < 0.4 else words(rng, rng.randrange(5, 60))
    make = SummarizingConversationManager if summarizing else SlidingWindowConversationManager
    free, _ = live(prompts, script, 10**9, make(**params), system)
    limit = max(1, int(max(a["tokens"] for a in free.attempts) * share))
    model, error = live(prompts, script, limit, make(**params), system)
    specs = [dict(s) for s in Agent(model=FakeModel(1), tools=[lookup], callback_handler=None).tool_registry.get_all_tool_specs()]
    return {"name": name, "session": name, "manager": f"Agent+{make.__name__}+overflow", "params": params,
            "context_window_limit": limit, "system_prompt": system, "tool_specs": specs, "inputs": encode(model.transcript),
            "attempts": model.attempts, "error": error}


def main() -> None:
    rng = random.Random(20261123)
    cases: list[dict[str, Any]] = []
    shapes = [  # (turns, tool_heavy, long_share)
        (3, 0.0, 0.0), (6, 0.3, 0.5), (8, 0.5, 0.4), (9, 0.6, 0.6), (10, 0.4, 0.3), (5, 0.85, 0.5), (12, 0.2, 0.0),
        (7, 0.7, 0.7), (4, 0.9, 0.6),
    ]
    sessions = []
    for k, (turns, heavy, long_share) in enumerate(shapes):
        for variant in range(2):
            sessions.append((f"s{k}v{variant}", conversation(rng, turns, heavy, long_share)))
    sliding_params = [
        {}, {"window_size": 5}, {"window_size": 8}, {"window_size": 3, "pin_first": 1}, {"window_size": 0},
        {"window_size": 0, "pin_first": 2}, {"window_size": 10, "should_truncate_results": False},
        {"window_size": 6, "pin_first": 3}, {"window_size": 12, "proactive_compression": True},
        {"window_size": 40, "proactive_compression": {"compression_threshold": 0.4}},
    ]
    for k, (name, messages) in enumerate(sessions):
        system = None if k % 3 == 0 else words(rng, rng.randrange(5, 200))
        specs = tool_specs(rng) if k % 2 else []
        for j, params in enumerate(sliding_params):
            if (k + j) % 3:  # a varied third of the grid
                continue
            for share in ((2.0, 0.8, 0.4) if j % 2 == 0 else (0.9, 0.55)):
                cases.append(sliding_case(rng, f"{name}/sliding{j}/x{share}", copy.deepcopy(messages), system, specs, params, share))
    summarizing_params = [
        ({}, 1), ({"summary_ratio": 0.5, "preserve_recent_messages": 4}, 1), ({"summary_ratio": 0.05}, 1),
        ({"summary_ratio": 0.95, "preserve_recent_messages": 2}, 1), ({"preserve_recent_messages": 3, "pin_first": 2}, 1),
        ({"summary_ratio": 0.3, "preserve_recent_messages": 4}, 2), ({"summary_ratio": 0.6, "preserve_recent_messages": 2, "pin_first": 1}, 3),
        ({"preserve_recent_messages": 40}, 1),
    ]
    for k, (name, messages) in enumerate(sessions):
        for j, (params, passes) in enumerate(summarizing_params):
            if (k + j) % 2:
                continue
            cases.append(summarizing_case(f"{name}/summarizing{j}", copy.deepcopy(messages), params, passes))
    agent_params = [{"window_size": 3}, {"window_size": 5}, {"window_size": 4, "per_turn": True}, {"window_size": 6, "per_turn": 2},
                    {"window_size": 5, "per_turn": 3, "pin_first": 1}, {"window_size": 2}, {"window_size": 8, "pin_first": 2}]
    for k in range(14):
        cases.append(agent_case(rng, f"agent{k}", rng.randrange(3, 8), agent_params[k % len(agent_params)]))
    # Agents whose model overflows (issue 20): what Strands did at one call stays done at the next.
    rng = random.Random(20261126)
    overflow_params = [{"window_size": 40}, {"window_size": 10}, {"window_size": 6}, {"window_size": 40, "per_turn": True},
                       {"window_size": 8, "per_turn": 2}, {"window_size": 12, "per_turn": 3, "pin_first": 1},
                       {"window_size": 40, "should_truncate_results": False}, {"window_size": 7, "pin_first": 2, "per_turn": True}]
    for k in range(32):
        params = overflow_params[k % len(overflow_params)]
        cases.append(overflow_case(rng, f"overflow{k}", rng.randrange(3, 9), params, (0.35, 0.5, 0.7, 0.9)[k // len(overflow_params)]))
    # Each session's messages are stored once; a case names its session.
    stored: dict[str, Any] = {}
    for case in cases:
        inputs = case.pop("inputs")
        stored.setdefault(case["session"], inputs)
        assert stored[case["session"]] == inputs
    doc = {"framework": "strands-agents", "version": version("strands-agents"), "generator": "tests/golden/strands/generate.py",
           "sessions": stored, "cases": cases}
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases, {OUT.stat().st_size:,} bytes -> {OUT}")


if __name__ == "__main__":
    main()
