"""SWE-agent and mini-swe-agent trajectories (`<instance>.traj`, `<instance>.traj.json`).

Read from what the producers write (SWE-agent/SWE-agent `sweagent/agent/agents.py`,
`sweagent/types.py`; SWE-agent/mini-swe-agent `agents/default.py`, `docs/usage/output_files.md`):

- SWE-agent: `{trajectory, history, info, replay_config, environment}`. `history` is the whole
  conversation in OpenAI form with SWE-agent's own keys: `message_type` (`system_prompt`,
  `demonstration`, `observation`, `action`, `thought`, `assistant`, `user`), `agent`, `is_demo`,
  `thought`, `action`, `tool_calls` (OpenAI form) and, on a `tool` message, `tool_call_ids`.
  Demonstrations (`is_demo`) are reference material: category `context`. A retry agent's file adds
  `attempts` and puts the chosen attempt at the top level. When a file has no `history`, the
  conversation is rebuilt from the `trajectory` steps (the first step's `query`, then each step's
  `response` and `observation`), and a note says so.
- mini-swe-agent: `{info, messages, trajectory_format}` (v1: plain `{role, content}`; v2: the
  model's own message plus `extra`, with `tool_calls` and `tool` results for tool-calling models),
  or, from older versions, a bare message list. The final `exit` message is not a message to the
  model and is skipped. `extra.response.usage` (litellm's usage: `prompt_tokens` includes the
  cache reads and writes) is the call's reported usage: input = prompt - cached - cache writes.

`info.model_stats` holds totals over the whole run (`tokens_sent` adds up every call's input), not
any one call's window, so it is reported in a note, not as a message's usage.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ..engine.session import Category, Message, OpaquePart, Part, Session, TextPart, ThinkingPart, Usage
from ..engine.voices import voices_from
from ..engine.wording import noun
from .base import Fields, make_message, type_name
from .native import tool_calls
from .parts import openai_part
from .source import SourceFile

ROLE_ALIASES = {"developer": "system"}
#: Part types `openai_part` reads; anything else in a content list is kept as an OpaquePart.
KNOWN_PART_TYPES = frozenset(("text", "input_text", "output_text", "refusal", "image_url", "input_image", "input_audio", "file", "image"))
TRAJ_SUFFIXES = (".traj", ".traj.json")
STEP_KEYS = ("action", "observation", "response", "thought")


def _is_history(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict) and "role" in value[0]


def _is_trajectory(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict) and any(k in value[0] for k in STEP_KEYS)


def _mini_message_list(value: Any) -> bool:
    """A bare message list that only mini-swe-agent writes: an `exit` role or `extra` fields."""
    return isinstance(value, list) and any(isinstance(m, dict) and (m.get("role") == "exit" or isinstance(m.get("extra"), dict)) for m in value)


class SweAgentLoader:
    name = "swe-agent"
    title = "SWE-agent / mini-swe-agent trajectory (JSON)"
    top_level_fields = frozenset(("history", "trajectory", "info", "messages", "trajectory_format", "replay_config", "attempts"))

    def sniff(self, src: SourceFile) -> bool:
        if src.kind != "json":
            return False
        doc = src.document
        if isinstance(doc, list):
            looks = bool(doc) and isinstance(doc[0], dict) and "role" in doc[0]
            return looks and (src.path.lower().endswith(TRAJ_SUFFIXES) or _mini_message_list(doc))
        if not isinstance(doc, dict):
            return False
        if _is_history(doc.get("history")) or _is_trajectory(doc.get("trajectory")):
            return True
        if isinstance(doc.get("attempts"), list) and doc["attempts"] and isinstance(doc["attempts"][0], dict) and "history" in doc["attempts"][0]:
            return True
        if isinstance(doc.get("messages"), list):
            fmt = doc.get("trajectory_format")
            info = doc.get("info")
            return (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
                isinstance(info, dict) and ("mini_version" in info or "model_stats" in info))
        return False

    def load(self, src: SourceFile) -> Session:
        doc = src.document
        if isinstance(doc, list):
            return self._session(src, [((i,), m) for i, m in enumerate(doc)], {}, "")
        top = Fields(src, doc)
        info = top.dict("info")
        base: tuple[Any, ...] = ()
        if top.get("history") is None and top.get("messages") is None and top.get("trajectory") is None and top.list("attempts"):
            attempts = top.list("attempts")
            pick = len(attempts) - 1
            src.notes.append(f"{len(attempts)} attempts and no chosen one at the top level: reading the last (attempts[{pick}])")
            top = top.child("attempts", attempts).child(pick, attempts[pick])
            base = ("attempts", pick)
            info = top.dict("info") or info
        elif top.list("attempts"):
            chosen = info.get("best_attempt_idx")
            src.notes.append(f"{len(top.list('attempts'))} attempts in the file; reading the chosen one at the top level"
                             + (f" (best_attempt_idx {chosen})" if isinstance(chosen, int) else ""))
        version = ""
        for key in ("swe_agent_version", "mini_version"):
            if isinstance(info.get(key), str):
                version = info[key]
        if not version and isinstance(top.get("trajectory_format"), str):
            version = top.get("trajectory_format")
        self._stats_note(src, info)
        if top.get("history") is not None:
            items = top.list("history")
            entries = [(base + ("history", i), m) for i, m in enumerate(items)]
        elif top.get("messages") is not None:
            items = top.list("messages")
            entries = [(base + ("messages", i), m) for i, m in enumerate(items)]
        else:
            return self._from_trajectory(src, top, base, info, version)
        return self._session(src, entries, info, version, replay_config=top.get("replay_config"))

    @staticmethod
    def _stats_note(src: SourceFile, info: dict[str, Any]) -> None:
        stats = info.get("model_stats")
        if not isinstance(stats, dict):
            return
        bits = []
        # Statistics are a note, never a reason to refuse the file: NaN, 1e999 (infinity) or a
        # negative figure is skipped, as a figure the run did not record.
        if (calls := _figure(stats.get("api_calls"))) is not None:
            bits.append(f"{int(calls):,} API {noun(int(calls), 'call')}")
        if (sent := _figure(stats.get("tokens_sent"))) is not None:
            bits.append(f"{int(sent):,} tokens sent")
        if (received := _figure(stats.get("tokens_received"))) is not None:
            bits.append(f"{int(received):,} received")
        if (cost := _figure(stats.get("instance_cost", stats.get("total_cost")))) is not None:
            bits.append(f"cost ${cost:,.2f}")
        if bits:
            src.notes.append(f"info.model_stats: {', '.join(bits)} (totals over the run, not one call's window, so no message carries them)")

    def _session(self, src: SourceFile, entries: list[tuple[tuple[Any, ...], Any]], info: dict[str, Any], version: str,
                 replay_config: Any = None) -> Session:
        messages: list[Message] = []
        agents: dict[str, int] = {}
        model = _model_name(info, replay_config)
        for path, record in entries:
            f = Fields(src, record, path)
            if f.get("role") == "exit":
                extra = f.dict("extra")
                status = extra.get("exit_status") or f.str("content")
                src.notes.append(f"skipped the final `exit` message (exit status: {status})" if status else "skipped the final `exit` message")
                continue
            role = f.role(aliases=ROLE_ALIASES)
            parts = content(f) + tool_calls(f)
            if role == "assistant":
                parts = _thinking(f) + parts
            tool_call_id = f.str("tool_call_id")
            ids = f.list("tool_call_ids")
            if not tool_call_id and ids:
                if not isinstance(ids[0], str):
                    raise f.child("tool_call_ids", ids).error(f"expected a string, got {type_name(ids[0])}", 0)
                tool_call_id = ids[0]
                if len(ids) > 1:
                    src.tally("{n} observation(s) {answers|answer} several tool calls (`tool_call_ids`); each is read as answering its first")
            agent = f.str("agent")
            if agent:
                agents[agent] = agents.get(agent, 0) + 1
            category = Category.CONTEXT if f.bool("is_demo") or f.str("message_type") == "demonstration" else None
            extra = f.dict("extra")
            usage = litellm_usage(f.child("extra", extra)) if extra else None
            timestamp = extra.get("timestamp")
            messages.append(make_message(len(messages), role, parts, tool_call_id=tool_call_id, category=category, usage=usage,
                                         timestamp=str(timestamp) if isinstance(timestamp, (str, int, float)) else "", raw=record))
        if len(agents) > 1:
            src.notes.append("the history holds several agents' messages (" + ", ".join(f"{k}: {v:,}" for k, v in agents.items())
                             + "), read in file order")
        messages = _observations_as_output(messages)
        demos = sum(m.category is Category.CONTEXT for m in messages)
        if demos:
            src.notes.append(f"{demos:,} demonstration {noun(demos, 'message')} read as `context` (reference material, not the task's own turns)")
        return Session(messages=tuple(messages), source=src.path, format=self.name, model=model, format_version=version)

    def _from_trajectory(self, src: SourceFile, top: Fields, base: tuple[Any, ...], info: dict[str, Any], version: str) -> Session:
        steps = top.list("trajectory", required=True)
        entries: list[tuple[tuple[Any, ...], Any]] = []
        if steps:
            first = top.child("trajectory", steps).child(0, steps[0])
            query = first.list("query")
            entries += [(base + ("trajectory", 0, "query", i), m) for i, m in enumerate(query) if isinstance(m, dict) and m]
        messages: list[tuple[tuple[Any, ...], Any]] = list(entries)
        for i, step in enumerate(steps):
            s = top.child("trajectory", steps).child(i, step)
            response = s.str("response") or "\n".join(x for x in (s.str("thought"), s.str("action")) if x)
            messages.append((base + ("trajectory", i, "response"), {"role": "assistant", "content": response}))
            messages.append((base + ("trajectory", i, "observation"), {"role": "user", "content": s.str("observation")}))
        src.notes.append(f"no `history` in the file: rebuilt from {len(steps):,} `trajectory` {noun(len(steps), 'step')} (each step's response and "
                         "observation" + (", after the first step's query)" if entries else "; the system prompt and the task are not in the file)"))
        return self._session(src, messages, info, version, replay_config=top.get("replay_config"))


def _observations_as_output(messages: list[Message]) -> list[Message]:
    """The agent's command output, which SWE-agent sends as user turns (every user turn after the
    task: engine/voices.py), in the tool output category: read as dialog, a trajectory made mostly of
    command output showed no tool output at all in the category charts and budgets."""
    voices = voices_from(messages, swe=True)
    return [dataclasses.replace(m, category=Category.SYSTEM_OUTPUT)
            if v == "observation" and m.role == "user" and m.category is Category.DIALOG else m for m, v in zip(messages, voices, strict=True)]


def _model_name(info: dict[str, Any], replay_config: Any) -> str:
    config = info.get("config")
    if isinstance(config, dict) and isinstance(config.get("model"), dict):
        name = config["model"].get("model_name")
        if isinstance(name, str):
            return name
    if isinstance(replay_config, str):
        try:
            replay_config = json.loads(replay_config)
        except ValueError:
            return ""
    if isinstance(replay_config, dict):
        agent = replay_config.get("agent")
        model = agent.get("model") if isinstance(agent, dict) else None
        if isinstance(model, dict) and isinstance(model.get("name"), str):
            return model["name"]
    return ""


def content(f: Fields) -> list[Part]:
    """A message's content: a string or OpenAI-style parts (SWE-agent adds `cache_control`)."""
    value = f.get("content")
    if value is None:
        return []
    if isinstance(value, str):
        return [TextPart(value)] if value else []
    if not isinstance(value, list):
        raise f.error(f"expected a string or a list of parts, got {type_name(value)}", "content")
    parts: list[Part] = []
    for i, item in enumerate(value):
        p = f.child("content", value).child(i, item)
        kind = p.str("type", required=True)
        if kind in KNOWN_PART_TYPES:
            parts.append(openai_part(p))
        else:
            text = p.get("text")
            parts.append(OpaquePart(kind, text if isinstance(text, str) else json.dumps(item, ensure_ascii=False)))
    return parts


