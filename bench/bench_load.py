"""Loading each supported JSONL format's 100 MB file against `json.loads` of its records, in fresh
processes (time and peak memory), and the memory a loaded message costs beyond its text.

    python bench/bench_load.py [--megabytes 100] [--rounds 3]

Files are generated: plain chat (one message per line), chat with tool calls (assistant calls, long
tool outputs, multi-part user content), and Claude Code and Codex logs made by repeating the sample
sessions (sample_sessions/*.jsonl) with fresh ids and one linear chain.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))

from common import ROOT, Row, child, interleaved, spread, within  # noqa: E402

WORDS = ("context window budget tail evict summary tool result assistant user token policy plan "
         "def return import class self value error trace json yaml kubectl deploy pod").split()


def _prose(rng: random.Random, k: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(k))


def _output(rng: random.Random, lines: int) -> str:
    """A tool's output: file listings, code and log lines."""
    out = []
    for i in range(lines):
        kind = rng.random()
        if kind < 0.4:
            out.append(f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{i}.py:{rng.randint(1, 900)}: {_prose(rng, 8)}")
        elif kind < 0.8:
            out.append(f"    {rng.choice(WORDS)} = {rng.choice(WORDS)}({rng.randint(0, 99)}, \"{rng.choice(WORDS)}\")  # {_prose(rng, 4)}")
        else:
            out.append(f"2026-11-23T10:{i % 60:02d}:00Z INFO {_prose(rng, 10)}")
    return "\n".join(out)


def write_chat(path: str, megabytes: float) -> None:
    rng = random.Random(7)
    texts = [_prose(rng, rng.choice((5, 20, 80, 300, 1200))) for _ in range(500)]
    size, i = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while size < megabytes * 1e6:
            line = json.dumps({"role": ("user", "assistant")[i % 2], "content": texts[i % len(texts)]}) + "\n"
            f.write(line)
            size += len(line)
            i += 1


def write_chat_tools(path: str, megabytes: float) -> None:
    rng = random.Random(11)
    outputs = [_output(rng, rng.choice((3, 20, 60, 200))) for _ in range(300)]
    size, i = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"role": "system", "content": "You are a coding agent. " + _prose(rng, 200)}) + "\n")
        while size < megabytes * 1e6:
            lines = [{"role": "user", "content": [{"type": "text", "text": _prose(rng, 40)},
                                                  {"type": "text", "text": "```\n" + outputs[i % 300][:600] + "\n```"}]}]
            for _ in range(rng.randint(1, 4)):
                i += 1
                call = f"call_{i:08d}"
                lines.append({"role": "assistant", "content": _prose(rng, 25) if rng.random() < 0.5 else None,
                              "tool_calls": [{"id": call, "type": "function", "function": {"name": rng.choice(("shell", "read_file", "grep")),
                                                                                            "arguments": json.dumps({"cmd": _prose(rng, 6)})}}]})
                lines.append({"role": "tool", "tool_call_id": call, "content": outputs[i % 300]})
            lines.append({"role": "assistant", "content": _prose(rng, 120)})
            for record in lines:
                line = json.dumps(record) + "\n"
                f.write(line)
                size += len(line)


