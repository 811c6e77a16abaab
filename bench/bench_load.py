"""Loading each supported JSONL format's 100 MB file against `json.loads` of its records, in fresh
processes (time and peak memory), and the memory a loaded message costs beyond its text.

    python bench/bench_load.py [--megabytes 100] [--rounds 3]

Files are generated: plain chat (one message per line), chat with tool calls (assistant calls, long
tool outputs, multi-part user content), Claude Code and Codex logs made by repeating the sample
sessions (sample_sessions/*.jsonl) with fresh ids and one linear chain, and, at the size of a real log
(8 MB; `--real-megabytes`), Claude Code, Codex and Gemini CLI logs made by repeating the real logs in
tests/data/real/ whole, every line kept (progress, snapshots, sub-agent lines, rewinds, compactions,
attachments), with fresh ids, each copy continuing the conversation of the one before.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
from collections.abc import Callable

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


#: Real Claude Code logs (tests/data/real/claude_code/SOURCES.md) a real-log-shaped file repeats: Claude Code
#: 2.1.39 with its progress lines, 2.1.x with attachments, rewinds and compactions (one keeping a segment),
#: and 1.0.x with sub-agent lines inline.
REAL_CLAUDE_CODE = ("spotter-4d5611e5.jsonl", "claude-code-viewer-fe5e1c67.jsonl", "tugtool-rewind-branch.jsonl", "tugtool-compact-native.jsonl")


def _real_lines(folder: str, name: str) -> list[str]:
    with open(os.path.join(ROOT, "tests", "data", "real", folder, name), encoding="utf-8") as f:
        return [line if line.endswith("\n") else line + "\n" for line in f if line.strip()]


def _fill(path: str, megabytes: float, copy: Callable[[int], list[str]]) -> None:
    """Write copies 0, 1, 2... (`copy(k)` gives copy k's lines) until the file has `megabytes`."""
    size, k = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while size < megabytes * 1e6:
            for line in copy(k):
                f.write(line)
                size += len(line.encode("utf-8"))
            k += 1


def write_real_claude_code(path: str, megabytes: float) -> None:
    """REAL_CLAUDE_CODE one after the other, again and again, with fresh uuids, tool and message ids per
    copy; each copy's first root line hangs from the last conversation line before it (as a resumed
    session's does), so the whole file is one conversation, as long as the file."""
    sources = [_real_lines("claude_code", name) for name in REAL_CLAUDE_CODE]
    tail: list[str | None] = [None]

    def copy(k: int) -> list[str]:
        out = []
        for lines in sources:
            first = True
            for text in lines:
                text = _UUID.sub(lambda m: f"{k:08x}{m.group(1)}", text).replace('"toolu_', f'"toolu_{k:06d}').replace('"msg_', f'"msg_{k:06d}')
                r = json.loads(text)
                if first and r.get("parentUuid", 0) is None and not r.get("isSidechain"):
                    r["parentUuid"], first = tail[0], False
                    text = json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                if r.get("uuid") and r.get("type") in ("user", "assistant", "attachment", "system") and not r.get("isSidechain"):
                    tail[0] = r["uuid"]
                out.append(text)
        return out

    _fill(path, megabytes, copy)


#: Real Codex rollouts (tests/data/real/codex/SOURCES.md): a long one with a compaction, and one of codemie's.
REAL_CODEX = ("localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
              "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl")


def write_real_codex(path: str, megabytes: float) -> None:
    """REAL_CODEX again and again with fresh call ids; only the very first `session_meta` line is kept
    (a rollout has one)."""
    sources = [_real_lines("codex", name) for name in REAL_CODEX]

    def copy(k: int) -> list[str]:
        return [_CALL.sub(f'"call_{k:06d}', line) for n, lines in enumerate(sources) for line in lines
                if (k == 0 and n == 0) or '"type":"session_meta"' not in line]

    _fill(path, megabytes, copy)


def write_real_gemini_cli(path: str, megabytes: float) -> None:
    """The real Gemini CLI JSONL session (tests/data/real/gemini_cli/SOURCES.md) again and again, its
    metadata line once, with fresh message and tool call ids."""
    lines = _real_lines("gemini_cli", "aim_matrix_pro.migrated.jsonl")

    def copy(k: int) -> list[str]:
        return [line.replace('"id":"', f'"id":"{k:06d}-') for n, line in enumerate(lines) if k == 0 or n > 0]

    _fill(path, megabytes, copy)


#: Real-log-shaped files (measured at `real_megabytes`).
REAL_FORMATS = {"claude_code_real": ("Claude Code (real logs repeated)", write_real_claude_code),
                "codex_real": ("Codex (real rollouts repeated)", write_real_codex),
                "gemini_cli_real": ("Gemini CLI JSONL (a real session repeated)", write_real_gemini_cli)}

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
t, cpu = time.perf_counter(), time.process_time()
if mode == "json":  # the strictest baseline: the collector off, as ctxviz loads with it off
    import gc
    gc.disable()
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    n = len(records)
else:  # the session is kept, as the records are: freeing it is no part of a user's load
    session = load_session(path)
    n = len(session.messages)
elapsed, cpu = time.perf_counter() - t, time.process_time() - cpu
# VmHWM, this process' own high-water mark: ru_maxrss survives exec and can be the parent's.
with open("/proc/self/status") as f:
    peak = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
print(json.dumps({"seconds": elapsed, "cpu": cpu, "n": n, "peak": peak, "grew": peak - before}))
"""

_MEMORY_CHILD = r"""
import gc, json, sys, tracemalloc
from ctxviz.io.loaders import load_session
from ctxviz.engine.session import ToolCallPart
from ctxviz.io import loaders
loaders.LOADERS  # every loader's module imported now: what the modules hold is not the messages'
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


def run(megabytes: float = 100, rounds: int = 3, memory_megabytes: float = 10, real_megabytes: float = 8) -> list[Row]:
    rows: list[Row] = []
    env = {**os.environ, "PYTHONPATH": ROOT}
    # A file of a real log's size loads in a fraction of a second: more rounds, for the same confidence.
    plan = [(key, title, write, megabytes, rounds) for key, (title, write) in FORMATS.items()]
    plan += [(key, title, write, real_megabytes, max(rounds, 9)) for key, (title, write) in REAL_FORMATS.items()]
    with tempfile.TemporaryDirectory(prefix="ctxviz-bench-") as folder:
        for key, title, write, size_mb, n_rounds in plan:
            path = os.path.join(folder, f"{key}.jsonl")
            write(path, size_mb)
            size = os.path.getsize(path)
            results: dict[str, list[dict]] = {"json": [], "ctxviz": []}

            def measure(mode: str, path: str = path, results: dict = results) -> float:
                out = child(_LOAD_CHILD, path, mode, env=env)
                results[mode].append(out)
                return out["seconds"]

            _, _, time_ratios = interleaved(lambda: measure("json"), lambda: measure("ctxviz"), n_rounds)
            mem_ratios = [c["grew"] / j["grew"] for j, c in zip(results["json"], results["ctxviz"], strict=True)]
            j, c = results["json"], results["ctxviz"]
            # CPU seconds too: on a machine other work shares, the wall clock also counts the time a
            # process waited for a core (the same work, measured without that wait).
            cpu_ratios = [b["cpu"] / a["cpu"] for a, b in zip(j, c, strict=True)]
            print(f"load {title}: {size / 1e6:.0f} MB, {c[0]['n']:,} messages from {j[0]['n']:,} records; "
                  f"json.loads {spread([r['seconds'] for r in j])} s (grew {spread([r['grew'] for r in j], 1e-6, '{:.0f}')} MB), "
                  f"ctxviz {spread([r['seconds'] for r in c])} s (grew {spread([r['grew'] for r in c], 1e-6, '{:.0f}')} MB); "
                  f"time {spread(time_ratios)}x (CPU time {spread(cpu_ratios)}x), memory {spread(mem_ratios)}x", flush=True)
            rows.append(Row(f"load {size / 1e6:.0f} MB {title}: time vs json.loads", time_ratios, "<= 2x", within(2, time_ratios),
                            detail=f"CPU time {spread(cpu_ratios)}x"))
            rows.append(Row(f"load {size / 1e6:.0f} MB {title}: peak memory vs json.loads", mem_ratios, "<= 2x", within(2, mem_ratios)))
        # Bytes per message beyond the text, on a smaller file of each kind with tool calls (tracemalloc is slow).
        for key in [k for k in ("chat_tools", "claude_code") if k in FORMATS]:
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
    parser.add_argument("--real-megabytes", type=float, default=8, help="size of the files made of real logs")
    parser.add_argument("--only", default="", help="measure only the formats whose key contains this (e.g. real, claude)")
    args = parser.parse_args()
    if args.only:
        for table in (FORMATS, REAL_FORMATS):
            for key in [k for k in table if args.only not in k]:
                del table[key]
    for row in run(args.megabytes, args.rounds, real_megabytes=args.real_megabytes):
        print(row.name, row.measured(), row.goal, "met" if row.met else "NOT met")


if __name__ == "__main__":
    main()
