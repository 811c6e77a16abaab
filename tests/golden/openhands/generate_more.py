"""More golden cases for ctxviz's OpenHands policy (issue 21): views that have already left events
out, where the SDK puts its summary earlier than the forgotten span began.

Run by hand in generate.py's scratch venv (never by the tests):

    python3.12 -m venv /tmp/venv-openhands && /tmp/venv-openhands/bin/pip install openhands-sdk==1.58.0
    LITELLM_LOCAL_MODEL_COST_MAP=True /tmp/venv-openhands/bin/python tests/golden/openhands/generate_more.py

Why the SDK does that: `condense(view)` computes `summary_offset` as a position in the view *after*
`View.enforce_properties` has left events out (a second observation of one tool call, a call
without its observation, the rest of a thinking tool loop), but `View.from_events` applies the
Condensation to the log's events *before* that enforcement. Every event the view left out ahead
of the forgotten span moves the summary one place earlier, sometimes into the protected head,
where a later condensation keeps it.

The conversations come from generate.py's builder plus the two shapes it lacks: an observation
written twice for one call (crash recovery: an AgentErrorEvent, then the real observation) and a
thinking tool loop left without one observation. The late observation comes after the agent's
answer, inside what becomes the protected head. Rolling cases as in generate.py (the log re-read
by `View.from_events` before every `condense`, each Condensation appended), recording for every
condensation the view the agent sends next (`view_after`: each summary named `summary<k>` after the
k-th condensation), and the final view.
"""

from __future__ import annotations

import json
import random
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any
from unittest import mock

from openhands.sdk.context.view import View
from openhands.sdk.event import Condensation
from openhands.sdk.llm import LLM

sys.path.insert(0, str(Path(__file__).parent))
from generate import TOOLS, condenser, fake_generate, steps, to_events, words  # noqa: E402

OUT = Path(__file__).with_name("cases_more.json")


def conversation(rng: random.Random, turns: int, tool_share: float, thinking_share: float, duplicate: float, broken_loop: float) -> list[dict[str, Any]]:
    """generate.py's plain messages, with duplicate observations and thinking loops left broken."""
    out: list[dict[str, Any]] = []
    if rng.random() < 0.85:
        out.append({"role": "system", "text": words(rng, 12)})
    counter = 0
    late: list[dict[str, Any]] = []
    for turn in range(turns):
        out.append({"role": "user", "text": words(rng, rng.randrange(2, 12))})
        # The first turn works with tools, and its late observations land in the protected head.
        first = turn == 0 and duplicate > 0
        while first or rng.random() < tool_share:
            calls = []
            for _ in range(rng.choice((1, 1, 1, 2, 3))):
                counter += 1
                calls.append({"id": f"call_{counter}", "name": rng.choice(TOOLS), "arguments": json.dumps({"command": words(rng, 3)})})
            forced, first = first, False
            thinking = rng.random() < thinking_share and not forced
            out.append({"role": "assistant", "text": words(rng, 4) if rng.random() < 0.5 else "", "tool_calls": calls, "thinking": thinking})
            results = [c["id"] for c in calls]
            if thinking and rng.random() < broken_loop:
                results = results[:-1]  # the loop loses an observation: the View drops all of it
            for cid in results:
                out.append({"role": "tool", "text": words(rng, rng.randrange(3, 30)), "tool_call_id": cid})
            if results and (forced or rng.random() < duplicate):
                late.append({"role": "tool", "text": "late " + words(rng, 4), "tool_call_id": rng.choice(results)})
        out.append({"role": "assistant", "text": words(rng, rng.randrange(3, 15))})
        out += late  # the real observation arrives after the agent answered
        late = []
    return out


def rolling_case(name: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    cond = condenser(params)
    all_events, names = to_events(messages)
    by_name = {names[e.id]: e for e in all_events}
    log: list[Any] = [by_name["system"]] if "system" in by_name else []
    condensations = []
    summary_names: dict[str, str] = {}

    def name_of(event: Any) -> str:
        return names.get(event.id) or summary_names[event.id]

    for i, m in enumerate(messages):
        log += [by_name[n] for n in ([str(i)] if not m.get("tool_calls") else [f"{i}#{k}" for k in range(len(m["tool_calls"]))]) if n in by_name]
        if not steps(messages, i):
            continue
        view = View.from_events(log)
        result = cond.condense(view)
        if isinstance(result, Condensation):
            summary_names[f"{result.id}-summary"] = f"summary{len(condensations) + 1}"
            log.append(result)
            condensations.append({"after": i, "forgotten": [name_of(e) for e in view.events if e.id in result.forgotten_event_ids],
                                  "summary_offset": result.summary_offset, "view_size": len(view),
                                  "view_after": [name_of(e) for e in View.from_events(log).events]})
    final = View.from_events(log)
    return {"name": name, "kind": "rolling", "params": params, "condensations": condensations,
            "final_view": [name_of(e) for e in final.events]}


def main() -> None:
    rng = random.Random(20260523)
    shapes = [(10, 0.6, 0.0, 0.5, 0.0), (12, 0.7, 0.5, 0.2, 0.5), (9, 0.75, 0.8, 0.0, 0.6), (14, 0.55, 0.3, 0.35, 0.3),
              (8, 0.8, 0.6, 0.4, 0.4), (16, 0.5, 0.2, 0.3, 0.5)]
    param_sets = [{"max_size": 10, "keep_first": 2}, {"max_size": 16, "keep_first": 4}, {"max_size": 24, "keep_first": 0},
                  {"max_size": 12, "keep_first": 3, "minimum_progress": 0.3}, {"max_size": 20, "keep_first": 6}]
    conversations: dict[str, Any] = {}
    cases: list[dict[str, Any]] = []
    with mock.patch.object(LLM, "generate", fake_generate):
        for k, shape in enumerate(shapes):
            for variant in range(3):
                name = f"d{k}v{variant}"
                conversations[name] = conversation(rng, *shape)
                for j, params in enumerate(param_sets):
                    cases.append(rolling_case(f"{name}/rolling{j}", conversations[name], params))
    doc = {"framework": "openhands-sdk", "version": version("openhands-sdk"), "generator": "tests/golden/openhands/generate_more.py",
           "conversations": conversations, "cases": cases}
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")
    moved = sum(1 for c in cases for k, s in enumerate(c["condensations"], start=1)
                if f"summary{k}" in s["view_after"] and s["view_after"].index(f"summary{k}") < s["summary_offset"])
    print(f"{len(cases)} cases, {sum(len(c['condensations']) for c in cases)} condensations ({moved} summaries placed early), "
          f"{OUT.stat().st_size:,} bytes -> {OUT}")


if __name__ == "__main__":
    main()