_UUID = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def write_claude_code(path: str, megabytes: float) -> None:
    """The sample Claude Code session's user and assistant lines, repeated with fresh uuids and tool ids,
    chained linearly (each line's parentUuid is the previous line's uuid)."""
    records = []
    with open(os.path.join(ROOT, "sample_sessions", "claude_code_compaction.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") in ("user", "assistant") and not r.get("isCompactSummary"):
                records.append(json.dumps(r))
    size, k, parent = 0, 0, None
    with open(path, "w", encoding="utf-8") as f:
        while size < megabytes * 1e6:
            for text in records:
                text = _UUID.sub(lambda m, k=k: f"{k:08x}{m.group(1)}", text).replace("toolu_01", f"toolu_{k:06d}")
                r = json.loads(text)
                r["parentUuid"] = parent
                parent = r["uuid"]
                line = json.dumps(r) + "\n"
                f.write(line)
                size += len(line)
            k += 1


_CALL = re.compile(r'"call_(?!id")')


def write_codex(path: str, megabytes: float) -> None:
    """The sample Codex rollout, its session_meta once, then its other lines repeated with fresh call ids
    (its one compaction kept only in the first copy)."""
    with open(os.path.join(ROOT, "sample_sessions", "codex_rollout.jsonl"), encoding="utf-8") as f:
        lines = f.readlines()
    head, body = lines[0], lines[1:]
    later = [line for line in body if '"compacted"' not in line and '"context_compacted"' not in line]
    size, k = len(head), 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(head)
        while size < megabytes * 1e6:
            for line in (body if k == 0 else later):
                line = _CALL.sub(f'"call_{k:06d}', line)
                f.write(line)
                size += len(line)
            k += 1


FORMATS = {"chat": ("plain chat", write_chat), "chat_tools": ("chat with tool calls", write_chat_tools),
           "claude_code": ("Claude Code", write_claude_code), "codex": ("Codex", write_codex)}

_LOAD_CHILD = r"""
import json, resource, sys, time
path, mode = sys.argv[1], sys.argv[2]
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
if mode == "ctxviz":
    from ctxviz.io.loaders import load_session  # imported before the clock: loading is timed, not imports
before = rss()
t = time.perf_counter()
if mode == "json":  # the strictest baseline: the collector off, as ctxviz loads with it off
    import gc
    gc.disable()
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    n = len(records)
else:
    n = len(load_session(path).messages)
elapsed = time.perf_counter() - t
# VmHWM, this process' own high-water mark: ru_maxrss survives exec and can be the parent's.
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print(json.dumps({"seconds": elapsed, "n": n, "peak": peak, "grew": peak - before}))
"""

_MEMORY_CHILD = r"""
import gc, json, sys, tracemalloc
from ctxviz.io.loaders import load_session
from ctxviz.engine.session import ToolCallPart
tracemalloc.start()
session = load_session(sys.argv[1])
gc.collect()
total = tracemalloc.get_traced_memory()[0]
tracemalloc.stop()
seen, text = set(), 0
for m in session.messages:
    for p in m.parts:
        for s in ((p.name, p.arguments) if isinstance(p, ToolCallPart) else (getattr(p, "text", ""),)):
            if id(s) not in seen:
                seen.add(id(s))
                text += sys.getsizeof(s)
print(json.dumps({"n": len(session.messages), "total": total, "text": text}))
"""


def run(megabytes: float = 100, rounds: int = 3, memory_megabytes: float = 10) -> list[Row]:
    rows: list[Row] = []
    env = {**os.environ, "PYTHONPATH": ROOT}
    with tempfile.TemporaryDirectory(prefix="ctxviz-bench-") as folder:
        for key, (title, write) in FORMATS.items():
            path = os.path.join(folder, f"{key}.jsonl")
            write(path, megabytes)
            size = os.path.getsize(path)
            results: dict[str, list[dict]] = {"json": [], "ctxviz": []}

            def measure(mode: str, path: str = path, results: dict = results) -> float:
                out = child(_LOAD_CHILD, path, mode, env=env)
                results[mode].append(out)
                return out["seconds"]

            _, _, time_ratios = interleaved(lambda: measure("json"), lambda: measure("ctxviz"), rounds)
            mem_ratios = [c["grew"] / j["grew"] for j, c in zip(results["json"], results["ctxviz"], strict=True)]
            j, c = results["json"], results["ctxviz"]
            print(f"load {title}: {size / 1e6:.0f} MB, {c[0]['n']:,} messages from {j[0]['n']:,} records; "
                  f"json.loads {spread([r['seconds'] for r in j])} s (grew {spread([r['grew'] for r in j], 1e-6, '{:.0f}')} MB), "
                  f"ctxviz {spread([r['seconds'] for r in c])} s (grew {spread([r['grew'] for r in c], 1e-6, '{:.0f}')} MB); "
                  f"time {spread(time_ratios)}x, memory {spread(mem_ratios)}x", flush=True)
            rows.append(Row(f"load {size / 1e6:.0f} MB {title}: time vs json.loads", time_ratios, "<= 2x", within(2, time_ratios)))
            rows.append(Row(f"load {size / 1e6:.0f} MB {title}: peak memory vs json.loads", mem_ratios, "<= 2x", within(2, mem_ratios)))
        # Bytes per message beyond the text, on a smaller file of each kind with tool calls (tracemalloc is slow).
        for key in ("chat_tools", "claude_code"):
            path = os.path.join(folder, f"{key}-small.jsonl")
            FORMATS[key][1](path, memory_megabytes)
            per = []
            for _ in range(rounds):
                out = child(_MEMORY_CHILD, path, env=env)
                per.append((out["total"] - out["text"]) / out["n"] / 1024)
            print(f"memory {FORMATS[key][0]}: {out['n']:,} messages, {out['total'] / 1e6:.0f} MB traced, text {out['text'] / 1e6:.0f} MB "
                  f"-> {spread(per)} KB per message beyond the text", flush=True)
            rows.append(Row(f"memory per {FORMATS[key][0]} message beyond its text", per, "<= 1.5 KB", within(1.5, per), unit="KB"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for row in run(args.megabytes, args.rounds):
        print(row.name, row.measured(), row.goal, "met" if row.met else "NOT met")


if __name__ == "__main__":
    main()
