"""Fuzzing every loader through the CLI entry point: a mutated session loads, or is one line.

Seeds are small real-looking sessions of each format; hypothesis mutates their structure (a value
replaced by a hostile one, a key dropped, an item repeated) and then their text (spans deleted,
repeated or filled with hostile characters), and runs `ctxviz plan`, `--json`, `--pair-safe` and
`export` in-process. Whatever the input, the CLI exits 0 with output, or 2 with exactly one line
that is not an internal error; it never raises, hangs or writes a traceback.

`CTXVIZ_FUZZ_EXAMPLES` sets the examples per loader: 150 by default (a developer's run stays short),
200 in CI (`.ci/run` sets it: about 35 s for every loader on a 2-core machine, so the whole run stays
under 10 minutes), and
7000 by hand after changing a loader (the run that must give no internal error at all).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.cli import main

DATA = Path(__file__).parent / "data"
EXAMPLES = int(os.environ.get("CTXVIZ_FUZZ_EXAMPLES", "150"))

OPENAI = {"model": "gpt-4o", "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}}],
          "messages": [{"role": "system", "content": "You are terse."},
                       {"role": "user", "content": [{"type": "text", "text": "Look at this"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
                       {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.py\"}"}}]},
                       {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
                       {"role": "assistant", "content": "It prints 1.", "usage": {"prompt_tokens": 120, "completion_tokens": 5}},
                       {"role": "user", "content": "Thanks"}]}
ANTHROPIC = {"model": "claude-sonnet-4-5", "system": [{"type": "text", "text": "You are terse."}],
             "tools": [{"name": "read", "description": "Read", "input_schema": {"type": "object"}}],
             "messages": [{"role": "user", "content": [{"type": "text", "text": "Read a.py"},
                                                       {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]},
                          {"role": "assistant", "content": [{"type": "thinking", "thinking": "need it", "signature": "s"},
                                                            {"type": "tool_use", "id": "tu1", "name": "read", "input": {"path": "a.py"}}]},
                          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": [{"type": "text", "text": "print(1)"}]}]},
                          {"role": "assistant", "content": "It prints 1.", "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 3}}]}


def _jsonl(path: Path, limit: int) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()[:limit] if line.strip()]


REAL = DATA / "real"


def _first(doc: Any, key: str, count: int) -> Any:
    """A real file cut to its first `count` records, so one fuzzing run stays fast."""
    return {**doc, key: doc[key][:count]} if isinstance(doc, dict) else doc[:count]


#: format -> (parser kind, file suffix, seed document); real files written by the producers where
#: the repository has them (tests/data/real/*/SOURCES.md says where each comes from).
SEEDS: dict[str, tuple[str, str, Any]] = {
    "ctxviz": ("yaml", ".yaml", yaml.safe_load((DATA / "native_small.yaml").read_text())),
    "openai": ("json", ".json", OPENAI),
    "anthropic": ("json", ".json", ANTHROPIC),
    "claude-code": ("jsonl", ".jsonl", _jsonl(DATA / "claude_code" / "parser_fix.jsonl", 19)),
    "supyagent": ("jsonl", ".jsonl", _jsonl(DATA / "supyagent" / "3fa9c1d2.jsonl", 8)),
    "codex": ("jsonl", ".jsonl", _jsonl(REAL / "codex" / "agent-history-codex-exec-session-01.jsonl", 40)),
    "openai-responses": ("json", ".json", json.loads((REAL / "responses" / "pydantic-ai-simple-tool-call.request.json").read_text())),
    "gemini-cli": ("json", ".json", _first(json.loads((REAL / "gemini_cli" / "ai-sessions_pomodoro.json").read_text()), "messages", 8)),
    "swe-agent": ("json", ".traj.json", json.loads((REAL / "swe_agent" / "github_issue.traj.json").read_text())[:8]),
    "otel": ("json", ".json", json.loads((REAL / "otel" / "otel_genai_client_span_tool_calls.json").read_text())),
    "langchain": ("json", ".json", json.loads((REAL / "langchain" / "messages_to_trim.dumpd.json").read_text())),
}

HOSTILE_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([0, -1, 10**20, 2**31, 2**63]),
    st.floats(allow_nan=False), st.sampled_from(["", "user", "assistant", "tool", "system", "tool_use", "tool_result", "text", "image",
                                                  "<img src=/dev/zero>", "a\ud800b", "\x00", "\r", "\u2028", "{}", "[[[[", "NaN", "c1", "tu1"]),
    st.text(max_size=30), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.recursive(st.none() | st.text(max_size=3), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6),
)
HOSTILE_TEXT = st.sampled_from(["\x00", "\r", "\r\n", "\n", "\\ud800", "\\u0000", '"', "\\", "{", "}", "[", "]", ",", ":", "*a", "&a ", "- ",
                                "9" * 4400, "NaN", "Infinity", "1e999", "\ufeff", "\t", "#", "!!python/object:os.system ", "\x07", "'", "null"])


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _nodes(v, (*path, i))
    return out


def _set(root: Any, path: tuple, make) -> Any:
    if not path:
        return make(root)
    parent = root
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = make(parent[path[-1]])
    return root


@st.composite
def mutated_session(draw, fmt: str) -> tuple[str, str]:
    """(file suffix, text): a seed with structural then textual mutations."""
    kind, suffix, seed = SEEDS[fmt]
    doc = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 4))):
        nodes = _nodes(doc)[1:] or [()]  # the root itself only when it has no children
        path = draw(st.sampled_from(nodes))
        action = draw(st.sampled_from(["replace", "drop", "repeat"]))
        if action == "replace" or not path:
            value = draw(HOSTILE_VALUES)
            doc = _set(doc, path, lambda _old, value=value: value)
        else:
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            if action == "drop":
                del parent[path[-1]]
            elif isinstance(parent, list):
                parent.insert(path[-1], copy.deepcopy(parent[path[-1]]))
    if kind == "jsonl":
        text = "".join(json.dumps(r, allow_nan=True) + "\n" for r in doc) if isinstance(doc, list) else json.dumps(doc)
    elif kind == "yaml":
        text = yaml.safe_dump(doc, allow_unicode=False)
    else:
        text = json.dumps(doc, indent=draw(st.sampled_from([None, 1])), allow_nan=True)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # mostly well-formed: reach the loaders' field checks
        if not text:
            break
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start, min(len(text), start + 40)))
        action = draw(st.sampled_from(["delete", "insert", "repeat", "truncate"]))
        if action == "delete":
            text = text[:start] + text[end:]
        elif action == "insert":
            text = text[:start] + draw(HOSTILE_TEXT) + text[start:]
        elif action == "repeat":
            text = text[:end] + text[start:end] + text[end:]
        else:
            text = text[:start]
    return suffix, text


#: `info` reads the whole file and is cheap, so most examples use it; the rest plan and export.
COMMANDS = [["info"]] * 6 + [["plan"], ["plan", "--json", "--pair-safe"], ["export", "--to", "anthropic"], ["export", "--to", "markdown"],
                             ["plan", "--policy", "supyagent"], ["plan", "--policy", "categories"], ["plan", "--policy", "mnesis"]]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("fmt", list(SEEDS))
def test_every_loader_survives_mutated_sessions(fmt):
    with tempfile.TemporaryDirectory() as folder:

        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
        @given(mutated_session(fmt), st.sampled_from(COMMANDS))
        def check(session, command):
            suffix, text = session
            path = os.path.join(folder, "session" + suffix)
            with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="") as handle:
                handle.write(text)
            code, out, err = run_cli([command[0], path, *command[1:]])
            assert "Traceback" not in err and "internal error" not in err, err
            if code == 0:
                assert out
            else:
                assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)

        check()


def test_the_seeds_load_unmutated():
    """The fuzzing starts from sessions every loader reads, or it would only test refusals."""
    with tempfile.TemporaryDirectory() as folder:
        for fmt, (kind, suffix, doc) in SEEDS.items():
            path = os.path.join(folder, f"seed{suffix}")
            text = "".join(json.dumps(r) + "\n" for r in doc) if kind == "jsonl" else (yaml.safe_dump(doc) if kind == "yaml" else json.dumps(doc))
            Path(path).write_text(text)
            code, out, err = run_cli(["plan", path, "--json"])
            assert code == 0, err
            assert json.loads(out)["messages"], fmt
            code, out, err = run_cli(["info", path, "--json"])
            assert json.loads(out)["format"] == fmt, (fmt, out)