def _thinking(f: Fields) -> list[Part]:
    """`thinking_blocks` (SWE-agent, litellm) or `reasoning_content` (litellm) on an assistant message."""
    out: list[Part] = []
    blocks = f.list("thinking_blocks")
    for block in blocks:
        if isinstance(block, dict) and isinstance(block.get("thinking"), str) and block["thinking"]:
            out.append(ThinkingPart(block["thinking"]))
    reasoning = f.get("reasoning_content")
    if not out and isinstance(reasoning, str) and reasoning:
        out.append(ThinkingPart(reasoning))
    return out


def litellm_usage(extra: Fields) -> Usage | None:
    """`extra.response.usage` as litellm writes it: `prompt_tokens` is the whole prompt, cache reads
    (`prompt_tokens_details.cached_tokens` or `cache_read_input_tokens`) and writes
    (`cache_creation_input_tokens`) included."""
    response = extra.get("response")
    if not isinstance(response, dict) or not isinstance(response.get("usage"), dict):
        return None
    u = extra.child("response", response).child("usage", response["usage"])
    prompt = u.int("prompt_tokens")
    details = u.dict("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details.get("cached_tokens"), int) else 0
    cached = cached or u.int("cache_read_input_tokens")
    created = u.int("cache_creation_input_tokens")
    return Usage(input_tokens=max(prompt - cached - created, 0), output_tokens=u.int("completion_tokens"),
                 cache_read_input_tokens=cached, cache_creation_input_tokens=created)


def _figure(value: Any) -> float | None:
    """A run statistic that is a finite number of 0 or more, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
